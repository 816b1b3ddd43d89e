//! [`CompactMeta`]: object metadata in the form a cache holds it.
//!
//! The same content and wire format as [`ObjectMeta`] (`metav1.ObjectMeta`), stored for
//! memory: every string (name, namespace, uid, resourceVersion, label and annotation keys
//! and values, owner references) is packed into one buffer, addressed by a second buffer of
//! 8-byte spans. An `ObjectMeta` of a typical pod makes about 15 allocations (a B-tree node
//! of about 550 bytes for its labels alone); a `CompactMeta` makes two, plus
//! `managedFields`, kept as raw JSON text as `ObjectMeta` keeps it. `selfLink`, deprecated
//! and no longer set by servers, is not kept.
//!
//! It implements [`Object`] (labels and annotations read as [`MapRef`] views, owner
//! references as borrowed [`OwnerRef`](crate::OwnerRef)s, lookups by key are binary
//! searches) but not `ObjectMut`: a cached object is shared and read-only; edit an owned
//! copy from [`CompactMeta::to_object_meta`].
//!
//! Decoding borrows strings from the input where it can and packs them at their exact size,
//! so an object's long-lived allocations are not interleaved with growing buffers.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

use crate::managed_fields::ManagedFields;
use crate::map_ref::{MapRef, Span};
use crate::meta::ObjectMeta;
use crate::object::Object;
use crate::owner_refs::{OWNER_SPANS, OwnerRefs, encode_flag};
use crate::time::Time;

/// Spans kept in the struct: name, generateName, namespace, uid, resourceVersion.
const FIXED_SPANS: usize = 5;

/// Object metadata with its strings packed. See the module documentation.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct CompactMeta {
    text: Box<str>,
    /// name, generateName, namespace, uid, resourceVersion: kept in the struct, so that a
    /// store comparing keys reads the object and its text, not a third allocation.
    fixed: [Span; FIXED_SPANS],
    /// `labels` key/value pairs, `annotations` pairs (both sorted by key), then
    /// `OWNER_SPANS` per owner reference.
    spans: Box<[Span]>,
    labels: u32,
    annotations: u32,
    generation: i64,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    finalizers: Vec<String>,
    managed_fields: Option<ManagedFields>,
}

impl CompactMeta {
    fn fixed(&self, i: usize) -> &str {
        self.fixed[i].of(&self.text)
    }

    fn labels_range(&self) -> std::ops::Range<usize> {
        0..(2 * self.labels as usize).min(self.spans.len())
    }

    fn annotations_range(&self) -> std::ops::Range<usize> {
        let start = self.labels_range().end;
        start..(start + 2 * self.annotations as usize).min(self.spans.len())
    }

    /// `managedFields`, as raw JSON.
    pub fn managed_fields(&self) -> Option<&ManagedFields> {
        self.managed_fields.as_ref()
    }

    /// Drops `managedFields` (see `strip_managed_fields` in the informer crate).
    pub fn clear_managed_fields(&mut self) {
        self.managed_fields = None;
    }

    /// An owned, editable [`ObjectMeta`] with the same content.
    pub fn to_object_meta(&self) -> ObjectMeta {
        ObjectMeta {
            name: self.name().to_owned(),
            generate_name: self.generate_name().to_owned(),
            namespace: self.namespace().to_owned(),
            self_link: String::new(),
            uid: self.uid().to_owned(),
            resource_version: self.resource_version().to_owned(),
            generation: self.generation,
            creation_timestamp: self.creation_timestamp,
            deletion_timestamp: self.deletion_timestamp,
            deletion_grace_period_seconds: self.deletion_grace_period_seconds,
            labels: self.labels().to_btree_map(),
            annotations: self.annotations().to_btree_map(),
            owner_references: self
                .owner_references()
                .map(|o| o.to_owner_reference())
                .collect(),
            finalizers: self.finalizers.clone(),
            managed_fields: self.managed_fields.clone(),
        }
    }
}

