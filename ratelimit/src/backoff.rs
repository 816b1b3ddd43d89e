//! Per-item exponential backoff that grows with time rather than with the number of failures.
//!
//! client-go has no counterpart: this is the fix for kubernetes/kubernetes#132805, where
//! `ItemExponentialFailureRateLimiter` escalates on every failure, so a failing key that other
//! events keep re-triggering backs off super-exponentially (see
//! [`ItemExponentialFailureRateLimiter`](crate::ItemExponentialFailureRateLimiter) for a worked
//! example). Here each item has a backoff *window*: failures inside the current window do not
//! escalate, only a failure at or after the end of the window does. When every failure is a
//! retry at the end of its window, the delays are exactly client-go's.

use std::fmt;
use std::hash::Hash;
use std::time::Duration;

use tokio::time::Instant;

use crate::RateLimiter;
use crate::exponential::exponential_delay;
use crate::items::ItemMap;

/// How far ahead to put the end of a window whose delay does not fit in an [`Instant`]
/// (tokio's own fallback for far-off deadlines is 30 years as well).
const FAR_FUTURE: Duration = Duration::from_secs(30 * 365 * 24 * 60 * 60);

/// Exponential backoff per item whose delay grows once per backoff window, not once per failure.
///
/// Each item has a failure count `n` and the end of its current window, `ready_at`. When
/// [`when`](RateLimiter::when) is called:
///
/// * at or after `ready_at` (or the first time): the backoff escalates. The delay is
///   `base * 2^n` capped at `max` (as client-go computes it), `n` grows by one and the new window
///   ends at `now + delay`;
/// * before `ready_at`: the failure happened while a retry was already scheduled, typically
///   because another event re-triggered the item. Nothing escalates and the answer is the rest
///   of the current window, `ready_at - now`, so the item is retried when it was due anyway (a
///   delaying queue keeps the earlier of two scheduled times for one item).
///
/// [`forget`](RateLimiter::forget) clears the item; [`num_requeues`](RateLimiter::num_requeues)
/// is `n`, the number of windows, so re-triggers do not eat into a controller's retry budget
/// ("give up after 15 requeues"). Time is [`tokio::time::Instant`], so tests can drive it with
/// tokio's paused clock.
///
/// With the example of kubernetes/kubernetes#132805 (5 ms .. 1000 s, a key re-triggered every
/// 5 ms while it keeps failing), twenty failures in 100 ms leave this limiter in its fifth window
/// (80 ms, ending at 155 ms), where client-go's limiter is at its 1000 s cap.
///
/// ```
/// # async fn example() {
/// use std::time::Duration;
/// use clientgo_ratelimit::{
///     BucketRateLimiter, ItemExponentialBackoffRateLimiter, MaxOfRateLimiter, RateLimiter,
/// };
///
/// // client-go's default controller limiter, with the per-item part replaced.
/// let limiter = MaxOfRateLimiter::<String>::default()
///     .with_limiter(ItemExponentialBackoffRateLimiter::new(
///         Duration::from_millis(5),
///         Duration::from_secs(1000),
///     ))
///     .with_limiter(BucketRateLimiter::new(10.0, 100));
///
/// let key = "default/web".to_string();
/// assert_eq!(limiter.when(&key), Duration::from_millis(5));
/// // Failing again straight away, inside the 5 ms window, does not escalate.
/// assert!(limiter.when(&key) <= Duration::from_millis(5));
/// assert_eq!(limiter.num_requeues(&key), 1);
/// # }
/// # tokio::runtime::Builder::new_current_thread()
/// #     .enable_time()
/// #     .start_paused(true)
/// #     .build()
/// #     .unwrap()
/// #     .block_on(example());
/// ```
pub struct ItemExponentialBackoffRateLimiter<T> {
    items: ItemMap<T, Window>,
    base: Duration,
    max: Duration,
}

/// An item's backoff state.
#[derive(Default)]
struct Window {
    /// How many times the backoff escalated.
    failures: usize,
    /// The end of the current window; `None` before the first failure.
    ready_at: Option<Instant>,
}

impl<T: Hash + Eq> ItemExponentialBackoffRateLimiter<T> {
    /// A limiter whose windows last `base * 2^n`, at most `max`.
    pub fn new(base: Duration, max: Duration) -> Self {
        Self {
            items: ItemMap::new(),
            base,
            max,
        }
    }

    /// The length of the first window.
    pub fn base(&self) -> Duration {
        self.base
    }

    /// The longest window.
    pub fn max(&self) -> Duration {
        self.max
    }
}

impl<T> RateLimiter<T> for ItemExponentialBackoffRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync,
{
    fn when(&self, item: &T) -> Duration {
        self.items.update(item, |window| {
            let now = Instant::now();
            if let Some(ready_at) = window.ready_at.filter(|ready_at| now < *ready_at) {
                return ready_at - now;
            }
            let delay = exponential_delay(self.base, self.max, window.failures);
            window.failures = window.failures.saturating_add(1);
            let ready_at = now
                .checked_add(delay)
                .or_else(|| now.checked_add(FAR_FUTURE))
                .unwrap_or(now);
            window.ready_at = Some(ready_at);
            delay
        })
    }

