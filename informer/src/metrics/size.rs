//! Approximate object sizes, for `informer_cache_bytes`: the length an object has in its
//! JSON wire form, estimated by walking it once instead of serializing it (see the module
//! docs of `metrics` for the choice and its cost).
//!
//! The estimate counts every key, string, number and literal with its quotes, colons, commas
//! and brackets, the way `serde_json` writes compact JSON. It does not count the escapes of
//! strings that need them (a `"` inside an annotation is written `\"`), so it can fall short
//! by the number of such characters. Lengths saturate rather than overflow.

use std::any::Any;
use std::fmt::{self, Write};
use std::sync::Arc;

use clientgo_apimachinery::{DynamicObject, Object};
use serde_json::{Number, Value};

/// Estimates the size in bytes of one object, for `informer_cache_bytes`. Called once per
/// object entering the cache, on the informer's process loop: keep it quick.
pub type ObjectSizeFn<T> = Arc<dyn Fn(&T) -> usize + Send + Sync>;

/// The default size estimate: the object's length as compact JSON, without serializing it.
///
/// A [`DynamicObject`] is walked entirely: `apiVersion`, `kind`, every metadata field
/// (`managedFields` included, kept as raw JSON) and every other field. Any other type is
/// opaque beyond the [`Object`] accessors, so only its metadata is counted (the lower bound
/// `{"metadata":{...}}`); for typed objects, give the informer an estimator that knows them
/// ([`SharedIndexInformer::set_object_size_estimator`](crate::SharedIndexInformer::set_object_size_estimator)).
///
/// ```
/// use clientgo_apimachinery::DynamicObject;
/// use clientgo_informer::approx_json_size;
///
/// let object: DynamicObject = serde_json::from_str(
///     r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"prod"},"data":{"k":"v"}}"#,
/// )?;
/// assert_eq!(approx_json_size(&object), serde_json::to_vec(&object)?.len());
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn approx_json_size<T: Object + 'static>(object: &T) -> usize {
    if let Some(dynamic) = (object as &dyn Any).downcast_ref::<DynamicObject>() {
        return dynamic_size(dynamic);
    }
    let mut json = JsonObject::default();
    json.entry("metadata", metadata_size(object, None));
    json.finish()
}

/// A JSON object being measured: `{` entries separated by `,` `}`.
#[derive(Default)]
struct JsonObject {
    len: usize,
    entries: usize,
}

impl JsonObject {
    /// `"key":` and a value of `value_len` bytes.
    fn entry(&mut self, key: &str, value_len: usize) {
        self.len = self
            .len
            .saturating_add(key.len() + 3)
            .saturating_add(value_len);
        self.entries += 1;
    }

    /// A string entry, left out when empty (Go's `omitempty`).
    fn string(&mut self, key: &str, value: &str) {
        if !value.is_empty() {
            self.entry(key, string_len(value));
        }
    }

    /// A map of strings, left out when empty.
    fn string_map<'a>(&mut self, key: &str, map: impl IntoIterator<Item = (&'a str, &'a str)>) {
        let mut inner = JsonObject::default();
        for (k, v) in map {
            inner.entry(k, string_len(v));
        }
        if inner.entries > 0 {
            self.entry(key, inner.finish());
        }
    }

    fn finish(self) -> usize {
        self.len
            .saturating_add(2)
            .saturating_add(self.entries.saturating_sub(1))
    }
}

/// A JSON array being measured.
#[derive(Default)]
struct JsonArray {
    len: usize,
    items: usize,
}

impl JsonArray {
    fn item(&mut self, len: usize) {
        self.len = self.len.saturating_add(len);
        self.items += 1;
    }

    fn finish(self) -> usize {
        self.len
            .saturating_add(2)
            .saturating_add(self.items.saturating_sub(1))
    }
}

fn string_len(s: &str) -> usize {
    s.len().saturating_add(2)
}

fn int_len(n: i64) -> usize {
    let digits = n.unsigned_abs().checked_ilog10().unwrap_or(0) as usize + 1;
    digits + usize::from(n < 0)
}

