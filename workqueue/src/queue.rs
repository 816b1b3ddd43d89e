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
//! * `get` returns a [`Processing`] guard instead of the bare item, and the guard is the only
//!   way to mark the item done: there is no `Done(item)` call that could release a hold some
//!   other worker has since taken on the same item. The worker ends the hold with an outcome:
//!   [`done`](Processing::done), [`forget`](Processing::forget) (success: also drop the item's
//!   failure history) or [`retry`](Processing::retry) (failure: back in line, rate-limited
//!   where the queue has a rate limiter).
//! * A guard dropped without an outcome (the worker panicked, returned early, or its task was
//!   aborted) is a failure, not a success: the item is re-queued, after its backoff on a
//!   [`RateLimitingQueue`](crate::RateLimitingQueue), at once on other queues, so the change it
//!   stood for is not lost. client-go's worker marks the item done in a `defer` and loses it
//!   unless the worker re-added it; and client-go crashes the process on a panic
//!   (`HandleCrash`), which here is the caller's choice: a panic that unwinds through the
//!   worker drops the guard like any other early exit, and the item comes back.
//! * Waiting is a FIFO of wakers under the queue's lock (see `waiters.rs`) rather than a
//!   condition variable, so async tasks and threads ([`Queue::get_blocking`]) share it.
//! * An item's state is one table entry instead of client-go's separate `dirty` and
//!   `processing` sets and the delaying queue's map: one hash lookup per operation, computed
//!   before the lock is taken (see `state.rs`, which also lists the table's invariants).
//!
//! ## Invariants, kept under the lock
//!
//! 1. While items wait in line and a getter is parked, one getter has been woken and is on its
//!    way: an item pushed in line wakes one getter unless a woken one has not come back yet; a
//!    woken getter that takes an item and leaves items behind wakes the next; one that goes
//!    away without taking an item passes the wake-up on (see [`Get`]'s `Drop`); one that finds
//!    nothing parks again (see `waiters.rs`).
//! 2. Drain waiters are woken whenever no item is being processed any more, or the drain is
//!    cancelled.
//! 3. `closed` is set in the same critical section that sets `shutting_down`, and never
//!    cleared: [`Queue::shutting_down`] reads it without the lock, which keeps the delaying
//!    queue's `add_after` off the lock once the queue is shut down.

use clientgo_journey::DoneOutcome;
use std::fmt;
use std::future::Future;
use std::hash::BuildHasher;
use std::pin::Pin;
use std::sync::Arc as StdArc;
use std::sync::atomic::Ordering;
use std::task::{Context, Poll, Waker};

use crate::item::ItemHasher;
pub use crate::item::QueueItem;
use crate::line::{DepthByPriority, Line, PRIORITY_NORMAL, Priority, PriorityLine};
use crate::metrics::{MetricsProvider, QueueMetrics, resolve_provider};
use crate::state::{Fired, State, TakenDelayed, Wakeups};
use crate::sync::{Arc, AtomicBool, Mutex, block_on};

pub(crate) mod journey;

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

/// What a queue with delays (and maybe a rate limiter) does for an item handed back: the
/// delaying queue's part of the [`Processing`] outcomes.
pub(crate) trait Delays<T>: Send + Sync {
    /// Schedules `item` (still held) to be added again after its backoff, with the priority
    /// it was handed out at. Returns false when there is no rate limiter or the queue it
    /// belongs to is gone, so the caller falls back to adding it at once.
    fn retry(&self, item: &T, priority: Priority) -> bool;
    /// Drops the failure history of `item` (nothing without a rate limiter).
    fn forget(&self, item: &T);
    /// Schedules `item` to be added again once `delay` has passed. Returns false when the
    /// queue it belongs to is gone.
    fn after(&self, item: &T, delay: std::time::Duration, priority: Priority) -> bool;
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
/// item.done(); // the item may be handed out again
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
    /// The queue's name, for its journey events.
    name: Box<str>,
    hasher: ItemHasher,
    /// `state.shutting_down`, readable without the lock (set under it, never cleared).
    closed: AtomicBool,
    /// The delaying queue's part in [`Processing::retry`], [`Processing::forget`] and
    /// [`Processing::requeue_after`], if the queue has delays.
    delays: Option<Box<dyn Delays<T>>>,
}

