//! The work queue: client-go's `util/workqueue/queue.go`.
//!
//! A [`Queue`] hands keys to workers with client-go's guarantees:
//!
//! * **Stingy**: an item is never handed to two workers at once, and adding an item that is
//!   already waiting does nothing (duplicates coalesce).
//! * **Fair**: distinct items come out in the order they were first added.
//! * **Level-triggered**: an item added while a worker processes it is handed out again once the
//!   worker is done, so the latest change is always seen.
//! * **Shut down**: after [`shut_down`](Queue::shut_down) adds are ignored, the items already
//!   waiting are still handed out, and then `get` returns `None` to tell workers to stop.
//!
//! ## Where it differs from client-go
//!
//! * `get` returns a [`Processing`] guard instead of the bare item. Dropping the guard is the
//!   `Done` call, so it cannot be forgotten, not even when the worker returns early or panics.
//!   [`Processing::detach`] opts out for code that must call [`Queue::done`] itself.
//! * Waiting is a FIFO of wakers under the queue's lock (see `waiters.rs`) rather than a
//!   condition variable, so async tasks and threads ([`Queue::get_blocking`]) share it.
//! * An item's state is one table entry instead of client-go's separate `dirty` and
//!   `processing` sets and the delaying queue's map: one hash lookup per operation, computed
//!   before the lock is taken (see `state.rs`, which also lists the table's invariants).
//!
//! ## Invariants, kept under the lock
//!
//! 1. Every item pushed in line while a getter is parked wakes one getter; a woken getter that
//!    goes away without taking an item passes the wake-up on (see [`Get`]'s `Drop`).
//! 2. Drain waiters are woken whenever no item is being processed any more, or the drain is
//!    cancelled.
//! 3. `closed` is set in the same critical section that sets `shutting_down`, and never
//!    cleared: [`Queue::shutting_down`] reads it without the lock, which keeps the delaying
//!    queue's `add_after` off the lock once the queue is shut down.

use std::fmt;
use std::future::Future;
use std::hash::{BuildHasher, Hash};
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

use crate::metrics::{MetricsProvider, QueueMetrics, resolve_provider};
use crate::state::{Fired, ItemHasher, State, Wakeups};
use crate::sync::{Arc, AtomicBool, Mutex, block_on};

/// The bounds every queue item satisfies: a cheap-to-clone key such as `Arc<str>`.
pub trait QueueItem: Hash + Eq + Clone + Send + 'static {}
impl<T: Hash + Eq + Clone + Send + 'static> QueueItem for T {}

/// Options for a new queue: client-go's `TypedQueueConfig`.
#[derive(Clone, Default)]
pub struct QueueConfig {
    /// The queue's name, the `name` label of its metrics. A queue without a name has no metrics.
    pub name: String,
    /// Where the queue's metrics go; `None` uses the provider given to
    /// [`set_provider`](crate::set_provider), if any.
    pub metrics_provider: Option<StdArc<dyn MetricsProvider>>,
}

impl QueueConfig {
    /// A configuration with only a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            metrics_provider: None,
        }
    }

    /// Sends this queue's metrics to `provider`.
    pub fn with_metrics_provider(mut self, provider: StdArc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = Some(provider);
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics_provider", &self.metrics_provider.is_some())
            .finish()
    }
}

/// A work queue of keys. Cloning gives another handle to the same queue.
///
/// # Examples
///
/// ```
/// use clientgo_workqueue::Queue;
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let queue: Queue<&str> = Queue::new();
/// queue.add("default/web");
/// queue.add("default/web"); // coalesces with the waiting one
/// assert_eq!(queue.len(), 1);
///
/// let item = queue.get().await.expect("not shut down");
/// assert_eq!(*item, "default/web");
/// drop(item); // done: the item may be handed out again
///
/// queue.shut_down();
/// assert!(queue.get().await.is_none());
/// # });
/// ```
pub struct Queue<T> {
    shared: Arc<Shared<T>>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    hasher: ItemHasher,
    /// `state.shutting_down`, readable without the lock (set under it, never cleared).
    closed: AtomicBool,
}

fn wake_all(wakers: impl IntoIterator<Item = Waker>) {
    wakers.into_iter().for_each(Waker::wake);
}

impl<T: QueueItem> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

impl<T: QueueItem> Queue<T> {
    /// A new queue without a name (and so without metrics): client-go's `NewTyped`.
    pub fn new() -> Self {
        Self::with_config(QueueConfig::default())
    }

