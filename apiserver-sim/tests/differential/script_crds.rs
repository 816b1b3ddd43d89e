//! The script's unknown paths and custom resources: a CRD created, waited for until
//! Established on both servers, its custom resources used, the CRD deleted.

use http::Method;
use serde_json::{Value, json};

use super::script::{APPLY, MERGE, OTHER_RESOURCES, STRATEGIC, delete, get, patch, post};
use super::step::{Pick, Step};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
const WIDGETS: &str = "/apis/{group}/v1/namespaces/{ns}/widgets";

pub fn unknown_paths() -> Vec<Step> {
    vec![
        get(
            "unknown/group",
            "an unknown group: 404 page not found",
            "/apis/nope.example.com/v1/things",
        ),
        get(
            "unknown/group-discovery",
            "an unknown group's discovery: 404 page not found",
            "/apis/nope.example.com",
        ),
        get(
            "unknown/group-version-discovery",
            "an unknown group version's discovery: 404 page not found",
            "/apis/nope.example.com/v1",
        ),
        post(
            "unknown/group-create",
            "a create in an unknown group: 404 page not found",
            "/apis/nope.example.com/v1/namespaces/{ns}/things",
            json!({"apiVersion": "nope.example.com/v1", "kind": "Thing",
                "metadata": {"name": "t"}}),
        ),
        get(
            "unknown/path",
            "a path outside the API: 404 page not found",
            "/nope",
        ),
        get(
            "unknown/core-subresource",
            "an unknown subresource of a built-in: 404 NotFound",
            "/api/v1/namespaces/{ns}/configmaps/cm-a/nothing",
        ),
        get(
            "unknown/version",
            "an unknown version of a served group: 404 NotFound",
            "/apis/apps/v9/namespaces/{ns}/deployments",
        ),
        get(
            "unknown/resource",
            "an unknown resource of a served version: 404 NotFound",
            "/api/v1/namespaces/{ns}/nothings",
        ),
        get(
            "unknown/unserved-builtin",
            "a built-in resource the sim does not serve",
            "/apis/apps/v1/namespaces/{ns}/statefulsets",
        )
        .known_difference(OTHER_RESOURCES),
    ]
}

fn widget(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "{group}/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec})
}

