//! Discovery, Table output and the CRD lifecycle.

use serde_json::json;

use crate::support::*;

const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

pub fn widget_crd(status: bool) -> serde_json::Value {
    let mut version = json!({"name": "v1", "served": true, "storage": true,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}});
    if status {
        version["subresources"] = json!({"status": {}});
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
            "versions": [version]}})
}

#[tokio::test]
async fn discovery_documents() {
    let (_sim, c) = sim().await;
    let r = c.get("/version").await;
    assert_eq!(
        (r.body["major"].as_str(), r.body["minor"].as_str()),
        (Some("1"), Some("32"))
    );
    let r = c.get("/api").await;
    assert_eq!(r.body["kind"], "APIVersions");
    assert_eq!(r.body["versions"], json!(["v1"]));
    let r = c.get("/apis").await;
    assert_eq!(r.body["kind"], "APIGroupList");
    let groups: Vec<&str> = r.body["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        groups,
        vec![
            "apiextensions.k8s.io",
            "apps",
            "coordination.k8s.io",
            "events.k8s.io"
        ]
    );
    let r = c.get("/api/v1").await;
    assert_eq!(r.body["kind"], "APIResourceList");
    let cm = r.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "configmaps")
        .unwrap()
        .clone();
    assert_eq!(cm["kind"], "ConfigMap");
    assert_eq!(cm["namespaced"], true);
    assert_eq!(cm["shortNames"], json!(["cm"]));
    let r = c.get("/apis/apps/v1").await;
    assert!(
        r.body["resources"]
            .as_array()
            .unwrap()
            .iter()
            .any(|x| x["name"] == "deployments/status")
    );
    let r = c.get("/apis/apps").await;
    assert_eq!(r.body["kind"], "APIGroup");

    // The entries as kube-apiserver 1.36.2 writes them (the differential steps
    // `discovery/*`): categories, storageVersionHash, verbs; no apiVersion on the core list.
    let core = c.get("/api/v1").await.body;
    assert!(core.get("apiVersion").is_none());
    let entry = |list: &serde_json::Value, name: &str| {
        list["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["name"] == name)
            .unwrap()
            .clone()
    };
    let ns = entry(&core, "namespaces");
    assert_eq!(ns["storageVersionHash"], "Q3oi5N2YM8M=");
    assert!(ns.get("categories").is_none());
    assert_eq!(
        ns["verbs"],
        json!([
            "create", "delete", "get", "list", "patch", "update", "watch"
        ])
    );
    assert_status(
        &c.call(http::Method::DELETE, "/api/v1/namespaces", None)
            .await,
        405,
        "MethodNotAllowed",
    );
    let apps = c.get("/apis/apps/v1").await.body;
    assert_eq!(apps["apiVersion"], "v1");
    let deployments = entry(&apps, "deployments");
    assert_eq!(deployments["categories"], json!(["all"]));
    assert_eq!(deployments["storageVersionHash"], "8aSe+NMegvE=");
    let events = c.get("/apis/events.k8s.io/v1").await.body;
    assert_eq!(
        entry(&events, "events")["storageVersionHash"],
        entry(&core, "events")["storageVersionHash"],
        "stored as core v1 Events"
    );
    let version = c.get("/version").await.body;
    assert_eq!(version["emulationMinor"], version["minor"]);
    assert!(version["minCompatibilityMinor"].is_string());

    for p in ["/healthz", "/readyz", "/livez"] {
        let r = c.get(p).await;
        assert_eq!((r.status.as_u16(), &r.raw[..]), (200, &b"ok"[..]));
    }
    crate::unserved::assert_page_not_found(&c.get("/apis/example.com/v1").await);
}

