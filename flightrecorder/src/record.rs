//! What the recorder keeps: one [`Entry`] per journey event or closed journey span, in a
//! bounded ring buffer.
//!
//! An entry is the event's stage (the `stage` field every journey event carries), its other
//! fields as plain values, when it happened on the recorder's clock, and the journey span it
//! happened in (a queue add inside a handler's span, a request inside a reconcile's). Fields
//! are copied out of `tracing`'s visitors at once, so an entry owns its data and costs a few
//! small allocations; the ring drops the oldest entries first and counts what it dropped.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

/// One field value, as `tracing` hands it over.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// A string, or anything recorded with `%` or `?`.
    Str(Box<str>),
    /// An unsigned integer.
    U64(u64),
    /// A signed integer.
    I64(i64),
    /// A float.
    F64(f64),
    /// A boolean.
    Bool(bool),
}

impl Value {
    /// The value as an unsigned integer, if it is a non-negative integer.
    pub fn as_u64(&self) -> Option<u64> {
        match *self {
            Value::U64(n) => Some(n),
            Value::I64(n) => u64::try_from(n).ok(),
            _ => None,
        }
    }

    /// The value as a string, if it is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Str(s) => f.write_str(s),
            Value::U64(n) => write!(f, "{n}"),
            Value::I64(n) => write!(f, "{n}"),
            Value::F64(n) => write!(f, "{n}"),
            Value::Bool(b) => write!(f, "{b}"),
        }
    }
}

impl Serialize for Value {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Str(s) => serializer.serialize_str(s),
            Value::U64(n) => serializer.serialize_u64(*n),
            Value::I64(n) => serializer.serialize_i64(*n),
            Value::F64(n) if n.is_finite() => serializer.serialize_f64(*n),
            Value::F64(_) => serializer.serialize_none(),
            Value::Bool(b) => serializer.serialize_bool(*b),
        }
    }
}

/// The fields of an entry, in the order they were recorded (a later record of the same
/// field, as a span's `record` call, replaces the earlier value).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Fields(Vec<(&'static str, Value)>);

impl Fields {
    /// Sets `name` to `value`.
    pub fn set(&mut self, name: &'static str, value: Value) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name, value)),
        }
    }

    /// The value of `name`.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The value of `name` as a string.
    pub fn str(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(Value::as_str)
    }

    /// The value of `name` as an unsigned integer.
    pub fn u64(&self, name: &str) -> Option<u64> {
        self.get(name).and_then(Value::as_u64)
    }

    /// Every field, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &Value)> {
        self.0.iter().map(|(n, v)| (*n, v))
    }
}

impl Serialize for Fields {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

/// One recorded journey event, or one closed journey span.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The recorder's sequence number, taken when the event happened or the span opened:
    /// entries sorted by id are in the order things started.
    pub id: u64,
    /// The id of the innermost journey span this happened in.
    pub parent: Option<u64>,
    /// The stage (`watch`, `add`, `get`, `reconcile`, `http`, ...).
    pub stage: Box<str>,
    /// When it happened (a span: when it opened), since the recorder started.
    pub at: Duration,
    /// A span's length; `None` for an event.
    pub duration: Option<Duration>,
    /// The other fields.
    pub fields: Fields,
}

impl Entry {
    /// When it ended: `at` for an event.
    pub fn end(&self) -> Duration {
        self.at + self.duration.unwrap_or_default()
    }
}

/// The bounded buffer: the newest `capacity` entries.
#[derive(Debug)]
pub(crate) struct Ring {
    entries: VecDeque<Entry>,
    capacity: usize,
    dropped: u64,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Self {
        let capacity = capacity.max(1);
        Ring {
            entries: VecDeque::with_capacity(capacity.min(4096)),
            capacity,
            dropped: 0,
        }
    }

    pub(crate) fn push(&mut self, entry: Entry) {
        if self.entries.len() == self.capacity {
            self.entries.pop_front();
            self.dropped += 1;
        }
        self.entries.push_back(entry);
    }

    /// The entries that started at or after `since`, in id order, and how many were dropped.
    pub(crate) fn copy_since(&self, since: Duration) -> (Vec<Entry>, u64) {
        let mut entries: Vec<Entry> = self
            .entries
            .iter()
            .filter(|e| e.at >= since)
            .cloned()
            .collect();
        entries.sort_by_key(|e| e.id);
        (entries, self.dropped)
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: u64) -> Entry {
        Entry {
            id,
            parent: None,
            stage: "add".into(),
            at: Duration::from_millis(id),
            duration: None,
            fields: Fields::default(),
        }
    }

    #[test]
    fn the_ring_keeps_the_newest_and_counts_the_dropped() {
        let mut ring = Ring::new(3);
        for id in [2, 1, 3, 4, 5] {
            ring.push(entry(id));
        }
        let (entries, dropped) = ring.copy_since(Duration::ZERO);
        assert_eq!(entries.iter().map(|e| e.id).collect::<Vec<_>>(), [3, 4, 5]);
        assert_eq!(dropped, 2);
        let (recent, _) = ring.copy_since(Duration::from_millis(4));
        assert_eq!(recent.len(), 2);
    }

    #[test]
    fn a_later_record_replaces_a_field() {
        let mut fields = Fields::default();
        fields.set("outcome", Value::Str("".into()));
        fields.set("key", Value::Str("default/web".into()));
        fields.set("outcome", Value::Str("ok".into()));
        assert_eq!(fields.str("outcome"), Some("ok"));
        assert_eq!(fields.iter().count(), 2);
        assert_eq!(
            serde_json::to_string(&fields).unwrap(),
            r#"{"outcome":"ok","key":"default/web"}"#
        );
    }
}
