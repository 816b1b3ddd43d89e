//! Decoding a list response item by item as its body arrives: [`ListDecoder`].
//!
//! A list response is one JSON object, `{"kind":..,"apiVersion":..,"metadata":{..},
//! "items":[{..},{..}]}`. client-go reads the whole body into one buffer and decodes it at
//! once (`Result.Into`); a list of 10,000 pods is then a 29 MB buffer held next to the objects
//! decoded from it. Here the decoder is fed the body's chunks as the transport hands them over
//! and decodes each element of `items` as soon as its last byte arrives: what is held at any
//! time is the items decoded so far, the current chunk, and at most one item's bytes.
//!
//! The scanner looks at each byte once and carries its state from one chunk to the next (the
//! member of the top-level object being read, the open brackets of the current value, inside
//! a string, after a backslash), as the watch framer (`clientgo_codec::Framer`) does for watch
//! events. Strings are skipped 8 bytes at a time and, past their first 64 bytes, with
//! `memchr`: about 1.5 GB/s on pod lists, faster than serde parses them. An item that lies
//! within one chunk is decoded straight from the chunk (`serde_json::from_slice`, no copy:
//! deserializers that borrow from their input, such as `Compact<K>`'s, borrow from the chunk);
//! one split across chunks is gathered in a buffer that holds that item only. The other
//! top-level members (`kind`, `apiVersion`, `metadata`, and any unknown one) are small: they
//! are copied aside and decoded at the end with `ObjectList`'s own rules (any key order,
//! unknown members ignored, `"items": null` an empty list, a repeated member an error). A
//! body whose `kind` is `Status` is returned as that [`Status`](ListBody::Status).
//!
//! Measured on 10,000 pods (25.7 MB of JSON, 16 KiB chunks) decoded as `Compact<Pod>`: the
//! peak goes from 60 MB (body and objects) to 26 MB (the objects), in the same time.
//!
//! The structure outside the items is checked as it is scanned, the items and the other
//! members by serde as they are decoded, so a body is accepted when
//! `serde_json::from_slice::<ObjectList<T>>` accepts it (but for a top-level array, which
//! serde takes for a struct and no server sends). Failures are [`DecodeError`]s whose
//! [`ListFailure`] says what failed: a byte out of place, an item that is not a `T` (with its
//! index), a body that ends before the list, or a member of the wrong type.
//!
//! Limits, so that a broken or hostile server cannot exhaust the client: one item may be at
//! most [`DEFAULT_MAX_ITEM_BYTES`] (64 MiB, the watch decoder's frame cap) unless
//! [`ListDecoder::with_max_item_bytes`] says otherwise, and so may the members other than the
//! items together; items nest as deep as kube-apiserver accepts ([`crate::json`]: 10,000
//! levels, decoded without overflowing the stack).
//!
//! One bad item need not cost the whole list: [`ListDecoder::skipping_undecodable`] skips an
//! item that is valid JSON but not a `T` (or nests too deep), or is larger than the cap (its
//! bytes are skipped, never gathered), and keeps its error ([`ListDecoder::skipped`], a
//! [`ListFailure::Item`] or [`ListFailure::ItemTooLarge`] with the item's index). An item that
//! is not valid JSON still fails the list: the body is corrupt, not one object.
//! [`ResourceClient::list`](crate::ResourceClient::list) decodes this way (client-go fails the
//! whole list, so one object its types cannot read would stop an informer for good).

use std::borrow::Cow;

use clientgo_apimachinery::{ObjectList, Status};
use serde::de::{DeserializeOwned, IgnoredAny};

use crate::error::{DecodeError, ListFailure};
use crate::json;

mod bytes;

use bytes::{CLASS, OPEN, QUOTE, SCALAR, Scan, is_whitespace, quote_or_backslash, scan_value};

