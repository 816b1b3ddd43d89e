//! Graceful deletion of Pods and the deletion of CRDs, as kube-apiserver 1.36.2 answers them
//! (the differential steps `delete/pod` and `crd/delete`): a Pod's DELETE answers the Pod;
//! one bound to a node stays, marked, for its grace period; a CRD's DELETE answers the CRD
//! with its cleanup finalizer, refuses new custom resources while it terminates, and goes
//! once its custom resources are gone.

use std::time::Duration;

use serde_json::{Value, json};

use crate::support::*;

const PODS: &str = "/api/v1/namespaces/default/pods";

fn pod(name: &str, node: Option<&str>, grace: Option<i64>) -> Value {
    let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}]});
    if let Some(node) = node {
        spec["nodeName"] = json!(node);
    }
    if let Some(grace) = grace {
        spec["terminationGracePeriodSeconds"] = json!(grace);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn an_unbound_pod_goes_at_once_and_its_delete_answers_the_pod() {
    let (_sim, c) = sim().await;
    assert_eq!(c.post(PODS, pod("p", None, None)).await.status, 201);
    let r = c.delete(&format!("{PODS}/p")).await;
    assert_eq!(r.status, 200);
    assert_eq!((r.body["kind"].as_str(), name(&r.body)), (Some("Pod"), "p"));
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 0);
    assert_eq!(c.get(&format!("{PODS}/p")).await.status, 404);
}

#[tokio::test(start_paused = true)]
async fn a_bound_pod_stays_for_its_grace_period() {
    let (_sim, c) = sim().await;
    assert_eq!(
        c.post(PODS, pod("p", Some("node-1"), Some(20)))
            .await
            .status,
        201
    );
    let r = c.delete(&format!("{PODS}/p")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["kind"], "Pod");
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 20);
    tokio::time::sleep(Duration::from_secs(19)).await;
    let r = c.get(&format!("{PODS}/p")).await;
    assert_eq!(r.status, 200, "readable during its grace period");
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    // Deleting again answers the Pod, still pending.
    let again = c.delete(&format!("{PODS}/p")).await;
    assert_eq!(
        (again.status.as_u16(), &again.body["kind"]),
        (200, &json!("Pod"))
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    eventually("the pod removed after 20 s", || async {
        c.get(&format!("{PODS}/p")).await.status == 404
    })
    .await;

    // The default period is 30 s; the request's gracePeriodSeconds wins over it.
    assert_eq!(
        c.post(PODS, pod("q", Some("node-1"), None)).await.status,
        201
    );
    let r = c.delete(&format!("{PODS}/q")).await;
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 30);
    let r = c.delete(&format!("{PODS}/q?gracePeriodSeconds=5")).await;
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 5);
    // gracePeriodSeconds=0 removes it at once.
    let r = c.delete(&format!("{PODS}/q?gracePeriodSeconds=0")).await;
    assert_eq!((r.status.as_u16(), &r.body["kind"]), (200, &json!("Pod")));
    assert_eq!(c.get(&format!("{PODS}/q")).await.status, 404);
}

#[tokio::test]
async fn a_crd_delete_answers_the_crd_with_its_cleanup_finalizer() {
    let (_sim, c) = sim().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let crd = gadgets_crd();
    assert_eq!(c.post(crds, crd).await.status, 201);
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    let g = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "g", "finalizers": ["example.com/hold"]}});
    assert_eq!(c.post(gadgets, g).await.status, 201);

    let r = c.delete(&format!("{crds}/gadgets.example.com")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["kind"], "CustomResourceDefinition");
    assert_eq!(
        r.body["metadata"]["finalizers"],
        json!(["customresourcecleanup.apiextensions.k8s.io"])
    );
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    eventually("its instance being deleted", || async {
        c.get(&format!("{gadgets}/g")).await.body["metadata"]["deletionTimestamp"].is_string()
    })
    .await;
    // While it terminates, no new instance: kube-apiserver 1.36.2 answered (the differential
    // step `cr/create-while-terminating`):
    let refused = c
        .post(
            gadgets,
            json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "h"}}),
        )
        .await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "gadgets.example.com \"h\" is forbidden: create not allowed while custom resource definition is terminating",
            "reason": "Forbidden", "details": {"name": "h", "group": "example.com", "kind": "gadgets"},
            "code": 403})
    );
    let released = c
        .patch(
            &format!("{gadgets}/g"),
            "application/merge-patch+json",
            json!({"metadata": {"finalizers": null}}),
        )
        .await;
    assert_eq!(released.status, 200, "{}", released.body);
    eventually("the CRD gone after its instances", || async {
        c.get(&format!("{crds}/gadgets.example.com")).await.status == 404
    })
    .await;
    crate::unserved::assert_page_not_found(&c.get(gadgets).await);
}
