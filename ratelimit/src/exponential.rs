//! Per-item exponential backoff that counts failures: client-go's
//! `TypedItemExponentialFailureRateLimiter` (`util/workqueue/default_rate_limiters.go`).
//!
//! Behaviour is the same as client-go's: the delay is `base * 2^n` for the item's `n`-th earlier
//! failure, computed in floating point and clamped to `max`, so no failure count can overflow
//! it. The only difference is the table: a sharded map instead of one mutex-guarded map, so
//! that the workers of a queue do not serialise on it.
//!
//! Because it counts failures and not time, this limiter escalates on every failure, however
//! close together. See the type's documentation for what that does to a key that keeps being
//! re-triggered (kubernetes/kubernetes#132805), and
//! [`ItemExponentialBackoffRateLimiter`](crate::ItemExponentialBackoffRateLimiter) for a limiter
//! that escalates once per backoff window instead.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use crate::RateLimiter;
use crate::items::ItemMap;

/// Waits `base * 2^n` before the retry after an item's `n`-th previous failure, capped at `max`.
///
/// With a 1 ms base the delays are 1, 2, 4, 8, 16 ms, ... until the cap.
/// [`forget`](RateLimiter::forget) clears an item's count (call it when the item succeeds) and
/// [`num_requeues`](RateLimiter::num_requeues) reports it. Items are tracked independently.
///
/// # Failures are counted, not time (kubernetes/kubernetes#132805)
///
/// A work queue retries a failed item with `add_rate_limited`, but anything else may `add` the
/// same item in the meantime: a watch event on the object, a resync, an event on an object that
/// maps to it. The plain `add` makes the item runnable at once, bypassing the backoff; when that
/// reconcile fails too it calls `add_rate_limited` again, and this limiter counts one more
/// failure. So the count follows how often the item is *triggered*, not how long it has been
/// failing, and the delay grows super-exponentially in time.
///
/// Worked example with the default controller limiter's 5 ms .. 1000 s: a key fails because of
/// something outside the cluster, and its object's status churns, re-triggering it every 5 ms.
/// Every trigger is a failed reconcile and one more `when`:
///
/// | failure | 1st  | 2nd   | 3rd   | 4th   | ... | 18th     | 19th         | 20th   |
/// |---------|------|-------|-------|-------|-----|----------|--------------|--------|
/// | delay   | 5 ms | 10 ms | 20 ms | 40 ms | ... | 655.36 s | 1000 s (cap) | 1000 s |
///
/// Three failures inside the first 5 ms window already escalate to 20 ms, and after twenty
/// failures, that is after failing for just 100 ms, the key's next retry is more than 16 minutes
/// away. A backoff that grows with time would be at its fifth step instead (an 80 ms window,
/// retry at 155 ms): that is what
/// [`ItemExponentialBackoffRateLimiter`](crate::ItemExponentialBackoffRateLimiter) does. This type
/// keeps client-go's behaviour for compatibility.
pub struct ItemExponentialFailureRateLimiter<T> {
    failures: ItemMap<T, usize>,
    base: Duration,
    max: Duration,
}

impl<T: Hash + Eq> ItemExponentialFailureRateLimiter<T> {
    /// A limiter waiting `base * 2^failures`, at most `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            failures: ItemMap::new(),
            base,
            max,
        }
    }

    /// The delay after the first failure.
    pub fn base(&self) -> Duration {
        self.base
    }

    /// The longest delay.
    pub fn max(&self) -> Duration {
        self.max
    }
}

impl<T> RateLimiter<T> for ItemExponentialFailureRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync,
{
    fn when(&self, item: &T) -> Duration {
        let exponent = self.failures.update(item, |failures| {
            let previous = *failures;
            *failures = failures.saturating_add(1);
            previous
        });
        exponential_delay(self.base, self.max, exponent)
    }

    fn forget(&self, item: &T) {
        self.failures.remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.read(item, |failures| *failures).unwrap_or(0)
    }
}

impl<T> fmt::Debug for ItemExponentialFailureRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialFailureRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

