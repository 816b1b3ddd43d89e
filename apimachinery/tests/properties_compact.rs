//! Property tests of the compact object decoder (`compact/`: `Compact<K>`, `CompactMeta`).
//!
//! The inputs that come from the network are JSON documents decoded as a `Compact<K>` (alone,
//! as list items, as watch event objects, whose payload may be buffered as a
//! `serde_json::Value` first) and their `metadata` decoded as a `CompactMeta`. Checks:
//!
//! * generated objects (`ConfigMap`s and `Pod`s, metadata with names, namespaces, uids,
//!   resourceVersions, generations, timestamps, labels, annotations, owner references,
//!   finalizers and managedFields, strings with escapes and non-ASCII text) decode to the
//!   metadata they were written from, write back byte for byte, and agree with the typed
//!   decode (`to_typed`, `from_typed`), with `from_reader`, with the `Value` path, with
//!   watch events in either field order and with lists;
//! * label and annotation maps written with duplicate, unsorted and `\u`-escaped keys read
//!   as `ObjectMeta` reads them (the last duplicate wins) and answer lookups for every key;
//! * arbitrary JSON as metadata is accepted exactly when `ObjectMeta` accepts it, with the
//!   same content; arbitrary JSON as an object is accepted exactly when it is a JSON object
//!   whose metadata is; watch events and lists of such objects follow;
//! * `Compact::from_parts` takes JSON objects (and nothing else) as the other fields;
//! * arbitrary bytes and corrupted documents never panic, and whatever decodes re-encodes to
//!   JSON that decodes again to the same object (after one normalization: `Time` is written
//!   to the second).
//!
//! Seeded: every run generates the same cases. More cases, or another seed:
//! `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=7 cargo test -p clientgo-apimachinery --test properties_compact`
//! (the seed in use is printed with `-- --nocapture`).

mod support;

use std::collections::BTreeMap;
use std::fmt::Debug;

use clientgo_apimachinery::{
    Compact, CompactMeta, ManagedFields, Object, ObjectList, ObjectMeta, OwnerRef, OwnerReference,
    Resource, Time, WatchEvent,
};
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use proptest::prelude::*;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use support::config;

const MIN_SECS: i64 = -62_167_219_200;
const MAX_SECS: i64 = 253_402_300_799;

/// Strings: mostly name-like, sometimes anything, sometimes what JSON must escape.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => "[a-z0-9.-]{0,12}",
        1 => prop::collection::vec(any::<char>(), 0..8).prop_map(String::from_iter),
        1 => prop::collection::vec(
            prop::sample::select(vec!["\"", "\\", "\n", "\u{0}", "é", "\u{7f}", "/", "\u{2028}", "😀", "a"]),
            0..5,
        )
        .prop_map(|p| p.concat()),
    ]
}

fn time() -> impl Strategy<Value = Option<Time>> {
    // Whole seconds: `Time` is written to the second, as Go writes `metav1.Time`.
    prop::option::of((MIN_SECS..=MAX_SECS).prop_map(|s| Time::from_unix(s, 0).unwrap()))
}

fn owner() -> impl Strategy<Value = OwnerReference> {
    (
        text(),
        text(),
        text(),
        text(),
        any::<Option<bool>>(),
        any::<Option<bool>>(),
    )
        .prop_map(
            |(api_version, kind, name, uid, controller, block_owner_deletion)| OwnerReference {
                api_version,
                kind,
                name,
                uid,
                controller,
                block_owner_deletion,
            },
        )
}

