//! `crdgen`: prints CustomResourceDefinitions generated from Rust types as YAML, ready for
//! `kubectl apply -f -` (what `controller-gen crd output:stdout` does for Go types).
//!
//! The types are the sample-controller's Foo with the attributes that generate its
//! `sample-controller/artifacts/crd.yaml` (which the sample-controller checks against its own
//! types), and a two-version Gadget merged into one CRD.
//!
//! ```sh
//! cargo run -p clientgo-derive --example crdgen            # the Foo CRD
//! cargo run -p clientgo-derive --example crdgen -- gadget  # the merged Gadget CRD
//! ```

// Clippy's `duplicated_attributes` takes two columns of one type (`type = "integer"` twice
// in one `#[resource]`) for a repeated attribute; they are two columns.
#![allow(clippy::duplicated_attributes)]

use clientgo_apimachinery::Time;
use clientgo_derive::{CrdSchema, CustomResource, merge_crds};
use serde::{Deserialize, Serialize};

/// What a Foo asks for.
#[derive(CustomResource, CrdSchema, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[resource(
    group = "samplecontroller.k8s.io",
    version = "v1alpha1",
    kind = "Foo",
    namespaced,
    status = "FooStatus",
    spec_default,
    max_description_len = 0,
    annotation(
        name = "api-approved.kubernetes.io",
        value = "unapproved, experimental-only; please get an approval from Kubernetes API reviewers if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups"
    ),
    printcolumn(
        name = "Deployment",
        type = "string",
        json_path = ".spec.deploymentName"
    ),
    printcolumn(name = "Desired", type = "integer", json_path = ".spec.replicas"),
    printcolumn(
        name = "Available",
        type = "integer",
        json_path = ".status.availableReplicas"
    ),
    printcolumn(
        name = "Ready",
        type = "string",
        json_path = r#".status.conditions[?(@.type=="Ready")].status"#
    )
)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The Deployment to create and own.
    #[serde(default)]
    #[schema(required, min_length = 1)]
    pub deployment_name: String,
    /// How many replicas it should run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 10)]
    pub replicas: Option<i32>,
}

/// What the controller has done about a Foo.
#[derive(CrdSchema, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FooStatus {
    /// Available replicas of the owned Deployment.
    #[serde(default)]
    pub available_replicas: i32,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
    /// The `Ready` condition (and any others).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schema(list_type = "map", list_map_keys = ["type"])]
    pub conditions: Vec<Condition>,
}

/// A status condition, as Kubernetes API conventions define it.
#[derive(CrdSchema, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The aspect reported on, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[schema(enum_values = ["True", "False", "Unknown"])]
    pub status: String,
    /// A CamelCase reason for the status.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// A human-readable explanation.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// When `status` last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// The generation the condition was computed from.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

/// Version 1 of a Gadget: stored.
mod v1 {
    use super::*;

    /// A gadget.
    #[derive(CustomResource, CrdSchema, Debug, Clone, Serialize, Deserialize)]
    #[resource(group = "example.clientgo.dev", version = "v1", kind = "Gadget")]
    pub struct GadgetSpec {
        /// Its size.
        #[schema(minimum = 1)]
        pub size: i32,
    }
}

/// Version 2 of a Gadget: served, not stored.
mod v2 {
    use super::*;

    /// A gadget, with a color.
    #[derive(CustomResource, CrdSchema, Debug, Clone, Serialize, Deserialize)]
    #[resource(
        group = "example.clientgo.dev",
        version = "v2",
        kind = "Gadget",
        storage = false
    )]
    pub struct GadgetSpec {
        /// Its size.
        #[schema(minimum = 1)]
        pub size: i32,
        /// Its color.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub color: Option<String>,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let crd = match std::env::args().nth(1).as_deref() {
        None | Some("foo") => Foo::crd(),
        Some("gadget") => merge_crds([v1::Gadget::crd(), v2::Gadget::crd()])?,
        Some(other) => return Err(format!("unknown CRD {other}: foo or gadget").into()),
    };
    print!("{}", serde_norway::to_string(&crd)?);
    Ok(())
}
