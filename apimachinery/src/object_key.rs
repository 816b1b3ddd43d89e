//! [`ObjectKey`]: which object, by namespace and name, the item a controller's work queue holds.
//!
//! client-go's typed controllers queue `cache.ObjectName` (`tools/cache/object-names.go`:
//! `NewObjectName`, `ParseObjectName`, `MetaObjectToName`, `String`), controller-runtime's a
//! `reconcile.Request` around `types.NamespacedName`; older client-go controllers queue the
//! `namespace/name` string and split it in every worker. Here the key is one type with both
//! faces: it is built once from an object or parsed once from text, and the worker reads
//! [`namespace`](ObjectKey::namespace) and [`name`](ObjectKey::name) without splitting.
//!
//! Where it differs: it is one shared string (`namespace/name`, or `name` for a cluster-scoped
//! object) and the length of its namespace, not two strings. A clone is a reference count, as
//! cheap as the `Arc<str>` keys it replaces; it hashes and compares as its text, so a map keyed
//! by `ObjectKey` can be looked up with a `&str` key.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

use crate::object::{KeyError, Object, split_key};

/// An object's namespace and name: `namespace/name` as text, or `name` for a cluster-scoped
/// object (client-go's `cache.ObjectName`).
///
/// ```
/// use clientgo_apimachinery::{DynamicObject, ObjectKey, ObjectMut};
///
/// let mut foo = DynamicObject::new("web");
/// foo.set_namespace("default".into());
/// let key = ObjectKey::of(&foo);
/// assert_eq!((key.namespace(), key.name()), ("default", "web"));
/// assert_eq!(key.to_string(), "default/web");
/// assert_eq!("default/web".parse::<ObjectKey>().unwrap(), key);
/// assert_eq!(ObjectKey::new("", "node-1").to_string(), "node-1"); // cluster-scoped
/// assert!("a/b/c".parse::<ObjectKey>().is_err());
/// ```
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct ObjectKey {
    /// `namespace/name`, or `name` when the namespace is empty.
    text: Arc<str>,
    /// The namespace's length in `text` (0: cluster-scoped, no `/`).
    namespace_len: u32,
}

impl ObjectKey {
    /// The key of the object `name` in `namespace` (`""` for a cluster-scoped object):
    /// client-go's `NewObjectName`. Names and namespaces hold no `/` on a real server; one
    /// given here anyway is kept as it is, and the text no longer parses back.
    pub fn new(namespace: &str, name: &str) -> Self {
        if namespace.is_empty() {
            return Self {
                text: Arc::from(name),
                namespace_len: 0,
            };
        }
        let mut text = String::with_capacity(namespace.len() + 1 + name.len());
        text.push_str(namespace);
        text.push('/');
        text.push_str(name);
        Self {
            text: Arc::from(text),
            // A namespace is at most 63 bytes on a real server; a longer one saturates (and
            // then only `namespace`/`name` split wrongly, never out of bounds).
            namespace_len: u32::try_from(namespace.len()).unwrap_or(u32::MAX),
        }
    }

    /// The key of `object`: client-go's `MetaObjectToName`.
    pub fn of<O: Object + ?Sized>(object: &O) -> Self {
        Self::new(object.namespace(), object.name())
    }

    /// The namespace, `""` for a cluster-scoped object.
    pub fn namespace(&self) -> &str {
        self.text
            .get(..self.namespace_len as usize)
            .unwrap_or_default()
    }

    /// The name.
    pub fn name(&self) -> &str {
        if self.namespace_len == 0 {
            return &self.text;
        }
        self.text
            .get(self.namespace_len as usize + 1..)
            .unwrap_or_default()
    }

    /// The key as text: `namespace/name`, or `name` (a cache key, client-go's
    /// `MetaNamespaceKeyFunc`).
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// Whether the object lives in a namespace.
    pub fn is_namespaced(&self) -> bool {
        self.namespace_len != 0
    }
}

/// Hashes as its text, which [`Borrow<str>`] needs; equal keys have equal text.
impl Hash for ObjectKey {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.text.hash(state);
    }
}

impl Borrow<str> for ObjectKey {
    fn borrow(&self) -> &str {
        &self.text
    }
}

impl AsRef<str> for ObjectKey {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

/// `namespace/name`, or `name`: client-go's `ObjectName.String`.
impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl fmt::Debug for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ObjectKey").field(&&*self.text).finish()
    }
}

/// Parses `namespace/name` or `name`: client-go's `ParseObjectName`, refusing what
/// [`split_key`] refuses (empty parts, a second `/`).
impl FromStr for ObjectKey {
    type Err = KeyError;

    fn from_str(key: &str) -> Result<Self, KeyError> {
        let (namespace, name) = split_key(key)?;
        Ok(Self::new(namespace, name))
    }
}

impl TryFrom<&str> for ObjectKey {
    type Error = KeyError;

    fn try_from(key: &str) -> Result<Self, KeyError> {
        key.parse()
    }
}

impl From<ObjectKey> for Arc<str> {
    fn from(key: ObjectKey) -> Arc<str> {
        key.text
    }
}

impl From<ObjectKey> for String {
    fn from(key: ObjectKey) -> String {
        key.text.as_ref().to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn namespaced_and_cluster_scoped_keys_split_without_parsing() {
        let key = ObjectKey::new("ns", "web");
        assert_eq!(key.as_str(), "ns/web");
        assert_eq!((key.namespace(), key.name()), ("ns", "web"));
        assert!(key.is_namespaced());
        let node = ObjectKey::new("", "node-1");
        assert_eq!(node.as_str(), "node-1");
        assert_eq!((node.namespace(), node.name()), ("", "node-1"));
        assert!(!node.is_namespaced());
    }

    #[test]
    fn text_round_trips_and_malformed_keys_are_refused() {
        for text in ["ns/web", "node-1"] {
            assert_eq!(text.parse::<ObjectKey>().unwrap().to_string(), text);
        }
        for bad in ["", "/web", "ns/", "a/b/c"] {
            assert!(bad.parse::<ObjectKey>().is_err(), "{bad:?} parsed");
        }
    }

    #[test]
    fn a_set_of_keys_is_looked_up_by_text() {
        let keys: HashSet<ObjectKey> = [ObjectKey::new("ns", "a"), ObjectKey::new("", "b")]
            .into_iter()
            .collect();
        assert!(keys.contains("ns/a"));
        assert!(keys.contains("b"));
        assert!(!keys.contains("ns/b"));
    }

    #[test]
    fn a_name_with_a_slash_splits_at_the_namespace_it_was_given() {
        let key = ObjectKey::new("ns", "a/b");
        assert_eq!((key.namespace(), key.name()), ("ns", "a/b"));
    }
}
