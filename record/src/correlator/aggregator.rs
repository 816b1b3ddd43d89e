//! The first stage of correlation: combining similar events ([`EventAggregator`], client-go's
//! `EventAggregator` in `tools/record/events_cache.go`).
//!
//! Events whose aggregate key matches (by default: same source, object, type, reason and
//! reporting controller) form a group; the group remembers the distinct local keys (by
//! default: messages) it has seen and when it last saw one. A group not seen for longer than
//! the window starts over. While the group holds fewer distinct messages than the threshold,
//! events pass unchanged, keyed by their full [`event_key`](super::event_key). From the
//! threshold on, each event is replaced by a new combined event (count 1, timestamps now,
//! message from the message function) keyed by the aggregate key, so that the observer counts
//! later ones into it; and one remembered message is forgotten, so the group stays at the
//! threshold minus one and the next event with a message the group still holds passes
//! unchanged, exactly as in client-go.
//!
//! Differences from client-go: the window is measured on tokio's monotonic clock; the
//! forgotten message is the smallest one instead of an arbitrary one; the combined event's
//! name goes through [`generate_event_name`] (a UUID when `<object>.<hex nanos>` is not a
//! valid name), as the recorder's names do.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::ObjectMeta;
use tokio::time::Instant;

use super::lru::LruCache;
use super::{EventAggregatorKeyFunc, EventAggregatorMessageFunc, event_key};
use crate::clock::Clock;
use crate::event::Event;
use crate::recorder::generate_event_name;

/// Identifies similar events and combines them into one (client-go's `EventAggregator`).
pub struct EventAggregator {
    cache: LruCache<AggregateRecord>,
    key_func: EventAggregatorKeyFunc,
    message_func: EventAggregatorMessageFunc,
    max_events: usize,
    max_interval: Duration,
    clock: Arc<dyn Clock>,
}

/// What a group of similar events remembers.
struct AggregateRecord {
    /// The distinct local keys (messages) seen in the current window.
    local_keys: BTreeSet<String>,
    /// When the group last saw an event.
    last_seen: Instant,
}

impl std::fmt::Debug for EventAggregator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventAggregator")
            .field("max_events", &self.max_events)
            .field("max_interval", &self.max_interval)
            .finish_non_exhaustive()
    }
}

impl EventAggregator {
    /// An aggregator keeping `lru_cache_size` groups, combining after `max_events` distinct
    /// local keys seen at most `max_interval` apart (client-go's `NewEventAggregator`).
    pub fn new(
        lru_cache_size: usize,
        key_func: EventAggregatorKeyFunc,
        message_func: EventAggregatorMessageFunc,
        max_events: usize,
        max_interval: Duration,
        clock: Arc<dyn Clock>,
    ) -> EventAggregator {
        EventAggregator {
            cache: LruCache::new(lru_cache_size),
            key_func,
            message_func,
            max_events,
            max_interval,
            clock,
        }
    }

    /// Returns the event to go on with (the given one, or a combined one) and the key the
    /// observer should count it under (the full event key, or the aggregate key).
    pub fn event_aggregate(&mut self, new_event: Event) -> (Event, String) {
        let now = Instant::now();
        let (aggregate_key, local_key) = (self.key_func)(&new_event);

        let max_interval = self.max_interval;
        let record = self
            .cache
            .get_or_insert_with(&aggregate_key, || AggregateRecord {
                local_keys: BTreeSet::new(),
                last_seen: now,
            });
        if now.saturating_duration_since(record.last_seen) > max_interval {
            // The previous similar event is too old: start a new group.
            record.local_keys.clear();
        }
        record.local_keys.insert(local_key);
        record.last_seen = now;

        if record.local_keys.len() < self.max_events {
            let key = event_key(&new_event);
            return (new_event, key);
        }

        // Do not let the group grow past the threshold.
        record.local_keys.pop_first();

        let now = self.clock.now();
        let combined = Event {
            metadata: ObjectMeta {
                name: generate_event_name(&new_event.involved_object.name, now),
                namespace: new_event.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            count: 1,
            first_timestamp: Some(now),
            last_timestamp: Some(now),
            message: (self.message_func)(&new_event),
            involved_object: new_event.involved_object,
            type_: new_event.type_,
            reason: new_event.reason,
            source: new_event.source,
            ..Event::default()
        };
        (combined, aggregate_key)
    }
}
