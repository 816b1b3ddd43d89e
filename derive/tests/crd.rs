//! `#[derive(CustomResource)]`: the root type, its `Resource`/`Object` impls, the CRD (checked
//! against the sample-controller's `artifacts/crd.yaml` and decoded as
//! k8s-openapi's `CustomResourceDefinition`), and merging versions.

use clientgo_apimachinery::{Object, ObjectMut, Resource, Time};
use clientgo_derive::{CrdSchema, CustomResource, MergeError, merge_crds, merge_crds_storing};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The sample-controller's Foo, with the attributes that generate its `artifacts/crd.yaml`.
mod foo {
    use super::*;

    /// What a Foo asks for.
    #[derive(
        CustomResource, CrdSchema, Debug, Clone, Default, PartialEq, Serialize, Deserialize,
    )]
    #[resource(
        group = "samplecontroller.k8s.io", version = "v1alpha1", kind = "Foo", namespaced,
        status = "FooStatus", spec_default, max_description_len = 0, derive = ["PartialEq"],
        annotation(name = "api-approved.kubernetes.io", value = "unapproved, experimental-only; please get an approval from Kubernetes API reviewers if you're trying to develop a CRD in the *.k8s.io or *.kubernetes.io groups"),
        printcolumn(name = "Deployment", type = "string", json_path = ".spec.deploymentName"),
        printcolumn(name = "Desired", type = "integer", json_path = ".spec.replicas"),
        printcolumn(name = "Available", type = "integer", json_path = ".status.availableReplicas"),
        printcolumn(name = "Ready", type = "string", json_path = r#".status.conditions[?(@.type=="Ready")].status"#),
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

    /// A status condition.
    #[derive(CrdSchema, Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Condition {
        /// The aspect reported on.
        #[serde(rename = "type")]
        pub type_: String,
        /// `True`, `False` or `Unknown`.
        #[schema(enum_values = ["True", "False", "Unknown"])]
        pub status: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub reason: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        pub message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub last_transition_time: Option<Time>,
        #[serde(default, skip_serializing_if = "is_zero")]
        pub observed_generation: i64,
    }

    fn is_zero(value: &i64) -> bool {
        *value == 0
    }
}

use foo::{Foo, FooSpec, FooStatus};

fn sample_crd_yaml() -> Value {
    let text = include_str!("../../sample-controller/artifacts/crd.yaml");
    serde_norway::from_str(text).expect("crd.yaml parses")
}

#[test]
fn the_sample_controller_foo_generates_its_crd_yaml() {
    assert_eq!(Foo::crd(), sample_crd_yaml());
    let schema = Foo::schema();
    assert_eq!(schema["properties"]["metadata"], json!({"type": "object"}));
    assert_eq!(
        schema["properties"]["spec"]["properties"]["replicas"]["format"],
        "int32"
    );
}

