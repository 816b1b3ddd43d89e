//! Recording events: the [`Recorder`] trait, the [`EventRecorder`] a broadcaster hands out,
//! and event naming ([`generate_event_name`]).
//!
//! Mirrors client-go's `EventRecorder` interface and `recorderImpl` (`tools/record/event.go`)
//! and `util.GenerateEventName`. Recording an event builds a core/v1 `Event`:
//!
//! * name `<object name>.<unix nanos in hex>`, or a random UUID when that is not a valid
//!   DNS subdomain (object names may contain characters event names may not);
//! * namespace: the object's, or `default` for cluster-scoped objects;
//! * `firstTimestamp` = `lastTimestamp` = now, `count` 1, the type, reason and message;
//! * `source` the recorder's, `reportingComponent` its component and `reportingInstance` its
//!   host.
//!
//! and hands it to every watcher of the broadcaster without ever waiting: a watcher whose
//! queue is full loses the event (counted, and logged).
//!
//! Where it differs from client-go: the recorder takes an [`ObjectReference`] rather than any
//! object plus a scheme to look its kind up in (make one with
//! [`ObjectReference::from_object`]), so there is no "cannot build a reference" failure; the
//! type is an [`EventType`], so there is no "unsupported event type" failure either; and
//! `Eventf`'s format string and arguments are Rust's [`format_args!`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use clientgo_apimachinery::labels::is_dns1123_subdomain;
use clientgo_apimachinery::{ObjectMeta, Time};

use crate::broadcaster::{EventBroadcaster, Shared};
use crate::clock::Clock;
use crate::event::{Event, EventSource, EventType, ObjectReference};

/// The namespace of events about cluster-scoped objects.
pub const NAMESPACE_DEFAULT: &str = "default";

/// Something that records events about objects: client-go's `EventRecorder` interface,
/// implemented by [`EventRecorder`] and, for tests, [`FakeRecorder`](crate::FakeRecorder).
///
/// `reason` should be short, unique and UpperCamelCase (`ErrResourceExists`): tools switch on
/// it. `message` is for people.
pub trait Recorder: Send + Sync {
    /// Records an event with annotations on the event object (client-go's `AnnotatedEventf`).
    fn annotated_event(
        &self,
        object: &ObjectReference,
        annotations: BTreeMap<String, String>,
        event_type: EventType,
        reason: &str,
        message: &str,
    );

    /// Records an event about `object` (client-go's `Event`).
    fn event(&self, object: &ObjectReference, event_type: EventType, reason: &str, message: &str) {
        self.annotated_event(object, BTreeMap::new(), event_type, reason, message);
    }

    /// Records an event whose message is formatted (client-go's `Eventf`):
    /// `recorder.eventf(&r, EventType::Warning, "ErrResourceExists", format_args!("Resource {name:?} already exists"))`.
    fn eventf(
        &self,
        object: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        match message.as_str() {
            Some(message) => self.event(object, event_type, reason, message),
            None => self.event(object, event_type, reason, &message.to_string()),
        }
    }
}

/// Records events on behalf of one [`EventSource`] into a broadcaster's queues. Cheap to
/// clone; clones share the broadcaster. Made by
/// [`EventBroadcaster::new_recorder`](crate::EventBroadcaster::new_recorder).
///
/// Recording never waits: events go to each watcher's bounded queue, or are dropped (and
/// counted) when it is full. The methods are also those of the [`Recorder`] trait, so code can
/// take either this or a [`FakeRecorder`](crate::FakeRecorder).
#[derive(Clone)]
pub struct EventRecorder {
    shared: Arc<Shared>,
    source: EventSource,
    clock: Arc<dyn Clock>,
}

impl fmt::Debug for EventRecorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventRecorder")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl EventBroadcaster {
    /// A recorder whose events come from `source` (client-go's `NewRecorder`).
    pub fn new_recorder(&self, source: EventSource) -> EventRecorder {
        EventRecorder::new(
            Arc::clone(&self.shared),
            source,
            Arc::clone(&self.shared.options.clock),
        )
    }
}

impl EventRecorder {
    pub(crate) fn new(shared: Arc<Shared>, source: EventSource, clock: Arc<dyn Clock>) -> Self {
        EventRecorder {
            shared,
            source,
            clock,
        }
    }