/// An RFC 3339 timestamp with seconds precision, quoted: `"2024-05-01T10:00:00Z"`.
const TIMESTAMP_LEN: usize = 22;

/// Counts what is written to it.
struct Counter(usize);

impl Write for Counter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 = self.0.saturating_add(s.len());
        Ok(())
    }
}

fn number_len(n: &Number) -> usize {
    if let Some(u) = n.as_u64() {
        return u.checked_ilog10().unwrap_or(0) as usize + 1;
    }
    if let Some(i) = n.as_i64() {
        return int_len(i);
    }
    // A float: written as serde_json writes it, into a counter (no allocation).
    let mut counter = Counter(0);
    let _ = write!(counter, "{n}");
    counter.0
}

/// The length of a JSON value. Recursive: values decoded by `serde_json` are at most 128
/// levels deep.
fn value_len(value: &Value) -> usize {
    match value {
        Value::Null | Value::Bool(true) => 4,
        Value::Bool(false) => 5,
        Value::Number(n) => number_len(n),
        Value::String(s) => string_len(s),
        Value::Array(items) => {
            let mut array = JsonArray::default();
            for item in items {
                array.item(value_len(item));
            }
            array.finish()
        }
        Value::Object(map) => {
            let mut object = JsonObject::default();
            for (k, v) in map {
                object.entry(k, value_len(v));
            }
            object.finish()
        }
    }
}

/// The length of `metadata`'s value, from the [`Object`] accessors; `dynamic` adds what only
/// a [`DynamicObject`]'s metadata holds (`selfLink`, `managedFields`).
fn metadata_size<T: Object + ?Sized>(object: &T, dynamic: Option<&DynamicObject>) -> usize {
    let mut meta = JsonObject::default();
    meta.string("name", object.name());
    meta.string("generateName", object.generate_name());
    meta.string("namespace", object.namespace());
    if let Some(dynamic) = dynamic {
        meta.string("selfLink", &dynamic.metadata.self_link);
    }
    meta.string("uid", object.uid());
    meta.string("resourceVersion", object.resource_version());
    let generation = object.generation();
    if generation != 0 {
        meta.entry("generation", int_len(generation));
    }
    if object.creation_timestamp().is_some() {
        meta.entry("creationTimestamp", TIMESTAMP_LEN);
    }
    if object.deletion_timestamp().is_some() {
        meta.entry("deletionTimestamp", TIMESTAMP_LEN);
    }
    if let Some(seconds) = object.deletion_grace_period_seconds() {
        meta.entry("deletionGracePeriodSeconds", int_len(seconds));
    }
    meta.string_map("labels", object.labels());
    meta.string_map("annotations", object.annotations());
    let mut owners = JsonArray::default();
    for owner in object.owner_references() {
        let mut reference = JsonObject::default();
        reference.entry("apiVersion", string_len(owner.api_version));
        reference.entry("kind", string_len(owner.kind));
        reference.entry("name", string_len(owner.name));
        reference.entry("uid", string_len(owner.uid));
        if let Some(controller) = owner.controller {
            reference.entry("controller", if controller { 4 } else { 5 });
        }
        if let Some(block) = owner.block_owner_deletion {
            reference.entry("blockOwnerDeletion", if block { 4 } else { 5 });
        }
        owners.item(reference.finish());
    }
    if owners.items > 0 {
        meta.entry("ownerReferences", owners.finish());
    }
    let mut finalizers = JsonArray::default();
    for finalizer in object.finalizers() {
        finalizers.item(string_len(finalizer));
    }
    if finalizers.items > 0 {
        meta.entry("finalizers", finalizers.finish());
    }
    if let Some(managed) = dynamic.and_then(|d| d.metadata.managed_fields.as_ref()) {
        if !managed.is_empty() {
            meta.entry("managedFields", managed.json().len());
        }
    }
    meta.finish()
}

