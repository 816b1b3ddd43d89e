//! The rest of client-go's work queue rate limiters (`util/workqueue/default_rate_limiters.go`)
//! and its two default compositions.
//!
//! * [`ItemFastSlowRateLimiter`]: a few quick retries, then slow ones.
//! * [`BucketRateLimiter`]: one [`TokenBucket`] shared by all items, bounding the overall retry
//!   rate.
//! * [`MaxOfRateLimiter`]: asks every limiter it holds and waits for the longest answer.
//! * [`WithMaxWaitRateLimiter`]: caps another limiter's delay.
//! * [`default_controller_rate_limiter`] and [`default_item_based_rate_limiter`].
//!
//! Behaviour is client-go's. Differences: `BucketRateLimiter` reports a bucket that can never
//! grant a token (zero burst) as [`INFINITE_DELAY`], Go's `InfDuration`, explicitly rather than
//! through a "not OK" reservation; `WithMaxWaitRateLimiter` is generic over the limiter it wraps
//! instead of boxing it; and the per-item tables are sharded maps rather than one mutex-guarded
//! map.

use std::fmt;
use std::hash::Hash;
use std::sync::Arc;
use std::time::Duration;

use crate::RateLimiter;
use crate::bucket::{INFINITE_DELAY, TokenBucket};
use crate::exponential::ItemExponentialFailureRateLimiter;
use crate::items::ItemMap;

/// client-go's default controller rate limiter: the worse of a per-item exponential backoff of
/// 5 ms .. 1000 s and an overall token bucket of 10 retries per second with bursts of 100.
///
/// This is `DefaultTypedControllerRateLimiter`. Note that sample-controller builds its own with a
/// 50 per second, 300 burst bucket.
pub fn default_controller_rate_limiter<T>() -> MaxOfRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync + 'static,
{
    MaxOfRateLimiter::default()
        .with_limiter(ItemExponentialFailureRateLimiter::new(
            Duration::from_millis(5),
            Duration::from_secs(1000),
        ))
        .with_limiter(BucketRateLimiter::new(10.0, 100))
}

/// client-go's `DefaultTypedItemBasedRateLimiter`: a per-item exponential backoff of
/// 1 ms .. 1000 s.
pub fn default_item_based_rate_limiter<T: Hash + Eq>() -> ItemExponentialFailureRateLimiter<T> {
    ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_secs(1000))
}

/// Retries an item quickly a few times, then slowly.
///
/// The item's failure count is incremented first; the delay is `fast` while the count is at
/// most `max_fast_attempts`, and `slow` after that. This is client-go's
/// `TypedItemFastSlowRateLimiter`.
pub struct ItemFastSlowRateLimiter<T> {
    failures: ItemMap<T, usize>,
    fast: Duration,
    slow: Duration,
    max_fast_attempts: usize,
}

impl<T: Hash + Eq> ItemFastSlowRateLimiter<T> {
    /// `max_fast_attempts` retries after `fast`, then every retry after `slow`.
    pub fn new(fast: Duration, slow: Duration, max_fast_attempts: usize) -> Self {
        Self {
            failures: ItemMap::new(),
            fast,
            slow,
            max_fast_attempts,
        }
    }
}

impl<T> RateLimiter<T> for ItemFastSlowRateLimiter<T>
where
    T: Hash + Eq + Clone + Send + Sync,
{
    fn when(&self, item: &T) -> Duration {
        let failures = self.failures.update(item, |failures| {
            *failures = failures.saturating_add(1);
            *failures
        });
        if failures <= self.max_fast_attempts {
            self.fast
        } else {
            self.slow
        }
    }

    fn forget(&self, item: &T) {
        self.failures.remove(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.failures.read(item, |failures| *failures).unwrap_or(0)
    }
}

impl<T> fmt::Debug for ItemFastSlowRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemFastSlowRateLimiter")
            .field("fast", &self.fast)
            .field("slow", &self.slow)
            .field("max_fast_attempts", &self.max_fast_attempts)
            .finish_non_exhaustive()
    }
}

