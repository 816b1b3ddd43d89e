//! Kubernetes protobuf, read: the objects kube-apiserver sends when asked for
//! `application/vnd.kubernetes.protobuf`, turned into the JSON it would have sent instead,
//! for the decoders of this crate to read. client-go decodes protobuf into its Go types with
//! generated code (`k8s.io/apimachinery/pkg/runtime/serializer/protobuf`, each type's
//! `generated.pb.go`).
//!
//! Why ask for protobuf at all: kube-apiserver writes it several times faster than JSON. A
//! streaming list of 10,000 ConfigMaps from kube-apiserver 1.36 takes about 0.07 s to arrive in
//! protobuf against 0.17-0.21 s in JSON (4.8 MB against 7.6 MB), and client-go's clientsets
//! ask for it for built-in kinds.
//!
//! The pieces of the format:
//!
//! * an object is the magic `k8s\0`, then a `runtime.Unknown` message: its `apiVersion` and
//!   `kind` (field 1), the object's own message (field 2), a content encoding (field 3, never
//!   set by kube-apiserver, refused here) and content type (field 4);
//! * a watch (`application/vnd.kubernetes.protobuf;stream=watch`) is a sequence of frames,
//!   each a 4-byte big-endian length and a `metav1.WatchEvent` message: its type (field 1) and
//!   a `RawExtension` (field 2) whose field 1 is an object as above.
//!
//! Where it differs from client-go: no Go types are generated here. A table per message
//! (`schema.rs`) maps field numbers to JSON keys and types. From it, the transcoder writes the
//! JSON the server would have written, and [`from_object`] and [`from_watch_event`] read the
//! wire straight into any `Deserialize` type (a typed object, a `Compact<K>`, a
//! `DynamicObject`) as if from that JSON, a third less work than making the JSON and reading
//! it (`de/`). Only kinds listed in the table decode ([`serves`] says
//! which resources to ask for in protobuf: ConfigMaps, Secrets and Leases today); every other
//! resource is asked for in JSON. Transcoding costs the client about as much again as
//! decoding the JSON it makes (1.2 to 1.5 µs for a 500-byte ConfigMap event) and saves the
//! server most of its encoding. Errors name the message and field number, never a value.

mod de;
mod framer;
mod pieces;
mod schema;
mod transcode;
mod wire;

pub use de::{from_object, from_watch_event};
pub(crate) use framer::LengthFramer;
pub use pieces::{JsonPieces, ListItem, Piece};
pub use schema::serves;

use wire::bytes_fields;

/// The media type of Kubernetes protobuf.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// The `Accept` header of a request that prefers protobuf and takes JSON where the server
/// has no protobuf for the resource (custom resources), as client-go's clientsets send it.
pub const ACCEPT: &str = "application/vnd.kubernetes.protobuf, application/json";

/// The magic that opens a Kubernetes protobuf object.
const MAGIC: &[u8; 4] = b"k8s\0";

/// Why protobuf could not be read. Never quotes a value of the object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProtobufError {
    /// A field runs past the end of its message.
    #[error("protobuf ends inside a field")]
    Truncated,
    /// A varint longer than 64 bits.
    #[error("protobuf varint longer than 64 bits")]
    Varint,
    /// A field numbered 0.
    #[error("protobuf field number 0")]
    FieldNumber,
    /// A wire type Kubernetes never writes (groups, or an undefined one).
    #[error("protobuf wire type {wire} is not supported")]
    WireType {
        /// The wire type.
        wire: u8,
    },
    /// A field whose wire type is not the one its schema gives.
    #[error("field {field} of {message} has the wrong wire type")]
    FieldType {
        /// The message.
        message: &'static str,
        /// The field's number.
        field: u32,
    },
    /// A timestamp out of range.
    #[error("field {field} of {message} is not a valid time")]
    Time {
        /// The message.
        message: &'static str,
        /// The field's number.
        field: u32,
    },
    /// A field that must hold JSON (`FieldsV1`) does not.
    #[error("field {field} of {message} is not valid JSON")]
    RawJson {
        /// The message.
        message: &'static str,
        /// The field's number.
        field: u32,
    },
    /// The bytes do not open with `k8s\0`.
    #[error("not a Kubernetes protobuf object (no k8s\\0 prefix)")]
    Magic,
    /// The object is compressed (`runtime.Unknown`'s content encoding is set).
    #[error("protobuf object with a content encoding is not supported")]
    ContentEncoding,
    /// The object does not fit the type it is read into ([`from_object`]): serde's
    /// description, with no value of the object in it, and the innermost field it was in
    /// when known.
    #[error("{message}{}", field_of(.at))]
    Type {
        /// What the type expected.
        message: String,
        /// The message and number of the field.
        at: Option<(&'static str, u32)>,
    },
    /// No schema for the object's kind in this client.
    #[error("no protobuf schema for kind {kind:?} of {api_version:?}")]
    UnknownKind {
        /// The object's `apiVersion` (at most 64 bytes of it).
        api_version: String,
        /// The object's `kind` (at most 64 bytes of it).
        kind: String,
    },
}

