//! A protobuf object read as its chunks arrive, its JSON handed on in pieces: a list's items
//! one at a time, each as soon as its bytes are in, so a list in protobuf is decoded while it
//! downloads, as a JSON one is, and never held whole (client-go reads a list's body whole,
//! then decodes it).
//!
//! kube-apiserver writes an object's envelope (`runtime.Unknown`) type first, then the object;
//! a list's message its metadata, then its items. The reader follows that order: once the
//! type is known and the list's message has begun, each complete item is turned into JSON and
//! handed on, and the list's other members are kept (they are small) and written after the
//! items. An envelope in another order, or an object that is not a list, is kept whole and
//! written at once when the body ends.
//!
//! [`push_pieces`](JsonPieces::push_pieces) hands each item on as its protobuf instead
//! ([`Piece::Item`]), for the caller to read straight into its type ([`ListItem::decode`]) and
//! turn into JSON ([`ListItem::write_json`]) only when that fails, so that an item's error
//! is the one its JSON would give.

use serde::Deserialize;

use super::de::{Val, in_order};
use super::schema::{self, Field, Message};
use super::wire::{Reader, Value, WireError, bytes_fields, varint_at};
use super::{MAGIC, ProtobufError, transcode};

/// Where the reader is in the body.
enum State {
    /// Before the list's message: the envelope so far.
    Start,
    /// Inside a list's message, `left` of its bytes still to come.
    List(List),
    /// After the list's message: the rest of the envelope.
    Trailer(List),
    /// Not a list, or not in the order followed: kept whole.
    Whole,
}

struct List {
    message: &'static Message,
    items: &'static Field,
    item: &'static Message,
    left: usize,
    first: bool,
    /// The list message's fields other than its items, as they came.
    others: Vec<u8>,
}

/// What [`JsonPieces::push_pieces`] hands on: JSON, or one item of the list as protobuf.
#[derive(Debug)]
pub enum Piece<'a> {
    /// A piece of the JSON text: the list's opening before its first item.
    Json(&'a [u8]),
    /// One item of the list, whole.
    Item(ListItem<'a>),
}

/// One item of a protobuf list: a message of the list's item type, without its own `kind`
/// and `apiVersion` (as in the JSON of a list of built-in objects).
pub struct ListItem<'a> {
    message: &'static Message,
    bytes: &'a [u8],
    first: bool,
}

impl std::fmt::Debug for ListItem<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The item's type and size, never its bytes.
        f.debug_struct("ListItem")
            .field("message", &self.message.name)
            .field("len", &self.bytes.len())
            .finish()
    }
}

impl<'a> ListItem<'a> {
    /// Reads the item straight into `T`, as if from the JSON [`write_json`](Self::write_json)
    /// writes for it.
    pub fn decode<T: Deserialize<'a>>(&self) -> Result<T, ProtobufError> {
        in_order(|| T::deserialize(Val::Message(self.message, self.bytes)))
    }

    /// Appends the item's JSON to `out`, with the comma before it unless it is the first: the
    /// piece [`push`](JsonPieces::push) would have handed on in its place.
    pub fn write_json(&self, out: &mut Vec<u8>) -> Result<(), ProtobufError> {
        if !self.first {
            out.push(b',');
        }
        transcode::write_object(self.message, self.bytes, b"", out)
    }

    /// The item's size in protobuf.
    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Whether the item's message is empty (all its fields at their defaults).
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
}

/// Reads a protobuf object (`k8s\0` and a `runtime.Unknown`) pushed in chunks and hands the
/// JSON the server would have sent to a sink in pieces: for a list, its opening, each item
/// (its comma first), then its other members and the close; for anything else, the whole
/// object at [`finish`](Self::finish).
pub struct JsonPieces {
    buf: Vec<u8>,
    /// How much of `buf` has been read.
    pos: usize,
    state: State,
    out: Vec<u8>,
}

impl Default for JsonPieces {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for JsonPieces {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JsonPieces")
            .field("buffered", &(self.buf.len() - self.pos))
            .finish_non_exhaustive()
    }
}

impl JsonPieces {
    /// A reader at the start of a body.
    pub fn new() -> Self {
        JsonPieces {
            buf: Vec::new(),
            pos: 0,
            state: State::Start,
            out: Vec::new(),
        }
    }

    /// Takes the next chunk of the body; hands `sink` every piece it completes.
    pub fn push<E: From<ProtobufError>>(
        &mut self,
        chunk: &[u8],
        mut sink: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        // The items' JSON is written into `out`, taken for the call (the opening, written
        // meanwhile, borrows a buffer of its own).
        let mut json = std::mem::take(&mut self.out);
        let pushed = self.push_pieces(chunk, |piece| match piece {
            Piece::Json(text) => sink(text),
            Piece::Item(item) => {
                json.clear();
                item.write_json(&mut json)?;
                sink(&json)
            }
        });
        self.out = json;
        pushed
    }

