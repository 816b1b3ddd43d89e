//! The priority queue: a rate-limited work queue that hands out the highest priority first.
//!
//! When a controller starts (or fails over), its informers deliver every existing object as
//! an add, and the queue fills with keys that most likely need nothing. A real change that
//! arrives then waits, in a FIFO queue, behind the whole backlog. A [`PriorityQueue`] lets the
//! event handlers add those keys at [`PRIORITY_LOW`] (see the informer crate's
//! `EnqueueHandler`), so real changes, at [`PRIORITY_NORMAL`], pass them.
//!
//! It keeps every guarantee of the other queues (an item is never held by two workers; an add
//! while an item is processed hands it out again after `done`; duplicates coalesce; shut down
//! and shut down with drain behave the same), and adds:
//!
//! * **Order**: highest priority first, FIFO within a priority.
//! * **Aging**, so nothing starves: waiting [`PriorityQueueConfig::aging`] is worth one
//!   priority level. An item added at priority `p` is handed out before every item of a higher
//!   priority `q` added more than `(q − p) × aging` after it (and before every item of its own
//!   priority or lower added after it), however many keep arriving. With the defaults, a
//!   [`PRIORITY_LOW`] key outranks fresh [`PRIORITY_NORMAL`] adds after waiting 100 s: long
//!   enough for a controller to work through the initial list of a large cluster while real
//!   changes pass it, short enough that no key waits for ever under a steady load of changes.
//!   A controller whose initial list takes longer to reconcile sets a longer aging step.
//! * **Coalescing**: an add of an item that already waits (or is flagged to go back in line)
//!   keeps the higher of the two priorities and the better place in line; delayed adds keep the
//!   earlier ready time and the higher priority.
//! * **Retries keep their priority**: [`Processing::retry`](crate::Processing::retry) (and a
//!   guard dropped without an outcome) brings the item back after its backoff at the priority
//!   it was handed out at.
//! * **Metrics**: client-go's, plus the depth per priority (`workqueue_depth_by_priority`).
//!
//! ## Where it comes from
//!
//! client-go has no priority queue. controller-runtime's (`pkg/controller/priorityqueue`)
//! has the same `AddWithOpts(priority, after, rateLimited)` and low priority for initial-list
//! adds and unchanged resyncs, but orders by priority alone, so a steady stream of normal
//! adds holds a low key back for ever; here aging bounds the wait. As in controller-runtime,
//! an add that is both delayed and rate-limited waits for the shorter of the two delays.
//!
//! It is one type with add options rather than three layers (queue, delaying, rate-limited),
//! because the options combine per add. It dereferences to a [`DelayingQueue`] for `get`,
//! `len`, `shut_down` and the rest; adds through it are at [`PRIORITY_NORMAL`].

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use clientgo_ratelimit::RateLimiter;

use crate::delaying::DelayingQueue;
use crate::line::{PRIORITY_LOW, PRIORITY_NORMAL, Priority};
use crate::queue::{Order, QueueConfig, QueueItem};

/// How an item is added to a [`PriorityQueue`]: controller-runtime's `AddOpts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddOptions {
    /// Higher goes first; [`PRIORITY_NORMAL`] by default.
    pub priority: Priority,
    /// Add the item only after this delay.
    pub after: Option<Duration>,
    /// Add the item after the delay the rate limiter gives it (recording a failure); with
    /// `after` as well, the shorter of the two delays wins.
    pub rate_limited: bool,
}

impl Default for AddOptions {
    fn default() -> Self {
        Self {
            priority: PRIORITY_NORMAL,
            after: None,
            rate_limited: false,
        }
    }
}

impl AddOptions {
    /// An immediate add at `priority`.
    pub fn priority(priority: Priority) -> Self {
        Self {
            priority,
            ..Self::default()
        }
    }

    /// An immediate add at [`PRIORITY_LOW`].
    pub fn low() -> Self {
        Self::priority(PRIORITY_LOW)
    }
}

