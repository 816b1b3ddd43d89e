//! Cache keys and deletion tombstones: client-go's `MetaNamespaceKeyFunc`,
//! `SplitMetaNamespaceKey`, `DeletedFinalStateUnknown` and `DeletionHandlingMetaNamespaceKeyFunc`.
//!
//! Every object in an informer's cache is known by its key: `namespace/name`, or `name` for
//! cluster-scoped objects. When an informer learns of a deletion only by relisting (the watch
//! missed the `DELETED` event), it no longer has the object's final state: it delivers a
//! [`DeletedFinalStateUnknown`] tombstone, carrying the key and the last state it knew.
//!
//! Where it differs from client-go, and why:
//!
//! * Go's key functions take `interface{}` and can fail (an object without metadata, an
//!   unknown type). Here every cached type implements [`Object`], so computing a key cannot
//!   fail and returns a plain `String`.
//! * Go hands `OnDelete` an `interface{}` that is either the object or a tombstone, and every
//!   handler must type-switch on it. Here a deletion is a [`DeleteEvent`]: an enum the
//!   compiler makes handlers unwrap, with [`DeleteEvent::object`] for the common "last known
//!   state, whichever kind" and [`DeleteEvent::key`] for the deletion-handling key.
//! * [`split_meta_namespace_key`] rejects keys with empty parts (`"/x"`, `"x/"`), which
//!   [`meta_namespace_key_func`] never produces; Go accepts them.

use std::fmt;
use std::sync::Arc;

use clientgo_apimachinery::{KeyError, Object, ObjectKey, object_key, split_key};

/// The cache key of an object: `namespace/name`, or `name` when the namespace is empty
/// (client-go's `MetaNamespaceKeyFunc`).
pub fn meta_namespace_key_func<O: Object + ?Sized>(object: &O) -> String {
    object_key(object.namespace(), object.name())
}

/// Splits a cache key into `(namespace, name)`; the namespace is `""` for a cluster-scoped
/// key (client-go's `SplitMetaNamespaceKey`).
pub fn split_meta_namespace_key(key: &str) -> Result<(&str, &str), KeyError> {
    split_key(key)
}

/// The key of a deleted object, whether the deletion carries the object or a tombstone
/// (client-go's `DeletionHandlingMetaNamespaceKeyFunc`).
pub fn deletion_handling_meta_namespace_key_func<T: Object>(event: &DeleteEvent<T>) -> String {
    event.key()
}

/// A deletion noticed only by relisting: the object is gone from the server, but its final
/// state is unknown (client-go's `DeletedFinalStateUnknown`).
///
/// `object` is the last state the informer knew, if any; it may be stale.
pub struct DeletedFinalStateUnknown<T> {
    /// The deleted object's key.
    pub key: String,
    /// The last known state of the object, if the informer had one.
    pub object: Option<Arc<T>>,
}

impl<T> DeletedFinalStateUnknown<T> {
    /// A tombstone for `key`.
    pub fn new(key: impl Into<String>, object: Option<Arc<T>>) -> Self {
        DeletedFinalStateUnknown {
            key: key.into(),
            object,
        }
    }
}

impl<T> Clone for DeletedFinalStateUnknown<T> {
    fn clone(&self) -> Self {
        DeletedFinalStateUnknown {
            key: self.key.clone(),
            object: self.object.clone(),
        }
    }
}

impl<T: PartialEq> PartialEq for DeletedFinalStateUnknown<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key && self.object == other.object
    }
}

impl<T: fmt::Debug> fmt::Debug for DeletedFinalStateUnknown<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeletedFinalStateUnknown")
            .field("key", &self.key)
            .field("object", &self.object)
            .finish()
    }
}

/// What a deletion carries: the object's final state, or a tombstone when the deletion was
/// inferred from a relist (what client-go passes to `OnDelete` as `interface{}`).
pub enum DeleteEvent<T> {
    /// The object as it was when deleted (a watch `DELETED` event).
    Object(Arc<T>),
    /// The deletion was noticed by a relist; the final state is unknown.
    Tombstone(DeletedFinalStateUnknown<T>),
}

