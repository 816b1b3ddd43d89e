//! The resourceVersion a store has caught up to, and waiting for it (read-your-writes).
//!
//! client-go records the store's resourceVersion from every object written and from
//! bookmarks (`LastStoreSyncResourceVersion`, behind its `AtomicFIFO` gate). We record the
//! same and add what client-go lacks: a reconciler that just wrote an object (and got its new
//! resourceVersion back) can wait until the cache has seen that write before reading it,
//! instead of acting on stale state.
//!
//! resourceVersions are opaque strings to clients, but Kubernetes promises that those of one
//! resource are comparable (KEP-5504): apimachinery's `CompareResourceVersion` accepts only
//! a non-empty run of decimal digits without a leading zero (so not `"0"`, which means "any
//! version" in a request, not a version), and compares by length, then digit by digit, with
//! no size limit. [`compare`] does the same, and a wait for a version it refuses fails at
//! once with [`WaitForResourceVersionError::Invalid`].
//!
//! Only versions of the same resource compare: a Deployment's resourceVersion says nothing
//! about how far a cache of Foos is. Waiting on one informer's store for a version written to
//! another resource may return early or time out.

use std::cmp::Ordering;
use std::time::Duration;

/// Why a resourceVersion cannot be compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InvalidResourceVersion {
    /// It is empty.
    Empty,
    /// It is `"0"`, which in a request means "any version", not a version.
    Zero,
    /// It starts with a `0`.
    LeadingZero,
    /// It holds something other than the digits 0 to 9.
    NotDigits,
}

impl std::fmt::Display for InvalidResourceVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            InvalidResourceVersion::Empty => "it is empty",
            InvalidResourceVersion::Zero => "\"0\" means any version, not a version",
            InvalidResourceVersion::LeadingZero => "it has a leading zero",
            InvalidResourceVersion::NotDigits => "it holds something other than digits",
        })
    }
}

/// Checks that `rv` is a comparable resourceVersion (apimachinery's rules: digits only, no
/// leading zero, not `"0"`).
pub(crate) fn validate(rv: &str) -> Result<(), InvalidResourceVersion> {
    let bytes = rv.as_bytes();
    match bytes {
        [] => Err(InvalidResourceVersion::Empty),
        [b'0'] => Err(InvalidResourceVersion::Zero),
        _ if !bytes.iter().all(u8::is_ascii_digit) => Err(InvalidResourceVersion::NotDigits),
        [b'0', ..] => Err(InvalidResourceVersion::LeadingZero),
        _ => Ok(()),
    }
}

/// Compares two valid resourceVersions of the same resource (apimachinery's
/// `CompareResourceVersion`): the longer is the greater, else the first differing digit
/// decides. No size limit.
pub(crate) fn compare(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// The last resourceVersion recorded, and whether it is comparable.
#[derive(Debug, Default)]
pub(crate) struct RvState {
    last: String,
    comparable: bool,
}

impl RvState {
    /// Records `rv` (ignoring `""`); returns whether it changed.
    pub(crate) fn set(&mut self, rv: &str) -> bool {
        if rv.is_empty() || rv == self.last {
            return false;
        }
        self.last.clear();
        self.last.push_str(rv);
        self.comparable = validate(rv).is_ok();
        true
    }

    pub(crate) fn last(&self) -> &str {
        &self.last
    }

    /// Whether the store has reached `target` (a valid resourceVersion).
    pub(crate) fn reached(&self, target: &str) -> bool {
        self.comparable && compare(&self.last, target) != Ordering::Less
    }
}

/// Why [`Indexer::wait_for_resource_version`](crate::Indexer::wait_for_resource_version)
/// returned without the store reaching the resourceVersion.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WaitForResourceVersionError {
    /// The awaited resourceVersion cannot be compared (apimachinery's rules: digits only, no
    /// leading zero, not `"0"`).
    #[error("cannot wait for resourceVersion {resource_version:?}: {reason}")]
    Invalid {
        /// The awaited resourceVersion.
        resource_version: String,
        /// What is wrong with it.
        reason: InvalidResourceVersion,
    },
    /// The store did not reach the resourceVersion in time: the informer is behind, or the
    /// write's own event does not reach this cache (a selector filters it out) and no
    /// bookmark at or past it came in time.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_follows_apimachinery() {
        assert_eq!(validate(""), Err(InvalidResourceVersion::Empty));
        assert_eq!(validate("0"), Err(InvalidResourceVersion::Zero));
        assert_eq!(validate("012"), Err(InvalidResourceVersion::LeadingZero));
        assert_eq!(validate("00"), Err(InvalidResourceVersion::LeadingZero));
        for bad in ["-1", "+1", "1.5", " 1", "1 ", "a1", "١٢"] {
            assert_eq!(
                validate(bad),
                Err(InvalidResourceVersion::NotDigits),
                "{bad}"
            );
        }
        assert_eq!(validate("1"), Ok(()));
        assert_eq!(validate("99999999999999999999999999"), Ok(()));
    }

    #[test]
    fn comparison_has_no_size_limit() {
        assert_eq!(compare("9", "10"), Ordering::Less);
        assert_eq!(compare("10", "10"), Ordering::Equal);
        assert_eq!(compare("11", "10"), Ordering::Greater);
        let huge = "184467440737095516160"; // u64::MAX × 10
        assert_eq!(compare(huge, "18446744073709551615"), Ordering::Greater);
    }

    #[test]
    fn an_incomparable_store_version_reaches_nothing() {
        let mut state = RvState::default();
        assert!(!state.reached("1"));
        state.set("abc");
        assert!(!state.reached("1"));
        state.set("12");
        assert!(state.reached("12") && state.reached("9") && !state.reached("13"));
    }
}
