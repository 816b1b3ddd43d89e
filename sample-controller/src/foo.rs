//! The Foo custom resource: `samplecontroller.k8s.io/v1alpha1`, as kubernetes/sample-controller
//! defines it, plus the status fields Kubernetes API conventions ask for.
//!
//! A Foo asks for a Deployment named `spec.deploymentName` with `spec.replicas` replicas. The
//! controller reports back in `status`: how many replicas are available, which generation of
//! the spec it has acted on (`observedGeneration`), and a `Ready` condition.
//!
//! The type is a plain serde struct implementing the project's `Resource` and `Object` traits:
//! that is all the REST client, informers and listers need to work with it. Its
//! CustomResourceDefinition comes from the types too: the spec, status and condition derive
//! their structural schema (`clientgo_derive::CrdSchema`, the validations as `#[schema]`
//! attributes, as controller-gen's markers are in Go), [`CRD_INFO`] says the rest (names,
//! scope, subresource, printer columns), and [`crd`] puts them together.
//! `artifacts/crd.yaml`, for `kubectl apply -f`, must say exactly that: a test fails when it
//! drifts.

use clientgo::apimachinery::{ApiResource, DynamicObject, ObjectMeta, Resource, Time, impl_object};
use clientgo::rest::{DynamicClient, PostParams, RestClient};
use clientgo_derive::{CrdSchema, PrinterColumn, ResourceInfo};
use serde::{Deserialize, Serialize};

/// A Foo: a request for a Deployment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Foo {
    /// `samplecontroller.k8s.io/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `Foo`.
    #[serde(default)]
    pub kind: String,
    /// Name, namespace, generation, ...
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// What the user asks for.
    #[serde(default)]
    pub spec: FooSpec,
    /// What the controller reports.
    #[serde(default)]
    pub status: FooStatus,
}

/// What a Foo asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, CrdSchema)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The Deployment to create and own.
    #[serde(default)]
    #[schema(required, min_length = 1)]
    pub deployment_name: String,
    /// How many replicas it should run (the Deployment's default, 1, when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(minimum = 0, maximum = 10)]
    pub replicas: Option<i32>,
}

/// What the controller has done about a Foo.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, CrdSchema)]
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, CrdSchema)]
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
    /// When `status` last changed (not when the condition was last written).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// The generation the condition was computed from.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub observed_generation: i64,
}

fn is_zero(value: &i64) -> bool {
    *value == 0
}

impl Resource for Foo {
    const GROUP: &'static str = "samplecontroller.k8s.io";
    const VERSION: &'static str = "v1alpha1";
    const KIND: &'static str = "Foo";
    const PLURAL: &'static str = "foos";
    const NAMESPACED: bool = true;
}

impl_object!(Foo);

impl Foo {
    /// A Foo named `name` in `namespace`, asking for `replicas` replicas of `deployment`.
    pub fn new(namespace: &str, name: &str, deployment: &str, replicas: i32) -> Foo {
        Foo {
            api_version: Foo::api_version().into_owned(),
            kind: Foo::KIND.to_owned(),
            metadata: ObjectMeta {
                name: name.to_owned(),
                namespace: namespace.to_owned(),
                ..ObjectMeta::default()
            },
            spec: FooSpec {
                deployment_name: deployment.to_owned(),
                replicas: Some(replicas),
            },
            status: FooStatus::default(),
        }
    }

    /// The condition of type `type_`, if reported.
    pub fn condition(&self, type_: &str) -> Option<&Condition> {
        self.status.conditions.iter().find(|c| c.type_ == type_)
    }
}

/// What the Foo CRD says besides the schemas: names, scope, the status subresource, the
/// `kubectl get` columns, and the approval annotation groups under `k8s.io` need on a real API
/// server. Descriptions are left out (`max_description_len` 0), as the hand-written CRD had
/// none.
pub const CRD_INFO: ResourceInfo = ResourceInfo {
    group: Foo::GROUP,
    version: Foo::VERSION,
    kind: Foo::KIND,
    plural: Foo::PLURAL,
    singular: "foo",
    namespaced: Foo::NAMESPACED,
    short_names: &[],
    categories: &[],
    printer_columns: &[
        column("Deployment", "string", ".spec.deploymentName"),
        column("Desired", "integer", ".spec.replicas"),
        column("Available", "integer", ".status.availableReplicas"),
        column(
            "Ready",
            "string",
            r#".status.conditions[?(@.type=="Ready")].status"#,
        ),
    ],
    scale: None,
    status_subresource: true,
    selectable_fields: &[],
    served: true,
    storage: true,
    deprecated: false,
    deprecation_warning: None,
    validations: &[],
    annotations: &[(
        "api-approved.kubernetes.io",
        "unapproved, experimental-only; please get an approval from Kubernetes API reviewers if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups",
    )],
    labels: &[],
    spec_required: false,
    max_description_len: Some(0),
};

const fn column(name: &'static str, type_: &'static str, json_path: &'static str) -> PrinterColumn {
    PrinterColumn {
        name,
        type_,
        json_path,
        description: None,
        format: None,
        priority: 0,
    }
}

/// The Foo CRD, from the types and [`CRD_INFO`].
pub fn crd() -> serde_json::Value {
    CRD_INFO.crd(FooSpec::crd_schema(), Some(FooStatus::crd_schema()))
}

/// The Foo CRD as `artifacts/crd.yaml` writes it (the same as [`crd`]: a test checks it).
pub const CRD_YAML: &str = include_str!("../artifacts/crd.yaml");

/// A client of CustomResourceDefinitions (cluster-scoped, untyped).
pub fn crd_client(client: &RestClient) -> DynamicClient {
    DynamicClient::from_api_resource(
        client,
        &ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
            namespaced: false,
        },
        None,
    )
}

/// Creates the Foo CRD from `artifacts/crd.yaml`, as `kubectl apply -f` would.
pub async fn install_crd(client: &RestClient) -> Result<(), String> {
    let crd: DynamicObject =
        serde_norway::from_str(CRD_YAML).map_err(|e| format!("artifacts/crd.yaml: {e}"))?;
    crd_client(client)
        .create(&crd, &PostParams::default())
        .await
        .map_err(|e| format!("creating the CRD: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `artifacts/crd.yaml` is what the types generate: change a `#[schema]` attribute or a
    /// field, and this fails until the file says the same.
    #[test]
    fn the_crd_file_is_what_the_types_generate() {
        let file: serde_json::Value = serde_norway::from_str(CRD_YAML).expect("crd.yaml parses");
        let generated = crd();
        assert!(
            file == generated,
            "artifacts/crd.yaml differs from foo::crd(); the generated CRD is:\n{}",
            serde_norway::to_string(&generated).unwrap_or_default()
        );
    }
}
