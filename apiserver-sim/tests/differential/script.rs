//! The script: every step sent to both servers, in order. `{ns}` is the test's namespace,
//! `{pages}` a second one for lists and watches, `{group}` the custom resources' API group;
//! other placeholders are values saved from the same server's earlier answers. This module
//! holds the writes (create, update, patch, apply, delete); `script_lists` the lists and
//! watches, `script_watches` watches compared with their whole events, `script_discovery`
//! the discovery documents, `script_deletes` the deletes, `script_crds` unknown paths and
//! custom resources, `script_tables` Tables and other `Accept` headers,
//! `script_errors_wording` the wording of refused finalizers, creates and DeleteOptions,
//! `script_patches` strategic merge directives, JSON patch failures and unknown fields,
//! `script_crd_status` the status of new CRDs.
//!
//! Steps are claimed unless marked `known_difference`, or unless a field is marked `known`:
//! the reasons below are the known differences, the README's "Known differences from
//! kube-apiserver 1.36" table lists them as this check prints them.

use http::Method;
use serde_json::{Value, json};

use super::step::{Pick, Step};
mod script_crd_schema;

pub const OTHER_RESOURCES: &str = "other built-in resources (StatefulSets, ...) are not served";

pub const CM: &str = "/api/v1/namespaces/{ns}/configmaps";
pub const APPLY: &str = "application/apply-patch+yaml";
pub const MERGE: &str = "application/merge-patch+json";
pub const JSON_PATCH: &str = "application/json-patch+json";
pub const STRATEGIC: &str = "application/strategic-merge-patch+json";

/// Every step, in order.
pub fn steps() -> Vec<Step> {
    let mut s = Vec::new();
    s.extend(creates());
    s.extend(updates());
    s.extend(patches());
    s.extend(apply());
    s.extend(managed_fields());
    s.extend(super::script_patches::steps());
    s.extend(super::script_errors::errors());
    s.extend(super::script_lists::lists());
    s.extend(super::script_lists::watches());
    s.extend(super::script_watches::nulls());
    s.extend(super::script_watches::initial_events());
    s.extend(super::script_watches::bookmarks());
    s.extend(super::script_discovery::discovery());
    s.extend(super::script_deletes::deletes());
    s.extend(super::script_crds::unknown_paths());
    s.extend(super::script_crds::custom_resources());
    s.extend(super::script_crd_status::steps());
    s.extend(super::script_errors::compaction());
    s.extend(super::script_tables::steps());
    s.extend(super::script_errors_wording::steps());
    s.extend(script_crd_schema::steps());
    s
}

pub fn cm(name: &str, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data})
}

pub fn get(name: &'static str, behaviour: &'static str, path: &str) -> Step {
    Step::call(name, behaviour, Method::GET, path, None)
}

pub fn post(name: &'static str, behaviour: &'static str, path: &str, body: Value) -> Step {
    Step::call(name, behaviour, Method::POST, path, Some(body))
}

pub fn put(name: &'static str, behaviour: &'static str, path: &str, body: Value) -> Step {
    Step::call(name, behaviour, Method::PUT, path, Some(body))
}

pub fn delete(name: &'static str, behaviour: &'static str, path: &str) -> Step {
    Step::call(name, behaviour, Method::DELETE, path, None)
}

pub fn patch(
    name: &'static str,
    behaviour: &'static str,
    path: &str,
    content_type: &'static str,
    body: Value,
) -> Step {
    let body = body.to_string();
    Step::raw(name, behaviour, Method::PATCH, path, content_type, &body)
}