/// The default cap on one list item (and on the other members together): 64 MiB.
pub const DEFAULT_MAX_ITEM_BYTES: usize = crate::config::DEFAULT_MAX_LIST_ITEM_BYTES;

/// What a list response body held.
#[derive(Clone, Debug, PartialEq)]
pub enum ListBody<T> {
    /// The list.
    List(ObjectList<T>),
    /// A `Status` object (`kind: Status`) in place of the list.
    Status(Box<Status>),
}

/// Decodes a list response from its chunks. See the module documentation.
///
/// ```
/// use clientgo_rest::list_decode::{ListBody, ListDecoder};
///
/// let mut decoder = ListDecoder::<serde_json::Value>::new();
/// decoder.push(br#"{"kind":"ConfigMapList","metadata":{"resourceVersion":"7"},"items":[{"a""#)?;
/// decoder.push(br#":1},{"b":2}]}"#)?;
/// let ListBody::List(list) = decoder.finish()? else { unreachable!() };
/// assert_eq!(list.resource_version(), "7");
/// assert_eq!(list.items.len(), 2);
/// # Ok::<(), clientgo_rest::DecodeError>(())
/// ```
pub struct ListDecoder<T> {
    scanner: Scanner,
    items: Vec<T>,
    /// The bytes of the items handed to the decoder so far, for the estimate of how many
    /// more a chunk holds ([`reserve_for_rest`]).
    item_bytes: u64,
}

impl<T> std::fmt::Debug for ListDecoder<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListDecoder")
            .field("items", &self.items.len())
            .field("bytes", &self.scanner.consumed)
            .finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned> Default for ListDecoder<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: DeserializeOwned> ListDecoder<T> {
    /// A decoder at the start of a body.
    pub fn new() -> Self {
        ListDecoder {
            scanner: Scanner::new::<ObjectList<T>, T>(),
            items: Vec::new(),
            item_bytes: 0,
        }
    }

    /// Refuses items (and other members together) larger than `bytes` (default
    /// [`DEFAULT_MAX_ITEM_BYTES`]).
    pub fn with_max_item_bytes(mut self, bytes: usize) -> Self {
        self.scanner.max_item = bytes;
        self
    }

    /// Skips an item that is valid JSON but not a `T`, or larger than the cap, keeping its
    /// error in [`skipped`](Self::skipped), instead of failing the list. See the module
    /// documentation.
    pub fn skipping_undecodable(mut self) -> Self {
        self.scanner.skipping = true;
        self
    }

    /// Scans the next chunk of the body, decoding the items that end in it.
    pub fn push(&mut self, chunk: &[u8]) -> Result<(), DecodeError> {
        let (items, item_bytes) = (&mut self.items, &mut self.item_bytes);
        self.scanner.push(chunk, &mut |bytes: &[u8], rest: usize| {
            *item_bytes += bytes.len() as u64;
            if items.len() == items.capacity() {
                reserve_for_rest(items, *item_bytes, rest);
            }
            items.push(json::from_slice(bytes)?);
            Ok(())
        })
    }

    /// Takes an item the caller decoded from another encoding of the same list (a protobuf
    /// list's item, [`ListItem::decode`](clientgo_codec::protobuf::ListItem::decode)), in the
    /// place of its JSON: after the list's opening or after another item, where the pieces
    /// of [`JsonPieces`](clientgo_codec::protobuf::JsonPieces) would push `,{...}`. Anywhere
    /// else (before the items, after them) the body is out of order: a
    /// [`ListFailure::Syntax`] error.
    pub fn push_decoded(&mut self, item: T) -> Result<(), DecodeError> {
        if !self.scanner.item_decoded() {
            let offset = self.scanner.consumed;
            return Err(DecodeError::for_list(
                self.scanner.list_type,
                ListFailure::Syntax { offset },
                format!("an item handed over outside the items, at byte {offset}"),
                offset,
            ));
        }
        self.items.push(item);
        Ok(())
    }

    /// The cap on one item ([`with_max_item_bytes`](Self::with_max_item_bytes)).
    pub fn max_item_bytes(&self) -> usize {
        self.scanner.max_item
    }

    /// How many items have been decoded so far.
    pub fn decoded(&self) -> usize {
        self.items.len()
    }

    /// The errors of the items skipped so far (only when
    /// [`skipping_undecodable`](Self::skipping_undecodable)).
    pub fn skipped(&self) -> &[DecodeError] {
        &self.scanner.skipped
    }

    /// Takes the errors of the items skipped so far.
    pub fn take_skipped(&mut self) -> Vec<DecodeError> {
        std::mem::take(&mut self.scanner.skipped)
    }

    /// The list (or `Status`), once the whole body has been pushed.
    pub fn finish(self) -> Result<ListBody<T>, DecodeError> {
        let head = self.scanner.finish()?;
        Ok(match head {
            Head::List(list) => ListBody::List(ObjectList {
                api_version: list.api_version,
                kind: list.kind,
                metadata: list.metadata,
                items: self.items,
            }),
            Head::Status(status) => ListBody::Status(status),
        })
    }
}

