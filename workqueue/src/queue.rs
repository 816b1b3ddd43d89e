//! The work queue: client-go's `util/workqueue` (`queue.go`, `delaying_queue.go`,
//! `rate_limiting_queue.go`) as one type.
//!
//! A [`Queue`] hands keys to workers with client-go's guarantees:
//!
//! * **Stingy**: an item is never handed to two workers at once, and adding an item that is
//!   already waiting does nothing (duplicates coalesce).
//! * **Fair**: distinct items come out in the order they were first added (on a priority
//!   queue: highest priority first, in that order within a priority).
//! * **Level-triggered**: an item added while a worker processes it is handed out again once the
//!   worker is done, so the latest change is always seen.
//! * **Shut down**: after [`shut_down`](Queue::shut_down) adds are ignored, pending delayed
//!   adds are dropped, the items already waiting are still handed out, and then `get` returns
//!   `None` to tell workers to stop.
//!
//! Every queue can delay an add ([`add_after`](Queue::add_after)); one built with a
//! [`RateLimiter`] backs failed items off ([`Processing::retry`],
//! [`add_rate_limited`](Queue::add_rate_limited)); one built with
//! [`priority`](crate::QueueBuilder::priority) serves real changes before the backlog of a
//! start (see below). The options are set on a [`QueueBuilder`](crate::QueueBuilder); the
//! constructors keep client-go's names for the usual combinations.
//!
//! ## Priority, and why
//!
//! When a controller starts (or fails over), its informers deliver every existing object as an
//! add, and the queue fills with keys that most likely need nothing; a real change that
//! arrives then waits, in a FIFO queue, behind the whole backlog. On a priority queue the
//! event handlers add those keys at [`PRIORITY_LOW`](crate::PRIORITY_LOW) (the informer
//! crate's `EnqueueHandler` does), so real changes, at [`PRIORITY_NORMAL`], pass them.
//! Aging keeps anything from starving: waiting the builder's `aging` is worth one priority
//! level, so an item added at priority `p` is handed out before every item of a higher
//! priority `q` added more than `(q − p) × aging` after it, however many keep arriving. An
//! add of an item that already waits keeps the higher of the two priorities and the better
//! place in line; a retry keeps the priority the item was handed out at. client-go has no
//! priority queue; controller-runtime's (`pkg/controller/priorityqueue`) orders by priority
//! alone, so a steady stream of normal adds holds a low key back for ever.
//!
//! ## Where it differs from client-go
//!
//! * One type instead of three interfaces embedded in one another: client-go's
//!   `TypedRateLimitingInterface` embeds `TypedDelayingInterface`, which embeds
//!   `TypedInterface`. Here the layers are options of the one queue, so a function that takes
//!   a queue takes every kind, and nothing dereferences to anything.
//! * `get` returns a [`Processing`] guard instead of the bare item, and the guard is the only
//!   way to mark the item done: there is no `Done(item)` call that could release a hold some
//!   other worker has since taken on the same item. The worker ends the hold with an outcome:
//!   [`done`](Processing::done), [`forget`](Processing::forget) (success: also drop the item's
//!   failure history), [`retry`](Processing::retry) (failure: back in line after its backoff)
//!   or [`requeue_after`](Processing::requeue_after).
//! * A guard dropped without an outcome (the worker panicked, returned early, or its task was
//!   aborted) is a failure, not a success: the item is re-queued, after its backoff where the
//!   queue has a rate limiter, at once otherwise, so the change it stood for is not lost.
//!   client-go's worker marks the item done in a `defer` and loses it unless the worker
//!   re-added it; and client-go crashes the process on a panic (`HandleCrash`), which here is
//!   the caller's choice.
//! * Waiting is a FIFO of wakers under the queue's lock (see `waiters.rs`) rather than a
//!   condition variable, so async tasks and threads ([`Queue::get_blocking`]) share it.
//! * A plain [`add`](Queue::add) on a FIFO queue without metrics does not take the queue's
//!   lock: it goes into a short buffer of its own, which the next critical section that hands
//!   items out or reads the line applies first, in order (see `pending.rs`). A producer that
//!   outruns its workers then moves the queue's state between cores once per batch instead of
//!   once per add. client-go takes the lock for every `Add`.
//! * An item's state is one table entry instead of client-go's separate `dirty` and
//!   `processing` sets and the delaying queue's map: one hash lookup per operation, computed
//!   before the lock is taken (see `state.rs`, which also lists the table's invariants).
//!   Delayed items wait in the same state, ordered by a min-heap that one timer task watches
//!   (see `queue/timer.rs`).
//!
//! ## Invariants, kept under the lock
//!
//! 1. While items wait in line and a getter is parked, one getter has been woken and is on its
//!    way: an item pushed in line wakes one getter unless a woken one has not come back yet; a
//!    woken getter that takes an item and leaves items behind wakes the next; one that goes
//!    away without taking an item passes the wake-up on (see [`Get`]'s `Drop`); one that finds
//!    nothing parks again (see `waiters.rs`). The same holds for adds waiting in the buffer,
//!    which reach the line before any getter parks on an empty one (see `pending.rs`).
//! 2. Drain waiters are woken whenever no item is being processed any more, or the drain is
//!    cancelled.
//! 3. `closed` is set in the same critical section that sets `shutting_down`, and never
//!    cleared: [`Queue::shutting_down`] reads it without the lock, which keeps `add_after`
//!    off the lock once the queue is shut down.