    /// A new queue: client-go's `NewTypedWithConfig`.
    ///
    /// A named queue with a metrics provider refreshes its unfinished-work gauges every 500 ms
    /// from a tokio task; created outside a tokio runtime, it reports every other metric but
    /// leaves those two at zero (and says so in a warning).
    pub fn with_config(config: QueueConfig) -> Self {
        let provider = resolve_provider(&config.name, config.metrics_provider.as_ref());
        let metrics = provider.map(|provider| QueueMetrics::new(&*provider, &config.name));
        let has_metrics = metrics.is_some();
        let queue = Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State::new(metrics)),
                closed: AtomicBool::new(false),
                hasher: ItemHasher::default(),
            }),
        };
        if has_metrics {
            queue.spawn_unfinished_work_updater(&config.name);
        }
        queue
    }

    #[cfg(not(clientgo_loom))]
    fn spawn_unfinished_work_updater(&self, name: &str) {
        use crate::metrics::UNFINISHED_WORK_UPDATE_PERIOD;
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            tracing::warn!(
                queue = name,
                "work queue created outside a tokio runtime: unfinished work metrics stay at zero"
            );
            return;
        };
        let shared = Arc::downgrade(&self.shared);
        runtime.spawn(async move {
            let mut ticks = tokio::time::interval(UNFINISHED_WORK_UPDATE_PERIOD);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                let Some(shared) = shared.upgrade() else {
                    return;
                };
                let state = shared.state.lock();
                if state.shutting_down {
                    return;
                }
                if let Some(metrics) = &state.metrics {
                    metrics.update_unfinished_work();
                }
            }
        });
    }

    #[cfg(clientgo_loom)]
    fn spawn_unfinished_work_updater(&self, _name: &str) {}

    /// Marks `item` as needing processing.
    ///
    /// Ignored after shut down. An item already waiting stays where it is; an item being
    /// processed is handed out again after its worker is done.
    pub fn add(&self, item: T) {
        let hash = self.hash(&item);
        let wakeup = {
            let mut state = self.shared.state.lock();
            if state.shutting_down {
                return;
            }
            state.add(&self.shared.hasher, hash, item)
        };
        if let Some(waker) = wakeup {
            waker.wake();
        }
    }

    fn hash(&self, item: &T) -> u64 {
        self.shared.hasher.hash_one(item)
    }

    /// Schedules an add of `item` at `at` (nanoseconds on the delaying queue's clock), keeping
    /// an earlier pending one. Returns whether the timer must re-arm for an earlier time.
    pub(crate) fn add_at(&self, item: T, at: u64) -> bool {
        if self.shutting_down() {
            return false;
        }
        let hash = self.hash(&item);
        let mut state = self.shared.state.lock();
        if state.shutting_down {
            return false;
        }
        state.add_after(&self.shared.hasher, hash, item, at)
    }

    /// Adds the delayed items due at `now`, at most `limit` of them in one critical section.
    pub(crate) fn fire_due(&self, now: u64, limit: usize) -> Fired {
        let mut wakeups = Wakeups::new();
        let fired = self.shared.state.lock().fire_due(now, limit, &mut wakeups);
        wake_all(wakeups);
        fired
    }

    /// How many items have a delayed add pending.
    pub(crate) fn delayed_len(&self) -> usize {
        self.shared.state.lock().delayed_len()
    }

    /// Waits for the next item; `None` once the queue is shut down and empty.
    ///
    /// The returned guard marks the item done when dropped. The future is cancel-safe: dropped
    /// before it completes, it takes nothing from the queue.
    pub fn get(&self) -> Get<'_, T> {
        Get {
            queue: self,
            waiter: None,
        }
    }

    /// [`get`](Queue::get) for plain threads: parks the calling thread until an item is ready.
    ///
    /// Do not call it from inside an async task: it blocks the runtime's thread.
    pub fn get_blocking(&self) -> Option<Processing<'_, T>> {
        block_on(self.get())
    }

    /// Marks `item` as done processing: needed only after [`Processing::detach`].
    ///
    /// If the item was added again while it was processed, it goes back in line. Calling it for
    /// an item that is not being processed does nothing.
    pub fn done(&self, item: &T) {
        self.done_hashed(self.hash(item), item);
    }

    fn done_hashed(&self, hash: u64, item: &T) {
        let mut wakeups = Wakeups::new();
        self.shared.state.lock().done(hash, item, &mut wakeups);
        wake_all(wakeups);
    }

    /// How many items wait in line (items being processed are not counted).
    pub fn len(&self) -> usize {
        self.shared.state.lock().line.len()
    }

    /// Whether no item waits in line.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the queue: later adds are ignored, pending delayed adds are dropped, and once the
    /// items still in line are handed out, `get` returns `None`. Does not wait for workers;
    /// cancels a pending [`shut_down_with_drain`](Queue::shut_down_with_drain).
    pub fn shut_down(&self) {
        let wakeups: Wakeups = {
            let mut state = self.shared.state.lock();
            state.clear_delayed();
            state.shutting_down = true;
            self.shared.closed.store(true, Ordering::Release);
            state.drain = false;
            let state = &mut *state;
            state
                .getters
                .drain()
                .chain(state.drainers.drain())
                .collect()
        };
        wake_all(wakeups);
    }

    /// Stops the queue like [`shut_down`](Queue::shut_down), then waits until every item handed
    /// out has been marked done. Items still in line are not waited for.
    ///
    /// Workers must keep dropping their [`Processing`] guards, or this never returns. A
    /// concurrent `shut_down` ends the wait early.
    pub fn shut_down_with_drain(&self) -> Drain<'_, T> {
        let wakeups: Wakeups = {
            let mut state = self.shared.state.lock();
            state.clear_delayed();
            state.shutting_down = true;
            self.shared.closed.store(true, Ordering::Release);
            state.drain = true;
            state.getters.drain().collect()
        };
        wake_all(wakeups);
        Drain {
            queue: self,
            waiter: None,
        }
    }

    /// [`shut_down_with_drain`](Queue::shut_down_with_drain) for plain threads.
    pub fn shut_down_with_drain_blocking(&self) {
        block_on(self.shut_down_with_drain());
    }

    /// Whether the queue has been shut down.
    pub fn shutting_down(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }
}

