//! Patches compared item by item and unknown fields: strategic merge patches of a
//! Deployment's containers (merge by name and the order of the merged list, `$patch:
//! delete` and `replace`, `$setElementOrder` and its order check, `$deleteFromPrimitiveList`,
//! `$retainKeys`, unknown `$` keys), JSON patches on missing paths and failing `test`s,
//! merge patches with `null`, and unknown or duplicate fields in create, update, patch and
//! apply bodies with `fieldValidation` unset, `Strict` and invalid (the `Warning` headers
//! compared). In `{ns}`.

use http::Method;
use serde_json::{Value, json};

use super::script::{APPLY, CM, JSON_PATCH, MERGE, STRATEGIC, patch, post, put};
use super::step::{Pick, Step};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/{ns}/deployments";
const SMP: &str = "/apis/apps/v1/namespaces/{ns}/deployments/smp";
const CONTAINERS: &str = "/spec/template/spec/containers";
const FIELDS: &str = "/api/v1/namespaces/{ns}/configmaps/fields";

/// The embedded object's key order: kube-apiserver's keeps its untouched parts in Go
/// struct order.
const EMBEDDED_ORDER: &str = "a Strict merge or JSON patch's 422 quotes the patched object with its untouched parts in Go struct order; the sim's keys are sorted";

fn smp(name: &'static str, behaviour: &'static str, body: Value) -> Step {
    patch(name, behaviour, SMP, STRATEGIC, body)
        .picks(&[Pick::Order(CONTAINERS), Pick::SortedByName(CONTAINERS)])
}

fn containers(list: Value) -> Value {
    json!({"spec": {"template": {"spec": {"containers": list}}}})
}

fn strategic() -> Vec<Step> {
    let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "smp"},
        "spec": {"selector": {"matchLabels": {"app": "smp"}},
            "template": {"metadata": {"labels": {"app": "smp"}},
                "spec": {"containers": [
                    {"name": "a", "image": "nginx:1", "args": ["x", "y", "z"],
                        "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                    {"name": "b", "image": "busybox:1"},
                    {"name": "c", "image": "busybox:1"}]}}}});
    let order = "patch: strategic merge by merge key, the merged list in mergeSlice's order";
    vec![
        post(
            "smp/create",
            "create (the fields written)",
            DEPLOYMENTS,
            deployment,
        )
        .picks(&[Pick::Order(CONTAINERS)]),
        smp(
            "smp/merge-and-append",
            order,
            containers(json!([{"name": "b", "image": "busybox:2"}, {"name": "d", "image": "x"}])),
        ),
        smp(
            "smp/delete-item",
            "patch: strategic merge $patch: delete",
            containers(json!([{"name": "d", "$patch": "delete"}])),
        ),
        smp(
            "smp/set-element-order",
            "patch: strategic merge $setElementOrder",
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}, {"name": "b"}],
                "containers": [{"name": "a", "image": "nginx:2"}]}}}}),
        ),
        smp(
            "smp/delete-from-primitive-list",
            "patch: strategic merge $deleteFromPrimitiveList",
            containers(json!([{"name": "a", "$deleteFromPrimitiveList/args": ["y"]}])),
        ),
        smp(
            "smp/nested-set-element-order",
            "patch: strategic merge $setElementOrder",
            containers(json!([{"name": "a", "env": [{"name": "C", "value": "3"}],
                "$setElementOrder/env": [{"name": "C"}, {"name": "B"}, {"name": "A"}]}])),
        ),
        smp(
            "smp/new-item-first",
            order,
            containers(json!([{"name": "e", "image": "e"}, {"name": "b", "image": "b2"}])),
        ),
        patch(
            "smp/set-element-order-mismatch",
            "patch: strategic merge $setElementOrder not matching the patch's list 500",
            SMP,
            STRATEGIC,
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "c"}, {"name": "a"}],
                "containers": [{"name": "z", "image": "z"}]}}}}),
        ),
        patch(
            "smp/retain-keys",
            "patch: strategic merge $retainKeys",
            SMP,
            STRATEGIC,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}),
        )
        .picks(&[Pick::At("/spec/strategy")]),
        patch(
            "smp/retain-keys-missing-field",
            "patch: strategic merge $retainKeys not listing a patched field 400",
            SMP,
            STRATEGIC,
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate",
                "rollingUpdate": {"maxSurge": 1}}}}),
        ),
        patch(
            "smp/unknown-dollar-keys",
            "patch: strategic merge, unknown $ keys dropped as unknown fields with warnings",
            SMP,
            STRATEGIC,
            json!({"$foo": 1, "metadata": {"$bar": 2}}),
        )
        .picks(&[Pick::At("/metadata/name")]),
        smp(
            "smp/replace-list",
            "patch: strategic merge $patch: replace",
            containers(json!([{"name": "z", "image": "z"}, {"$patch": "replace"}])),
        ),
    ]
}

