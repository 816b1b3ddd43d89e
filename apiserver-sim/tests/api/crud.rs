//! create / get / update / delete rules.

use serde_json::json;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn create_get_update_with_optimistic_concurrency() {
    let (_sim, c) = sim().await;
    let cm = c.configmap("default", "a", json!({})).await;
    assert!(!cm["metadata"]["uid"].as_str().unwrap_or("").is_empty());
    assert!(
        cm["metadata"]["creationTimestamp"]
            .as_str()
            .is_some_and(|t| t.ends_with('Z'))
    );
    let first_rv = rv(&cm);

    let r = c.get(&format!("{CMS}/a")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body, cm);

    let r = c.post(CMS, json!({"metadata": {"name": "a"}})).await;
    assert_status(&r, 409, "AlreadyExists");
    assert_eq!(r.body["message"], "configmaps \"a\" already exists");
    assert_eq!(r.body["details"]["name"], "a");
    assert_eq!(r.body["details"]["kind"], "configmaps");

    let mut updated = cm.clone();
    updated["data"] = json!({"k": "v2"});
    let r = c.put(&format!("{CMS}/a"), updated.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(rv(&r.body) > first_rv);
    assert_eq!(r.body["metadata"]["uid"], cm["metadata"]["uid"]);

    // The same body again carries the now stale resourceVersion.
    let r = c.put(&format!("{CMS}/a"), updated.clone()).await;
    assert_status(&r, 409, "Conflict");
    assert_eq!(
        r.body["message"],
        "Operation cannot be fulfilled on configmaps \"a\": the object has been modified; please apply your changes to the latest version and try again"
    );

    // Without a resourceVersion the update is unconditional.
    updated["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("resourceVersion");
    updated["data"] = json!({"k": "v3"});
    let r = c.put(&format!("{CMS}/a"), updated).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["data"]["k"], "v3");

    let r = c
        .put(
            &format!("{CMS}/nope"),
            json!({"metadata": {"name": "nope"}}),
        )
        .await;
    assert_status(&r, 404, "NotFound");
    let r = c
        .put(&format!("{CMS}/a"), json!({"metadata": {"name": "b"}}))
        .await;
    assert_status(&r, 400, "BadRequest");
}

#[tokio::test]
async fn create_validation_errors() {
    let (_sim, c) = sim().await;
    let r = c.post(CMS, json!({"metadata": {"name": "Bad_Name"}})).await;
    assert_status(&r, 422, "Invalid");
    assert!(r.body["message"].as_str().unwrap().starts_with("ConfigMap \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 subdomain"));
    assert_eq!(r.body["details"]["causes"][0]["field"], "metadata.name");
    assert_eq!(
        r.body["details"]["causes"][0]["reason"],
        "FieldValueInvalid"
    );

    let r = c.post(CMS, json!({"metadata": {}})).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "ConfigMap \"\" is invalid: metadata.name: Required value: name or generateName is required"
    );

    let r = c
        .post("/api/v1/namespaces", json!({"metadata": {"name": "a.b"}}))
        .await;
    assert_status(&r, 422, "Invalid");

    let r = c
        .post(CMS, json!({"metadata": {"generateName": "gen-"}}))
        .await;
    assert_eq!(r.status, 201);
    let n = name(&r.body);
    assert!(n.starts_with("gen-") && n.len() == 9, "{n}");

    let r = c
        .post(
            "/api/v1/namespaces/nope/configmaps",
            json!({"metadata": {"name": "x"}}),
        )
        .await;
    assert_status(&r, 404, "NotFound");
    assert_eq!(r.body["message"], "namespaces \"nope\" not found");

    let r = c
        .post(
            CMS,
            json!({"metadata": {"name": "x", "namespace": "kube-system"}}),
        )
        .await;
    assert_status(&r, 400, "BadRequest");

    let r = c
        .post(
            CMS,
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
        )
        .await;
    assert_status(&r, 400, "BadRequest");

    let r = c
        .post(
            CMS,
            json!({"metadata": {"name": "x", "resourceVersion": "5"}}),
        )
        .await;
    // A plain registry error: no reason (observed on kube-apiserver 1.36.2).
    assert_eq!(r.status, 500);
    assert_eq!(r.body["reason"], serde_json::Value::Null);

    let r = c
        .post(
            CMS,
            json!({"metadata": {"name": "x", "labels": {"bad key!": "v"}}}),
        )
        .await;
    assert_status(&r, 422, "Invalid");

    let r = c
        .send(
            http::Method::POST,
            CMS,
            Some(b"{not json".to_vec()),
            "application/json",
            None,
        )
        .await
        .read()
        .await;
    assert_status(&r, 400, "BadRequest");
    let r = c
        .send(
            http::Method::POST,
            CMS,
            Some(b"[1,2]".to_vec()),
            "application/json",
            None,
        )
        .await
        .read()
        .await;
    assert_status(&r, 400, "BadRequest");
    let r = c
        .send(
            http::Method::POST,
            CMS,
            Some(b"\x0a\x0b".to_vec()),
            "application/vnd.kubernetes.protobuf",
            None,
        )
        .await
        .read()
        .await;
    assert_status(&r, 415, "UnsupportedMediaType");
    let r = c
        .post(CMS, json!({"metadata": {"name": "x", "labels": 3}}))
        .await;
    assert_status(&r, 400, "BadRequest");
}

