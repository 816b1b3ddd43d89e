//! `PartialObjectMetadata` output on get, list and watch (built-ins and custom resources), and
//! the Accept negotiation around it: fallbacks, versions and 406 NotAcceptable.

use http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::discovery::widget_crd;
use crate::support::{Client, Next, Resp, Watch, assert_status, name, sim};

const PARTIAL: &str = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1";
const PARTIAL_LIST: &str = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1";
/// What client-go's metadata client sends for a list (protobuf first, JSON fallback).
const CLIENT_GO_LIST: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

async fn get_as(c: &Client, path: &str, accept: &str) -> Resp {
    c.send(Method::GET, path, None, "", Some(accept))
        .await
        .read()
        .await
}

async fn watch_as(c: &Client, path: &str, accept: &str) -> Watch {
    let resp = c.send(Method::GET, path, None, "", Some(accept)).await;
    assert_eq!(resp.0.status(), StatusCode::OK, "watch {path}");
    Watch::from(resp)
}

/// Asserts `v` is a partial object of `version` with nothing but its metadata.
fn assert_partial(v: &Value, version: &str) {
    assert_eq!(v["kind"], "PartialObjectMetadata", "{v}");
    assert_eq!(v["apiVersion"], format!("meta.k8s.io/{version}"), "{v}");
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(keys.len(), 3, "only kind, apiVersion and metadata: {v}");
}

#[tokio::test]
async fn get_reduces_an_object_to_its_metadata() {
    let (_sim, c) = sim().await;
    let created = c
        .configmap("default", "settings", json!({"app": "web"}))
        .await;
    let path = "/api/v1/namespaces/default/configmaps/settings";
    let r = get_as(&c, path, PARTIAL).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_partial(&r.body, "v1");
    assert_eq!(
        r.body["metadata"], created["metadata"],
        "the whole metadata"
    );
    assert!(r.body.get("data").is_none());

    // v1beta1 as well; client-go's header (protobuf first) gets JSON.
    let r = get_as(
        &c,
        path,
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1",
    )
    .await;
    assert_partial(&r.body, "v1beta1");
    let r = get_as(&c, path, "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json").await;
    assert_partial(&r.body, "v1");
    assert_eq!(
        r.headers.get("content-type").unwrap(),
        "application/json",
        "served as JSON"
    );

    // A missing object is still a NotFound Status, not a partial object.
    let r = get_as(&c, "/api/v1/namespaces/default/configmaps/nope", PARTIAL).await;
    assert_status(&r, 404, "NotFound");
}

#[tokio::test]
async fn list_reduces_every_item_and_keeps_list_metadata() {
    let (_sim, c) = sim().await;
    for n in ["a", "b", "c"] {
        c.configmap("default", n, json!({"app": "web"})).await;
    }
    c.configmap("kube-system", "other", json!({})).await;
    let path = "/api/v1/namespaces/default/configmaps";
    let r = get_as(&c, path, CLIENT_GO_LIST).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["kind"], "PartialObjectMetadataList");
    assert_eq!(r.body["apiVersion"], "meta.k8s.io/v1");
    let plain = c.get(path).await;
    assert_eq!(
        r.body["metadata"]["resourceVersion"],
        plain.body["metadata"]["resourceVersion"]
    );
    let items = r.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 3);
    for (item, full) in items.iter().zip(plain.body["items"].as_array().unwrap()) {
        assert_partial(item, "v1");
        assert_eq!(item["metadata"], full["metadata"]);
    }

    // Pages carry the continue token and the remaining count; selectors apply.
    let r = get_as(&c, &format!("{path}?limit=2"), PARTIAL_LIST).await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2);
    assert_eq!(r.body["metadata"]["remainingItemCount"], 1);
    let token = r.body["metadata"]["continue"].as_str().unwrap().to_owned();
    let r = get_as(
        &c,
        &format!("{path}?limit=2&continue={token}"),
        PARTIAL_LIST,
    )
    .await;
    assert_eq!(
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(name)
            .collect::<Vec<_>>(),
        ["c"]
    );
    assert!(r.body["metadata"].get("continue").is_none(), "{}", r.body);
    let r = get_as(
        &c,
        "/api/v1/configmaps?labelSelector=app%3Dweb&fieldSelector=metadata.name%3Db",
        PARTIAL_LIST,
    )
    .await;
    assert_eq!(
        r.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(name)
            .collect::<Vec<_>>(),
        ["b"]
    );
}