fn field_of(at: &Option<(&'static str, u32)>) -> String {
    match at {
        Some((message, field)) => format!(" in field {field} of {message}"),
        None => String::new(),
    }
}

/// How a response body is encoded, from its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WireFormat {
    /// JSON (and anything that is not protobuf).
    #[default]
    Json,
    /// Kubernetes protobuf.
    Protobuf,
}

impl WireFormat {
    /// The format of a body with this `Content-Type` (`None`: JSON).
    pub fn of(content_type: Option<&str>) -> WireFormat {
        match content_type {
            Some(ct) if is_protobuf(ct) => WireFormat::Protobuf,
            _ => WireFormat::Json,
        }
    }
}

/// Whether a `Content-Type` is Kubernetes protobuf (with any parameters).
pub fn is_protobuf(content_type: &str) -> bool {
    content_type
        .split(';')
        .next()
        .is_some_and(|media| media.trim().eq_ignore_ascii_case(MEDIA_TYPE))
}

/// Writes the JSON of a protobuf object (`k8s\0` and a `runtime.Unknown`) to `out`, with its
/// `kind` and `apiVersion`, as kube-apiserver would have written it.
pub fn object_to_json(object: &[u8], out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    let (message, prefix, raw) = envelope(object)?;
    transcode::write_object(message, raw, &prefix, out)
}

/// [`object_to_json`], handing the JSON to `sink` in pieces as [`JsonPieces`] does for a body
/// still arriving: a list's opening, each item (its comma first), then its other members and
/// the close; any other object at once. A list's JSON is never whole in memory, only the
/// protobuf it comes from and one item's JSON.
pub fn object_to_json_pieces<E: From<ProtobufError>>(
    object: &[u8],
    mut sink: impl FnMut(&[u8]) -> Result<(), E>,
) -> Result<(), E> {
    let mut pieces = JsonPieces::new();
    pieces.push(object, &mut sink)?;
    pieces.finish(sink)
}

/// An object's message, the JSON members naming its kind and apiVersion, and its bytes.
fn envelope(object: &[u8]) -> Result<(&'static schema::Message, Vec<u8>, &[u8]), ProtobufError> {
    let unwrapped = unwrap(object)?;
    let mut prefix = Vec::with_capacity(unwrapped.kind.len() + unwrapped.api_version.len() + 28);
    write_type(
        unwrapped.api_version.as_bytes(),
        unwrapped.kind.as_bytes(),
        &mut prefix,
    );
    Ok((unwrapped.message, prefix, unwrapped.raw))
}

/// An object taken out of its `runtime.Unknown`.
struct Unwrapped<'a> {
    message: &'static schema::Message,
    /// A name [`schema::message_for`] knows: ASCII, nothing to escape.
    api_version: &'a str,
    /// Likewise.
    kind: &'a str,
    /// The object's own message.
    raw: &'a [u8],
}

fn unwrap(object: &[u8]) -> Result<Unwrapped<'_>, ProtobufError> {
    let body = object.strip_prefix(MAGIC).ok_or(ProtobufError::Magic)?;
    let [type_meta, raw, encoding] = bytes_fields(body, "Unknown", [1, 2, 3])?;
    if !encoding.is_empty() {
        return Err(ProtobufError::ContentEncoding);
    }
    let [api_version, kind] = bytes_fields(type_meta, "TypeMeta", [1, 2])?;
    // Only the literal names `message_for` knows pass: they need no escaping.
    let unknown = || ProtobufError::UnknownKind {
        api_version: bounded(api_version),
        kind: bounded(kind),
    };
    let message = schema::message_for(api_version, kind).ok_or_else(unknown)?;
    let (Ok(api_version), Ok(kind)) = (std::str::from_utf8(api_version), std::str::from_utf8(kind))
    else {
        return Err(unknown());
    };
    Ok(Unwrapped {
        message,
        api_version,
        kind,
        raw,
    })
}

/// The JSON members `"kind":...,"apiVersion":...` of names [`schema::message_for`] knows
/// (literal names: they need no escaping).
fn write_type(api_version: &[u8], kind: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"\"kind\":\"");
    out.extend_from_slice(kind);
    out.extend_from_slice(b"\",\"apiVersion\":\"");
    out.extend_from_slice(api_version);
    out.push(b'"');
}

/// Writes the JSON of a protobuf watch event (one frame's `metav1.WatchEvent`, its length
/// prefix removed) to `out`: `{"type":...,"object":{...}}`.
pub fn watch_event_to_json(event: &[u8], out: &mut Vec<u8>) -> Result<(), ProtobufError> {
    let [event_type, raw_extension] = bytes_fields(event, "WatchEvent", [1, 2])?;
    let [object] = bytes_fields(raw_extension, "RawExtension", [1])?;
    out.extend_from_slice(b"{\"type\":");
    transcode::write_str(event_type, out);
    out.extend_from_slice(b",\"object\":");
    object_to_json(object, out)?;
    out.push(b'}');
    Ok(())
}

/// A kind or apiVersion for an error: at most 64 bytes, lossy UTF-8.
fn bounded(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[..bytes.len().min(64)]).into_owned()
}
