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
//! * `add_after` inserts into the heap directly under a lock, instead of sending to the timer
//!   goroutine over a channel of 1,000 entries; it never blocks, and a burst of adds costs one
//!   lock each rather than a channel round trip each.
//! * The timer is woken only when an add changes the earliest ready time, and needs no 10 s
//!   heartbeat: it cannot miss a wake-up (a `Notify` permit is kept until it is consumed).
//! * Moving an item's ready time earlier pushes a second heap entry instead of fixing the heap in
//!   place; the map of ready times tells which entry is current, and stale ones are skipped when
//!   they surface. This keeps a waiting item at one heap entry (ready time + key) and one map
//!   entry, about 60 bytes plus the key (the key itself is shared, not copied).
//! * Ready times are nanoseconds since the queue's creation on tokio's clock, so tests drive the
//!   queue with a paused clock.
//!
//! [`DelayingQueue`] dereferences to its [`Queue`], as client-go's embeds its `Interface`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fmt;
use std::hash::BuildHasher;
use std::ops::Deref;
use std::sync::{Arc, Weak};
use std::time::Duration;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry as TableEntry;
use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::metrics::{CounterMetric, resolve_provider};
use crate::queue::{Queue, QueueConfig, QueueItem};

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
    waiting: Mutex<Waiting<T>>,
    /// Wakes the timer task: the earliest ready time changed, or the queue stopped.
    timer: Arc<Notify>,
    epoch: Instant,
    retries: Option<Box<dyn CounterMetric>>,
}

/// Items waiting for their ready time.
///
/// Invariant: every item of `ready_at` has a heap entry with exactly that ready time; heap
/// entries whose time differs from `ready_at` (or whose item is absent) are stale and are
/// skipped. Hashes are the queue's, computed before the lock is taken and kept in the heap
/// entry, so neither a waiting add nor the timer hashes a key under the lock.
struct Waiting<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    ready_at: HashTable<(T, u64)>,
    stopped: bool,
}

/// A heap entry, ordered by ready time only.
struct Entry<T> {
    at: u64,
    hash: u64,
    item: T,
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
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
        let retries = resolve_provider(&config.name, config.metrics_provider.as_ref())
            .map(|provider| provider.new_retries_metric(&config.name));
        let inner = Arc::new(Inner {
            queue: Queue::with_config(config),
            waiting: Mutex::new(Waiting {
                heap: BinaryHeap::new(),
                ready_at: HashTable::new(),
                stopped: false,
            }),
            timer: Arc::new(Notify::new()),
            epoch: Instant::now(),
            retries,
        });
        tokio::spawn(run_timer(Arc::downgrade(&inner), inner.timer.clone()));
        Self { inner }
    }

    /// Adds `item` once `delay` has passed; at once when `delay` is zero.
    ///
    /// Ignored after shut down. If the item is already waiting, the earlier ready time wins.
    pub fn add_after(&self, item: T, delay: Duration) {
        let inner = &*self.inner;
        if inner.queue.shutting_down() {
            return;
        }
        if let Some(retries) = &inner.retries {
            retries.inc();
        }
        if delay.is_zero() {
            inner.queue.add(item);
            return;
        }
        // A delay past the end of time (a limiter may return `Duration::MAX`) never comes due.
        let at = Instant::now()
            .checked_add(delay)
            .map_or(u64::MAX, |at| inner.ticks(at));
        let hash = inner.queue.hash(&item);
        let hasher = inner.queue.hasher();
        let wake_timer = {
            let mut guard = inner.waiting.lock();
            let waiting = &mut *guard;
            if waiting.stopped {
                return;
            }
            let entry = waiting.ready_at.entry(
                hash,
                |(waiting, _)| *waiting == item,
                |(waiting, _)| hasher.hash_one(waiting),
            );
            match entry {
                TableEntry::Occupied(mut entry) => {
                    let ready_at = &mut entry.get_mut().1;
                    if *ready_at <= at {
                        return;
                    }
                    *ready_at = at;
                }
                TableEntry::Vacant(entry) => {
                    entry.insert((item.clone(), at));
                }
            }
            let earliest = waiting.heap.peek().is_none_or(|Reverse(head)| at < head.at);
            waiting.heap.push(Reverse(Entry { at, hash, item }));
            earliest
        };
        if wake_timer {
            inner.timer.notify_one();
        }
    }

    /// How many items wait for their delay to pass (items already in line are not counted).
    pub fn waiting_len(&self) -> usize {
        self.inner.waiting.lock().ready_at.len()
    }

    /// Shuts the queue down (see [`Queue::shut_down`]) and drops the items still waiting.
    pub fn shut_down(&self) {
        self.inner.stop_timer();
        self.inner.queue.shut_down();
    }

    /// Shuts the queue down, drops the items still waiting, and waits until every item handed
    /// out is done (see [`Queue::shut_down_with_drain`]).
    pub async fn shut_down_with_drain(&self) {
        self.inner.stop_timer();
        self.inner.queue.shut_down_with_drain().await;
    }

    /// [`shut_down_with_drain`](DelayingQueue::shut_down_with_drain) for plain threads.
    pub fn shut_down_with_drain_blocking(&self) {
        self.inner.stop_timer();
        self.inner.queue.shut_down_with_drain_blocking();
    }
}

impl<T> Inner<T> {
    /// A point in time as nanoseconds since the queue's creation (saturating: 584 years).
    fn ticks(&self, at: Instant) -> u64 {
        let since = at.saturating_duration_since(self.epoch).as_nanos();
        u64::try_from(since).unwrap_or(u64::MAX)
    }

    fn stop_timer(&self) {
        {
            let mut waiting = self.waiting.lock();
            waiting.stopped = true;
            waiting.heap = BinaryHeap::new();
            waiting.ready_at = HashTable::new();
        }
        self.timer.notify_one();
    }
}

impl<T: QueueItem> Inner<T> {
    /// Moves every item that has come due into the queue; returns when the next one is due, or
    /// `None` when the timer should stop.
    fn fire_due(&self, due: &mut Vec<(u64, T)>) -> Option<Option<Instant>> {
        let next = {
            let mut waiting = self.waiting.lock();
            if waiting.stopped || self.queue.shutting_down() {
                return None;
            }
            let now = self.ticks(Instant::now());
            let waiting = &mut *waiting;
            while let Some(Reverse(head)) = waiting.heap.peek() {
                if head.at > now {
                    break;
                }
                let Some(Reverse(entry)) = waiting.heap.pop() else {
                    break;
                };
                // A stale entry (its item was moved earlier and has fired, or waits for
                // another time) is dropped.
                let current = waiting
                    .ready_at
                    .find_entry(entry.hash, |(waiting, _)| *waiting == entry.item);
                if let Ok(current) = current
                    && current.get().1 == entry.at
                {
                    current.remove();
                    due.push((entry.hash, entry.item));
                }
            }
            waiting
                .heap
                .peek()
                .and_then(|Reverse(head)| self.epoch.checked_add(Duration::from_nanos(head.at)))
        };
        if !due.is_empty() {
            self.queue.add_all(due.drain(..));
        }
        Some(next)
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
    let mut due = Vec::new();
    loop {
        let next = {
            let Some(inner) = inner.upgrade() else { return };
            match inner.fire_due(&mut due) {
                Some(next) => next,
                None => return,
            }
        };
        match next {
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

impl<T> fmt::Debug for DelayingQueue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DelayingQueue")
            .field("queue", &self.inner.queue)
            .field("waiting", &self.inner.waiting.lock().ready_at.len())
            .finish()
    }
}
