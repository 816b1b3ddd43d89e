//! Watch stream events: [`WatchEvent<T>`].
//!
//! Mirrors `metav1.WatchEvent` (`{"type": ..., "object": ...}`) and the event types of
//! `k8s.io/apimachinery/pkg/watch`. Unlike Go, where `object` is an undecoded
//! `RawExtension`, the payload is decoded according to the type:
//!
//! * `ADDED`, `MODIFIED`, `DELETED` carry a full `T`;
//! * `BOOKMARK` carries a [`Bookmark`]: only `metadata.resourceVersion` and
//!   `metadata.annotations` are read, since a server sends an otherwise empty object that
//!   need not be a valid `T` (e.g. a Pod with `"spec":{"containers":null}`). The
//!   [`INITIAL_EVENTS_END_ANNOTATION`] on a bookmark ends the initial events of a
//!   `sendInitialEvents=true` watch;
//! * `ERROR` carries a boxed [`Status`] (e.g. `410 Expired`: relist).
//!
//! `type` normally precedes `object` on the wire and the payload is then decoded straight
//! from the stream; if `object` comes first it is buffered as a `serde_json::Value` and
//! decoded once the type is known. An unknown type is an error naming it.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;

use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};

use crate::object::Object;
use crate::serde_util::null_default;
use crate::status::Status;

/// Annotation on the `BOOKMARK` that ends the initial events of a watch started with
/// `sendInitialEvents=true`.
pub const INITIAL_EVENTS_END_ANNOTATION: &str = "k8s.io/initial-events-end";

/// The `type` of a watch event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WatchEventType {
    /// `ADDED`
    Added,
    /// `MODIFIED`
    Modified,
    /// `DELETED`
    Deleted,
    /// `BOOKMARK`
    Bookmark,
    /// `ERROR`
    Error,
}

const EVENT_TYPES: &str = "ADDED, MODIFIED, DELETED, BOOKMARK, ERROR";

impl WatchEventType {
    /// The wire string, e.g. `ADDED`.
    pub fn as_str(self) -> &'static str {
        match self {
            WatchEventType::Added => "ADDED",
            WatchEventType::Modified => "MODIFIED",
            WatchEventType::Deleted => "DELETED",
            WatchEventType::Bookmark => "BOOKMARK",
            WatchEventType::Error => "ERROR",
        }
    }

    /// Parses a wire string.
    pub fn parse(s: &str) -> Option<WatchEventType> {
        Some(match s {
            "ADDED" => WatchEventType::Added,
            "MODIFIED" => WatchEventType::Modified,
            "DELETED" => WatchEventType::Deleted,
            "BOOKMARK" => WatchEventType::Bookmark,
            "ERROR" => WatchEventType::Error,
            _ => return None,
        })
    }
}

impl fmt::Display for WatchEventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for WatchEventType {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for WatchEventType {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WatchEventType, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = WatchEventType;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a watch event type ({EVENT_TYPES})")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<WatchEventType, E> {
                WatchEventType::parse(v).ok_or_else(|| {
                    E::custom(format_args!(
                        "unknown watch event type {v:?}, expected one of {EVENT_TYPES}"
                    ))
                })
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// One event of a watch stream.
#[derive(Debug, Clone, PartialEq)]
pub enum WatchEvent<T> {
    /// The object was created (or first seen).
    Added(T),
    /// The object changed.
    Modified(T),
    /// The object was deleted; this is its last state.
    Deleted(T),
    /// A progress marker: the collection reached this resourceVersion.
    Bookmark(Bookmark),
    /// The watch failed; the stream ends. Boxed: errors are rare, and this keeps the
    /// event as small as its object for the common case.
    Error(Box<Status>),
}

/// The payload of a `BOOKMARK` event.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bookmark {
    /// `apiVersion` of the watched type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub api_version: String,
    /// `kind` of the watched type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub kind: String,
    /// The only metadata a bookmark has.
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: BookmarkMeta,
}

/// Metadata of a [`Bookmark`].
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BookmarkMeta {
    /// The collection's resourceVersion at this point of the stream.
    #[serde(default, deserialize_with = "null_default")]
    pub resource_version: String,
    /// Annotations, e.g. [`INITIAL_EVENTS_END_ANNOTATION`].
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_default"
    )]
    pub annotations: BTreeMap<String, String>,
}

impl Bookmark {
    /// A bookmark at `resource_version`.
    pub fn new(resource_version: impl Into<String>) -> Bookmark {
        Bookmark {
            metadata: BookmarkMeta {
                resource_version: resource_version.into(),
                annotations: BTreeMap::new(),
            },
            ..Bookmark::default()
        }
    }

    /// Marks this bookmark as the end of the initial events.
    pub fn with_initial_events_end(mut self) -> Bookmark {
        self.metadata
            .annotations
            .insert(INITIAL_EVENTS_END_ANNOTATION.to_owned(), "true".to_owned());
        self
    }