use std::fmt;
use std::hash::BuildHasher;
use std::ops::DerefMut;
use std::sync::Arc as StdArc;
use std::sync::atomic::Ordering;
use std::task::Waker;
use std::time::Duration;

use clientgo_journey::DoneOutcome;
use clientgo_ratelimit::RateLimiter;

use crate::item::ItemHasher;
pub use crate::item::QueueItem;
use crate::line::{DepthByPriority, Line, PRIORITY_NORMAL, Priority, PriorityLine};
use crate::metrics::{CounterMetric, QueueMetrics, resolve_provider};
use crate::options::{AddOptions, Order, QueueConfig};
use crate::pending::Pending;
use crate::state::{Fired, State, TakenDelayed, Wakeups};
use crate::sync::{Arc, AtomicBool, Mutex, block_on};
use crate::waiters::Waiters;

mod guard;
pub(crate) mod journey;
#[cfg(all(test, not(clientgo_loom)))]
mod pending_tests;
mod timer;

pub use guard::{Drain, Get, Processing};
use timer::Timer;

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
///
/// A controller's queue backs failures off and, built with
/// [`priority`](crate::QueueBuilder::priority), serves real changes first:
///
/// ```
/// use std::sync::Arc;
/// use clientgo_workqueue::{AddOptions, Queue};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue: Queue<Arc<str>> = Queue::builder().name("foos").default_rate_limiter().priority().build();
/// queue.add_with("default/listed".into(), AddOptions::low()); // from the initial list
/// queue.add("default/changed".into()); // a real change
/// let next = queue.get().await.unwrap();
/// assert_eq!(&**next, "default/changed");
/// next.retry(); // failed: back after its backoff (5 ms the first time)
/// # }
/// ```
pub struct Queue<T> {
    shared: Arc<Shared<T>>,
}

pub(crate) struct Shared<T> {
    state: Mutex<State<T>>,
    /// Plain adds made off the lock, on a queue that allows it (see `pending.rs`).
    pending: Option<Pending<T>>,
    /// The queue's name, for its journey events.
    name: Box<str>,
    hasher: ItemHasher,
    /// `state.shutting_down`, readable without the lock (set under it, never cleared).
    closed: AtomicBool,
    /// Backs failed items off; without one a retried item goes back in line at once.
    limiter: Option<StdArc<dyn RateLimiter<T>>>,
    /// Moves delayed items in line when they come due: started by the first delayed add.
    timer: Timer,
    /// client-go's `workqueue_retries_total`: delayed adds.
    retries: Option<Box<dyn CounterMetric>>,
    priority: bool,
}

/// How many taken delayed adds a shut down releases per critical section.
const RELEASE_BATCH: usize = 1024;

fn wake_all(wakers: impl IntoIterator<Item = Waker>) {
    wakers.into_iter().for_each(Waker::wake);
}

impl<T> Clone for Queue<T> {
    fn clone(&self) -> Self {
        Self {
            shared: self.shared.clone(),
        }
    }
}

