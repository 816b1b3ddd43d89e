//! Protobuf to JSON, driven by the [`schema`](super::schema): one pass over the wire bytes
//! of a message writes the JSON object kube-apiserver would have written for it.
//!
//! gogo-protobuf writes a message's fields by ascending number, the elements of a repeated
//! field (and the entries of a map) one after another; such a message is written in one pass,
//! each run of a field number handled as a whole. A message whose numbers go down somewhere
//! (protobuf allows any order) is written field by field, each found by a scan of the message;
//! a field given more than once that is not repeated keeps its last value, as protobuf says.
//! Fields the schema does not list are skipped, as a JSON decoder skips keys its type lacks.

use std::io::Write as _;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use clientgo_apimachinery::Time;

use super::ProtobufError;
use super::schema::{Emit, Field, Kind, Message};
use super::wire::{Reader, Value, bytes_fields};

/// Writes `bytes`, a `message`, as a JSON object; `prefix` (JSON members, without a trailing
/// comma, or empty) opens it.
pub(crate) fn write_object(
    message: &'static Message,
    bytes: &[u8],
    prefix: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    out.push(b'{');
    out.extend_from_slice(prefix);
    let mut first = prefix.is_empty();
    write_fields(message, bytes, 0, &mut first, out)?;
    out.push(b'}');
    Ok(())
}

/// Writes the members of `bytes`, a `message`, but field `skip` (0: none).
pub(crate) fn write_fields(
    message: &'static Message,
    bytes: &[u8],
    skip: u32,
    first: &mut bool,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let (mark, was_first) = (out.len(), *first);
    let seen = match write_runs(message, bytes, skip, first, out)? {
        Some(seen) => seen,
        None => {
            // Numbers went down: start again, field by field.
            out.truncate(mark);
            *first = was_first;
            write_scattered(message, bytes, skip, first, out)?
        }
    };
    // Go writes an empty list's items as `[]`; protobuf has nothing to say it.
    for field in message.fields {
        if let (Kind::Messages(_), Emit::Present) = (field.kind, field.emit) {
            if seen & bit(field.number) == 0 {
                key(field, first, out);
                out.extend_from_slice(b"[]");
            }
        }
    }
    Ok(())
}

/// Writes a message whose field numbers never go down, a run of equal numbers at a time, in
/// one pass; returns the fields seen, or `None` (having written part of it) if a number goes
/// down.
fn write_runs(
    message: &'static Message,
    bytes: &[u8],
    skip: u32,
    first: &mut bool,
    out: &mut Vec<u8>,
) -> Result<Option<u64>, ProtobufError> {
    let mut seen = bit(skip);
    let mut reader = Reader::new(bytes);
    // The run being read: its field number and where it starts.
    let mut run: Option<(u32, usize)> = None;
    loop {
        let start = reader.pos();
        let next = reader.field()?.map(|(number, _)| number);
        if let Some((number, run_start)) = run {
            if next == Some(number) {
                continue;
            }
            if next.is_some_and(|next| next < number) {
                return Ok(None);
            }
            let listed = message.fields.iter().find(|f| f.number == number);
            if let Some(field) = listed.filter(|f| f.number != skip) {
                seen |= bit(number);
                write_field(message, field, &bytes[run_start..start], first, out)?;
            }
        }
        match next {
            Some(number) => run = Some((number, start)),
            None => return Ok(Some(seen)),
        }
    }
}

/// Writes a message whose fields come in any order: each field listed in the schema, from
/// every place it appears. Returns the fields seen.
fn write_scattered(
    message: &'static Message,
    bytes: &[u8],
    skip: u32,
    first: &mut bool,
    out: &mut Vec<u8>,
) -> Result<u64, ProtobufError> {
    let mut seen = bit(skip);
    for field in message.fields.iter().filter(|f| f.number != skip) {
        let mut reader = Reader::new(bytes);
        let mut any = false;
        while let Some((number, _)) = reader.field()? {
            any |= number == field.number;
        }
        if any {
            seen |= bit(field.number);
            write_field(message, field, bytes, first, out)?;
        }
    }
    Ok(seen)
}