fn json_patches() -> Vec<Step> {
    let cm_a = &format!("{CM}/patched");
    let failed = "patch: JSON patch failed operation 422";
    let json_patch = |name, behaviour, ops: Value| patch(name, behaviour, cm_a, JSON_PATCH, ops);
    let patched = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "patched", "labels": {"a": "b"}, "finalizers": ["example.com/x"]},
        "data": {"j": "1", "k": "2"}});
    vec![
        post("json-patch/create", "create", CM, patched).picks(&[Pick::At("/metadata/name")]),
        json_patch(
            "json-patch/remove-missing",
            failed,
            json!([{"op": "remove", "path": "/data/nope"}]),
        ),
        json_patch(
            "json-patch/replace-missing-parent",
            failed,
            json!([{"op": "replace", "path": "/nope/x", "value": 1}]),
        ),
        json_patch(
            "json-patch/add-missing-parent",
            failed,
            json!([{"op": "add", "path": "/a/b/c", "value": 1}]),
        ),
        json_patch(
            "json-patch/test-other-value",
            failed,
            json!([{"op": "test", "path": "/metadata/name", "value": "other"}]),
        ),
        json_patch(
            "json-patch/test-missing",
            failed,
            json!([{"op": "test", "path": "/data/missing", "value": "x"}]),
        ),
        json_patch(
            "json-patch/move-from-missing",
            failed,
            json!([{"op": "move", "from": "/data/missing", "path": "/data/b"}]),
        ),
        json_patch(
            "json-patch/copy-from-missing",
            failed,
            json!([{"op": "copy", "from": "/data/missing", "path": "/data/b"}]),
        ),
        json_patch(
            "json-patch/index-out-of-range",
            failed,
            json!([{"op": "add", "path": "/metadata/finalizers/5", "value": "x"}]),
        ),
        json_patch(
            "json-patch/empty-path",
            failed,
            json!([{"op": "add", "path": "", "value": {}}]),
        ),
        json_patch(
            "json-patch/no-leading-slash",
            "patch: JSON patch, a pointer's first part dropped whatever it holds (unknown field warned)",
            json!([{"op": "add", "path": "data/j2", "value": "x"}]),
        )
        .picks(&[Pick::At("/data")]),
        patch(
            "merge-patch/null-value",
            "patch: merge, null deletes",
            cm_a,
            MERGE,
            json!({"data": {"j": null}}),
        )
        .picks(&[Pick::At("/data"), Pick::At("/metadata/labels")]),
        patch(
            "merge-patch/null-maps",
            "patch: merge, null deletes",
            cm_a,
            MERGE,
            json!({"data": null, "metadata": {"labels": null}}),
        )
        .picks(&[Pick::At("/data"), Pick::At("/metadata/labels")]),
        patch(
            "json-patch/release",
            "patch: merge removing the last finalizer",
            cm_a,
            MERGE,
            json!({"metadata": {"finalizers": null}}),
        )
        .picks(&[Pick::At("/metadata/finalizers")]),
    ]
}

