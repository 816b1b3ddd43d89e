//! The metadata accessors the machinery needs: [`Object`] and [`ObjectMut`].
//!
//! Plays the role of client-go's `metav1.Object` interface (`meta.Accessor`): caches,
//! informers, work queues and the garbage collector look at any object only through it.
//!
//! Where it differs from Go, and why: accessors return *borrowed* data (`&str`, a [`MapRef`] view of a map,
//! `&[String]`, an iterator of borrowed [`OwnerRef`] views) and `Copy` values ([`Time`]),
//! so that our [`ObjectMeta`] (plain `String`s) and k8s-openapi's `ObjectMeta` (`Option`s
//! everywhere, its own `OwnerReference` and a jiff-based `Time`) both implement it without
//! conversion or allocation. Absent strings read as `""`, absent maps and lists as empty,
//! as Go's zero values do. The trait is object safe (`&dyn Object` works).
//!
//! Implementations: [`ObjectMeta`] itself, [`crate::DynamicObject`], any type with a
//! `metadata: ObjectMeta` field through [`impl_object!`](crate::impl_object), and, behind
//! the `k8s-openapi` feature, every k8s-openapi type whose metadata is an `ObjectMeta`.
//!
//! Also here: the cache key of an object (`namespace/name`, client-go's
//! `MetaNamespaceKeyFunc`) and its inverse.

use std::collections::BTreeMap;

use crate::map_ref::MapRef;
use crate::meta::{ObjectMeta, OwnerReference};
use crate::owner_refs::{OwnerRef, OwnerRefs};
use crate::time::Time;

/// Read access to an object's metadata.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes object known to clientgo (no `Object` impl)",
    note = "k8s-openapi types (Pod, Deployment, ConfigMap, ...) implement it with the `k8s-openapi` feature of clientgo-apimachinery (or of the clientgo crate)",
    note = "your own types implement it by hand or are used as `DynamicObject`"
)]
pub trait Object {
    /// `metadata.name`.
    fn name(&self) -> &str;
    /// `metadata.generateName`.
    fn generate_name(&self) -> &str;
    /// `metadata.namespace`; `""` for cluster-scoped objects.
    fn namespace(&self) -> &str;
    /// `metadata.uid`.
    fn uid(&self) -> &str;
    /// `metadata.resourceVersion`.
    fn resource_version(&self) -> &str;
    /// `metadata.generation`; 0 when absent.
    fn generation(&self) -> i64;
    /// `metadata.creationTimestamp`.
    fn creation_timestamp(&self) -> Option<Time>;
    /// `metadata.deletionTimestamp`: set once deletion was requested.
    fn deletion_timestamp(&self) -> Option<Time>;
    /// `metadata.deletionGracePeriodSeconds`.
    fn deletion_grace_period_seconds(&self) -> Option<i64>;
    /// `metadata.labels`.
    fn labels(&self) -> MapRef<'_>;
    /// `metadata.annotations`.
    fn annotations(&self) -> MapRef<'_>;
    /// `metadata.ownerReferences`, as borrowed views.
    fn owner_references(&self) -> OwnerRefs<'_>;
    /// `metadata.finalizers`.
    fn finalizers(&self) -> &[String];

    /// The cache key: `namespace/name`, or `name` for cluster-scoped objects.
    fn key(&self) -> String {
        object_key(self.namespace(), self.name())
    }

    /// The owner reference with `controller: true`, if any.
    fn controller_ref(&self) -> Option<OwnerRef<'_>> {
        self.owner_references().find(OwnerRef::is_controller)
    }

    /// Whether `owner` is this object's controller (its controller reference names `owner`'s
    /// uid): client-go's `metav1.IsControlledBy`. A controller acts only on the dependents
    /// it controls, never on a same-named object someone else made.
    fn is_controlled_by<O: Object + ?Sized>(&self, owner: &O) -> bool
    where
        Self: Sized,
    {
        self.controller_ref().is_some_and(|r| r.uid == owner.uid())
    }

    /// Whether deletion was requested (a deletion timestamp is set).
    fn is_being_deleted(&self) -> bool {
        self.deletion_timestamp().is_some()
    }
}

