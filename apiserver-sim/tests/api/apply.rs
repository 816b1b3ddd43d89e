//! managedFields and server-side apply ownership, dryRun, YAML bodies and YAML answers.
//! The expected answers were observed on kube-apiserver 1.36.2 (envtest) with the same
//! requests (times and uids aside).

use http::Method;
use serde_json::{Value, json};

use crate::support::{assert_status, sim};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const MERGE: &str = "application/merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// The entries of `obj`'s managedFields without their times, and which had a time, by
/// operation then manager (the server sorts by time in between: these writes share their
/// second).
fn entries(obj: &Value) -> Vec<Value> {
    let mut out: Vec<Value> = obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut e| {
            let had_time = e.as_object_mut().unwrap().remove("time").is_some();
            e["timed"] = json!(had_time);
            e
        })
        .collect();
    out.sort_by_key(|e| (e["operation"].to_string(), e["manager"].to_string()));
    out
}

fn entry(manager: &str, operation: &str, fields: Value, timed: bool) -> Value {
    json!({"manager": manager, "operation": operation, "apiVersion": "v1",
        "fieldsType": "FieldsV1", "fieldsV1": fields, "timed": timed})
}

fn c1(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1",
        "labels": {"a": "b"}, "finalizers": ["x/y"], "annotations": {"z": "1"}},
        "data": data, "binaryData": {"b": "AAAA"}})
}

