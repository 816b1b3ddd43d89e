//! [`Compact<K>`]: the form in which a cache holds objects of a known kind `K`, designed for
//! memory first.
//!
//! A `Compact<K>` keeps the object's metadata parsed ([`CompactMeta`]: what caches, indexes,
//! listers, handlers and the garbage collector read) and everything else (`spec`, `status`,
//! `data`, ...) as one buffer of compact JSON text, validated but not built into a tree.
//! [`Compact::to_typed`] decodes the whole typed `K` when a consumer wants it.
//!
//! There is no client-go counterpart: client-go's informers hold fully decoded typed objects
//! (or `unstructured` maps, or `PartialObjectMetadata` with nothing but metadata).
//!
//! ## Why this form
//!
//! Measured on the benchmark plan's pods (2.9 KB of JSON each, with `managedFields`; S1
//! and D1 in `benches/`, figures in benches/README.md): a k8s-openapi `Pod` costs about
//! 27 KB in a cache, client-go's typed Pod about 8.6 KB, apimachinery's `ObjectMeta` with
//! raw spec and status about 4.4 KB, and a `Compact<Pod>` about 3.1 KB, close to the JSON
//! itself. Two things make the difference:
//!
//! * Spec and status hold most of an object's fields, and a cache rarely reads them: kept
//!   as text they cost their JSON length in one allocation, instead of a tree of strings,
//!   vectors and maps.
//! * Metadata strings are packed ([`CompactMeta`]): a `BTreeMap` of three labels alone costs
//!   about 750 bytes in seven allocations; packed, the same labels cost their bytes plus
//!   8 bytes per string.
//!
//! We also measured sharing equal labels and owner references between objects through an
//! interner: it pays only where objects repeat them exactly (the pods of one ReplicaSet do,
//! the plan's generated pods do not), and with packed strings there is little left to share.
//!
//! The cost moves to readers of the typed form: [`Compact::to_typed`] decodes the object
//! again (D1 reports it as `typed_view_mb_per_s`). A controller that reads metadata and an
//! occasional spec wins; one that reads every field of every object on every event should
//! cache `K` itself.
//!
//! A `Compact<K>` is read-only, as every cached object is: it implements `Object`, not
//! `ObjectMut`. Build a typed `K` to change and write it.

mod meta;

use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::map_ref::MapRef;
use crate::object::Object;
use crate::owner_refs::OwnerRefs;
use crate::resource::Resource;
use crate::time::Time;
pub use meta::CompactMeta;

/// An object of kind `K` with its metadata parsed and the rest kept as JSON text. See the
/// module documentation.
///
/// ```
/// use clientgo_apimachinery::{Compact, Object};
/// use k8s_openapi::api::core::v1::ConfigMap;
///
/// let json = r#"{"apiVersion":"v1","kind":"ConfigMap",
///     "metadata":{"name":"cm","namespace":"prod","labels":{"app":"web"}},
///     "data":{"k":"v"}}"#;
/// let cm: Compact<ConfigMap> = serde_json::from_str(json)?;
/// assert_eq!(cm.key(), "prod/cm");
/// assert_eq!(cm.labels().get("app"), Some("web"));
/// assert_eq!(cm.rest(), r#"{"data":{"k":"v"}}"#);
/// let typed: ConfigMap = cm.to_typed()?;
/// assert_eq!(typed.data.unwrap()["k"], "v");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub struct Compact<K> {
    /// The metadata.
    pub metadata: CompactMeta,
    /// Every top-level field but `apiVersion`, `kind` and `metadata`, as one JSON object.
    rest: Box<str>,
    kind: PhantomData<fn() -> K>,
}