fn unknown_fields() -> Vec<Step> {
    let unknown_cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "bar": 1,
        "metadata": {"name": "fields", "foo": 1, "labels": {"a": "b"}, "aaa": 2},
        "zed": {"a": 1}, "data": {"a": "b"}});
    let unknown_deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "unknown-fields"},
        "spec": {"selector": {"matchLabels": {"a": "b"}, "zz": 1},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [
                    {"name": "c", "image": "x", "foo": 1,
                        "ports": [{"containerPort": 80, "bad": 2}]},
                    {"name": "d", "image": "x", "foo": 1}],
                    "volumes": [{"name": "v", "emptyDir": {"x": 1}}]}}},
        "status": {"q": 1}});
    let update = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fields", "foo": 1}, "zed": 2, "data": {"a": "c"}});
    let unknown_patch = json!({"zed": 1, "metadata": {"foo": 2}, "data": {"x": "y"}});
    let applied = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "applied-unknown", "namespace": "{ns}"}, "zed": 2,
        "spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}},
                "spec": {"containers": [{"name": "c", "image": "x", "foo": 1}]}}}});
    let yaml = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: y1\n  zz: 1\nzed: 1\ndata:\n  a: b\naa: 2\n";
    let duplicate = r#"{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "dup", "name": "dup"}, "data": {"a": "b"}}"#;
    let warned = "create: unknown fields dropped, a Warning each (fieldValidation unset)";
    let strict = "create: unknown fields with fieldValidation=Strict 400";
    let bogus = "create: fieldValidation other than Ignore, Warn, Strict 422";
    vec![
        post("fields/create-warn", warned, CM, unknown_cm.clone()),
        post(
            "fields/create-strict",
            strict,
            &format!("{CM}?fieldValidation=Strict"),
            unknown_cm.clone(),
        ),
        post(
            "fields/create-ignore",
            "create: unknown fields dropped silently with fieldValidation=Ignore",
            &format!("{CM}?fieldValidation=Ignore&dryRun=All"),
            unknown_cm.clone(),
        ),
        post(
            "fields/create-bogus",
            bogus,
            &format!("{CM}?fieldValidation=Bogus"),
            unknown_cm,
        ),
        post(
            "fields/deployment-warn",
            warned,
            DEPLOYMENTS,
            unknown_deployment.clone(),
        )
        .picks(&[
            Pick::At("/metadata/name"),
            Pick::At("/spec/selector"),
            Pick::At("/status"),
        ]),
        post(
            "fields/deployment-strict",
            strict,
            &format!("{DEPLOYMENTS}?fieldValidation=Strict"),
            unknown_deployment,
        ),
        Step::raw(
            "fields/yaml-strict",
            strict,
            Method::POST,
            &format!("{CM}?fieldValidation=Strict"),
            "application/yaml",
            yaml,
        ),
        Step::raw(
            "fields/duplicate",
            "create: a duplicate field warned, the last one kept",
            Method::POST,
            &format!("{CM}?dryRun=All"),
            "application/json",
            duplicate,
        ),
        put(
            "fields/update-warn",
            "update: unknown fields dropped with warnings",
            FIELDS,
            update.clone(),
        ),
        put(
            "fields/update-strict",
            "update: unknown fields with fieldValidation=Strict 400",
            &format!("{FIELDS}?fieldValidation=Strict"),
            update.clone(),
        ),
        put(
            "fields/update-bogus",
            "update: fieldValidation other than Ignore, Warn, Strict 422",
            &format!("{FIELDS}?fieldValidation=Bogus"),
            update,
        ),
        patch(
            "fields/merge-patch-warn",
            "patch: unknown fields dropped with warnings",
            FIELDS,
            MERGE,
            unknown_patch.clone(),
        ),
        patch(
            "fields/json-patch-warn",
            "patch: unknown fields dropped with warnings",
            FIELDS,
            JSON_PATCH,
            json!([{"op": "add", "path": "/zed", "value": 1}]),
        ),
        patch(
            "fields/strategic-strict",
            "patch: unknown fields with fieldValidation=Strict 422 quoting the patch",
            &format!("{FIELDS}?fieldValidation=Strict"),
            STRATEGIC,
            unknown_patch.clone(),
        ),
        patch(
            "fields/merge-strict",
            "patch: unknown fields with fieldValidation=Strict 422",
            &format!("{FIELDS}?fieldValidation=Strict"),
            MERGE,
            unknown_patch,
        )
        .known("/body/message", EMBEDDED_ORDER)
        .known("/body/details/causes/0/message", EMBEDDED_ORDER),
        patch(
            "fields/patch-bogus",
            "patch: fieldValidation other than Ignore, Warn, Strict 422",
            &format!("{FIELDS}?fieldValidation=Bogus"),
            MERGE,
            json!({}),
        ),
        patch(
            "fields/apply-unknown",
            "patch: apply with unknown fields 500, structured-merge-diff's paths",
            &format!("{DEPLOYMENTS}/applied-unknown?fieldManager=m"),
            APPLY,
            applied.clone(),
        )
        .known("/body/message", APPLY_SUBSET),
        patch(
            "fields/apply-strict",
            "patch: apply with unknown fields 500, structured-merge-diff's paths",
            &format!("{DEPLOYMENTS}/applied-unknown?fieldManager=m&fieldValidation=Strict"),
            APPLY,
            applied,
        )
        .known("/body/message", APPLY_SUBSET),
    ]
}

/// kube-apiserver 1.36.2 names a varying subset of an apply's undeclared fields (a run may
/// list only `.zed`, another every one); the sim names them all.
const APPLY_SUBSET: &str = "an apply's undeclared fields: kube-apiserver 1.36.2 names a varying subset of them from one request to the next; the sim names them all";

pub fn steps() -> Vec<Step> {
    let mut s = strategic();
    s.extend(json_patches());
    s.extend(unknown_fields());
    s
}
