//! One stored object version: its JSON bytes plus the few metadata fields indexed.
//!
//! Plays the role of the value etcd keeps under `/registry/<resource>/<ns>/<name>` together
//! with what the watch cache extracts for filtering (`storeElement`: labels and fields).
//! The object is kept as its serialized JSON (what is written to clients, without
//! re-encoding) and only the fields the server reads on hot paths are parsed out: key, uid,
//! labels, selectable fields, owner uids, finalizers and the deletion mark. Memory per
//! object is its JSON size plus those small fields. Mutations parse the JSON again
//! ([`StoredObject::to_value`]), which is what the real server does on every write too.

use std::collections::BTreeMap;
use std::sync::Arc;

use clientgo_apimachinery::fields::FieldSelector;
use clientgo_apimachinery::labels::{Labels, Selector};
use serde_json::Value;
use serde_json::value::RawValue;

/// A sorted list of `(key, value)` string pairs (labels or selectable fields), packed in
/// one allocation as `key\0value\0key\0value\0...`: lookups scan, which is fast for the
/// handful of labels an object carries and saves two allocations per pair.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pairs(Box<str>);

impl Pairs {
    fn from_vec(mut v: Vec<(String, String)>) -> Pairs {
        v.sort();
        let mut packed = String::with_capacity(v.iter().map(|(k, v)| k.len() + v.len() + 2).sum());
        for (k, val) in v
            .into_iter()
            .filter(|(k, v)| !k.is_empty() && !k.contains('\0') && !v.contains('\0'))
        {
            packed.push_str(&k);
            packed.push('\0');
            packed.push_str(&val);
            packed.push('\0');
        }
        Pairs(packed.into_boxed_str())
    }

    /// The pairs, in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut parts = self.0.split('\0');
        std::iter::from_fn(move || {
            let k = parts.next().filter(|k| !k.is_empty())?;
            let v = parts.next()?;
            Some((k, v))
        })
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    fn heap_size(&self) -> usize {
        self.0.len()
    }
}

impl Labels for Pairs {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

/// An owner reference, as much as garbage collection needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerUid {
    /// The owner's uid.
    pub uid: Box<str>,
    /// The owner's `apiVersion`.
    pub api_version: Box<str>,
    /// The owner's kind.
    pub kind: Box<str>,
    /// The owner's name.
    pub name: Box<str>,
    /// `blockOwnerDeletion`.
    pub block_owner_deletion: bool,
}

/// One object version as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    json: Box<[u8]>,
    rv: u64,
    key: Box<str>,
    namespace_len: usize,
    uid: Box<str>,
    labels: Pairs,
    fields: Pairs,
    owners: Box<[OwnerUid]>,
    finalizers: Box<[Box<str>]>,
    deleting: bool,
    /// `metadata.deletionGracePeriodSeconds`.
    grace_seconds: Option<i64>,
}

/// `namespace/name`, or `name` when `namespace` is empty (the store key).
pub fn object_key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() {
        name.to_owned()
    } else {
        format!("{namespace}/{name}")
    }
}

fn str_at<'a>(v: &'a Value, path: &str) -> Option<&'a str> {
    let mut cur = v;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    cur.as_str()
}