pub(crate) fn bit(number: u32) -> u64 {
    1u64.checked_shl(number).unwrap_or(0)
}

/// The values of `field` in `bytes` (part or all of its message), in order, each checked to
/// have the wire type its kind takes.
pub(crate) struct Values<'a> {
    reader: Reader<'a>,
    message: &'static str,
    field: &'static Field,
}

impl<'a> Iterator for Values<'a> {
    type Item = Result<Value<'a>, ProtobufError>;

    fn next(&mut self) -> Option<Self::Item> {
        let number = self.field.number;
        loop {
            let value = match self.reader.field() {
                Err(error) => return Some(Err(error.into())),
                Ok(None) => return None,
                Ok(Some((n, value))) if n == number => value,
                Ok(Some(_)) => continue,
            };
            return Some(checked(self.message, self.field, value));
        }
    }
}

/// `value` if it has the wire type `field`'s kind takes.
#[inline]
pub(crate) fn checked<'a>(
    message: &'static str,
    field: &Field,
    value: Value<'a>,
) -> Result<Value<'a>, ProtobufError> {
    match (field.kind, value) {
        (Kind::Bool | Kind::Int, Value::Varint(_)) => Ok(value),
        (Kind::Bool | Kind::Int, _) => Err(wrong_type(message, field.number)),
        (_, Value::Bytes(_)) => Ok(value),
        _ => Err(wrong_type(message, field.number)),
    }
}

/// The values of `field` of `message` in `bytes`.
pub(crate) fn values<'a>(
    message: &'static Message,
    field: &'static Field,
    bytes: &'a [u8],
) -> Values<'a> {
    Values {
        reader: Reader::new(bytes),
        message: message.name,
        field,
    }
}

/// The last value of `field` in `bytes` (protobuf keeps the last of a field given twice).
pub(crate) fn last_value<'a>(
    message: &'static Message,
    field: &'static Field,
    bytes: &'a [u8],
) -> Result<Option<Value<'a>>, ProtobufError> {
    values(message, field, bytes).try_fold(None, |_, value| value.map(Some))
}

fn wrong_type(message: &'static str, field: u32) -> ProtobufError {
    ProtobufError::FieldType { message, field }
}

pub(crate) fn bytes_of(value: Value<'_>) -> &[u8] {
    match value {
        Value::Bytes(bytes) => bytes,
        _ => &[],
    }
}

pub(crate) fn varint_of(value: Value<'_>) -> u64 {
    match value {
        Value::Varint(v) => v,
        _ => 0,
    }
}