/// Write access to the metadata fields the server and controllers set.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes object known to clientgo (no `ObjectMut` impl)",
    note = "k8s-openapi types (Pod, Deployment, ConfigMap, ...) implement it with the `k8s-openapi` feature of clientgo-apimachinery (or of the clientgo crate)",
    note = "your own types implement it by hand or are used as `DynamicObject`"
)]
pub trait ObjectMut: Object {
    /// Sets `metadata.name`.
    fn set_name(&mut self, name: String);
    /// Sets `metadata.namespace`.
    fn set_namespace(&mut self, namespace: String);
    /// Sets `metadata.uid`.
    fn set_uid(&mut self, uid: String);
    /// Sets `metadata.resourceVersion`.
    fn set_resource_version(&mut self, resource_version: String);
    /// Sets `metadata.generation`.
    fn set_generation(&mut self, generation: i64);
    /// Sets `metadata.creationTimestamp`.
    fn set_creation_timestamp(&mut self, time: Option<Time>);
    /// Sets `metadata.deletionTimestamp`.
    fn set_deletion_timestamp(&mut self, time: Option<Time>);
    /// Sets `metadata.deletionGracePeriodSeconds`.
    fn set_deletion_grace_period_seconds(&mut self, seconds: Option<i64>);
    /// Replaces `metadata.ownerReferences`.
    fn set_owner_references(&mut self, refs: Vec<OwnerReference>);
    /// `metadata.labels`, for editing.
    fn labels_mut(&mut self) -> &mut BTreeMap<String, String>;
    /// `metadata.annotations`, for editing.
    fn annotations_mut(&mut self) -> &mut BTreeMap<String, String>;
    /// `metadata.finalizers`, for editing.
    fn finalizers_mut(&mut self) -> &mut Vec<String>;
    /// Drops `metadata.managedFields` (an informer transform that saves memory).
    fn clear_managed_fields(&mut self);
}

/// The cache key for a namespace and name: `namespace/name`, or `name` when the namespace
/// is empty (client-go's `MetaNamespaceKeyFunc`).
pub fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        let mut key = String::with_capacity(namespace.len() + 1 + name.len());
        key.push_str(namespace);
        key.push('/');
        key.push_str(name);
        key
    }
}

/// A key that [`split_key`] cannot split.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected key format {key:?}: expected \"name\" or \"namespace/name\"")]
pub struct KeyError {
    /// The rejected key.
    pub key: String,
}

/// Splits a cache key into `(namespace, name)`; the namespace is `""` for cluster-scoped
/// keys (client-go's `SplitMetaNamespaceKey`, which also accepts empty parts such as
/// `"/x"`; we reject those, since [`object_key`] never produces them).
pub fn split_key(key: &str) -> Result<(&str, &str), KeyError> {
    match key.split_once('/') {
        None if !key.is_empty() => Ok(("", key)),
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns, name))
        }
        _ => Err(KeyError {
            key: key.to_owned(),
        }),
    }
}

impl Object for ObjectMeta {
    fn name(&self) -> &str {
        &self.name
    }
    fn generate_name(&self) -> &str {
        &self.generate_name
    }
    fn namespace(&self) -> &str {
        &self.namespace
    }
    fn uid(&self) -> &str {
        &self.uid
    }
    fn resource_version(&self) -> &str {
        &self.resource_version
    }
    fn generation(&self) -> i64 {
        self.generation
    }
    fn creation_timestamp(&self) -> Option<Time> {
        self.creation_timestamp
    }
    fn deletion_timestamp(&self) -> Option<Time> {
        self.deletion_timestamp
    }
    fn deletion_grace_period_seconds(&self) -> Option<i64> {
        self.deletion_grace_period_seconds
    }
    fn labels(&self) -> MapRef<'_> {
        MapRef::from(&self.labels)
    }
    fn annotations(&self) -> MapRef<'_> {
        MapRef::from(&self.annotations)
    }
    fn owner_references(&self) -> OwnerRefs<'_> {
        OwnerRefs::new(&self.owner_references)
    }
    fn finalizers(&self) -> &[String] {
        &self.finalizers
    }
}