fn field_string(v: &Value, path: &str) -> Option<String> {
    let mut cur = v;
    for part in path.split('.') {
        cur = cur.get(part)?;
    }
    match cur {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

impl StoredObject {
    /// Builds a stored object from a full object value whose `metadata.resourceVersion`
    /// already says `rv`. `selectable` lists the extra field paths to index.
    pub fn from_value(value: &Value, rv: u64, selectable: &[String]) -> Arc<StoredObject> {
        let json = serde_json::to_vec(value)
            .unwrap_or_default()
            .into_boxed_slice();
        let meta = value.get("metadata").unwrap_or(&Value::Null);
        let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
        let namespace = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
        let labels = meta
            .get("labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                    .collect()
            })
            .unwrap_or_default();
        let fields = selectable
            .iter()
            .filter_map(|f| Some((f.clone(), field_string(value, f)?)))
            .collect();
        let owners = meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .map(|refs| {
                refs.iter()
                    .map(|r| OwnerUid {
                        uid: str_at(r, "uid").unwrap_or("").into(),
                        api_version: str_at(r, "apiVersion").unwrap_or("").into(),
                        kind: str_at(r, "kind").unwrap_or("").into(),
                        name: str_at(r, "name").unwrap_or("").into(),
                        block_owner_deletion: r
                            .get("blockOwnerDeletion")
                            .and_then(Value::as_bool)
                            .unwrap_or(false),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let finalizers = meta
            .get("finalizers")
            .and_then(Value::as_array)
            .map(|f| f.iter().filter_map(Value::as_str).map(Into::into).collect())
            .unwrap_or_default();
        Arc::new(StoredObject {
            json,
            rv,
            key: object_key(namespace, name).into(),
            namespace_len: namespace.len(),
            uid: meta.get("uid").and_then(Value::as_str).unwrap_or("").into(),
            labels: Pairs::from_vec(labels),
            fields: Pairs::from_vec(fields),
            owners,
            finalizers,
            deleting: meta.get("deletionTimestamp").is_some_and(|t| !t.is_null()),
            grace_seconds: meta
                .get("deletionGracePeriodSeconds")
                .and_then(Value::as_i64),
        })
    }

    /// The serialized object.
    pub fn json(&self) -> &[u8] {
        &self.json
    }

    /// Appends the object's JSON without its top-level `apiVersion` and `kind`: how a
    /// built-in type's item is written in a list (kube-apiserver encodes typed lists whose
    /// items have an empty `TypeMeta`; only the list carries them). Reads the object's
    /// top level only, borrowing every member's text.
    pub fn write_without_type_meta(&self, out: &mut Vec<u8>) {
        let Ok(members) = serde_json::from_slice::<BTreeMap<String, &RawValue>>(&self.json) else {
            out.extend_from_slice(&self.json);
            return;
        };
        out.push(b'{');
        let mut first = true;
        for (key, value) in members
            .iter()
            .filter(|(k, _)| k.as_str() != "apiVersion" && k.as_str() != "kind")
        {
            if !first {
                out.push(b',');
            }
            first = false;
            // A string always serializes.
            let _ = serde_json::to_writer(&mut *out, key);
            out.push(b':');
            out.extend_from_slice(value.get().as_bytes());
        }
        out.push(b'}');
    }

    /// The object parsed again, for modification.
    pub fn to_value(&self) -> Value {
        serde_json::from_slice(&self.json).unwrap_or(Value::Null)
    }

    /// Its resourceVersion (the revision that wrote it).
    pub fn rv(&self) -> u64 {
        self.rv
    }

    /// The store key (`namespace/name` or `name`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// `metadata.namespace`.
    pub fn namespace(&self) -> &str {
        &self.key[..self.namespace_len]
    }

    /// `metadata.name`.
    pub fn name(&self) -> &str {
        if self.namespace_len == 0 {
            &self.key
        } else {
            &self.key[self.namespace_len + 1..]
        }
    }

    /// `metadata.uid`.
    pub fn uid(&self) -> &str {
        &self.uid
    }

    /// `metadata.labels`.
    pub fn labels(&self) -> &Pairs {
        &self.labels
    }

    /// The owner references.
    pub fn owners(&self) -> &[OwnerUid] {
        &self.owners
    }

    /// `metadata.finalizers`.
    pub fn finalizers(&self) -> &[Box<str>] {
        &self.finalizers
    }

    /// Whether `metadata.deletionTimestamp` is set.
    pub fn is_deleting(&self) -> bool {
        self.deleting
    }

    /// `metadata.deletionGracePeriodSeconds`.
    pub fn deletion_grace_seconds(&self) -> Option<i64> {
        self.grace_seconds
    }

    /// Whether no grace period holds the object back from removal: none was set, or it is
    /// 0 (what kube-apiserver's delete-during-update asks of an object losing its last
    /// finalizer).
    pub fn grace_period_over(&self) -> bool {
        self.grace_seconds.unwrap_or(0) == 0
    }

    /// Approximate heap bytes used (for the memory test).
    pub fn heap_size(&self) -> usize {
        self.json.len()
            + self.key.len()
            + self.uid.len()
            + self.labels.heap_size()
            + self.fields.heap_size()
            + self
                .owners
                .iter()
                .map(|o| o.uid.len() + o.api_version.len() + o.kind.len() + o.name.len() + 72)
                .sum::<usize>()
            + self.finalizers.iter().map(|f| f.len() + 16).sum::<usize>()
            + std::mem::size_of::<StoredObject>()
    }

    /// Whether the object passes both selectors.
    pub fn matches(&self, labels: &Selector, fields: &FieldSelector) -> bool {
        labels.matches(&self.labels)
            && fields.matches_with(|f| match f {
                "metadata.name" => Some(self.name()),
                "metadata.namespace" => Some(self.namespace()),
                other => self.fields.get(other),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn indexes_metadata_and_matches_selectors() {
        let v = json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ns",
            "uid":"u1","labels":{"app":"web"},"finalizers":["f"],
            "ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"rs","uid":"o1"}]},
            "spec":{"nodeName":"n1"},"status":{"phase":"Running"}});
        let o = StoredObject::from_value(&v, 7, &["spec.nodeName".into(), "status.phase".into()]);
        assert_eq!(
            (o.namespace(), o.name(), o.key(), o.rv()),
            ("ns", "p", "ns/p", 7)
        );
        assert_eq!(o.owners()[0].uid.as_ref(), "o1");
        assert_eq!(o.finalizers().len(), 1);
        let sel: Selector = "app=web".parse().unwrap();
        let f: FieldSelector = "spec.nodeName=n1,status.phase!=Pending".parse().unwrap();
        assert!(o.matches(&sel, &f));
        let f: FieldSelector = "metadata.name=q".parse().unwrap();
        assert!(!o.matches(&sel, &f));
        assert_eq!(o.to_value(), v);
        assert!(o.heap_size() < 2 * o.json().len() + 400);
    }

    #[test]
    fn list_items_of_built_ins_leave_out_type_meta() {
        // `data` holds a `kind` key: only the top-level members go.
        let v = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},
            "data":{"kind":"x","apiVersion":"y"}});
        let o = StoredObject::from_value(&v, 3, &[]);
        let mut out = Vec::new();
        o.write_without_type_meta(&mut out);
        let item: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(
            item,
            json!({"metadata":{"name":"c"},"data":{"kind":"x","apiVersion":"y"}})
        );
    }
}
