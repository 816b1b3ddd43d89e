//! The core/v1 `Event` object and its parts: [`Event`], [`ObjectReference`], [`EventSource`],
//! [`EventSeries`] and the [`EventType`] a recorder takes.
//!
//! Mirrors `k8s.io/api/core/v1` (`types.go`: `Event`, `ObjectReference`, `EventSource`,
//! `EventSeries`) and the reference helper of client-go's `tools/reference`
//! (`GetReference`, `GetPartialReference`). The wire format is Kubernetes JSON: camelCase
//! names, Go's `omitempty` where Go has it, `reportingComponent` and `reportingInstance`
//! always written (Go declares them without `omitempty`), timestamps as RFC 3339 with
//! seconds precision (`firstTimestamp`, `lastTimestamp`) or microseconds (`eventTime`).
//!
//! Where it differs from Go, and why:
//! * `apiVersion: v1` and `kind: Event` are always written and ignored when read, so the
//!   struct has no `TypeMeta` to fill in (what k8s-openapi does too).
//! * An absent timestamp is `None` and is not written; Go writes `null` for a zero
//!   `metav1.Time`. The API server reads both as "unset".
//! * A JSON `null` in a string, number or object field reads as its empty value, as in Go.
//! * The Go field `ReportingController` keeps its Go name here (`reporting_controller`) and
//!   its JSON name `reportingComponent`.

use std::fmt;
use std::str::FromStr;

use clientgo_apimachinery::{
    DynamicObject, MicroTime, Object, ObjectMeta, Resource, Time, impl_object,
};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `Event.type` of an event that reports normal operation.
pub const EVENT_TYPE_NORMAL: &str = "Normal";
/// `Event.type` of an event that reports something that may need attention.
pub const EVENT_TYPE_WARNING: &str = "Warning";

/// The type of an event a recorder emits: client-go's `v1.EventTypeNormal` and
/// `v1.EventTypeWarning`, the only two it accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EventType {
    /// Normal operation, e.g. "Synced", "Created".
    Normal,
    /// Something that may need attention, e.g. "ErrResourceExists", "FailedCreate".
    Warning,
}

impl EventType {
    /// The wire string: `Normal` or `Warning`.
    pub const fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => EVENT_TYPE_NORMAL,
            EventType::Warning => EVENT_TYPE_WARNING,
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A string that is neither `Normal` nor `Warning`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unsupported event type {0:?}: expected \"Normal\" or \"Warning\"")]
pub struct UnsupportedEventType(pub String);

impl FromStr for EventType {
    type Err = UnsupportedEventType;
    fn from_str(s: &str) -> Result<EventType, UnsupportedEventType> {
        match s {
            EVENT_TYPE_NORMAL => Ok(EventType::Normal),
            EVENT_TYPE_WARNING => Ok(EventType::Warning),
            other => Err(UnsupportedEventType(other.to_owned())),
        }
    }
}

/// Deserializes `T`, mapping a JSON `null` to `T::default()` (Go's zero value).
fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}

/// Points at the object an event is about (`v1.ObjectReference`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectReference {
    /// The object's kind, e.g. `Pod`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub kind: String,
    /// The object's namespace; empty for cluster-scoped objects.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub namespace: String,
    /// The object's name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub name: String,
    /// The object's uid.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub uid: String,
    /// The object's `apiVersion`, e.g. `v1` or `apps/v1`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub api_version: String,
    /// The object's resourceVersion when the reference was made.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub resource_version: String,
    /// A part of the object, e.g. `spec.containers{web}`; events about different parts are
    /// counted apart.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub field_path: String,
}

