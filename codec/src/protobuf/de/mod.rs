//! Protobuf read straight into any `Deserialize` type, with no JSON in between: a serde
//! `Deserializer` that walks the wire bytes with the [`schema`](super::schema) and shows the
//! type the object kube-apiserver would have written in JSON, key for key.
//!
//! client-go decodes protobuf into its Go types with generated code. Here the schema's table
//! stands in for that code, as it does for the [transcoder](super::transcode), and the two
//! follow the same rules, so an object reads the same either way: the fields a message lists,
//! by ascending number (a message whose numbers go down somewhere is read field by field: see
//! `order`); the last value of a field given twice; `omitempty` fields left out when zero;
//! times as RFC 3339 strings; the zero `Time` left out and the zero `MicroTime` `null`; an
//! absent list of a `Present` field as `[]`; strings that are not UTF-8 with U+FFFD. Strings
//! are lent from the input, so a type that borrows them copies nothing.
//!
//! Where it differs from decoding the transcoder's JSON: a value the type does not read (a key
//! it ignores) is skipped without being looked into, as a protobuf decoder skips an unknown
//! field. A `serde_json::value::RawValue` (what [`Compact`](clientgo_apimachinery::Compact)
//! keeps its fields other than metadata in) is given that value's JSON, made by the
//! transcoder. Errors describe the type's expectation and the field, never a value.

mod fields;
mod order;
mod value;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, Visitor};

use super::schema::Message;
use super::transcode;
use super::wire::bytes_fields;
use super::{ProtobufError, Unwrapped};
use fields::Fields;
pub(super) use order::in_order;
pub(super) use value::Val;

/// The name serde_json's `RawValue` asks a deserializer for; given it, a value hands over its
/// JSON (see the module docs).
const RAW_VALUE_TOKEN: &str = "$serde_json::private::RawValue";

/// Decodes a protobuf object (`k8s\0` and a `runtime.Unknown`) into `T`, as if from the JSON
/// [`object_to_json`](super::object_to_json) writes for it.
pub fn from_object<'de, T: de::Deserialize<'de>>(object: &'de [u8]) -> Result<T, ProtobufError> {
    let Unwrapped {
        message,
        api_version,
        kind,
        raw,
    } = super::unwrap(object)?;
    order::in_order(|| {
        T::deserialize(ObjectDe {
            message,
            raw,
            type_meta: (kind, api_version),
        })
    })
}

/// Decodes a protobuf watch event (one frame's `metav1.WatchEvent`, its length prefix
/// removed) into `T`, a [`WatchEvent`](clientgo_apimachinery::WatchEvent) of some type, as if
/// from the JSON [`watch_event_to_json`](super::watch_event_to_json) writes for it: a map of
/// its `type` and its `object`.
pub fn from_watch_event<'de, T: de::Deserialize<'de>>(
    event: &'de [u8],
) -> Result<T, ProtobufError> {
    let [event_type, raw_extension] = bytes_fields(event, "WatchEvent", [1, 2])?;
    let [object] = bytes_fields(raw_extension, "RawExtension", [1])?;
    order::in_order(|| {
        T::deserialize(EventDe {
            event_type,
            object: Some(object),
        })
    })
}

/// A watch event: its type, then its object.
struct EventDe<'de> {
    event_type: &'de [u8],
    /// The object, until its key has been handed out.
    object: Option<&'de [u8]>,
}

impl<'de> Deserializer<'de> for EventDe<'de> {
    type Error = ProtobufError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtobufError> {
        visitor.visit_map(EventFields {
            event: self,
            step: 0,
        })
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

/// The members of an [`EventDe`]: `type`, then `object`.
struct EventFields<'de> {
    event: EventDe<'de>,
    /// How many keys have been handed out.
    step: u8,
}

impl<'de> MapAccess<'de> for EventFields<'de> {
    type Error = ProtobufError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProtobufError> {
        let key = match self.step {
            0 => "type",
            1 => "object",
            _ => return Ok(None),
        };
        self.step += 1;
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, ProtobufError> {
        match self.step {
            1 => seed.deserialize(Val::Str(self.event.event_type)),
            _ => {
                let object = self.event.object.take().ok_or_else(|| {
                    ProtobufError::custom_redacted("a value asked for before its key")
                })?;
                let Unwrapped {
                    message,
                    api_version,
                    kind,
                    raw,
                } = super::unwrap(object)?;
                seed.deserialize(ObjectDe {
                    message,
                    raw,
                    type_meta: (kind, api_version),
                })
            }
        }
    }
}

/// The object itself: its message, with its kind and apiVersion.
pub(super) struct ObjectDe<'de> {
    message: &'static Message,
    raw: &'de [u8],
    /// Its kind and apiVersion.
    type_meta: (&'de str, &'de str),
}

