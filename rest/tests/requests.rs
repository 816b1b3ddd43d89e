//! What goes on the wire: request lines for every builder combination and typed helper,
//! headers (credentials per variant, user agent, impersonation, content types per patch type),
//! and what the helpers make of the answers.

mod support;

use std::collections::BTreeMap;

use clientgo_apimachinery::{ApiResource, GroupVersionResource, ObjectMeta, Resource, WatchEvent};
use clientgo_rest::config::{Impersonation, Secret, TokenFile};
use clientgo_rest::{
    Auth, Config, DeleteParams, Deleted, DynamicClient, GetParams, ListParams, PatchParams,
    PatchType, PostParams, Preconditions, ResourceClient, RestClient, WatchParams,
};
use http::Version;
use serde::{Deserialize, Serialize};
use support::{Reply, TestServer};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct ConfigMap {
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    data: BTreeMap<String, String>,
}

impl Resource for ConfigMap {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "ConfigMap";
    const PLURAL: &'static str = "configmaps";
    const NAMESPACED: bool = true;
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
struct ClusterRole {
    #[serde(default)]
    metadata: ObjectMeta,
}

impl Resource for ClusterRole {
    const GROUP: &'static str = "rbac.authorization.k8s.io";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "ClusterRole";
    const PLURAL: &'static str = "clusterroles";
    const NAMESPACED: bool = false;
}

const CM: &str = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"prod","resourceVersion":"7"},"data":{"mode":"fast"}}"#;

/// A plain-http test server: credentials are allowed over it.
fn config_for(server: &TestServer) -> Config {
    let mut config =
        Config::new(server.url("http").parse().unwrap()).allowing_insecure_credentials();
    config.qps = -1.0;
    config
}

