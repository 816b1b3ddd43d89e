//! `metadata.managedFields`, kept as raw JSON text.
//!
//! Mirrors the `ManagedFields []ManagedFieldsEntry` field of `metav1.ObjectMeta`. The
//! machinery never interprets server-side-apply bookkeeping, it only has to carry it, so
//! we keep the array as the exact JSON text it arrived as, in a
//! [`serde_json::value::RawValue`]:
//!
//! * **Why `RawValue` and not `serde_json::Value`:** managedFields is often the largest part
//!   of an object's metadata. A `Value` tree costs one allocation per map node, key and
//!   string; `Box<RawValue>` is one allocation of the compact text, which matters when a
//!   cache holds 100,000 Pods. It also round-trips byte for byte (a `Value` would only
//!   round-trip value for value, and reorder keys).
//! * **The catch, handled here:** serde_json can only produce a `RawValue` when it drives
//!   the deserialization itself. When the JSON was first buffered by serde (an object
//!   inside `#[serde(flatten)]`, an untagged enum) or comes from a `serde_json::Value`, our
//!   deserializer falls back to decoding a `Value` and re-encoding it compactly, so decoding
//!   never fails for that reason.
//! * Serializing writes the raw text back verbatim with serde_json; other serializers
//!   (e.g. `serde_json::to_value`) get the parsed value.
//!
//! Differences from Go: entries are not typed (use [`ManagedFields::entries`] to inspect
//! them), and an empty array is dropped on output as Go's `omitempty` does.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;

/// The raw JSON text of a `managedFields` array.
#[derive(Clone)]
pub struct ManagedFields(Box<RawValue>);

impl ManagedFields {
    /// Wraps JSON text, which must be an array.
    pub fn from_json(json: impl Into<String>) -> Result<ManagedFields, serde_json::Error> {
        let raw = RawValue::from_string(json.into())?;
        check_array(raw)
    }

    /// Builds from decoded entries.
    pub fn from_entries(entries: &[serde_json::Value]) -> Result<ManagedFields, serde_json::Error> {
        Ok(ManagedFields(serde_json::value::to_raw_value(entries)?))
    }

    /// The JSON text, exactly as received.
    pub fn json(&self) -> &str {
        self.0.get()
    }

    /// The raw value, for re-embedding without copying.
    pub fn as_raw(&self) -> &RawValue {
        &self.0
    }

    /// Decodes the entries.
    pub fn entries(&self) -> Result<Vec<serde_json::Value>, serde_json::Error> {
        serde_json::from_str(self.0.get())
    }

    /// Whether the array has no entries (such a field is omitted when serializing).
    pub fn is_empty(&self) -> bool {
        self.0
            .get()
            .bytes()
            .filter(|b| !b.is_ascii_whitespace())
            .take(3)
            .eq(*b"[]")
    }
}

fn check_array(raw: Box<RawValue>) -> Result<ManagedFields, serde_json::Error> {
    if raw.get().trim_start().starts_with('[') {
        Ok(ManagedFields(raw))
    } else {
        Err(de::Error::custom(format_args!(
            "managedFields must be a JSON array, found {}",
            truncate(raw.get())
        )))
    }
}

fn truncate(s: &str) -> &str {
    let mut end = s.len().min(40);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

impl PartialEq for ManagedFields {
    /// Compares the JSON text.
    fn eq(&self, other: &ManagedFields) -> bool {
        self.0.get() == other.0.get()
    }
}

impl Eq for ManagedFields {}

impl fmt::Debug for ManagedFields {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ManagedFields").field(&self.0.get()).finish()
    }
}

impl Serialize for ManagedFields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for ManagedFields {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<ManagedFields, D::Error> {
        struct RawOrBuffered;

        impl<'de> Visitor<'de> for RawOrBuffered {
            type Value = ManagedFields;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON array of managed fields entries")
            }

            // serde_json (from text or from a `Value`) answers the RawValue request this way.
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ManagedFields, A::Error> {
                let raw = Box::<RawValue>::deserialize(de::value::MapAccessDeserializer::new(map))?;
                check_array(raw).map_err(de::Error::custom)
            }

            // Content buffered by serde (flatten, untagged) arrives here.
            fn visit_newtype_struct<D: Deserializer<'de>>(
                self,
                deserializer: D,
            ) -> Result<ManagedFields, D::Error> {
                let value = serde_json::Value::deserialize(deserializer)?;
                if !value.is_array() {
                    return Err(de::Error::custom(format_args!(
                        "managedFields must be a JSON array, found {value}"
                    )));
                }
                serde_json::value::to_raw_value(&value)
                    .map(ManagedFields)
                    .map_err(de::Error::custom)
            }

            // Deserializers that ignore the newtype hint hand us the array itself.
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<ManagedFields, A::Error> {
                let mut entries = Vec::new();
                while let Some(v) = seq.next_element::<serde_json::Value>()? {
                    entries.push(v);
                }
                ManagedFields::from_entries(&entries).map_err(de::Error::custom)
            }
        }

        deserializer.deserialize_newtype_struct(RAW_VALUE_TOKEN, RawOrBuffered)
    }
}

/// The newtype name through which serde_json recognizes a request for a `RawValue`.
/// Covered by the tests below: should serde_json ever change it, they fail.
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

#[cfg(test)]
mod tests {
    use super::*;

    const ENTRIES: &str = r#"[{"manager":"kubectl","operation":"Apply","apiVersion":"v1","time":"2024-01-02T03:04:05Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]"#;

    #[test]
    fn keeps_bytes_from_text() {
        let mf: ManagedFields = serde_json::from_str(ENTRIES).unwrap();
        assert_eq!(mf.json(), ENTRIES);
        assert_eq!(serde_json::to_string(&mf).unwrap(), ENTRIES);
        assert_eq!(mf.entries().unwrap().len(), 1);
        assert!(!mf.is_empty());
    }

    #[test]
    fn decodes_from_value_and_buffered_content() {
        let value: serde_json::Value = serde_json::from_str(ENTRIES).unwrap();
        let from_value: ManagedFields = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(
            from_value.entries().unwrap(),
            value.as_array().unwrap().clone()
        );

        #[derive(Deserialize)]
        struct Outer {
            #[serde(flatten)]
            inner: Inner,
        }
        #[derive(Deserialize)]
        struct Inner {
            mf: ManagedFields,
        }
        let outer: Outer = serde_json::from_str(&format!(r#"{{"mf":{ENTRIES},"x":1}}"#)).unwrap();
        assert_eq!(
            outer.inner.mf.entries().unwrap(),
            value.as_array().unwrap().clone()
        );
        assert_eq!(serde_json::to_value(&outer.inner.mf).unwrap(), value);
    }

    #[test]
    fn rejects_non_arrays() {
        let err = serde_json::from_str::<ManagedFields>(r#"{"a":1}"#).unwrap_err();
        assert!(
            err.to_string()
                .contains("managedFields must be a JSON array"),
            "{err}"
        );
        assert!(serde_json::from_value::<ManagedFields>(serde_json::json!(5)).is_err());
        assert!(ManagedFields::from_json("7").is_err());
        assert!(ManagedFields::from_json("[").is_err());
    }

    #[test]
    fn empty_detection() {
        assert!(ManagedFields::from_json("[ ]").unwrap().is_empty());
        assert!(!ManagedFields::from_json("[{}]").unwrap().is_empty());
    }
}
