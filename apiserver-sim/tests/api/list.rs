//! list: pagination, resourceVersion semantics, 410s and selectors.

use std::time::Duration;

use clientgo_apiserver_sim::SimConfig;
use serde_json::json;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

fn names(v: &serde_json::Value) -> Vec<String> {
    v["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| name(i).to_owned())
        .collect()
}

#[tokio::test]
async fn pages_are_a_consistent_snapshot() {
    let (_sim, c) = sim().await;
    for i in 0..5 {
        c.configmap("default", &format!("cm{i}"), json!({})).await;
    }
    let p1 = c.get(&format!("{CMS}?limit=2")).await;
    assert_eq!(p1.status, 200);
    assert_eq!(p1.body["kind"], "ConfigMapList");
    assert_eq!(p1.body["apiVersion"], "v1");
    // Items of a built-in type carry no apiVersion/kind, only the list does (observed on
    // kube-apiserver 1.36.2).
    let item = &p1.body["items"][0];
    assert!(
        item.get("apiVersion").is_none() && item.get("kind").is_none(),
        "{item}"
    );
    assert_eq!(names(&p1.body), vec!["cm0", "cm1"]);
    assert_eq!(p1.body["metadata"]["remainingItemCount"], 3);
    let token = p1.body["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_owned();
    let snapshot_rv = p1.body["metadata"]["resourceVersion"].clone();

    // Changes after the first page do not show in the following pages.
    c.delete(&format!("{CMS}/cm2")).await;
    c.configmap("default", "cm9", json!({})).await;

    let p2 = c.get(&format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(names(&p2.body), vec!["cm2", "cm3"]);
    assert_eq!(p2.body["metadata"]["resourceVersion"], snapshot_rv);
    assert_eq!(p2.body["metadata"]["remainingItemCount"], 1);
    let token = p2.body["metadata"]["continue"]
        .as_str()
        .expect("continue")
        .to_owned();
    let p3 = c.get(&format!("{CMS}?limit=2&continue={token}")).await;
    assert_eq!(names(&p3.body), vec!["cm4"]);
    assert!(p3.body["metadata"].get("continue").is_none());
    assert!(p3.body["metadata"].get("remainingItemCount").is_none());

    let all = c.get(CMS).await;
    assert_eq!(names(&all.body), vec!["cm0", "cm1", "cm3", "cm4", "cm9"]);
    let everywhere = c.get("/api/v1/configmaps").await;
    assert_eq!(names(&everywhere.body).len(), 5);
}

#[tokio::test]
async fn resource_version_semantics() {
    let config = SimConfig {
        too_large_rv_wait: Duration::from_millis(50),
        ..SimConfig::default()
    };
    let (sim, c) = start(config).await;
    let a = c.configmap("default", "a", json!({})).await;
    let old = rv(&a);
    c.configmap("default", "b", json!({})).await;

    // "0": any state; the limit is ignored as the watch cache ignores it.
    let r = c.get(&format!("{CMS}?resourceVersion=0&limit=1")).await;
    assert_eq!(names(&r.body), vec!["a", "b"]);
    assert!(r.body["metadata"].get("continue").is_none());

    // Exact: the state at that revision.
    let r = c
        .get(&format!(
            "{CMS}?resourceVersion={old}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_eq!(names(&r.body), vec!["a"]);
    assert_eq!(r.body["metadata"]["resourceVersion"], old.to_string());
    // Legacy: a resourceVersion with a limit is exact too.
    let r = c
        .get(&format!("{CMS}?resourceVersion={old}&limit=10"))
        .await;
    assert_eq!(names(&r.body), vec!["a"]);
    // NotOlderThan: the latest state.
    let r = c
        .get(&format!(
            "{CMS}?resourceVersion={old}&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_eq!(names(&r.body), vec!["a", "b"]);

    // In the future: 504 with the ResourceVersionTooLarge cause.
    let r = c
        .get(&format!(
            "{CMS}?resourceVersion=999&resourceVersionMatch=NotOlderThan"
        ))
        .await;
    assert_status(&r, 504, "Timeout");
    assert_eq!(
        r.body["details"]["causes"][0]["reason"],
        "ResourceVersionTooLarge"
    );
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("Too large resource version: 999")
    );

    sim.compact();
    let r = c
        .get(&format!(
            "{CMS}?resourceVersion={old}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_status(&r, 410, "Expired");
    assert_eq!(
        r.body["message"],
        "The resourceVersion for the provided list is too old."
    );
    let r = c.get(&format!("{CMS}?resourceVersion={old}&limit=1")).await;
    assert_status(&r, 410, "Expired");
    // Without a limit the cache serves the latest state.
    let r = c.get(&format!("{CMS}?resourceVersion={old}")).await;
    assert_eq!(r.status, 200);

    let r = c.get(&format!("{CMS}?resourceVersionMatch=Exact")).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided"
    );
    let r = c
        .get(&format!(
            "{CMS}?resourceVersion=0&resourceVersionMatch=Exact"
        ))
        .await;
    assert_status(&r, 422, "Invalid");
    let r = c
        .get(&format!(
            "{CMS}?resourceVersion=1&resourceVersionMatch=Sometimes"
        ))
        .await;
    assert_status(&r, 422, "Invalid");
    let r = c.get(&format!("{CMS}?resourceVersion=abc")).await;
    assert_status(&r, 400, "BadRequest");
    let r = c.get(&format!("{CMS}?continue=garbage")).await;
    assert_status(&r, 400, "BadRequest");
}

#[tokio::test]
async fn expired_continue_token_gets_410_and_a_fresh_token() {
    let (sim, c) = sim().await;
    for i in 0..4 {
        c.configmap("default", &format!("cm{i}"), json!({})).await;
    }
    let p1 = c.get(&format!("{CMS}?limit=2")).await;
    let token = p1.body["metadata"]["continue"].as_str().unwrap().to_owned();
    let r = c
        .get(&format!("{CMS}?limit=2&continue={token}&resourceVersion=1"))
        .await;
    assert_status(&r, 400, "BadRequest");
    c.configmap("default", "cm5", json!({})).await;
    sim.compact();
    let r = c.get(&format!("{CMS}?limit=2&continue={token}")).await;
    assert_status(&r, 410, "Expired");
    assert!(r.body["message"].as_str().unwrap().starts_with(
        "The provided continue parameter is too old to display a consistent list result."
    ));
    let fresh = r.body["metadata"]["continue"]
        .as_str()
        .expect("fresh token")
        .to_owned();
    // The fresh token continues at the latest state (inconsistently, as documented).
    let r = c.get(&format!("{CMS}?limit=10&continue={fresh}")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(names(&r.body), vec!["cm2", "cm3", "cm5"]);
}

#[tokio::test]
async fn label_and_field_selectors() {
    let (_sim, c) = sim().await;
    c.configmap("default", "a", json!({"app": "web", "tier": "front"}))
        .await;
    c.configmap("default", "b", json!({"app": "web"})).await;
    c.configmap("default", "c", json!({"app": "db"})).await;
    c.configmap("kube-system", "d", json!({"app": "web"})).await;
    let q = |s: &str| {
        s.replace(' ', "%20")
            .replace('=', "%3D")
            .replace(',', "%2C")
            .replace('!', "%21")
    };
    let r = c
        .get(&format!("{CMS}?labelSelector={}", q("app=web,!tier")))
        .await;
    assert_eq!(names(&r.body), vec!["b"]);
    let r = c
        .get(&format!("{CMS}?labelSelector={}", q("app in (web,db)")))
        .await;
    assert_eq!(names(&r.body), vec!["a", "b", "c"]);
    let r = c
        .get(&format!(
            "/api/v1/configmaps?fieldSelector={}",
            q("metadata.namespace!=default")
        ))
        .await;
    assert_eq!(names(&r.body), vec!["d"]);
    let r = c
        .get(&format!("{CMS}?fieldSelector={}", q("metadata.name=c")))
        .await;
    assert_eq!(names(&r.body), vec!["c"]);
    // Pages with a selector skip non-matching objects and have no remainingItemCount.
    let r = c
        .get(&format!("{CMS}?limit=1&labelSelector={}", q("app=web")))
        .await;
    assert_eq!(names(&r.body), vec!["a"]);
    assert!(r.body["metadata"].get("remainingItemCount").is_none());
    assert!(r.body["metadata"]["continue"].is_string());

    let r = c
        .get(&format!("{CMS}?fieldSelector={}", q("spec.nodeName=n1")))
        .await;
    assert_status(&r, 400, "BadRequest");
    // ConfigMaps have no field label conversion of their own (observed on kube-apiserver
    // 1.36.2).
    assert_eq!(
        r.body["message"],
        r#""spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace""#
    );
    let r = c
        .get(&format!("{CMS}?labelSelector={}", q("app in (web")))
        .await;
    assert_status(&r, 400, "BadRequest");

    let pods = "/api/v1/namespaces/default/pods";
    for (n, node) in [("p1", "n1"), ("p2", "n2")] {
        let r = c.post(pods, json!({"metadata": {"name": n}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "i"}]}})).await;
        assert_eq!(r.status, 201);
        assert_eq!(r.body["status"]["phase"], "Pending");
    }
    let r = c
        .get(&format!("{pods}?fieldSelector={}", q("spec.nodeName=n2")))
        .await;
    assert_eq!(names(&r.body), vec!["p2"]);
}