/// Makes room in `items`, which is full, for the item about to be pushed and for as many as
/// the `rest` bytes of the chunk likely hold, judged by the average size of the items so far
/// (`item_bytes` over them and the one about to be pushed), with an eighth more for items
/// larger than those seen.
///
/// A body handed over in one piece (a buffered response, a file) then fills a vector sized
/// once instead of one that doubles a dozen times: a typed `Pod` is 2.4 KB, so 10,000 of them
/// move 25 MB at every doubling, through fresh pages. Chunks from the network hold a few
/// items each, and the vector grows as `Vec` grows it (never less than twice its capacity:
/// [`Vec::reserve`]). Bound: what is reserved beyond that is at most twice the chunk's size,
/// so a small first item cannot make a large estimate cost more memory than the chunk holds.
fn reserve_for_rest<T>(items: &mut Vec<T>, item_bytes: u64, rest: usize) {
    let seen = items.len() as u64 + 1;
    let average = (item_bytes / seen).max(1);
    let likely = usize::try_from(rest as u64 / average).unwrap_or(usize::MAX);
    let at_most = rest.saturating_mul(2) / std::mem::size_of::<T>().max(1);
    items.reserve(
        likely
            .saturating_add(likely / 8)
            .min(at_most)
            .saturating_add(1),
    );
}

/// The members other than the items.
pub(crate) enum Head {
    /// A list's (its items are empty).
    List(ObjectList<IgnoredAny>),
    /// A `Status` in place of a list.
    Status(Box<Status>),
}

/// Where the scan of the top-level object is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Before the top-level `{`.
    Start,
    /// After `{`: a key or `}`.
    FirstKey,
    /// After `,`: a key.
    Key,
    /// In a key (after a backslash when `escaped`).
    InKey { escaped: bool },
    /// After a key: `:` (of the `items` member when `items`).
    Colon { items: bool },
    /// After `:`: a value.
    Value { items: bool },
    /// In a member's value, copied into `head`.
    InValue(Scan),
    /// After a member: `,` or `}`.
    AfterValue,
    /// After the `[` of the items: an item or `]`.
    FirstItem,
    /// After a `,` between items: an item.
    Item,
    /// In an item.
    InItem(Scan),
    /// After an item: `,` or `]`.
    AfterItem,
    /// After the top-level `}`: whitespace only.
    Done,
}