fn key(field: &Field, first: &mut bool, out: &mut Vec<u8>) {
    if !std::mem::take(first) {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(field.json.as_bytes());
    out.extend_from_slice(b"\":");
}

fn write_field(
    message: &'static Message,
    field: &'static Field,
    bytes: &[u8],
    first: &mut bool,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let non_zero = field.emit == Emit::NonZero;
    match field.kind {
        Kind::String | Kind::Bool | Kind::Int | Kind::Time | Kind::MicroTime | Kind::RawJson => {
            let Some(value) = last_value(message, field, bytes)? else {
                return Ok(());
            };
            match field.kind {
                Kind::String => {
                    let text = bytes_of(value);
                    if non_zero && text.is_empty() {
                        return Ok(());
                    }
                    key(field, first, out);
                    write_str(text, out);
                }
                Kind::Bool => {
                    let v = varint_of(value) != 0;
                    if non_zero && !v {
                        return Ok(());
                    }
                    key(field, first, out);
                    out.extend_from_slice(if v { b"true" } else { b"false" });
                }
                Kind::Int => {
                    let v = varint_of(value) as i64;
                    if non_zero && v == 0 {
                        return Ok(());
                    }
                    key(field, first, out);
                    let _ = write!(out, "{v}");
                }
                Kind::Time => {
                    let Some(time) = time(message, field, bytes_of(value))? else {
                        return Ok(());
                    };
                    key(field, first, out);
                    out.push(b'"');
                    time.write_rfc3339(out);
                    out.push(b'"');
                }
                Kind::MicroTime => {
                    key(field, first, out);
                    match time(message, field, bytes_of(value))? {
                        Some(time) => {
                            out.push(b'"');
                            time.write_rfc3339_micros(out);
                            out.push(b'"');
                        }
                        None => out.extend_from_slice(b"null"),
                    }
                }
                _ => {
                    key(field, first, out);
                    write_raw_json(message, field, bytes_of(value), out)?;
                }
            }
        }
        Kind::Message(inner) => {
            if let Some(value) = last_value(message, field, bytes)? {
                key(field, first, out);
                write_object(inner, bytes_of(value), b"", out)?;
            }
        }
        Kind::StringMap | Kind::BytesMap => {
            key(field, first, out);
            write_map(message, field, bytes, out)?;
        }
        Kind::Strings | Kind::Messages(_) => {
            key(field, first, out);
            write_list(message, field, bytes, out)?;
        }
    }
    Ok(())
}

/// Writes the entries of a map `field` in `bytes` as a JSON object.
pub(crate) fn write_map(
    message: &'static Message,
    field: &'static Field,
    bytes: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    out.push(b'{');
    let mut first_entry = true;
    for value in values(message, field, bytes) {
        let [k, v] = bytes_fields(bytes_of(value?), message.name, [1, 2])?;
        if !std::mem::take(&mut first_entry) {
            out.push(b',');
        }
        write_str(k, out);
        out.push(b':');
        if let Kind::StringMap = field.kind {
            write_str(v, out);
        } else {
            write_base64(v, out);
        }
    }
    out.push(b'}');
    Ok(())
}

/// Writes the elements of a repeated `field` in `bytes` as a JSON array.
pub(crate) fn write_list(
    message: &'static Message,
    field: &'static Field,
    bytes: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    out.push(b'[');
    let mut first_item = true;
    for value in values(message, field, bytes) {
        let value = bytes_of(value?);
        if !std::mem::take(&mut first_item) {
            out.push(b',');
        }
        match field.kind {
            Kind::Messages(inner) => write_object(inner, value, b"", out)?,
            _ => write_str(value, out),
        }
    }
    out.push(b']');
    Ok(())
}

/// A `metav1.Time` or `MicroTime` (written to the second or the microsecond, as Go writes
/// them); `None` for the zero time, which kube-apiserver 1.36 leaves out of its JSON for a
/// `Time` (`omitzero`; earlier servers wrote `null`, which decodes the same). Times outside the
/// years 0000 to 9999, which Go cannot write in JSON either, are an error.
pub(crate) fn time(
    message: &Message,
    field: &Field,
    bytes: &[u8],
) -> Result<Option<Time>, ProtobufError> {
    let mut reader = Reader::new(bytes);
    let (mut seconds, mut nanos) = (0i64, 0i64);
    while let Some((number, value)) = reader.field()? {
        let Value::Varint(v) = value else {
            return Err(wrong_type(message.name, field.number));
        };
        match number {
            1 => seconds = v as i64,
            2 => nanos = v as i64,
            _ => {}
        }
    }
    if seconds == 0 && nanos == 0 {
        return Ok(None);
    }
    u32::try_from(nanos)
        .ok()
        .and_then(|nanos| Time::from_unix(seconds, nanos).ok())
        .map(Some)
        .ok_or(ProtobufError::Time {
            message: message.name,
            field: field.number,
        })
}

/// A `metav1.FieldsV1`: the JSON of its field 1, checked to be one JSON value.
pub(crate) fn write_raw_json(
    message: &'static Message,
    field: &Field,
    bytes: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let [raw] = bytes_fields(bytes, message.name, [1])?;
    if raw.is_empty() {
        out.extend_from_slice(b"null");
    } else if crate::json::is_valid(raw) {
        out.extend_from_slice(raw);
    } else {
        return Err(ProtobufError::RawJson {
            message: message.name,
            field: field.number,
        });
    }
    Ok(())
}

pub(crate) fn write_base64(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let start = out.len();
    out.resize(start + bytes.len().div_ceil(3) * 4, 0);
    let written = BASE64
        .encode_slice(bytes, &mut out[start..])
        .expect("the buffer holds the encoding");
    out.truncate(start + written);
    out.push(b'"');
}

/// Whether any of the eight bytes of `word` is a control character, `"` or `\`.
fn needs_escape(word: u64) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |w: u64| w.wrapping_sub(ONES) & !w & HIGH != 0;
    // A byte below 0x20: subtracting 0x20 borrows into its high bit (bytes of 0x80 and up
    // have it set already, and are told apart by `!word`).
    word.wrapping_sub(ONES * 0x20) & !word & HIGH != 0
        || has_zero(word ^ (ONES * u64::from(b'"')))
        || has_zero(word ^ (ONES * u64::from(b'\\')))
}