/// Adapts a [`TokenBucket`] to the [`RateLimiter`] interface: every `when`, whatever the item,
/// takes a token and waits until it is available.
///
/// This is client-go's `TypedBucketRateLimiter`. It bounds the overall retry rate of a queue
/// rather than any one item's, so it keeps no per-item state: `num_requeues` is always 0 and
/// `forget` does nothing. A bucket with a zero burst never grants a token; `when` then returns
/// [`INFINITE_DELAY`].
///
/// Clones share the bucket.
#[derive(Clone, Debug)]
pub struct BucketRateLimiter {
    bucket: Arc<TokenBucket>,
}

impl BucketRateLimiter {
    /// A limiter over a new bucket of `burst` tokens refilled at `rate` per second (see
    /// [`TokenBucket::new`]).
    pub fn new(rate: f64, burst: u32) -> Self {
        Self::from_bucket(Arc::new(TokenBucket::new(rate, burst)))
    }

    /// A limiter over an existing, possibly shared, bucket.
    pub fn from_bucket(bucket: Arc<TokenBucket>) -> Self {
        Self { bucket }
    }

    /// The bucket.
    pub fn bucket(&self) -> &Arc<TokenBucket> {
        &self.bucket
    }
}

impl<T> RateLimiter<T> for BucketRateLimiter {
    fn when(&self, _item: &T) -> Duration {
        self.bucket
            .reserve()
            .map_or(INFINITE_DELAY, |reservation| reservation.delay())
    }

    fn forget(&self, _item: &T) {}

    fn num_requeues(&self, _item: &T) -> usize {
        0
    }
}

/// Asks every limiter it holds and answers with the worst case.
///
/// `when` calls *every* limiter, so each records the failure, and returns the longest delay;
/// `num_requeues` is the largest count; `forget` is passed on to all. With no limiters the delay
/// is zero. This is client-go's `TypedMaxOfRateLimiter`.
///
/// Combined with a [`BucketRateLimiter`], the bucket's burst can appear to be exceeded when some
/// items were held back longer by another limiter and then all become due at once.
pub struct MaxOfRateLimiter<T> {
    limiters: Vec<Box<dyn RateLimiter<T>>>,
}

impl<T> MaxOfRateLimiter<T> {
    /// A limiter over `limiters`.
    pub fn new(limiters: Vec<Box<dyn RateLimiter<T>>>) -> Self {
        Self { limiters }
    }

    /// Adds a limiter.
    pub fn push(&mut self, limiter: impl RateLimiter<T> + 'static) {
        self.limiters.push(Box::new(limiter));
    }

    /// Adds a limiter, builder style.
    #[must_use]
    pub fn with_limiter(mut self, limiter: impl RateLimiter<T> + 'static) -> Self {
        self.push(limiter);
        self
    }

    /// How many limiters there are.
    pub fn len(&self) -> usize {
        self.limiters.len()
    }

    /// Whether there are no limiters.
    pub fn is_empty(&self) -> bool {
        self.limiters.is_empty()
    }
}

impl<T> Default for MaxOfRateLimiter<T> {
    fn default() -> Self {
        Self::new(Vec::new())
    }
}

impl<T> RateLimiter<T> for MaxOfRateLimiter<T> {
    fn when(&self, item: &T) -> Duration {
        // Not `Iterator::max` over a lazy map: every limiter must see the failure.
        self.limiters
            .iter()
            .map(|limiter| limiter.when(item))
            .fold(Duration::ZERO, Duration::max)
    }

    fn forget(&self, item: &T) {
        for limiter in &self.limiters {
            limiter.forget(item);
        }
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.limiters
            .iter()
            .map(|limiter| limiter.num_requeues(item))
            .max()
            .unwrap_or(0)
    }
}

impl<T> fmt::Debug for MaxOfRateLimiter<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MaxOfRateLimiter")
            .field("limiters", &self.limiters.len())
            .finish()
    }
}

/// Caps the delay of another limiter at `max_delay`; `forget` and `num_requeues` are passed
/// through. This is client-go's `TypedWithMaxWaitRateLimiter`.
#[derive(Clone, Debug)]
pub struct WithMaxWaitRateLimiter<L> {
    inner: L,
    max_delay: Duration,
}