/// Finds the items of a list body and the bytes of its other members. See the module
/// documentation.
pub(crate) struct Scanner {
    state: State,
    /// The open brackets of the current value, innermost last.
    stack: Vec<u8>,
    /// Where the current value, key or item started in the current chunk (0 when it started
    /// in an earlier one).
    start: usize,
    /// The bytes of an item that started in an earlier chunk.
    carry: Vec<u8>,
    /// The members other than the items, as an object without its closing brace.
    head: Vec<u8>,
    /// The key being read, or last read, with its quotes.
    key: Vec<u8>,
    items_seen: bool,
    /// Items found so far.
    index: usize,
    /// The cap on one item, and on `head`.
    max_item: usize,
    /// Skip undecodable and oversized items rather than fail.
    skipping: bool,
    /// The current item is over the cap: its bytes are skipped, not gathered.
    oversized: bool,
    /// The errors of the items skipped.
    skipped: Vec<DecodeError>,
    /// Bytes of the body before the current chunk.
    consumed: u64,
    list_type: &'static str,
    item_type: &'static str,
}

impl Scanner {
    /// A scanner whose errors name `L` as the list's type and `I` as the items'.
    pub(crate) fn new<L, I>() -> Self {
        Scanner {
            state: State::Start,
            stack: Vec::new(),
            start: 0,
            carry: Vec::new(),
            head: vec![b'{'],
            key: Vec::new(),
            items_seen: false,
            index: 0,
            max_item: DEFAULT_MAX_ITEM_BYTES,
            skipping: false,
            oversized: false,
            skipped: Vec::new(),
            consumed: 0,
            list_type: std::any::type_name::<L>(),
            item_type: std::any::type_name::<I>(),
        }
    }

    /// Scans `chunk`, handing each item that ends in it to `on_item` (a slice of the chunk
    /// when the whole item is in it) with the number of bytes of the chunk after it.
    pub(crate) fn push<F>(&mut self, chunk: &[u8], on_item: &mut F) -> Result<(), DecodeError>
    where
        F: FnMut(&[u8], usize) -> Result<(), serde_json::Error>,
    {
        let len = chunk.len();
        let mut pos = 0;
        self.start = 0;
        while pos < len {
            let byte = chunk[pos];
            match self.state {
                State::InItem(mut scan) | State::InValue(mut scan) => {
                    let item = matches!(self.state, State::InItem(_));
                    match scan_value(&mut scan, &mut self.stack, chunk, pos) {
                        Ok(Some(end)) if item => {
                            self.item_done(chunk, end, on_item)?;
                            self.state = State::AfterItem;
                            pos = end;
                        }
                        Ok(Some(end)) => {
                            if self.head.len() + end - self.start > self.max_item {
                                return Err(self.head_too_large());
                            }
                            self.head.extend_from_slice(&chunk[self.start..end]);
                            self.state = State::AfterValue;
                            pos = end;
                        }
                        Ok(None) if item => {
                            self.state = State::InItem(scan);
                            pos = len;
                        }
                        Ok(None) => {
                            self.state = State::InValue(scan);
                            pos = len;
                        }
                        Err(bad) => return Err(self.unexpected(chunk, bad)),
                    }
                }
                State::InKey { escaped } => {
                    let mut at = pos + usize::from(escaped);
                    loop {
                        match quote_or_backslash(chunk, at) {
                            None => {
                                self.state = State::InKey { escaped: at > len };
                                pos = len;
                                break;
                            }
                            Some(found) if chunk[found] == b'\\' => at = found + 2,
                            Some(found) => {
                                pos = found + 1;
                                self.key.extend_from_slice(&chunk[self.start..pos]);
                                self.key_done(pos)?;
                                break;
                            }
                        }
                    }
                }
                _ if is_whitespace(byte) => pos += 1,
                State::Start if byte == b'{' => {
                    self.state = State::FirstKey;
                    pos += 1;
                }
                State::FirstKey | State::Key if byte == b'"' => {
                    self.key.clear();
                    self.start = pos;
                    self.state = State::InKey { escaped: false };
                    pos += 1;
                }
                State::FirstKey | State::AfterValue if byte == b'}' => {
                    self.state = State::Done;
                    pos += 1;
                }
                State::AfterValue if byte == b',' => {
                    self.state = State::Key;
                    pos += 1;
                }
                State::Colon { items } if byte == b':' => {
                    self.state = State::Value { items };
                    pos += 1;
                }
                State::Value { items: true } if byte == b'[' => {
                    self.state = State::FirstItem;
                    pos += 1;
                }
                State::Value { .. } => {
                    if self.head.len() > 1 {
                        self.head.push(b',');
                    }
                    self.head.extend_from_slice(&self.key);
                    self.head.push(b':');
                    self.start = pos;
                    let scan = self.begin_value(chunk, pos)?;
                    self.state = State::InValue(scan);
                    pos += 1;
                }
                State::FirstItem if byte == b']' => {
                    self.state = State::AfterValue;
                    pos += 1;
                }
                State::FirstItem | State::Item => {
                    self.start = pos;
                    let scan = self.begin_value(chunk, pos)?;
                    self.state = State::InItem(scan);
                    pos += 1;
                }
                State::AfterItem if byte == b',' => {
                    self.state = State::Item;
                    pos += 1;
                }
                State::AfterItem if byte == b']' => {
                    self.state = State::AfterValue;
                    pos += 1;
                }
                _ => return Err(self.unexpected(chunk, pos)),
            }
        }
        let rest = &chunk[self.start.min(len)..];
        match self.state {
            State::InItem(_) if self.oversized => {}
            State::InItem(_) if self.carry.len() + rest.len() > self.max_item => {
                self.item_too_large(len)?;
            }
            State::InItem(_) => self.carry.extend_from_slice(rest),
            State::InValue(_) | State::InKey { .. }
                if self.head.len() + self.key.len() + rest.len() > self.max_item =>
            {
                return Err(self.head_too_large());
            }
            State::InValue(_) => self.head.extend_from_slice(rest),
            State::InKey { .. } => self.key.extend_from_slice(rest),
            _ => {}
        }
        self.consumed += len as u64;
        Ok(())
    }

