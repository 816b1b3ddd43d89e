//! Discovery against a scripted HTTP client: aggregated documents, the classic fallback (406,
//! plain documents, 404 roots, a failing group version), subresource folding and the cache.
//! The classic path against a real server is tested with apiserver-sim in `tests/sim`.

use std::sync::Mutex;

use bytes::Bytes;
use clientgo_apimachinery::GroupVersion;

use super::*;
use crate::config::Config;
use crate::http_client::{BoxFuture, HttpClient};

pub(crate) type Script = dyn Fn(&str, &str) -> (u16, &'static str, String) + Send + Sync;

/// Answers each request with what the script says for its path and `Accept`.
pub(crate) struct Scripted {
    script: Box<Script>,
    seen: Seen,
}

/// The (path, `Accept`) of each request.
pub(crate) type Seen = Arc<Mutex<Vec<(String, String)>>>;

impl HttpClient for Scripted {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<crate::Body>, Error>> {
        let path = request.uri().path().to_owned();
        let accept = request
            .headers()
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        self.seen
            .lock()
            .unwrap()
            .push((path.clone(), accept.clone()));
        let (status, content_type, body) = (self.script)(&path, &accept);
        Box::pin(async move {
            Ok(http::Response::builder()
                .status(status)
                .header(http::header::CONTENT_TYPE, content_type)
                .body(crate::body::full(body))
                .unwrap())
        })
    }
}

pub(crate) fn client(
    script: impl Fn(&str, &str) -> (u16, &'static str, String) + Send + Sync + 'static,
) -> (DiscoveryClient, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let rest = RestClient::builder(Config::new("http://fake.invalid".parse().unwrap()))
        .http_client(Scripted {
            script: Box::new(script),
            seen: seen.clone(),
        })
        .throttle(None)
        .build()
        .unwrap();
    (DiscoveryClient::new(&rest), seen)
}

const AGG_CORE: &str = r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
 {"metadata":{"creationTimestamp":null},"versions":[{"version":"v1","resources":[
  {"resource":"pods","responseKind":{"group":"","version":"v1","kind":"Pod"},"scope":"Namespaced","singularResource":"pod","verbs":["get","list","watch"],"shortNames":["po"],"categories":["all"],
   "subresources":[{"subresource":"status","responseKind":{"group":"","version":"v1","kind":"Pod"},"verbs":["get","patch","update"]}]},
  {"resource":"namespaces","responseKind":{"group":"","version":"v1","kind":"Namespace"},"scope":"Cluster","singularResource":"namespace","verbs":null}
 ]}]}]}"#;

const AGG_APIS: &str = r#"{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","metadata":{},"items":[
 {"metadata":{"name":"autoscaling"},"versions":[
  {"version":"v2","resources":[{"resource":"horizontalpodautoscalers","responseKind":{"group":"autoscaling","version":"v2","kind":"HorizontalPodAutoscaler"},"scope":"Namespaced","singularResource":"horizontalpodautoscaler","verbs":["get"]}]},
  {"version":"v1","resources":[{"resource":"horizontalpodautoscalers","responseKind":{"group":"autoscaling","version":"v1","kind":"HorizontalPodAutoscaler"},"scope":"Namespaced","singularResource":"horizontalpodautoscaler","verbs":["get"]}]}]},
 {"metadata":{"name":"metrics.example.com"},"versions":[{"version":"v1beta1","resources":[],"freshness":"Stale"}]}
]}"#;