impl<'de> Deserializer<'de> for ObjectDe<'de> {
    type Error = ProtobufError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtobufError> {
        visitor.visit_map(Fields::new(self.message, self.raw, Some(self.type_meta))?)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtobufError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProtobufError> {
        if name == RAW_VALUE_TOKEN {
            let (kind, api_version) = self.type_meta;
            let mut prefix = Vec::new();
            super::write_type(api_version.as_bytes(), kind.as_bytes(), &mut prefix);
            let json =
                json_of(|out| transcode::write_object(self.message, self.raw, &prefix, out))?;
            return visitor.visit_map(RawValue(Some(json)));
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, ProtobufError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier enum
    }
}

/// The JSON `write` produces, as a string of exactly its length (UTF-8: strings are made so
/// as they are written, and raw JSON was checked).
///
/// The text is written into a per-thread scratch buffer and copied out once: a `RawValue`
/// (`managedFields`, say) may live in a cache as long as its object, and a buffer grown and
/// then shrunk per value would leave a trail of freed blocks between the objects kept.
pub(super) fn json_of(
    write: impl FnOnce(&mut Vec<u8>) -> Result<(), ProtobufError>,
) -> Result<String, ProtobufError> {
    let mut scratch = SCRATCH.with(|s| std::mem::take(&mut *s.borrow_mut()));
    scratch.clear();
    let result = write(&mut scratch).and_then(|()| match std::str::from_utf8(&scratch) {
        Ok(text) => Ok(text.to_owned()),
        Err(_) => Err(ProtobufError::Type {
            message: "the JSON of a value is not UTF-8".to_owned(),
            at: None,
        }),
    });
    if scratch.capacity() <= SCRATCH_KEPT {
        SCRATCH.with(|s| *s.borrow_mut() = scratch);
    }
    result
}

/// The largest scratch buffer a thread keeps between values.
const SCRATCH_KEPT: usize = 1 << 20;

thread_local! {
    static SCRATCH: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// What serde_json's `RawValue` reads: one key (its token), whose value is the JSON.
pub(super) struct RawValue(Option<String>);

impl<'de> MapAccess<'de> for RawValue {
    type Error = ProtobufError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProtobufError> {
        if self.0.is_none() {
            return Ok(None);
        }
        seed.deserialize(BorrowedStrDeserializer::new(RAW_VALUE_TOKEN))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, ProtobufError> {
        let json = self.0.take().unwrap_or_default();
        seed.deserialize(StringDeserializer::new(json))
    }
}

/// What a value was, without the value.
fn kind_of(unexpected: de::Unexpected<'_>) -> String {
    use de::Unexpected as U;
    match unexpected {
        U::Bool(_) => "boolean".to_owned(),
        U::Unsigned(_) | U::Signed(_) => "integer".to_owned(),
        U::Float(_) => "floating point".to_owned(),
        U::Char(_) => "character".to_owned(),
        U::Str(_) => "string".to_owned(),
        U::Bytes(_) => "byte array".to_owned(),
        U::Other(_) => "value".to_owned(),
        other => other.to_string(),
    }
}

const WITHHELD: &str =
    "the value does not match the expected type (details withheld: they may quote the value)";

impl ProtobufError {
    pub(super) fn custom_redacted(message: impl Into<String>) -> Self {
        ProtobufError::Type {
            message: message.into(),
            at: None,
        }
    }

    /// Says which field a type error happened in, unless a field inside it was named.
    pub(super) fn at(self, message: &'static str, field: u32) -> Self {
        match self {
            ProtobufError::Type {
                message: text,
                at: None,
            } if field != 0 => ProtobufError::Type {
                message: text,
                at: Some((message, field)),
            },
            other => other,
        }
    }
}

/// Type errors in the words serde_json uses, values left out: a decode error may be logged,
/// and an object's values must not be.
impl de::Error for ProtobufError {
    fn custom<T: std::fmt::Display>(_message: T) -> Self {
        // Free text from a type's own code: it may quote the value.
        Self::custom_redacted(WITHHELD)
    }

    fn invalid_type(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        let kind = kind_of(unexpected);
        Self::custom_redacted(format!("invalid type: {kind}, expected {expected}"))
    }

    fn invalid_value(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        let kind = kind_of(unexpected);
        Self::custom_redacted(format!("invalid value: {kind}, expected {expected}"))
    }

    fn invalid_length(len: usize, expected: &dyn de::Expected) -> Self {
        Self::custom_redacted(format!("invalid length {len}, expected {expected}"))
    }

    fn unknown_variant(_variant: &str, expected: &'static [&'static str]) -> Self {
        Self::custom_redacted(format!("unknown variant, expected one of {expected:?}"))
    }

    fn unknown_field(_field: &str, expected: &'static [&'static str]) -> Self {
        Self::custom_redacted(format!("unknown field, expected one of {expected:?}"))
    }

    fn missing_field(field: &'static str) -> Self {
        Self::custom_redacted(format!("missing field `{field}`"))
    }

    fn duplicate_field(field: &'static str) -> Self {
        Self::custom_redacted(format!("duplicate field `{field}`"))
    }
}
