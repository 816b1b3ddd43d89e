//! The members of a message as a serde map, and a repeated field's elements as a sequence
//! or a map: the wire read in order, a run of one field number at a time, as the
//! [transcoder](super::super::transcode) reads it.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{DeserializeSeed, MapAccess, SeqAccess};

use super::super::schema::{Emit, Field, Kind, Message};
use super::super::transcode::{self, Values, bit, bytes_of, values};
use super::super::wire::{Reader, Value, bytes_fields};
use super::order;
use super::value::Val;
use crate::protobuf::ProtobufError;

/// Where [`Fields`] is in a message.
enum Step<'de> {
    /// The object's kind, then its apiVersion.
    TypeMeta(u8, &'de str, &'de str),
    /// Reading runs of equal field numbers, in ascending order.
    Runs(Reader<'de>),
    /// Numbers go down somewhere: each field of the schema from `index` on, from anywhere.
    Scattered(usize),
    /// The `Present` lists not seen, from `index` on, as `[]`.
    Tail(usize),
}

/// A member of a message: its key, its value and the field it comes from (none for the
/// kind and apiVersion).
type Member<'de> = (&'static str, Val<'de>, Option<&'static Field>);

/// A message's members, as a map.
pub(super) struct Fields<'de> {
    message: &'static Message,
    bytes: &'de [u8],
    step: Step<'de>,
    ordered: bool,
    /// The field numbers seen (for the tail).
    seen: u64,
    /// The value of the key last handed out, and its field.
    value: Option<(Val<'de>, Option<&'static Field>)>,
    /// In [`Step::Runs`], the field read past the end of the last run: its number, value
    /// and where it starts.
    ahead: Option<(u32, Value<'de>, usize)>,
}

impl<'de> Fields<'de> {
    pub(super) fn new(
        message: &'static Message,
        bytes: &'de [u8],
        type_meta: Option<(&'de str, &'de str)>,
    ) -> Result<Self, ProtobufError> {
        // Assumed until a decode finds a message out of order (see `order`).
        let ordered = if order::checking() {
            ascending(bytes)?
        } else {
            true
        };
        let first = if ordered {
            Step::Runs(Reader::new(bytes))
        } else {
            Step::Scattered(0)
        };
        Ok(Fields {
            message,
            bytes,
            step: match type_meta {
                Some((kind, api_version)) => Step::TypeMeta(0, kind, api_version),
                None => first,
            },
            ordered,
            seen: 0,
            value: None,
            ahead: None,
        })
    }

    /// The next member: its key and value.
    #[inline(always)]
    fn next_member(&mut self) -> Result<Option<Member<'de>>, ProtobufError> {
        let message = self.message;
        loop {
            match &mut self.step {
                Step::TypeMeta(0, kind, _) => {
                    let kind = *kind;
                    if let Step::TypeMeta(n, ..) = &mut self.step {
                        *n = 1;
                    }
                    return Ok(Some(("kind", Val::Str(kind.as_bytes()), None)));
                }
                Step::TypeMeta(_, _, api_version) => {
                    let api_version = *api_version;
                    self.step = if self.ordered {
                        Step::Runs(Reader::new(self.bytes))
                    } else {
                        Step::Scattered(0)
                    };
                    return Ok(Some(("apiVersion", Val::Str(api_version.as_bytes()), None)));
                }
                Step::Runs(reader) => {
                    let (number, first, start) = match self.ahead.take() {
                        Some(ahead) => ahead,
                        None => {
                            let start = reader.pos();
                            match reader.field()? {
                                Some((number, value)) => (number, value, start),
                                None => {
                                    self.step = Step::Tail(0);
                                    continue;
                                }
                            }
                        }
                    };
                    let field = message.fields.iter().find(|f| f.number == number);
                    let check = |value| match field {
                        Some(field) => transcode::checked(message.name, field, value),
                        None => Ok(value),
                    };
                    // The rest of the run: the fields that follow with the same number; the
                    // first field after it is kept for the next call.
                    let mut last = check(first)?;
                    let end = loop {
                        let at = reader.pos();
                        match reader.field()? {
                            Some((next, value)) if next == number => last = check(value)?,
                            // Numbers going down: only where the order was assumed (a message
                            // checked and found out of order is read scattered instead).
                            Some((next, _)) if next < number => return Err(order::out_of_order()),
                            Some((next, value)) => {
                                self.ahead = Some((next, value, at));
                                break at;
                            }
                            None => break at,
                        }
                    };
                    let Some(field) = field else {
                        continue;
                    };
                    self.seen |= bit(number);
                    let run = &self.bytes[start..end];
                    if let Some(value) = Val::of_run(message, field, run, Some(last))? {
                        return Ok(Some((field.json, value, Some(field))));
                    }
                }
                Step::Scattered(index) => {
                    let Some(field) = message.fields.get(*index) else {
                        self.step = Step::Tail(0);
                        continue;
                    };
                    *index += 1;
                    let mut reader = Reader::new(self.bytes);
                    let mut any = false;
                    while let Some((number, _)) = reader.field()? {
                        any |= number == field.number;
                    }
                    if !any {
                        continue;
                    }
                    self.seen |= bit(field.number);
                    if let Some(value) = Val::of(message, field, self.bytes)? {
                        return Ok(Some((field.json, value, Some(field))));
                    }
                }
                Step::Tail(index) => {
                    let Some(field) = message.fields.get(*index) else {
                        return Ok(None);
                    };
                    *index += 1;
                    if let (Kind::Messages(_), Emit::Present) = (field.kind, field.emit) {
                        if self.seen & bit(field.number) == 0 {
                            return Ok(Some((field.json, Val::EmptySeq, Some(field))));
                        }
                    }
                }
            }
        }
    }
}