impl From<&ObjectMeta> for CompactMeta {
    fn from(meta: &ObjectMeta) -> CompactMeta {
        let owners = meta
            .owner_references
            .iter()
            .map(|o| RawOwner {
                api_version: Str(Cow::Borrowed(&o.api_version)),
                kind: Str(Cow::Borrowed(&o.kind)),
                name: Str(Cow::Borrowed(&o.name)),
                uid: Str(Cow::Borrowed(&o.uid)),
                controller: o.controller,
                block_owner_deletion: o.block_owner_deletion,
            })
            .collect();
        fn pairs(m: &std::collections::BTreeMap<String, String>) -> Vec<(Str<'_>, Str<'_>)> {
            m.iter()
                .map(|(k, v)| {
                    (
                        Str(Cow::Borrowed(k.as_str())),
                        Str(Cow::Borrowed(v.as_str())),
                    )
                })
                .collect()
        }
        RawMeta {
            name: Some(Str(Cow::Borrowed(&meta.name))),
            generate_name: Some(Str(Cow::Borrowed(&meta.generate_name))),
            namespace: Some(Str(Cow::Borrowed(&meta.namespace))),
            uid: Some(Str(Cow::Borrowed(&meta.uid))),
            resource_version: Some(Str(Cow::Borrowed(&meta.resource_version))),
            generation: Some(meta.generation),
            creation_timestamp: meta.creation_timestamp,
            deletion_timestamp: meta.deletion_timestamp,
            deletion_grace_period_seconds: meta.deletion_grace_period_seconds,
            labels: Some(Pairs(pairs(&meta.labels))),
            annotations: Some(Pairs(pairs(&meta.annotations))),
            owner_references: Some(owners),
            finalizers: Some(meta.finalizers.clone()),
            managed_fields: meta.managed_fields.clone(),
        }
        .pack()
        .expect("metadata held in memory is smaller than 4 GiB")
    }
}

impl From<ObjectMeta> for CompactMeta {
    fn from(meta: ObjectMeta) -> CompactMeta {
        CompactMeta::from(&meta)
    }
}

impl Object for CompactMeta {
    fn name(&self) -> &str {
        self.fixed(0)
    }
    fn generate_name(&self) -> &str {
        self.fixed(1)
    }
    fn namespace(&self) -> &str {
        self.fixed(2)
    }
    fn uid(&self) -> &str {
        self.fixed(3)
    }
    fn resource_version(&self) -> &str {
        self.fixed(4)
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
        MapRef::packed(&self.text, &self.spans[self.labels_range()])
    }
    fn annotations(&self) -> MapRef<'_> {
        MapRef::packed(&self.text, &self.spans[self.annotations_range()])
    }
    fn owner_references(&self) -> OwnerRefs<'_> {
        let start = self.annotations_range().end;
        OwnerRefs::packed(&self.text, &self.spans[start..])
    }
    fn finalizers(&self) -> &[String] {
        &self.finalizers
    }
}

impl fmt::Debug for CompactMeta {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompactMeta")
            .field("name", &self.name())
            .field("namespace", &self.namespace())
            .field("uid", &self.uid())
            .field("resource_version", &self.resource_version())
            .field("generation", &self.generation)
            .field("labels", &self.labels())
            .field("annotations", &self.annotations())
            .field(
                "owner_references",
                &self.owner_references().collect::<Vec<_>>(),
            )
            .field("finalizers", &self.finalizers)
            .field("deletion_timestamp", &self.deletion_timestamp)
            .finish_non_exhaustive()
    }
}

/// Written exactly as [`ObjectMeta`] writes the same content.
impl Serialize for CompactMeta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.to_object_meta().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for CompactMeta {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        RawMeta::deserialize(deserializer)?
            .pack()
            .map_err(de::Error::custom)
    }
}

/// Metadata as decoded, strings borrowed from the input where possible, before packing.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawMeta<'a> {
    #[serde(borrow, default)]
    name: Option<Str<'a>>,
    #[serde(borrow, default)]
    generate_name: Option<Str<'a>>,
    #[serde(borrow, default)]
    namespace: Option<Str<'a>>,
    #[serde(borrow, default)]
    uid: Option<Str<'a>>,
    #[serde(borrow, default)]
    resource_version: Option<Str<'a>>,
    #[serde(default)]
    generation: Option<i64>,
    #[serde(default)]
    creation_timestamp: Option<Time>,
    #[serde(default)]
    deletion_timestamp: Option<Time>,
    #[serde(default)]
    deletion_grace_period_seconds: Option<i64>,
    #[serde(borrow, default)]
    labels: Option<Pairs<'a>>,
    #[serde(borrow, default)]
    annotations: Option<Pairs<'a>>,
    #[serde(borrow, default)]
    owner_references: Option<Vec<RawOwner<'a>>>,
    #[serde(default)]
    finalizers: Option<Vec<String>>,
    #[serde(default)]
    managed_fields: Option<ManagedFields>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawOwner<'a> {
    #[serde(borrow, default, deserialize_with = "null_str")]
    api_version: Str<'a>,
    #[serde(borrow, default, deserialize_with = "null_str")]
    kind: Str<'a>,
    #[serde(borrow, default, deserialize_with = "null_str")]
    name: Str<'a>,
    #[serde(borrow, default, deserialize_with = "null_str")]
    uid: Str<'a>,
    #[serde(default)]
    controller: Option<bool>,
    #[serde(default)]
    block_owner_deletion: Option<bool>,
}