impl<T> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("Queue")
            .field("len", &state.line.len())
            .field("processing", &state.processing)
            .field("shutting_down", &state.shutting_down)
            .finish()
    }
}

/// The future returned by [`Queue::get`].
#[must_use = "futures do nothing unless awaited"]
pub struct Get<'q, T: QueueItem> {
    queue: &'q Queue<T>,
    waiter: Option<u64>,
}

impl<'q, T: QueueItem> Future for Get<'q, T> {
    type Output = Option<Processing<'q, T>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let queue = self.queue;
        let mut state = queue.shared.state.lock();
        if let Some((hash, item)) = state.take_next() {
            if let Some(id) = self.waiter.take() {
                state.getters.remove(id);
            }
            return Poll::Ready(Some(Processing {
                queue,
                hash,
                item: Some(item),
            }));
        }
        if state.shutting_down {
            if let Some(id) = self.waiter.take() {
                state.getters.remove(id);
            }
            return Poll::Ready(None);
        }
        state.getters.register(&mut self.waiter, cx.waker());
        Poll::Pending
    }
}

impl<T: QueueItem> Drop for Get<'_, T> {
    fn drop(&mut self) {
        let Some(id) = self.waiter else { return };
        let wakeup = {
            let mut state = self.queue.shared.state.lock();
            let was_woken = !state.getters.remove(id);
            // A wake-up meant for this getter must not be lost with it.
            if was_woken && !state.line.is_empty() {
                state.getters.pop()
            } else {
                None
            }
        };
        if let Some(waker) = wakeup {
            waker.wake();
        }
    }
}

/// The future returned by [`Queue::shut_down_with_drain`].
#[must_use = "the drain waits only when awaited"]
pub struct Drain<'q, T: QueueItem> {
    queue: &'q Queue<T>,
    waiter: Option<u64>,
}

impl<T: QueueItem> Future for Drain<'_, T> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let queue = self.queue;
        let mut state = queue.shared.state.lock();
        if state.processing == 0 || !state.drain {
            if let Some(id) = self.waiter.take() {
                state.drainers.remove(id);
            }
            return Poll::Ready(());
        }
        state.drainers.register(&mut self.waiter, cx.waker());
        Poll::Pending
    }
}

impl<T: QueueItem> Drop for Drain<'_, T> {
    fn drop(&mut self) {
        if let Some(id) = self.waiter {
            self.queue.shared.state.lock().drainers.remove(id);
        }
    }
}

/// An item handed out by [`Queue::get`]; dropping it marks the item done.
///
/// It dereferences to the item. Keep it alive for as long as the item is processed: while it
/// lives, no other worker gets the same item.
#[must_use = "dropping the guard at once marks the item done before it is processed"]
pub struct Processing<'q, T: QueueItem> {
    queue: &'q Queue<T>,
    hash: u64,
    // `Some` until `detach` takes it; `Drop` then has nothing to do.
    item: Option<T>,
}

impl<T: QueueItem> Processing<'_, T> {
    /// The item being processed.
    pub fn item(&self) -> &T {
        self.item
            .as_ref()
            .expect("a live guard always holds its item")
    }

    /// Marks the item done now (the same as dropping the guard).
    pub fn done(self) {}

    /// Takes the item out of the guard without marking it done.
    ///
    /// The caller takes over the guard's duty: it must call [`Queue::done`] with the item, or
    /// the item is never handed out again.
    pub fn detach(mut self) -> T {
        self.item
            .take()
            .expect("a live guard always holds its item")
    }
}

impl<T: QueueItem> std::ops::Deref for Processing<'_, T> {
    type Target = T;

    fn deref(&self) -> &T {
        self.item()
    }
}

impl<T: QueueItem + fmt::Debug> fmt::Debug for Processing<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Processing").field(&self.item).finish()
    }
}

impl<T: QueueItem> Drop for Processing<'_, T> {
    fn drop(&mut self) {
        if let Some(item) = self.item.take() {
            self.queue.done_hashed(self.hash, &item);
        }
    }
}