#[tokio::test]
async fn routing_errors() {
    let (_sim, c) = sim().await;
    for path in [
        "/api/v1/widgets",
        "/api/v1/namespaces/default/namespaces",
        "/api/v1/pods/x",
        "/api/v1/namespaces/default/configmaps/x/scale",
    ] {
        let r = c.get(path).await;
        assert_status(&r, 404, "NotFound");
        assert_eq!(
            r.body["message"], "the server could not find the requested resource",
            "{path}"
        );
    }
    let r = c.call(http::Method::PUT, CMS, Some(json!({}))).await;
    assert_status(&r, 405, "MethodNotAllowed");
    let r = c.post(&format!("{CMS}/x"), json!({})).await;
    assert_status(&r, 405, "MethodNotAllowed");
    let r = c
        .send(
            http::Method::GET,
            CMS,
            None,
            "",
            Some("application/vnd.kubernetes.protobuf"),
        )
        .await
        .read()
        .await;
    assert_status(&r, 406, "NotAcceptable");
    let r = c.get(&format!("{CMS}?limit=abc")).await;
    assert_status(&r, 400, "BadRequest");
}

#[tokio::test]
async fn status_subresource_and_generation() {
    let (_sim, c) = sim().await;
    let deps = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "app", "image": "a:1"}]}}},
        "status": {"replicas": 5}});
    let r = c.post(deps, d).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 1);
    // Reset on create; kube-apiserver 1.36.2 answers the empty status Go's encoder writes.
    assert_eq!(r.body["status"], json!({}), "status is reset on create");

    let mut obj = r.body.clone();
    obj["spec"]["replicas"] = json!(3);
    obj["status"] = json!({"replicas": 9});
    let r = c.put(&format!("{deps}/web"), obj).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["metadata"]["generation"], 2);
    assert_eq!(
        r.body["status"],
        json!({}),
        "main resource writes ignore status"
    );

    let mut obj = r.body.clone();
    obj["status"] = json!({"replicas": 3});
    obj["spec"]["replicas"] = json!(7);
    let r = c.put(&format!("{deps}/web/status"), obj).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["status"]["replicas"], 3);
    assert_eq!(r.body["spec"]["replicas"], 3, "status writes ignore spec");
    assert_eq!(r.body["metadata"]["generation"], 2);

    let mut obj = r.body.clone();
    obj["metadata"]["labels"] = json!({"a": "b"});
    let r = c.put(&format!("{deps}/web"), obj).await;
    assert_eq!(
        r.body["metadata"]["generation"], 2,
        "metadata changes keep the generation"
    );
    assert_eq!(r.body["metadata"]["labels"]["a"], "b");

    let r = c.get(&format!("{deps}/web/status")).await;
    assert_eq!(r.status, 200);
    let r = c.put(&format!("{CMS}/x/status"), json!({})).await;
    assert_status(&r, 404, "NotFound");
}

