//! The script's discovery documents: `/version` (its field set: the values are each
//! server's own), `/api`, `/apis/<group>`, and the served resources' entries of the
//! resource lists (verbs, short names, categories, `storageVersionHash`, subresources) with
//! the lists' `kind`/`apiVersion`/`groupVersion`. Entries of resources the sim does not serve
//! are left out: the real server lists many more.

use http::Method;

use super::script::get;
use super::step::{Pick, Step};

/// A resource list's own fields and the entries named `served`.
fn resource_list(name: &'static str, path: &str, served: &'static [&'static str]) -> Step {
    get(name, "discovery: a resource list's served entries", path).picks(&[
        Pick::At("/kind"),
        Pick::At("/apiVersion"),
        Pick::At("/groupVersion"),
        Pick::Named("/resources", served),
    ])
}

pub fn discovery() -> Vec<Step> {
    vec![
        get(
            "discovery/version",
            "/version: the fields of kube-apiserver 1.36's",
            "/version",
        )
        .picks(&[Pick::Keys(""), Pick::At("/major")]),
        get("discovery/api", "discovery: /api", "/api")
            .picks(&[Pick::At("/kind"), Pick::At("/versions")]),
        get("discovery/group", "discovery: /apis/<group>", "/apis/apps"),
        resource_list(
            "discovery/core-v1",
            "/api/v1",
            &[
                "configmaps",
                "events",
                "namespaces",
                "namespaces/status",
                "pods",
                "pods/status",
                "secrets",
            ],
        ),
        resource_list(
            "discovery/apps-v1",
            "/apis/apps/v1",
            &[
                "deployments",
                "deployments/status",
                "replicasets",
                "replicasets/status",
            ],
        ),
        resource_list(
            "discovery/coordination-v1",
            "/apis/coordination.k8s.io/v1",
            &["leases"],
        ),
        resource_list("discovery/events-v1", "/apis/events.k8s.io/v1", &["events"]),
        resource_list(
            "discovery/apiextensions-v1",
            "/apis/apiextensions.k8s.io/v1",
            &[
                "customresourcedefinitions",
                "customresourcedefinitions/status",
            ],
        ),
        Step::call(
            "discovery/namespaces-deletecollection",
            "deletecollection: not on namespaces, 405",
            Method::DELETE,
            "/api/v1/namespaces?labelSelector=nothing%3Dhere",
            None,
        ),
    ]
}

/// A custom resource's list, once its CRD is served.
pub fn custom_resource_list() -> Step {
    resource_list(
        "discovery/custom-resource",
        "/apis/{group}/v1",
        &["widgets", "widgets/status"],
    )
}