impl<K> Object for Compact<K> {
    fn name(&self) -> &str {
        self.metadata.name()
    }
    fn generate_name(&self) -> &str {
        self.metadata.generate_name()
    }
    fn namespace(&self) -> &str {
        self.metadata.namespace()
    }
    fn uid(&self) -> &str {
        self.metadata.uid()
    }
    fn resource_version(&self) -> &str {
        self.metadata.resource_version()
    }
    fn generation(&self) -> i64 {
        self.metadata.generation()
    }
    fn creation_timestamp(&self) -> Option<Time> {
        self.metadata.creation_timestamp()
    }
    fn deletion_timestamp(&self) -> Option<Time> {
        self.metadata.deletion_timestamp()
    }
    fn deletion_grace_period_seconds(&self) -> Option<i64> {
        self.metadata.deletion_grace_period_seconds()
    }
    fn labels(&self) -> MapRef<'_> {
        self.metadata.labels()
    }
    fn annotations(&self) -> MapRef<'_> {
        self.metadata.annotations()
    }
    fn owner_references(&self) -> OwnerRefs<'_> {
        self.metadata.owner_references()
    }
    fn finalizers(&self) -> &[String] {
        self.metadata.finalizers()
    }
}

impl<K> Compact<K> {
    /// An object from its metadata and the JSON text of its other top-level fields (an
    /// object, e.g. `{"spec":{...}}`).
    pub fn from_parts(metadata: CompactMeta, rest: Box<RawValue>) -> Result<Self, RestNotAnObject> {
        let text: Box<str> = rest.into();
        if !text.starts_with('{') {
            return Err(RestNotAnObject);
        }
        Ok(Compact {
            metadata,
            rest: text,
            kind: PhantomData,
        })
    }

    /// The JSON object of every top-level field but `apiVersion`, `kind` and `metadata`.
    pub fn rest(&self) -> &str {
        &self.rest
    }

    /// Decodes one top-level field (e.g. `"spec"`) of the rest; `None` when it is absent.
    ///
    /// The rest is scanned once, its keys compared in place and the other values skipped:
    /// no map of the fields is built (a controller calls this for every object it reads).
    /// As with a map, the last of repeated keys wins.
    pub fn field<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, serde_json::Error> {
        let mut rest = serde_json::Deserializer::from_str(&self.rest);
        let found = rest.deserialize_map(FieldIn { name })?;
        rest.end()?;
        found.map(|raw| serde_json::from_str(raw.get())).transpose()
    }
}

/// Finds the value of the key `name` in a JSON object, as raw JSON.
struct FieldIn<'n> {
    name: &'n str,
}

impl<'de> Visitor<'de> for FieldIn<'_> {
    type Value = Option<&'de RawValue>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(wanted) = map.next_key_seed(KeyIs(self.name))? {
            if wanted {
                found = Some(map.next_value::<&'de RawValue>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// Whether a map key equals the name, read without keeping it.
struct KeyIs<'n>(&'n str);

impl<'de> de::DeserializeSeed<'de> for KeyIs<'_> {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeyIs<'_> {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field name")
    }

    fn visit_str<E: de::Error>(self, key: &str) -> Result<bool, E> {
        Ok(key == self.0)
    }
}

impl<K: Resource> Compact<K> {
    /// The object's whole JSON text (`apiVersion` and `kind` from `K`).
    pub fn to_json(&self) -> String {
        let api_version = K::api_version();
        let metadata = serde_json::to_string(&self.metadata).expect("metadata serializes");
        let mut out =
            String::with_capacity(self.rest.len() + metadata.len() + api_version.len() + 48);
        out.push_str("{\"apiVersion\":");
        push_json_string(&mut out, &api_version);
        out.push_str(",\"kind\":");
        push_json_string(&mut out, K::KIND);
        out.push_str(",\"metadata\":");
        out.push_str(&metadata);
        let inner = &self.rest[1..self.rest.len() - 1];
        if !inner.trim().is_empty() {
            out.push(',');
            out.push_str(inner);
        }
        out.push('}');
        out
    }
}

impl<K: Resource + DeserializeOwned> Compact<K> {
    /// Decodes the typed object.
    pub fn to_typed(&self) -> Result<K, serde_json::Error> {
        serde_json::from_str(&self.to_json())
    }
}

impl<K: Resource + Serialize> Compact<K> {
    /// The compact form of a typed object.
    pub fn from_typed(object: &K) -> Result<Self, serde_json::Error> {
        serde_json::from_slice(&serde_json::to_vec(object)?)
    }
}

