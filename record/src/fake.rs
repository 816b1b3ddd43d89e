//! A recorder for tests: [`FakeRecorder`] (client-go's `record.FakeRecorder`).
//!
//! It keeps each event as the string `"<type> <reason> <message>"`, optionally followed by
//! ` involvedObject{kind=<kind>,apiVersion=<apiVersion>}` and, when there are annotations,
//! ` map[<key>:<value> ...]` (Go's `fmt.Sprint` of a map, keys sorted), exactly the strings
//! client-go's fake sends on its channel, so assertions port unchanged.
//!
//! Where it differs from client-go: the strings are kept in a shared list read with
//! [`FakeRecorder::events`] / [`FakeRecorder::take_events`] instead of sent on a channel of
//! fixed capacity, so recording never blocks (Go's fake blocks when its buffer is full) and a
//! test reads everything recorded so far without a timeout. A recorder made with
//! [`FakeRecorder::discarding`] keeps nothing (Go's nil channel).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use parking_lot::Mutex;

use crate::event::{EventType, ObjectReference};
use crate::recorder::Recorder;

/// Records events as strings, for tests (client-go's `FakeRecorder`). Clones share the list.
///
/// ```
/// use clientgo_record::{EventType, FakeRecorder, ObjectReference, Recorder};
///
/// let recorder = FakeRecorder::new();
/// let foo = ObjectReference { kind: "Foo".into(), name: "example".into(), ..Default::default() };
/// recorder.eventf(&foo, EventType::Warning, "ErrResourceExists",
///     format_args!("Resource {:?} already exists and is not managed by Foo", "example"));
/// assert_eq!(
///     recorder.take_events(),
///     ["Warning ErrResourceExists Resource \"example\" already exists and is not managed by Foo"]
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct FakeRecorder {
    events: Option<Arc<Mutex<Vec<String>>>>,
    include_object: bool,
}

impl FakeRecorder {
    /// A recorder that keeps every event.
    pub fn new() -> FakeRecorder {
        FakeRecorder {
            events: Some(Arc::default()),
            include_object: false,
        }
    }

    /// A recorder that keeps nothing.
    pub fn discarding() -> FakeRecorder {
        FakeRecorder::default()
    }

    /// Also writes the object's kind and apiVersion (client-go's `IncludeObject`).
    pub fn including_object(mut self) -> FakeRecorder {
        self.include_object = true;
        self
    }

    /// The events recorded so far and not yet taken, oldest first.
    pub fn events(&self) -> Vec<String> {
        self.events
            .as_ref()
            .map_or_else(Vec::new, |events| events.lock().clone())
    }

    /// Takes the events recorded so far, oldest first, leaving none.
    pub fn take_events(&self) -> Vec<String> {
        self.events
            .as_ref()
            .map_or_else(Vec::new, |events| std::mem::take(&mut *events.lock()))
    }
}

impl Recorder for FakeRecorder {
    fn annotated_event(
        &self,
        object: &ObjectReference,
        annotations: BTreeMap<String, String>,
        event_type: EventType,
        reason: &str,
        message: &str,
    ) {
        let Some(events) = &self.events else {
            return;
        };
        let mut line = format!("{event_type} {reason} {message}");
        if self.include_object {
            let _ = write!(
                line,
                " involvedObject{{kind={},apiVersion={}}}",
                object.kind, object.api_version
            );
        }
        if !annotations.is_empty() {
            line.push_str(" map[");
            for (i, (key, value)) in annotations.iter().enumerate() {
                if i > 0 {
                    line.push(' ');
                }
                let _ = write!(line, "{key}:{value}");
            }
            line.push(']');
        }
        events.lock().push(line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod() -> ObjectReference {
        ObjectReference {
            kind: "Pod".into(),
            api_version: "v1".into(),
            name: "web".into(),
            ..ObjectReference::default()
        }
    }

    #[test]
    fn formats_like_client_go() {
        let recorder = FakeRecorder::new().including_object();
        let shared = recorder.clone();
        recorder.event(&pod(), EventType::Normal, "Started", "Started container");
        let annotations = BTreeMap::from([
            ("b".to_owned(), "2".to_owned()),
            ("a".to_owned(), "1".to_owned()),
        ]);
        recorder.annotated_event(&pod(), annotations, EventType::Warning, "Failed", "oops");
        assert_eq!(
            shared.events(),
            [
                "Normal Started Started container involvedObject{kind=Pod,apiVersion=v1}",
                "Warning Failed oops involvedObject{kind=Pod,apiVersion=v1} map[a:1 b:2]",
            ]
        );
        assert_eq!(shared.take_events().len(), 2);
        assert!(recorder.events().is_empty());
    }

    #[test]
    fn formatted_messages_and_discarding() {
        let recorder = FakeRecorder::new();
        recorder.eventf(
            &pod(),
            EventType::Normal,
            "Synced",
            format_args!("{} of {}", 1, 2),
        );
        recorder.eventf(&pod(), EventType::Normal, "Synced", format_args!("static"));
        assert_eq!(
            recorder.events(),
            ["Normal Synced 1 of 2", "Normal Synced static"]
        );

        let discarding = FakeRecorder::discarding();
        discarding.event(&pod(), EventType::Normal, "Synced", "x");
        assert!(discarding.events().is_empty() && discarding.take_events().is_empty());
    }

    #[test]
    fn usable_as_a_trait_object() {
        let recorders: Vec<Box<dyn Recorder>> = vec![Box::new(FakeRecorder::new())];
        for r in &recorders {
            r.event(&pod(), EventType::Normal, "A", "b");
        }
    }
}