impl ObjectReference {
    /// A reference to a typed object: kind and apiVersion from its [`Resource`] type; name,
    /// namespace, uid and resourceVersion from its metadata (client-go's `GetReference`).
    ///
    /// ```
    /// use clientgo_apimachinery::{impl_object, ObjectMeta, Resource};
    /// use clientgo_record::ObjectReference;
    ///
    /// struct Foo { metadata: ObjectMeta }
    /// impl_object!(Foo);
    /// impl Resource for Foo {
    ///     const GROUP: &'static str = "samplecontroller.k8s.io";
    ///     const VERSION: &'static str = "v1alpha1";
    ///     const KIND: &'static str = "Foo";
    ///     const PLURAL: &'static str = "foos";
    ///     const NAMESPACED: bool = true;
    /// }
    ///
    /// let foo = Foo { metadata: ObjectMeta::namespaced("default", "example-foo") };
    /// let r = ObjectReference::from_object(&foo);
    /// assert_eq!((r.kind.as_str(), r.api_version.as_str()), ("Foo", "samplecontroller.k8s.io/v1alpha1"));
    /// assert_eq!((r.namespace.as_str(), r.name.as_str()), ("default", "example-foo"));
    /// ```
    pub fn from_object<K: Object + Resource>(object: &K) -> ObjectReference {
        ObjectReference {
            kind: K::KIND.to_owned(),
            api_version: K::api_version().into_owned(),
            ..ObjectReference::from_meta(object)
        }
    }

    /// A reference to a dynamic object, with the kind and apiVersion it carries.
    pub fn from_dynamic(object: &DynamicObject) -> ObjectReference {
        let (api_version, kind) = object
            .types
            .as_ref()
            .map_or((String::new(), String::new()), |t| {
                (t.api_version.clone(), t.kind.clone())
            });
        ObjectReference {
            kind,
            api_version,
            ..ObjectReference::from_meta(object)
        }
    }

    fn from_meta(object: &impl Object) -> ObjectReference {
        ObjectReference {
            namespace: object.namespace().to_owned(),
            name: object.name().to_owned(),
            uid: object.uid().to_owned(),
            resource_version: object.resource_version().to_owned(),
            ..ObjectReference::default()
        }
    }

    /// The same reference narrowed to a part of the object (client-go's
    /// `GetPartialReference`), e.g. `spec.containers{web}`.
    pub fn with_field_path(mut self, field_path: impl Into<String>) -> ObjectReference {
        self.field_path = field_path.into();
        self
    }
}

/// Who reports an event (`v1.EventSource`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSource {
    /// The component, e.g. `sample-controller`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub component: String,
    /// The host (node or pod) it runs on.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub host: String,
}

impl EventSource {
    /// A source with a component and no host.
    pub fn component(component: impl Into<String>) -> EventSource {
        EventSource {
            component: component.into(),
            host: String::new(),
        }
    }
}

/// A run of repeated occurrences (`v1.EventSeries`), written by events.k8s.io clients.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EventSeries {
    /// How many times the event has been seen in this series.
    #[serde(
        default,
        skip_serializing_if = "is_zero_i32",
        deserialize_with = "null_default"
    )]
    pub count: i32,
    /// When the last occurrence was seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_time: Option<MicroTime>,
}

/// A report of something that happened to an object (`v1.Event`, group `""`, version `v1`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Event {
    /// The event's own metadata: its name is `<object>.<hex nanos>`, its namespace the
    /// object's (or `default`).
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ObjectMeta,
    /// The object the event is about.
    #[serde(default, deserialize_with = "null_default")]
    pub involved_object: ObjectReference,
    /// Short, machine-readable UpperCamelCase reason, e.g. `ErrResourceExists`.
    #[serde(default, deserialize_with = "null_default")]
    pub reason: String,
    /// Human-readable description.
    #[serde(default, deserialize_with = "null_default")]
    pub message: String,
    /// Who reported it.
    #[serde(default, deserialize_with = "null_default")]
    pub source: EventSource,
    /// When it was first seen.
    #[serde(default)]
    pub first_timestamp: Option<Time>,
    /// When it was last seen.
    #[serde(default)]
    pub last_timestamp: Option<Time>,
    /// How many times it has been seen.
    #[serde(default, deserialize_with = "null_default")]
    pub count: i32,
    /// `Normal` or `Warning` (a string: servers may hold other types).
    #[serde(default, rename = "type", deserialize_with = "null_default")]
    pub type_: String,
    /// When it was first observed, in microseconds (events.k8s.io clients set it).
    #[serde(default)]
    pub event_time: Option<MicroTime>,
    /// Repetitions, for events.k8s.io clients.
    #[serde(default)]
    pub series: Option<EventSeries>,
    /// What was done, or failed, about the object.
    #[serde(default, deserialize_with = "null_default")]
    pub action: String,
    /// A second object, for more complex events.
    #[serde(default)]
    pub related: Option<ObjectReference>,
    /// The controller that emitted it (JSON `reportingComponent`).
    #[serde(
        default,
        rename = "reportingComponent",
        deserialize_with = "null_default"
    )]
    pub reporting_controller: String,
    /// The instance of that controller, e.g. its host.
    #[serde(default, deserialize_with = "null_default")]
    pub reporting_instance: String,
}