impl ObjectMut for ObjectMeta {
    fn set_name(&mut self, name: String) {
        self.name = name;
    }
    fn set_namespace(&mut self, namespace: String) {
        self.namespace = namespace;
    }
    fn set_uid(&mut self, uid: String) {
        self.uid = uid;
    }
    fn set_resource_version(&mut self, resource_version: String) {
        self.resource_version = resource_version;
    }
    fn set_generation(&mut self, generation: i64) {
        self.generation = generation;
    }
    fn set_creation_timestamp(&mut self, time: Option<Time>) {
        self.creation_timestamp = time;
    }
    fn set_deletion_timestamp(&mut self, time: Option<Time>) {
        self.deletion_timestamp = time;
    }
    fn set_deletion_grace_period_seconds(&mut self, seconds: Option<i64>) {
        self.deletion_grace_period_seconds = seconds;
    }
    fn set_owner_references(&mut self, refs: Vec<OwnerReference>) {
        self.owner_references = refs;
    }
    fn labels_mut(&mut self) -> &mut BTreeMap<String, String> {
        &mut self.labels
    }
    fn annotations_mut(&mut self) -> &mut BTreeMap<String, String> {
        &mut self.annotations
    }
    fn finalizers_mut(&mut self) -> &mut Vec<String> {
        &mut self.finalizers
    }
    fn clear_managed_fields(&mut self) {
        self.managed_fields = None;
    }
}

