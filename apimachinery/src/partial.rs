//! Objects reduced to their metadata: [`PartialObjectMetadata`] and
//! [`PartialObjectMetadataList`].
//!
//! Mirrors `metav1.PartialObjectMetadata` and `metav1.PartialObjectMetadataList`
//! (`k8s.io/apimachinery/pkg/apis/meta/v1/types.go`): what the API server answers when a
//! client asks, through its `Accept` header, for `as=PartialObjectMetadata;g=meta.k8s.io;v=v1`
//! (a get or a watch) or `as=PartialObjectMetadataList;g=meta.k8s.io;v=v1` (a list). The server
//! drops everything but `metadata` and types the result `meta.k8s.io/v1`,
//! `PartialObjectMetadata`. Garbage collectors, namespace cleanup and controllers that only
//! look at names, labels, owners or finalizers read any resource this way, without the cost of
//! its spec, status or data, and without being able to read a Secret's values.
//!
//! Decoding keeps `apiVersion`, `kind` and `metadata` and skips every other field, so a full
//! object (what an older server, or one that cannot convert, answers when the client also
//! accepts plain JSON) decodes to its metadata as well; [`PartialObjectMetadata::is_partial`]
//! tells the two apart. Where it differs from Go: a JSON `null` for any of the three fields
//! decodes as its empty value.

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::list::ObjectList;
use crate::meta::{ObjectMeta, TypeMeta};
use crate::serde_util::null_default;

/// The `apiVersion` of partial objects: the `meta.k8s.io/v1` group version.
pub const META_V1_API_VERSION: &str = "meta.k8s.io/v1";

/// The kind of one object reduced to its metadata.
pub const PARTIAL_OBJECT_METADATA_KIND: &str = "PartialObjectMetadata";

/// The kind of a list of objects reduced to their metadata.
pub const PARTIAL_OBJECT_METADATA_LIST_KIND: &str = "PartialObjectMetadataList";

/// Any object, reduced to its type and metadata (`metav1.PartialObjectMetadata`).
///
/// ```
/// use clientgo_apimachinery::{Object, PartialObjectMetadata};
///
/// let cm: PartialObjectMetadata = serde_json::from_str(
///     r#"{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata",
///         "metadata":{"name":"settings","namespace":"prod","resourceVersion":"7"}}"#,
/// )?;
/// assert_eq!(cm.key(), "prod/settings");
/// assert!(cm.is_partial());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(from = "Wire")]
pub struct PartialObjectMetadata {
    /// `apiVersion` and `kind`: `meta.k8s.io/v1`, `PartialObjectMetadata` when the server
    /// reduced the object.
    pub types: TypeMeta,
    /// `metadata`, complete.
    pub metadata: ObjectMeta,
}

crate::impl_object!(PartialObjectMetadata);

/// A list of objects reduced to their metadata (`metav1.PartialObjectMetadataList`): kind
/// `PartialObjectMetadataList`, list metadata (resourceVersion, continue token) and items.
pub type PartialObjectMetadataList = ObjectList<PartialObjectMetadata>;

impl PartialObjectMetadata {
    /// A partial object with `metadata`, typed `meta.k8s.io/v1` `PartialObjectMetadata`.
    pub fn new(metadata: ObjectMeta) -> PartialObjectMetadata {
        PartialObjectMetadata {
            types: TypeMeta::new(META_V1_API_VERSION, PARTIAL_OBJECT_METADATA_KIND),
            metadata,
        }
    }

    /// Whether this is typed as a server-reduced object (`meta.k8s.io/v1` or `/v1beta1`,
    /// kind `PartialObjectMetadata`), not a full object decoded for its metadata only.
    pub fn is_partial(&self) -> bool {
        self.types.kind == PARTIAL_OBJECT_METADATA_KIND
            && matches!(
                self.types.api_version.as_str(),
                META_V1_API_VERSION | "meta.k8s.io/v1beta1"
            )
    }
}

/// The three fields on the wire; the rest of a full object is skipped unread.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Wire {
    #[serde(default, deserialize_with = "null_default")]
    api_version: String,
    #[serde(default, deserialize_with = "null_default")]
    kind: String,
    #[serde(default, deserialize_with = "null_default")]
    metadata: ObjectMeta,
}

impl From<Wire> for PartialObjectMetadata {
    fn from(wire: Wire) -> PartialObjectMetadata {
        PartialObjectMetadata {
            types: TypeMeta::new(wire.api_version, wire.kind),
            metadata: wire.metadata,
        }
    }
}

