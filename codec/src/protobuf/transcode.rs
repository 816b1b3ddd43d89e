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
    message: &Message,
    bytes: &[u8],
    prefix: &[u8],
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    out.push(b'{');
    out.extend_from_slice(prefix);
    let mut first = prefix.is_empty();
    write_fields(message, bytes, &mut first, out)?;
    out.push(b'}');
    Ok(())
}

fn write_fields(
    message: &Message,
    bytes: &[u8],
    first: &mut bool,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let mut reader = Reader::new(bytes);
    let mut last = 0;
    let mut ascending = true;
    while let Some((number, _)) = reader.field()? {
        ascending &= number >= last;
        last = number;
    }
    let mut seen = 0u64;
    if ascending {
        let mut reader = Reader::new(bytes);
        loop {
            let start = reader.pos();
            let Some((number, _)) = reader.field()? else {
                break;
            };
            let mut end = reader.pos();
            loop {
                let mut peek = reader.clone();
                match peek.field()? {
                    Some((next, _)) if next == number => {
                        reader = peek;
                        end = reader.pos();
                    }
                    _ => break,
                }
            }
            if let Some(field) = message.fields.iter().find(|f| f.number == number) {
                seen |= bit(number);
                write_field(message, field, &bytes[start..end], first, out)?;
            }
        }
    } else {
        for field in message.fields {
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
    }
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

fn bit(number: u32) -> u64 {
    1u64.checked_shl(number).unwrap_or(0)
}

/// The values of `field` in `bytes` (part or all of its message), in order.
fn values<'a>(
    message: &Message,
    field: &Field,
    bytes: &'a [u8],
) -> impl Iterator<Item = Result<Value<'a>, ProtobufError>> {
    let mut reader = Reader::new(bytes);
    let number = field.number;
    let name = message.name;
    std::iter::from_fn(move || {
        loop {
            match reader.field() {
                Err(error) => return Some(Err(error)),
                Ok(None) => return None,
                Ok(Some((n, value))) if n == number => return Some(Ok(value)),
                Ok(Some(_)) => {}
            }
        }
    })
    .map(move |value| {
        value.and_then(|value| match (field.kind, value) {
            (Kind::Bool | Kind::Int, Value::Varint(_)) => Ok(value),
            (Kind::Bool | Kind::Int, _) => Err(wrong_type(name, number)),
            (_, Value::Bytes(_)) => Ok(value),
            _ => Err(wrong_type(name, number)),
        })
    })
}

fn wrong_type(message: &'static str, field: u32) -> ProtobufError {
    ProtobufError::FieldType { message, field }
}

fn bytes_of(value: Value<'_>) -> &[u8] {
    match value {
        Value::Bytes(bytes) => bytes,
        _ => &[],
    }
}

fn varint_of(value: Value<'_>) -> u64 {
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
    message: &Message,
    field: &Field,
    bytes: &[u8],
    first: &mut bool,
    out: &mut Vec<u8>,
) -> Result<(), ProtobufError> {
    let non_zero = field.emit == Emit::NonZero;
    match field.kind {
        Kind::String | Kind::Bool | Kind::Int | Kind::Time | Kind::RawJson => {
            let mut last = None;
            for value in values(message, field, bytes) {
                last = Some(value?);
            }
            let Some(value) = last else { return Ok(()) };
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
                    let _ = write!(out, "{time}");
                    out.push(b'"');
                }
                _ => {
                    key(field, first, out);
                    write_raw_json(message, field, bytes_of(value), out)?;
                }
            }
        }
        Kind::Message(inner) => {
            let mut last = None;
            for value in values(message, field, bytes) {
                last = Some(value?);
            }
            if let Some(value) = last {
                key(field, first, out);
                write_object(inner, bytes_of(value), b"", out)?;
            }
        }
        Kind::StringMap | Kind::BytesMap => {
            key(field, first, out);
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
        }
        Kind::Strings | Kind::Messages(_) => {
            key(field, first, out);
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
        }
    }
    Ok(())
}

/// A `metav1.Time` (written in RFC 3339 to the second in UTC, as Go writes it); `None` for
/// the zero time, which kube-apiserver 1.36 leaves out of its JSON (`omitzero`; earlier
/// servers wrote `null`, which decodes the same).
fn time(message: &Message, field: &Field, bytes: &[u8]) -> Result<Option<Time>, ProtobufError> {
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
    Time::from_unix_seconds(seconds)
        .map(Some)
        .map_err(|_| ProtobufError::Time {
            message: message.name,
            field: field.number,
        })
}

/// A `metav1.FieldsV1`: the JSON of its field 1, checked to be one JSON value.
fn write_raw_json(
    message: &Message,
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

fn write_base64(bytes: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    let start = out.len();
    out.resize(start + bytes.len().div_ceil(3) * 4, 0);
    let written = BASE64
        .encode_slice(bytes, &mut out[start..])
        .expect("the buffer holds the encoding");
    out.truncate(start + written);
    out.push(b'"');
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
    let text = String::from_utf8_lossy(bytes);
    let bytes = text.as_bytes();
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        if !ESCAPE[b as usize] {
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        start = i + 1;
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            _ => {
                let _ = write!(out, "\\u{b:04x}");
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
    fn base64_pads_as_go_does() {
        for (bytes, text) in [(&b""[..], "\"\""), (b"\x00\x01\x02\xff", "\"AAEC/w==\"")] {
            let mut out = Vec::new();
            write_base64(bytes, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), text);
        }
    }
}