/// The order in which a queue hands out its waiting items.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Order {
    /// First added, first handed out (client-go's order).
    Fifo,
    /// Highest priority first, FIFO within a priority; waiting `aging` is worth one priority
    /// level (see `line.rs`).
    Priority { aging: std::time::Duration },
}

/// How many taken delayed adds a shut down releases per critical section.
const RELEASE_BATCH: usize = 1024;

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
        Self::build(config, None, Order::Fifo)
    }

    /// A new queue that hands items out in `order`, its failed and requeued items going
    /// through `delays`.
    pub(crate) fn build(
        config: QueueConfig,
        delays: Option<Box<dyn Delays<T>>>,
        order: Order,
    ) -> Self {
        let provider = resolve_provider(&config.name, config.metrics_provider.as_ref());
        let metrics = provider
            .as_ref()
            .map(|provider| QueueMetrics::new(&**provider, &config.name));
        let has_metrics = metrics.is_some();
        let hasher = ItemHasher::default();
        let line = match order {
            Order::Fifo => Line::Fifo(Default::default()),
            Order::Priority { aging } => {
                let depth = provider.map(|provider| DepthByPriority::new(provider, &config.name));
                Line::Priority(Box::new(PriorityLine::new(hasher.clone(), aging, depth)))
            }
        };
        let queue = Self {
            shared: Arc::new(Shared {
                state: Mutex::new(State::new(metrics, line)),
                name: config.name.as_str().into(),
                closed: AtomicBool::new(false),
                hasher,
                delays,
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
        self.add_with(item, PRIORITY_NORMAL);
    }

    /// [`add`](Queue::add) with a priority, which only a priority queue's line uses.
    pub(crate) fn add_with(&self, item: T, priority: Priority) {
        let hash = self.hash(&item);
        let wakeup = {
            let mut state = self.shared.state.lock();
            if state.shutting_down {
                return;
            }
            if journey::enabled() {
                // Under the lock, so that the event comes before the get it makes possible.
                let outcome = state.add_outcome(hash, &item);
                let copy = item.clone();
                let wakeup = state.add_with(&self.shared.hasher, hash, item, priority);
                let depth = state.waiting_len();
                journey::add(&self.shared.name, &copy, hash, outcome, depth);
                wakeup
            } else {
                state.add_with(&self.shared.hasher, hash, item, priority)
            }
        };
        if let Some(waker) = wakeup {
            waker.wake();
        }
    }

    /// The queue's name (empty for an unnamed queue).
    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    pub(crate) fn hash(&self, item: &T) -> u64 {
        self.shared.hasher.hash_one(item)
    }

    /// Schedules an add of `item` at `at` (nanoseconds on the delaying queue's clock), keeping
    /// an earlier pending one. Returns whether the timer must re-arm for an earlier time.
    pub(crate) fn add_at(&self, item: T, at: u64, priority: Priority) -> bool {
        if self.shutting_down() {
            return false;
        }
        let hash = self.hash(&item);
        let mut state = self.shared.state.lock();
        if state.shutting_down {
            return false;
        }
        state.add_after_with(&self.shared.hasher, hash, item, at, priority)
    }

    /// Adds the delayed items due at `now`, at most `limit` of them in one critical section.
    pub(crate) fn fire_due(&self, now: u64, limit: usize) -> Fired {
        let mut wakeups = Wakeups::new();
        let trace = journey::enabled().then_some(&*self.shared.name);
        let fired = self
            .shared
            .state
            .lock()
            .fire_due(now, limit, &mut wakeups, trace);
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

    /// Ends a hold: the item may be handed out again (at once if it was added meanwhile).
    /// `outcome` names the end in the journey event.
    fn done_hashed(&self, hash: u64, item: &T, outcome: DoneOutcome) {
        let mut wakeups = Wakeups::new();
        {
            let mut state = self.shared.state.lock();
            state.done(hash, item, &mut wakeups);
            journey::done(&self.shared.name, item, hash, outcome);
        }
        wake_all(wakeups);
    }

    /// Ends a failed hold: the item comes back after its backoff, or at once on a queue
    /// without a rate limiter. After shut down it is only marked done.
    fn retry_hashed(&self, hash: u64, item: &T, priority: Priority, outcome: DoneOutcome) {
        if let Some(delays) = &self.shared.delays {
            if self.shutting_down() || delays.retry(item, priority) {
                self.done_hashed(hash, item, outcome);
                return;
            }
        }
        let mut wakeups = Wakeups::new();
        {
            let mut state = self.shared.state.lock();
            state.requeue(&self.shared.hasher, (hash, item, priority), &mut wakeups);
            journey::done(&self.shared.name, item, hash, outcome);
        }
        wake_all(wakeups);
    }

    /// Releases the delayed adds a shut down took out, a batch per critical section, and drops
    /// them (the last references to their keys, maybe) outside the lock, so that other handles
    /// are not stalled by a shut down with many items waiting.
    fn release_delayed(&self, taken: TakenDelayed<T>) {
        let mut released = Vec::new();
        for batch in taken.chunks(RELEASE_BATCH) {
            self.shared
                .state
                .lock()
                .release_delayed(batch, &mut released);
            released.clear();
        }
    }

    /// How many items wait in line (items being processed are not counted).
    pub fn len(&self) -> usize {
        self.shared.state.lock().waiting_len()
    }

    /// Whether no item waits in line.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops the queue: later adds are ignored, pending delayed adds are dropped, and once the
    /// items still in line are handed out, `get` returns `None`. Does not wait for workers;
    /// cancels a pending [`shut_down_with_drain`](Queue::shut_down_with_drain).
    pub fn shut_down(&self) {
        let (wakeups, taken): (Wakeups, _) = {
            let mut state = self.shared.state.lock();
            let taken = state.take_delayed();
            state.shutting_down = true;
            self.shared.closed.store(true, Ordering::Release);
            state.drain = false;
            let state = &mut *state;
            let wakeups = state
                .getters
                .drain()
                .chain(state.drainers.drain())
                .collect();
            (wakeups, taken)
        };
        wake_all(wakeups);
        self.release_delayed(taken);
    }

    /// Stops the queue like [`shut_down`](Queue::shut_down), then waits until every item handed
    /// out has been marked done. Items still in line are not waited for.
    ///
    /// The queue shuts down when this is called; the returned future only waits. Workers must
    /// keep ending their [`Processing`] holds, or the wait never ends. A concurrent `shut_down`
    /// ends the wait early.
    pub fn shut_down_with_drain(&self) -> Drain<'_, T> {
        let (wakeups, taken): (Wakeups, _) = {
            let mut state = self.shared.state.lock();
            let taken = state.take_delayed();
            state.shutting_down = true;
            self.shared.closed.store(true, Ordering::Release);
            state.drain = true;
            (state.getters.drain().collect(), taken)
        };
        wake_all(wakeups);
        self.release_delayed(taken);
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

/// Entry points for the model checks (`tests/loom.rs`): the public priority queue needs a
/// tokio runtime for its timer task, which loom cannot run.
#[cfg(clientgo_loom)]
impl<T: QueueItem> Queue<T> {
    /// A queue with a priority line and no timer.
    #[doc(hidden)]
    pub fn loom_priority(aging: std::time::Duration) -> Self {
        Self::build(QueueConfig::default(), None, Order::Priority { aging })
    }

    /// [`add`](Queue::add) with a priority.
    #[doc(hidden)]
    pub fn loom_add_with(&self, item: T, priority: Priority) {
        self.add_with(item, priority);
    }
}

impl<T: QueueItem> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.shared.state.lock();
        f.debug_struct("Queue")
            .field("len", &state.waiting_len())
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
        if let Some((hash, item, priority)) = state.take_next() {
            if let Some(id) = self.waiter.take() {
                state.getters.remove(id);
            }
            if journey::enabled() {
                // Under the lock, so that it comes before any later add of the item.
                journey::get(&queue.shared.name, &item, hash, state.waiting_len());
            }
            // Items remain: the next parked getter is woken (unless a wake-up is already on
            // its way), so that the wake-ups chain while there is work.
            let next = if state.line.is_empty() {
                None
            } else {
                state.getters.pop()
            };
            drop(state);
            if let Some(next) = next {
                next.wake();
            }
            return Poll::Ready(Some(Processing {
                queue,
                hash,
                priority,
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

/// An item handed out by [`Queue::get`], held until the worker gives an outcome.
///
/// It dereferences to the item. While it lives, no other worker gets the same item. It is the
/// only way to end the hold, with one of four outcomes:
///
/// * [`done`](Processing::done): processed; the item may be handed out again (at once if it
///   was added while it was held);
/// * [`forget`](Processing::forget): processed successfully: also drops the item's failure
///   history in the queue's rate limiter (client-go's `Forget` then `Done`);
/// * [`retry`](Processing::retry): failed: the item comes back after the backoff its rate
///   limiter gives it (client-go's `AddRateLimited` then `Done`), or at once on a queue
///   without one;
/// * [`requeue_after`](Processing::requeue_after): processed successfully, to be looked at
///   again after a delay: `forget`, and the item comes back once the delay has passed
///   (client-go's `Forget`, `AddAfter`, then `Done`; controller-runtime's `RequeueAfter`).
///
/// Dropped without an outcome (a panic unwinding through the worker, an early return, an
/// aborted task), the guard does what `retry` does, and logs a warning: the change the item
/// stands for is never silently lost. After shut down it is only marked done.
///
/// There is no other way to mark an item done, so a worker can never end a hold it does not
/// own:
///
/// ```compile_fail
/// # let queue: clientgo_workqueue::Queue<&str> = clientgo_workqueue::Queue::new();
/// queue.done(&"default/web"); // no such method: only the guard ends its own hold
/// ```
#[must_use = "dropping the guard without an outcome re-queues the item as a failure"]
pub struct Processing<'q, T: QueueItem> {
    queue: &'q Queue<T>,
    hash: u64,
    /// The priority it waited at: a retry keeps it.
    priority: Priority,
    // `Some` until an outcome takes it; `Drop` then has nothing to do.
    item: Option<T>,
}

impl<T: QueueItem> Processing<'_, T> {
    /// The item being processed.
    pub fn item(&self) -> &T {
        self.item
            .as_ref()
            .expect("a live guard always holds its item")
    }

    fn take(&mut self) -> T {
        self.item
            .take()
            .expect("a live guard always holds its item")
    }

    /// Ends the hold: the item was processed. Its failure history, if any, is kept.
    pub fn done(mut self) {
        let item = self.take();
        self.queue.done_hashed(self.hash, &item, DoneOutcome::Done);
    }

    /// Ends the hold after a success: drops the item's failure history in the queue's rate
    /// limiter (on a queue without one, this is [`done`](Processing::done)).
    pub fn forget(mut self) {
        let item = self.take();
        if let Some(delays) = &self.queue.shared.delays {
            delays.forget(&item);
        }
        self.queue
            .done_hashed(self.hash, &item, DoneOutcome::Forget);
    }

    /// Ends the hold after a success that asks for another look later (a periodic check, a
    /// wait on something outside the cluster): drops the item's failure history, as
    /// [`forget`](Processing::forget) does, and adds it again once `delay` has passed. A
    /// queue without delays (a plain [`Queue`]) cannot do that: the item is only marked done,
    /// with a warning. After shut down it is only marked done.
    pub fn requeue_after(mut self, delay: std::time::Duration) {
        let item = self.take();
        match &self.queue.shared.delays {
            Some(delays) => {
                delays.forget(&item);
                if !self.queue.shutting_down() {
                    delays.after(&item, delay, self.priority);
                }
            }
            None => tracing::warn!(
                queue = %self.queue.shared.name,
                "requeue_after on a queue without delays: the item is only marked done"
            ),
        }
        self.queue
            .done_hashed(self.hash, &item, DoneOutcome::RequeueAfter);
    }

    /// Ends the hold after a failure: the item is added again after the backoff its rate
    /// limiter gives it (recording one more failure), or at once on a queue without a rate
    /// limiter. After shut down the item is only marked done.
    pub fn retry(mut self) {
        let item = self.take();
        self.queue
            .retry_hashed(self.hash, &item, self.priority, DoneOutcome::Retry);
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
        let Some(item) = self.item.take() else { return };
        if !self.queue.shutting_down() {
            abandoned();
        }
        self.queue
            .retry_hashed(self.hash, &item, self.priority, DoneOutcome::Abandoned);
    }
}

/// Reports a guard dropped without an outcome (the item itself is not logged: keys may be
/// sensitive, and `T` need not be `Debug`).
#[cfg(not(clientgo_loom))]
fn abandoned() {
    tracing::warn!(
        panicking = std::thread::panicking(),
        "work queue item dropped without an outcome (a panic, an early return or an aborted \
         task): re-queued as a failure"
    );
}

#[cfg(clientgo_loom)]
fn abandoned() {}

#[cfg(all(test, not(clientgo_loom)))]
mod tests {
    use std::cell::{Cell, RefCell};

    use super::*;

    thread_local! {
        /// The queue whose lock a dropped [`Probe`] checks, while a test watches.
        static WATCHED: RefCell<Option<Arc<Shared<Probe>>>> = const { RefCell::new(None) };
        static DROPS: Cell<usize> = const { Cell::new(0) };
        static DROPS_UNDER_LOCK: Cell<usize> = const { Cell::new(0) };
    }

    /// A key that records whether it is dropped while the watched queue's lock is held.
    #[derive(Clone, PartialEq, Eq, Hash)]
    struct Probe(u32);

    impl Drop for Probe {
        fn drop(&mut self) {
            WATCHED.with(|watched| {
                if let Some(shared) = &*watched.borrow() {
                    DROPS.set(DROPS.get() + 1);
                    if shared.state.is_locked() {
                        DROPS_UNDER_LOCK.set(DROPS_UNDER_LOCK.get() + 1);
                    }
                }
            });
        }
    }

    #[test]
    fn shut_down_drops_the_delayed_adds_outside_the_lock() {
        const WAITING: u32 = 10_000;
        let queue: Queue<Probe> = Queue::new();
        for i in 0..WAITING {
            queue.add_at(Probe(i), 1_000_000 + u64::from(i), PRIORITY_NORMAL);
        }
        queue.add(Probe(0));
        let held = queue.get_blocking().unwrap();
        queue.add(Probe(1));
        WATCHED.with(|watched| *watched.borrow_mut() = Some(queue.shared.clone()));
        queue.shut_down();
        let watched = WATCHED.with(|watched| watched.borrow_mut().take());
        drop(watched);
        // Each waiting key had a heap entry and, unless in line or held, a table entry.
        assert!(
            DROPS.get() >= 2 * WAITING as usize - 2,
            "the probe saw only {} drops",
            DROPS.get()
        );
        assert_eq!(
            DROPS_UNDER_LOCK.get(),
            0,
            "keys were dropped under the lock"
        );
        assert_eq!(queue.delayed_len(), 0);
        assert_eq!(
            queue.shared.state.lock().waiting_len(),
            1,
            "the item in line stays"
        );
        held.done();
        let next = queue
            .get_blocking()
            .expect("the item in line is handed out");
        assert_eq!(next.0, 1);
        next.done();
        assert!(queue.get_blocking().is_none());
    }
}