/// Appends `s` as a JSON string. Field and kind names almost never need escaping, so they are
/// copied as they are (this runs for every field of every decoded object); the rare name with
/// a quote, backslash or control character goes through serde_json, which escapes exactly those.
fn push_json_string(out: &mut String, s: &str) {
    if s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\') {
        out.push('"');
        out.push_str(s);
        out.push('"');
    } else {
        out.push_str(&serde_json::to_string(s).expect("a string serializes"));
    }
}

/// [`Compact::from_parts`] was given JSON that is not an object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the fields of a compact object must be a JSON object")]
pub struct RestNotAnObject;

impl<K: Resource> Resource for Compact<K> {
    const GROUP: &'static str = K::GROUP;
    const VERSION: &'static str = K::VERSION;
    const KIND: &'static str = K::KIND;
    const PLURAL: &'static str = K::PLURAL;
    const NAMESPACED: bool = K::NAMESPACED;
}

impl<K> Clone for Compact<K> {
    fn clone(&self) -> Self {
        Compact {
            metadata: self.metadata.clone(),
            rest: self.rest.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> PartialEq for Compact<K> {
    fn eq(&self, other: &Self) -> bool {
        self.metadata == other.metadata && self.rest == other.rest
    }
}

impl<K> Eq for Compact<K> {}

impl<K> fmt::Debug for Compact<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Compact")
            .field("metadata", &self.metadata)
            .field("rest", &self.rest)
            .finish()
    }
}

/// Writes the whole object (see [`Compact::to_json`]). With serializers other than
/// serde_json's, the object appears as serde_json's raw-value token.
impl<K: Resource> Serialize for Compact<K> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = RawValue::from_string(self.to_json()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de, K> Deserialize<'de> for Compact<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(CompactVisitor(PhantomData))
    }
}

struct CompactVisitor<K>(PhantomData<fn() -> K>);

impl<'de, K> Visitor<'de> for CompactVisitor<K> {
    type Value = Compact<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Compact<K>, A::Error> {
        let mut metadata = None;
        // The other fields are collected as `,"name":value` in a per-thread scratch buffer
        // and copied out once, at their exact size: growing a buffer per object would leave
        // a trail of freed, differently sized blocks between the objects a cache keeps.
        let mut rest = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
        rest.clear();
        let result = (|| {
            while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                match key.as_ref() {
                    "metadata" => {
                        if metadata.is_some() {
                            return Err(de::Error::duplicate_field("metadata"));
                        }
                        metadata =
                            Some(map.next_value::<Option<CompactMeta>>()?.unwrap_or_default());
                    }
                    // Implied by `K`; a list item or watch event of another kind fails later,
                    // when it is read as `K`, as it would with a typed decode.
                    "apiVersion" | "kind" => {
                        map.next_value::<IgnoredAny>()?;
                    }
                    name => {
                        let value: Box<RawValue> = map.next_value()?;
                        rest.push(',');
                        push_json_string(&mut rest, name);
                        rest.push(':');
                        rest.push_str(value.get());
                    }
                }
            }
            Ok(())
        })();
        let fields: Box<str> = if rest.is_empty() {
            Box::from("{}")
        } else {
            let mut text = String::with_capacity(rest.len() + 1);
            text.push('{');
            text.push_str(&rest[1..]);
            text.push('}');
            text.into_boxed_str()
        };
        if rest.capacity() <= SCRATCH_KEPT {
            SCRATCH.with(|s| *s.borrow_mut() = rest);
        }
        result?;
        Ok(Compact {
            metadata: metadata.unwrap_or_default(),
            rest: fields,
            kind: PhantomData,
        })
    }
}

