//! Lists of objects: [`ObjectList<T>`].
//!
//! Mirrors the shape every Kubernetes `XxxList` type shares (`PodList`, `ConfigMapList`, ...:
//! `apiVersion`, `kind`, `metadata: ListMeta`, `items`), generically. A list response's
//! `metadata.resourceVersion` is where the following watch starts, and
//! `metadata.continue` pages through large collections.
//!
//! The struct is decoded field by field (no `#[serde(flatten)]`, which would buffer every
//! item before decoding it), so decoding a list of 100,000 items costs no more than decoding
//! the items. `items` is always written, `metadata` too (as Go writes both); `null` items
//! decode as an empty list.

use serde::{Deserialize, Serialize};

use crate::meta::ListMeta;
use crate::resource::Resource;
use crate::serde_util::null_default;

/// A list of objects with list metadata.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "T: Deserialize<'de>"))]
pub struct ObjectList<T> {
    /// The list's `apiVersion`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub api_version: String,
    /// The list's kind, e.g. `PodList`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub kind: String,
    /// resourceVersion, continue token, remaining item count.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ListMeta,
    /// The objects.
    #[serde(default = "Vec::new", deserialize_with = "null_default")]
    pub items: Vec<T>,
}

impl<T> Default for ObjectList<T> {
    fn default() -> Self {
        ObjectList {
            api_version: String::new(),
            kind: String::new(),
            metadata: ListMeta::default(),
            items: Vec::new(),
        }
    }
}

impl<T> ObjectList<T> {
    /// A list of `items` with empty type and list metadata.
    pub fn new(items: Vec<T>) -> ObjectList<T> {
        ObjectList {
            items,
            ..ObjectList::default()
        }
    }

    /// The list's `resourceVersion`.
    pub fn resource_version(&self) -> &str {
        &self.metadata.resource_version
    }

    /// The token for the next page, if there is one.
    pub fn continue_token(&self) -> Option<&str> {
        Some(self.metadata.continue_.as_str()).filter(|t| !t.is_empty())
    }

    /// Iterates over the items.
    pub fn iter(&self) -> std::slice::Iter<'_, T> {
        self.items.iter()
    }
}

impl<T: Resource> ObjectList<T> {
    /// A list of `items` typed as `<Kind>List` of `T`'s group version.
    pub fn of(items: Vec<T>, resource_version: impl Into<String>) -> ObjectList<T> {
        ObjectList {
            api_version: T::api_version().into_owned(),
            kind: format!("{}List", T::KIND),
            metadata: ListMeta {
                resource_version: resource_version.into(),
                ..ListMeta::default()
            },
            items,
        }
    }
}

impl<T> IntoIterator for ObjectList<T> {
    type Item = T;
    type IntoIter = std::vec::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.into_iter()
    }
}

impl<'a, T> IntoIterator for &'a ObjectList<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.items.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DynamicObject, Object};

    #[test]
    fn decode_a_list_page() {
        let text = r#"{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"500","continue":"abc","remainingItemCount":1},"items":[{"metadata":{"name":"a","namespace":"ns"},"data":{"k":"v"}}]}"#;
        let list: ObjectList<DynamicObject> = serde_json::from_str(text).unwrap();
        assert_eq!(list.resource_version(), "500");
        assert_eq!(list.continue_token(), Some("abc"));
        assert_eq!(list.items[0].key(), "ns/a");
        assert_eq!(list.iter().count(), 1);
        assert_eq!(
            serde_json::to_string(&list).unwrap(),
            r#"{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"500","continue":"abc","remainingItemCount":1},"items":[{"metadata":{"name":"a","namespace":"ns"},"data":{"k":"v"}}]}"#
        );
    }

    #[test]
    fn empty_and_null_items() {
        let list: ObjectList<DynamicObject> =
            serde_json::from_str(r#"{"metadata":{},"items":null}"#).unwrap();
        assert!(list.items.is_empty());
        assert_eq!(list.continue_token(), None);
        assert_eq!(
            serde_json::to_string(&ObjectList::<DynamicObject>::new(vec![])).unwrap(),
            r#"{"metadata":{},"items":[]}"#
        );
        let err = serde_json::from_str::<ObjectList<DynamicObject>>(r#"{"items":{}}"#).unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid type: map, expected a sequence"),
            "{err}"
        );
    }
}