impl Serialize for PartialObjectMetadata {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if !self.types.api_version.is_empty() {
            map.serialize_entry("apiVersion", &self.types.api_version)?;
        }
        if !self.types.kind.is_empty() {
            map.serialize_entry("kind", &self.types.kind)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Object, WatchEvent};

    #[test]
    fn decodes_what_the_server_answers() {
        let text = r#"{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
            "metadata":{"name":"web","namespace":"prod","uid":"u1","resourceVersion":"12",
                        "labels":{"app":"web"},"finalizers":["f"],
                        "creationTimestamp":"2024-01-02T03:04:05Z",
                        "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet",
                                            "name":"rs","uid":"u0","controller":true}]}}"#;
        let p: PartialObjectMetadata = serde_json::from_str(text).unwrap();
        assert!(p.is_partial());
        assert_eq!(p.key(), "prod/web");
        assert_eq!(p.uid(), "u1");
        assert_eq!(p.resource_version(), "12");
        assert_eq!(p.labels().get("app"), Some("web"));
        assert_eq!(p.finalizers(), ["f"]);
        assert_eq!(p.controller_ref().unwrap().name, "rs");
        assert!(p.creation_timestamp().is_some());
        let back: PartialObjectMetadata =
            serde_json::from_slice(&serde_json::to_vec(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn a_full_object_decodes_to_its_metadata() {
        let text = r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"token"},
            "data":{"password":"c2VjcmV0"},"type":"Opaque","spec":{"nested":[1,{"a":null}]}}"#;
        let p: PartialObjectMetadata = serde_json::from_str(text).unwrap();
        assert!(!p.is_partial());
        assert_eq!(
            (p.types.api_version.as_str(), p.types.kind.as_str()),
            ("v1", "Secret")
        );
        assert_eq!(p.name(), "token");
        let out = serde_json::to_string(&p).unwrap();
        assert_eq!(
            out,
            r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"token"}}"#
        );
    }

    #[test]
    fn nulls_and_absent_fields_are_empty() {
        let p: PartialObjectMetadata =
            serde_json::from_str(r#"{"apiVersion":null,"kind":null,"metadata":null}"#).unwrap();
        assert_eq!(p, PartialObjectMetadata::default());
        let p: PartialObjectMetadata = serde_json::from_str("{}").unwrap();
        assert_eq!(serde_json::to_string(&p).unwrap(), r#"{"metadata":{}}"#);
        for bad in [r#""text""#, r#"{"metadata":"m"}"#, r#"{"kind":3}"#, "{"] {
            assert!(
                serde_json::from_str::<PartialObjectMetadata>(bad).is_err(),
                "{bad}"
            );
        }
    }

    #[test]
    fn new_is_typed_meta_v1() {
        let p = PartialObjectMetadata::new(ObjectMeta::namespaced("ns", "a"));
        assert!(p.is_partial());
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"apiVersion":"meta.k8s.io/v1","kind":"PartialObjectMetadata","metadata":{"name":"a","namespace":"ns"}}"#
        );
    }

    #[test]
    fn decodes_a_list_page_and_watch_events() {
        let text = r#"{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1",
            "metadata":{"resourceVersion":"40","continue":"next","remainingItemCount":3},
            "items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1",
                      "metadata":{"name":"a","namespace":"ns","resourceVersion":"39"}}]}"#;
        let list: PartialObjectMetadataList = serde_json::from_str(text).unwrap();
        assert_eq!(list.kind, PARTIAL_OBJECT_METADATA_LIST_KIND);
        assert_eq!(list.api_version, META_V1_API_VERSION);
        assert_eq!(list.resource_version(), "40");
        assert_eq!(list.continue_token(), Some("next"));
        assert_eq!(list.metadata.remaining_item_count, Some(3));
        assert_eq!(list.items[0].key(), "ns/a");

        let event: WatchEvent<PartialObjectMetadata> = serde_json::from_str(
            r#"{"type":"MODIFIED","object":{"kind":"PartialObjectMetadata",
                "apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","resourceVersion":"41"}}}"#,
        )
        .unwrap();
        let WatchEvent::Modified(p) = &event else {
            panic!("expected MODIFIED, got {event:?}");
        };
        assert_eq!(p.resource_version(), "41");
        let bookmark: WatchEvent<PartialObjectMetadata> = serde_json::from_str(
            r#"{"type":"BOOKMARK","object":{"kind":"PartialObjectMetadata",
                "apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"42"}}}"#,
        )
        .unwrap();
        assert_eq!(bookmark.resource_version(), Some("42"));
    }
}