#[tokio::test]
async fn aggregated_discovery_is_used_when_offered() {
    let (discovery, seen) = client(|path, accept| {
        assert_eq!(accept, ACCEPT_DISCOVERY);
        match path {
            "/api" => (200, AGGREGATED_V2, AGG_CORE.to_owned()),
            "/apis" => (200, AGGREGATED_V2BETA1, AGG_APIS.to_owned()),
            other => panic!("unexpected request {other}"),
        }
    });
    let d = discovery.discover().await.unwrap();
    assert!(d.is_aggregated());
    assert_eq!(
        seen.lock().unwrap().len(),
        2,
        "no per-group-version requests"
    );
    let names: Vec<&str> = d.groups().iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["", "autoscaling", "metrics.example.com"]);
    assert_eq!(d.group("autoscaling").unwrap().preferred_version, "v2");
    let core = d.resources_for(&GroupVersion::new("", "v1")).unwrap();
    let plurals: Vec<&str> = core.iter().map(|r| r.plural.as_str()).collect();
    assert_eq!(plurals, ["pods", "namespaces"]);
    let pods = &core[0];
    assert!(pods.namespaced && pods.supports("watch"));
    assert_eq!(pods.short_names, ["po"]);
    let status = pods.subresource("status").unwrap();
    assert_eq!(status.kind.as_ref().unwrap().kind, "Pod");
    assert!(!core[1].namespaced && core[1].verbs.is_empty());
    assert_eq!(d.failed().len(), 1);
    assert_eq!(
        d.failed()[0].group_version,
        GroupVersion::new("metrics.example.com", "v1beta1")
    );
    let preferred: Vec<String> = d
        .preferred_resources()
        .iter()
        .map(|r| r.gvr().to_string())
        .collect();
    assert_eq!(
        preferred,
        [
            "v1, Resource=pods",
            "v1, Resource=namespaces",
            "autoscaling/v2, Resource=horizontalpodautoscalers"
        ]
    );
}

pub(crate) const CORE_V1: &str = r#"{"kind":"APIResourceList","groupVersion":"v1","resources":[
 {"name":"pods/status","singularName":"","namespaced":true,"kind":"Pod","verbs":["get","patch","update"]},
 {"name":"pods","singularName":"pod","namespaced":true,"kind":"Pod","verbs":["get","list"],"shortNames":["po"]},
 {"name":"pods/log","singularName":"","namespaced":true,"kind":"Pod","verbs":["get"]},
 {"name":"ghosts/status","singularName":"","namespaced":true,"kind":"Ghost","verbs":["get"]}]}"#;

const APPS_V1: &str = r#"{"kind":"APIResourceList","groupVersion":"apps/v1","resources":[
 {"name":"deployments","singularName":"deployment","namespaced":true,"kind":"Deployment","verbs":["get"]},
 {"name":"deployments/scale","singularName":"","namespaced":true,"group":"autoscaling","version":"v1","kind":"Scale","verbs":["get","patch","update"]}]}"#;

