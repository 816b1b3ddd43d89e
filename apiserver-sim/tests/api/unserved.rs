//! Paths nothing serves, answered as kube-apiserver 1.36.2 answers them (observed with the
//! differential check): under a built-in group, a JSON 404 `NotFound` Status ("the server
//! could not find the requested resource"); anywhere else (an unknown group, a custom
//! resource before its CRD exists or after it is gone, a path outside `/api` and `/apis`),
//! Go's `http.NotFound`: 404, `text/plain; charset=utf-8`, `404 page not found`.

use serde_json::json;

use crate::support::{Resp, assert_status, eventually, gadgets_crd, sim};

/// Go's `http.NotFound` answer.
pub fn assert_page_not_found(r: &Resp) {
    assert_eq!(r.status.as_u16(), 404);
    assert_eq!(
        r.headers
            .get("content-type")
            .map(|v| v.to_str().unwrap_or("")),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(&r.raw[..], b"404 page not found\n");
}

#[tokio::test]
async fn unknown_groups_and_paths_fall_through_to_page_not_found() {
    let (_sim, c) = sim().await;
    for path in [
        "/apis/nope.example.com",
        "/apis/nope.example.com/v1",
        "/apis/nope.example.com/v1/things",
        "/apis/nope.example.com/v1/namespaces/default/things/t",
        "/nope",
    ] {
        assert_page_not_found(&c.get(path).await);
    }
    let thing =
        json!({"apiVersion": "nope.example.com/v1", "kind": "Thing", "metadata": {"name": "t"}});
    assert_page_not_found(
        &c.post("/apis/nope.example.com/v1/namespaces/default/things", thing)
            .await,
    );
    // Built-in groups answer with a Status.
    for path in [
        "/apis/apps/v9/namespaces/default/deployments",
        "/api/v1/namespaces/default/nothings",
        "/apis/apps/v1/nothings",
    ] {
        let r = c.get(path).await;
        assert_status(&r, 404, "NotFound");
        assert_eq!(
            r.body["message"], "the server could not find the requested resource",
            "{path}"
        );
    }
}

#[tokio::test]
async fn custom_resources_are_unserved_before_their_crd_and_after_it() {
    let (_sim, c) = sim().await;
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    assert_page_not_found(&c.get(gadgets).await);
    let crd = gadgets_crd();
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(c.post(crds, crd).await.status, 201);
    assert_eq!(c.get(gadgets).await.status, 200);
    // A version or a resource the group's CRDs do not serve.
    assert_page_not_found(
        &c.get("/apis/example.com/v2/namespaces/default/gadgets")
            .await,
    );
    assert_page_not_found(
        &c.get("/apis/example.com/v1/namespaces/default/others")
            .await,
    );
    assert_eq!(
        c.delete(&format!("{crds}/gadgets.example.com"))
            .await
            .status,
        200
    );
    eventually("the CRD gone", || async {
        c.get(&format!("{crds}/gadgets.example.com")).await.status == 404
    })
    .await;
    assert_page_not_found(&c.get(gadgets).await);
    assert_page_not_found(&c.get("/apis/example.com/v1").await);
}