    /// The other members, once the whole body has been pushed.
    pub(crate) fn finish(mut self) -> Result<Head, DecodeError> {
        if self.state != State::Done {
            return Err(DecodeError::for_list(
                self.list_type,
                ListFailure::Truncated,
                "the body ended before the list was complete".to_owned(),
                self.consumed,
            ));
        }
        self.head.push(b'}');
        let fields = |type_name: &'static str, error: serde_json::Error| {
            DecodeError::for_list(
                type_name,
                ListFailure::Fields,
                json::redacted_message(&error),
                self.consumed,
            )
        };
        let list: ObjectList<IgnoredAny> =
            serde_json::from_slice(&self.head).map_err(|e| fields(self.list_type, e))?;
        if list.kind != "Status" {
            return Ok(Head::List(list));
        }
        let status: Status = serde_json::from_slice(&self.head)
            .map_err(|e| fields(std::any::type_name::<Status>(), e))?;
        Ok(Head::Status(Box::new(status)))
    }

    /// Starts the value whose first byte is at `pos`.
    fn begin_value(&mut self, chunk: &[u8], pos: usize) -> Result<Scan, DecodeError> {
        let byte = chunk[pos];
        match CLASS[usize::from(byte)] {
            OPEN => {
                self.stack.clear();
                self.stack.push(byte);
                Ok(Scan::Nested)
            }
            QUOTE => {
                self.stack.clear();
                Ok(Scan::Str { escaped: false })
            }
            SCALAR => Ok(Scan::Scalar),
            _ => Err(self.unexpected(chunk, pos)),
        }
    }

    /// Counts an item decoded from another encoding, if the scan is where an item goes (after
    /// the `[` of the items, or after an item): it is then after that item.
    fn item_decoded(&mut self) -> bool {
        match self.state {
            State::FirstItem | State::AfterItem => {
                self.state = State::AfterItem;
                self.index += 1;
                true
            }
            _ => false,
        }
    }

    /// Decodes the item ending at `end`.
    fn item_done<F>(&mut self, chunk: &[u8], end: usize, on_item: &mut F) -> Result<(), DecodeError>
    where
        F: FnMut(&[u8], usize) -> Result<(), serde_json::Error>,
    {
        let index = self.index;
        if std::mem::take(&mut self.oversized) {
            self.index += 1;
            self.skipped.push(self.too_large(index, end));
            return Ok(());
        }
        if self.carry.len() + end - self.start.min(end) > self.max_item {
            self.carry.clear();
            self.item_too_large(end)?;
            self.oversized = false;
            self.index += 1;
            self.skipped.push(self.too_large(index, end));
            return Ok(());
        }
        let (result, valid) = if self.carry.is_empty() {
            let bytes = &chunk[self.start..end];
            let result = on_item(bytes, chunk.len() - end);
            let valid = result.is_err() && self.skipping && json::is_valid(bytes);
            (result, valid)
        } else {
            self.carry.extend_from_slice(&chunk[..end]);
            let result = on_item(&self.carry, chunk.len() - end);
            let valid = result.is_err() && self.skipping && json::is_valid(&self.carry);
            self.carry.clear();
            (result, valid)
        };
        self.index += 1;
        let Err(error) = result else {
            return Ok(());
        };
        let mut decode = DecodeError::for_list(
            self.item_type,
            ListFailure::Item { index },
            json::redacted_message(&error),
            self.consumed + end as u64,
        );
        (decode.line, decode.column) = (error.line(), error.column());
        if valid {
            self.skipped.push(decode);
            return Ok(());
        }
        Err(decode)
    }

    /// The item being read passed the cap (at `pos` in the chunk): an error, or, when
    /// skipping, the rest of it is skipped without being gathered.
    fn item_too_large(&mut self, pos: usize) -> Result<(), DecodeError> {
        if !self.skipping {
            return Err(self.too_large(self.index, pos));
        }
        self.oversized = true;
        self.carry = Vec::new();
        Ok(())
    }

    fn too_large(&self, index: usize, pos: usize) -> DecodeError {
        let limit = self.max_item;
        DecodeError::for_list(
            self.item_type,
            ListFailure::ItemTooLarge { index, limit },
            format!("the item is larger than {limit} bytes"),
            self.consumed + pos as u64,
        )
    }

    fn head_too_large(&self) -> DecodeError {
        DecodeError::for_list(
            self.list_type,
            ListFailure::Fields,
            format!(
                "the members other than the items are larger than {} bytes",
                self.max_item
            ),
            self.consumed,
        )
    }

    /// Reads the key just completed (in `key`); `pos` is just past it.
    fn key_done(&mut self, pos: usize) -> Result<(), DecodeError> {
        let key = serde_json::from_slice::<Cow<'_, str>>(&self.key).map_err(|error| {
            let offset = (self.consumed + pos as u64).saturating_sub(self.key.len() as u64);
            DecodeError::for_list(
                self.list_type,
                ListFailure::Syntax { offset },
                format!(
                    "invalid key at byte {offset}: {}",
                    json::redacted_message(&error)
                ),
                self.consumed + pos as u64,
            )
        })?;
        let items = key == "items";
        if items {
            if self.items_seen {
                return Err(DecodeError::for_list(
                    self.list_type,
                    ListFailure::Fields,
                    "duplicate field `items`".to_owned(),
                    self.consumed + pos as u64,
                ));
            }
            self.items_seen = true;
        }
        self.state = State::Colon { items };
        Ok(())
    }

    fn unexpected(&self, chunk: &[u8], pos: usize) -> DecodeError {
        let offset = self.consumed + pos as u64;
        DecodeError::for_list(
            self.list_type,
            ListFailure::Syntax { offset },
            format!("unexpected byte {:#04x} at byte {offset}", chunk[pos]),
            offset,
        )
    }
}

#[cfg(test)]
#[path = "list_decode_tests.rs"]
mod tests;