/// Whether a byte must be escaped in a JSON string.
static ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = true;
        b += 1;
    }
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// A protobuf string as a JSON string. Bytes that are not UTF-8 become U+FFFD, as Go's JSON
/// encoder writes them.
pub(crate) fn write_str(bytes: &[u8], out: &mut Vec<u8>) {
    let lossy;
    let bytes = match std::str::from_utf8(bytes) {
        Ok(_) => bytes,
        Err(_) => {
            lossy = String::from_utf8_lossy(bytes);
            lossy.as_bytes()
        }
    };
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Eight bytes at a time while none needs escaping (most strings need none).
        if let Some(word) = bytes.get(i..i + 8) {
            if !needs_escape(u64::from_le_bytes(word.try_into().expect("eight bytes"))) {
                i += 8;
                continue;
            }
        }
        let b = bytes[i];
        i += 1;
        if !ESCAPE[b as usize] {
            continue;
        }
        out.extend_from_slice(&bytes[start..i - 1]);
        start = i;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.extend_from_slice(b"\\u00");
                out.push(HEX[usize::from(b >> 4)]);
                out.push(HEX[usize::from(b & 15)]);
            }
        }
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_escape_what_json_needs() {
        let mut out = Vec::new();
        write_str("a\"b\\c\nd\u{1}é\u{2028}".as_bytes(), &mut out);
        let back: String = serde_json::from_slice(&out).unwrap();
        assert_eq!(back, "a\"b\\c\nd\u{1}é\u{2028}");
        out.clear();
        write_str(b"ok\xffno", &mut out);
        assert_eq!(out, "\"ok\u{fffd}no\"".as_bytes());
    }

    #[test]
    fn a_word_needs_escaping_when_one_of_its_bytes_does() {
        for b in 0..=255u8 {
            for at in 0..8 {
                let mut word = [b'a'; 8];
                word[at] = b;
                assert_eq!(
                    needs_escape(u64::from_le_bytes(word)),
                    ESCAPE[usize::from(b)],
                    "byte {b:#04x} at {at}"
                );
            }
        }
        // Bytes of 0x80 and up beside small ones.
        assert!(!needs_escape(u64::from_le_bytes(*b"\xff\x80 !#~\x7f\xc3")));
    }

    #[test]
    fn long_strings_escape_wherever_the_byte_is() {
        for at in 0..40 {
            for special in ["\"", "\\", "\n", "\u{1f}", "é", "\u{7f}"] {
                let mut text = "x".repeat(40);
                text.insert_str(at, special);
                let mut out = Vec::new();
                write_str(text.as_bytes(), &mut out);
                let back: String = serde_json::from_slice(&out).unwrap();
                assert_eq!(back, text);
            }
        }
    }

    #[test]
    fn base64_pads_as_go_does() {
        for (bytes, text) in [(&b""[..], "\"\""), (b"\x00\x01\x02\xff", "\"AAEC/w==\"")] {
            let mut out = Vec::new();
            write_base64(bytes, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), text);
        }
    }
}
