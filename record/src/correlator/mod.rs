//! Event correlation: what keeps a controller that reports the same thing over and over from
//! flooding the API server. A port of client-go's `tools/record/events_cache.go`
//! (`EventCorrelator`).
//!
//! Every event bound for a sink passes three stages, in this order:
//!
//! 1. **Aggregation** ([`EventAggregator`]): events that differ only in their message (same
//!    source, object, type, reason and reporting controller) are counted per message. Once
//!    [`DEFAULT_AGGREGATE_MAX_EVENTS`] (10) distinct messages arrived, none more than
//!    [`DEFAULT_AGGREGATE_INTERVAL`] (600 s) after the previous one, the event is replaced by
//!    one whose message is `"(combined from similar events): <message>"`, keyed by the group,
//!    so that later similar events count up that one combined event.
//! 2. **Observation** (deduplication): an event seen before under the same key takes the
//!    name, resourceVersion and `firstTimestamp` of the first one, its count goes up by one,
//!    and a merge patch of `count`, `lastTimestamp` and `message` is prepared: the sink will
//!    PATCH the existing event instead of creating a new one.
//! 3. **Spam filtering** ([`EventSourceObjectSpamFilter`]): per source, object and type, a
//!    token bucket of [`DEFAULT_SPAM_BURST`] (25) tokens, refilled at one per 300 s. An event
//!    finding the bucket empty is skipped (dropped).
//!
//! All three keep their records in LRU caches of [`MAX_LRU_CACHE_ENTRIES`] (4096) entries.
//! Like client-go's, the stages run in this order even for events that end up skipped, so a
//! skipped duplicate still counts towards the next written count; and after a successful
//! write [`EventCorrelator::update_state`] stores the server's copy under the event's full key.
//!
//! Where it differs from client-go, and why:
//! * Time windows (aggregation, token refill) are measured on tokio's monotonic clock, so
//!   tests pause and advance it; wall-clock times for the combined event come from a
//!   [`Clock`].
//! * The keys join their parts with a separator (`\u{1f}`); Go concatenates them bare, so two
//!   different events could share a key ("ab" + "c" and "a" + "bc").
//! * When a group of similar events overflows, Go forgets an arbitrary message (map order);
//!   this forgets the smallest one, which is reproducible.
//! * The spam filter's refill rate is an `f64` (Go's is a `float32`).
//! * Methods take `&mut self`: a correlator belongs to one sink's task and needs no locks.

mod aggregator;
mod lru;
mod observer;
mod spam;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

pub use aggregator::EventAggregator;
pub use spam::EventSourceObjectSpamFilter;

use crate::clock::{Clock, SystemClock};
use crate::event::Event;
use observer::EventLogger;

pub(crate) use observer::count_patch;

/// Entries in each of the correlator's LRU caches.
pub const MAX_LRU_CACHE_ENTRIES: usize = 4096;
/// Distinct messages within the interval after which similar events are combined.
pub const DEFAULT_AGGREGATE_MAX_EVENTS: usize = 10;
/// How long after the previous similar event a new one still joins its group.
pub const DEFAULT_AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// Events a source may send about one object (and type) in a burst.
pub const DEFAULT_SPAM_BURST: u32 = 25;
/// The spam filter's refill rate: one event every five minutes.
pub const DEFAULT_SPAM_QPS: f64 = 1.0 / 300.0;
/// The prefix of a combined event's message.
pub const AGGREGATE_MESSAGE_PREFIX: &str = "(combined from similar events): ";

/// Groups events for aggregation: returns `(aggregate key, local key)`, where events with the
/// same aggregate key are similar and the local key tells them apart.
pub type EventAggregatorKeyFunc = Arc<dyn Fn(&Event) -> (String, String) + Send + Sync>;
/// Produces the message of a combined event from the event that triggered it.
pub type EventAggregatorMessageFunc = Arc<dyn Fn(&Event) -> String + Send + Sync>;
/// Produces the key the spam filter keeps a token bucket for.
pub type EventSpamKeyFunc = Arc<dyn Fn(&Event) -> String + Send + Sync>;