/// Options for a new [`PriorityQueue`].
#[derive(Debug, Clone)]
pub struct PriorityQueueConfig {
    /// Name and metrics, as for the other queues.
    pub queue: QueueConfig,
    /// The wait worth one priority level (see the module docs); 1 s by default, so a
    /// [`PRIORITY_LOW`] item outranks fresh [`PRIORITY_NORMAL`] adds after 100 s.
    pub aging: Duration,
}

/// The default [`PriorityQueueConfig::aging`].
pub const DEFAULT_AGING: Duration = Duration::from_secs(1);

impl Default for PriorityQueueConfig {
    fn default() -> Self {
        Self {
            queue: QueueConfig::default(),
            aging: DEFAULT_AGING,
        }
    }
}

impl PriorityQueueConfig {
    /// A configuration with a name (for metrics) and the default aging.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            queue: QueueConfig::named(name),
            ..Self::default()
        }
    }
}

/// A rate-limited work queue that hands out the highest priority first, with aging. Cloning
/// gives another handle.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use clientgo_workqueue::{AddOptions, PriorityQueue};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let queue = PriorityQueue::new(Arc::new(clientgo_ratelimit::default_controller_rate_limiter()));
/// queue.add_with("default/listed", AddOptions::low()); // from the initial list
/// queue.add("default/changed"); // a real change, at normal priority
///
/// let first = queue.get().await.expect("not shut down");
/// assert_eq!(*first, "default/changed");
/// first.forget();
/// # }
/// ```
pub struct PriorityQueue<T> {
    queue: DelayingQueue<T>,
    limiter: Arc<dyn RateLimiter<T>>,
}

impl<T> Clone for PriorityQueue<T> {
    fn clone(&self) -> Self {
        Self {
            queue: self.queue.clone(),
            limiter: self.limiter.clone(),
        }
    }
}

impl<T: QueueItem> PriorityQueue<T> {
    /// A new priority queue without a name, with the default aging.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (its timer is a task).
    pub fn new(limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self::with_config(limiter, PriorityQueueConfig::default())
    }

    /// A new priority queue.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime (its timer is a task).
    pub fn with_config(limiter: Arc<dyn RateLimiter<T>>, config: PriorityQueueConfig) -> Self {
        let order = Order::Priority {
            aging: config.aging,
        };
        Self {
            queue: DelayingQueue::build(config.queue, Some(limiter.clone()), order),
            limiter,
        }
    }

    /// Adds `item` at [`PRIORITY_NORMAL`].
    pub fn add(&self, item: T) {
        self.queue.add(item);
    }

    /// Adds `item` with `options`. Ignored after shut down.
    pub fn add_with(&self, item: T, options: AddOptions) {
        let mut after = options.after;
        if options.rate_limited && !self.queue.shutting_down() {
            let backoff = self.limiter.when(&item);
            after = Some(after.map_or(backoff, |after| after.min(backoff)));
            self.queue.trace_backoff(&item, backoff, &*self.limiter);
        } else if let Some(delay) = after {
            self.queue.trace_add_after(&item, delay);
        }
        match after {
            Some(delay) => self.queue.add_after_with(item, delay, options.priority),
            None => self.queue.add_with(item, options.priority),
        }
    }

    /// Adds `item` at [`PRIORITY_NORMAL`] after the delay the rate limiter gives it.
    pub fn add_rate_limited(&self, item: T) {
        self.add_with(
            item,
            AddOptions {
                rate_limited: true,
                ..AddOptions::default()
            },
        );
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

impl<T> Deref for PriorityQueue<T> {
    type Target = DelayingQueue<T>;

    fn deref(&self) -> &DelayingQueue<T> {
        &self.queue
    }
}

impl<T: QueueItem> fmt::Debug for PriorityQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PriorityQueue")
            .field("queue", &self.queue)
            .finish_non_exhaustive()
    }
}
