//! Object and list metadata: `TypeMeta`, `ObjectMeta`, `OwnerReference`, `ListMeta`.
//!
//! Mirrors `k8s.io/apimachinery/pkg/apis/meta/v1/types.go`. The wire format is exactly
//! Kubernetes JSON: camelCase names, Go's `omitempty` (empty strings, zero numbers, empty
//! maps and lists and absent pointers are not written), `resourceVersion` as an opaque
//! string, timestamps as RFC 3339 (see [`crate::time`]).
//!
//! Representation choices, made for caches holding 100,000 objects:
//! * Go `string` fields are `String` (empty = absent, no allocation), not `Option<String>`:
//!   `omitempty` makes the two indistinguishable on the wire anyway, and the accessors of
//!   [`crate::Object`] return `&str` either way.
//! * Go pointer fields (`deletionTimestamp`, `deletionGracePeriodSeconds`,
//!   `remainingItemCount`, `controller`, `blockOwnerDeletion`) are `Option`s.
//! * `labels` and `annotations` are `BTreeMap`s (sorted, so output is deterministic; an
//!   empty map does not allocate).
//! * `managedFields` is raw JSON text ([`ManagedFields`]).
//!
//! Differences from Go: a JSON `null` decodes to the empty value for every field (Go leaves
//! the zero value too); `creationTimestamp` is omitted when absent where Go writes `null`.
//! Unknown fields inside `metadata` are dropped (every field Kubernetes defines today is
//! known, including the deprecated `selfLink`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::managed_fields::ManagedFields;
use crate::serde_util::{is_zero_i64, null_default};
use crate::time::Time;

/// `apiVersion` and `kind`: which type a serialized object is.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeMeta {
    /// `"v1"` or `"<group>/<version>"`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub api_version: String,
    /// The kind, e.g. `Pod`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub kind: String,
}

impl TypeMeta {
    /// Builds a `TypeMeta`.
    pub fn new(api_version: impl Into<String>, kind: impl Into<String>) -> TypeMeta {
        TypeMeta {
            api_version: api_version.into(),
            kind: kind.into(),
        }
    }

    /// The `TypeMeta` of a statically known resource type.
    pub fn of<K: crate::Resource>() -> TypeMeta {
        TypeMeta::new(K::api_version(), K::KIND)
    }

    /// Whether both fields are empty.
    pub fn is_empty(&self) -> bool {
        self.api_version.is_empty() && self.kind.is_empty()
    }

    /// Parses `apiVersion` into a [`crate::GroupVersionKind`] with this kind.
    pub fn gvk(&self) -> Result<crate::GroupVersionKind, crate::GroupVersionError> {
        crate::GroupVersionKind::from_api_version_kind(&self.api_version, self.kind.clone())
    }
}

/// Metadata every persisted object carries (`metav1.ObjectMeta`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectMeta {
    /// Unique name within the namespace.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub name: String,
    /// Prefix from which the server generates a unique name when `name` is empty.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub generate_name: String,
    /// The namespace; empty for cluster-scoped objects.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub namespace: String,
    /// Deprecated and no longer set by servers; kept so objects round-trip.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub self_link: String,
    /// Server-assigned unique id.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub uid: String,
    /// Opaque version for optimistic concurrency and watch resumption.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub resource_version: String,
    /// Sequence number of the desired state (bumped by spec changes).
    #[serde(
        default,
        skip_serializing_if = "is_zero_i64",
        deserialize_with = "null_default"
    )]
    pub generation: i64,
    /// When the object was created (seconds precision on the wire).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// When graceful deletion was requested; set means "being deleted".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    /// Seconds allowed for graceful termination once deletion was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Identifying labels, matched by label selectors.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_default"
    )]
    pub labels: BTreeMap<String, String>,
    /// Non-identifying metadata.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_default"
    )]
    pub annotations: BTreeMap<String, String>,
    /// Objects this one depends on (garbage collection, controller ownership).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub owner_references: Vec<OwnerReference>,
    /// Finalizers that must be removed before the object is deleted.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub finalizers: Vec<String>,
    /// Server-side-apply field ownership, kept as raw JSON.
    #[serde(default, skip_serializing_if = "managed_fields_empty")]
    pub managed_fields: Option<ManagedFields>,
}

