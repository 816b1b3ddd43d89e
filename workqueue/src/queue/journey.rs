//! The work queue's part of a key's journey (see the `clientgo-flightrecorder` crate): `add`
//! (new, coalesced into a waiting key, deferred because the key is being processed, or due
//! after a delay), `add_after`, `backoff` (the delay a rate limiter chose and the failures
//! so far), `get` and `done` (with the hold's outcome), each with the queue's name, the key
//! and, where it changed, the number of keys in line.
//!
//! Events go to the target `clientgo_workqueue::journey` at `TRACE` level. With no
//! subscriber interested, a queue operation pays one relaxed load for the check; the key is
//! formatted and the depth read only when one is. client-go has no such events (its queue
//! reports metrics only).

use clientgo_apimachinery::ObjectKey;
use clientgo_journey::{AddOutcome, DoneOutcome, Stage, target};
use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Whether a subscriber wants the queue's journey events.
#[inline]
pub(crate) fn enabled() -> bool {
    tracing::enabled!(target: target::WORKQUEUE, tracing::Level::TRACE)
}

/// An item as text: the keys controllers use ([`ObjectKey`], `Arc<str>`, `String`, `&str`),
/// or the item's hash for any other type (the queue does not require `Display`).
pub(crate) struct ItemKey<'a, T>(pub(crate) &'a T, pub(crate) u64);

impl<T: 'static> fmt::Display for ItemKey<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let item: &dyn Any = self.0;
        if let Some(key) = item.downcast_ref::<ObjectKey>() {
            f.write_str(key.as_str())
        } else if let Some(key) = item.downcast_ref::<Arc<str>>() {
            f.write_str(key)
        } else if let Some(key) = item.downcast_ref::<String>() {
            f.write_str(key)
        } else if let Some(key) = item.downcast_ref::<&'static str>() {
            f.write_str(key)
        } else if let Some(key) = item.downcast_ref::<Box<str>>() {
            f.write_str(key)
        } else {
            write!(f, "#{:016x}", self.1)
        }
    }
}

fn micros(delay: Duration) -> u64 {
    u64::try_from(delay.as_micros()).unwrap_or(u64::MAX)
}

/// An add and what became of it.
pub(crate) fn add<T: 'static>(queue: &str, item: &T, hash: u64, outcome: AddOutcome, depth: usize) {
    tracing::trace!(target: target::WORKQUEUE, stage = Stage::Add.name(), queue,
        key = %ItemKey(item, hash), outcome = outcome.name(), depth = depth as u64);
}

/// An add scheduled after `delay`.
pub(crate) fn add_after<T: 'static>(queue: &str, item: &T, hash: u64, delay: Duration) {
    tracing::trace!(target: target::WORKQUEUE, stage = Stage::AddAfter.name(), queue,
        key = %ItemKey(item, hash), delay_us = micros(delay));
}

/// A rate-limited add: the backoff chosen, and the failures counted so far.
pub(crate) fn backoff<T: 'static>(
    queue: &str,
    item: &T,
    hash: u64,
    delay: Duration,
    failures: usize,
) {
    tracing::trace!(target: target::WORKQUEUE, stage = Stage::Backoff.name(), queue,
        key = %ItemKey(item, hash), delay_us = micros(delay), failures = failures as u64);
}

/// An item handed to a worker.
pub(crate) fn get<T: 'static>(queue: &str, item: &T, hash: u64, depth: usize) {
    tracing::trace!(target: target::WORKQUEUE, stage = Stage::Get.name(), queue,
        key = %ItemKey(item, hash), depth = depth as u64);
}

/// A hold ended, and how.
pub(crate) fn done<T: 'static>(queue: &str, item: &T, hash: u64, outcome: DoneOutcome) {
    tracing::trace!(target: target::WORKQUEUE, stage = Stage::Done.name(), queue,
        key = %ItemKey(item, hash), outcome = outcome.name());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_keys_are_written_as_text_and_others_by_hash() {
        let key: Arc<str> = Arc::from("default/web");
        assert_eq!(ItemKey(&key, 1).to_string(), "default/web");
        assert_eq!(ItemKey(&String::from("a/b"), 1).to_string(), "a/b");
        assert_eq!(ItemKey(&"c/d", 1).to_string(), "c/d");
        assert_eq!(ItemKey(&7u32, 0xab).to_string(), "#00000000000000ab");
    }
}