const KEY_SEPARATOR: char = '\u{1f}';

fn join_key(parts: &[&str]) -> String {
    let mut key = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            key.push(KEY_SEPARATOR);
        }
        key.push_str(part);
    }
    key
}

/// The full identity of an event: source, object (including the field path), type, reason
/// and message (client-go's `getEventKey`). Identical events share it and are counted as one.
pub fn event_key(event: &Event) -> String {
    let o = &event.involved_object;
    join_key(&[
        &event.source.component,
        &event.source.host,
        &o.kind,
        &o.namespace,
        &o.name,
        &o.field_path,
        &o.uid,
        &o.api_version,
        &event.type_,
        &event.reason,
        &event.message,
    ])
}

/// The spam filter's default key: source, object (kind, namespace, name, uid, apiVersion;
/// not the field path) and type (client-go's `getSpamKey`).
pub fn spam_key(event: &Event) -> String {
    let o = &event.involved_object;
    join_key(&[
        &event.source.component,
        &event.source.host,
        &o.kind,
        &o.namespace,
        &o.name,
        &o.uid,
        &o.api_version,
        &event.type_,
    ])
}

/// Groups events that differ only in their message: the aggregate key is source, object, type,
/// reason, reporting controller and instance; the local key is the message (client-go's
/// `EventAggregatorByReasonFunc`).
pub fn event_aggregator_by_reason_func(event: &Event) -> (String, String) {
    let o = &event.involved_object;
    let aggregate_key = join_key(&[
        &event.source.component,
        &event.source.host,
        &o.kind,
        &o.namespace,
        &o.name,
        &o.uid,
        &o.api_version,
        &event.type_,
        &event.reason,
        &event.reporting_controller,
        &event.reporting_instance,
    ]);
    (aggregate_key, event.message.clone())
}

/// `"(combined from similar events): <message>"` (client-go's
/// `EventAggregatorByReasonMessageFunc`).
pub fn event_aggregator_by_reason_message_func(event: &Event) -> String {
    let mut message = String::with_capacity(AGGREGATE_MESSAGE_PREFIX.len() + event.message.len());
    message.push_str(AGGREGATE_MESSAGE_PREFIX);
    message.push_str(&event.message);
    message
}

/// How an [`EventCorrelator`] behaves (client-go's `CorrelatorOptions`).
///
/// [`Default`] gives client-go's defaults. As in client-go, a zero size, burst, rate, count
/// or interval also means "the default".
#[derive(Clone)]
pub struct CorrelatorOptions {
    /// Entries in each LRU cache (default [`MAX_LRU_CACHE_ENTRIES`]).
    pub lru_cache_size: usize,
    /// The spam filter's burst per key (default [`DEFAULT_SPAM_BURST`]).
    pub burst_size: u32,
    /// The spam filter's refill rate in events per second (default [`DEFAULT_SPAM_QPS`]).
    pub qps: f64,
    /// How events are grouped for aggregation (default [`event_aggregator_by_reason_func`]).
    pub key_func: EventAggregatorKeyFunc,
    /// The message of a combined event (default [`event_aggregator_by_reason_message_func`]).
    pub message_func: EventAggregatorMessageFunc,
    /// Distinct messages before aggregation (default [`DEFAULT_AGGREGATE_MAX_EVENTS`]).
    pub max_events: usize,
    /// The aggregation window (default [`DEFAULT_AGGREGATE_INTERVAL`]; Go's
    /// `MaxIntervalInSeconds`).
    pub max_interval: Duration,
    /// The spam filter's key (default [`spam_key`]).
    pub spam_key_func: EventSpamKeyFunc,
    /// Wall-clock time for combined events (default [`SystemClock`]).
    pub clock: Arc<dyn Clock>,
}