/// Making a queue (the constructors are in `builder.rs`).
impl<T: QueueItem> Queue<T> {
    pub(crate) fn build(
        config: QueueConfig,
        limiter: Option<StdArc<dyn RateLimiter<T>>>,
        order: Order,
    ) -> Self {
        let provider = resolve_provider(&config.name, config.metrics_provider.as_ref());
        let metrics = provider
            .as_ref()
            .map(|provider| QueueMetrics::new(&**provider, &config.name));
        let retries = provider
            .as_ref()
            .map(|provider| provider.new_retries_metric(&config.name));
        let has_metrics = metrics.is_some();
        // Plain adds skip the lock on FIFO queues without metrics (see `pending.rs`).
        let (pending, getters) = if matches!(order, Order::Fifo) && !has_metrics {
            let wanted = Arc::new(AtomicBool::new(false));
            (
                Some(Pending::new(wanted.clone())),
                Waiters::mirrored(wanted),
            )
        } else {
            (None, Waiters::default())
        };
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
                state: Mutex::new(State::new(metrics, line, getters)),
                pending,
                name: config.name.as_str().into(),
                closed: AtomicBool::new(false),
                hasher,
                limiter,
                timer: Timer::new(),
                retries,
                priority: matches!(order, Order::Priority { .. }),
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
}

/// Adding.
impl<T: QueueItem> Queue<T> {
    /// Marks `item` as needing processing.
    ///
    /// Ignored after shut down. An item already waiting stays where it is; an item being
    /// processed is handed out again after its worker is done. On a priority queue it waits
    /// at [`PRIORITY_NORMAL`].
    pub fn add(&self, item: T) {
        self.add_at_priority(item, PRIORITY_NORMAL);
    }

    /// Adds `item` once `delay` has passed: client-go's `AddAfter`. An item waits at most
    /// once: adding it again while it waits keeps the earlier of the two ready times. A zero
    /// delay adds it at once.
    ///
    /// The first delayed add of a queue starts its timer task, in the tokio runtime the queue
    /// was built in, else in the caller's, else (a queue of plain threads) on a thread of its
    /// own.
    pub fn add_after(&self, item: T, delay: Duration) {
        self.trace_add_after(&item, delay);
        self.add_after_at_priority(item, delay, PRIORITY_NORMAL);
    }

    /// Adds `item` after the backoff the rate limiter gives it, recording one more failure:
    /// client-go's `AddRateLimited`. On a queue without a rate limiter it is added at once.
    /// A worker holding the item ends its hold with [`Processing::retry`] instead.
    pub fn add_rate_limited(&self, item: T) {
        self.add_with(
            item,
            AddOptions {
                rate_limited: true,
                ..AddOptions::default()
            },
        );
    }

    /// Adds `item` with `options`: a priority (which only a priority queue's line uses), a
    /// delay, the rate limiter's backoff. Delayed and rate-limited at once, it waits for the
    /// shorter of the two delays, as controller-runtime's priority queue does.
    pub fn add_with(&self, item: T, options: AddOptions) {
        let mut after = options.after;
        if let (true, Some(limiter)) = (options.rate_limited, &self.shared.limiter) {
            if !self.shutting_down() {
                let backoff = limiter.when(&item);
                after = Some(after.map_or(backoff, |after| after.min(backoff)));
                self.trace_backoff(&item, backoff, &**limiter);
            }
        } else if let Some(delay) = after {
            self.trace_add_after(&item, delay);
        }
        match after {
            Some(delay) => self.add_after_at_priority(item, delay, options.priority),
            None => self.add_at_priority(item, options.priority),
        }
    }

    /// Drops the failure history of `item` in the rate limiter: client-go's `Forget`. A
    /// worker holding the item ends its hold with [`Processing::forget`] instead.
    pub fn forget(&self, item: &T) {
        if let Some(limiter) = &self.shared.limiter {
            limiter.forget(item);
        }
    }

    /// How many failures the rate limiter has recorded for `item` since it was last
    /// forgotten (0 without a rate limiter): client-go's `NumRequeues`.
    pub fn num_requeues(&self, item: &T) -> usize {
        self.shared
            .limiter
            .as_ref()
            .map_or(0, |limiter| limiter.num_requeues(item))
    }

    /// An add at `priority`, now.
    pub(crate) fn add_at_priority(&self, item: T, priority: Priority) {
        let hash = self.hash(&item);
        let mut wakeups = Wakeups::new();
        if let Some(pending) = &self.shared.pending
            && !journey::enabled()
        {
            if !self.shutting_down() && pending.push(hash, item) {
                drop(self.lock_applied(&mut wakeups));
            }
            wake_all(wakeups);
            return;
        }
        {
            let mut state = self.lock_applied(&mut wakeups);
            if !state.shutting_down {
                let wakeup = if journey::enabled() {
                    // Under the lock, so that the event comes before the get it makes possible.
                    let outcome = state.add_outcome(hash, &item);
                    let copy = item.clone();
                    let wakeup = state.add_with(&self.shared.hasher, hash, item, priority);
                    let depth = state.waiting_len();
                    journey::add(&self.shared.name, &copy, hash, outcome, depth);
                    wakeup
                } else {
                    state.add_with(&self.shared.hasher, hash, item, priority)
                };
                wakeups.extend(wakeup);
            }
        }
        wake_all(wakeups);
    }

