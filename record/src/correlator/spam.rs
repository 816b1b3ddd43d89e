//! The last stage of correlation: rate limiting per source and object
//! ([`EventSourceObjectSpamFilter`], client-go's `EventSourceObjectSpamFilter` in
//! `tools/record/events_cache.go`).
//!
//! Each spam key (by default: source component and host, the object's kind, namespace, name,
//! uid and apiVersion, and the event type; not the reason, message or field path) gets its own
//! token bucket, created full on first use: `burst` tokens, refilled at `qps` per second. An
//! event that finds no token is filtered out. The buckets live in an LRU cache, so a key that
//! falls out starts over with a full bucket, as in client-go.
//!
//! The bucket is [`clientgo_ratelimit::TokenBucket`], the x/time/rate semantics client-go's
//! passive token-bucket limiter is built on, on tokio's clock. Difference: the rate is an `f64`
//! (Go's `float32` rounds 1/300 slightly up).

use clientgo_ratelimit::TokenBucket;

use super::EventSpamKeyFunc;
use super::lru::LruCache;
use crate::event::Event;

/// Throttles the events one source may send about one object (client-go's
/// `EventSourceObjectSpamFilter`).
pub struct EventSourceObjectSpamFilter {
    cache: LruCache<TokenBucket>,
    burst: u32,
    qps: f64,
    spam_key_func: EventSpamKeyFunc,
}

impl std::fmt::Debug for EventSourceObjectSpamFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSourceObjectSpamFilter")
            .field("burst", &self.burst)
            .field("qps", &self.qps)
            .finish_non_exhaustive()
    }
}

impl EventSourceObjectSpamFilter {
    /// A filter allowing `burst` events per key, refilled at `qps` per second, remembering
    /// `lru_cache_size` keys (client-go's `NewEventSourceObjectSpamFilter`).
    pub fn new(
        lru_cache_size: usize,
        burst: u32,
        qps: f64,
        spam_key_func: EventSpamKeyFunc,
    ) -> EventSourceObjectSpamFilter {
        EventSourceObjectSpamFilter {
            cache: LruCache::new(lru_cache_size),
            burst,
            qps,
            spam_key_func,
        }
    }

    /// Whether to skip `event`: true when its key has no token left. Takes a token otherwise.
    pub fn filter(&mut self, event: &Event) -> bool {
        let key = (self.spam_key_func)(event);
        let (qps, burst) = (self.qps, self.burst);
        let bucket = self
            .cache
            .get_or_insert_with(&key, || TokenBucket::new(qps, burst));
        !bucket.allow()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use super::*;
    use crate::correlator::{DEFAULT_SPAM_BURST, DEFAULT_SPAM_QPS, spam_key};
    use crate::event::ObjectReference;

    fn event(name: &str, type_: &str) -> Event {
        Event {
            involved_object: ObjectReference {
                kind: "Pod".into(),
                name: name.into(),
                ..ObjectReference::default()
            },
            type_: type_.into(),
            ..Event::default()
        }
    }

    #[tokio::test(start_paused = true)]
    async fn burst_then_one_per_refill_period() {
        let mut filter = EventSourceObjectSpamFilter::new(
            16,
            DEFAULT_SPAM_BURST,
            DEFAULT_SPAM_QPS,
            Arc::new(spam_key),
        );
        let e = event("a", "Normal");
        for i in 0..25 {
            assert!(!filter.filter(&e), "event {i} is within the burst");
        }
        assert!(filter.filter(&e), "the 26th is spam");
        assert!(
            !filter.filter(&event("b", "Normal")),
            "other objects have their own bucket"
        );
        assert!(!filter.filter(&event("a", "Warning")), "so do other types");

        tokio::time::advance(Duration::from_secs(299)).await;
        assert!(filter.filter(&e), "no token before 300 s");
        tokio::time::advance(Duration::from_secs(1)).await;
        assert!(!filter.filter(&e), "one token after 300 s");
        assert!(filter.filter(&e));
    }

    #[tokio::test(start_paused = true)]
    async fn a_forgotten_key_starts_with_a_full_bucket() {
        let mut filter =
            EventSourceObjectSpamFilter::new(1, 1, DEFAULT_SPAM_QPS, Arc::new(spam_key));
        let a = event("a", "Normal");
        assert!(!filter.filter(&a));
        assert!(filter.filter(&a));
        assert!(!filter.filter(&event("b", "Normal"))); // evicts "a"
        assert!(!filter.filter(&a));
    }
}