#[test]
fn the_crd_decodes_as_k8s_openapi_custom_resource_definition() {
    let crd: CustomResourceDefinition = serde_json::from_value(Foo::crd()).unwrap();
    assert_eq!(
        crd.metadata.name.as_deref(),
        Some("foos.samplecontroller.k8s.io")
    );
    assert_eq!(crd.spec.names.list_kind.as_deref(), Some("FooList"));
    assert_eq!(crd.spec.scope, "Namespaced");
    let version = &crd.spec.versions[0];
    assert!(version.served && version.storage);
    assert!(version.subresources.as_ref().unwrap().status.is_some());
    assert_eq!(
        version.additional_printer_columns.as_ref().unwrap().len(),
        4
    );
    let schema = version
        .schema
        .as_ref()
        .unwrap()
        .open_api_v3_schema
        .as_ref()
        .unwrap();
    let spec = &schema.properties.as_ref().unwrap()["spec"];
    assert_eq!(
        spec.required.as_deref(),
        Some(&["deploymentName".to_owned()][..])
    );
    let replicas = &spec.properties.as_ref().unwrap()["replicas"];
    // k8s-openapi's bounds are f64: 10 comes back as 10.0, nothing else changes.
    assert_eq!(
        (replicas.minimum, replicas.maximum),
        (Some(0.0), Some(10.0))
    );
    let mut back = serde_json::to_value(&crd).unwrap();
    let replicas = &mut back["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
        ["properties"]["replicas"];
    replicas["minimum"] = 0.into();
    replicas["maximum"] = 10.into();
    assert_eq!(back, Foo::crd());
}

#[test]
fn the_root_type_is_a_resource_and_an_object() {
    assert_eq!(
        (
            Foo::GROUP,
            Foo::VERSION,
            Foo::KIND,
            Foo::PLURAL,
            Foo::NAMESPACED
        ),
        ("samplecontroller.k8s.io", "v1alpha1", "Foo", "foos", true)
    );
    let mut foo = Foo::new(
        "web",
        FooSpec {
            deployment_name: "web".into(),
            replicas: Some(2),
        },
    );
    foo.set_namespace("prod".into());
    assert_eq!(foo.key(), "prod/web");
    assert_eq!(Foo::crd_name(), "foos.samplecontroller.k8s.io");
    let written = serde_json::to_value(&foo).unwrap();
    assert_eq!(
        written,
        json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
            "metadata": {"name": "web", "namespace": "prod"},
            "spec": {"deploymentName": "web", "replicas": 2},
        })
    );
    let mut read: Foo = serde_json::from_value(json!({
        "apiVersion": "samplecontroller.k8s.io/v1alpha1", "kind": "Foo",
        "metadata": {"name": "web", "namespace": "prod", "resourceVersion": "7"},
        "status": {"availableReplicas": 1},
    }))
    .unwrap();
    assert_eq!(read.resource_version(), "7");
    assert_eq!(
        read.spec,
        FooSpec::default(),
        "spec_default: an absent spec is the default"
    );
    assert_eq!(
        read.status,
        Some(FooStatus {
            available_replicas: 1,
            ..FooStatus::default()
        })
    );
    read.status = None;
    assert_ne!(read, foo, "derive = [\"PartialEq\"] on the root type");
}

/// Every other `#[resource]` item.
mod widget {
    use super::*;

    #[derive(CustomResource, CrdSchema, Debug, Clone, Serialize, Deserialize)]
    #[resource(
        group = "derive.clientgo.dev", version = "v1beta1", kind = "Policy", cluster,
        status = "PolicyStatus", shortnames = ["pol", "pols"], categories = ["all", "clientgo"],
        printcolumn(name = "Replicas", type = "integer", json_path = ".spec.replicas", description = "wanted", format = "int32", priority = 1),
        scale(spec_replicas_path = ".spec.replicas", status_replicas_path = ".status.replicas", label_selector_path = ".status.selector"),
        selectable_field = ".spec.color",
        deprecated = "use v1", served = true, storage = false,
        validation(rule = "self.metadata.name.startsWith('p')", message = "names start with p"),
        label(name = "app", value = "clientgo"),
    )]
    pub struct PolicySpec {
        pub replicas: i32,
        pub color: String,
    }

    #[derive(CrdSchema, Debug, Clone, Serialize, Deserialize)]
    pub struct PolicyStatus {
        pub replicas: i32,
        pub selector: String,
    }
}

#[test]
fn every_resource_item_reaches_the_crd() {
    use widget::Policy;
    assert_eq!((Policy::PLURAL, Policy::NAMESPACED), ("policies", false));
    let crd = Policy::crd();
    assert_eq!(crd["metadata"]["labels"], json!({"app": "clientgo"}));
    assert_eq!(
        crd["spec"]["names"],
        json!({"kind": "Policy", "listKind": "PolicyList", "plural": "policies", "singular": "policy",
               "shortNames": ["pol", "pols"], "categories": ["all", "clientgo"]})
    );
    assert_eq!(crd["spec"]["scope"], "Cluster");
    let version = &crd["spec"]["versions"][0];
    assert_eq!(
        (
            &version["served"],
            &version["storage"],
            &version["deprecated"],
            &version["deprecationWarning"]
        ),
        (&json!(true), &json!(false), &json!(true), &json!("use v1"))
    );
    assert_eq!(
        version["subresources"],
        json!({"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas", "labelSelectorPath": ".status.selector"}})
    );
    assert_eq!(
        version["additionalPrinterColumns"],
        json!([{"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "description": "wanted", "format": "int32", "priority": 1}])
    );
    assert_eq!(
        version["selectableFields"],
        json!([{"jsonPath": ".spec.color"}])
    );
    let root = &version["schema"]["openAPIV3Schema"];
    assert_eq!(root["required"], json!(["spec"]));
    assert_eq!(
        root["x-kubernetes-validations"],
        json!([{"rule": "self.metadata.name.startsWith('p')", "message": "names start with p"}])
    );
    let _: CustomResourceDefinition = serde_json::from_value(crd).unwrap();
}

/// Two versions of one kind.
mod v1 {
    use super::*;
    #[derive(CustomResource, CrdSchema, Debug, Clone, Serialize, Deserialize)]
    #[resource(group = "derive.clientgo.dev", version = "v1", kind = "Gadget")]
    pub struct GadgetSpec {
        pub size: i32,
    }
}

mod v2 {
    use super::*;
    #[derive(CustomResource, CrdSchema, Debug, Clone, Serialize, Deserialize)]
    #[resource(
        group = "derive.clientgo.dev",
        version = "v2",
        kind = "Gadget",
        storage = false
    )]
    pub struct GadgetSpec {
        pub size: i32,
        #[serde(default)]
        pub color: String,
    }

    #[derive(CustomResource, CrdSchema, Debug, Clone, Serialize, Deserialize)]
    #[resource(
        group = "derive.clientgo.dev",
        version = "v2",
        kind = "Gadget",
        cluster,
        root = "OtherScope"
    )]
    pub struct OtherScopeSpec {
        pub size: i32,
    }
}