#[tokio::test]
async fn table_output_for_kubectl() {
    let (_sim, c) = sim().await;
    c.configmap("default", "t1", json!({})).await;
    let r = c
        .send(
            http::Method::GET,
            "/api/v1/namespaces/default/configmaps",
            None,
            "",
            Some(TABLE),
        )
        .await
        .read()
        .await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["kind"], "Table");
    assert_eq!(r.body["apiVersion"], "meta.k8s.io/v1");
    let cols: Vec<&str> = r.body["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    // The ConfigMap printer's columns, as kube-apiserver 1.36.2 answers them.
    assert_eq!(cols, vec!["Name", "Data", "Age"]);
    assert_eq!(r.body["rows"][0]["cells"][0], "t1");
    assert_eq!(r.body["rows"][0]["cells"][1], 1);
    assert!(
        r.body["rows"][0]["cells"][2]
            .as_str()
            .unwrap()
            .ends_with('s')
    );
    assert_eq!(r.body["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    let r = c
        .send(
            http::Method::GET,
            "/api/v1/namespaces/default/configmaps/t1",
            None,
            "",
            Some(TABLE),
        )
        .await
        .read()
        .await;
    assert_eq!(r.body["rows"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn crd_lifecycle_serves_and_unserves_its_resource() {
    let (_sim, c) = sim().await;
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    let mut bad = widget_crd(true);
    bad["metadata"]["name"] = json!("wrong.example.com");
    let r = c.post(crds, bad).await;
    assert_status(&r, 422, "Invalid");

    let r = c.post(crds, widget_crd(true)).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = c.get(&format!("{crds}/widgets.example.com")).await;
    let conditions = r.body["status"]["conditions"].as_array().unwrap();
    assert!(
        conditions
            .iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    );

    let r = c.get("/apis/example.com/v1").await;
    assert_eq!(r.status, 200);
    let names: Vec<&str> = r.body["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["widgets", "widgets/status"]);
    let widgets = &r.body["resources"][0];
    assert_eq!(
        widgets["verbs"],
        json!([
            "delete",
            "deletecollection",
            "get",
            "list",
            "patch",
            "create",
            "update",
            "watch"
        ])
    );
    assert!(
        widgets.get("categories").is_none(),
        "a CRD without categories"
    );
    assert_eq!(
        widgets["storageVersionHash"],
        clientgo_apiserver_sim::resources::storage_version_hash("example.com", "v1", "Widget")
    );
    assert!(
        c.get("/apis").await.body["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g["name"] == "example.com")
    );

    let ws = "/apis/example.com/v1/namespaces/default/widgets";
    let r = c.post(ws, json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}, "status": {"ok": true}})).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 1);
    assert!(r.body.get("status").is_none());
    let r = c
        .patch(
            &format!("{ws}/w/status"),
            "application/merge-patch+json",
            json!({"status": {"ok": true}}),
        )
        .await;
    assert_eq!(r.body["status"]["ok"], true);
    assert_eq!(r.body["metadata"]["generation"], 1);
    let r = c
        .patch(
            &format!("{ws}/w"),
            "application/strategic-merge-patch+json",
            json!({"spec": {"size": 2}}),
        )
        .await;
    assert_status(&r, 415, "UnsupportedMediaType");
    let r = c
        .patch(
            &format!("{ws}/w"),
            "application/merge-patch+json",
            json!({"spec": {"size": 2}}),
        )
        .await;
    assert_eq!(r.body["metadata"]["generation"], 2);
    let r = c.get("/apis/example.com/v1/widgets").await;
    assert_eq!(r.body["kind"], "WidgetList");

    let mut watch = c
        .watch(&format!("{ws}?watch=1&resourceVersion={}", rv(&r.body)))
        .await;
    let r = c.delete(&format!("{crds}/widgets.example.com")).await;
    assert_eq!(r.status, 200);
    let (t, o) = watch.event().await;
    assert_eq!(
        (t.as_str(), name(&o)),
        ("DELETED", "w"),
        "objects go with their CRD"
    );
    // The CRD goes once its custom resources are gone, asynchronously.
    eventually("the CRD gone", || async {
        c.get(&format!("{crds}/widgets.example.com")).await.status == 404
    })
    .await;
    crate::unserved::assert_page_not_found(&c.get(ws).await);
    crate::unserved::assert_page_not_found(&c.get("/apis/example.com/v1").await);
}