#[tokio::test]
async fn writes_record_managed_fields_and_apply_answers_conflicts() {
    let (_sim, c) = sim().await;
    // A create without fieldManager or User-Agent: manager "unknown".
    let r = c.post(CMS, c1(json!({"k": "v"}))).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let creator = json!({"f:binaryData": {".": {}, "f:b": {}}, "f:data": {".": {}, "f:k": {}},
        "f:metadata": {"f:annotations": {".": {}, "f:z": {}},
            "f:finalizers": {".": {}, "v:\"x/y\"": {}}, "f:labels": {".": {}, "f:a": {}}}});
    assert_eq!(
        entries(&r.body),
        [entry("unknown", "Update", creator, true)]
    );

    // An update by bob takes the field it changes and owns the one it adds; the creator
    // keeps `data` itself.
    let path = format!("{CMS}/c1");
    let r = c
        .put(
            &format!("{path}?fieldManager=bob"),
            c1(json!({"k": "v2", "n": "1"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let creator = json!({"f:binaryData": {".": {}, "f:b": {}}, "f:data": {},
        "f:metadata": {"f:annotations": {".": {}, "f:z": {}},
            "f:finalizers": {".": {}, "v:\"x/y\"": {}}, "f:labels": {".": {}, "f:a": {}}}});
    let bob = entry(
        "bob",
        "Update",
        json!({"f:data": {"f:k": {}, "f:n": {}}}),
        true,
    );
    assert_eq!(
        entries(&r.body),
        [bob.clone(), entry("unknown", "Update", creator, true)]
    );

    // A patch that only removes a label: carol owns nothing, the creator loses the labels.
    let r = c
        .patch(
            &format!("{path}?fieldManager=carol"),
            MERGE,
            json!({"metadata": {"labels": {"a": null}}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let creator = json!({"f:binaryData": {".": {}, "f:b": {}}, "f:data": {},
        "f:metadata": {"f:annotations": {".": {}, "f:z": {}},
            "f:finalizers": {".": {}, "v:\"x/y\"": {}}}});
    assert_eq!(
        entries(&r.body),
        [
            bob.clone(),
            entry("unknown", "Update", creator.clone(), true)
        ]
    );

    // Applying the value a field already has shares it, without a conflict; nothing
    // changed, so dave's entry has no time.
    let cfg = |data: Value, meta: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data});
    let r = c
        .patch(
            &format!("{path}?fieldManager=dave"),
            APPLY,
            cfg(json!({"k": "v2"}), json!({"name": "c1"})),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let dave = entry("dave", "Apply", json!({"f:data": {"f:k": {}}}), false);
    assert_eq!(
        entries(&r.body),
        [dave, bob, entry("unknown", "Update", creator, true)]
    );

    // Changing fields three managers own: 409, one cause per field and owner.
    let eve = cfg(
        json!({"k": "v3", "n": "2"}),
        json!({"name": "c1", "annotations": {"z": "2"}}),
    );
    let r = c
        .patch(&format!("{path}?fieldManager=eve"), APPLY, eve.clone())
        .await;
    assert_status(&r, 409, "Conflict");
    assert_eq!(
        r.body["message"],
        "Apply failed with 4 conflicts: conflicts with \"bob\" using v1:\n- .data.k\n- .data.n\nconflicts with \"dave\":\n- .data.k\nconflicts with \"unknown\" using v1:\n- .metadata.annotations.z"
    );
    let mut causes: Vec<(String, String)> = r.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            assert_eq!(c["reason"], "FieldManagerConflict");
            (
                c["field"].as_str().unwrap().to_owned(),
                c["message"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    causes.sort();
    assert_eq!(
        causes,
        [
            (".data.k".into(), "conflict with \"bob\" using v1".into()),
            (".data.k".into(), "conflict with \"dave\"".into()),
            (".data.n".into(), "conflict with \"bob\" using v1".into()),
            (
                ".metadata.annotations.z".into(),
                "conflict with \"unknown\" using v1".into()
            ),
        ]
    );

    // force takes the fields over; managers left with nothing (bob, dave) disappear.
    let r = c
        .patch(&format!("{path}?fieldManager=eve&force=true"), APPLY, eve)
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let managers: Vec<&str> = r.body["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["manager"].as_str().unwrap())
        .collect();
    assert_eq!(managers, ["eve", "unknown"]);
    assert_eq!(
        r.body["metadata"]["managedFields"][0]["fieldsV1"],
        json!({"f:data": {"f:k": {}, "f:n": {}}, "f:metadata": {"f:annotations": {"f:z": {}}}})
    );
    assert_eq!(
        r.body["metadata"]["managedFields"][1]["fieldsV1"],
        json!({"f:binaryData": {".": {}, "f:b": {}}, "f:data": {},
            "f:metadata": {"f:annotations": {}, "f:finalizers": {".": {}, "v:\"x/y\"": {}}}})
    );

    let forced = r.body["metadata"]["managedFields"].clone();

    // force on a patch that is not an apply: 422.
    let r = c
        .patch(
            &format!("{path}?force=true"),
            MERGE,
            json!({"data": {"a": "2"}}),
        )
        .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch"
    );

    // Returned on get and list too.
    assert_eq!(c.get(&path).await.body["metadata"]["managedFields"], forced);
    let list = c.get(CMS).await;
    assert!(list.body["items"][0]["metadata"]["managedFields"].is_array());
}

#[tokio::test]
async fn apply_removes_what_a_manager_no_longer_applies() {
    let (_sim, c) = sim().await;
    let apply = |manager: &'static str, data: Value| {
        let c = &c;
        async move {
            let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "pruned"}, "data": data});
            let path = format!("{CMS}/pruned?fieldManager={manager}");
            let r = c.patch(&path, APPLY, cfg).await;
            assert!(r.status.is_success(), "{}", r.body);
            r.body["data"].clone()
        }
    };
    apply("a", json!({"x": "1", "y": "1"})).await;
    // b shares y.
    apply("b", json!({"y": "1"})).await;
    // a stops applying x and y: x goes, y stays (b owns it).
    assert_eq!(
        apply("a", json!({"z": "1"})).await,
        json!({"y": "1", "z": "1"})
    );
}

#[tokio::test]
async fn status_writes_are_entries_of_their_own() {
    let (_sim, c) = sim().await;
    let deps = "/apis/apps/v1/namespaces/default/deployments";
    let d = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"selector": {"matchLabels": {"app": "d"}},
            "template": {"metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}});
    let r = c.post(&format!("{deps}?fieldManager=ctl"), d).await;
    assert_eq!(r.status, 201, "{}", r.body);
    let fields = &r.body["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"];
    // Observed: the selector is atomic, containers are keyed by name.
    assert_eq!(fields["f:selector"], json!({}));
    assert_eq!(
        fields["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]["f:image"],
        json!({})
    );
    let r = c
        .patch(
            &format!("{deps}/d/status?fieldManager=ctl"),
            MERGE,
            json!({"status": {"replicas": 3}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    let status_entry = &r.body["metadata"]["managedFields"][1];
    assert_eq!(status_entry["manager"], "ctl");
    assert_eq!(status_entry["subresource"], "status");
    assert_eq!(status_entry["apiVersion"], "apps/v1");
    assert_eq!(
        status_entry["fieldsV1"],
        json!({"f:status": {"f:replicas": {}}})
    );
}

#[tokio::test]
async fn dry_run_changes_nothing() {
    let (_sim, c) = sim().await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"}, "data": {"a": "1"}});
    // Observed: a dry-run create answers 201 with uid and creationTimestamp, no
    // resourceVersion, and managedFields.
    let r = c.post(&format!("{CMS}?dryRun=All"), cm.clone()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.body["metadata"]["uid"].is_string());
    assert!(r.body["metadata"].get("resourceVersion").is_none());
    assert!(r.body["metadata"]["managedFields"].is_array());
    assert_status(&c.get(&format!("{CMS}/dry")).await, 404, "NotFound");

    let created = c.post(CMS, cm.clone()).await;
    let rv = created.body["metadata"]["resourceVersion"].clone();
    let path = format!("{CMS}/dry");
    let mut changed = cm.clone();
    changed["data"]["a"] = json!("9");
    // Observed: a dry-run update answers the new object with the current resourceVersion.
    let r = c.put(&format!("{path}?dryRun=All"), changed.clone()).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["data"]["a"], "9");
    assert_eq!(r.body["metadata"]["resourceVersion"], rv);
    let r = c
        .patch(&format!("{path}?dryRun=All&fieldManager=x"), APPLY, changed)
        .await;
    assert_status(&r, 409, "Conflict");
    let r = c.delete(&format!("{path}?dryRun=All")).await;
    assert_eq!(r.status, 200, "{}", r.body);
    let after = c.get(&path).await;
    assert_eq!(after.body["data"]["a"], "1");
    assert_eq!(after.body["metadata"]["resourceVersion"], rv);

    let r = c.post(&format!("{CMS}?dryRun=Foo"), cm).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Foo\"]: supported values: \"All\""
    );
    let r = c.delete(&format!("{path}?dryRun=Foo")).await;
    assert_eq!(
        r.body["message"],
        "DeleteOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: [\"Foo\"]: supported values: \"All\""
    );
}

async fn get_yaml(c: &crate::support::Client, path: &str) -> crate::support::Resp {
    c.send(Method::GET, path, None, "", Some("application/yaml"))
        .await
        .read()
        .await
}

#[tokio::test]
async fn yaml_apply_bodies_and_yaml_answers() {
    let (_sim, c) = sim().await;
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y\ndata:\n  a: \"6\"\n";
    let r = c
        .send(
            Method::PATCH,
            &format!("{CMS}/y?fieldManager=bob"),
            Some(yaml.as_bytes().to_vec()),
            APPLY,
            None,
        )
        .await
        .read()
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert_eq!(r.body["data"]["a"], "6");

    let r = get_yaml(&c, &format!("{CMS}/y")).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/yaml");
    let text = String::from_utf8_lossy(&r.raw);
    assert!(text.starts_with("apiVersion: v1\ndata:\n  a:"), "{text}");
    assert!(
        text.contains("  managedFields:\n  - apiVersion: v1\n"),
        "{text}"
    );
    let back: Value = serde_norway::from_slice(&r.raw).expect("YAML");
    assert_eq!(back["data"]["a"], "6");

    // Errors are YAML too; a watch cannot be (observed: 406).
    let r = get_yaml(&c, &format!("{CMS}/nope")).await;
    assert_eq!(r.status, 404);
    assert_eq!(r.headers["content-type"], "application/yaml");
    assert!(String::from_utf8_lossy(&r.raw).contains("reason: NotFound"));
    let r = get_yaml(&c, &format!("{CMS}?watch=1")).await;
    assert_eq!(r.status, 406);
    assert!(
        String::from_utf8_lossy(&r.raw).contains(
            "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
        )
    );
}