/// Whether the field numbers of `bytes` never go down (checking that every field is whole).
fn ascending(bytes: &[u8]) -> Result<bool, ProtobufError> {
    let mut reader = Reader::new(bytes);
    let mut last = 0;
    let mut ordered = true;
    while let Some((number, _)) = reader.field()? {
        ordered &= number >= last;
        last = number;
    }
    Ok(ordered)
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = ProtobufError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProtobufError> {
        let Some((key, value, field)) = self.next_member()? else {
            return Ok(None);
        };
        self.value = Some((value, field));
        seed.deserialize(BorrowedStrDeserializer::new(key))
            .map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, ProtobufError> {
        let (value, field) = self
            .value
            .take()
            .ok_or_else(|| ProtobufError::custom_redacted("a value asked for before its key"))?;
        let message = self.message;
        seed.deserialize(value)
            .map_err(|error| error.at(message.name, field.map_or(0, |f| f.number)))
    }
}

/// A map field's entries, as a map.
pub(super) struct Entries<'de> {
    values: Values<'de>,
    message: &'static Message,
    field: &'static Field,
    value: Option<&'de [u8]>,
}

impl<'de> Entries<'de> {
    /// The entries of the map `field` of `message` in `bytes`.
    pub(super) fn new(message: &'static Message, field: &'static Field, bytes: &'de [u8]) -> Self {
        Entries {
            values: values(message, field, bytes),
            message,
            field,
            value: None,
        }
    }
}

impl<'de> MapAccess<'de> for Entries<'de> {
    type Error = ProtobufError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, ProtobufError> {
        let Some(entry) = self.values.next().transpose()? else {
            return Ok(None);
        };
        let [key, value] = bytes_fields(bytes_of(entry), self.message.name, [1, 2])?;
        self.value = Some(value);
        seed.deserialize(Val::Str(key)).map(Some)
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<S::Value, ProtobufError> {
        let value = self.value.take().unwrap_or_default();
        let value = match self.field.kind {
            Kind::BytesMap => Val::Base64(value),
            _ => Val::Str(value),
        };
        let (message, number) = (self.message.name, self.field.number);
        seed.deserialize(value)
            .map_err(|error| error.at(message, number))
    }
}

/// A repeated field's elements, as a sequence.
pub(super) struct Elements<'de> {
    values: Option<Values<'de>>,
    field: &'static Field,
}

/// A field for [`Elements::empty`], whose elements never come.
static EMPTY: Field = Field {
    number: 0,
    json: "",
    kind: Kind::Strings,
    emit: Emit::Present,
};

impl<'de> Elements<'de> {
    /// The elements of the repeated `field` of `message` in `bytes`.
    pub(super) fn new(message: &'static Message, field: &'static Field, bytes: &'de [u8]) -> Self {
        Elements {
            values: Some(values(message, field, bytes)),
            field,
        }
    }

    /// No elements: the `[]` of a list the wire leaves out.
    pub(super) fn empty() -> Self {
        Elements {
            values: None,
            field: &EMPTY,
        }
    }
}

impl<'de> SeqAccess<'de> for Elements<'de> {
    type Error = ProtobufError;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, ProtobufError> {
        let Some(value) = self.values.as_mut().and_then(Iterator::next).transpose()? else {
            return Ok(None);
        };
        let value = match self.field.kind {
            Kind::Messages(inner) => Val::Message(inner, bytes_of(value)),
            _ => Val::Str(bytes_of(value)),
        };
        seed.deserialize(value).map(Some)
    }
}
