//! The status of new CustomResourceDefinitions: as the create answers it (before any
//! controller ran) and once Established (`acceptedNames`, `storedVersions`, the conditions
//! `NamesAccepted`, `Established` and, in the protected groups `*.k8s.io`,
//! `KubernetesAPIApprovalPolicyConformant` for an approving URL and for `unapproved...`).
//! Conditions are compared sorted by type (kube-apiserver 1.36.2's controllers add them in
//! an order that varies). The CRDs are in groups of their own, deleted at the end.

use serde_json::{Value, json};

use super::script::{delete, get, post};
use super::step::{Pick, Step};

const CRDS: &str = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";

fn crd(plural: &str, kind: &str, group: &str, approval: Option<&str>) -> Value {
    let mut metadata = json!({"name": format!("{plural}.{group}")});
    if let Some(approval) = approval {
        metadata["annotations"] = json!({"api-approved.kubernetes.io": approval});
    }
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": plural, "kind": kind, "shortNames": [format!("{plural}x")]},
            "versions": [
                {"name": "v1", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object"}}},
                {"name": "v2", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}}}]}})
}

/// Create (whole answer), wait, the status once Established, delete.
fn lifecycle(
    label: [&'static str; 4],
    plural: &'static str,
    kind: &str,
    group: &str,
    approval: Option<&str>,
) -> Vec<Step> {
    let path = format!("{CRDS}/{plural}.{group}");
    let status = [
        Pick::At("/status/acceptedNames"),
        Pick::At("/status/storedVersions"),
        Pick::SortedBy("/status/conditions", "type"),
    ];
    vec![
        post(
            label[0],
            "create: a CRD's status as created (no names accepted, storedVersions)",
            CRDS,
            crd(plural, kind, group, approval),
        ),
        Step::wait_established(label[1], "CRD establishing", &path),
        get(
            label[2],
            "CRD status once Established: acceptedNames, conditions, storedVersions",
            &path,
        )
        .picks(&status),
        delete(label[3], "delete: a CRD", &path).picks(&[Pick::At("/metadata/name")]),
    ]
}

pub fn steps() -> Vec<Step> {
    let mut s = lifecycle(
        [
            "crd-status/create",
            "crd-status/established",
            "crd-status/get",
            "crd-status/delete",
        ],
        "probes",
        "Probe",
        "status.{group}",
        None,
    );
    s.extend(lifecycle(
        [
            "crd-status/approved-create",
            "crd-status/approved-established",
            "crd-status/approved-get",
            "crd-status/approved-delete",
        ],
        "probes",
        "Probe",
        "{ns}.k8s.io",
        Some("https://github.com/kubernetes/kubernetes/pull/1"),
    ));
    s.extend(lifecycle(
        [
            "crd-status/unapproved-create",
            "crd-status/unapproved-established",
            "crd-status/unapproved-get",
            "crd-status/unapproved-delete",
        ],
        "drafts",
        "Draft",
        "{ns}.x-k8s.io.kubernetes.io",
        Some("unapproved, experimental"),
    ));
    s
}