    /// The source events are recorded for.
    pub fn source(&self) -> &EventSource {
        &self.source
    }

    /// Records an event about `object` (client-go's `Event`).
    pub fn event(
        &self,
        object: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        Recorder::event(self, object, event_type, reason, message);
    }

    /// Records an event with a formatted message (client-go's `Eventf`).
    pub fn eventf(
        &self,
        object: &ObjectReference,
        event_type: EventType,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        Recorder::eventf(self, object, event_type, reason, message);
    }

    /// Records an event with annotations on the event object (client-go's `AnnotatedEventf`).
    pub fn annotated_event(
        &self,
        object: &ObjectReference,
        annotations: BTreeMap<String, String>,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        Recorder::annotated_event(self, object, annotations, event_type, reason, message);
    }

    /// The event that recording would queue (client-go's `makeEvent` plus the source).
    fn make_event(
        &self,
        object: &ObjectReference,
        annotations: BTreeMap<String, String>,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) -> Event {
        let now = self.clock.now();
        let namespace = if object.namespace.is_empty() {
            NAMESPACE_DEFAULT
        } else {
            &object.namespace
        };
        Event {
            metadata: ObjectMeta {
                name: generate_event_name(&object.name, now),
                namespace: namespace.to_owned(),
                annotations,
                ..ObjectMeta::default()
            },
            involved_object: object.clone(),
            reason: reason.to_owned(),
            message: message.to_owned(),
            first_timestamp: Some(now),
            last_timestamp: Some(now),
            count: 1,
            type_: event_type.as_str().to_owned(),
            source: self.source.clone(),
            reporting_controller: self.source.component.clone(),
            reporting_instance: self.source.host.clone(),
            ..Event::default()
        }
    }
}

impl Recorder for EventRecorder {
    fn annotated_event(
        &self,
        object: &ObjectReference,
        annotations: BTreeMap<String, String>,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        let event = self.make_event(object, annotations, event_type, reason, message);
        self.shared.action_or_drop(event);
    }
}

/// A valid event name for an event about `ref_name` at `time`: `<ref_name>.<unix nanos in
/// hex>`, or a random UUID when that is not a valid DNS subdomain (client-go's
/// `util.GenerateEventName`).
pub fn generate_event_name(ref_name: &str, time: Time) -> String {
    let nanos = i128::from(time.unix_seconds()) * 1_000_000_000 + i128::from(time.subsec_nanos());
    let name = if nanos < 0 {
        format!("{ref_name}.-{:x}", nanos.unsigned_abs())
    } else {
        format!("{ref_name}.{nanos:x}")
    };
    if is_dns1123_subdomain(&name) {
        name
    } else {
        uuid::Uuid::new_v4().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_names_are_ref_name_and_hex_nanos() {
        let t = Time::from_unix(1_700_000_000, 123).unwrap();
        assert_eq!(generate_event_name("web-0", t), "web-0.17979cfe362a007b");
        assert_eq!(
            generate_event_name("web", Time::UNIX_EPOCH),
            "web.0",
            "zero is a valid last label"
        );
    }

    #[test]
    fn invalid_names_become_uuids() {
        let t = Time::from_unix(1_700_000_000, 0).unwrap();
        for bad in ["Web", "a_b", "", "-x", "a..b", &"a".repeat(250)] {
            let name = generate_event_name(bad, t);
            assert!(uuid::Uuid::parse_str(&name).is_ok(), "{bad:?} -> {name}");
            assert!(is_dns1123_subdomain(&name));
        }
        let before_epoch = Time::from_unix(-1, 0).unwrap();
        assert!(uuid::Uuid::parse_str(&generate_event_name("x", before_epoch)).is_ok());
    }

    #[test]
    fn dns_subdomains() {
        for good in ["a", "a.b", "a-b.c0", "0", &"a".repeat(253)] {
            assert!(is_dns1123_subdomain(good), "{good}");
        }
        for bad in [
            "",
            "A",
            "a.",
            ".a",
            "a-",
            "a.-b",
            "a b",
            "é",
            &"a".repeat(254),
        ] {
            assert!(!is_dns1123_subdomain(bad), "{bad}");
        }
    }
}
