//! Custom resource schemas: pruning, defaulting and validation, with the answers
//! kube-apiserver 1.36.2 gave to the same CRD and bodies.

use serde_json::{Value, json};

use crate::support::*;

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const THINGS: &str = "/apis/ex.com/v1/namespaces/default/things";

fn thing_crd() -> Value {
    let spec = json!({"type": "object", "required": ["name"], "properties": {
        "size": {"type": "integer", "minimum": 1, "maximum": 10, "default": 3},
        "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
        "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"},
            "x-kubernetes-list-type": "set"},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "nested": {"type": "object", "default": {},
            "properties": {"x": {"type": "integer", "default": 7}}}}});
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.ex.com"},
        "spec": {"group": "ex.com", "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "required": ["spec"],
                    "properties": {"spec": spec,
                        "status": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}}}}]}})
}

fn thing(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "ex.com/v1", "kind": "Thing", "metadata": {"name": name}, "spec": spec})
}

async fn with_things() -> (clientgo_apiserver_sim::ApiServerSim, Client) {
    let (sim, c) = sim().await;
    let r = c.post(CRDS, thing_crd()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    // Observed on kube-apiserver 1.36.2: names and conversion defaulted.
    assert_eq!(r.body["spec"]["names"]["singular"], "thing");
    assert_eq!(r.body["spec"]["names"]["listKind"], "ThingList");
    assert_eq!(r.body["spec"]["conversion"], json!({"strategy": "None"}));
    (sim, c)
}

#[tokio::test]
async fn unknown_fields_are_pruned_and_defaults_applied() {
    let (_sim, c) = with_things().await;
    let mut body = thing(
        "t1",
        json!({"name": "ab", "extra": 1, "free": {"u": 1}, "nested": {"y": 2}}),
    );
    body["extra2"] = json!("x");
    let r = c.post(THINGS, body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    // Observed on kube-apiserver 1.36.2.
    assert_eq!(
        r.body["spec"],
        json!({"free": {"u": 1}, "mode": "a", "name": "ab", "nested": {"x": 7}, "size": 3})
    );
    assert!(r.body.get("extra2").is_none());

    // A merge patch is pruned and defaulted too; nulls of non-nullable fields take the
    // default.
    let r = c
        .patch(
            &format!("{THINGS}/t1"),
            "application/merge-patch+json",
            json!({"spec": {"size": 2.0, "zzz": 1, "nested": {"x": null}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["spec"],
        json!({"free": {"u": 1}, "mode": "a", "name": "ab", "nested": {"x": 7}, "size": 2})
    );
}

#[tokio::test]
async fn violations_answer_422_with_one_cause_per_field() {
    let (_sim, c) = with_things().await;
    let r = c
        .post(THINGS, thing("t2", json!({"size": 0, "name": "a"})))
        .await;
    assert_status(&r, 422, "Invalid");
    // Observed on kube-apiserver 1.36.2 (which orders the causes as Go's map iteration
    // happens to go).
    let mut causes = r.body["details"]["causes"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    causes.sort_by_key(|c| c["field"].as_str().unwrap_or_default().to_owned());
    assert_eq!(
        causes,
        vec![
            json!({"reason": "FieldValueInvalid", "field": "spec.name",
                "message": "Invalid value: \"a\": spec.name in body should be at least 2 chars long"}),
            json!({"reason": "FieldValueInvalid", "field": "spec.size",
                "message": "Invalid value: 0: spec.size in body should be greater than or equal to 1"}),
        ]
    );
    assert_eq!(r.body["details"]["kind"], "Thing", "{}", r.body["details"]);
    assert_eq!(r.body["details"]["group"], "ex.com");

    let r = c
        .post(THINGS, thing("t3", json!({"size": "big", "name": "ab"})))
        .await;
    assert_eq!(
        r.body["message"],
        "Thing.ex.com \"t3\" is invalid: spec.size: Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
    );
    let r = c
        .post(
            THINGS,
            thing("t4", json!({"name": "ab", "tags": ["x", "x"]})),
        )
        .await;
    assert_eq!(
        r.body["message"],
        "Thing.ex.com \"t4\" is invalid: spec.tags[1]: Duplicate value: \"x\""
    );
    let r = c
        .post(
            THINGS,
            json!({"apiVersion": "ex.com/v1", "kind": "Thing", "metadata": {"name": "t5"}}),
        )
        .await;
    assert_eq!(
        r.body["message"],
        "Thing.ex.com \"t5\" is invalid: spec: Required value"
    );

    // Updates are validated too; a main-resource write's status is not (it is ignored).
    assert_eq!(
        c.post(THINGS, thing("t6", json!({"name": "ab"})))
            .await
            .status,
        201
    );
    let r = c
        .patch(
            &format!("{THINGS}/t6"),
            "application/merge-patch+json",
            json!({"spec": {"mode": "c"}, "status": {"ok": "no"}}),
        )
        .await;
    assert_eq!(
        r.body["message"],
        "Thing.ex.com \"t6\" is invalid: spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\""
    );
    // A status write is validated against the status schema (observed on 1.36.2: the
    // message names the field below `status`), and pruned.
    let r = c
        .patch(
            &format!("{THINGS}/t6/status"),
            "application/merge-patch+json",
            json!({"status": {"ok": "no"}}),
        )
        .await;
    assert_eq!(
        r.body["message"],
        "Thing.ex.com \"t6\" is invalid: status.ok: Invalid value: \"string\": ok in body must be of type boolean: \"string\""
    );
    let r = c
        .patch(
            &format!("{THINGS}/t6/status"),
            "application/merge-patch+json",
            json!({"status": {"ok": true, "q": 1}}),
        )
        .await;
    assert_eq!(r.body["status"], json!({"ok": true}), "{}", r.body);
    let r = c
        .patch(
            &format!("{THINGS}/t6"),
            "application/merge-patch+json",
            json!({"spec": {"name": "abcdefg"}}),
        )
        .await;
    assert_eq!(
        r.body["details"]["causes"],
        json!([{"reason": "FieldValueTooLong", "field": "spec.name",
            "message": "Too long: may not be more than 5 bytes"}])
    );
}

#[tokio::test]
async fn a_body_of_another_kind() {
    let (_sim, c) = with_things().await;
    let mut body = thing("t7", json!({"name": "ab"}));
    body["kind"] = json!("Other");
    let r = c.post(THINGS, body).await;
    // Observed on kube-apiserver 1.36.2.
    assert_eq!(
        r.body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": "Other.ex.com \"t7\" is invalid: kind: Invalid value: \"Other\": must be Thing",
            "reason": "Invalid", "details": {"name": "t7", "group": "ex.com", "kind": "Other",
                "causes": [{"reason": "FieldValueInvalid",
                    "message": "Invalid value: \"Other\": must be Thing", "field": "kind"}]},
            "code": 422})
    );
    // Built-ins answer the decoder's 400.
    let r = c
        .post(
            "/api/v1/namespaces/default/configmaps",
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}),
        )
        .await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.body["message"],
        "Pod in version \"v1\" cannot be handled as a ConfigMap: converting (v1.Pod) to (core.ConfigMap): unknown conversion"
    );
    let r = c
        .post(
            "/apis/apps/v1/namespaces/default/deployments",
            json!({"apiVersion": "apps/v1", "kind": "Foo", "metadata": {"name": "x"}}),
        )
        .await;
    assert_eq!(
        r.body["message"],
        "Foo in version \"v1\" cannot be handled as a Deployment: no kind \"Foo\" is registered for version \"apps/v1\" in scheme \"pkg/api/legacyscheme/scheme.go:30\""
    );
}

#[tokio::test]
async fn protected_groups_need_api_approval() {
    let (_sim, c) = sim().await;
    let crd = |group: &str, approval: Option<&str>| {
        let mut crd = json!({"apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition", "metadata": {"name": format!("ws.{group}")},
            "spec": {"group": group, "scope": "Namespaced", "names": {"plural": "ws", "kind": "W"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
        if let Some(a) = approval {
            crd["metadata"]["annotations"] = json!({"api-approved.kubernetes.io": a});
        }
        crd
    };
    // Observed on kube-apiserver 1.36.2.
    for group in ["k8s.io", "x.k8s.io", "foo.kubernetes.io"] {
        let r = c.post(CRDS, crd(group, None)).await;
        assert_status(&r, 422, "Invalid");
        assert_eq!(
            r.body["message"],
            format!(
                "CustomResourceDefinition.apiextensions.k8s.io \"ws.{group}\" is invalid: metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
            )
        );
    }
    let r = c.post(CRDS, crd("x.k8s.io", Some("yes"))).await;
    assert_eq!(
        r.body["details"]["causes"][0]["message"],
        "Invalid value: \"yes\": protected groups must have approval annotation \"api-approved.kubernetes.io\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
    );
    let r = c
        .post(CRDS, crd("x.k8s.io", Some("unapproved, testing")))
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let url = "https://github.com/kubernetes/enhancements/pull/1111";
    let r = c.post(CRDS, crd("y.kubernetes.io", Some(url))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let r = c.post(CRDS, crd("k8s.example.com", None)).await;
    assert_eq!(r.status, 201, "{}", r.body);
}
