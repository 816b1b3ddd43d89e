//! The script's deletes, in `{ns}`: an object with a finalizer (deleted while a watch looks
//! on), immediate deletes, preconditions, bad DeleteOptions, a Pod's delete.

use http::Method;
use serde_json::{Value, json};

use super::script::{CM, MERGE, delete, get, patch, post};
use super::step::{Pick, Step};

/// Selects the object named `fin`.
const FIN: &str = "metadata.name%3Dfin";

pub fn deletes() -> Vec<Step> {
    let fin = &format!("{CM}/fin");
    let with_finalizer = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "fin", "finalizers": ["example.com/hold"]}});
    let precondition = |preconditions: Value| {
        Some(json!({"apiVersion": "v1", "kind": "DeleteOptions", "preconditions": preconditions}))
    };
    let gen_path = &format!("{CM}/{{gen}}");
    vec![
        post("delete/create-with-finalizer", "create", CM, with_finalizer)
            .save("fin_rv", "/metadata/resourceVersion"),
        Step::watch(
            "delete/open-watch",
            "watch",
            "fin",
            &format!(
                "{CM}?watch=true&fieldSelector={FIN}&resourceVersion={{fin_rv}}&timeoutSeconds=60"
            ),
        ),
        delete(
            "delete/with-finalizer",
            "delete: finalizers keep the object, deletionTimestamp set",
            fin,
        ),
        get("delete/get-terminating", "get", fin),
        patch(
            "delete/remove-last-finalizer",
            "patch: merge on an object being deleted",
            fin,
            MERGE,
            json!({"metadata": {"finalizers": null}}),
        ),
        get("delete/get-after-finalizers", "get: NotFound", fin),
        Step::collect(
            "delete/watch-last-finalizer",
            "watch: the last finalizer removed is one DELETED event of the last stored state",
            "fin",
            super::client::Until::Deleted("fin"),
        )
        .picks(&[Pick::At("/metadata/finalizers")]),
        delete(
            "delete/configmap",
            "delete: immediate deletes answer a Success Status",
            &format!("{CM}/cm-a"),
        ),
        delete("delete/missing", "delete: NotFound", &format!("{CM}/cm-a")),
        Step::call(
            "delete/precondition-uid",
            "delete: preconditions 409",
            Method::DELETE,
            gen_path,
            precondition(json!({"uid": "00000000-0000-0000-0000-000000000000"})),
        ),
        Step::call(
            "delete/precondition-rv",
            "delete: preconditions 409",
            Method::DELETE,
            gen_path,
            precondition(json!({"resourceVersion": "1"})),
        ),
        Step::raw(
            "delete/unsupported-type",
            "delete: a body of another type 415",
            Method::DELETE,
            gen_path,
            "text/plain",
            "data",
        ),
        Step::raw(
            "delete/malformed-options",
            "delete: malformed DeleteOptions 400, Go's syntax error",
            Method::DELETE,
            gen_path,
            "application/json",
            "{not json",
        ),
        delete(
            "delete/pod",
            "delete: a Pod answers the Pod",
            "/api/v1/namespaces/{ns}/pods/p",
        )
        .picks(&[
            Pick::At("/metadata/name"),
            Pick::At("/metadata/deletionTimestamp"),
        ]),
    ]
}