fn managed_fields_empty(mf: &Option<ManagedFields>) -> bool {
    mf.as_ref().is_none_or(ManagedFields::is_empty)
}

impl ObjectMeta {
    /// Metadata with a name (cluster-scoped, or namespace to be set later).
    pub fn named(name: impl Into<String>) -> ObjectMeta {
        ObjectMeta {
            name: name.into(),
            ..ObjectMeta::default()
        }
    }

    /// Metadata with a namespace and a name.
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> ObjectMeta {
        ObjectMeta {
            namespace: namespace.into(),
            name: name.into(),
            ..ObjectMeta::default()
        }
    }
}

/// A reference from an object to one of its owners (`metav1.OwnerReference`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OwnerReference {
    /// The owner's `apiVersion`.
    #[serde(default, deserialize_with = "null_default")]
    pub api_version: String,
    /// The owner's kind.
    #[serde(default, deserialize_with = "null_default")]
    pub kind: String,
    /// The owner's name (same namespace as the dependent).
    #[serde(default, deserialize_with = "null_default")]
    pub name: String,
    /// The owner's uid.
    #[serde(default, deserialize_with = "null_default")]
    pub uid: String,
    /// Whether the owner is the managing controller (at most one reference may say so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether foreground deletion of the owner waits for this dependent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

impl OwnerReference {
    /// A reference to `owner` as the controller of the object that will carry it: client-go's
    /// `metav1.NewControllerRef(owner, gvk)`, the type taken from `K`, `controller` and
    /// `blockOwnerDeletion` true. The garbage collector deletes the dependent after its
    /// owner, and the owner's controller is the one that adopts it (see
    /// [`Object::is_controlled_by`](crate::Object::is_controlled_by)).
    ///
    /// ```
    /// use clientgo_apimachinery::{Object, ObjectMeta, OwnerReference, Resource, impl_object};
    ///
    /// #[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
    /// struct Foo { metadata: ObjectMeta }
    /// impl_object!(Foo);
    /// impl Resource for Foo {
    ///     const GROUP: &'static str = "samplecontroller.k8s.io";
    ///     const VERSION: &'static str = "v1alpha1";
    ///     const KIND: &'static str = "Foo";
    ///     const PLURAL: &'static str = "foos";
    ///     const NAMESPACED: bool = true;
    /// }
    ///
    /// let mut foo = Foo::default();
    /// foo.metadata.name = "example".into();
    /// foo.metadata.uid = "6f0b1c1e".into();
    /// let owner = OwnerReference::controller_of(&foo);
    /// assert_eq!(owner.api_version, "samplecontroller.k8s.io/v1alpha1");
    /// assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("Foo", "example"));
    /// assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
    /// ```
    pub fn controller_of<K: crate::Resource + crate::Object + ?Sized>(owner: &K) -> OwnerReference {
        OwnerReference {
            api_version: K::api_version().into_owned(),
            kind: K::KIND.to_owned(),
            name: owner.name().to_owned(),
            uid: owner.uid().to_owned(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }
}

/// Metadata of a list (`metav1.ListMeta`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// Deprecated; kept so lists round-trip.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub self_link: String,
    /// The collection's version: where a subsequent watch starts.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub resource_version: String,
    /// Token for fetching the next page; empty on the last page.
    #[serde(
        default,
        rename = "continue",
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub continue_: String,
    /// Estimated number of items after this page, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
}

impl ListMeta {
    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self.self_link.is_empty()
            && self.resource_version.is_empty()
            && self.continue_.is_empty()
            && self.remaining_item_count.is_none()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_meta_stays_compact() {
        // Six strings, two optional times, labels, annotations, two vectors, raw
        // managedFields: a regression guard for the 100,000-object caches.
        assert!(
            std::mem::size_of::<ObjectMeta>() <= 320,
            "{}",
            std::mem::size_of::<ObjectMeta>()
        );
        assert_eq!(std::mem::size_of::<Option<ManagedFields>>(), 16);
    }

    #[test]
    fn empty_meta_serializes_to_empty_object() {
        assert_eq!(serde_json::to_string(&ObjectMeta::default()).unwrap(), "{}");
        assert_eq!(serde_json::to_string(&ListMeta::default()).unwrap(), "{}");
        assert_eq!(serde_json::to_string(&TypeMeta::default()).unwrap(), "{}");
        let mut m = ObjectMeta::named("x");
        m.managed_fields = Some(ManagedFields::from_json("[]").unwrap());
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            r#"{"name":"x"}"#,
            "omitempty"
        );
    }