/// A string field that reads `null` as empty, as `OwnerReference`'s `null_default` does
/// (serde_json never hands a `null` to [`Str`]'s visitor: `deserialize_str` rejects it first).
fn null_str<'de: 'a, 'a, D: Deserializer<'de>>(deserializer: D) -> Result<Str<'a>, D::Error> {
    Ok(Option::<Str<'a>>::deserialize(deserializer)?.unwrap_or_default())
}

/// Metadata too large for 32-bit offsets (over 4 GiB of strings).
#[derive(Debug)]
struct TooLarge;

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("object metadata larger than 4 GiB")
    }
}

impl RawMeta<'_> {
    fn pack(self) -> Result<CompactMeta, TooLarge> {
        let text_of = |s: &Option<Str<'_>>| s.as_ref().map_or("", |s| s.0.as_ref()).len();
        let labels = self.labels.map(Pairs::sorted).unwrap_or_default();
        let annotations = self.annotations.map(Pairs::sorted).unwrap_or_default();
        let owners = self.owner_references.unwrap_or_default();
        let fixed = [
            &self.name,
            &self.generate_name,
            &self.namespace,
            &self.uid,
            &self.resource_version,
        ];
        let total: usize = fixed.iter().map(|s| text_of(s)).sum::<usize>()
            + labels
                .iter()
                .chain(&annotations)
                .map(|(k, v)| k.0.len() + v.0.len())
                .sum::<usize>()
            + owners
                .iter()
                .map(|o| o.api_version.0.len() + o.kind.0.len() + o.name.0.len() + o.uid.0.len())
                .sum::<usize>();
        u32::try_from(total).map_err(|_| TooLarge)?;
        let mut text = String::with_capacity(total);
        let mut spans =
            Vec::with_capacity(2 * (labels.len() + annotations.len()) + OWNER_SPANS * owners.len());
        let push = |text: &mut String, s: &str| {
            let span = Span {
                start: text.len() as u32,
                len: s.len() as u32,
            };
            text.push_str(s);
            span
        };
        let fixed = fixed.map(|s| push(&mut text, s.as_ref().map_or("", |s| s.0.as_ref())));
        for (k, v) in labels.iter().chain(&annotations) {
            spans.push(push(&mut text, &k.0));
            spans.push(push(&mut text, &v.0));
        }
        for o in &owners {
            spans.push(push(&mut text, &o.api_version.0));
            spans.push(push(&mut text, &o.kind.0));
            spans.push(push(&mut text, &o.name.0));
            spans.push(push(&mut text, &o.uid.0));
            spans.push(Span {
                start: encode_flag(o.controller),
                len: encode_flag(o.block_owner_deletion),
            });
        }
        let (n_labels, n_annotations) = (labels.len() as u32, annotations.len() as u32);
        Ok(CompactMeta {
            text: text.into_boxed_str(),
            fixed,
            spans: spans.into_boxed_slice(),
            labels: n_labels,
            annotations: n_annotations,
            generation: self.generation.unwrap_or(0),
            creation_timestamp: self.creation_timestamp,
            deletion_timestamp: self.deletion_timestamp,
            deletion_grace_period_seconds: self.deletion_grace_period_seconds,
            finalizers: self.finalizers.unwrap_or_default(),
            managed_fields: self.managed_fields.filter(|m| !m.is_empty()),
        })
    }
}

/// A string borrowed from the input when it has no escapes, owned otherwise.
#[derive(Default)]
struct Str<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Str<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'de>, E> {
                Ok(Str(Cow::Owned(v)))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Str<'de>, E> {
                Ok(Str::default())
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// A JSON object of strings, as pairs in input order.
struct Pairs<'a>(Vec<(Str<'a>, Str<'a>)>);

