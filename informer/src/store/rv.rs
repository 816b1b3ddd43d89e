//! The resourceVersion a store has caught up to, and waiting for it (read-your-writes).
//!
//! client-go records the store's resourceVersion from every object written and from
//! bookmarks (`LastStoreSyncResourceVersion`, behind its `AtomicFIFO` gate). We record the
//! same and add what client-go lacks: a reconciler that just wrote an object (and got its new
//! resourceVersion back) can wait until the cache has seen that write before reading it,
//! instead of acting on stale state.
//!
//! resourceVersions are opaque strings to clients; Kubernetes' own servers use integers, and
//! comparing them as integers is the only way to know one state is newer than another. A
//! wait therefore needs an integer resourceVersion and fails fast with
//! [`WaitForResourceVersionError::NotAnInteger`] otherwise.

use std::time::Duration;

/// The last resourceVersion recorded, as received and as an integer when it is one.
#[derive(Debug, Default)]
pub(crate) struct RvState {
    last: String,
    number: Option<u64>,
}

impl RvState {
    /// Records `rv` (ignoring `""`); returns whether it changed.
    pub(crate) fn set(&mut self, rv: &str) -> bool {
        if rv.is_empty() || rv == self.last {
            return false;
        }
        self.last.clear();
        self.last.push_str(rv);
        self.number = rv.parse().ok();
        true
    }

    pub(crate) fn last(&self) -> &str {
        &self.last
    }

    /// Whether the store has reached `target`.
    pub(crate) fn reached(&self, target: u64) -> bool {
        self.number.is_some_and(|n| n >= target)
    }
}

/// Why [`Indexer::wait_for_resource_version`](crate::Indexer::wait_for_resource_version)
/// returned without the store reaching the resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitForResourceVersionError {
    /// The awaited resourceVersion is not an integer, so it cannot be compared.
    #[error("cannot wait for resourceVersion {0:?}: only integer resourceVersions can be compared")]
    NotAnInteger(String),
    /// The store did not reach the resourceVersion in time.
    #[error(
        "timed out after {waited:?} waiting for the cache to reach resourceVersion {wanted}; it is at {}",
        if reached.is_empty() { "no resourceVersion yet" } else { reached.as_str() }
    )]
    Timeout {
        /// The awaited resourceVersion.
        wanted: String,
        /// The store's resourceVersion when the wait gave up (`""`: none yet).
        reached: String,
        /// How long it waited.
        waited: Duration,
    },
}
