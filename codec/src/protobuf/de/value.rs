//! One value of an object, read from the wire only when the type asks for it, and the
//! `Deserializer` that hands it to the type: a string, a number, a time, raw JSON, or a
//! message, map or list, whose members [`fields`](super::fields) reads.

use std::borrow::Cow;

use serde::de::value::{BorrowedStrDeserializer, StringDeserializer};
use serde::de::{self, Deserializer, Visitor};

use super::super::schema::{Emit, Field, Kind, Message};
use super::super::transcode::{self, bytes_of, last_value, varint_of};
use super::super::wire::{Value, bytes_fields};
use super::fields::{Elements, Entries, Fields};
use super::{RAW_VALUE_TOKEN, RawValue, json_of};
use crate::protobuf::ProtobufError;
use clientgo_apimachinery::Time;

/// One value of an object, read from the wire when the type asks for it.
pub(in crate::protobuf) enum Val<'de> {
    Str(&'de [u8]),
    Bool(bool),
    Int(i64),
    /// A `Time`, written to the second.
    Time(Time),
    /// A `MicroTime`, to the microsecond; `None` is `null`.
    MicroTime(Option<Time>),
    /// A `FieldsV1`'s JSON (empty: `null`), with its message and field for errors.
    RawJson(&'de [u8], &'static Message, &'static Field),
    /// Bytes, written in base64.
    Base64(&'de [u8]),
    /// A message.
    Message(&'static Message, &'de [u8]),
    /// A map field's entries in these bytes.
    Map(&'static Message, &'static Field, &'de [u8]),
    /// A repeated field's elements in these bytes.
    Seq(&'static Message, &'static Field, &'de [u8]),
    /// The `[]` of a list the wire leaves out.
    EmptySeq,
}

impl<'de> Val<'de> {
    /// The value of `field` in `bytes`, its whole message, or `None` when the JSON leaves it
    /// out: the choices of the transcoder's `write_field`.
    pub(super) fn of(
        message: &'static Message,
        field: &'static Field,
        bytes: &'de [u8],
    ) -> Result<Option<Self>, ProtobufError> {
        match field.kind {
            Kind::StringMap | Kind::BytesMap | Kind::Strings | Kind::Messages(_) => {
                Val::of_run(message, field, bytes, None)
            }
            _ => match last_value(message, field, bytes)? {
                Some(last) => Val::of_run(message, field, bytes, Some(last)),
                None => Ok(None),
            },
        }
    }

    /// The value of `field` in `run` (the bytes that hold it, each of its values checked to
    /// have the right wire type), whose `last` value is given for a field that is not
    /// repeated; `None` when the JSON leaves it out.
    #[inline(always)]
    pub(super) fn of_run(
        message: &'static Message,
        field: &'static Field,
        run: &'de [u8],
        last: Option<Value<'de>>,
    ) -> Result<Option<Self>, ProtobufError> {
        let non_zero = field.emit == Emit::NonZero;
        let Some(last) = last else {
            return Ok(match field.kind {
                Kind::StringMap | Kind::BytesMap => Some(Val::Map(message, field, run)),
                Kind::Strings | Kind::Messages(_) => Some(Val::Seq(message, field, run)),
                _ => None,
            });
        };
        Ok(match field.kind {
            Kind::String => Some(bytes_of(last))
                .filter(|text| !(non_zero && text.is_empty()))
                .map(Val::Str),
            Kind::Bool => Some(varint_of(last) != 0)
                .filter(|&v| v || !non_zero)
                .map(Val::Bool),
            Kind::Int => Some(varint_of(last) as i64)
                .filter(|&v| !(non_zero && v == 0))
                .map(Val::Int),
            Kind::Time => transcode::time(message, field, bytes_of(last))?.map(Val::Time),
            Kind::MicroTime => Some(Val::MicroTime(transcode::time(
                message,
                field,
                bytes_of(last),
            )?)),
            Kind::RawJson => {
                let [raw] = bytes_fields(bytes_of(last), message.name, [1])?;
                Some(Val::RawJson(raw, message, field))
            }
            Kind::Message(inner) => Some(Val::Message(inner, bytes_of(last))),
            Kind::StringMap | Kind::BytesMap => Some(Val::Map(message, field, run)),
            Kind::Strings | Kind::Messages(_) => Some(Val::Seq(message, field, run)),
        })
    }

    /// The JSON the transcoder writes for this value.
    pub(super) fn to_json(&self) -> Result<String, ProtobufError> {
        json_of(|out| {
            match *self {
                Val::Str(text) => transcode::write_str(text, out),
                Val::Bool(v) => out.extend_from_slice(if v { b"true" } else { b"false" }),
                Val::Int(v) => out.extend_from_slice(v.to_string().as_bytes()),
                Val::Time(time) => quoted(out, |out| time.write_rfc3339(out)),
                Val::MicroTime(Some(time)) => quoted(out, |out| time.write_rfc3339_micros(out)),
                Val::MicroTime(None) => out.extend_from_slice(b"null"),
                Val::RawJson(raw, message, field) => {
                    if raw.is_empty() {
                        out.extend_from_slice(b"null");
                    } else if crate::json::is_valid(raw) {
                        out.extend_from_slice(raw);
                    } else {
                        return Err(raw_json_error(message, field));
                    }
                }
                Val::Base64(bytes) => transcode::write_base64(bytes, out),
                Val::Message(message, bytes) => transcode::write_object(message, bytes, b"", out)?,
                Val::Map(message, field, bytes) => {
                    transcode::write_map(message, field, bytes, out)?
                }
                Val::Seq(message, field, bytes) => {
                    transcode::write_list(message, field, bytes, out)?;
                }
                Val::EmptySeq => out.extend_from_slice(b"[]"),
            }
            Ok(())
        })
    }
}

fn quoted(out: &mut Vec<u8>, write: impl FnOnce(&mut Vec<u8>)) {
    out.push(b'"');
    write(out);
    out.push(b'"');
}

fn raw_json_error(message: &'static Message, field: &'static Field) -> ProtobufError {
    ProtobufError::RawJson {
        message: message.name,
        field: field.number,
    }
}

/// A protobuf string as Rust text: lent when it is UTF-8, else with U+FFFD for what is not.
fn text(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

#[inline]
fn visit_text<'de, V: Visitor<'de>>(
    bytes: &'de [u8],
    visitor: V,
) -> Result<V::Value, ProtobufError> {
    match std::str::from_utf8(bytes) {
        Ok(text) => visitor.visit_borrowed_str(text),
        Err(_) => visitor.visit_string(String::from_utf8_lossy(bytes).into_owned()),
    }
}

impl<'de> Deserializer<'de> for Val<'de> {
    type Error = ProtobufError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtobufError> {
        match self {
            Val::Str(bytes) => visit_text(bytes, visitor),
            Val::Bool(v) => visitor.visit_bool(v),
            // As serde_json reads a number: unsigned when it is not negative.
            Val::Int(v) => match u64::try_from(v) {
                Ok(v) => visitor.visit_u64(v),
                Err(_) => visitor.visit_i64(v),
            },
            Val::Time(time) => {
                let mut out = Vec::with_capacity(20);
                time.write_rfc3339(&mut out);
                visit_ascii(out, visitor)
            }
            Val::MicroTime(Some(time)) => {
                let mut out = Vec::with_capacity(27);
                time.write_rfc3339_micros(&mut out);
                visit_ascii(out, visitor)
            }
            Val::MicroTime(None) => visitor.visit_unit(),
            Val::RawJson(raw, message, field) => {
                if raw.is_empty() {
                    return visitor.visit_unit();
                }
                let mut json = serde_json::Deserializer::from_slice(raw);
                let value = de::Deserializer::deserialize_any(&mut json, visitor)
                    .and_then(|value| json.end().map(|()| value))
                    .map_err(|error| match error.classify() {
                        serde_json::error::Category::Data => {
                            ProtobufError::custom_redacted(crate::json::redacted_message(&error))
                        }
                        _ => raw_json_error(message, field),
                    })?;
                Ok(value)
            }
            Val::Base64(bytes) => {
                let mut out = Vec::with_capacity(bytes.len().div_ceil(3) * 4 + 2);
                transcode::write_base64(bytes, &mut out);
                out.pop();
                out.remove(0);
                visit_ascii(out, visitor)
            }
            Val::Message(message, bytes) => visitor.visit_map(Fields::new(message, bytes, None)?),
            Val::Map(message, field, bytes) => {
                visitor.visit_map(Entries::new(message, field, bytes))
            }
            Val::Seq(message, field, bytes) => {
                visitor.visit_seq(Elements::new(message, field, bytes))
            }
            Val::EmptySeq => visitor.visit_seq(Elements::empty()),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProtobufError> {
        match self {
            Val::MicroTime(None) => visitor.visit_none(),
            Val::RawJson(raw, ..) if raw.is_empty() || raw.trim_ascii() == b"null" => {
                visitor.visit_none()
            }
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProtobufError> {
        if name == RAW_VALUE_TOKEN {
            return visitor.visit_map(RawValue(Some(self.to_json()?)));
        }
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProtobufError> {
        match self {
            Val::Str(bytes) => match text(bytes) {
                Cow::Borrowed(text) => visitor.visit_enum(BorrowedStrDeserializer::new(text)),
                Cow::Owned(text) => visitor.visit_enum(StringDeserializer::new(text)),
            },
            Val::RawJson(raw, message, field) if !raw.is_empty() => {
                let mut json = serde_json::Deserializer::from_slice(raw);
                de::Deserializer::deserialize_enum(&mut json, name, variants, visitor)
                    .map_err(|_| raw_json_error(message, field))
            }
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(
        self,
        visitor: V,
    ) -> Result<V::Value, ProtobufError> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier
    }
}

/// Hands `out`, ASCII made here (a time, base64), to `visitor` as a string.
fn visit_ascii<'de, V: Visitor<'de>>(out: Vec<u8>, visitor: V) -> Result<V::Value, ProtobufError> {
    match std::str::from_utf8(&out) {
        Ok(text) => visitor.visit_str(text),
        Err(_) => Err(ProtobufError::custom_redacted(
            "a time or base64 that is not ASCII",
        )),
    }
}
