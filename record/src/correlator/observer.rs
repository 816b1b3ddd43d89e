//! The second stage of correlation: deduplication (client-go's `eventLogger` in
//! `tools/record/events_cache.go`).
//!
//! For each key it remembers the last occurrence written or about to be written: its name,
//! resourceVersion, `firstTimestamp` and count. An event arriving under a known key becomes
//! the next occurrence of that one: it takes the remembered name, resourceVersion and
//! `firstTimestamp`, its count is the remembered count plus one, and it comes with the patch
//! that turns the stored event into it.
//!
//! client-go computes that patch with `strategicpatch.CreateTwoWayMergePatch` between the
//! event and a copy of it whose `count` is 0, `lastTimestamp` the Unix epoch and `message`
//! empty. Only those three fields differ between the two, and none is a list, so the strategic
//! merge patch is a plain JSON object holding the new values of whichever of the three differ
//! from those placeholders; [`count_patch`] builds exactly that object directly, which cannot
//! fail (Go's can, in theory, and its error is then only logged).

use serde_json::{Map, Value};

use clientgo_apimachinery::Time;

use super::event_key;
use super::lru::LruCache;
use crate::event::Event;

/// The merge patch that updates a stored occurrence of `event` to it: `count`,
/// `lastTimestamp` and `message`, each only when it differs from 0, the Unix epoch and `""`
/// respectively (what client-go's two-way merge patch against those placeholders yields). An
/// absent `lastTimestamp` becomes `null`, which deletes it.
pub(crate) fn count_patch(event: &Event) -> Value {
    let mut patch = Map::new();
    if event.count != 0 {
        patch.insert("count".to_owned(), Value::from(event.count));
    }
    match event.last_timestamp {
        // Written with seconds precision, so anything within the epoch's second equals it.
        Some(t) if t.truncate_to_seconds() == Time::UNIX_EPOCH => {}
        Some(t) => {
            patch.insert("lastTimestamp".to_owned(), Value::String(t.to_rfc3339()));
        }
        None => {
            patch.insert("lastTimestamp".to_owned(), Value::Null);
        }
    }
    if !event.message.is_empty() {
        patch.insert("message".to_owned(), Value::String(event.message.clone()));
    }
    Value::Object(patch)
}

/// What is remembered about the last occurrence of an event (client-go's `eventLog`).
#[derive(Debug, Clone)]
struct EventLog {
    count: i32,
    first_timestamp: Option<Time>,
    name: String,
    resource_version: String,
}

impl EventLog {
    fn of(event: &Event) -> EventLog {
        EventLog {
            count: event.count,
            first_timestamp: event.first_timestamp,
            name: event.metadata.name.clone(),
            resource_version: event.metadata.resource_version.clone(),
        }
    }
}

/// Counts occurrences of events and prepares the patches that record them.
pub(crate) struct EventLogger {
    cache: LruCache<EventLog>,
}

impl EventLogger {
    pub(crate) fn new(lru_cache_size: usize) -> EventLogger {
        EventLogger {
            cache: LruCache::new(lru_cache_size),
        }
    }

    /// Records an occurrence of `event` under `key`; when the key was seen before, returns the
    /// event as the next occurrence of the earlier one, with the patch to write it.
    pub(crate) fn event_observe(&mut self, mut event: Event, key: &str) -> (Event, Option<Value>) {
        let mut patch = None;
        if let Some(last) = self.cache.get_mut(key).filter(|last| last.count > 0) {
            event.metadata.name.clone_from(&last.name);
            event
                .metadata
                .resource_version
                .clone_from(&last.resource_version);
            event.first_timestamp = last.first_timestamp;
            event.count = last.count.saturating_add(1);
            patch = Some(count_patch(&event));
        }
        self.cache.put(key.to_owned(), EventLog::of(&event));
        (event, patch)
    }

    /// Stores the server's copy of a written event under its full key.
    pub(crate) fn update_state(&mut self, event: &Event) {
        self.cache.put(event_key(event), EventLog::of(event));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(secs: i64) -> Option<Time> {
        Some(Time::from_unix_seconds(secs).unwrap())
    }

    #[test]
    fn patch_holds_count_last_timestamp_and_message() {
        let event = Event {
            count: 3,
            last_timestamp: at(1_704_164_645),
            first_timestamp: at(1_704_164_000),
            message: "Back-off".into(),
            reason: "BackOff".into(),
            ..Event::default()
        };
        assert_eq!(
            count_patch(&event),
            json!({"count": 3, "lastTimestamp": "2024-01-02T03:04:05Z", "message": "Back-off"})
        );
    }

    #[test]
    fn patch_leaves_out_what_equals_the_placeholders() {
        let event = Event {
            last_timestamp: Some(Time::from_unix(0, 999).unwrap()),
            ..Event::default()
        };
        assert_eq!(count_patch(&event), json!({}));
        assert_eq!(
            count_patch(&Event::default()),
            json!({"lastTimestamp": null}),
            "an absent timestamp deletes the stored one"
        );
    }

    #[test]
    fn second_occurrence_takes_the_first_ones_identity() {
        let mut logger = EventLogger::new(10);
        let first = Event {
            metadata: clientgo_apimachinery::ObjectMeta::namespaced("ns", "pod.1"),
            count: 1,
            first_timestamp: at(100),
            last_timestamp: at(100),
            message: "m".into(),
            ..Event::default()
        };
        let (out, patch) = logger.event_observe(first.clone(), "k");
        assert_eq!((out, patch), (first.clone(), None));

        // The server assigned a resourceVersion.
        let mut stored = first.clone();
        stored.metadata.resource_version = "7".into();
        logger.update_state(&stored);
        let key = event_key(&stored);

        let second = Event {
            metadata: clientgo_apimachinery::ObjectMeta::namespaced("ns", "pod.2"),
            first_timestamp: at(160),
            last_timestamp: at(160),
            ..first
        };
        let (out, patch) = logger.event_observe(second, &key);
        assert_eq!(out.metadata.name, "pod.1");
        assert_eq!(out.metadata.resource_version, "7");
        assert_eq!(out.first_timestamp, at(100));
        assert_eq!(out.count, 2);
        assert_eq!(
            patch,
            Some(json!({"count": 2, "lastTimestamp": "1970-01-01T00:02:40Z", "message": "m"}))
        );
    }
}