impl Default for CorrelatorOptions {
    fn default() -> CorrelatorOptions {
        CorrelatorOptions {
            lru_cache_size: MAX_LRU_CACHE_ENTRIES,
            burst_size: DEFAULT_SPAM_BURST,
            qps: DEFAULT_SPAM_QPS,
            key_func: Arc::new(event_aggregator_by_reason_func),
            message_func: Arc::new(event_aggregator_by_reason_message_func),
            max_events: DEFAULT_AGGREGATE_MAX_EVENTS,
            max_interval: DEFAULT_AGGREGATE_INTERVAL,
            spam_key_func: Arc::new(spam_key),
            clock: Arc::new(SystemClock),
        }
    }
}

impl fmt::Debug for CorrelatorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CorrelatorOptions")
            .field("lru_cache_size", &self.lru_cache_size)
            .field("burst_size", &self.burst_size)
            .field("qps", &self.qps)
            .field("max_events", &self.max_events)
            .field("max_interval", &self.max_interval)
            .finish_non_exhaustive()
    }
}

impl CorrelatorOptions {
    /// The options with zeros replaced by defaults (client-go's `populateDefaults`).
    fn with_defaults(mut self) -> CorrelatorOptions {
        if self.lru_cache_size == 0 {
            self.lru_cache_size = MAX_LRU_CACHE_ENTRIES;
        }
        if self.burst_size == 0 {
            self.burst_size = DEFAULT_SPAM_BURST;
        }
        if self.qps == 0.0 {
            self.qps = DEFAULT_SPAM_QPS;
        }
        if self.max_events == 0 {
            self.max_events = DEFAULT_AGGREGATE_MAX_EVENTS;
        }
        if self.max_interval.is_zero() {
            self.max_interval = DEFAULT_AGGREGATE_INTERVAL;
        }
        self
    }
}

/// What [`EventCorrelator::event_correlate`] decided (client-go's `EventCorrelateResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct EventCorrelateResult {
    /// The event to write: possibly combined, possibly renamed and counted up. Also set when
    /// `skip` is, for logging.
    pub event: Event,
    /// For an event seen before: the strategic merge patch of `count`, `lastTimestamp` and
    /// `message` to send instead of creating it again.
    pub patch: Option<serde_json::Value>,
    /// The spam filter refused it: do not write it.
    pub skip: bool,
}

/// Filters, aggregates, counts and deduplicates events before they are written (client-go's
/// `EventCorrelator`). See the module documentation for the stages.
pub struct EventCorrelator {
    aggregator: EventAggregator,
    logger: EventLogger,
    spam_filter: EventSourceObjectSpamFilter,
}

impl fmt::Debug for EventCorrelator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventCorrelator").finish_non_exhaustive()
    }
}

impl Default for EventCorrelator {
    fn default() -> EventCorrelator {
        EventCorrelator::new()
    }
}

impl EventCorrelator {
    /// A correlator with client-go's defaults (client-go's `NewEventCorrelator`).
    pub fn new() -> EventCorrelator {
        EventCorrelator::with_options(CorrelatorOptions::default())
    }

    /// A correlator with the given options, zeros meaning defaults (client-go's
    /// `NewEventCorrelatorWithOptions`).
    pub fn with_options(options: CorrelatorOptions) -> EventCorrelator {
        let o = options.with_defaults();
        EventCorrelator {
            aggregator: EventAggregator::new(
                o.lru_cache_size,
                o.key_func,
                o.message_func,
                o.max_events,
                o.max_interval,
                o.clock,
            ),
            logger: EventLogger::new(o.lru_cache_size),
            spam_filter: EventSourceObjectSpamFilter::new(
                o.lru_cache_size,
                o.burst_size,
                o.qps,
                o.spam_key_func,
            ),
        }
    }

    /// Runs an event through aggregation, observation and the spam filter.
    pub fn event_correlate(&mut self, new_event: Event) -> EventCorrelateResult {
        let (aggregate_event, cache_key) = self.aggregator.event_aggregate(new_event);
        let (event, patch) = self.logger.event_observe(aggregate_event, &cache_key);
        let skip = self.spam_filter.filter(&event);
        EventCorrelateResult { event, patch, skip }
    }

    /// Records what the server returned for a written event, so the next occurrence patches
    /// the right name and resourceVersion.
    pub fn update_state(&mut self, event: &Event) {
        self.logger.update_state(event);
    }
}
