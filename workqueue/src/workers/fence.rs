//! The worker pool's fence: the lock that keeps every reconcile of a pool from being polled
//! after the pool has ended, the lease deadline checked before each poll, and the count of
//! reconciles in flight that the fence settles as cancelled. See the invariant in the
//! [parent module](super).
//!
//! client-go has no counterpart: its workers are stopped by the process exiting.

use std::any::Any;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::sync::atomic::{AtomicI64, Ordering};

use parking_lot::RwLock;
use tokio::sync::watch;
use tokio::time::{Instant, Sleep};

use super::WorkerStats;

/// Whether the pool has ended, and how many reconciles are in flight.
#[derive(Debug, Default)]
struct State {
    /// Set once, by [`Fence::close`]; no reconcile is polled after.
    closed: bool,
    /// Reconciles started and not yet settled: changed under the read lock (so that starts
    /// and ends never wait for a reconcile's poll), taken whole under the write lock.
    in_flight: AtomicI64,
}

/// The fence of one pool; see the module docs.
#[derive(Debug, Default)]
pub(super) struct Fence {
    state: RwLock<State>,
}

/// Why a reconcile stopped before its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Stopped {
    /// The pool ended (its `run` returned or was dropped).
    Fenced,
    /// The lease deadline passed.
    Expired,
}

/// What one reconcile came to.
pub(super) type Outcome<T> = Result<Result<T, Box<dyn Any + Send>>, Stopped>;

impl Fence {
    /// Closes the fence: waits for the reconcile polls in progress, then no reconcile is polled
    /// again; the reconciles still in flight are counted as cancelled here, once.
    pub(super) fn close(&self, stats: &WorkerStats) {
        let mut state = self.state.write();
        if state.closed {
            return;
        }
        state.closed = true;
        let in_flight = state.in_flight.swap(0, Ordering::Relaxed);
        stats.active.dec_by(in_flight);
        stats.cancelled.inc_by(in_flight as u64);
    }

    /// Counts a reconcile in flight, unless the fence is closed.
    pub(super) fn start<'a>(&'a self, stats: &'a WorkerStats) -> Option<Active<'a>> {
        // Recursive: never waits behind a `close` that waits for this thread's own poll.
        let state = self.state.read_recursive();
        if state.closed {
            return None;
        }
        state.in_flight.fetch_add(1, Ordering::Relaxed);
        stats.active.inc();
        Some(Active {
            fence: self,
            stats,
            finished: false,
        })
    }

    /// Whether the fence is closed.
    pub(super) fn is_closed(&self) -> bool {
        self.state.read_recursive().closed
    }
}

/// A reconcile in flight: settled as finished, or as cancelled when dropped unfinished (its
/// task aborted), unless the fence already counted it.
pub(super) struct Active<'a> {
    fence: &'a Fence,
    stats: &'a WorkerStats,
    finished: bool,
}

impl Active<'_> {
    pub(super) fn finished(mut self) {
        self.finished = true;
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        let state = self.fence.state.read_recursive();
        if state.closed {
            return; // counted by `close`
        }
        state.in_flight.fetch_sub(1, Ordering::Relaxed);
        self.stats.active.dec();
        if !self.finished {
            self.stats.cancelled.inc();
        }
    }
}

/// A reconcile's future behind the fence: each poll first checks that the pool has not ended
/// and that the lease deadline (if any) has not passed, and holds the fence's read lock while
/// it polls the reconcile; a panic in any poll becomes `Ok(Err(payload))`.
pub(super) struct Guarded<'a, F> {
    inner: Pin<Box<F>>,
    fence: &'a Fence,
    deadline: Option<Deadline>,
}

impl<'a, F: Future> Guarded<'a, F> {
    pub(super) fn new(inner: F, fence: &'a Fence, deadline: Option<Deadline>) -> Self {
        Guarded {
            inner: Box::pin(inner),
            fence,
            deadline,
        }
    }
}

impl<F: Future> Future for Guarded<'_, F> {
    type Output = Outcome<F::Output>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let state = this.fence.state.read();
        if state.closed {
            return Poll::Ready(Err(Stopped::Fenced));
        }
        if let Some(deadline) = &mut this.deadline
            && deadline.passed(cx)
        {
            return Poll::Ready(Err(Stopped::Expired));
        }
        let inner = this.inner.as_mut();
        let polled = std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx)));
        drop(state);
        match polled {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(Ok(output))),
            Err(panic) => Poll::Ready(Ok(Err(panic))),
        }
    }
}

/// A lease's deadline, as its holder publishes it (moved forward on each renewal), with a
/// timer armed at it so that a reconcile waiting on something else is still stopped on time.
pub(super) struct Deadline {
    until: watch::Receiver<Instant>,
    timer: Pin<Box<Sleep>>,
}

impl Deadline {
    pub(super) fn new(until: watch::Receiver<Instant>) -> Self {
        let at = *until.borrow();
        Deadline {
            until,
            timer: Box::pin(tokio::time::sleep_until(at)),
        }
    }

    /// The instant the lease is valid until now.
    pub(super) fn until(&self) -> Instant {
        *self.until.borrow()
    }

    /// Whether the deadline has passed; if not, the timer is armed at it (re-armed when a
    /// renewal moved it) and wakes `cx` then.
    fn passed(&mut self, cx: &mut Context<'_>) -> bool {
        loop {
            let until = self.until();
            if Instant::now() >= until {
                return true;
            }
            if self.timer.deadline() != until {
                self.timer.as_mut().reset(until);
            }
            if self.timer.as_mut().poll(cx).is_pending() {
                return false;
            }
            // The timer fired at an older deadline: look again.
        }
    }
}
