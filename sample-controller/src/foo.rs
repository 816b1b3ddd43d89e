//! The Foo custom resource: `samplecontroller.k8s.io/v1alpha1`, as kubernetes/sample-controller
//! defines it, plus the status fields Kubernetes API conventions ask for.
//!
//! A Foo asks for a Deployment named `spec.deploymentName` with `spec.replicas` replicas. The
//! controller reports back in `status`: how many replicas are available, which generation of
//! the spec it has acted on (`observedGeneration`), and a `Ready` condition.
//!
//! The type is a plain serde struct implementing the project's `Resource` and `Object` traits:
//! that is all the REST client, informers and listers need to work with it.

use clientgo_apimachinery::{ApiResource, DynamicObject, ObjectMeta, Resource, Time, impl_object};
use clientgo_rest::{DynamicClient, PostParams, RestClient};
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
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FooSpec {
    /// The Deployment to create and own.
    #[serde(default)]
    pub deployment_name: String,
    /// How many replicas it should run (the Deployment's default, 1, when unset).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
}

/// What the controller has done about a Foo.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
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
    pub conditions: Vec<Condition>,
}

/// A status condition, as Kubernetes API conventions define it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Condition {
    /// The aspect reported on, e.g. `Ready`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
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

/// The Foo CRD, as `artifacts/crd.yaml` defines it.
pub const CRD_YAML: &str = include_str!("../artifacts/crd.yaml");

/// Creates the Foo CRD from `artifacts/crd.yaml`, as `kubectl apply -f` would.
pub async fn install_crd(client: &RestClient) -> Result<(), String> {
    let crd: DynamicObject =
        serde_norway::from_str(CRD_YAML).map_err(|e| format!("artifacts/crd.yaml: {e}"))?;
    let crds = DynamicClient::from_api_resource(
        client,
        &ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
            namespaced: false,
        },
        None,
    );
    crds.create(&crd, &PostParams::default())
        .await
        .map_err(|e| format!("creating the CRD: {e}"))?;
    Ok(())
}
