//! The mapper over hand-built discovery (preference, partial resources, subresources), and the
//! refreshing mapper over a scripted server (a kind appearing, misses, failed groups). The
//! same against apiserver-sim, with a CRD created at run time, is in `tests/sim`.

use std::sync::atomic::{AtomicBool, Ordering};

use clientgo_apimachinery::GroupVersion;

use super::*;
use crate::discovery::tests::{CORE_V1, client};
use crate::discovery::{ApiGroup, DiscoveredResource};

fn resource(gv: &GroupVersion, plural: &str, kind: &str, namespaced: bool) -> DiscoveredResource {
    DiscoveredResource {
        group: gv.group.clone(),
        version: gv.version.clone(),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
        singular: kind.to_ascii_lowercase(),
        namespaced,
        ..DiscoveredResource::default()
    }
}

fn discovery() -> ApiDiscovery {
    let core = GroupVersion::new("", "v1");
    let hpa1 = GroupVersion::new("autoscaling", "v1");
    let hpa2 = GroupVersion::new("autoscaling", "v2");
    let events = GroupVersion::new("events.k8s.io", "v1");
    let mut pods = resource(&core, "pods", "Pod", true);
    pods.short_names = vec!["po".into()];
    ApiDiscovery::new(
        vec![
            ApiGroup {
                name: String::new(),
                versions: vec!["v1".into()],
                preferred_version: "v1".into(),
            },
            ApiGroup {
                name: "autoscaling".into(),
                versions: vec!["v1".into(), "v2".into()],
                preferred_version: "v2".into(),
            },
            ApiGroup {
                name: "events.k8s.io".into(),
                versions: vec!["v1".into()],
                preferred_version: "v1".into(),
            },
        ],
        vec![
            (
                core.clone(),
                vec![
                    pods,
                    resource(&core, "namespaces", "Namespace", false),
                    resource(&core, "events", "Event", true),
                    resource(&core, "bindings/status", "Binding", true),
                    resource(&core, "componentstatuses", "", false),
                ],
            ),
            (
                hpa1.clone(),
                vec![resource(
                    &hpa1,
                    "horizontalpodautoscalers",
                    "HorizontalPodAutoscaler",
                    true,
                )],
            ),
            (
                hpa2.clone(),
                vec![resource(
                    &hpa2,
                    "horizontalpodautoscalers",
                    "HorizontalPodAutoscaler",
                    true,
                )],
            ),
            (
                events.clone(),
                vec![resource(&events, "events", "Event", true)],
            ),
        ],
    )
}

#[test]
fn kinds_map_to_resources_and_back() {
    let m = StaticRestMapper::new(&discovery());
    let pod = m
        .resource_for_kind(&GroupVersionKind::new("", "v1", "Pod"))
        .unwrap();
    assert_eq!((pod.plural.as_str(), pod.namespaced), ("pods", true));
    let ns = m
        .resource_for_kind(&GroupVersionKind::new("", "v1", "Namespace"))
        .unwrap();
    assert!(!ns.namespaced);
    assert!(
        m.resource_for_kind(&GroupVersionKind::new("", "v1", "pod"))
            .is_none(),
        "kinds are case-sensitive"
    );
    assert!(
        m.resource_for_kind(&GroupVersionKind::new("", "v2", "Pod"))
            .is_none()
    );

    // Any version: the preferred one; explicit versions in the caller's order.
    let hpa = GroupVersionKind::new("autoscaling", "", "HorizontalPodAutoscaler");
    assert_eq!(m.resource_for_kind(&hpa).unwrap().version, "v2");
    let v1 = m
        .mapping("autoscaling", "HorizontalPodAutoscaler", &["v1", "v2"])
        .unwrap();
    assert_eq!(v1.version, "v1");
    let versions: Vec<&str> = m
        .mappings("autoscaling", "HorizontalPodAutoscaler")
        .iter()
        .map(|r| r.version.as_str())
        .collect();
    assert_eq!(versions, ["v2", "v1"]);

    let gvr = |g: &str, v: &str, r: &str| GroupVersionResource::new(g, v, r);
    assert_eq!(
        m.kind_for(&gvr("", "v1", "pods")).unwrap().to_string(),
        "v1, Kind=Pod"
    );
    assert_eq!(m.kind_for(&gvr("", "", "PO")).unwrap().kind, "Pod");
    assert_eq!(m.kind_for(&gvr("", "", "pod")).unwrap().kind, "Pod");
    assert_eq!(
        m.resource_for(&gvr("autoscaling", "", "horizontalpodautoscalers"))
            .unwrap()
            .version,
        "v2"
    );
    assert_eq!(
        m.resource_for(&gvr("", "", "events")).unwrap().group,
        "",
        "core group first"
    );
    assert_eq!(
        m.resource_for(&gvr("events.k8s.io", "", "events"))
            .unwrap()
            .group,
        "events.k8s.io"
    );
    assert!(
        m.resource_for(&gvr("", "", "bindings/status")).is_none(),
        "a subresource is not a resource"
    );
    assert!(m.resource_for(&gvr("", "", "bindings")).is_none());
    assert!(
        m.resource_for(&gvr("", "", "componentstatuses")).is_none(),
        "no kind, not mapped"
    );
    assert_eq!(m.resources().len(), 6);
}

