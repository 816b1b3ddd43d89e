//! The delaying queue: client-go's `util/workqueue/delaying_queue.go`.
//!
//! [`DelayingQueue::add_after`] puts an item in line once a delay has passed. Waiting items sit
//! in one min-heap ordered by ready time, watched by **one** timer task for the whole queue: the
//! task sleeps until the earliest ready time, moves every item that has come due into the queue
//! in one batch, and sleeps again. An item waits at most once: adding it again while it waits
//! keeps the earlier of the two ready times.
//!
//! ## Where it differs from client-go
//!
//! * Waiting items live in the queue's own state, under its lock: the item's table entry holds
//!   its ready time next to its place in line (see `state.rs`), and a min-heap orders the ready
//!   times. `add_after` never blocks (client-go sends to the timer goroutine over a channel of
//!   1,000 entries), and the timer moves a due item into line with one lookup of its entry.
//! * The timer is woken only when an add makes a ready time the earliest, and needs no 10 s
//!   heartbeat: it cannot miss a wake-up (a `Notify` permit is kept until it is consumed). It
//!   moves due items in batches of at most [`FIRE_BATCH`], yielding between batches, so a
//!   burst of due items never holds the lock for long.
//! * A waiting item costs one heap entry (ready time, hash, key) and, unless the item is in
//!   line or being processed anyway, one table entry (key and one word): about 85 bytes with
//!   the tables' slack, plus the key itself, which is shared, not copied.
//! * Ready times are nanoseconds since the queue's creation on tokio's clock, so tests drive the
//!   queue with a paused clock.
//!
//! [`DelayingQueue`] dereferences to its [`Queue`], as client-go's embeds its `Interface`.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, Weak};
use std::time::Duration;

use clientgo_ratelimit::RateLimiter;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::line::{PRIORITY_NORMAL, Priority};
use crate::metrics::{CounterMetric, resolve_provider};
use crate::queue::journey;
use crate::queue::{Delays, Drain, Order, Queue, QueueConfig, QueueItem};
use crate::state::Fired;

/// How many due items the timer moves into line per critical section.
pub(crate) const FIRE_BATCH: usize = 1024;

/// A work queue whose items can be added after a delay. Cloning gives another handle.
///
/// Creating one spawns its timer task, so it must happen inside a tokio runtime; the task ends
/// when the queue is shut down or its last handle is dropped.
///
/// # Examples
///
/// ```
/// use std::time::Duration;
/// use clientgo_workqueue::DelayingQueue;
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = DelayingQueue::new();
/// queue.add_after("default/web", Duration::from_millis(50));
/// assert_eq!(queue.len(), 0);
///
/// let item = queue.get().await.expect("not shut down"); // waits the 50 ms
/// assert_eq!(*item, "default/web");
/// # }
/// ```
pub struct DelayingQueue<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    queue: Queue<T>,
    /// Wakes the timer task: the earliest ready time changed, or the queue stopped.
    timer: Arc<Notify>,
    epoch: Instant,
    retries: Option<Box<dyn CounterMetric>>,
}

impl<T> Clone for DelayingQueue<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T: QueueItem> Default for DelayingQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: QueueItem> DelayingQueue<T> {
    /// A new delaying queue without a name (and so without metrics).
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A new delaying queue: client-go's `NewTypedDelayingQueueWithConfig`.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime, as `tokio::spawn` does.
    pub fn with_config(config: QueueConfig) -> Self {
        Self::build(config, None, Order::Fifo)
    }

    /// A new delaying queue handing items out in `order`; with a `limiter`, the items its
    /// workers fail (or abandon) come back after the limiter's backoff.
    pub(crate) fn build(
        config: QueueConfig,
        limiter: Option<Arc<dyn RateLimiter<T>>>,
        order: Order,
    ) -> Self {
        let retries = resolve_provider(&config.name, config.metrics_provider.as_ref())
            .map(|provider| provider.new_retries_metric(&config.name));
        let inner = Arc::new_cyclic(|weak: &Weak<Inner<T>>| {
            let delays = Box::new(QueueDelays {
                queue: weak.clone(),
                limiter,
            });
            Inner {
                queue: Queue::build(config, Some(delays), order),
                timer: Arc::new(Notify::new()),
                epoch: Instant::now(),
                retries,
            }
        });
        tokio::spawn(run_timer(Arc::downgrade(&inner), inner.timer.clone()));
        Self { inner }
    }

