//! Answers written down as kube-apiserver 1.36.2 gave them to the differential check
//! (`tests/differential.rs`), where the sim used to answer differently.

use http::Method;
use serde_json::json;

use crate::discovery::widget_crd;
use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn a_resource_version_on_create_is_an_unclassified_500() {
    let (_sim, c) = sim().await;
    let r = c
        .post(
            CMS,
            json!({"metadata": {"name": "x", "resourceVersion": "12"}}),
        )
        .await;
    // Observed on kube-apiserver 1.36.2: a plain error of the registry, no reason, no details.
    assert_eq!(r.status, 500);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "resourceVersion should not be set on objects to be created", "code": 500})
    );
}

async fn patch_as_text(c: &Client, path: &str) -> Resp {
    let body = Some(b"data".to_vec());
    let sent = c.send(Method::PATCH, path, body, "text/plain", None).await;
    sent.read().await
}

#[tokio::test]
async fn patch_content_types_that_are_no_patch_type() {
    let (_sim, c) = sim().await;
    c.configmap("default", "a", json!({})).await;
    let r = patch_as_text(&c, &format!("{CMS}/a")).await;
    // Observed on kube-apiserver 1.36.2 for a built-in resource.
    assert_status(&r, 415, "UnsupportedMediaType");
    assert_eq!(r.body["message"], "415: Unsupported Media Type");
    assert_eq!(r.body["details"], json!({}));

    // A custom resource's handler lists the patch types it accepts.
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(c.post(crds, widget_crd(false)).await.status, 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    let w = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert_eq!(c.post(widgets, w).await.status, 201);
    let r = patch_as_text(&c, &format!("{widgets}/w")).await;
    assert_status(&r, 415, "UnsupportedMediaType");
    assert_eq!(
        r.body["message"],
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    );
}

#[tokio::test]
async fn unsupported_field_selectors_by_type() {
    let (_sim, c) = sim().await;
    // Observed on kube-apiserver 1.36.2: types without a field label conversion of their own
    // answer apimachinery's default message, the others (pods, events.k8s.io events, custom
    // resources) `field label not supported`.
    for (path, message) in [
        (
            "/api/v1/namespaces/default/configmaps",
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#,
        ),
        (
            "/apis/apps/v1/namespaces/default/deployments",
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#,
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/default/leases",
            r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#,
        ),
        (
            "/api/v1/namespaces/default/pods",
            "field label not supported: spec.foo",
        ),
        (
            "/apis/events.k8s.io/v1/namespaces/default/events",
            "field label not supported: spec.foo",
        ),
    ] {
        let r = c.get(&format!("{path}?fieldSelector=spec.foo%3Dx")).await;
        assert_status(&r, 400, "BadRequest");
        assert_eq!(r.body["message"], message, "{path}");
    }
    // events.k8s.io events select on their own fields.
    let events = "/apis/events.k8s.io/v1/namespaces/default/events";
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "e"}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "ctl", "reportingInstance": "i", "action": "A", "reason": "R",
        "type": "Normal", "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}});
    assert_eq!(c.post(events, event).await.status, 201);
    for selector in [
        "regarding.name%3Dp",
        "regarding.kind%3DPod",
        "reason%3DR",
        "reportingController%3Dctl",
        "type%3DNormal",
    ] {
        let r = c.get(&format!("{events}?fieldSelector={selector}")).await;
        assert_eq!(r.status, 200, "{selector}: {}", r.body);
        assert_eq!(
            r.body["items"].as_array().map(Vec::len),
            Some(1),
            "{selector}"
        );
    }
}

#[tokio::test]
async fn too_large_resource_version_cause() {
    let (_sim, c) = start(clientgo_apiserver_sim::SimConfig {
        too_large_rv_wait: std::time::Duration::from_millis(10),
        ..Default::default()
    })
    .await;
    let r = c
        .get(&format!(
            "{CMS}?resourceVersion=999&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    // Observed on kube-apiserver 1.36.2: the numbers are in the message, not in the cause.
    assert_status(&r, 504, "Timeout");
    assert!(
        r.body["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("Timeout: Too large resource version: 999, current: ")),
        "{}",
        r.body
    );
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}])
    );
}

#[tokio::test]
async fn delete_success_names_no_empty_group() {
    let (_sim, c) = sim().await;
    let cm = c.configmap("default", "a", json!({})).await;
    let r = c.delete(&format!("{CMS}/a")).await;
    // Observed on kube-apiserver 1.36.2 (core group: no `group`).
    assert_eq!(r.status, 200);
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
            "details": {"name": "a", "kind": "configmaps", "uid": cm["metadata"]["uid"]}})
    );
}

#[tokio::test]
async fn custom_resource_lists_always_carry_continue() {
    let (_sim, c) = sim().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(c.post(crds, widget_crd(false)).await.status, 201);
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    for name in ["a", "b"] {
        let w =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": name}});
        assert_eq!(c.post(widgets, w).await.status, 201);
    }
    // Observed on kube-apiserver 1.36.2: an unstructured list's `continue` is "" on its
    // last page, where a built-in list omits it.
    let r = c.get(widgets).await;
    assert_eq!(r.body["metadata"]["continue"], "");
    let r = c.get(&format!("{widgets}?limit=1")).await;
    let token = r.body["metadata"]["continue"]
        .as_str()
        .unwrap_or("")
        .to_owned();
    assert!(!token.is_empty());
    assert_eq!(r.body["metadata"]["remainingItemCount"], 1);
    let r = c.get(&format!("{widgets}?limit=1&continue={token}")).await;
    assert_eq!(r.body["metadata"]["continue"], "");
    assert_eq!(r.body["items"][0]["metadata"]["name"], "b");
    let r = c.get(CMS).await;
    assert!(r.body["metadata"].get("continue").is_none(), "{}", r.body);
}