fn creates() -> Vec<Step> {
    let bad_rv = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "resourceVersion": "12"}});
    let other_ns = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "x", "namespace": "{pages}"}});
    vec![
        post(
            "namespace/create",
            "create: namespace Active with spec.finalizers",
            "/api/v1/namespaces",
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "{pages}"}}),
        ),
        get(
            "namespace/get-missing",
            "get: NotFound",
            "/api/v1/namespaces/{ns}-missing",
        ),
        post(
            "create/configmap",
            "create",
            CM,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cm-a", "labels": {"app": "diff"}}, "data": {"k": "v"}}),
        )
        .save("cm_a_rv1", "/metadata/resourceVersion"),
        post(
            "create/generate-name",
            "create: generateName",
            CM,
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"generateName": "gen-"}, "data": {"g": "1"}}),
        )
        .generated("gen", "gen-"),
        post(
            "create/already-exists",
            "create: AlreadyExists 409",
            CM,
            cm("cm-a", json!({})),
        ),
        post(
            "create/invalid-name",
            "create: DNS-1123 name validation, 422 Invalid with causes",
            CM,
            cm("Bad_Name", json!({})),
        ),
        post(
            "create/no-name",
            "create: missing name 422",
            CM,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
        ),
        post(
            "create/namespace-mismatch",
            "create: body/URL namespace mismatch 400",
            CM,
            other_ns,
        ),
        post(
            "create/missing-namespace",
            "create: namespace must exist 404",
            "/api/v1/namespaces/{ns}-missing/configmaps",
            cm("x", json!({})),
        ),
        post(
            "create/with-resource-version",
            "create: resourceVersion set 500",
            CM,
            bad_rv,
        ),
        Step::raw(
            "create/malformed-json",
            "create: malformed JSON 400, Go's syntax error and the body's start",
            Method::POST,
            CM,
            "application/json",
            "{not json",
        ),
        Step::raw(
            "create/truncated-json",
            "create: malformed JSON 400, Go's syntax error and the body's start",
            Method::POST,
            CM,
            "application/json",
            r#"{"apiVersion": "v1", "kind": "ConfigMap", "data": {"#,
        ),
        Step::raw(
            "create/not-an-object",
            "create: a body that is no object 400",
            Method::POST,
            CM,
            "application/json",
            "[1]",
        ),
        Step::raw(
            "create/unsupported-type",
            "create: other body types 415",
            Method::POST,
            CM,
            "text/plain",
            "data",
        ),
        Step::raw(
            "create/yaml",
            "create: a YAML body",
            Method::POST,
            CM,
            "application/yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n",
        ),
        get("get/configmap", "get", &format!("{CM}/cm-a")),
        get("get/missing", "get: NotFound", &format!("{CM}/missing")),
    ]
}

fn updates() -> Vec<Step> {
    let cm_a = &format!("{CM}/cm-a");
    let with_rv = |rv: &str, value: &str| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cm-a", "resourceVersion": rv, "labels": {"app": "diff"}},
            "data": {"k": value}})
    };
    let other_uid = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cm-a", "uid": "00000000-0000-0000-0000-000000000000"}});
    vec![
        put(
            "update/current-rv",
            "update",
            cm_a,
            with_rv("{cm_a_rv1}", "v2"),
        ),
        put(
            "update/stale-rv",
            "update: stale resourceVersion 409 Conflict",
            cm_a,
            with_rv("{cm_a_rv1}", "stale"),
        ),
        put(
            "update/without-rv",
            "update: no resourceVersion is unconditional",
            cm_a,
            with_rv("", "v3"),
        ),
        put(
            "update/missing",
            "update: NotFound",
            &format!("{CM}/nope"),
            cm("nope", json!({})),
        ),
        put(
            "update/name-mismatch",
            "update: body/URL name mismatch",
            cm_a,
            cm("other", json!({})),
        ),
        put(
            "update/uid-mismatch",
            "update: a changed uid 409, etcd3's StorageError",
            cm_a,
            other_uid,
        ),
        Step::raw(
            "update/malformed-json",
            "update: malformed JSON 400, Go's syntax error and the body's start",
            Method::PUT,
            cm_a,
            "application/json",
            r#"{"metadata": {"name": "cm-a"},}"#,
        ),
        Step::raw(
            "update/unsupported-type",
            "update: other body types 415",
            Method::PUT,
            cm_a,
            "text/plain",
            "data",
        ),
    ]
}