impl<L> WithMaxWaitRateLimiter<L> {
    /// Wraps `inner`, never waiting longer than `max_delay`.
    pub fn new(inner: L, max_delay: Duration) -> Self {
        Self { inner, max_delay }
    }

    /// The wrapped limiter.
    pub fn inner(&self) -> &L {
        &self.inner
    }

    /// The cap.
    pub fn max_delay(&self) -> Duration {
        self.max_delay
    }
}

impl<T, L: RateLimiter<T>> RateLimiter<T> for WithMaxWaitRateLimiter<L> {
    fn when(&self, item: &T) -> Duration {
        self.inner.when(item).min(self.max_delay)
    }

    fn forget(&self, item: &T) {
        self.inner.forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        self.inner.num_requeues(item)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// client-go's `TestItemFastSlowRateLimiter`.
    #[test]
    fn item_fast_slow_rate_limiter() {
        let limiter = ItemFastSlowRateLimiter::new(5 * MS, Duration::from_secs(10), 3);
        for expected in [
            5 * MS,
            5 * MS,
            5 * MS,
            Duration::from_secs(10),
            Duration::from_secs(10),
        ] {
            assert_eq!(limiter.when(&"one"), expected);
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);

        assert_eq!(limiter.when(&"two"), 5 * MS);
        assert_eq!(limiter.when(&"two"), 5 * MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);

        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }

    #[test]
    fn fast_slow_with_no_fast_attempts_is_always_slow() {
        let limiter = ItemFastSlowRateLimiter::new(MS, 2 * MS, 0);
        assert_eq!(limiter.when(&()), 2 * MS);
    }

    /// client-go's `TestMaxOfRateLimiter`.
    #[test]
    fn max_of_rate_limiter() {
        let limiter = MaxOfRateLimiter::default()
            .with_limiter(ItemFastSlowRateLimiter::new(
                5 * MS,
                Duration::from_secs(3),
                3,
            ))
            .with_limiter(ItemExponentialFailureRateLimiter::new(
                MS,
                Duration::from_secs(1),
            ));
        assert_eq!(limiter.len(), 2);

        for expected in [
            5 * MS,
            5 * MS,
            5 * MS,
            Duration::from_secs(3),
            Duration::from_secs(3),
        ] {
            assert_eq!(limiter.when(&"one"), expected);
        }
        assert_eq!(limiter.num_requeues(&"one"), 5);

        assert_eq!(limiter.when(&"two"), 5 * MS);
        assert_eq!(limiter.when(&"two"), 5 * MS);
        assert_eq!(limiter.num_requeues(&"two"), 2);

        limiter.forget(&"one");
        assert_eq!(limiter.num_requeues(&"one"), 0);
        assert_eq!(limiter.when(&"one"), 5 * MS);
    }

    #[test]
    fn empty_max_of_waits_nothing() {
        let limiter = MaxOfRateLimiter::<u32>::new(Vec::new());
        assert!(limiter.is_empty());
        assert_eq!(limiter.when(&1), Duration::ZERO);
        assert_eq!(limiter.num_requeues(&1), 0);
        limiter.forget(&1);
    }

    /// client-go's StepRateLimiter test double: `base` for the first `threshold` calls (for any
    /// item), `max` after that.
    struct StepRateLimiter {
        count: AtomicUsize,
        threshold: usize,
        base: Duration,
        max: Duration,
    }

    impl<T> RateLimiter<T> for StepRateLimiter {
        fn when(&self, _item: &T) -> Duration {
            if self.count.fetch_add(1, Ordering::Relaxed) < self.threshold {
                self.base
            } else {
                self.max
            }
        }

        fn forget(&self, _item: &T) {}

        fn num_requeues(&self, _item: &T) -> usize {
            0
        }
    }

    /// client-go's `TestWithMaxWaitRateLimiter`.
    #[test]
    fn with_max_wait_rate_limiter() {
        let step = StepRateLimiter {
            count: AtomicUsize::new(0),
            threshold: 100,
            base: 5 * MS,
            max: Duration::from_secs(1000),
        };
        let limiter = WithMaxWaitRateLimiter::new(step, Duration::from_secs(500));
        for i in 0..100 {
            assert_eq!(limiter.when(&i), 5 * MS);
        }
        for i in 100..200 {
            assert_eq!(limiter.when(&i), Duration::from_secs(500));
        }
    }

    #[test]
    fn with_max_wait_passes_forget_and_num_requeues_through() {
        let limiter = WithMaxWaitRateLimiter::new(
            ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1)),
            3 * MS,
        );
        for expected in [MS, 2 * MS, 3 * MS, 3 * MS] {
            assert_eq!(limiter.when(&"a"), expected);
        }
        assert_eq!(limiter.num_requeues(&"a"), 4);
        limiter.forget(&"a");
        assert_eq!(limiter.num_requeues(&"a"), 0);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_rate_limiter_is_shared_by_all_items() {
        let limiter = BucketRateLimiter::new(10.0, 100);
        for i in 0..100 {
            assert_eq!(limiter.when(&i), Duration::ZERO);
        }
        // The 101st reservation, whatever the item, waits 100 ms; the 102nd 200 ms.
        assert_eq!(limiter.when(&"any"), 100 * MS);
        assert_eq!(limiter.when(&"other"), 200 * MS);
        assert_eq!(RateLimiter::<&str>::num_requeues(&limiter, &"any"), 0);
        RateLimiter::<&str>::forget(&limiter, &"any");
        assert_eq!(limiter.when(&"any"), 300 * MS);

        // 200 ms later two of the three tokens in debt are paid back.
        tokio::time::advance(200 * MS).await;
        assert_eq!(limiter.when(&0), 200 * MS);

        // Clones share the bucket.
        let clone = limiter.clone();
        assert_eq!(clone.when(&0), 300 * MS);
    }