fn dynamic_size(object: &DynamicObject) -> usize {
    let mut json = JsonObject::default();
    json.string("apiVersion", object.api_version());
    json.string("kind", object.kind());
    json.entry("metadata", metadata_size(object, Some(object)));
    for (key, value) in &object.data {
        json.entry(key, value_len(value));
    }
    json.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::{ObjectMeta, impl_object};
    use serde_json::json;

    fn dynamic(value: Value) -> DynamicObject {
        serde_json::from_value(value).unwrap()
    }

    fn serialized_len(object: &DynamicObject) -> usize {
        serde_json::to_vec(object).unwrap().len()
    }

    #[test]
    fn a_dynamic_object_without_escapes_measures_its_serialized_length() {
        let objects = [
            dynamic(json!({"metadata": {}})),
            dynamic(json!({"metadata": {"name": "a"}})),
            dynamic(json!({
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {
                    "name": "web",
                    "generateName": "web-",
                    "namespace": "prod",
                    "selfLink": "/apis/apps/v1/namespaces/prod/deployments/web",
                    "uid": "6f0b1c1e-0000-4000-8000-000000000001",
                    "resourceVersion": "123456",
                    "generation": 42,
                    "creationTimestamp": "2024-05-01T10:00:00Z",
                    "deletionTimestamp": "2024-05-02T10:00:00Z",
                    "deletionGracePeriodSeconds": -3,
                    "labels": {"app": "web", "tier": "frontend"},
                    "annotations": {"note": "x"},
                    "ownerReferences": [
                        {"apiVersion": "v1", "kind": "Thing", "name": "o", "uid": "u",
                         "controller": true, "blockOwnerDeletion": false},
                        {"apiVersion": "v1", "kind": "Other", "name": "p", "uid": "v"}
                    ],
                    "finalizers": ["a/b", "c"],
                    "managedFields": [{"manager": "kubectl", "operation": "Update",
                                       "fieldsV1": {"f:spec": {}}}]
                },
                "spec": {
                    "replicas": 3,
                    "offset": -17,
                    "ratio": 0.25,
                    "big": 1.5e300,
                    "paused": false,
                    "ready": true,
                    "nothing": null,
                    "empty": {},
                    "none": [],
                    "ports": [{"port": 80}, {"port": 443, "name": "https"}],
                    "nested": [[1, 2], [], [[]]]
                },
                "status": {"observedGeneration": 0}
            })),
        ];
        for object in &objects {
            assert_eq!(
                approx_json_size(object),
                serialized_len(object),
                "{}",
                serde_json::to_string(object).unwrap()
            );
        }
    }

    #[test]
    fn escapes_are_not_counted() {
        let object = dynamic(json!({
            "metadata": {"name": "a", "annotations": {"last": "{\"k\":\"v\"}"}},
        }));
        // Four quotes, each written with a backslash.
        assert_eq!(approx_json_size(&object) + 4, serialized_len(&object));
    }

    /// A typed object, opaque beyond its metadata.
    #[derive(serde::Serialize)]
    struct Widget {
        metadata: ObjectMeta,
        spec: Value,
    }
    impl_object!(Widget);

    #[test]
    fn a_typed_object_counts_its_metadata() {
        let widget = Widget {
            metadata: serde_json::from_value(json!({
                "name": "w", "namespace": "prod", "resourceVersion": "9",
                "labels": {"app": "web"}, "finalizers": ["f"]
            }))
            .unwrap(),
            spec: json!({"size": "large", "colors": ["red", "blue"]}),
        };
        let metadata_only = json!({"metadata": &widget.metadata});
        assert_eq!(
            approx_json_size(&widget),
            serde_json::to_vec(&metadata_only).unwrap().len()
        );
        assert!(approx_json_size(&widget) < serde_json::to_vec(&widget).unwrap().len());
    }

    #[test]
    fn integer_lengths() {
        for n in [0, 1, 9, 10, 99, 100, -1, -10, i64::MAX, i64::MIN] {
            assert_eq!(int_len(n), n.to_string().len(), "{n}");
        }
    }
}