/// `base * 2^exponent`, clamped to `max`.
///
/// As in client-go the product is computed in floating point, where a huge exponent just gives
/// infinity, and anything not below `max` is `max`; the result is truncated to whole
/// nanoseconds like Go's `time.Duration(float)`.
pub(crate) fn exponential_delay(base: Duration, max: Duration, exponent: usize) -> Duration {
    if base.is_zero() {
        // 0 * 2^1024 would be NaN in floating point (Go turns that into a negative duration).
        return Duration::ZERO;
    }
    let exponent = i32::try_from(exponent).unwrap_or(i32::MAX);
    let nanos = base.as_nanos() as f64 * 2f64.powi(exponent);
    if nanos >= max.as_nanos() as f64 {
        return max;
    }
    // Finite and below `max` from here on.
    let delay = if nanos < u64::MAX as f64 {
        Duration::from_nanos(nanos as u64)
    } else {
        Duration::try_from_secs_f64(nanos / 1e9).unwrap_or(max)
    };
    delay.min(max)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// client-go's `TestItemExponentialFailureRateLimiter`.
    #[test]
    fn item_exponential_failure_rate_limiter() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));

        for expected in [1, 2, 4, 8, 16] {
            assert_eq!(limiter.when(&"one"), expected * MS);
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);

        assert_eq!(limiter.when(&"two"), MS);
        assert_eq!(limiter.when(&"two"), 2 * MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);

        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);
    }

    /// client-go's `TestItemExponentialFailureRateLimiterOverFlow`.
    #[test]
    fn item_exponential_failure_rate_limiter_overflow() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1000));
        for _ in 0..5 {
            let _ = limiter.when(&"one");
        }
        assert_eq!(limiter.when(&"one"), 32 * MS);

        for _ in 0..1000 {
            let _ = limiter.when(&"overflow1");
        }
        assert_eq!(limiter.when(&"overflow1"), Duration::from_secs(1000));

        let minute = Duration::from_secs(60);
        let limiter = ItemExponentialFailureRateLimiter::new(minute, 1000 * 60 * minute);
        for _ in 0..2 {
            let _ = limiter.when(&"two");
        }
        assert_eq!(limiter.when(&"two"), 4 * minute);

        for _ in 0..1000 {
            let _ = limiter.when(&"overflow2");
        }
        assert_eq!(limiter.when(&"overflow2"), 1000 * 60 * minute);
    }

    /// kubernetes/kubernetes#132805: failures inside one backoff window still escalate.
    #[test]
    fn triggers_inside_the_backoff_window_escalate_kubernetes_132805() {
        let limiter = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
        // First failure: retry in 5 ms. Two more triggers fail before that retry is due...
        assert_eq!(limiter.when(&"default/web"), 5 * MS);
        assert_eq!(limiter.when(&"default/web"), 10 * MS);
        // ...and three failures within 5 ms already wait 20 ms.
        assert_eq!(limiter.when(&"default/web"), 20 * MS);
        assert_eq!(limiter.num_requeues(&"default/web"), 3);

        // The worked example: twenty failed reconciles, one every 5 ms, hit the 1000 s cap.
        let limiter = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
        let delays: Vec<_> = (0..20).map(|_| limiter.when(&"default/web")).collect();
        assert_eq!(delays[17], Duration::from_millis(5 << 17)); // 655.36 s
        assert_eq!(delays[18], Duration::from_secs(1000));
        assert_eq!(delays[19], Duration::from_secs(1000));
    }

    #[test]
    fn extreme_inputs_do_not_panic() {
        let max = Duration::MAX;
        assert_eq!(exponential_delay(Duration::MAX, max, usize::MAX), max);
        assert_eq!(
            exponential_delay(Duration::ZERO, max, usize::MAX),
            Duration::ZERO
        );
        assert_eq!(exponential_delay(MS, Duration::ZERO, 0), Duration::ZERO);
        assert_eq!(exponential_delay(MS, max, 1 << 40), max);
        // Past what u64 nanoseconds hold but below the cap.
        assert_eq!(
            exponential_delay(Duration::from_secs(1 << 40), max, 10),
            Duration::from_secs(1 << 50)
        );

        let limiter = ItemExponentialFailureRateLimiter::new(Duration::MAX, Duration::MAX);
        assert_eq!(limiter.when(&1u8), Duration::MAX);
        assert_eq!(limiter.when(&1u8), Duration::MAX);
    }

    #[test]
    fn failure_count_saturates() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
        limiter
            .failures
            .update(&"x", |failures| *failures = usize::MAX);
        assert_eq!(limiter.when(&"x"), Duration::from_secs(1));
        assert_eq!(limiter.num_requeues(&"x"), usize::MAX);
    }

    #[test]
    fn concurrent_failures_are_all_counted() {
        let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
        std::thread::scope(|scope| {
            for _ in 0..4 {
                scope.spawn(|| {
                    for i in 0..1000u32 {
                        let _ = limiter.when(&(i % 10));
                    }
                });
            }
        });
        for i in 0..10u32 {
            assert_eq!(limiter.num_requeues(&i), 400);
        }
        assert_eq!(limiter.failures.len(), 10);
    }
}