fn versions(crd: &Value) -> Vec<(String, bool, bool)> {
    crd["spec"]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_owned(),
                v["served"].as_bool().unwrap(),
                v["storage"].as_bool().unwrap(),
            )
        })
        .collect()
}

#[test]
fn versions_merge_with_exactly_one_storage_version() {
    let merged = merge_crds([v1::Gadget::crd(), v2::Gadget::crd()]).unwrap();
    assert_eq!(
        versions(&merged),
        [("v1".into(), true, true), ("v2".into(), true, false)]
    );
    assert_eq!(merged["spec"]["conversion"], json!({"strategy": "None"}));
    assert!(merged["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["color"].is_object());
    let typed: CustomResourceDefinition = serde_json::from_value(merged).unwrap();
    assert_eq!(typed.spec.versions.len(), 2);

    let stored_v2 = merge_crds_storing([v1::Gadget::crd(), v2::Gadget::crd()], "v2").unwrap();
    assert_eq!(
        versions(&stored_v2),
        [("v1".into(), true, false), ("v2".into(), true, true)]
    );
}

#[test]
fn merging_refuses_what_is_not_one_kind_with_one_storage_version() {
    assert_eq!(merge_crds([]), Err(MergeError::Empty));
    let mut v2_stored = v2::Gadget::crd();
    v2_stored["spec"]["versions"][0]["storage"] = true.into();
    let error = merge_crds([v1::Gadget::crd(), v2_stored]).unwrap_err();
    assert_eq!(
        error,
        MergeError::SeveralStorageVersions(vec!["v1".into(), "v2".into()])
    );
    assert_eq!(
        error.to_string(),
        "several versions are the storage version (v1, v2): exactly one must be"
    );
    assert_eq!(
        merge_crds([v2::Gadget::crd()]),
        Err(MergeError::NoStorageVersion)
    );
    assert_eq!(
        merge_crds([v1::Gadget::crd(), v1::Gadget::crd()]),
        Err(MergeError::DuplicateVersion("v1".into()))
    );
    assert_eq!(
        merge_crds([v1::Gadget::crd(), v2::OtherScope::crd()]),
        Err(MergeError::Mismatch {
            field: "spec.scope",
            first: "Namespaced".into(),
            other: "Cluster".into()
        })
    );
    assert!(matches!(
        merge_crds([v1::Gadget::crd(), Foo::crd()]),
        Err(MergeError::Mismatch {
            field: "metadata.name",
            ..
        })
    ));
    assert_eq!(
        merge_crds_storing([v1::Gadget::crd()], "v9"),
        Err(MergeError::UnknownStorageVersion("v9".into()))
    );
    assert!(matches!(
        merge_crds([json!({"kind": "Pod"})]),
        Err(MergeError::NotACrd(_))
    ));
}

#[test]
fn max_description_len_cuts_descriptions_but_not_properties_named_description() {
    #[derive(CustomResource, CrdSchema, Debug, Clone, Serialize, Deserialize)]
    #[resource(
        group = "derive.clientgo.dev",
        version = "v1",
        kind = "Note",
        max_description_len = 4
    )]
    struct NoteSpec {
        /// A long description.
        description: String,
    }
    let schema = Note::schema();
    assert_eq!(
        schema["properties"]["spec"]["properties"]["description"],
        json!({"type": "string", "description": "A lo"})
    );
}
