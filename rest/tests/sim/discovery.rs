//! Discovery and the RESTMapper against the sim (classic discovery: the sim offers no
//! aggregated documents), including a CRD created at run time.

use std::time::Duration;

use clientgo_apimachinery::{GroupVersion, GroupVersionKind, GroupVersionResource};
use clientgo_rest::{
    DeleteParams, DiscoveryClient, GetParams, MappingError, PostParams, RestMapper,
};

use crate::common;
use crate::custom::{crd, crds};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_version_groups_and_resources() {
    let s = common::secure().await;
    let discovery = DiscoveryClient::new(&s.client);
    let version = discovery.server_version().await.unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "32")
    );
    assert_eq!(version.git_version, "v1.32.0-sim");

    let d = discovery.discover().await.unwrap();
    assert!(!d.is_aggregated(), "the sim serves classic discovery only");
    assert!(d.failed().is_empty(), "{:?}", d.failed());
    let groups: Vec<&str> = d.groups().iter().map(|g| g.name.as_str()).collect();
    assert_eq!(
        groups,
        [
            "",
            "apiextensions.k8s.io",
            "apps",
            "coordination.k8s.io",
            "events.k8s.io"
        ]
    );
    let core = d.resources_for(&GroupVersion::new("", "v1")).unwrap();
    assert!(
        core.iter().all(|r| !r.plural.contains('/')),
        "subresources are not resources"
    );
    let pods = core.iter().find(|r| r.plural == "pods").unwrap();
    assert_eq!((pods.kind.as_str(), pods.namespaced), ("Pod", true));
    assert!(pods.subresource("status").is_some() && pods.supports("watch"));
    let namespaces = core.iter().find(|r| r.plural == "namespaces").unwrap();
    assert!(!namespaces.namespaced);
    let cm = core.iter().find(|r| r.plural == "configmaps").unwrap();
    assert!(cm.short_names.contains(&"cm".to_owned()) && cm.subresources.is_empty());
    assert!(
        d.preferred_resources()
            .iter()
            .any(|r| r.plural == "deployments")
    );
    assert!(
        std::sync::Arc::ptr_eq(&d, &discovery.discover().await.unwrap()),
        "cached"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kinds_map_to_resources_and_back() {
    let s = common::secure().await;
    let mapper = RestMapper::for_client(&s.client);
    let gvk = |g: &str, v: &str, k: &str| GroupVersionKind::new(g, v, k);
    let deploy = mapper
        .resource_for_kind(&gvk("apps", "v1", "Deployment"))
        .await
        .unwrap();
    assert_eq!(
        (deploy.plural.as_str(), deploy.namespaced),
        ("deployments", true)
    );
    let ns = mapper
        .resource_for_kind(&gvk("", "v1", "Namespace"))
        .await
        .unwrap();
    assert!(!ns.namespaced);
    let lease = mapper
        .mapping("coordination.k8s.io", "Lease", &[])
        .await
        .unwrap();
    assert_eq!(
        lease.gvr().to_string(),
        "coordination.k8s.io/v1, Resource=leases"
    );
    let back = mapper
        .kind_for(&GroupVersionResource::new("", "", "events"))
        .await
        .unwrap();
    assert_eq!(back.to_string(), "v1, Kind=Event");
    let back = mapper
        .kind_for(&GroupVersionResource::new("events.k8s.io", "", "events"))
        .await
        .unwrap();
    assert_eq!(back.to_string(), "events.k8s.io/v1, Kind=Event");
    let short = mapper
        .resource_for(&GroupVersionResource::new("", "", "deploy"))
        .await
        .unwrap();
    assert_eq!(short.kind, "Deployment");
    let err = mapper
        .resource_for(&GroupVersionResource::new("", "v1", "pods/status"))
        .await
        .unwrap_err();
    assert!(err.is_no_match(), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crd_created_at_run_time_resolves_after_one_refresh() {
    let s = common::secure().await;
    let mapper = RestMapper::for_client(&s.client);
    let discovery = mapper.discovery().clone();
    let sprocket = GroupVersionKind::new("parts.example.com", "v1", "Sprocket");

    mapper
        .resource_for_kind(&GroupVersionKind::new("", "v1", "Pod"))
        .await
        .unwrap();
    assert_eq!(discovery.generation(), 1);
    let err = mapper.resource_for_kind(&sprocket).await.unwrap_err();
    assert!(matches!(err, MappingError::NoKindMatch { .. }), "{err}");
    assert_eq!(discovery.generation(), 2, "a miss refreshes once");

    crds(&s.client)
        .create(
            &crd("parts.example.com", "Sprocket", "Namespaced"),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let found = mapper.resource_for_kind(&sprocket).await.unwrap();
    assert_eq!(
        (found.plural.as_str(), found.namespaced),
        ("sprockets", true)
    );
    assert_eq!(
        discovery.generation(),
        3,
        "the miss on the stale snapshot refreshed it"
    );
    let d = discovery.cached().unwrap();
    let sprockets = d
        .resources_for(&GroupVersion::new("parts.example.com", "v1"))
        .unwrap();
    assert_eq!(
        sprockets[0].subresource("status").map(|s| s.name.as_str()),
        Some("status")
    );
    mapper.resource_for_kind(&sprocket).await.unwrap();
    assert_eq!(discovery.generation(), 3, "hits need no refresh");

    // Gone again once the CRD is deleted and the mapper reset.
    crds(&s.client)
        .delete("sprockets.parts.example.com", &DeleteParams::default())
        .await
        .unwrap();
    // The CRD goes once its custom resources are cleaned up, asynchronously.
    common::eventually(Duration::from_secs(10), "the CRD gone", || async {
        crds(&s.client)
            .get("sprockets.parts.example.com", &GetParams::default())
            .await
            .is_err_and(|e| e.is_not_found())
    })
    .await;
    mapper.reset();
    let err = mapper.resource_for_kind(&sprocket).await.unwrap_err();
    assert!(err.is_no_match(), "{err}");
}
