//! The request builder's URL rules: client-go's `request_test.go` cases that do not need a
//! server.

use std::time::Duration;

use super::*;
use crate::config::Config;
use crate::http_client::{BoxFuture, HttpClient};

struct Unused;

impl HttpClient for Unused {
    fn send(
        &self,
        _: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<crate::Body>, Error>> {
        Box::pin(async { Err(Error::InvalidRequest("not sent in these tests".into())) })
    }
}

fn client(url: &str) -> RestClient {
    RestClient::builder(Config::new(url.parse().unwrap()))
        .http_client(Unused)
        .build()
        .unwrap()
}

fn url(request: Request) -> String {
    request.url().unwrap()
}

#[test]
fn core_and_grouped_namespaced_and_cluster_scoped() {
    let c = client("https://k8s.example:6443");
    assert_eq!(
        url(c
            .get()
            .group_version("", "v1")
            .namespace("default")
            .resource("pods")
            .name("web")),
        "https://k8s.example:6443/api/v1/namespaces/default/pods/web"
    );
    assert_eq!(
        url(c
            .get()
            .group_version("apps", "v1")
            .namespace("prod")
            .resource("Deployments")),
        "https://k8s.example:6443/apis/apps/v1/namespaces/prod/deployments"
    );
    assert_eq!(
        url(c.get().group_version("", "v1").resource("nodes").name("n1")),
        "https://k8s.example:6443/api/v1/nodes/n1"
    );
    assert_eq!(
        url(c
            .put()
            .group_version("apps", "v1")
            .namespace("p")
            .resource("deployments")
            .name("d")
            .subresource("scale")),
        "https://k8s.example:6443/apis/apps/v1/namespaces/p/deployments/d/scale"
    );
    // An empty namespace is set but not in the path: a list across namespaces.
    assert_eq!(
        url(c
            .get()
            .group_version("", "v1")
            .namespace("")
            .resource("pods")),
        "https://k8s.example:6443/api/v1/pods"
    );
}

/// client-go's `TestRequestOrdersNamespaceInPath` and `TestRequestOrdersSubResource`.
#[test]
fn path_order_follows_client_go_whatever_the_call_order() {
    let c = client("http://localhost:8080");
    let r = c
        .get()
        .prefix(&["/test/"])
        .name("bar")
        .resource("baz")
        .namespace("foo");
    assert_eq!(r.path(), "/test/namespaces/foo/baz/bar");
    let r = c
        .get()
        .prefix(&["/test/"])
        .name("bar")
        .resource("baz")
        .namespace("foo")
        .suffix(&["test"])
        .subresources(&["a", "b"]);
    assert_eq!(r.path(), "/test/namespaces/foo/baz/bar/a/b/test");
}

#[test]
fn the_server_path_prefixes_everything() {
    let c = client("https://proxy.example/k8s/clusters/c-1/");
    assert_eq!(
        url(c.get().group_version("", "v1").resource("pods")),
        "https://proxy.example/k8s/clusters/c-1/api/v1/pods"
    );
    assert_eq!(
        url(c.get().abs_path("/healthz")),
        "https://proxy.example/k8s/clusters/c-1/healthz"
    );
    assert_eq!(
        url(c.get().abs_path("/apis/")),
        "https://proxy.example/k8s/clusters/c-1/apis/"
    );
    assert_eq!(url(client("http://h").get().abs_path("/")), "http://h/");
}

#[test]
fn ipv6_hosts_keep_their_brackets() {
    let c = client("https://[fd00::1]:6443");
    assert_eq!(
        url(c.get().abs_path("/version")),
        "https://[fd00::1]:6443/version"
    );
    assert_eq!(c.host(), "[fd00::1]:6443");
}

#[test]
fn user_info_never_reaches_the_url() {
    let c = client("https://user:pa55@k8s.example:6443");
    let u = url(c.get().group_version("", "v1").resource("pods"));
    assert_eq!(u, "https://k8s.example:6443/api/v1/pods");
}

/// client-go's `TestRequestSetTwiceError`, `TestInvalidSegments` and
/// `TestRequestWithErrorWontChange`.
#[test]
fn mistakes_are_kept_and_reported() {
    let c = client("http://h");
    let cases: Vec<(Request, &str)> = vec![
        (
            c.get().name("a").name("b"),
            "resource name already set to \"a\", cannot change to \"b\"",
        ),
        (
            c.get().namespace("a").namespace("b"),
            "namespace already set",
        ),
        (c.get().resource("a").resource("b"), "resource already set"),
        (
            c.get().subresource("a").subresource("b"),
            "subresource already set",
        ),
        (c.get().name(""), "resource name may not be empty"),
        (
            c.get().name("a/b"),
            "invalid resource name \"a/b\": may not contain '/'",
        ),
        (
            c.get().name(".."),
            "invalid resource name \"..\": may not be '..'",
        ),
        (c.get().namespace("x%2F"), "invalid namespace"),
        (c.get().resource("."), "invalid resource"),
        (c.get().subresources(&["ok", "../x"]), "invalid subresource"),
        (c.get().header("bad header", "v"), "invalid header"),
    ];
    for (request, expected) in cases {
        let err = request.url().unwrap_err().to_string();
        assert!(err.contains(expected), "{err} does not contain {expected}");
    }
    // After a mistake, nothing changes.
    let r = c.get().name("a/b").namespace("ns").resource("pods");
    assert!(r.path().ends_with('/'), "{}", r.path());
}

/// client-go's `TestRequestPreflightCheck`.
#[test]
fn an_explicitly_empty_namespace_is_refused_where_client_go_refuses_it() {
    let c = client("http://h");
    let empty = |m: Method| {
        c.request(m)
            .group_version("", "v1")
            .namespace("")
            .resource("pods")
    };
    assert!(empty(Method::POST).preflight().is_err());
    assert!(empty(Method::GET).name("a").preflight().is_err());
    assert!(empty(Method::PUT).name("a").preflight().is_err());
    assert!(empty(Method::DELETE).name("a").preflight().is_err());
    assert!(
        empty(Method::GET).preflight().is_ok(),
        "a list across namespaces"
    );
    assert!(empty(Method::PATCH).name("a").preflight().is_ok());
    assert!(
        c.post()
            .group_version("", "v1")
            .resource("namespaces")
            .preflight()
            .is_ok()
    );
}

#[test]
fn parameters_are_encoded_like_go() {
    let c = client("http://h");
    let r = c
        .get()
        .group_version("", "v1")
        .resource("pods")
        .label_selector("app=web,tier in (a,b)")
        .field_selector("spec.nodeName=n1")
        .limit(500)
        .continue_token("eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ==")
        .resource_version("12345")
        .resource_version_match("NotOlderThan")
        .timeout_seconds(290)
        .allow_watch_bookmarks(true)
        .send_initial_events(true)
        .dry_run()
        .field_manager("my-controller")
        .propagation_policy(PropagationPolicy::Foreground)
        .param("custom", "a b&c");
    assert_eq!(
        r.path_and_query().unwrap(),
        "/api/v1/pods?allowWatchBookmarks=true&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ%3D%3D\
         &custom=a+b%26c&dryRun=All&fieldManager=my-controller&fieldSelector=spec.nodeName%3Dn1\
         &labelSelector=app%3Dweb%2Ctier+in+%28a%2Cb%29&limit=500&propagationPolicy=Foreground\
         &resourceVersion=12345&resourceVersionMatch=NotOlderThan&sendInitialEvents=true\
         &timeoutSeconds=290"
    );
}

#[test]
fn a_time_limit_is_sent_as_the_timeout_parameter() {
    let c = client("http://h");
    let r = c
        .get()
        .group_version("", "v1")
        .resource("pods")
        .param("timeout", "1s")
        .timeout(Duration::from_secs(317));
    assert_eq!(r.path_and_query().unwrap(), "/api/v1/pods?timeout=5m17s");

    let mut config = Config::new("http://h".parse().unwrap());
    config.timeout = Some(Duration::from_secs(30));
    let c = RestClient::builder(config)
        .http_client(Unused)
        .build()
        .unwrap();
    assert_eq!(
        c.get().abs_path("/version").path_and_query().unwrap(),
        "/version?timeout=30s"
    );
}

#[test]
fn json_bodies_get_a_content_type_unless_a_patch_set_one() {
    let c = client("http://h");
    let r = c.post().json(&serde_json::json!({"a": 1}));
    assert_eq!(r.headers[http::header::CONTENT_TYPE], "application/json");
    assert_eq!(&r.body[..], br#"{"a":1}"#);
    let r = c.patch(PatchType::Merge).json(&serde_json::json!({"a": 1}));
    assert_eq!(
        r.headers[http::header::CONTENT_TYPE],
        "application/merge-patch+json"
    );
    assert_eq!(r.headers[http::header::ACCEPT], "application/json");
}

#[test]
fn request_debug_redacts_credential_headers_and_the_body() {
    let mut sensitive = HeaderValue::from_static("custom-secret-value");
    sensitive.set_sensitive(true);
    let mut request = client("https://k8s.example:6443")
        .post()
        .resource("secrets")
        .header("Authorization", "Bearer caller-token-value")
        .header("Proxy-Authorization", "Basic proxy-secret-value")
        .header("Cookie", "session=cookie-secret-value")
        .header("X-Trace", "visible-value")
        .body(r#"{"data":{"password":"body-secret-value"}}"#);
    request
        .headers
        .insert(HeaderName::from_static("x-custom"), sensitive);
    let text = format!("{request:?}");
    for secret in [
        "caller-token-value",
        "proxy-secret-value",
        "cookie-secret-value",
        "custom-secret-value",
        "body-secret-value",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    assert!(text.contains("visible-value"), "{text}");
    assert!(text.contains("<redacted>"), "{text}");
}