    /// Adds `item` once `delay` has passed; at once when `delay` is zero.
    ///
    /// Ignored after shut down. If the item is already waiting, the earlier ready time wins.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.trace_add_after(&item, delay);
        self.inner.add_after(item, delay, PRIORITY_NORMAL);
    }

    /// The journey event of an `add_after`.
    pub(crate) fn trace_add_after(&self, item: &T, delay: Duration) {
        if journey::enabled() {
            let queue = &self.inner.queue;
            journey::add_after(queue.name(), item, queue.hash(item), delay);
        }
    }

    /// The journey event of a rate-limited add: the delay `limiter` chose.
    pub(crate) fn trace_backoff(&self, item: &T, delay: Duration, limiter: &dyn RateLimiter<T>) {
        self.inner.trace_backoff(item, delay, limiter);
    }

    /// [`add_after`](DelayingQueue::add_after) with a priority (used by a priority queue).
    pub(crate) fn add_after_with(&self, item: T, delay: Duration, priority: Priority) {
        self.inner.add_after(item, delay, priority);
    }

    /// How many items wait for their delay to pass (items already in line are not counted).
    pub fn waiting_len(&self) -> usize {
        self.inner.queue.delayed_len()
    }

    /// Shuts the queue down (see [`Queue::shut_down`]) and drops the items still waiting.
    pub fn shut_down(&self) {
        self.inner.queue.shut_down();
        self.inner.timer.notify_one();
    }

    /// Shuts the queue down and drops the items still waiting, at once; the returned future
    /// waits until every item handed out is done (see [`Queue::shut_down_with_drain`]).
    pub fn shut_down_with_drain(&self) -> Drain<'_, T> {
        let drain = self.inner.queue.shut_down_with_drain();
        self.inner.timer.notify_one();
        drain
    }

    /// [`shut_down_with_drain`](DelayingQueue::shut_down_with_drain) for plain threads.
    pub fn shut_down_with_drain_blocking(&self) {
        crate::sync::block_on(self.shut_down_with_drain());
    }
}

impl<T: QueueItem> Inner<T> {
    fn add_after(&self, item: T, delay: Duration, priority: Priority) {
        let inner = self;
        if inner.queue.shutting_down() {
            return;
        }
        if let Some(retries) = &inner.retries {
            retries.inc();
        }
        if delay.is_zero() {
            inner.queue.add_with(item, priority);
            return;
        }
        // A delay past the end of time (a limiter may return `Duration::MAX`) never comes due.
        let at = Instant::now()
            .checked_add(delay)
            .map_or(u64::MAX, |at| inner.ticks(at));
        if inner.queue.add_at(item, at, priority) {
            inner.timer.notify_one();
        }
    }
}

/// The delaying queue's part in the outcomes of its items: with a rate limiter, the backoff
/// of failed items (the limiter's delay, then `add_after`); for any, requeues after a delay.
struct QueueDelays<T> {
    /// Weak: the queue owns this (through its core), not the other way round.
    queue: Weak<Inner<T>>,
    limiter: Option<Arc<dyn RateLimiter<T>>>,
}

impl<T: QueueItem> Delays<T> for QueueDelays<T> {
    fn retry(&self, item: &T, priority: Priority) -> bool {
        let (Some(limiter), Some(inner)) = (&self.limiter, self.queue.upgrade()) else {
            return false;
        };
        let delay = limiter.when(item);
        inner.trace_backoff(item, delay, &**limiter);
        inner.add_after(item.clone(), delay, priority);
        true
    }

    fn forget(&self, item: &T) {
        if let Some(limiter) = &self.limiter {
            limiter.forget(item);
        }
    }

    fn after(&self, item: &T, delay: Duration, priority: Priority) -> bool {
        let Some(inner) = self.queue.upgrade() else {
            return false;
        };
        if journey::enabled() {
            journey::add_after(inner.queue.name(), item, inner.queue.hash(item), delay);
        }
        inner.add_after(item.clone(), delay, priority);
        true
    }
}

impl<T: QueueItem> Inner<T> {
    fn trace_backoff(&self, item: &T, delay: Duration, limiter: &dyn RateLimiter<T>) {
        if journey::enabled() {
            let queue = &self.queue;
            let failures = limiter.num_requeues(item);
            journey::backoff(queue.name(), item, queue.hash(item), delay, failures);
        }
    }
}

impl<T> Inner<T> {
    /// A point in time as nanoseconds since the queue's creation (saturating: 584 years).
    fn ticks(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(since).unwrap_or(u64::MAX)
    }
}

impl<T> Drop for Inner<T> {
    fn drop(&mut self) {
        // The timer task holds only a weak handle: wake it so it sees the queue is gone.
        self.timer.notify_one();
    }
}

/// The timer task: one per delaying queue.
async fn run_timer<T: QueueItem>(inner: Weak<Inner<T>>, timer: Arc<Notify>) {
    loop {
        let fired = {
            let Some(inner) = inner.upgrade() else { return };
            if inner.queue.shutting_down() {
                return;
            }
            let now = inner.ticks(Instant::now());
            match inner.queue.fire_due(now, FIRE_BATCH) {
                Fired::NextAt(at) => inner.epoch.checked_add(Duration::from_nanos(at)),
                Fired::Empty => None,
                Fired::More => {
                    tokio::task::yield_now().await;
                    continue;
                }
            }
        };
        match fired {
            Some(at) => {
                let _ = tokio::time::timeout_at(at, timer.notified()).await;
            }
            None => timer.notified().await,
        }
    }
}

impl<T> Deref for DelayingQueue<T> {
    type Target = Queue<T>;

    fn deref(&self) -> &Queue<T> {
        &self.inner.queue
    }
}

impl<T: QueueItem> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.inner.queue)
            .field("waiting", &self.inner.queue.delayed_len())
            .finish()
    }
}