    /// The resourceVersion.
    pub fn resource_version(&self) -> &str {
        &self.metadata.resource_version
    }

    /// Whether this bookmark ends the initial events (annotation set to `"true"`).
    pub fn is_initial_events_end(&self) -> bool {
        self.metadata
            .annotations
            .get(INITIAL_EVENTS_END_ANNOTATION)
            .is_some_and(|v| v == "true")
    }
}

impl<T> WatchEvent<T> {
    /// The event's type.
    pub fn event_type(&self) -> WatchEventType {
        match self {
            WatchEvent::Added(_) => WatchEventType::Added,
            WatchEvent::Modified(_) => WatchEventType::Modified,
            WatchEvent::Deleted(_) => WatchEventType::Deleted,
            WatchEvent::Bookmark(_) => WatchEventType::Bookmark,
            WatchEvent::Error(_) => WatchEventType::Error,
        }
    }

    /// The object of an `ADDED`, `MODIFIED` or `DELETED` event.
    pub fn object(&self) -> Option<&T> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => Some(o),
            WatchEvent::Bookmark(_) | WatchEvent::Error(_) => None,
        }
    }

    /// Converts the object, keeping the event type.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> WatchEvent<U> {
        match self {
            WatchEvent::Added(o) => WatchEvent::Added(f(o)),
            WatchEvent::Modified(o) => WatchEvent::Modified(f(o)),
            WatchEvent::Deleted(o) => WatchEvent::Deleted(f(o)),
            WatchEvent::Bookmark(b) => WatchEvent::Bookmark(b),
            WatchEvent::Error(s) => WatchEvent::Error(s),
        }
    }
}

impl<T: Object> WatchEvent<T> {
    /// The resourceVersion the stream reached with this event (`None` for `ERROR`).
    pub fn resource_version(&self) -> Option<&str> {
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                Some(o.resource_version())
            }
            WatchEvent::Bookmark(b) => Some(b.resource_version()),
            WatchEvent::Error(_) => None,
        }
    }
}

impl<T: Serialize> Serialize for WatchEvent<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(2))?;
        map.serialize_entry("type", &self.event_type())?;
        match self {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                map.serialize_entry("object", o)?;
            }
            WatchEvent::Bookmark(b) => map.serialize_entry("object", b)?,
            WatchEvent::Error(s) => map.serialize_entry("object", s)?,
        }
        map.end()
    }
}

enum Field {
    Type,
    Object,
    Other,
}

impl<'de> Deserialize<'de> for Field {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Field, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Field;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Field, E> {
                Ok(match v {
                    "type" => Field::Type,
                    "object" => Field::Object,
                    _ => Field::Other,
                })
            }
        }
        deserializer.deserialize_identifier(V)
    }
}

fn decode_payload<'de, T, D>(ty: WatchEventType, d: D) -> Result<WatchEvent<T>, D::Error>
where
    T: Deserialize<'de>,
    D: Deserializer<'de>,
{
    Ok(match ty {
        WatchEventType::Added => WatchEvent::Added(T::deserialize(d)?),
        WatchEventType::Modified => WatchEvent::Modified(T::deserialize(d)?),
        WatchEventType::Deleted => WatchEvent::Deleted(T::deserialize(d)?),
        WatchEventType::Bookmark => WatchEvent::Bookmark(Bookmark::deserialize(d)?),
        WatchEventType::Error => WatchEvent::Error(Box::new(Status::deserialize(d)?)),
    })
}

/// Decodes the payload straight from the stream once the type is known.
struct PayloadSeed<T>(WatchEventType, PhantomData<T>);

