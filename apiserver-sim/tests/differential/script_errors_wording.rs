//! Error answers compared whole: a new finalizer on an object being deleted (422), a create
//! in a terminating namespace (403, built-in and custom resource), and DeleteOptions that
//! do not validate (`propagationPolicy`, `dryRun`, both, `orphanDependents` with a
//! policy; query and body; delete and deletecollection). In `{ns}`, and `{ns}-term`, a
//! namespace left terminating (a finalizer holds its one ConfigMap; no namespace
//! controller runs next to the real server).

use serde_json::json;

use super::script::{CM, MERGE, STRATEGIC, delete, patch, post};
use super::step::{Pick, Step};

const TERM: &str = "/api/v1/namespaces/{ns}-term";

pub fn steps() -> Vec<Step> {
    let held = json!({"metadata": {"name": "wording-held", "finalizers": ["example.com/a"]}});
    let held_path = &format!("{CM}/wording-held");
    let invalid_options = "delete: DeleteOptions validated as kube-apiserver 1.36 words it, 422";
    let name = [Pick::At("/metadata/name")];
    vec![
        post("wording/create-held", "create", CM, held).picks(&name),
        delete(
            "wording/delete-held",
            "delete: finalizers keep the object, deletionTimestamp set",
            held_path,
        )
        .picks(&name),
        patch(
            "wording/add-finalizer-merge",
            "update: no new finalizers on an object being deleted (422)",
            held_path,
            MERGE,
            json!({"metadata": {"finalizers": ["example.com/a", "example.com/b"]}}),
        ),
        patch(
            "wording/add-finalizer-strategic",
            "update: no new finalizers on an object being deleted (422)",
            held_path,
            STRATEGIC,
            json!({"metadata": {"finalizers": ["example.com/c", "example.com/b"]}}),
        ),
        patch(
            "wording/release-held",
            "patch: merge removing the last finalizer of an object being deleted",
            held_path,
            MERGE,
            json!({"metadata": {"finalizers": null}}),
        )
        .picks(&name),
        delete(
            "wording/propagation-invalid",
            invalid_options,
            &format!("{CM}/wording-none?propagationPolicy=Bogus"),
        ),
        delete(
            "wording/dry-run-invalid",
            invalid_options,
            &format!("{CM}/wording-none?dryRun=Bogus"),
        ),
        Step::call(
            "wording/options-body-invalid",
            invalid_options,
            http::Method::DELETE,
            &format!("{CM}/wording-none"),
            Some(json!({"propagationPolicy": "Bogus", "dryRun": ["x"]})),
        ),
        delete(
            "wording/orphan-and-policy",
            invalid_options,
            &format!("{CM}/wording-none?orphanDependents=true&propagationPolicy=Foreground"),
        ),
        delete(
            "wording/collection-propagation-invalid",
            invalid_options,
            &format!("{CM}?propagationPolicy=Bogus&labelSelector=wording%3Dnone"),
        ),
        delete(
            "wording/cr-propagation-invalid",
            invalid_options,
            "/apis/tables.{group}/v1/namespaces/{ns}/gizmos/full?propagationPolicy=Bogus",
        ),
        post(
            "wording/create-term-namespace",
            "create",
            "/api/v1/namespaces",
            json!({"metadata": {"name": "{ns}-term"}}),
        )
        .picks(&name),
        post(
            "wording/create-term-held",
            "create",
            &format!("{TERM}/configmaps"),
            json!({"metadata": {"name": "held", "finalizers": ["example.com/a"]}}),
        )
        .picks(&name),
        delete(
            "wording/delete-term-namespace",
            "delete: a namespace goes Terminating",
            TERM,
        )
        .picks(&[Pick::At("/metadata/name"), Pick::At("/status/phase")]),
        post(
            "wording/create-in-terminating",
            "create: in a terminating namespace 403",
            &format!("{TERM}/configmaps"),
            json!({"metadata": {"name": "late"}}),
        ),
        post(
            "wording/create-cr-in-terminating",
            "create: in a terminating namespace 403 (custom resource)",
            "/apis/tables.{group}/v1/namespaces/{ns}-term/gizmos",
            json!({"apiVersion": "tables.{group}/v1", "kind": "Gizmo",
                "metadata": {"name": "late"}}),
        ),
    ]
}