fn managed_fields() -> impl Strategy<Value = Option<ManagedFields>> {
    prop_oneof![
        2 => Just(None),
        1 => Just(Some(ManagedFields::from_json("[]").unwrap())),
        2 => (text(), text()).prop_map(|(manager, key)| {
            let entry = json!({"manager": manager, "operation": "Update", "apiVersion": "v1",
                "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {format!("f:{key}"): {}}}});
            Some(ManagedFields::from_entries(&[entry]).unwrap())
        }),
    ]
}

fn object_meta() -> impl Strategy<Value = ObjectMeta> {
    let strings = (text(), text(), text(), text(), "[0-9]{0,6}");
    let numbers = (
        prop_oneof![Just(0i64), any::<i64>()],
        time(),
        time(),
        any::<Option<i64>>(),
    );
    let collections = (
        prop::collection::btree_map(text(), text(), 0..5),
        prop::collection::btree_map(text(), text(), 0..3),
        prop::collection::vec(owner(), 0..3),
        prop::collection::vec(text(), 0..3),
        managed_fields(),
    );
    (strings, numbers, collections).prop_map(
        |(
            (name, generate_name, namespace, uid, resource_version),
            (generation, creation_timestamp, deletion_timestamp, deletion_grace_period_seconds),
            (labels, annotations, owner_references, finalizers, managed_fields),
        )| ObjectMeta {
            name,
            generate_name,
            namespace,
            self_link: String::new(),
            uid,
            resource_version,
            generation,
            creation_timestamp,
            deletion_timestamp,
            deletion_grace_period_seconds,
            labels,
            annotations,
            owner_references,
            finalizers,
            managed_fields,
        },
    )
}

/// Top-level fields of a ConfigMap other than its metadata.
fn config_map_fields() -> impl Strategy<Value = Vec<(&'static str, Value)>> {
    (
        prop::option::of(prop::collection::btree_map(text(), text(), 0..4)),
        any::<Option<bool>>(),
    )
        .prop_map(|(data, immutable)| {
            let mut fields = Vec::new();
            if let Some(data) = data {
                fields.push(("data", json!(data)));
            }
            if let Some(immutable) = immutable {
                fields.push(("immutable", json!(immutable)));
            }
            fields
        })
}

/// Top-level fields of a Pod other than its metadata.
fn pod_fields() -> impl Strategy<Value = Vec<(&'static str, Value)>> {
    (
        prop::collection::vec((text(), text()), 1..3),
        prop::option::of(prop::sample::select(vec![
            "Pending",
            "Running",
            "Succeeded",
        ])),
    )
        .prop_map(|(containers, phase)| {
            let containers: Vec<Value> = containers
                .into_iter()
                .map(|(name, image)| json!({"name": name, "image": image}))
                .collect();
            let mut fields = vec![("spec", json!({ "containers": containers }))];
            if let Some(phase) = phase {
                fields.push(("status", json!({ "phase": phase })));
            }
            fields
        })
}

fn to_json<T: Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap()
}

/// A document as a server writes it: apiVersion, kind, metadata, then the other fields.
fn document<K: Resource>(meta: &ObjectMeta, fields: &[(&str, Value)]) -> String {
    let mut out = format!(
        "{{\"apiVersion\":{},\"kind\":{},\"metadata\":{}",
        to_json(&K::api_version()),
        to_json(K::KIND),
        to_json(meta)
    );
    for (name, value) in fields {
        out.push_str(&format!(",{}:{}", to_json(name), to_json(value)));
    }
    out.push('}');
    out
}

/// What decoding gives back: `selfLink` is not kept, empty managedFields are dropped.
fn normalized(meta: &ObjectMeta) -> ObjectMeta {
    ObjectMeta {
        self_link: String::new(),
        managed_fields: meta.managed_fields.clone().filter(|m| !m.is_empty()),
        ..meta.clone()
    }
}

fn fail(context: impl Debug, e: impl std::fmt::Display) -> TestCaseError {
    TestCaseError::fail(format!("{context:?}: {e}"))
}

/// The rest of a compact object as a JSON value.
fn rest_value<K>(c: &Compact<K>) -> Value {
    serde_json::from_str(c.rest()).unwrap()
}

/// Decoding `json` (a document written from `meta` and `fields`) as a `Compact<K>`.
fn check_document<K>(
    json: &str,
    meta: &ObjectMeta,
    fields: &[(&str, Value)],
) -> Result<(), TestCaseError>
where
    K: Resource + DeserializeOwned + Serialize + PartialEq + Debug,
{
    let c: Compact<K> = serde_json::from_str(json).map_err(|e| fail(json, e))?;
    let expected = normalized(meta);
    prop_assert_eq!(&c.metadata.to_object_meta(), &expected);
    prop_assert_eq!(&CompactMeta::from(&expected), &c.metadata);
    prop_assert_eq!(c.key(), expected.key());
    prop_assert_eq!(c.uid(), expected.uid.as_str());
    prop_assert_eq!(c.resource_version(), expected.resource_version.as_str());
    prop_assert_eq!(c.generation(), expected.generation);
    prop_assert_eq!(c.creation_timestamp(), expected.creation_timestamp);
    prop_assert_eq!(c.finalizers(), expected.finalizers.as_slice());
    prop_assert_eq!(c.labels(), expected.labels.clone());
    prop_assert_eq!(c.annotations(), expected.annotations.clone());
    for (k, v) in &expected.labels {
        prop_assert_eq!(c.labels().get(k), Some(v.as_str()));
        prop_assert_eq!(
            c.annotations().get(k),
            expected.annotations.get(k).map(String::as_str)
        );
    }
    prop_assert_eq!(c.labels().get("\u{0}absent"), None);
    prop_assert!(
        c.owner_references()
            .eq(expected.owner_references.iter().map(OwnerRef::from))
    );

    // Written back byte for byte, and decoded again to the same object, by every path.
    prop_assert_eq!(&c.to_json(), json);
    prop_assert_eq!(
        &serde_json::from_str::<Compact<K>>(&c.to_json()).unwrap(),
        &c
    );
    prop_assert_eq!(
        &serde_json::from_reader::<_, Compact<K>>(json.as_bytes()).unwrap(),
        &c
    );
    let value: Value = serde_json::from_str(json).unwrap();
    prop_assert_eq!(&serde_json::to_value(&c).unwrap(), &value);
    let from_value: Compact<K> =
        serde_json::from_value(value.clone()).map_err(|e| fail(json, e))?;
    prop_assert_eq!(&from_value.metadata, &c.metadata);
    prop_assert_eq!(rest_value(&from_value), rest_value(&c));
    for (name, v) in fields {
        prop_assert_eq!(c.field::<Value>(name).unwrap(), Some(v.clone()));
    }
    prop_assert_eq!(c.field::<Value>("metadata").unwrap(), None);

    // The typed object, both ways.
    let typed: K = serde_json::from_str(json).map_err(|e| fail(json, e))?;
    prop_assert_eq!(&c.to_typed().unwrap(), &typed);
    prop_assert_eq!(
        &Compact::<K>::from_typed(&typed)
            .unwrap()
            .to_typed()
            .unwrap(),
        &typed
    );

    // In watch events (the object after or before the type) and in lists.
    let added = format!(r#"{{"type":"ADDED","object":{json}}}"#);
    let event: WatchEvent<Compact<K>> =
        serde_json::from_str(&added).map_err(|e| fail(&added, e))?;
    prop_assert_eq!(event, WatchEvent::Added(c.clone()));
    let buffered = format!(r#"{{"object":{json},"type":"DELETED"}}"#);
    match serde_json::from_str(&buffered).map_err(|e| fail(&buffered, e))? {
        WatchEvent::<Compact<K>>::Deleted(d) => {
            prop_assert_eq!(&d.metadata, &c.metadata);
            prop_assert_eq!(rest_value(&d), rest_value(&c));
        }
        other => prop_assert!(false, "{other:?}"),
    }
    let list = format!(
        r#"{{"kind":"List","metadata":{{"resourceVersion":"9"}},"items":[{json},{json}]}}"#
    );
    let list: ObjectList<Compact<K>> = serde_json::from_str(&list).map_err(|e| fail(&list, e))?;
    prop_assert_eq!(list.items, vec![c.clone(), c]);
    Ok(())
}

/// A JSON object's text from pairs as written: keys may repeat; `ascii` writes every
/// character of keys and values as a `\u` escape.
fn object_text(pairs: &[(String, String)], ascii: bool) -> String {
    let string = |s: &str| {
        if ascii {
            let mut out = String::from("\"");
            for unit in s.encode_utf16() {
                out.push_str(&format!("\\u{unit:04x}"));
            }
            out + "\""
        } else {
            serde_json::to_string(s).unwrap()
        }
    };
    let entries: Vec<String> = pairs
        .iter()
        .map(|(k, v)| format!("{}:{}", string(k), string(v)))
        .collect();
    format!("{{{}}}", entries.join(","))
}

/// Arbitrary JSON scalars.
fn leaf() -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Two decimals: serde_json (without `float_roundtrip`) reads longer ones back a bit
        // off, and the comparisons below are of values read back from text.
        (-1e6..1e6f64).prop_map(|f| Value::from((f * 100.0).round() / 100.0)),
        text().prop_map(Value::String),
        prop::sample::select(vec![
            "2024-01-02T03:04:05Z",
            "2024-01-02T03:04:05.5+01:00",
            "[]"
        ])
        .prop_map(Value::from),
    ]
}

/// Something shaped like metadata: each field mostly of its type, sometimes any scalar
/// (`null` included), owner references with fields of either kind.
fn metadata_like() -> impl Strategy<Value = Value> {
    fn or_leaf(s: impl Strategy<Value = Value> + 'static) -> BoxedStrategy<Value> {
        prop_oneof![6 => s, 1 => Just(Value::Null), 1 => leaf()].boxed()
    }
    let string = || or_leaf(text().prop_map(Value::from));
    let strings = || prop::collection::vec(string(), 0..3).prop_map(Value::Array);
    let string_map = prop::collection::btree_map(text(), string(), 0..3)
        .prop_map(|m| Value::Object(m.into_iter().collect()));
    let owner_field = prop_oneof![
        (
            prop::sample::select(vec!["apiVersion", "kind", "name", "uid", "other"]),
            string()
        ),
        (
            prop::sample::select(vec!["controller", "blockOwnerDeletion"]),
            or_leaf(any::<bool>().prop_map(Value::from))
        ),
    ];
    let owner = prop::collection::vec(owner_field, 0..5)
        .prop_map(|f| Value::Object(f.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()));
    let time = || {
        or_leaf(
            prop::sample::select(vec![
                "2024-01-02T03:04:05Z",
                "1969-12-31T23:59:59.999+00:30",
                "2024-13-01T00:00:00Z",
            ])
            .prop_map(Value::from),
        )
    };
    let int = || or_leaf(any::<i64>().prop_map(Value::from));
    let field = prop_oneof![
        (
            prop::sample::select(vec![
                "name",
                "generateName",
                "namespace",
                "uid",
                "resourceVersion"
            ]),
            string()
        ),
        (
            prop::sample::select(vec!["generation", "deletionGracePeriodSeconds"]),
            int()
        ),
        (
            prop::sample::select(vec!["creationTimestamp", "deletionTimestamp"]),
            time()
        ),
        (
            prop::sample::select(vec!["labels", "annotations"]),
            or_leaf(string_map)
        ),
        (
            Just("ownerReferences"),
            or_leaf(prop::collection::vec(or_leaf(owner), 0..3).prop_map(Value::Array))
        ),
        (Just("finalizers"), or_leaf(strings())),
        (
            Just("managedFields"),
            or_leaf(prop::collection::vec(or_leaf(strings()), 0..2).prop_map(Value::Array))
        ),
    ];
    prop::collection::vec(field, 0..6)
        .prop_map(|f| Value::Object(f.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
}

/// Arbitrary JSON, with object keys drawn mostly from metadata's field names.
fn json_value() -> impl Strategy<Value = Value> {
    let leaf = leaf();
    let key = prop_oneof![
        6 => prop::sample::select(vec![
            "name", "namespace", "generateName", "uid", "resourceVersion", "generation",
            "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
            "annotations", "ownerReferences", "finalizers", "managedFields", "apiVersion",
            "kind", "controller", "blockOwnerDeletion", "metadata", "data", "spec",
        ])
        .prop_map(String::from),
        1 => text(),
    ];
    leaf.prop_recursive(3, 32, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(key.clone(), inner, 0..5)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            // A string map, as labels and annotations are.
            prop::collection::btree_map(text(), text(), 0..3).prop_map(|m| Value::Object(
                m.into_iter().map(|(k, v)| (k, Value::from(v))).collect()
            )),
        ]
    })
}

/// `ObjectMeta`'s decode of `text`, normalized as `CompactMeta` keeps it: the reference.
fn reference_meta(text: &str) -> Option<ObjectMeta> {
    serde_json::from_str::<ObjectMeta>(text)
        .ok()
        .map(|m| normalized(&m))
}

/// Whatever decodes as a `Compact<K>` writes JSON that decodes to the same object once
/// normalized (`Time`s to the second).
fn check_re_encodes<K: Resource>(c: &Compact<K>) -> Result<(), TestCaseError> {
    let once: Compact<K> = serde_json::from_str(&c.to_json()).map_err(|e| fail(c, e))?;
    let twice: Compact<K> = serde_json::from_str(&once.to_json()).map_err(|e| fail(&once, e))?;
    prop_assert_eq!(&twice, &once);
    prop_assert_eq!(rest_value(&once), rest_value(c));
    Ok(())
}

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn config_maps_round_trip(meta in object_meta(), fields in config_map_fields()) {
        check_document::<ConfigMap>(&document::<ConfigMap>(&meta, &fields), &meta, &fields)?;
    }

    #[test]
    fn pods_round_trip(meta in object_meta(), fields in pod_fields()) {
        check_document::<Pod>(&document::<Pod>(&meta, &fields), &meta, &fields)?;
    }

    #[test]
    fn duplicate_and_escaped_keys_read_as_object_meta_reads_them(
        labels in prop::collection::vec((prop::sample::select(vec!["a", "b", "app", "é", "z\"", ""]).prop_map(String::from), text()), 0..8),
        annotations in prop::collection::vec((text(), text()), 0..6),
        ascii in any::<bool>(),
    ) {
        let json = format!(
            r#"{{"name":"n","labels":{},"annotations":{}}}"#,
            object_text(&labels, ascii),
            object_text(&annotations, !ascii),
        );
        let compact: CompactMeta = serde_json::from_str(&json).map_err(|e| fail(&json, e))?;
        let full: ObjectMeta = serde_json::from_str(&json).unwrap();
        prop_assert_eq!(&compact.to_object_meta(), &full);
        let last_wins: BTreeMap<String, String> = labels.iter().cloned().collect();
        prop_assert_eq!(compact.labels(), last_wins.clone());
        for (k, v) in &last_wins {
            prop_assert_eq!(compact.labels().get(k), Some(v.as_str()));
        }
        for (k, _) in &annotations {
            prop_assert_eq!(compact.annotations().get(k), full.annotations.get(k).map(String::as_str));
        }
        prop_assert!(compact.labels().keys().is_sorted());
        prop_assert_eq!(&serde_json::from_reader::<_, CompactMeta>(json.as_bytes()).unwrap(), &compact);
        prop_assert_eq!(&CompactMeta::from(&full), &compact);
    }

    #[test]
    fn arbitrary_metadata_is_accepted_exactly_as_object_meta_accepts_it(
        v in prop_oneof![json_value(), metadata_like()]
    ) {
        let text = v.to_string();
        let compact = serde_json::from_str::<CompactMeta>(&text);
        let reference = reference_meta(&text);
        prop_assert_eq!(compact.is_ok(), reference.is_some(), "{}: {:?}", text, compact);
        if let (Ok(compact), Some(reference)) = (compact, reference) {
            prop_assert_eq!(&compact.to_object_meta(), &reference, "{}", text);
            let from_value: CompactMeta = serde_json::from_value(v).unwrap();
            prop_assert_eq!(from_value, compact);
        }
    }

    #[test]
    fn arbitrary_objects_are_accepted_exactly_when_their_metadata_is(
        v in json_value(),
        meta in prop::option::of(prop_oneof![json_value(), metadata_like()]),
        ty in prop::sample::select(vec!["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "added", ""]),
    ) {
        let mut v = v;
        if let (Value::Object(fields), Some(meta)) = (&mut v, meta) {
            fields.insert("metadata".into(), meta);
        }
        let text = v.to_string();
        let decoded = serde_json::from_str::<Compact<ConfigMap>>(&text);
        let expected = v.as_object().map(|fields| match fields.get("metadata") {
            None | Some(Value::Null) => Some(ObjectMeta::default()),
            Some(meta) => reference_meta(&meta.to_string()),
        });
        match (&decoded, expected) {
            (Ok(c), Some(Some(meta))) => {
                prop_assert_eq!(&c.metadata.to_object_meta(), &meta);
                let mut rest = v.as_object().unwrap().clone();
                for name in ["apiVersion", "kind", "metadata"] {
                    rest.remove(name);
                }
                prop_assert_eq!(rest_value(c), Value::Object(rest));
                check_re_encodes(c)?;
            }
            (Err(_), None | Some(None)) => {}
            (decoded, expected) => prop_assert!(false, "{text}: {decoded:?}, expected {expected:?}"),
        }
        // In a watch event, with the object before or after the type; in a list.
        let ok = decoded.is_ok();
        for event in [format!(r#"{{"type":"{ty}","object":{text}}}"#), format!(r#"{{"object":{text},"type":"{ty}"}}"#)] {
            let result = serde_json::from_str::<WatchEvent<Compact<ConfigMap>>>(&event);
            if ["ADDED", "MODIFIED", "DELETED"].contains(&ty) {
                prop_assert_eq!(result.is_ok(), ok, "{}: {:?}", event, result);
            } else if ty.is_empty() || ty == "added" {
                prop_assert!(result.is_err());
            }
        }
        let list = format!(r#"{{"items":[{text},{{}}]}}"#);
        let items = serde_json::from_str::<ObjectList<Compact<ConfigMap>>>(&list);
        prop_assert_eq!(items.is_ok(), ok);
    }

    #[test]
    fn from_parts_takes_json_objects_only(meta in object_meta(), rest in json_value()) {
        let mut rest = rest;
        if let Value::Object(fields) = &mut rest {
            // Fields the object's own JSON writes: `from_parts` is told not to get them.
            for name in ["apiVersion", "kind", "metadata"] {
                fields.remove(name);
            }
        }
        let raw = serde_json::value::to_raw_value(&rest).unwrap();
        let compact = Compact::<ConfigMap>::from_parts(CompactMeta::from(&meta), raw);
        prop_assert_eq!(compact.is_ok(), rest.is_object());
        if let Ok(c) = compact {
            prop_assert_eq!(&c.metadata.to_object_meta(), &normalized(&meta));
            prop_assert_eq!(rest_value(&c), rest);
            let again: Compact<ConfigMap> = serde_json::from_str(&c.to_json()).map_err(|e| fail(&c, e))?;
            prop_assert_eq!(again, c);
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..64)) {
        let _ = serde_json::from_slice::<CompactMeta>(&bytes);
        if let Ok(c) = serde_json::from_slice::<Compact<Pod>>(&bytes) {
            check_re_encodes(&c)?;
        }
        let _ = serde_json::from_slice::<WatchEvent<Compact<Pod>>>(&bytes);
        let _ = serde_json::from_slice::<ObjectList<Compact<ConfigMap>>>(&bytes);
    }

    #[test]
    fn corrupted_documents_never_panic(
        meta in object_meta(),
        fields in pod_fields(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..4, any::<u8>()), 1..4),
    ) {
        let mut bytes = document::<Pod>(&meta, &fields).into_bytes();
        for (at, kind, byte) in edits {
            let at = at.index(bytes.len() + 1);
            match kind {
                0 => { bytes.insert(at, byte); }
                1 if at < bytes.len() => { bytes.remove(at); }
                2 if at < bytes.len() => bytes[at] = byte,
                _ => bytes.truncate(at),
            }
        }
        let meta_result = serde_json::from_slice::<CompactMeta>(&bytes);
        if let Ok(c) = serde_json::from_slice::<Compact<Pod>>(&bytes) {
            check_re_encodes(&c)?;
            prop_assert_eq!(c.clone(), serde_json::from_reader::<_, Compact<Pod>>(bytes.as_slice()).unwrap());
        }
        if let Ok(m) = meta_result {
            let _ = m.to_object_meta();
        }
        let mut event = br#"{"type":"MODIFIED","object":"#.to_vec();
        event.extend_from_slice(&bytes);
        event.push(b'}');
        let _ = serde_json::from_slice::<WatchEvent<Compact<Pod>>>(&event);
    }
}