/// The largest scratch buffer a thread keeps between decodes.
const SCRATCH_KEPT: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::RefCell<String> = const { std::cell::RefCell::new(String::new()) };
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use k8s_openapi::api::core::v1::{ConfigMap, Pod};

    use super::*;

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns","resourceVersion":"5","labels":{"app":"a"}},"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}"#;

    #[test]
    fn keeps_metadata_parsed_and_the_rest_as_text() {
        let pod: Compact<Pod> = serde_json::from_str(POD).unwrap();
        assert_eq!(pod.key(), "ns/p");
        assert_eq!(pod.resource_version(), "5");
        assert_eq!(
            pod.rest(),
            r#"{"spec":{"containers":[{"name":"c","image":"i"}]},"status":{"phase":"Running"}}"#
        );
        assert_eq!(pod.to_json(), POD);
        let typed = pod.to_typed().unwrap();
        assert_eq!(typed.status.unwrap().phase.as_deref(), Some("Running"));
        assert_eq!(typed.metadata.labels.unwrap()["app"], "a");
    }

    #[test]
    fn typed_round_trip() {
        let typed: Pod = serde_json::from_str(POD).unwrap();
        let compact = Compact::from_typed(&typed).unwrap();
        assert_eq!(compact.to_typed().unwrap(), typed);
        let written: serde_json::Value = serde_json::to_value(&compact).unwrap();
        assert_eq!(
            written,
            serde_json::from_str::<serde_json::Value>(POD).unwrap()
        );
    }

    #[test]
    fn reads_one_field() {
        let pod: Compact<Pod> = serde_json::from_str(POD).unwrap();
        let status: k8s_openapi::api::core::v1::PodStatus = pod.field("status").unwrap().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert!(pod.field::<serde_json::Value>("absent").unwrap().is_none());
    }

    #[test]
    fn a_field_is_read_as_a_map_of_the_fields_would_read_it() {
        let cm = |rest: &str| {
            Compact::<ConfigMap>::from_parts(
                CompactMeta::default(),
                RawValue::from_string(rest.to_owned()).unwrap(),
            )
            .unwrap()
        };
        // The last of repeated keys wins, and an earlier one that is not a T is no error.
        let repeated = cm(r#"{"data":"not a map","data":{"k":"v"}}"#);
        let data: BTreeMap<String, String> = repeated.field("data").unwrap().unwrap();
        assert_eq!(data["k"], "v");
        // A name written with escapes is found.
        let escaped = cm(r#"{"d\u0061ta":{"k":"w"},"other":[1,{"data":2}]}"#);
        let data: BTreeMap<String, String> = escaped.field("data").unwrap().unwrap();
        assert_eq!(data["k"], "w");
        assert!(escaped.field::<i64>("absent").unwrap().is_none());
        // A value of the wrong type is an error.
        assert!(
            cm(r#"{"data":1}"#)
                .field::<BTreeMap<String, String>>("data")
                .is_err()
        );
    }

    #[test]
    fn objects_without_other_fields() {
        let cm: Compact<ConfigMap> = serde_json::from_str(r#"{"metadata":{"name":"x"}}"#).unwrap();
        assert_eq!(cm.rest(), "{}");
        assert_eq!(
            cm.to_json(),
            r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#
        );
        assert!(cm.to_typed().unwrap().data.is_none());
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        for bad in [
            "[]",
            "{\"metadata\":\"x\"}",
            "{\"spec\":}",
            "{\"metadata\":{},\"metadata\":{}}",
            "{\"spec\":{\"a\":1}",
        ] {
            assert!(serde_json::from_str::<Compact<Pod>>(bad).is_err(), "{bad}");
        }
        assert_eq!(
            Compact::<Pod>::from_parts(
                CompactMeta::default(),
                RawValue::from_string("[1]".into()).unwrap()
            ),
            Err(RestNotAnObject)
        );
    }

    #[test]
    fn names_are_written_as_serde_json_writes_them() {
        for name in [
            "spec",
            "we\"ird",
            "back\\slash",
            "tab\there",
            "\u{1}",
            "é",
            "\u{7f}",
        ] {
            let mut out = String::new();
            push_json_string(&mut out, name);
            assert_eq!(out, serde_json::to_string(name).unwrap(), "{name:?}");
        }
    }

    #[test]
    fn escaped_field_names_survive() {
        let json = r#"{"metadata":{"name":"x"},"we\"ird":1}"#;
        let cm: Compact<ConfigMap> = serde_json::from_str(json).unwrap();
        let back: serde_json::Value = serde_json::from_str(&cm.to_json()).unwrap();
        assert_eq!(back["we\"ird"], 1);
    }
}