    /// Takes the next chunk of the body as [`push`](Self::push) does, but hands each item of a
    /// list on as protobuf ([`Piece::Item`]). The pieces are then the list's opening, its items,
    /// and, at [`finish`](Self::finish), its other members and close.
    pub fn push_pieces<E: From<ProtobufError>>(
        &mut self,
        chunk: &[u8],
        mut sink: impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        // Let go of what has been read before the buffer grows.
        if self.pos > 0 && self.pos >= self.buf.len() / 2 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(chunk);
        if let State::Start = self.state {
            self.start(&mut sink)?;
        }
        if let State::List(_) = self.state {
            self.items(&mut sink)?;
        }
        Ok(())
    }

    /// Reads the envelope up to the list's message, if it has arrived.
    fn start<E: From<ProtobufError>>(
        &mut self,
        sink: &mut impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        if self.buf.len() < MAGIC.len() {
            return Ok(());
        }
        if !self.buf.starts_with(MAGIC) {
            return Err(ProtobufError::Magic.into());
        }
        let mut pos = MAGIC.len();
        let mut type_meta: Option<(usize, usize)> = None;
        loop {
            let Some((key, after_key)) = varint_at(&self.buf, pos)? else {
                return Ok(());
            };
            let Some((len, start)) = varint_at(&self.buf, after_key)? else {
                return Ok(());
            };
            let len = usize::try_from(len).map_err(|_| ProtobufError::Truncated)?;
            match (key, type_meta) {
                // The type, whole.
                (0x0a, None) => {
                    let end = start.checked_add(len).ok_or(ProtobufError::Truncated)?;
                    if end > self.buf.len() {
                        return Ok(());
                    }
                    type_meta = Some((start, end));
                    pos = end;
                }
                // The object's message begins.
                (0x12, Some((from, to))) => {
                    let [api_version, kind] =
                        bytes_fields(&self.buf[from..to], "TypeMeta", [1, 2])?;
                    let message = schema::message_for(api_version, kind);
                    let items = message.and_then(|message| {
                        let (items, item) = message.list_items()?;
                        Some((message, items, item))
                    });
                    let Some((message, items, item)) = items else {
                        self.state = State::Whole;
                        return Ok(());
                    };
                    let mut out = std::mem::take(&mut self.out);
                    out.clear();
                    out.push(b'{');
                    super::write_type(api_version, kind, &mut out);
                    out.extend_from_slice(b",\"items\":[");
                    sink(Piece::Json(&out))?;
                    self.out = out;
                    self.pos = start;
                    self.state = State::List(List {
                        message,
                        items,
                        item,
                        left: len,
                        first: true,
                        others: Vec::new(),
                    });
                    return Ok(());
                }
                _ => {
                    self.state = State::Whole;
                    return Ok(());
                }
            }
        }
    }

    /// Hands on every item of the list that has arrived whole.
    fn items<E: From<ProtobufError>>(
        &mut self,
        sink: &mut impl FnMut(Piece<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let State::List(list) = &mut self.state else {
            return Ok(());
        };
        while list.left > 0 {
            let available = (self.buf.len() - self.pos).min(list.left);
            let bytes = &self.buf[self.pos..self.pos + available];
            let mut reader = Reader::new(bytes);
            let (number, value) = match reader.field() {
                Ok(Some(field)) => field,
                Ok(None) => return Ok(()),
                Err(WireError::Truncated) if available < list.left => return Ok(()),
                Err(error) => return Err(ProtobufError::from(error).into()),
            };
            let used = reader.pos();
            if number == list.items.number {
                let Value::Bytes(item) = value else {
                    return Err(ProtobufError::FieldType {
                        message: list.message.name,
                        field: number,
                    }
                    .into());
                };
                sink(Piece::Item(ListItem {
                    message: list.item,
                    bytes: item,
                    first: std::mem::take(&mut list.first),
                }))?;
            } else {
                list.others.extend_from_slice(&bytes[..used]);
            }
            self.pos += used;
            list.left -= used;
        }
        let State::List(list) = std::mem::replace(&mut self.state, State::Start) else {
            unreachable!("matched above")
        };
        self.state = State::Trailer(list);
        Ok(())
    }

    /// Ends the body: hands on what is left (a list's other members and close, or the whole
    /// object), or fails if the body ended before the object did.
    pub fn finish<E: From<ProtobufError>>(
        mut self,
        mut sink: impl FnMut(&[u8]) -> Result<(), E>,
    ) -> Result<(), E> {
        match std::mem::replace(&mut self.state, State::Whole) {
            State::Start | State::Whole => {
                self.out.clear();
                super::object_to_json(&self.buf, &mut self.out)?;
                sink(&self.out)
            }
            State::List(_) => Err(ProtobufError::Truncated.into()),
            State::Trailer(list) => {
                let trailer = &self.buf[self.pos..];
                let [encoding] = bytes_fields(trailer, "Unknown", [3])?;
                if !encoding.is_empty() {
                    return Err(ProtobufError::ContentEncoding.into());
                }
                self.out.clear();
                self.out.push(b']');
                transcode::write_fields(
                    list.message,
                    &list.others,
                    list.items.number,
                    &mut false,
                    &mut self.out,
                )?;
                self.out.push(b'}');
                sink(&self.out)
            }
        }
    }
}