#[tokio::test]
async fn a_miss_refreshes_discovery_once_then_reports_no_match() {
    let widgets = Arc::new(AtomicBool::new(false));
    let served = widgets.clone();
    let (discovery, seen) = client(move |path, _| {
        match path {
        "/api" => (200, "application/json", r#"{"versions":["v1"]}"#.to_owned()),
        "/api/v1" => (200, "application/json", CORE_V1.to_owned()),
        "/apis" if served.load(Ordering::SeqCst) => (200, "application/json", r#"{"groups":[
            {"name":"example.com","versions":[{"groupVersion":"example.com/v1","version":"v1"}]},
            {"name":"broken.example.com","versions":[{"groupVersion":"broken.example.com/v1","version":"v1"}]}]}"#.to_owned()),
        "/apis/example.com/v1" => (200, "application/json", r#"{"resources":[
            {"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["get"]},
            {"name":"widgets/status","namespaced":true,"kind":"Widget","verbs":["get"]}]}"#.to_owned()),
        "/apis" => (200, "application/json", r#"{"groups":[]}"#.to_owned()),
        _ => (503, "text/plain", "unavailable".to_owned()),
    }
    });
    let mapper = RestMapper::new(discovery);
    let fetches = || {
        seen.lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == "/api")
            .count()
    };

    let pod = mapper
        .resource_for_kind(&GroupVersionKind::new("", "v1", "Pod"))
        .await
        .unwrap();
    assert_eq!(pod.plural, "pods");
    assert_eq!(fetches(), 1);

    let widget = GroupVersionKind::new("example.com", "v1", "Widget");
    let err = mapper.resource_for_kind(&widget).await.unwrap_err();
    assert!(err.is_no_match(), "{err}");
    assert_eq!(
        err.to_string(),
        r#"no matches for kind "Widget" in group "example.com", versions ["v1"]"#
    );
    assert_eq!(fetches(), 2, "one refresh per miss");

    widgets.store(true, Ordering::SeqCst);
    let found = mapper.resource_for_kind(&widget).await.unwrap();
    assert_eq!((found.plural.as_str(), found.namespaced), ("widgets", true));
    assert_eq!(fetches(), 3);
    // A hit needs no refresh; the subresource stayed a subresource.
    let back = mapper
        .kind_for(&GroupVersionResource::new("example.com", "", "widget"))
        .await
        .unwrap();
    assert_eq!(back, widget);
    assert_eq!(fetches(), 3);
    let err = mapper
        .resource_for(&GroupVersionResource::new(
            "example.com",
            "v1",
            "widgets/status",
        ))
        .await
        .unwrap_err();
    assert!(matches!(err, MappingError::NoResourceMatch(_)), "{err}");

    // A kind in a group that failed discovery is not reported as missing.
    let err = mapper
        .mapping("broken.example.com", "Thing", &[])
        .await
        .unwrap_err();
    assert!(
        matches!(err, MappingError::GroupDiscoveryFailed { .. }),
        "{err}"
    );
    assert!(!err.is_no_match());

    let client = mapper.discovery().client().clone();
    let dynamic = mapper
        .dynamic_client(&client, &widget, Some("ns"))
        .await
        .unwrap();
    assert_eq!(dynamic.namespace(), Some("ns"));

    mapper.reset();
    assert!(mapper.discovery().cached().is_none());
}