#[tokio::test]
async fn classic_discovery_after_a_406_folds_subresources_and_records_failures() {
    let (discovery, seen) = client(|path, accept| {
        if (path == "/api" || path == "/apis") && accept.contains("apidiscovery") {
            return (406, "application/json", r#"{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotAcceptable","code":406}"#.to_owned());
        }
        match path {
            "/api" => (200, "application/json", r#"{"kind":"APIVersions","versions":["v1"]}"#.to_owned()),
            "/apis" => (200, "application/json", r#"{"kind":"APIGroupList","groups":[
                {"name":"apps","versions":[{"groupVersion":"apps/v1","version":"v1"}],"preferredVersion":{"groupVersion":"apps/v1","version":"v1"}},
                {"name":"broken.example.com","versions":[{"groupVersion":"broken.example.com/v1"}]}]}"#.to_owned()),
            "/api/v1" => (200, "application/json", CORE_V1.to_owned()),
            "/apis/apps/v1" => (200, "application/json", APPS_V1.to_owned()),
            _ => (500, "text/plain", "boom".to_owned()),
        }
    });
    let d = discovery.discover().await.unwrap();
    assert!(!d.is_aggregated());
    let core = d.resources_for(&GroupVersion::new("", "v1")).unwrap();
    assert_eq!(core.len(), 1, "subresources are not resources: {core:?}");
    let subs: Vec<&str> = core[0]
        .subresources
        .iter()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(subs, ["status", "log"]);
    let apps = d.resources_for(&GroupVersion::new("apps", "v1")).unwrap();
    let scale = apps[0].subresource("scale").unwrap();
    assert_eq!(
        scale.kind.as_ref().unwrap().to_string(),
        "autoscaling/v1, Kind=Scale"
    );
    assert_eq!(
        d.group("broken.example.com").unwrap().preferred_version,
        "v1"
    );
    assert_eq!(d.failed().len(), 1);
    assert!(d.failed()[0].reason.contains("500"), "{:?}", d.failed());
    let paths: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    assert_eq!(
        paths.iter().filter(|p| *p == "/api").count(),
        2,
        "asked again after 406"
    );
}

#[tokio::test]
async fn roots_that_are_not_served_mean_no_groups_and_other_errors_fail() {
    let (discovery, _) = client(|path, _| match path {
        "/api" => (200, "application/json", r#"{"versions":["v1"]}"#.to_owned()),
        "/api/v1" => (200, "application/json", r#"{"resources":null}"#.to_owned()),
        _ => (404, "application/json", "{}".to_owned()),
    });
    let d = discovery.discover().await.unwrap();
    assert_eq!(d.groups().len(), 1);
    assert!(d.failed().is_empty());

    let (discovery, _) = client(|_, _| {
        (
            401,
            "application/json",
            r#"{"kind":"Status","status":"Failure","reason":"Unauthorized","code":401}"#.to_owned(),
        )
    });
    let err = discovery.discover().await.unwrap_err();
    assert!(err.is_unauthorized(), "{err}");
    assert!(discovery.cached().is_none());

    let (discovery, _) = client(|_, _| (200, "application/json", "[1,2".to_owned()));
    assert!(matches!(discovery.discover().await, Err(Error::Decode(_))));
}

#[tokio::test]
async fn the_cache_is_shared_invalidated_and_refreshed_once_per_miss() {
    let (discovery, seen) = client(|path, _| match path {
        "/api" => (200, "application/json", r#"{"versions":["v1"]}"#.to_owned()),
        "/api/v1" => (200, "application/json", CORE_V1.to_owned()),
        _ => (404, "application/json", "{}".to_owned()),
    });
    let requests = || seen.lock().unwrap().len();
    let first = discovery.discover().await.unwrap();
    assert_eq!(first.generation(), 1);
    let per_fetch = requests();
    let again = discovery.clone().discover().await.unwrap();
    assert!(Arc::ptr_eq(&first, &again));
    assert_eq!(requests(), per_fetch);

    // Two callers missing on generation 1 share one refresh.
    let (a, b) = join2(discovery.refresh_after(1), discovery.refresh_after(1)).await;
    assert_eq!((a.unwrap().generation(), b.unwrap().generation()), (2, 2));
    assert_eq!(requests(), 2 * per_fetch);

    discovery.invalidate();
    assert!(discovery.cached().is_none());
    assert_eq!(discovery.discover().await.unwrap().generation(), 3);
    assert_eq!(discovery.generation(), 3);
}

#[tokio::test]
async fn server_version() {
    let (discovery, _) = client(|path, _| {
        assert_eq!(path, "/version");
        (200, "application/json", r#"{"major":"1","minor":"32+","gitVersion":"v1.32.1-eks","platform":"linux/arm64","extra":1}"#.to_owned())
    });
    let version = discovery.server_version().await.unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "32+")
    );
    assert_eq!(version.git_version, "v1.32.1-eks");
    assert!(version.go_version.is_empty());
}

/// Every request future can be spawned or held by a `Send` watch source (a `Limited` body in
/// the error path once made `stream` and `watch` unprovably `Send`).
#[allow(dead_code)]
fn request_futures_are_send(request: crate::Request, discovery: DiscoveryClient) {
    fn send<F: Future + Send>(_: F) {}
    send(request.clone().send());
    send(request.clone().stream());
    send(request.watch());
    let mapper = crate::RestMapper::new(discovery.clone());
    send(async move {
        let _ = discovery.discover().await;
        let _ = discovery.refresh_after(0).await;
        let _ = discovery.server_version().await;
    });
    send(async move {
        let _ = mapper.resource_for_kind(&Default::default()).await;
    });
}