impl<'de, T: Deserialize<'de>> de::DeserializeSeed<'de> for PayloadSeed<T> {
    type Value = WatchEvent<T>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<WatchEvent<T>, D::Error> {
        decode_payload(self.0, d)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for WatchEvent<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WatchEvent<T>, D::Error> {
        struct V<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = WatchEvent<T>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a watch event {\"type\": ..., \"object\": ...}")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<WatchEvent<T>, A::Error> {
                let mut ty: Option<WatchEventType> = None;
                let mut event: Option<WatchEvent<T>> = None;
                let mut buffered: Option<serde_json::Value> = None;
                while let Some(field) = map.next_key::<Field>()? {
                    match field {
                        Field::Type => {
                            if ty.is_some() {
                                return Err(de::Error::duplicate_field("type"));
                            }
                            ty = Some(map.next_value()?);
                        }
                        Field::Object => {
                            if event.is_some() || buffered.is_some() {
                                return Err(de::Error::duplicate_field("object"));
                            }
                            match ty {
                                Some(t) => {
                                    event = Some(map.next_value_seed(PayloadSeed(t, PhantomData))?);
                                }
                                None => buffered = Some(map.next_value()?),
                            }
                        }
                        Field::Other => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                let ty = ty.ok_or_else(|| de::Error::missing_field("type"))?;
                match (event, buffered) {
                    (Some(e), _) => Ok(e),
                    (None, Some(value)) => decode_payload(ty, value).map_err(de::Error::custom),
                    (None, None) => Err(de::Error::missing_field("object")),
                }
            }
        }

        deserializer.deserialize_map(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DynamicObject, StatusReason};

    type Event = WatchEvent<DynamicObject>;

    fn decode(text: &str) -> Event {
        serde_json::from_str(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    #[test]
    fn object_events() {
        for (ty, expected) in [
            ("ADDED", WatchEventType::Added),
            ("MODIFIED", WatchEventType::Modified),
            ("DELETED", WatchEventType::Deleted),
        ] {
            let text = format!(
                r#"{{"type":"{ty}","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"c","namespace":"n","resourceVersion":"7"}},"data":{{"k":"v"}}}}}}"#
            );
            let ev = decode(&text);
            assert_eq!(ev.event_type(), expected);
            assert_eq!(ev.resource_version(), Some("7"));
            assert_eq!(ev.object().unwrap().data["data"]["k"], "v");
            assert_eq!(serde_json::to_string(&ev).unwrap(), text);
        }
    }

    #[test]
    fn bookmark_with_initial_events_end_needs_no_full_object() {
        // What a server sends: an empty Pod whose fields would not decode as a real Pod type.
        let text = r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"12746","creationTimestamp":null,"annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}"#;

        #[derive(Debug, Deserialize)]
        struct StrictPod {
            #[allow(dead_code)]
            spec: Vec<u8>,
        }
        let ev: WatchEvent<StrictPod> = serde_json::from_str(text).unwrap();
        let WatchEvent::Bookmark(b) = &ev else {
            panic!("not a bookmark: {ev:?}")
        };
        assert_eq!(b.resource_version(), "12746");
        assert_eq!(b.kind, "Pod");
        assert!(b.is_initial_events_end());
        assert!(ev.object().is_none());

        let plain = decode(r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5"}}}"#);
        assert_eq!(plain.resource_version(), Some("5"));
        let WatchEvent::Bookmark(b) = plain else {
            panic!()
        };
        assert!(!b.is_initial_events_end());
        let out =
            WatchEvent::<DynamicObject>::Bookmark(Bookmark::new("9").with_initial_events_end());
        assert_eq!(
            serde_json::to_string(&out).unwrap(),
            r#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}"#
        );
    }

    #[test]
    fn error_410_expired() {
        let text = r#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (1234)","reason":"Expired","code":410}}"#;
        let ev = decode(text);
        let WatchEvent::Error(st) = &ev else {
            panic!("not an error: {ev:?}")
        };
        assert_eq!(st.code, 410);
        assert_eq!(st.reason, StatusReason::Expired);
        assert!(st.is_resource_expired());
        assert_eq!(ev.resource_version(), None);
        let back: Event = serde_json::from_str(&serde_json::to_string(&ev).unwrap()).unwrap();
        assert_eq!(back, ev);
    }

    #[test]
    fn object_before_type_is_buffered() {
        let ev = decode(
            r#"{"object":{"metadata":{"name":"x","resourceVersion":"3"}},"type":"DELETED"}"#,
        );
        assert_eq!(ev.event_type(), WatchEventType::Deleted);
        assert_eq!(ev.object().unwrap().metadata.name, "x");
        let ev = decode(r#"{"object":{"code":410,"reason":"Gone"},"type":"ERROR"}"#);
        assert!(matches!(ev, WatchEvent::Error(ref s) if s.reason == StatusReason::Gone));
        let mapped = decode(r#"{"type":"ADDED","object":{"metadata":{"name":"m"}},"extra":1}"#)
            .map(|o| o.metadata.name);
        assert_eq!(mapped, WatchEvent::Added("m".to_owned()));
    }

    #[test]
    fn malformed_events_are_errors_naming_the_problem() {
        for (text, needle) in [
            (
                r#"{"type":"UPSERTED","object":{}}"#,
                "unknown watch event type \"UPSERTED\"",
            ),
            (r#"{"object":{}}"#, "missing field `type`"),
            (r#"{"type":"ADDED"}"#, "missing field `object`"),
            (
                r#"{"type":"ERROR","object":"boom"}"#,
                "expected struct Status",
            ),
            (
                r#"{"type":"ADDED","object":[1]}"#,
                "expected a Kubernetes object",
            ),
            (
                r#"{"object":[1],"type":"ADDED"}"#,
                "expected a Kubernetes object",
            ),
            (
                r#"{"type":"ADDED","type":"ADDED","object":{}}"#,
                "duplicate field `type`",
            ),
            ("[]", "expected a watch event"),
        ] {
            let err = serde_json::from_str::<Event>(text).unwrap_err();
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
    }
}