/// Implements [`Object`] and [`ObjectMut`] for a type by delegating to a field holding our
/// [`ObjectMeta`] (`metadata` unless named).
///
/// ```
/// use clientgo_apimachinery::{impl_object, Object, ObjectMeta};
///
/// struct Widget {
///     metadata: ObjectMeta,
///     size: u32,
/// }
/// impl_object!(Widget);
///
/// let w = Widget { metadata: ObjectMeta::namespaced("prod", "w1"), size: 3 };
/// assert_eq!(w.key(), "prod/w1");
/// ```
#[macro_export]
macro_rules! impl_object {
    // `impl_object!(@generic [K: Bound] Type<K>, field)`: a generic type.
    (@generic [$($gen:tt)*] $ty:ty, $field:ident) => {
        impl<$($gen)*> $crate::Object for $ty {
            fn name(&self) -> &str {
                $crate::Object::name(&self.$field)
            }
            fn generate_name(&self) -> &str {
                $crate::Object::generate_name(&self.$field)
            }
            fn namespace(&self) -> &str {
                $crate::Object::namespace(&self.$field)
            }
            fn uid(&self) -> &str {
                $crate::Object::uid(&self.$field)
            }
            fn resource_version(&self) -> &str {
                $crate::Object::resource_version(&self.$field)
            }
            fn generation(&self) -> i64 {
                $crate::Object::generation(&self.$field)
            }
            fn creation_timestamp(&self) -> ::std::option::Option<$crate::Time> {
                $crate::Object::creation_timestamp(&self.$field)
            }
            fn deletion_timestamp(&self) -> ::std::option::Option<$crate::Time> {
                $crate::Object::deletion_timestamp(&self.$field)
            }
            fn deletion_grace_period_seconds(&self) -> ::std::option::Option<i64> {
                $crate::Object::deletion_grace_period_seconds(&self.$field)
            }
            fn labels(&self) -> $crate::MapRef<'_> {
                $crate::Object::labels(&self.$field)
            }
            fn annotations(&self) -> $crate::MapRef<'_> {
                $crate::Object::annotations(&self.$field)
            }
            fn owner_references(&self) -> $crate::OwnerRefs<'_> {
                $crate::Object::owner_references(&self.$field)
            }
            fn finalizers(&self) -> &[String] {
                $crate::Object::finalizers(&self.$field)
            }
        }

        impl<$($gen)*> $crate::ObjectMut for $ty {
            fn set_name(&mut self, name: String) {
                $crate::ObjectMut::set_name(&mut self.$field, name)
            }
            fn set_namespace(&mut self, namespace: String) {
                $crate::ObjectMut::set_namespace(&mut self.$field, namespace)
            }
            fn set_uid(&mut self, uid: String) {
                $crate::ObjectMut::set_uid(&mut self.$field, uid)
            }
            fn set_resource_version(&mut self, resource_version: String) {
                $crate::ObjectMut::set_resource_version(&mut self.$field, resource_version)
            }
            fn set_generation(&mut self, generation: i64) {
                $crate::ObjectMut::set_generation(&mut self.$field, generation)
            }
            fn set_creation_timestamp(&mut self, time: ::std::option::Option<$crate::Time>) {
                $crate::ObjectMut::set_creation_timestamp(&mut self.$field, time)
            }
            fn set_deletion_timestamp(&mut self, time: ::std::option::Option<$crate::Time>) {
                $crate::ObjectMut::set_deletion_timestamp(&mut self.$field, time)
            }
            fn set_deletion_grace_period_seconds(&mut self, seconds: ::std::option::Option<i64>) {
                $crate::ObjectMut::set_deletion_grace_period_seconds(&mut self.$field, seconds)
            }
            fn set_owner_references(&mut self, refs: Vec<$crate::OwnerReference>) {
                $crate::ObjectMut::set_owner_references(&mut self.$field, refs)
            }
            fn labels_mut(&mut self) -> &mut ::std::collections::BTreeMap<String, String> {
                $crate::ObjectMut::labels_mut(&mut self.$field)
            }
            fn annotations_mut(&mut self) -> &mut ::std::collections::BTreeMap<String, String> {
                $crate::ObjectMut::annotations_mut(&mut self.$field)
            }
            fn finalizers_mut(&mut self) -> &mut Vec<String> {
                $crate::ObjectMut::finalizers_mut(&mut self.$field)
            }
            fn clear_managed_fields(&mut self) {
                $crate::ObjectMut::clear_managed_fields(&mut self.$field)
            }
        }
    };
    ($ty:ty) => {
        $crate::impl_object!(@generic [] $ty, metadata);
    };
    ($ty:ty, $field:ident) => {
        $crate::impl_object!(@generic [] $ty, $field);
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert_eq!(object_key("default", "web"), "default/web");
        assert_eq!(object_key("", "node-1"), "node-1");
        assert_eq!(split_key("default/web"), Ok(("default", "web")));
        assert_eq!(split_key("node-1"), Ok(("", "node-1")));
        for bad in ["", "a/b/c", "/x", "x/"] {
            assert_eq!(
                split_key(bad),
                Err(KeyError {
                    key: bad.to_owned()
                }),
                "{bad}"
            );
        }
    }

    #[test]
    fn object_meta_accessors() {
        let mut m = ObjectMeta::namespaced("ns", "a");
        m.owner_references = vec![
            OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "x".into(),
                uid: "u1".into(),
                ..OwnerReference::default()
            },
            OwnerReference {
                api_version: "apps/v1".into(),
                kind: "ReplicaSet".into(),
                name: "rs".into(),
                uid: "u2".into(),
                controller: Some(true),
                block_owner_deletion: None,
            },
        ];
        let dyn_obj: &dyn Object = &m;
        assert_eq!(dyn_obj.key(), "ns/a");
        assert_eq!(dyn_obj.owner_references().len(), 2);
        let c = dyn_obj.controller_ref().unwrap();
        assert_eq!((c.kind, c.name), ("ReplicaSet", "rs"));
        assert_eq!(c.to_owner_reference(), m.owner_references[1]);
        assert_eq!(m.owner_references().next_back().unwrap().uid, "u2");
        assert!(!m.is_being_deleted());

        m.set_deletion_timestamp(Some(Time::UNIX_EPOCH));
        m.labels_mut().insert("app".into(), "web".into());
        m.finalizers_mut().push("f".into());
        m.set_resource_version("9".into());
        assert!(m.is_being_deleted());
        assert_eq!(m.labels().get("app"), Some("web"));
        assert_eq!(m.finalizers(), ["f"]);
        assert_eq!(m.resource_version(), "9");
    }

    /// `metav1.IsControlledBy`: the controller reference's uid, not its name, decides.
    #[test]
    fn is_controlled_by_compares_the_controller_references_uid() {
        let mut owner = ObjectMeta::namespaced("ns", "rs");
        owner.uid = "u2".into();
        let mut same_name = owner.clone();
        same_name.uid = "other".into();
        let mut dependent = ObjectMeta::namespaced("ns", "pod");
        assert!(!dependent.is_controlled_by(&owner), "no owner references");
        dependent.owner_references = vec![OwnerReference {
            uid: "u2".into(),
            controller: None,
            ..OwnerReference::default()
        }];
        assert!(
            !dependent.is_controlled_by(&owner),
            "an owner, not the controller"
        );
        dependent.owner_references[0].controller = Some(true);
        assert!(dependent.is_controlled_by(&owner));
        assert!(
            !dependent.is_controlled_by(&same_name),
            "a same-named object is not it"
        );
    }
}