    fn forget(&self, item: &T) {
        self.items.remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.items.read(item, |window| window.failures).unwrap_or(0)
    }
}

impl<T> fmt::Debug for ItemExponentialBackoffRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemExponentialBackoffRateLimiter")
            .field("base", &self.base)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use tokio::time::advance;

    use super::*;
    use crate::ItemExponentialFailureRateLimiter;

    const MS: Duration = Duration::from_millis(1);

    #[tokio::test(start_paused = true)]
    async fn failures_inside_the_window_do_not_escalate() {
        let limiter = ItemExponentialBackoffRateLimiter::new(5 * MS, Duration::from_secs(1000));
        assert_eq!(limiter.when(&"key"), 5 * MS);
        advance(MS).await;
        assert_eq!(limiter.when(&"key"), 4 * MS);
        advance(MS).await;
        assert_eq!(limiter.when(&"key"), 3 * MS);
        assert_eq!(limiter.num_requeues(&"key"), 1);

        // At the end of the window the next failure escalates.
        advance(3 * MS).await;
        assert_eq!(limiter.when(&"key"), 10 * MS);
        assert_eq!(limiter.when(&"key"), 10 * MS);
        assert_eq!(limiter.num_requeues(&"key"), 2);

        // Later than the end of the window escalates just once as well.
        advance(Duration::from_secs(60)).await;
        assert_eq!(limiter.when(&"key"), 20 * MS);
        assert_eq!(limiter.num_requeues(&"key"), 3);
    }

    /// client-go's `TestItemExponentialFailureRateLimiter`, retrying at the end of each window.
    #[tokio::test(start_paused = true)]
    async fn retries_at_the_end_of_each_window_match_client_go() {
        let limiter = ItemExponentialBackoffRateLimiter::new(MS, Duration::from_secs(1));
        for expected in [1, 2, 4, 8, 16] {
            let delay = limiter.when(&"one");
            assert_eq!(delay, expected * MS);
            advance(delay).await;
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);

        assert_eq!(limiter.when(&"two"), MS);
        advance(MS).await;
        assert_eq!(limiter.when(&"two"), 2 * MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);

        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);
    }

    /// client-go's `TestItemExponentialFailureRateLimiterOverFlow`, one failure per window.
    #[tokio::test(start_paused = true)]
    async fn caps_at_max_without_overflowing() {
        let minute = Duration::from_secs(60);
        let max = 1000 * 60 * minute;
        let limiter = ItemExponentialBackoffRateLimiter::new(minute, max);
        for expected in [1, 2, 4] {
            let delay = limiter.when(&"two");
            assert_eq!(delay, expected * minute);
            advance(delay).await;
        }
        for _ in 0..1000 {
            let delay = limiter.when(&"overflow");
            advance(delay).await;
        }
        assert_eq!(limiter.when(&"overflow"), max);
        assert_eq!(limiter.num_requeues(&"overflow"), 1001);

        let limiter = ItemExponentialBackoffRateLimiter::new(Duration::MAX, Duration::MAX);
        assert_eq!(limiter.when(&"huge"), Duration::MAX);
        // The window could not end inside an Instant; it ends in the far future instead.
        assert_eq!(limiter.when(&"huge"), FAR_FUTURE);
    }

    /// The worked example of kubernetes/kubernetes#132805: a key re-triggered every 5 ms that
    /// fails every time.
    #[tokio::test(start_paused = true)]
    async fn re_triggered_key_compared_with_client_go() {
        let windowed = ItemExponentialBackoffRateLimiter::new(5 * MS, Duration::from_secs(1000));
        let counting = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
        let start = Instant::now();
        let mut last = (Duration::ZERO, Duration::ZERO);
        for _ in 0..20 {
            last = (windowed.when(&"key"), counting.when(&"key"));
            advance(5 * MS).await;
        }
        assert_eq!(Instant::now() - start, 100 * MS);
        // The last failure, at 95 ms, is inside the fifth window: 75 ms .. 155 ms.
        assert_eq!(last.0, 60 * MS);
        assert_eq!(windowed.num_requeues(&"key"), 5);
        // client-go's limiter has hit its cap.
        assert_eq!(last.1, Duration::from_secs(1000));
        assert_eq!(counting.num_requeues(&"key"), 20);
    }

    #[tokio::test(start_paused = true)]
    async fn items_are_independent() {
        let limiter = ItemExponentialBackoffRateLimiter::new(MS, Duration::from_secs(1));
        assert_eq!(limiter.when(&1), MS);
        assert_eq!(limiter.when(&2), MS);
        advance(MS).await;
        assert_eq!(limiter.when(&1), 2 * MS);
        assert_eq!(limiter.num_requeues(&1), 2);
        assert_eq!(limiter.num_requeues(&2), 1);
        assert_eq!(limiter.num_requeues(&3), 0);
    }
}