    /// An add at `priority` once `delay` has passed (counted as a retry in the metrics).
    pub(crate) fn add_after_at_priority(&self, item: T, delay: Duration, priority: Priority) {
        if self.shutting_down() {
            return;
        }
        if let Some(retries) = &self.shared.retries {
            retries.inc();
        }
        if delay.is_zero() {
            self.add_at_priority(item, priority);
            return;
        }
        let at = self.shared.timer.ready_at(&self.shared, delay);
        if self.add_at(item, at, priority) {
            self.shared.timer.wake();
        }
    }

    /// Schedules an add of `item` at `at` (nanoseconds on the timer's clock), keeping an
    /// earlier pending one. Returns whether the timer must re-arm for an earlier time.
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

    fn trace_add_after(&self, item: &T, delay: Duration) {
        if journey::enabled() {
            journey::add_after(&self.shared.name, item, self.hash(item), delay);
        }
    }

    fn trace_backoff(&self, item: &T, delay: Duration, limiter: &dyn RateLimiter<T>) {
        if journey::enabled() {
            let failures = limiter.num_requeues(item);
            journey::backoff(&self.shared.name, item, self.hash(item), delay, failures);
        }
    }

    /// The queue's name (empty for an unnamed queue).
    pub(crate) fn name(&self) -> &str {
        &self.shared.name
    }

    pub(crate) fn hash(&self, item: &T) -> u64 {
        self.shared.hasher.hash_one(item)
    }

    /// Applies the adds buffered off the lock to `state`, in order; the getters they wake go in
    /// `wakeups`, to be woken after unlocking.
    pub(crate) fn apply(&self, state: &mut State<T>, wakeups: &mut Wakeups) {
        if let Some(pending) = &self.shared.pending {
            state.apply(pending, &self.shared.hasher, wakeups);
        }
    }

    /// Applies the buffered adds for a getter that may just have set `wanted` (it parked, came
    /// back from a wake-up, or went away): adds it does not find here saw it wanting one (see
    /// `pending.rs`, rule 2). Returns whether there were any.
    pub(crate) fn apply_after_wanted(&self, state: &mut State<T>, wakeups: &mut Wakeups) -> bool {
        match &self.shared.pending {
            Some(pending) if !pending.is_empty_after_wanted() => {
                state.apply(pending, &self.shared.hasher, wakeups);
                true
            }
            _ => false,
        }
    }

    /// Locks the state with the buffered adds applied, as every critical section that hands
    /// items out or reads the line does, so that it sees every add made before it.
    pub(crate) fn lock_applied(
        &self,
        wakeups: &mut Wakeups,
    ) -> impl DerefMut<Target = State<T>> + '_ {
        let mut state = self.shared.state.lock();
        self.apply(&mut state, wakeups);
        state
    }

    /// Adds the delayed items due at `now`, at most `limit` of them in one critical section.
    pub(crate) fn fire_due(&self, now: u64, limit: usize) -> Fired {
        let mut wakeups = Wakeups::new();
        let trace = journey::enabled().then_some(&*self.shared.name);
        let fired = {
            let mut state = self.lock_applied(&mut wakeups);
            state.fire_due(now, limit, &mut wakeups, trace)
        };
        wake_all(wakeups);
        fired
    }
}

/// Taking, and ending holds.
impl<T: QueueItem> Queue<T> {
    /// Waits for the next item; `None` once the queue is shut down and empty.
    ///
    /// The returned guard marks the item done when dropped. The future is cancel-safe: dropped
    /// before it completes, it takes nothing from the queue.
    pub fn get(&self) -> Get<'_, T> {
        Get::new(self)
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
        if let Some(limiter) = &self.shared.limiter {
            if !self.shutting_down() {
                let delay = limiter.when(item);
                self.trace_backoff(item, delay, &**limiter);
                self.add_after_at_priority(item.clone(), delay, priority);
            }
            self.done_hashed(hash, item, outcome);
            return;
        }
        let mut wakeups = Wakeups::new();
        {
            let mut state = self.lock_applied(&mut wakeups);
            state.requeue(&self.shared.hasher, (hash, item, priority), &mut wakeups);
            journey::done(&self.shared.name, item, hash, outcome);
        }
        wake_all(wakeups);
    }

    /// Ends a hold that asks for another look after `delay`.
    fn requeue_after_hashed(&self, hash: u64, item: &T, delay: Duration, priority: Priority) {
        self.forget(item);
        if !self.shutting_down() {
            self.trace_add_after(item, delay);
            self.add_after_at_priority(item.clone(), delay, priority);
        }
        self.done_hashed(hash, item, DoneOutcome::RequeueAfter);
    }
}