pub fn custom_resources() -> Vec<Step> {
    let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"size": {"type": "integer", "minimum": 0},
            "mode": {"type": "string", "enum": ["fast", "slow"], "default": "fast"}}}}}});
    let protected = json!({"apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.{ns}.k8s.io"},
        "spec": {"group": "{ns}.k8s.io", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]}});
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.{group}"},
        "spec": {"group": "{group}", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                "listKind": "WidgetList", "shortNames": ["wdg"], "categories": ["gadgets"]},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema}]}});
    let w1 = &format!("{WIDGETS}/w1");
    let held_path = &format!("{WIDGETS}/held");
    let mut held = widget("held", json!({"size": 1}));
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    let cr_page = "list: limit, continue, remainingItemCount (custom resource)";
    vec![
        get(
            "crd/before-it-exists",
            "a custom resource before its CRD: 404 page not found",
            WIDGETS,
        ),
        post(
            "crd/protected-group",
            "create: a CRD in a protected group without api-approved.kubernetes.io 422",
            CRDS,
            protected,
        ),
        post(
            "crd/create",
            "create: a CRD (the fields written)",
            CRDS,
            crd,
        )
        .picks(&[Pick::At("/metadata/name"), Pick::At("/spec")]),
        Step::wait_established(
            "crd/established",
            "CRD: Established",
            &format!("{CRDS}/widgets.{{group}}"),
        ),
        post(
            "cr/create",
            "create: a custom resource",
            WIDGETS,
            widget("w1", json!({"size": 1})),
        ),
        get("cr/get", "get: a custom resource", w1),
        get(
            "cr/list",
            "list: a custom resource (items carry apiVersion/kind)",
            WIDGETS,
        ),
        super::script_discovery::custom_resource_list(),
        Step::watch(
            "cr/watch-too-old",
            "watch: from N older than the history, 200",
            "too-old",
            &format!("{WIDGETS}?watch=true&resourceVersion={{pages_rv}}&timeoutSeconds=60"),
        ),
        Step::collect(
            "cr/watch-too-old-error",
            "watch: from N older than a custom resource's CRD, one ERROR event 410, then the end",
            "too-old",
            super::client::Until::End,
        )
        .whole_events(),
        patch(
            "cr/merge-patch",
            "patch: merge on a custom resource",
            w1,
            MERGE,
            json!({"spec": {"size": 2}}),
        ),
        patch(
            "cr/strategic-patch",
            "patch: strategic merge on a custom resource 415",
            w1,
            STRATEGIC,
            json!({"spec": {"size": 3}}),
        ),
        Step::raw(
            "cr/unsupported-type",
            "patch: other types 415 (custom resource)",
            Method::PATCH,
            w1,
            "text/plain",
            "data",
        ),
        get(
            "cr/unsupported-field-selector",
            "list: unsupported field selector of a custom resource 400",
            &format!("{WIDGETS}?fieldSelector=spec.size%3D1"),
        ),
        Step::raw(
            "cr/apply",
            "patch: apply creates a custom resource",
            Method::PATCH,
            &format!("{WIDGETS}/w2?fieldManager=alice"),
            APPLY,
            &widget("w2", json!({"size": 4})).to_string(),
        )
        .managed_fields(),
        get("cr/list-limit", cr_page, &format!("{WIDGETS}?limit=1"))
            .save("cr_cont", "/metadata/continue"),
        get(
            "cr/list-limit-last",
            cr_page,
            &format!("{WIDGETS}?limit=1&continue={{cr_cont}}"),
        ),
        post(
            "cr/schema-violation",
            "create: schema validation",
            WIDGETS,
            widget("w3", json!({"size": "big"})),
        ),
        post(
            "cr/unknown-field",
            "create: pruning unknown fields",
            WIDGETS,
            widget("w4", json!({"size": 1, "colour": "red"})),
        ),
        post(
            "cr/unknown-field-strict",
            "create: unknown fields with fieldValidation=Strict 400 (custom resource)",
            &format!("{WIDGETS}?fieldValidation=Strict"),
            json!({"apiVersion": "{group}/v1", "kind": "Widget", "zed": 1,
                "metadata": {"name": "w4s", "foo": 1}, "spec": {"size": 1, "colour": "red"}}),
        ),
        patch(
            "cr/patch-unknown-fields",
            "patch: unknown fields dropped with warnings (custom resource)",
            &format!("{WIDGETS}/w4"),
            MERGE,
            json!({"zed": 1, "spec": {"qq": 1}}),
        )
        .picks(&[Pick::At("/spec")]),
        patch(
            "cr/patch-unknown-fields-strict",
            "patch: unknown fields with fieldValidation=Strict 422 quoting the patched object",
            &format!("{WIDGETS}/w4?fieldValidation=Strict"),
            MERGE,
            json!({"zed": 1, "spec": {"qq": 1}}),
        ),
        post(
            "cr/kind-mismatch",
            "create: a custom resource of another kind 422",
            WIDGETS,
            json!({"apiVersion": "{group}/v1", "kind": "Gadget", "metadata": {"name": "w5"}}),
        ),
        patch(
            "cr/patch-violation",
            "patch: schema validation (enum) 422",
            w1,
            MERGE,
            json!({"spec": {"mode": "warp"}}),
        ),
        Step::raw(
            "cr/malformed-json",
            "create: malformed JSON 400 (custom resource)",
            Method::POST,
            WIDGETS,
            "application/json",
            "{not json",
        ),
        post("cr/create-held", "create: a custom resource", WIDGETS, held)
            .picks(&[Pick::At("/metadata/name"), Pick::At("/metadata/finalizers")]),
        delete(
            "crd/delete",
            "delete: a CRD answers it with its cleanup finalizer",
            &format!("{CRDS}/widgets.{{group}}"),
        )
        .picks(&[Pick::At("/metadata/name"), Pick::At("/metadata/finalizers")]),
        Step::wait_deleting(
            "crd/instances-deleted",
            "CRD: its instances deleted while it terminates",
            held_path,
        ),
        post(
            "cr/create-while-terminating",
            "create: a custom resource while its CRD terminates 403",
            WIDGETS,
            widget("w6", json!({"size": 1})),
        ),
        Step::raw(
            "cr/apply-while-terminating",
            "patch: an apply creating a custom resource while its CRD terminates 403",
            Method::PATCH,
            &format!("{WIDGETS}/w7?fieldManager=alice"),
            APPLY,
            &widget("w7", json!({"size": 1})).to_string(),
        ),
        patch(
            "cr/release-held",
            "patch: merge removing the last finalizer of an object being deleted",
            held_path,
            MERGE,
            json!({"metadata": {"finalizers": null}}),
        )
        .picks(&[Pick::At("/metadata/name"), Pick::At("/metadata/finalizers")]),
        Step::wait_gone(
            "crd/gone",
            "CRD: removed after its instances",
            &format!("{CRDS}/widgets.{{group}}"),
        ),
        get(
            "crd/after-delete",
            "a custom resource after its CRD: 404 page not found",
            WIDGETS,
        ),
    ]
}