impl_object!(Event);

impl Resource for Event {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Event";
    const PLURAL: &'static str = "events";
    const NAMESPACED: bool = true;
}

impl Event {
    /// The type as an [`EventType`], when it is one of the two a recorder emits.
    pub fn event_type(&self) -> Option<EventType> {
        self.type_.parse().ok()
    }
}

/// The wire form of [`Event`]: `apiVersion` and `kind` first, then the fields in Go's order.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct EventWire<'a> {
    api_version: &'static str,
    kind: &'static str,
    metadata: &'a ObjectMeta,
    involved_object: &'a ObjectReference,
    #[serde(skip_serializing_if = "str::is_empty")]
    reason: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    message: &'a str,
    source: &'a EventSource,
    #[serde(skip_serializing_if = "Option::is_none")]
    first_timestamp: Option<Time>,
    #[serde(skip_serializing_if = "Option::is_none")]
    last_timestamp: Option<Time>,
    #[serde(skip_serializing_if = "is_zero_i32")]
    count: i32,
    #[serde(rename = "type", skip_serializing_if = "str::is_empty")]
    type_: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    event_time: Option<MicroTime>,
    #[serde(skip_serializing_if = "Option::is_none")]
    series: Option<&'a EventSeries>,
    #[serde(skip_serializing_if = "str::is_empty")]
    action: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    related: Option<&'a ObjectReference>,
    #[serde(rename = "reportingComponent")]
    reporting_controller: &'a str,
    reporting_instance: &'a str,
}