impl<'a> Pairs<'a> {
    /// Sorted by key, keys unique (the last of duplicates wins, as in a map).
    fn sorted(self) -> Vec<(Str<'a>, Str<'a>)> {
        let mut pairs = self.0;
        if !pairs.is_sorted_by(|a, b| a.0.0 < b.0.0) {
            pairs.reverse();
            pairs.sort_by(|a, b| a.0.0.cmp(&b.0.0));
            pairs.dedup_by(|later, earlier| later.0.0 == earlier.0.0);
        }
        pairs
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Pairs<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Pairs<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a map of strings")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Pairs<'de>, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(entry) = map.next_entry::<Str<'de>, Str<'de>>()? {
                    pairs.push(entry);
                }
                Ok(Pairs(pairs))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Pairs<'de>, E> {
                Ok(Pairs(Vec::new()))
            }
        }
        deserializer.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const META: &str = r#"{"name":"p1","namespace":"prod","uid":"u1","resourceVersion":"7","generation":2,"creationTimestamp":"2024-03-05T20:02:14Z","labels":{"app":"web","tier":"fe"},"annotations":{"z":"1","a":"2"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"r1","controller":true},{"apiVersion":"v1","kind":"X","name":"x","uid":"x1","blockOwnerDeletion":false}],"finalizers":["f"],"managedFields":[{"manager":"m"}]}"#;

    #[test]
    fn reads_like_object_meta() {
        let compact: CompactMeta = serde_json::from_str(META).unwrap();
        let full: ObjectMeta = serde_json::from_str(META).unwrap();
        assert_eq!(compact.to_object_meta(), full);
        assert_eq!(CompactMeta::from(&full), compact);
        assert_eq!(
            serde_json::to_string(&compact).unwrap(),
            serde_json::to_string(&full).unwrap()
        );
        assert_eq!(compact.key(), "prod/p1");
        assert_eq!(compact.uid(), "u1");
        assert_eq!(compact.resource_version(), "7");
        assert_eq!(compact.generation(), 2);
        assert_eq!(compact.labels(), full.labels);
        assert_eq!(compact.annotations().keys().collect::<Vec<_>>(), ["a", "z"]);
        assert_eq!(compact.annotations().get("z"), Some("1"));
        assert_eq!(compact.controller_ref().unwrap().name, "rs");
        assert!(compact.owner_references().eq(full.owner_references()));
        assert_eq!(compact.finalizers(), ["f"]);
        assert!(compact.managed_fields().is_some());
    }

    #[test]
    fn writes_what_object_meta_writes() {
        for json in [
            META,
            r#"{"generateName":"g-","deletionTimestamp":"2024-03-05T20:02:14Z","deletionGracePeriodSeconds":0,"annotations":{"q":"\"x\""},"ownerReferences":[{"apiVersion":"","kind":"","name":"","uid":""}]}"#,
            "{}",
        ] {
            let compact: CompactMeta = serde_json::from_str(json).unwrap();
            let full: ObjectMeta = serde_json::from_str(json).unwrap();
            assert_eq!(
                serde_json::to_string(&compact).unwrap(),
                serde_json::to_string(&full).unwrap(),
                "{json}"
            );
        }
    }

    #[test]
    fn escaped_strings_and_duplicate_keys() {
        let m: CompactMeta =
            serde_json::from_str(r#"{"name":"a\"b","labels":{"k":"1","k":"2","\u0061":"x"}}"#)
                .unwrap();
        assert_eq!(m.name(), "a\"b");
        assert_eq!(m.labels().get("k"), Some("2"));
        assert_eq!(m.labels().get("a"), Some("x"));
        assert_eq!(m.labels().len(), 2);
    }

    #[test]
    fn nulls_and_absence_decode_as_empty() {
        let m: CompactMeta = serde_json::from_str(
            r#"{"name":"x","namespace":null,"labels":null,"ownerReferences":null,"generation":null}"#,
        )
        .unwrap();
        assert_eq!(m.namespace(), "");
        assert!(m.labels().is_empty());
        assert_eq!(m.owner_references().count(), 0);
        assert_eq!(m, serde_json::from_str(r#"{"name":"x"}"#).unwrap());
        let empty: CompactMeta = serde_json::from_str("{}").unwrap();
        assert_eq!(empty.name(), "");
        assert_eq!(CompactMeta::default().name(), "");
        assert!(CompactMeta::default().labels().is_empty());
        assert_eq!(CompactMeta::default().owner_references().count(), 0);
    }

    #[test]
    fn null_owner_reference_fields_read_as_empty_like_object_meta() {
        // Found by tests/properties_compact.rs: ObjectMeta accepted this, CompactMeta failed
        // with "invalid type: null, expected a string".
        let json =
            r#"{"ownerReferences":[{"apiVersion":null,"kind":null,"name":null,"uid":null}]}"#;
        let compact: CompactMeta = serde_json::from_str(json).unwrap();
        let full: ObjectMeta = serde_json::from_str(json).unwrap();
        assert_eq!(compact.to_object_meta(), full);
        assert_eq!(compact.owner_references().next().unwrap().name, "");
        let from_value: CompactMeta =
            serde_json::from_value(serde_json::from_str(json).unwrap()).unwrap();
        assert_eq!(from_value, compact);
    }

    #[test]
    fn bad_input_is_an_error() {
        for bad in [
            r#"{"name":1}"#,
            r#"{"labels":{"a":1}}"#,
            r#"{"labels":[]}"#,
            r#"{"ownerReferences":{}}"#,
            r#"{"name":"x""#,
        ] {
            assert!(serde_json::from_str::<CompactMeta>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn decodes_from_a_reader_too() {
        // No borrowing possible: every string is copied.
        let m: CompactMeta = serde_json::from_reader(META.as_bytes()).unwrap();
        assert_eq!(m, serde_json::from_str(META).unwrap());
        assert_eq!(m.to_object_meta().owner_references.len(), 2);
    }
}
