//! The futures and the guard of a [`Queue`]: [`Get`] waits for an item, [`Processing`] holds
//! it until the worker gives an outcome, [`Drain`] waits for the holds to end at shut down.
//! client-go's `Get` and `Done`, and `ShutDownWithDrain`'s wait (see the parent module for
//! where they differ).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use clientgo_journey::DoneOutcome;

use super::{Queue, QueueItem, journey, wake_all};
use crate::line::Priority;
use crate::state::Wakeups;

/// The future returned by [`Queue::get`].
#[must_use = "futures do nothing unless awaited"]
pub struct Get<'q, T: QueueItem> {
    queue: &'q Queue<T>,
    waiter: Option<u64>,
}

impl<'q, T: QueueItem> Get<'q, T> {
    pub(super) fn new(queue: &'q Queue<T>) -> Self {
        Self {
            queue,
            waiter: None,
        }
    }
}

impl<'q, T: QueueItem> Future for Get<'q, T> {
    type Output = Option<Processing<'q, T>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let queue = self.queue;
        let mut wakeups = Wakeups::new();
        let mut state = queue.lock_applied(&mut wakeups);
        loop {
            if let Some((hash, item, priority)) = state.take_next() {
                if let Some(id) = self.waiter.take() {
                    state.getters.remove(id);
                    // Back from a wake-up, which may leave a parked getter wanting one: adds
                    // buffered since the application above are this getter's to apply
                    // (`pending.rs`, rule 2).
                    queue.apply_after_wanted(&mut state, &mut wakeups);
                }
                if journey::enabled() {
                    // Under the lock, so that it comes before any later add of the item.
                    journey::get(&queue.shared.name, &item, hash, state.waiting_len());
                }
                // Items remain: the next parked getter is woken (unless a wake-up is already on
                // its way), so that the wake-ups chain while there is work.
                if !state.line.is_empty() {
                    wakeups.extend(state.getters.pop());
                }
                drop(state);
                wake_all(wakeups);
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
                drop(state);
                wake_all(wakeups);
                return Poll::Ready(None);
            }
            state.getters.register(&mut self.waiter, cx.waker());
            // Parked: an add buffered since the application above either is seen here or saw
            // this getter wanting a wake-up (`pending.rs`, rule 2).
            if queue.apply_after_wanted(&mut state, &mut wakeups) {
                continue;
            }
            drop(state);
            wake_all(wakeups);
            return Poll::Pending;
        }
    }
}

impl<T: QueueItem> Drop for Get<'_, T> {
    fn drop(&mut self) {
        let Some(id) = self.waiter else { return };
        let mut wakeups = Wakeups::new();
        {
            let mut state = self.queue.shared.state.lock();
            let was_woken = !state.getters.remove(id);
            // Adds buffered while this getter was on its way, or that saw it parked, are its to
            // apply (`pending.rs`, rules 2 and 3).
            self.queue.apply_after_wanted(&mut state, &mut wakeups);
            // A wake-up meant for this getter must not be lost with it.
            if was_woken && !state.line.is_empty() {
                wakeups.extend(state.getters.pop());
            }
        }
        wake_all(wakeups);
    }
}

/// The future returned by [`Queue::shut_down_with_drain`].
#[must_use = "the drain waits only when awaited"]
pub struct Drain<'q, T: QueueItem> {
    queue: &'q Queue<T>,
    waiter: Option<u64>,
}

impl<'q, T: QueueItem> Drain<'q, T> {
    pub(super) fn new(queue: &'q Queue<T>) -> Self {
        Self {
            queue,
            waiter: None,
        }
    }
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
        self.queue.forget(&item);
        self.queue
            .done_hashed(self.hash, &item, DoneOutcome::Forget);
    }

    /// Ends the hold after a success that asks for another look later (a periodic check, a
    /// wait on something outside the cluster): drops the item's failure history, as
    /// [`forget`](Processing::forget) does, and adds it again once `delay` has passed. After
    /// shut down it is only marked done.
    pub fn requeue_after(mut self, delay: Duration) {
        let item = self.take();
        self.queue
            .requeue_after_hashed(self.hash, &item, delay, self.priority);
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