fn patches() -> Vec<Step> {
    let cm_a = &format!("{CM}/cm-a");
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [
                    {"name": "app", "image": "nginx:1", "env": [{"name": "A", "value": "1"}]}]}}}});
    let containers = "/spec/template/spec/containers";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"automountServiceAccountToken": false,
            "containers": [{"name": "c", "image": "busybox:1"}]}});
    vec![
        patch(
            "patch/merge",
            "patch: merge",
            cm_a,
            MERGE,
            json!({"metadata": {"labels": {"tier": "x"}}, "data": {"m": "1", "k": null}}),
        ),
        patch(
            "patch/json",
            "patch: JSON patch",
            cm_a,
            JSON_PATCH,
            json!([{"op": "add", "path": "/data/j", "value": "1"},
                {"op": "replace", "path": "/data/m", "value": "2"},
                {"op": "remove", "path": "/metadata/labels/tier"}]),
        ),
        patch(
            "patch/json-test-fails",
            "patch: JSON patch failed operation 422",
            cm_a,
            JSON_PATCH,
            json!([{"op": "test", "path": "/data/j", "value": "nope"}]),
        ),
        patch(
            "patch/json-malformed",
            "patch: a JSON patch that is no array 400",
            cm_a,
            JSON_PATCH,
            json!({"op": "add"}),
        ),
        Step::raw(
            "patch/merge-malformed-json",
            "patch: malformed JSON 400, Go's syntax error",
            Method::PATCH,
            cm_a,
            MERGE,
            "{not json",
        ),
        Step::raw(
            "patch/strategic-malformed-json",
            "patch: malformed JSON 400, Go's syntax error",
            Method::PATCH,
            cm_a,
            STRATEGIC,
            r#"{"data": tru}"#,
        ),
        patch(
            "patch/merge-not-an-object",
            "patch: a merge patch that is no object 400",
            cm_a,
            MERGE,
            json!(["data"]),
        ),
        patch(
            "patch/json-op-not-a-string",
            "patch: a JSON patch operation whose op is no string 400",
            cm_a,
            JSON_PATCH,
            json!([{"op": 5, "path": "/data/x"}]),
        ),
        patch(
            "patch/json-unknown-op",
            "patch: a JSON patch operation of an unknown kind 422",
            cm_a,
            JSON_PATCH,
            json!([{"op": "jump", "path": "/data/x"}]),
        ),
        patch(
            "patch/merge-missing",
            "patch: NotFound",
            &format!("{CM}/nope"),
            MERGE,
            json!({"data": {"a": "b"}}),
        ),
        Step::raw(
            "patch/unsupported-type",
            "patch: other types 415",
            Method::PATCH,
            cm_a,
            "text/plain",
            "data",
        ),
        post(
            "create/deployment",
            "create (the fields written)",
            "/apis/apps/v1/namespaces/{ns}/deployments",
            deployment,
        )
        .picks(&[
            Pick::At("/metadata/name"),
            Pick::At("/metadata/generation"),
            Pick::At("/spec"),
            Pick::At("/status"),
            Pick::At("/spec/replicas"),
            Pick::At("/spec/selector"),
            Pick::At("/spec/template/metadata"),
            Pick::Order(containers),
            Pick::At("/spec/template/spec/containers/0/image"),
        ]),
        patch(
            "patch/strategic-deployment",
            "patch: strategic merge by merge key",
            "/apis/apps/v1/namespaces/{ns}/deployments/web",
            STRATEGIC,
            json!({"spec": {"replicas": 2, "template": {"spec": {"containers": [
                {"name": "sidecar", "image": "busybox:1"},
                {"name": "app", "env": [{"name": "B", "value": "2"}]}]}}}}),
        )
        .picks(&[
            Pick::At("/metadata/generation"),
            Pick::At("/spec/replicas"),
            Pick::Order(containers),
            Pick::SortedByName(containers),
        ]),
        post(
            "create/pod",
            "create: Pod status.phase Pending (the fields written)",
            "/api/v1/namespaces/{ns}/pods",
            pod,
        )
        .picks(&[
            Pick::At("/metadata/name"),
            Pick::Names("/spec/containers"),
            Pick::At("/spec"),
            Pick::At("/status"),
        ]),
        patch(
            "patch/strategic-pod",
            "patch: strategic merge on a Pod",
            "/api/v1/namespaces/{ns}/pods/p",
            STRATEGIC,
            json!({"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "busybox:2"}]}}),
        )
        .picks(&[
            Pick::At("/metadata/labels"),
            Pick::SortedByName("/spec/containers"),
        ]),
        patch(
            "patch/strategic-missing-merge-key",
            "patch: strategic merge list item without its merge key 500",
            "/api/v1/namespaces/{ns}/pods/p",
            STRATEGIC,
            json!({"spec": {"containers": [{"image": "busybox:3"}]}}),
        ),
        patch(
            "patch/strategic-unknown-directive",
            "patch: strategic merge with an unknown $patch 500",
            "/api/v1/namespaces/{ns}/pods/p",
            STRATEGIC,
            json!({"spec": {"$patch": "sideways"}}),
        ),
    ]
}

fn apply() -> Vec<Step> {
    let applied = &format!("{CM}/applied");
    let body = |v: &str| cm("applied", json!({"a": v})).to_string();
    let apply = |name, behaviour, query: &str, value: &str| {
        let path = format!("{applied}{query}");
        Step::raw(name, behaviour, Method::PATCH, &path, APPLY, &body(value))
    };
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"6\"\n";
    vec![
        apply(
            "apply/create",
            "patch: apply with fieldManager creates",
            "?fieldManager=alice",
            "1",
        )
        .managed_fields(),
        apply(
            "apply/same-manager",
            "patch: apply merges",
            "?fieldManager=alice",
            "2",
        )
        .managed_fields(),
        apply(
            "apply/conflict",
            "patch: apply by another manager",
            "?fieldManager=bob",
            "3",
        ),
        apply(
            "apply/force",
            "patch: apply with force",
            "?fieldManager=bob&force=true",
            "4",
        )
        .managed_fields(),
        apply(
            "apply/no-field-manager",
            "patch: apply needs fieldManager 422",
            "",
            "5",
        ),
        Step::raw(
            "apply/yaml-body",
            "patch: apply with a YAML body",
            Method::PATCH,
            &format!("{applied}?fieldManager=bob"),
            APPLY,
            yaml,
        )
        .managed_fields(),
    ]
}

/// managedFields kept by updates and patches, ownership shared and taken, dryRun. Managers
/// other than the creator ("differential", from the User-Agent) sort after it, so entries
/// keep their order whether or not two writes share a second.
fn managed_fields() -> Vec<Step> {
    let owned = &format!("{CM}/owned");
    let object = |data: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "owned", "labels": {"a": "b"}, "annotations": {"z": "1"}},
            "data": data, "binaryData": {"b": "AAAA"}})
    };
    vec![
        post(
            "managed/create",
            "create: managedFields of the User-Agent's program",
            CM,
            object(json!({"k": "v"})),
        )
        .managed_fields(),
        put(
            "managed/update-other-manager",
            "update: managedFields, the changed fields move to the updater",
            &format!("{owned}?fieldManager=zed"),
            object(json!({"k": "v2", "n": "1"})),
        )
        .managed_fields(),
        patch(
            "managed/merge-patch-removes",
            "patch: managedFields lose the removed fields",
            &format!("{owned}?fieldManager=zoe"),
            MERGE,
            json!({"metadata": {"labels": {"a": null}}}),
        )
        .managed_fields(),
        patch(
            "managed/apply-shared",
            "patch: apply of a field's current value shares it",
            &format!("{owned}?fieldManager=zara"),
            APPLY,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"},
                "data": {"k": "v2"}}),
        )
        .managed_fields(),
        patch(
            "managed/apply-conflicts",
            "patch: apply conflicts with an Update manager",
            &format!("{owned}?fieldManager=zz"),
            APPLY,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owned"},
                "binaryData": {"b": "BBBB"}}),
        ),
        patch(
            "managed/force-not-apply",
            "patch: force on a patch that is not an apply 422",
            &format!("{owned}?force=true"),
            MERGE,
            json!({"data": {"k": "v9"}}),
        ),
        patch(
            "managed/status-write",
            "patch: a /status write is an entry of its own",
            "/apis/apps/v1/namespaces/{ns}/deployments/web/status?fieldManager=zed",
            MERGE,
            json!({"status": {"replicas": 3}}),
        )
        .managed_fields()
        .picks(&[Pick::At("/metadata/managedFields")]),
        post(
            "dry-run/create",
            "create: dryRun",
            &format!("{CM}?dryRun=All"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dry"},
                "data": {"a": "1"}}),
        )
        .managed_fields(),
        get(
            "dry-run/get-not-created",
            "get: NotFound",
            &format!("{CM}/dry"),
        ),
        put(
            "dry-run/update",
            "update: dryRun",
            &format!("{owned}?dryRun=All"),
            object(json!({"k": "dry"})),
        )
        .managed_fields(),
        delete(
            "dry-run/delete",
            "delete: dryRun",
            &format!("{owned}?dryRun=All"),
        ),
        get("dry-run/get-unchanged", "get", owned).managed_fields(),
        delete(
            "dry-run/invalid",
            "delete: dryRun other than All 422",
            &format!("{owned}?dryRun=Foo"),
        ),
    ]
}
