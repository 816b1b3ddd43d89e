//! CustomResourceDefinitions from Rust types: what controller-tools' `controller-gen crd`
//! does for Go types and their `+kubebuilder` markers, and what kube-rs'
//! `#[derive(CustomResource)]` does, for clientgo-rs.
//!
//! * `#[derive(CustomResource)]` on a *spec* type generates the root type (`apiVersion`,
//!   `kind`, `metadata`, `spec`, `status`), its `Resource`, `Object` and `ObjectMut` impls
//!   (what `impl_object!` writes) and the [`CustomResource`] trait, whose `crd()` is the
//!   CustomResourceDefinition as JSON.
//! * `#[derive(CrdSchema)]` writes a type's structural OpenAPI v3 schema ([`CrdSchema`]),
//!   honouring its serde attributes and the `#[schema(...)]` validations.
//! * [`merge_crds`] puts the versions of one kind into one CRD, with exactly one storage
//!   version.
//! * [`rbac`] is controller-tools' other generator: the `ClusterRole`/`Role` a controller
//!   needs, from the rules it declares beside its code (`+kubebuilder:rbac` markers in Go).
//!
//! ```
//! use clientgo_derive::{CrdSchema, CustomResource};
//! use serde::{Deserialize, Serialize};
//!
//! /// What a Foo asks for.
//! #[derive(CustomResource, CrdSchema, Serialize, Deserialize, Clone, Debug)]
//! #[resource(group = "samplecontroller.k8s.io", version = "v1alpha1", kind = "Foo",
//!            namespaced, status = "FooStatus", shortnames = ["fo"],
//!            printcolumn(name = "Desired", type = "integer", json_path = ".spec.replicas"))]
//! #[serde(rename_all = "camelCase")]
//! pub struct FooSpec {
//!     /// The Deployment to create and own.
//!     #[schema(min_length = 1)]
//!     pub deployment_name: String,
//!     /// How many replicas it should run.
//!     #[schema(minimum = 0, maximum = 10, default = 1)]
//!     #[serde(default, skip_serializing_if = "Option::is_none")]
//!     pub replicas: Option<i32>,
//! }
//!
//! /// What the controller has done about a Foo.
//! #[derive(CrdSchema, Serialize, Deserialize, Clone, Debug, Default)]
//! #[serde(rename_all = "camelCase")]
//! pub struct FooStatus {
//!     /// Available replicas of the owned Deployment.
//!     #[serde(default)]
//!     pub available_replicas: i32,
//! }
//!
//! let crd = Foo::crd();
//! assert_eq!(crd["metadata"]["name"], "foos.samplecontroller.k8s.io");
//! let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
//! assert_eq!(schema["properties"]["spec"]["required"][0], "deploymentName");
//! assert_eq!(schema["properties"]["spec"]["properties"]["replicas"]["maximum"], 10);
//!
//! let foo = Foo::new("web", FooSpec { deployment_name: "web".into(), replicas: Some(2) });
//! assert_eq!(foo.api_version, "samplecontroller.k8s.io/v1alpha1");
//! ```
//!
//! # Why an own schema trait, not schemars
//!
//! kube-derive builds on schemars and then rewrites its JSON Schema into a structural one
//! (hoisting `oneOf` branches, dropping `$ref`s, patching `nullable`). A trait of our own
//! writes the structural form directly: Kubernetes' extensions (`x-kubernetes-*`, CEL rules,
//! list types) are first-class attributes rather than `schema_with` functions, what a
//! structural schema cannot express is refused where it is written (a compile error when
//! the derive can see it, a panic naming the type when only the schemas show it) instead
//! of producing a CRD the API server rejects, and there is no second attribute dialect to
//! follow (schemars' own) beside serde's. The cost: third-party types need a hand-written
//! impl (the `k8s-openapi` feature covers `IntOrString`, `Quantity`, `Time`, `Condition`
//! and `LabelSelector`).
//!
//! # Why JSON, not k8s-openapi's `CustomResourceDefinition`
//!
//! A library crate may not pick k8s-openapi's Kubernetes version (its docs ask the final
//! binary to), and a typed CRD would force one on every user of the derive. The CRD is a
//! `serde_json::Value`, which `serde_json::from_value` turns into k8s-openapi's type where
//! wanted (the tests do); the `k8s-openapi` feature only adds schemas for its types.
//!
//! # Attributes
//!
//! `#[resource(...)]` (on the spec type, with `CustomResource`): `group`, `version`, `kind`
//! (default: the type's name without `Spec`), `plural` (default: English rules on the
//! lower-cased kind), `singular`, `namespaced` (the default) or `cluster`, `status = "Type"`
//! (also turns the status subresource on), `shortnames = [..]`, `categories = [..]`,
//! `printcolumn(name, type, json_path, description?, format?, priority?)` (repeatable),
//! `scale(spec_replicas_path, status_replicas_path, label_selector_path?)`,
//! `selectable_field = ".spec.x"` (repeatable), `served = bool`, `storage = bool`,
//! `deprecated` / `deprecated = "warning"`, `validation(rule, message?, message_expression?,
//! reason?, field_path?)` on the whole object, `annotation(name, value)` and
//! `label(name, value)` of the CRD, `root = "Name"` (default: the kind), `derive = [..]`
//! (extra derives of the root type), `spec_default` (`spec` not required; the spec type
//! implements `Default`), `max_description_len = N` (controller-tools' `crd:maxDescLen`).
//! The root type derives `Debug`, `Clone`, `Serialize` and `Deserialize`, so the spec and
//! status types implement them too. Clippy's `duplicated_attributes` may take two columns of
//! one type (`type = "integer"` twice) for a repeated attribute: allow it there.
//!
//! `#[schema(...)]` (on a field, or on a type for its own schema): `minimum`, `maximum`,
//! `exclusive_minimum`, `exclusive_maximum`, `multiple_of`, `min_length`, `max_length`,
//! `pattern`, `format`, `enum_values = [..]`, `min_items`, `max_items`, `min_properties`,
//! `max_properties`, `list_type = "atomic" | "set" | "map"`, `list_map_keys = [..]`,
//! `map_type`, `default = <literal, expression or json!(..)>`, `validation(...)` (CEL, as
//! above; repeatable), `preserve_unknown_fields`, `embedded_resource`, `int_or_string`,
//! `nullable` / `nullable = false`, `required` / `required = false`, `description = ".."`
//! (default: the doc comment), `items(...)` and `values(...)` (the same items, applied to an
//! array's items or a map's values), `schema_with = path` (a `fn() -> serde_json::Value`
//! replacing the field's schema).
//!
//! serde: `rename`, `rename_all`, `rename_all_fields`, `default`, `skip`,
//! `skip_serializing_if`, `flatten` (of structs), `transparent`, `tag` (internally tagged
//! enums), `untagged`; `alias`, `deserialize_with`, `bound`, `borrow`, `other`,
//! `deny_unknown_fields`, `from` and `try_from` do not change what is written and are
//! ignored. Refused with a compile error: `serialize_with` / `with` without `schema_with`
//! (the written shape is unknown), `into`, adjacently tagged enums (`tag` + `content`),
//! `flatten` of a map or `serde_json::Value` (a structural schema cannot have `properties`
//! and `additionalProperties` together), unit and data variants mixed in an externally
//! tagged enum (a string or an object: one type only), tuple structs and variants of more
//! than one field (an array has one `items` schema), unions.

#![deny(missing_docs)]

extern crate self as clientgo_derive;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;
mod crd;
mod enums;
#[cfg(feature = "k8s-openapi")]
mod k8s;
mod merge;
pub mod rbac;
mod schema;

pub use clientgo_derive_macros::{CrdSchema, CustomResource};
pub use crd::{CustomResource, PrinterColumn, ResourceInfo, Scale, ValidationRule};
#[cfg(feature = "k8s-openapi")]
pub use k8s::QUANTITY_PATTERN;
pub use merge::{MergeError, merge_crds, merge_crds_storing};
pub use schema::{CrdFlatten, CrdMapKey, CrdSchema};
