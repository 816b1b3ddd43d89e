//! patch: merge, JSON, strategic merge, server-side apply.

use serde_json::json;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const MERGE: &str = "application/merge-patch+json";
const JSON: &str = "application/json-patch+json";
const SMP: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

#[tokio::test]
async fn merge_and_json_patches() {
    let (_sim, c) = sim().await;
    let cm = c.configmap("default", "a", json!({"x": "1"})).await;
    let r = c
        .patch(
            &format!("{CMS}/a"),
            MERGE,
            json!({"data": {"k": null, "n": "1"}, "metadata": {"labels": {"y": "2"}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"], json!({"n": "1"}));
    assert_eq!(r.body["metadata"]["labels"], json!({"x": "1", "y": "2"}));
    assert!(rv(&r.body) > rv(&cm));

    let r = c.patch(&format!("{CMS}/a"), JSON, json!([{"op": "add", "path": "/data/m", "value": "2"}, {"op": "remove", "path": "/data/n"}])).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"], json!({"m": "2"}));

    let r = c
        .patch(
            &format!("{CMS}/a"),
            JSON,
            json!([{"op": "test", "path": "/data/m", "value": "3"}]),
        )
        .await;
    assert_status(&r, 422, "Invalid");
    let r = c
        .patch(&format!("{CMS}/a"), JSON, json!({"op": "add"}))
        .await;
    assert_status(&r, 400, "BadRequest");
    let r = c
        .patch(
            &format!("{CMS}/a"),
            MERGE,
            json!({"metadata": {"resourceVersion": rv(&cm).to_string()}}),
        )
        .await;
    assert_status(&r, 409, "Conflict");
    let r = c.patch(&format!("{CMS}/missing"), MERGE, json!({})).await;
    assert_status(&r, 404, "NotFound");
    let r = c.patch(&format!("{CMS}/a"), "text/plain", json!({})).await;
    assert_status(&r, 415, "UnsupportedMediaType");
    let r = c
        .send(
            http::Method::PATCH,
            &format!("{CMS}/a"),
            Some(b"{oops".to_vec()),
            MERGE,
            None,
        )
        .await
        .read()
        .await;
    assert_status(&r, 400, "BadRequest");

    // A patch that changes nothing writes nothing.
    let before = c.get(&format!("{CMS}/a")).await.body;
    let r = c
        .patch(&format!("{CMS}/a"), MERGE, json!({"data": {"m": "2"}}))
        .await;
    assert_eq!(rv(&r.body), rv(&before));
}

#[tokio::test]
async fn strategic_merge_uses_list_merge_keys() {
    let (_sim, c) = sim().await;
    let deps = "/apis/apps/v1/namespaces/default/deployments";
    let r = c
        .post(
            deps,
            json!({"metadata": {"name": "web"}, "spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
        {"name": "sidecar", "image": "side:1"}]}}}}),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = c
        .patch(
            &format!("{deps}/web"),
            SMP,
            json!({"spec": {"template": {"spec": {"containers": [
        {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]}]}}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let containers = &r.body["spec"]["template"]["spec"]["containers"];
    assert_eq!(
        containers.as_array().unwrap().len(),
        2,
        "merged by name, not replaced"
    );
    assert_eq!(containers[0]["image"], "app:2");
    assert_eq!(
        containers[0]["env"],
        json!([{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]),
        "the patch's items first, as kube-apiserver 1.36.2 puts them"
    );
    assert_eq!(r.body["metadata"]["generation"], 2);
    let r = c
        .patch(
            &format!("{deps}/web"),
            SMP,
            json!({"spec": {"template": {"spec": {"containers": [
        {"name": "sidecar", "$patch": "delete"}]}}}}),
        )
        .await;
    assert_eq!(
        r.body["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // The same patch as a JSON merge patch replaces the list.
    let r = c.patch(&format!("{deps}/web"), MERGE, json!({"spec": {"template": {"spec": {"containers": [{"name": "only", "image": "o"}]}}}})).await;
    // (then defaulted again, as by kube-apiserver 1.36.2)
    assert_eq!(
        r.body["spec"]["template"]["spec"]["containers"],
        json!([{"name": "only", "image": "o", "imagePullPolicy": "Always", "resources": {},
            "terminationMessagePath": "/dev/termination-log",
            "terminationMessagePolicy": "File"}])
    );
    // status subresource patches
    let r = c
        .patch(
            &format!("{deps}/web/status"),
            MERGE,
            json!({"status": {"replicas": 4}, "spec": {"replicas": 9}}),
        )
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"]["replicas"], 4);
    assert_eq!(
        r.body["spec"]["replicas"], 1,
        "the defaulted replicas, not the patch's"
    );
}

#[tokio::test]
async fn server_side_apply_creates_then_merges() {
    let (_sim, c) = sim().await;
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"a": "1"}});
    let r = c.patch(&format!("{CMS}/ssa"), APPLY, obj.clone()).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch"
    );
    let r = c
        .patch(&format!("{CMS}/ssa?fieldManager=test"), APPLY, obj)
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = c.patch(&format!("{CMS}/ssa?fieldManager=test"), APPLY, json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": {"b": "2"}})).await;
    assert_eq!(r.status, 200);
    // The manager no longer applies `a`, which no one else owns: it goes (as on
    // kube-apiserver 1.36.2).
    assert_eq!(r.body["data"], json!({"b": "2"}));
}
