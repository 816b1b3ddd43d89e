//! Garbage collection, propagation policies and namespace termination.

use serde_json::{Value, json};

use crate::support::*;

const RS: &str = "/apis/apps/v1/namespaces/default/replicasets";
const DEPS: &str = "/apis/apps/v1/namespaces/default/deployments";

async fn owner_and_dependent(c: &Client, owner: &str, dep: &str) -> (Value, Value) {
    let d = c
        .post(DEPS, json!({"metadata": {"name": owner}, "spec": {}}))
        .await
        .body;
    let rs = c
        .post(
            RS,
            json!({"metadata": {"name": dep, "ownerReferences": [{
        "apiVersion": "apps/v1", "kind": "Deployment", "name": owner, "uid": d["metadata"]["uid"],
        "controller": true, "blockOwnerDeletion": true}]}, "spec": {}}),
        )
        .await;
    assert_eq!(rs.status, 201, "{}", rs.body);
    (d, rs.body)
}

#[tokio::test]
async fn background_deletion_removes_dependents() {
    let (_sim, c) = sim().await;
    owner_and_dependent(&c, "web", "web-1").await;
    let unrelated = c
        .post(RS, json!({"metadata": {"name": "lonely"}, "spec": {}}))
        .await;
    assert_eq!(unrelated.status, 201);
    assert_eq!(c.delete(&format!("{DEPS}/web")).await.status, 200);
    eventually("dependent collected", || async {
        c.get(&format!("{RS}/web-1")).await.status == 404
    })
    .await;
    assert_eq!(c.get(&format!("{RS}/lonely")).await.status, 200);
}

#[tokio::test]
async fn orphan_policy_keeps_dependents_without_the_owner_reference() {
    let (_sim, c) = sim().await;
    owner_and_dependent(&c, "web", "web-1").await;
    let r = c
        .call(
            http::Method::DELETE,
            &format!("{DEPS}/web"),
            Some(json!({"propagationPolicy": "Orphan"})),
        )
        .await;
    assert_eq!(r.status, 200);
    assert!(
        r.body["metadata"]["finalizers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "orphan")
    );
    eventually("owner gone", || async {
        c.get(&format!("{DEPS}/web")).await.status == 404
    })
    .await;
    let rs = c.get(&format!("{RS}/web-1")).await;
    assert_eq!(rs.status, 200);
    assert!(rs.body["metadata"].get("ownerReferences").is_none());
}

#[tokio::test]
async fn foreground_policy_deletes_dependents_first() {
    let (_sim, c) = sim().await;
    owner_and_dependent(&c, "web", "web-1").await;
    // The dependent has a finalizer, so the owner must wait for it.
    let mut rs = c.get(&format!("{RS}/web-1")).await.body;
    rs["metadata"]["finalizers"] = json!(["example.com/hold"]);
    assert_eq!(c.put(&format!("{RS}/web-1"), rs).await.status, 200);
    let r = c
        .call(
            http::Method::DELETE,
            &format!("{DEPS}/web"),
            Some(json!({"propagationPolicy": "Foreground"})),
        )
        .await;
    assert!(
        r.body["metadata"]["finalizers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f == "foregroundDeletion")
    );
    eventually("dependent marked", || async {
        c.get(&format!("{RS}/web-1")).await.body["metadata"]["deletionTimestamp"].is_string()
    })
    .await;
    assert_eq!(
        c.get(&format!("{DEPS}/web")).await.status,
        200,
        "owner waits for its dependents"
    );
    let mut rs = c.get(&format!("{RS}/web-1")).await.body;
    rs["metadata"]["finalizers"] = json!([]);
    assert_eq!(c.put(&format!("{RS}/web-1"), rs).await.status, 200);
    eventually("owner gone", || async {
        c.get(&format!("{DEPS}/web")).await.status == 404
    })
    .await;
}

#[tokio::test]
async fn deleting_a_namespace_empties_it_first() {
    let (_sim, c) = sim().await;
    assert_eq!(
        c.post("/api/v1/namespaces", json!({"metadata": {"name": "team"}}))
            .await
            .status,
        201
    );
    let r = c
        .post(
            "/api/v1/namespaces/team/configmaps",
            json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
        )
        .await;
    assert_eq!(r.status, 201);
    c.configmap("team", "plain", json!({})).await;
    let r = c.delete("/api/v1/namespaces/team").await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"]["phase"], "Terminating");
    let r = c
        .post(
            "/api/v1/namespaces/team/configmaps",
            json!({"metadata": {"name": "late"}}),
        )
        .await;
    assert_status(&r, 403, "Forbidden");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("because it is being terminated")
    );
    eventually("plain deleted", || async {
        c.get("/api/v1/namespaces/team/configmaps/plain")
            .await
            .status
            == 404
    })
    .await;
    assert_eq!(
        c.get("/api/v1/namespaces/team").await.status,
        200,
        "waits for the held object"
    );
    let mut held = c.get("/api/v1/namespaces/team/configmaps/held").await.body;
    held["metadata"]["finalizers"] = json!([]);
    assert_eq!(
        c.put("/api/v1/namespaces/team/configmaps/held", held)
            .await
            .status,
        200
    );
    eventually("namespace gone", || async {
        c.get("/api/v1/namespaces/team").await.status == 404
    })
    .await;
}

/// kube-controller-manager's garbage collector (`attemptToDeleteItem`, as in 1.36): a
/// dependent with one owner gone and another alive is kept, and only the dangling reference
/// is removed.
#[tokio::test]
async fn a_dangling_owner_reference_goes_while_another_owner_lives() {
    let (_sim, c) = sim().await;
    let live = c
        .post(DEPS, json!({"metadata": {"name": "live"}, "spec": {}}))
        .await
        .body;
    let reference = |name: &str, uid: &Value| json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": name, "uid": uid});
    let rs = c
        .post(
            RS,
            json!({"metadata": {"name": "shared", "ownerReferences": [
                reference("live", &live["metadata"]["uid"]),
                reference("gone", &json!("00000000-0000-0000-0000-00000000dead"))]},
                "spec": {}}),
        )
        .await;
    assert_eq!(rs.status, 201, "{}", rs.body);
    eventually("the dangling reference removed", || async {
        let refs = c.get(&format!("{RS}/shared")).await.body["metadata"]["ownerReferences"].clone();
        refs.as_array()
            .is_some_and(|r| r.len() == 1 && r[0]["name"] == "live")
    })
    .await;
}