    /// Every field, in Go's field order, as a server writes it.
    const FULL: &str = concat!(
        r#"{"name":"web-0","generateName":"web-","namespace":"default","#,
        r#""selfLink":"/api/v1/namespaces/default/pods/web-0","#,
        r#""uid":"3c9b5a8e-0c32-4a6f-9d84-8a2b3f1e6c11","resourceVersion":"12345","#,
        r#""generation":3,"creationTimestamp":"2024-01-02T03:04:05Z","#,
        r#""deletionTimestamp":"2024-01-02T04:00:00Z","deletionGracePeriodSeconds":30,"#,
        r#""labels":{"app":"web","tier":"frontend"},"annotations":{"note":"hello"},"#,
        r#""ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","#,
        r#""uid":"9f1c","controller":true,"blockOwnerDeletion":true}],"#,
        r#""finalizers":["example.com/cleanup"],"#,
        r#""managedFields":[{"manager":"kube-controller-manager","operation":"Update","#,
        r#""apiVersion":"v1","time":"2024-01-02T03:04:05Z","fieldsType":"FieldsV1","#,
        r#""fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:app":{}}}}}]}"#
    );

    #[test]
    fn full_object_meta_round_trip() {
        let meta: ObjectMeta = serde_json::from_str(FULL).unwrap();
        assert_eq!(meta.name, "web-0");
        assert_eq!(meta.generation, 3);
        assert_eq!(meta.resource_version, "12345");
        assert_eq!(
            meta.creation_timestamp.unwrap().to_string(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(meta.deletion_grace_period_seconds, Some(30));
        assert_eq!(meta.labels["tier"], "frontend");
        assert_eq!(meta.owner_references[0].controller, Some(true));
        assert_eq!(meta.finalizers, ["example.com/cleanup"]);
        // Byte for byte, including the managedFields text (whose keys are not sorted).
        assert_eq!(serde_json::to_string(&meta).unwrap(), FULL);
        let input: serde_json::Value = serde_json::from_str(FULL).unwrap();
        assert_eq!(serde_json::to_value(&meta).unwrap(), input);
        // Pretty input keeps its managedFields text verbatim.
        let pretty = serde_json::to_string_pretty(&input).unwrap();
        let again: ObjectMeta = serde_json::from_str(&pretty).unwrap();
        assert_eq!(
            again.managed_fields.unwrap().entries().unwrap(),
            meta.managed_fields.unwrap().entries().unwrap()
        );
    }

    #[test]
    fn nulls_decode_as_empty() {
        let meta: ObjectMeta = serde_json::from_str(
            r#"{"name":null,"labels":null,"finalizers":null,"creationTimestamp":null,"generation":null,"managedFields":null}"#,
        )
        .unwrap();
        assert_eq!(meta, ObjectMeta::default());
    }

    #[test]
    fn malformed_meta_is_an_error_naming_the_problem() {
        let err = serde_json::from_str::<ObjectMeta>(r#"{"labels":{"a":1}}"#).unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid type: integer `1`, expected a string"),
            "{err}"
        );
        let err =
            serde_json::from_str::<ObjectMeta>(r#"{"creationTimestamp":"soon"}"#).unwrap_err();
        assert!(
            err.to_string().contains("invalid RFC 3339 time \"soon\""),
            "{err}"
        );
        let err = serde_json::from_str::<ObjectMeta>(r#"{"managedFields":{}}"#).unwrap_err();
        assert!(
            err.to_string()
                .contains("managedFields must be a JSON array"),
            "{err}"
        );
    }

    #[test]
    fn owner_reference_always_writes_identity_fields() {
        let r = OwnerReference::default();
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"apiVersion":"","kind":"","name":"","uid":""}"#
        );
    }

    #[test]
    fn list_meta_continue() {
        let lm: ListMeta = serde_json::from_str(
            r#"{"resourceVersion":"77","continue":"tok","remainingItemCount":5}"#,
        )
        .unwrap();
        assert_eq!(lm.continue_, "tok");
        assert_eq!(lm.remaining_item_count, Some(5));
        assert_eq!(
            serde_json::to_string(&lm).unwrap(),
            r#"{"resourceVersion":"77","continue":"tok","remainingItemCount":5}"#
        );
    }
}