/// Looking, and stopping.
impl<T: QueueItem> Queue<T> {
    /// How many items wait in line (items being processed or waiting for a delay are not
    /// counted).
    pub fn len(&self) -> usize {
        let mut wakeups = Wakeups::new();
        let len = self.lock_applied(&mut wakeups).waiting_len();
        wake_all(wakeups);
        len
    }

    /// Whether no item waits in line.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many items wait for a delay to pass ([`add_after`](Queue::add_after), a backoff).
    pub fn delayed_len(&self) -> usize {
        self.shared.state.lock().delayed_len()
    }

    /// Whether the queue hands out the highest priority first (built with
    /// [`priority`](crate::QueueBuilder::priority)).
    pub fn is_priority(&self) -> bool {
        self.shared.priority
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

    /// Stops the queue: later adds are ignored, pending delayed adds are dropped, and once the
    /// items still in line are handed out, `get` returns `None`. Does not wait for workers;
    /// cancels a pending [`shut_down_with_drain`](Queue::shut_down_with_drain).
    pub fn shut_down(&self) {
        let mut wakeups = Wakeups::new();
        let taken = {
            // Adds made before the shut down are applied, and handed out (see `pending.rs`).
            let mut state = self.lock_applied(&mut wakeups);
            let taken = state.take_delayed();
            state.shutting_down = true;
            self.shared.closed.store(true, Ordering::Release);
            state.drain = false;
            let state = &mut *state;
            wakeups.extend(state.getters.drain().chain(state.drainers.drain()));
            taken
        };
        wake_all(wakeups);
        self.shared.timer.wake();
        self.release_delayed(taken);
    }

    /// Stops the queue like [`shut_down`](Queue::shut_down), then waits until every item handed
    /// out has been marked done. Items still in line are not waited for.
    ///
    /// The queue shuts down when this is called; the returned future only waits. Workers must
    /// keep ending their [`Processing`] holds, or the wait never ends. A concurrent `shut_down`
    /// ends the wait early.
    pub fn shut_down_with_drain(&self) -> Drain<'_, T> {
        let mut wakeups = Wakeups::new();
        let taken = {
            let mut state = self.lock_applied(&mut wakeups);
            let taken = state.take_delayed();
            state.shutting_down = true;
            self.shared.closed.store(true, Ordering::Release);
            state.drain = true;
            wakeups.extend(state.getters.drain());
            taken
        };
        wake_all(wakeups);
        self.shared.timer.wake();
        self.release_delayed(taken);
        Drain::new(self)
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

impl<T> Drop for Shared<T> {
    fn drop(&mut self) {
        // The timer task holds only a weak handle: wake it so it sees the queue is gone.
        self.timer.wake();
    }
}

/// Entry points for the model checks (`tests/loom.rs`): loom cannot run the timer task.
#[cfg(clientgo_loom)]
impl<T: QueueItem> Queue<T> {
    /// A queue with a priority line.
    #[doc(hidden)]
    pub fn loom_priority(aging: Duration) -> Self {
        Self::build(QueueConfig::default(), None, Order::Priority { aging })
    }

    /// [`add`](Queue::add) with a priority.
    #[doc(hidden)]
    pub fn loom_add_with(&self, item: T, priority: Priority) {
        self.add_at_priority(item, priority);
    }
}

impl<T: QueueItem> fmt::Debug for Queue<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut wakeups = Wakeups::new();
        let (len, delayed, processing, shutting_down) = {
            let state = self.lock_applied(&mut wakeups);
            let state = &*state;
            (
                state.waiting_len(),
                state.delayed_len(),
                state.processing,
                state.shutting_down,
            )
        };
        wake_all(wakeups);
        f.debug_struct("Queue")
            .field("name", &self.shared.name)
            .field("len", &len)
            .field("delayed", &delayed)
            .field("processing", &processing)
            .field("shutting_down", &shutting_down)
            .field("rate_limited", &self.shared.limiter.is_some())
            .field("priority", &self.shared.priority)
            .finish()
    }
}

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