    #[tokio::test(start_paused = true)]
    async fn bucket_rate_limiter_with_zero_burst_never_grants() {
        let limiter = BucketRateLimiter::new(10.0, 0);
        assert_eq!(limiter.when(&()), INFINITE_DELAY);
        let unlimited = BucketRateLimiter::from_bucket(Arc::new(TokenBucket::unlimited()));
        assert_eq!(unlimited.when(&()), Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn default_controller_rate_limiter_is_max_of_exponential_and_bucket() {
        let limiter = default_controller_rate_limiter::<String>();
        let key = |i: u32| format!("ns/item-{i}");

        // Per item: 5 ms, 10 ms, 20 ms ...
        assert_eq!(limiter.when(&key(0)), 5 * MS);
        assert_eq!(limiter.when(&key(0)), 10 * MS);
        assert_eq!(limiter.when(&key(0)), 20 * MS);
        assert_eq!(limiter.num_requeues(&key(0)), 3);

        // Overall: the bucket had 100 tokens; three are gone, 97 more items get 5 ms...
        for i in 1..98 {
            assert_eq!(limiter.when(&key(i)), 5 * MS);
        }
        // ...and the bucket is what holds back the next ones.
        assert_eq!(limiter.when(&key(98)), 100 * MS);
        assert_eq!(limiter.when(&key(99)), 200 * MS);

        limiter.forget(&key(0));
        assert_eq!(limiter.num_requeues(&key(0)), 0);
    }

    #[test]
    fn default_item_based_rate_limiter_is_1ms_to_1000s() {
        let limiter = default_item_based_rate_limiter::<u64>();
        assert_eq!(limiter.base(), MS);
        assert_eq!(limiter.max(), Duration::from_secs(1000));
        assert_eq!(limiter.when(&7), MS);
        assert_eq!(limiter.when(&7), 2 * MS);
    }

    #[test]
    fn limiters_are_usable_as_shared_trait_objects() {
        fn assert_send_sync<L: Send + Sync>(_: &L) {}
        let limiter: Arc<dyn RateLimiter<String>> = Arc::new(default_controller_rate_limiter());
        assert_send_sync(&limiter);
        let boxed: Box<dyn RateLimiter<String>> = Box::new(limiter.clone());
        assert_eq!(boxed.when(&"a".to_string()), 5 * MS);
        assert_eq!(limiter.num_requeues(&"a".to_string()), 1);
    }
}