async fn echo_server() -> TestServer {
    TestServer::plain(|r, _| {
        if r.uri.contains("watch=true") {
            let events = format!(
                "{{\"type\":\"ADDED\",\"object\":{CM}}}\n{{\"type\":\"BOOKMARK\",\"object\":{{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"9\"}}}}}}\n"
            );
            return Reply::json(200, events);
        }
        if r.uri.ends_with("/configmaps") || r.uri.contains("/configmaps?") {
            if r.method == http::Method::GET {
                return Reply::json(
                    200,
                    format!(r#"{{"kind":"ConfigMapList","apiVersion":"v1","metadata":{{"resourceVersion":"8","continue":"next"}},"items":[{CM}]}}"#),
                );
            }
            if r.method == http::Method::DELETE {
                return Reply::json(200, r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success"}"#);
            }
            return Reply::json(201, CM);
        }
        if r.method == http::Method::DELETE && r.uri.contains("gone") {
            return Reply::json(200, r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Success","details":{"name":"gone","kind":"configmaps"}}"#);
        }
        Reply::json(200, CM)
    })
    .await
}

#[tokio::test]
async fn builder_request_lines() {
    let server = echo_server().await;
    let client = RestClient::new(&config_for(&server)).unwrap();
    let cases = [
        (
            client.get().group_version("", "v1").resource("pods"),
            "/api/v1/pods",
        ),
        (
            client
                .get()
                .group_version("", "v1")
                .namespace("kube-system")
                .resource("pods")
                .name("dns-1"),
            "/api/v1/namespaces/kube-system/pods/dns-1",
        ),
        (
            client
                .get()
                .group_version("apps", "v1")
                .namespace("prod")
                .resource("deployments")
                .name("web")
                .subresource("scale"),
            "/apis/apps/v1/namespaces/prod/deployments/web/scale",
        ),
        (
            client
                .get()
                .group_version("rbac.authorization.k8s.io", "v1")
                .resource("clusterroles")
                .name("system:controller:job-controller"),
            "/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:job-controller",
        ),
        (
            client
                .get()
                .group_version("", "v1")
                .namespace("prod")
                .resource("pods")
                .name("web")
                .subresource("log")
                .param("container", "app")
                .param("tailLines", "10"),
            "/api/v1/namespaces/prod/pods/web/log?container=app&tailLines=10",
        ),
        (
            client
                .get()
                .group_version("", "v1")
                .resource("pods")
                .label_selector("app in (web,api)")
                .field_selector("status.phase!=Running")
                .limit(2)
                .continue_token("abc=="),
            "/api/v1/pods?continue=abc%3D%3D&fieldSelector=status.phase%21%3DRunning&labelSelector=app+in+%28web%2Capi%29&limit=2",
        ),
        (client.get().abs_path("/version"), "/version"),
    ];
    for (request, expected) in cases {
        request.send().await.unwrap();
        let seen = server.last();
        assert_eq!(seen.method, http::Method::GET);
        assert_eq!(seen.uri, expected);
        assert_eq!(seen.version, Version::HTTP_11, "plain http is HTTP/1.1");
        assert_eq!(seen.header("accept"), Some("application/json"));
    }
}

#[tokio::test]
async fn typed_helpers_use_client_go_urls_and_bodies() {
    let server = echo_server().await;
    let client = RestClient::new(&config_for(&server)).unwrap();
    let cms = ResourceClient::<ConfigMap>::namespaced(&client, "prod");

    let cm = cms.get("settings", &GetParams::default()).await.unwrap();
    assert_eq!(cm.data["mode"], "fast");
    assert_eq!(
        server.last().uri,
        "/api/v1/namespaces/prod/configmaps/settings"
    );

    let list = cms
        .list(&ListParams {
            label_selector: Some("app=web".into()),
            limit: Some(50),
            resource_version: Some("0".into()),
            resource_version_match: Some("NotOlderThan".into()),
            timeout_seconds: Some(30),
            ..ListParams::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (
            list.items.len(),
            list.resource_version(),
            list.continue_token()
        ),
        (1, "8", Some("next"))
    );
    assert_eq!(
        server.last().uri,
        "/api/v1/namespaces/prod/configmaps?labelSelector=app%3Dweb&limit=50&resourceVersion=0&resourceVersionMatch=NotOlderThan&timeoutSeconds=30"
    );

    let new = ConfigMap {
        metadata: ObjectMeta::named("settings"),
        ..ConfigMap::default()
    };
    let params = PostParams {
        dry_run: true,
        field_manager: Some("ctl".into()),
        field_validation: Some("Strict".into()),
    };
    cms.create(&new, &params).await.unwrap();
    let seen = server.last();
    assert_eq!(seen.method, http::Method::POST);
    assert_eq!(
        seen.uri,
        "/api/v1/namespaces/prod/configmaps?dryRun=All&fieldManager=ctl&fieldValidation=Strict"
    );
    assert_eq!(seen.header("content-type"), Some("application/json"));
    assert_eq!(seen.body, r#"{"metadata":{"name":"settings"}}"#);

    cms.update("settings", &new, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(
        (server.last().method, server.last().uri),
        (
            http::Method::PUT,
            "/api/v1/namespaces/prod/configmaps/settings".into()
        )
    );
    cms.update_status("settings", &new, &PostParams::default())
        .await
        .unwrap();
    assert_eq!(
        server.last().uri,
        "/api/v1/namespaces/prod/configmaps/settings/status"
    );

    // Cluster-scoped resources never get a namespace, even when one is given.
    let roles = ResourceClient::<ClusterRole>::namespaced(&client, "ignored");
    roles
        .get(
            "admin",
            &GetParams {
                resource_version: Some("0".into()),
            },
        )
        .await
        .unwrap();
    assert_eq!(
        server.last().uri,
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/admin?resourceVersion=0"
    );

    // Across namespaces: lists and watches work, named requests are refused before sending.
    let all = ResourceClient::<ConfigMap>::all(&client);
    all.list(&ListParams::default()).await.unwrap();
    assert_eq!(server.last().uri, "/api/v1/configmaps");
    let before = server.count();
    let err = all.get("x", &GetParams::default()).await.unwrap_err();
    assert!(err.to_string().contains("empty namespace"), "{err}");
    let err = all.create(&new, &PostParams::default()).await.unwrap_err();
    assert!(err.to_string().contains("empty namespace"), "{err}");
    assert_eq!(server.count(), before);
}

#[tokio::test]
async fn patch_types_have_their_content_types_and_apply_needs_a_field_manager() {
    let server = echo_server().await;
    let client = RestClient::new(&config_for(&server)).unwrap();
    let cms = ResourceClient::<ConfigMap>::namespaced(&client, "prod");
    let patch = serde_json::json!({"data": {"mode": "slow"}});
    let cases = [
        (PatchType::Merge, "application/merge-patch+json"),
        (
            PatchType::StrategicMerge,
            "application/strategic-merge-patch+json",
        ),
        (PatchType::Json, "application/json-patch+json"),
        (PatchType::Apply, "application/apply-patch+yaml"),
    ];
    for (patch_type, content_type) in cases {
        let params = PatchParams {
            force: patch_type == PatchType::Apply,
            ..PatchParams::apply("my-controller")
        };
        cms.patch("settings", patch_type, &patch, &params)
            .await
            .unwrap();
        let seen = server.last();
        assert_eq!(seen.method, http::Method::PATCH);
        assert_eq!(seen.header("content-type"), Some(content_type));
        assert_eq!(seen.body, patch.to_string());
        let force = if patch_type == PatchType::Apply {
            "&force=true"
        } else {
            ""
        };
        assert_eq!(
            seen.uri,
            format!(
                "/api/v1/namespaces/prod/configmaps/settings?fieldManager=my-controller{force}"
            )
        );
    }
    cms.patch_status(
        "settings",
        PatchType::Merge,
        &patch,
        &PatchParams::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        server.last().uri,
        "/api/v1/namespaces/prod/configmaps/settings/status"
    );

    let before = server.count();
    let err = cms
        .patch(
            "settings",
            PatchType::Apply,
            &patch,
            &PatchParams::default(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("field manager"), "{err}");
    assert_eq!(server.count(), before, "nothing was sent");
}

#[tokio::test]
async fn deletes_send_delete_options_and_return_what_the_server_returned() {
    let server = echo_server().await;
    let client = RestClient::new(&config_for(&server)).unwrap();
    let cms = ResourceClient::<ConfigMap>::namespaced(&client, "prod");

    let params = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: Some("u-1".into()),
            resource_version: None,
        }),
        dry_run: true,
        ..DeleteParams::foreground()
    };
    let Deleted::Object(cm) = cms.delete("settings", &params).await.unwrap() else {
        panic!("the server returned the object");
    };
    assert_eq!(cm.metadata.name, "settings");
    let seen = server.last();
    assert_eq!(
        (seen.method, seen.uri.as_str()),
        (
            http::Method::DELETE,
            "/api/v1/namespaces/prod/configmaps/settings"
        )
    );
    let body: serde_json::Value = serde_json::from_slice(&seen.body).unwrap();
    assert_eq!(
        body,
        serde_json::json!({
            "kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0,
            "preconditions": {"uid": "u-1"}, "propagationPolicy": "Foreground", "dryRun": ["All"]
        })
    );

    let Deleted::Status(status) = cms
        .delete("gone", &DeleteParams::background())
        .await
        .unwrap()
    else {
        panic!("the server returned a Status");
    };
    assert_eq!(status.status, "Success");

    let deleted = cms
        .delete_collection(
            &DeleteParams::orphan(),
            &ListParams {
                label_selector: Some("stale=true".into()),
                ..ListParams::default()
            },
        )
        .await
        .unwrap();
    assert!(matches!(deleted, Deleted::Status(_)));
    let seen = server.last();
    assert_eq!(
        seen.uri,
        "/api/v1/namespaces/prod/configmaps?labelSelector=stale%3Dtrue"
    );
    assert!(String::from_utf8_lossy(&seen.body).contains(r#""propagationPolicy":"Orphan""#));
}

#[tokio::test]
async fn dynamic_objects_and_watches() {
    let server = echo_server().await;
    let client = RestClient::new(&config_for(&server)).unwrap();
    let resource = ApiResource::of::<ConfigMap>();
    let dynamic = DynamicClient::from_api_resource(&client, &resource, Some("prod"));
    let cm = dynamic
        .get("settings", &GetParams::default())
        .await
        .unwrap();
    assert_eq!(cm.data["data"]["mode"], "fast");
    assert_eq!(
        server.last().uri,
        "/api/v1/namespaces/prod/configmaps/settings"
    );

    let gvr = GroupVersionResource::new("example.com", "v1alpha1", "widgets");
    let widgets = DynamicClient::dynamic(&client, &gvr, true, None);
    let _ = widgets.list(&ListParams::default()).await;
    assert_eq!(server.last().uri, "/apis/example.com/v1alpha1/widgets");
    let nodes = DynamicClient::dynamic(
        &client,
        &GroupVersionResource::new("", "v1", "nodes"),
        false,
        Some("x"),
    );
    let _ = nodes.get("n1", &GetParams::default()).await;
    assert_eq!(server.last().uri, "/api/v1/nodes/n1");

    // A watch comes back decoded, as a typed event stream.
    let mut watch = dynamic
        .watch(&WatchParams {
            resource_version: Some("7".into()),
            allow_watch_bookmarks: true,
            timeout_seconds: Some(300),
            ..WatchParams::default()
        })
        .await
        .unwrap();
    assert_eq!(
        server.last().uri,
        "/api/v1/namespaces/prod/configmaps?allowWatchBookmarks=true&resourceVersion=7&timeoutSeconds=300&watch=true"
    );
    let Some(Ok(WatchEvent::Added(added))) = watch.next().await else {
        panic!("an ADDED event first");
    };
    assert_eq!(added.metadata.name, "settings");
    assert!(matches!(
        watch.next().await,
        Some(Ok(WatchEvent::Bookmark(_)))
    ));
    assert!(watch.next().await.is_none(), "the watch ends cleanly");
}

#[tokio::test]
async fn credentials_user_agent_and_impersonation_headers() {
    let server = echo_server().await;
    let dir = tempfile::tempdir().unwrap();
    let token_path = dir.path().join("token");
    std::fs::write(&token_path, "file-token\n").unwrap();
    let cases = [
        (Auth::None, None),
        (
            Auth::Bearer(Secret::from("static-token")),
            Some("Bearer static-token"),
        ),
        (
            Auth::TokenFile(TokenFile::new(&token_path, None)),
            Some("Bearer file-token"),
        ),
        (
            Auth::Basic {
                username: "admin".into(),
                password: Secret::from("hunter2"),
            },
            Some("Basic YWRtaW46aHVudGVyMg=="),
        ),
    ];
    for (auth, expected) in cases {
        let mut config = config_for(&server);
        config.auth = auth;
        config.user_agent = "my-controller/1.2".into();
        config.impersonate = Some(Impersonation {
            user: "jane".into(),
            uid: None,
            groups: vec!["devs".into(), "system:authenticated".into()],
            extra: [("reason".to_owned(), vec!["debugging".to_owned()])]
                .into_iter()
                .collect(),
        });
        let client = RestClient::new(&config).unwrap();
        client.get().abs_path("/version").send().await.unwrap();
        let seen = server.last();
        assert_eq!(seen.header("authorization"), expected);
        assert_eq!(seen.header("user-agent"), Some("my-controller/1.2"));
        assert_eq!(seen.header("impersonate-user"), Some("jane"));
        let groups: Vec<_> = seen
            .headers
            .get_all("impersonate-group")
            .iter()
            .map(|v| v.to_str().unwrap())
            .collect();
        assert_eq!(groups, ["devs", "system:authenticated"]);
        assert_eq!(seen.header("impersonate-extra-reason"), Some("debugging"));
    }

    // A header set on the request wins over the configuration's.
    let mut config = config_for(&server);
    config.auth = Auth::Bearer(Secret::from("configured"));
    let client = RestClient::new(&config).unwrap();
    client
        .get()
        .abs_path("/version")
        .header("Authorization", "Bearer per-request")
        .send()
        .await
        .unwrap();
    assert_eq!(
        server.last().header("authorization"),
        Some("Bearer per-request")
    );
    assert!(
        server
            .last()
            .header("user-agent")
            .unwrap()
            .starts_with("clientgo-rs/")
    );
}

#[tokio::test]
async fn the_token_file_is_re_read_when_it_rotates() {
    let server = echo_server().await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("token");
    std::fs::write(&path, "first").unwrap();
    let now = std::sync::Arc::new(std::sync::Mutex::new(std::time::SystemTime::now()));
    let clock_now = now.clone();
    let clock = clientgo_rest::config::Clock::from_fn(move || *clock_now.lock().unwrap());
    let mut config = config_for(&server);
    config.auth = Auth::TokenFile(TokenFile::with_clock(&path, None, clock));
    let client = RestClient::new(&config).unwrap();
    client.get().abs_path("/version").send().await.unwrap();
    assert_eq!(server.last().header("authorization"), Some("Bearer first"));
    std::fs::write(&path, "second").unwrap();
    *now.lock().unwrap() += std::time::Duration::from_secs(50);
    client.get().abs_path("/version").send().await.unwrap();
    assert_eq!(server.last().header("authorization"), Some("Bearer second"));
}