impl<T> DeleteEvent<T> {
    /// The last known state of the deleted object: the object itself, or the tombstone's
    /// (possibly stale) object; `None` for a tombstone without one.
    pub fn object(&self) -> Option<&Arc<T>> {
        match self {
            DeleteEvent::Object(object) => Some(object),
            DeleteEvent::Tombstone(tombstone) => tombstone.object.as_ref(),
        }
    }

    /// Like [`object`](Self::object), by value.
    pub fn into_object(self) -> Option<Arc<T>> {
        match self {
            DeleteEvent::Object(object) => Some(object),
            DeleteEvent::Tombstone(tombstone) => tombstone.object,
        }
    }

    /// The tombstone, when the final state is unknown.
    pub fn tombstone(&self) -> Option<&DeletedFinalStateUnknown<T>> {
        match self {
            DeleteEvent::Object(_) => None,
            DeleteEvent::Tombstone(tombstone) => Some(tombstone),
        }
    }

    /// Whether the final state is unknown (the deletion came from a relist).
    pub fn is_tombstone(&self) -> bool {
        matches!(self, DeleteEvent::Tombstone(_))
    }
}

impl<T: Object> DeleteEvent<T> {
    /// The deleted object's key: the tombstone's key, or the object's
    /// (client-go's `DeletionHandlingMetaNamespaceKeyFunc`).
    pub fn key(&self) -> String {
        match self {
            DeleteEvent::Object(object) => meta_namespace_key_func(&**object),
            DeleteEvent::Tombstone(tombstone) => tombstone.key.clone(),
        }
    }

    /// The deleted object's [`ObjectKey`]; `None` only for a tombstone whose key does not
    /// parse (the informer's own tombstones always do).
    pub fn object_key(&self) -> Option<ObjectKey> {
        match self {
            DeleteEvent::Object(object) => Some(ObjectKey::of(&**object)),
            DeleteEvent::Tombstone(tombstone) => tombstone.key.parse().ok(),
        }
    }
}

impl<T> Clone for DeleteEvent<T> {
    fn clone(&self) -> Self {
        match self {
            DeleteEvent::Object(object) => DeleteEvent::Object(object.clone()),
            DeleteEvent::Tombstone(tombstone) => DeleteEvent::Tombstone(tombstone.clone()),
        }
    }
}

impl<T: PartialEq> PartialEq for DeleteEvent<T> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (DeleteEvent::Object(a), DeleteEvent::Object(b)) => a == b,
            (DeleteEvent::Tombstone(a), DeleteEvent::Tombstone(b)) => a == b,
            _ => false,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for DeleteEvent<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeleteEvent::Object(object) => f.debug_tuple("Object").field(object).finish(),
            DeleteEvent::Tombstone(tombstone) => {
                f.debug_tuple("Tombstone").field(tombstone).finish()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::ObjectMeta;

    #[test]
    fn keys_round_trip() {
        let namespaced = ObjectMeta::namespaced("prod", "web");
        let cluster = ObjectMeta::named("node-1");
        assert_eq!(meta_namespace_key_func(&namespaced), "prod/web");
        assert_eq!(meta_namespace_key_func(&cluster), "node-1");
        assert_eq!(split_meta_namespace_key("prod/web"), Ok(("prod", "web")));
        assert_eq!(split_meta_namespace_key("node-1"), Ok(("", "node-1")));
        assert!(split_meta_namespace_key("a/b/c").is_err());
    }

    // client-go: TestDeletedObjectGetKey / TestDeletionHandlingObjectToName.
    #[test]
    fn deletion_handling_key() {
        let object = Arc::new(ObjectMeta::namespaced("ns", "a"));
        let deleted = DeleteEvent::Object(object.clone());
        assert_eq!(deletion_handling_meta_namespace_key_func(&deleted), "ns/a");
        assert!(!deleted.is_tombstone());
        let tombstone =
            DeleteEvent::<ObjectMeta>::Tombstone(DeletedFinalStateUnknown::new("ns/b", None));
        assert_eq!(tombstone.key(), "ns/b");
        assert!(tombstone.object().is_none());
        let stale = DeleteEvent::Tombstone(DeletedFinalStateUnknown::new("ns/a", Some(object)));
        assert_eq!(stale.object().map(|o| o.name.as_str()), Some("a"));
        assert_eq!(stale.clone(), stale);
        assert_ne!(stale, deleted);
    }
}