impl Serialize for Event {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        EventWire {
            api_version: "v1",
            kind: "Event",
            metadata: &self.metadata,
            involved_object: &self.involved_object,
            reason: &self.reason,
            message: &self.message,
            source: &self.source,
            first_timestamp: self.first_timestamp,
            last_timestamp: self.last_timestamp,
            count: self.count,
            type_: &self.type_,
            event_time: self.event_time,
            series: self.series.as_ref(),
            action: &self.action,
            related: self.related.as_ref(),
            reporting_controller: &self.reporting_controller,
            reporting_instance: &self.reporting_instance,
        }
        .serialize(serializer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::TypeMeta;

    /// An event as an API server returns it.
    const SERVER_EVENT: &str = concat!(
        r#"{"apiVersion":"v1","kind":"Event","metadata":{"name":"web-0.17a2b3c4d5e6f708","#,
        r#""namespace":"prod","uid":"6d1c","resourceVersion":"812"},"#,
        r#""involvedObject":{"kind":"Pod","namespace":"prod","name":"web-0","uid":"9f1c","#,
        r#""apiVersion":"v1","resourceVersion":"800","fieldPath":"spec.containers{web}"},"#,
        r#""reason":"BackOff","message":"Back-off restarting failed container","#,
        r#""source":{"component":"kubelet","host":"node-1"},"#,
        r#""firstTimestamp":"2024-01-02T03:04:05Z","lastTimestamp":"2024-01-02T03:09:05Z","#,
        r#""count":7,"type":"Warning","eventTime":"2024-01-02T03:04:05.123456Z","#,
        r#""series":{"count":2,"lastObservedTime":"2024-01-02T03:09:05.000001Z"},"#,
        r#""action":"Restart","related":{"kind":"Node","name":"node-1"},"#,
        r#""reportingComponent":"kubelet","reportingInstance":"node-1"}"#
    );

    #[test]
    fn server_event_round_trips_byte_for_byte() {
        let event: Event = serde_json::from_str(SERVER_EVENT).unwrap();
        assert_eq!(event.metadata.name, "web-0.17a2b3c4d5e6f708");
        assert_eq!(event.involved_object.field_path, "spec.containers{web}");
        assert_eq!(event.count, 7);
        assert_eq!(event.event_type(), Some(EventType::Warning));
        assert_eq!(event.source.host, "node-1");
        assert_eq!(event.series.as_ref().unwrap().count, 2);
        assert_eq!(event.related.as_ref().unwrap().kind, "Node");
        assert_eq!(event.reporting_controller, "kubelet");
        assert_eq!(event.key(), "prod/web-0.17a2b3c4d5e6f708");
        assert_eq!(serde_json::to_string(&event).unwrap(), SERVER_EVENT);
    }

    #[test]
    fn empty_event_writes_what_go_always_writes() {
        assert_eq!(
            serde_json::to_string(&Event::default()).unwrap(),
            concat!(
                r#"{"apiVersion":"v1","kind":"Event","metadata":{},"involvedObject":{},"#,
                r#""source":{},"reportingComponent":"","reportingInstance":""}"#
            )
        );
    }

    #[test]
    fn nulls_and_missing_fields_read_as_empty() {
        let event: Event = serde_json::from_str(
            r#"{"metadata":null,"involvedObject":{"kind":null},"reason":null,"count":null,
                "firstTimestamp":null,"eventTime":null,"series":null,"related":null,
                "reportingComponent":null,"type":null,"source":null}"#,
        )
        .unwrap();
        assert_eq!(event, Event::default());
        assert_eq!(
            serde_json::from_str::<Event>("{}").unwrap(),
            Event::default()
        );
        let err = serde_json::from_str::<Event>(r#"{"count":"many"}"#).unwrap_err();
        assert!(err.to_string().contains("invalid type"), "{err}");
        let err = serde_json::from_str::<Event>(r#"{"lastTimestamp":"yesterday"}"#).unwrap_err();
        assert!(err.to_string().contains("invalid RFC 3339"), "{err}");
    }

    #[test]
    fn event_is_a_namespaced_core_v1_resource() {
        assert_eq!(<Event as Resource>::api_version(), "v1");
        assert_eq!(Event::gvr().to_string(), "v1, Resource=events");
        const { assert!(Event::NAMESPACED) };
    }

    #[test]
    fn references_from_objects() {
        let mut dynamic = DynamicObject::new("web").within("prod");
        dynamic.types = Some(TypeMeta::new("apps/v1", "Deployment"));
        dynamic.metadata.uid = "u1".into();
        dynamic.metadata.resource_version = "5".into();
        let r = ObjectReference::from_dynamic(&dynamic).with_field_path("spec.template");
        assert_eq!(
            r,
            ObjectReference {
                kind: "Deployment".into(),
                namespace: "prod".into(),
                name: "web".into(),
                uid: "u1".into(),
                api_version: "apps/v1".into(),
                resource_version: "5".into(),
                field_path: "spec.template".into(),
            }
        );
        let event = Event {
            metadata: ObjectMeta::namespaced("prod", "e1"),
            ..Event::default()
        };
        let r = ObjectReference::from_object(&event);
        assert_eq!((r.kind.as_str(), r.api_version.as_str()), ("Event", "v1"));
        assert_eq!((r.namespace.as_str(), r.name.as_str()), ("prod", "e1"));
    }

    #[test]
    fn event_types() {
        assert_eq!(EventType::Normal.to_string(), "Normal");
        assert_eq!("Warning".parse::<EventType>(), Ok(EventType::Warning));
        assert_eq!(
            "Error".parse::<EventType>().unwrap_err().to_string(),
            "unsupported event type \"Error\": expected \"Normal\" or \"Warning\""
        );
    }
}
