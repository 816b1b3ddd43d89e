//! The rate-limited queue: client-go's `util/workqueue/rate_limiting_queue.go`.
//!
//! A [`RateLimitingQueue`] is a [`DelayingQueue`] that asks a [`RateLimiter`] how long an item
//! should wait before it is retried. The controller pattern ends each hold with the
//! [`Processing`](crate::Processing) guard's outcome:
//!
//! * on success, [`forget`](crate::Processing::forget): the item's failure history is dropped
//!   and the item is done (client-go's `Forget` then `Done`);
//! * on failure, [`retry`](crate::Processing::retry): the item comes back after a delay that
//!   grows with its failures (client-go's `AddRateLimited` then `Done`).
//!
//! A guard dropped without an outcome (a panic, an aborted task) is a failure: the item is
//! retried after its backoff, as `retry` does, rather than marked done and lost.
//! [`add_rate_limited`](RateLimitingQueue::add_rate_limited) and
//! [`forget`](RateLimitingQueue::forget) remain for items a worker does not hold.
//!
//! It dereferences to its [`DelayingQueue`], as client-go's embeds its `DelayingInterface`.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use clientgo_ratelimit::RateLimiter;

use crate::delaying::DelayingQueue;
use crate::queue::{Order, QueueConfig, QueueItem};

/// A work queue that delays retries according to a [`RateLimiter`]. Cloning gives another
/// handle.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
/// use clientgo_ratelimit::ItemExponentialFailureRateLimiter;
/// use clientgo_workqueue::RateLimitingQueue;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = ItemExponentialFailureRateLimiter::new(
///     Duration::from_millis(5),
///     Duration::from_secs(1000),
/// );
/// let queue = RateLimitingQueue::new(Arc::new(limiter));
/// queue.add("default/web");
///
/// let item = queue.get().await.expect("not shut down");
/// // The reconcile failed: try again later (after 5 ms, then 10 ms, ...).
/// item.retry();
/// assert_eq!(queue.num_requeues(&"default/web"), 1);
///
/// let item = queue.get().await.expect("not shut down");
/// // This time it worked: forget its failures.
/// item.forget();
/// assert_eq!(queue.num_requeues(&"default/web"), 0);
/// # }
/// ```
pub struct RateLimitingQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for RateLimitingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            limiter: self.limiter.clone(),
        }
    }
}

impl<T: QueueItem> RateLimitingQueue<T> {
    /// A new rate-limited queue without a name: client-go's `NewTypedRateLimitingQueue`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (its delaying queue spawns a timer task).
    pub fn new(limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self::with_config(limiter, QueueConfig::default())
    }

    /// A new rate-limited queue: client-go's `NewTypedRateLimitingQueueWithConfig`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (its delaying queue spawns a timer task).
    pub fn with_config(limiter: Arc<dyn RateLimiter<T>>, config: QueueConfig) -> Self {
        Self {
            queue: DelayingQueue::build(config, Some(limiter.clone()), Order::Fifo),
            limiter,
        }
    }

    /// A new rate-limited queue with client-go's default controller rate limiter
    /// (`DefaultTypedControllerRateLimiter`: per-item exponential backoff from 5 ms to
    /// 1,000 s, and an overall bucket of 10 per second with a burst of 100).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (its delaying queue spawns a timer task).
    pub fn with_default_rate_limiter() -> Self
    where
        T: Sync,
    {
        Self::new(Arc::new(
            clientgo_ratelimit::default_controller_rate_limiter(),
        ))
    }

    /// Adds `item` after the delay the rate limiter gives it (which records a failure).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.limiter.when(&item);
        self.queue.trace_backoff(&item, delay, &*self.limiter);
        self.queue
            .add_after_with(item, delay, crate::line::PRIORITY_NORMAL);
    }

    /// Drops the failure history of `item`. It does not mark the item done.
    pub fn forget(&self, item: &T) {
        self.limiter.forget(item);
    }

    /// How many times `item` has been re-added through the rate limiter since it was forgotten.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.limiter.num_requeues(item)
    }
}

impl<T> Deref for RateLimitingQueue<T> {
    type Target = DelayingQueue<T>;

    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

impl<T: QueueItem> fmt::Debug for RateLimitingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimitingQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}