#[tokio::test]
async fn finalizers_delay_deletion() {
    let (_sim, c) = sim().await;
    let r = c
        .post(
            CMS,
            json!({"metadata": {"name": "f", "finalizers": ["example.com/keep"]}}),
        )
        .await;
    assert_eq!(r.status, 201);
    let r = c.delete(&format!("{CMS}/f")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["kind"], "ConfigMap");
    assert!(r.body["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(r.body["metadata"]["deletionGracePeriodSeconds"], 0);
    let r = c.get(&format!("{CMS}/f")).await;
    assert_eq!(r.status, 200, "kept while finalizers remain");

    let mut obj = r.body.clone();
    obj["metadata"]["finalizers"] = json!(["example.com/keep", "example.com/new"]);
    let r = c.put(&format!("{CMS}/f"), obj.clone()).await;
    assert_status(&r, 422, "Invalid");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .contains("no new finalizers can be added if the object is being deleted")
    );

    obj["metadata"]["finalizers"] = json!([]);
    let r = c.put(&format!("{CMS}/f"), obj).await;
    assert_eq!(r.status, 200);
    let r = c.get(&format!("{CMS}/f")).await;
    assert_status(&r, 404, "NotFound");

    c.configmap("default", "p", json!({})).await;
    let r = c
        .call(
            http::Method::DELETE,
            &format!("{CMS}/p"),
            Some(json!({"preconditions": {"uid": "other"}})),
        )
        .await;
    // Observed on kube-apiserver 1.36.2: the registry checks preconditions before deleting,
    // naming the kind (`rest.BeforeDelete`).
    assert_status(&r, 409, "Conflict");
    assert_eq!(r.body["details"]["name"], "p");
    assert_eq!(r.body["details"]["kind"], "ConfigMap");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .starts_with("Operation cannot be fulfilled on ConfigMap \"p\": the UID in the precondition (other) does not match the UID in record ("),
        "{}",
        r.body
    );
    let r = c
        .call(
            http::Method::DELETE,
            &format!("{CMS}/p"),
            Some(json!({"preconditions": {"resourceVersion": "1"}})),
        )
        .await;
    assert_status(&r, 409, "Conflict");
    assert!(
        r.body["message"]
            .as_str()
            .unwrap()
            .ends_with(". The object might have been modified"),
        "{}",
        r.body
    );
    let r = c
        .call(
            http::Method::DELETE,
            &format!("{CMS}/p"),
            Some(json!({"propagationPolicy": "Sideways"})),
        )
        .await;
    assert_status(&r, 422, "Invalid");
    let r = c.delete(&format!("{CMS}/p")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["status"], "Success");
    assert_eq!(r.body["details"]["name"], "p");
    let r = c.delete(&format!("{CMS}/p")).await;
    assert_status(&r, 404, "NotFound");
}

#[tokio::test]
async fn delete_collection_honours_selectors() {
    let (_sim, c) = sim().await;
    c.configmap("default", "a1", json!({"app": "a"})).await;
    c.configmap("default", "a2", json!({"app": "a"})).await;
    c.configmap("default", "b1", json!({"app": "b"})).await;
    let r = c.delete(&format!("{CMS}?labelSelector=app%3Da")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["kind"], "ConfigMapList");
    assert_eq!(r.body["items"].as_array().unwrap().len(), 2);
    let r = c.get(CMS).await;
    let names: Vec<&str> = r.body["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(name)
        .collect();
    assert_eq!(names, vec!["b1"]);
}

async fn raw(c: &Client, method: http::Method, path: &str, content_type: &str, body: &str) -> Resp {
    let body = Some(body.as_bytes().to_vec());
    c.send(method, path, body, content_type, None)
        .await
        .read()
        .await
}

/// Bodies that do not decode and body types not served, with the answers kube-apiserver
/// 1.36.2 gave (the differential steps `create/malformed-json`, `update/unsupported-type`,
/// `delete/unsupported-type`, `create/yaml`).
#[tokio::test]
async fn bodies_are_decoded_and_refused_as_kube_apiserver_does() {
    let (_sim, c) = sim().await;
    let r = raw(
        &c,
        http::Method::POST,
        CMS,
        "application/json",
        r#"{"metadata": {"name": "a"},}"#,
    )
    .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        r.body["message"],
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: invalid character '}' looking for beginning of object key string ({\"metadata\": {\"name\": \"a\"},})"
    );
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: b\n";
    let r = raw(&c, http::Method::POST, CMS, "application/yaml", yaml).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"], json!({"a": "b"}));
    let types = "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf";
    let bad_json = "couldn't get version/kind; json parse error: invalid character 'x' looking for beginning of object key string";
    for (method, content_type, body, answer) in [
        (http::Method::PUT, "text/plain", "data", (415, types)),
        (http::Method::DELETE, "text/plain", "data", (415, types)),
        (
            http::Method::DELETE,
            "application/json",
            "{x",
            (400, bad_json),
        ),
    ] {
        let r = raw(&c, method.clone(), &format!("{CMS}/y"), content_type, body).await;
        assert_eq!(
            (r.status.as_u16(), r.body["message"].as_str()),
            (answer.0, Some(answer.1)),
            "{method} with {content_type}"
        );
    }
    assert_eq!(c.get(&format!("{CMS}/y")).await.status, 200, "still there");
}