#[tokio::test]
async fn watch_reduces_events_and_bookmarks() {
    let (_sim, c) = sim().await;
    c.configmap("default", "a", json!({})).await;
    let path = "/api/v1/namespaces/default/configmaps";
    let mut w = watch_as(
        &c,
        &format!("{path}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
        PARTIAL,
    )
    .await;
    let (kind, obj) = w.event().await;
    assert_eq!((kind.as_str(), name(&obj)), ("ADDED", "a"));
    assert_partial(&obj, "v1");
    let (kind, obj) = w.event().await;
    assert_eq!(kind, "BOOKMARK");
    assert_partial(&obj, "v1");
    assert_eq!(
        obj["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );

    c.configmap("default", "b", json!({})).await;
    let r = c
        .patch(
            &format!("{path}/b"),
            "application/merge-patch+json",
            json!({"metadata": {"labels": {"x": "y"}}, "data": {"k": "v2"}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    c.delete(&format!("{path}/a")).await;
    let mut seen = Vec::new();
    for _ in 0..3 {
        let (kind, obj) = w.change().await;
        assert_partial(&obj, "v1");
        assert!(obj.get("data").is_none());
        seen.push((
            kind,
            name(&obj).to_owned(),
            obj["metadata"]["labels"].clone(),
        ));
    }
    // Created with empty labels, which kube-apiserver drops as Go's encoder omits them
    // (observed on kube-apiserver 1.36.2, in get and watch answers).
    assert_eq!(
        seen,
        [
            ("ADDED".to_owned(), "b".to_owned(), Value::Null),
            ("MODIFIED".to_owned(), "b".to_owned(), json!({"x": "y"})),
            ("DELETED".to_owned(), "a".to_owned(), Value::Null),
        ]
    );

    // A watch of one object by name, too.
    let mut w = watch_as(
        &c,
        &format!("{path}?watch=1&fieldSelector=metadata.name%3Db"),
        PARTIAL,
    )
    .await;
    let (kind, obj) = w.event().await;
    assert_eq!((kind.as_str(), name(&obj)), ("ADDED", "b"));
    assert_partial(&obj, "v1");
}

#[tokio::test]
async fn custom_resources_are_reduced_too() {
    let (_sim, c) = sim().await;
    let r = c
        .post(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
            widget_crd(true),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let ws = "/apis/example.com/v1/namespaces/default/widgets";
    let r = c
        .post(
            ws,
            json!({"apiVersion": "example.com/v1", "kind": "Widget",
                   "metadata": {"name": "w", "finalizers": ["example.com/keep"]}, "spec": {"size": 1}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = get_as(&c, &format!("{ws}/w"), PARTIAL).await;
    assert_partial(&r.body, "v1");
    assert_eq!(
        r.body["metadata"]["finalizers"],
        json!(["example.com/keep"])
    );
    let r = get_as(&c, "/apis/example.com/v1/widgets", PARTIAL_LIST).await;
    assert_eq!(r.body["kind"], "PartialObjectMetadataList");
    assert_partial(&r.body["items"][0], "v1");
    let mut w = watch_as(&c, &format!("{ws}?watch=true"), PARTIAL).await;
    let (kind, obj) = w.event().await;
    assert_eq!(kind, "ADDED");
    assert_partial(&obj, "v1");
    assert!(obj.get("spec").is_none());
}

#[tokio::test]
async fn what_cannot_be_served_is_not_acceptable() {
    let (_sim, c) = sim().await;
    c.configmap("default", "a", json!({})).await;
    let one = "/api/v1/namespaces/default/configmaps/a";
    let all = "/api/v1/namespaces/default/configmaps";

    // Unknown conversions, groups and versions, alone: 406 with the real message.
    for accept in [
        "application/json;as=Foo;g=meta.k8s.io;v=v1",
        "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v2",
        "application/json;as=PartialObjectMetadata;g=example.com;v=v1",
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
    ] {
        for path in [one, all] {
            let r = get_as(&c, path, accept).await;
            assert_status(&r, 406, "NotAcceptable");
            assert_eq!(
                r.body["message"],
                "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
                "{accept}"
            );
        }
    }
    // With a plain JSON fallback, the object comes whole.
    let r = get_as(
        &c,
        one,
        "application/json;as=Foo;g=meta.k8s.io;v=v1, application/json",
    )
    .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["kind"], "ConfigMap");
    assert_eq!(r.body["data"]["k"], "v");

    // A list kind of one object, an object kind of a list.
    let r = get_as(&c, one, PARTIAL_LIST).await;
    assert_status(&r, 406, "NotAcceptable");
    assert_eq!(
        r.body["message"],
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    );
    let r = get_as(&c, all, PARTIAL).await;
    assert_status(&r, 406, "NotAcceptable");
    assert_eq!(
        r.body["message"],
        "you requested PartialObjectMetadata, but the requested object is a list (*core.ConfigMapList)"
    );
    // A watch of PartialObjectMetadataList: 200, and the stream ends at its first event
    // (kube-apiserver 1.36.2 fails to convert it).
    let r = get_as(&c, &format!("{all}?watch=true"), PARTIAL_LIST).await;
    assert_eq!(r.status, 200);
    assert!(r.raw.is_empty());
    let r = get_as(
        &c,
        &format!("{all}?watch=true"),
        "application/json;as=Foo;g=meta.k8s.io;v=v1",
    )
    .await;
    assert_status(&r, 406, "NotAcceptable");
}

#[tokio::test]
async fn a_watch_ends_cleanly_after_partial_events() {
    let (sim, c) = sim().await;
    let mut w = watch_as(
        &c,
        "/api/v1/namespaces/default/configmaps?watch=true",
        PARTIAL,
    )
    .await;
    c.configmap("default", "a", json!({})).await;
    let (kind, obj) = w.change().await;
    assert_eq!(kind, "ADDED");
    assert_partial(&obj, "v1");
    sim.close_all_watches();
    assert!(matches!(w.next().await, Next::End));
}
