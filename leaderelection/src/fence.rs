//! The leader's validity deadline, published for work that runs on other tasks or threads.
//!
//! [`LeaderElector::run`](crate::LeaderElector::run) fences the leader work it drives itself:
//! before every poll of that work it checks that the renew deadline has not passed, and it
//! drops the work when it has. Work that runs elsewhere (worker tasks, a thread pool) is not
//! polled by the elector and cannot rely on that check, nor on the elector's task running at
//! all (the elector may be the one that stalled). A [`Fence`] gives such work the same
//! deadline the elector applies, so it can check it itself before each write.
//!
//! client-go has no counterpart: its leader work keeps running until the process exits.

use tokio::sync::watch;
use tokio::time::Instant;

/// Until when this candidate may act, as its elector judges it: the deadline
/// [`LeaderElector::run`](crate::LeaderElector::run) fences its own leader work at, published
/// for work on other tasks or threads. Get one from
/// [`LeaderElector::fence`](crate::LeaderElector::fence); clones see the same updates.
///
/// The deadline is `renew_deadline` after the acquiring write or the last successful renewal
/// was *sent*; it moves forward on each renewal and into the past when leadership ends. The
/// invariant it carries: it always precedes the earliest moment another candidate may take
/// over, which is `lease_duration` after that candidate *saw* the same renewal (it cannot see
/// a write before it was sent). Check [`is_valid`](Fence::is_valid) immediately before each
/// write; the margin `lease_duration - renew_deadline` is what covers a write sent just
/// before the deadline and still on the wire, and clocks running at slightly different
/// rates. A stall between the check and the write (the process frozen mid-poll) is covered
/// only by that margin, as with any lease.
#[derive(Debug, Clone)]
pub struct Fence {
    rx: watch::Receiver<Instant>,
}

impl Fence {
    pub(crate) fn new(rx: watch::Receiver<Instant>) -> Self {
        Self { rx }
    }

    /// The instant until which the holder may act: when its last successful renewal (or the
    /// acquiring write) was sent, plus the renew deadline; an instant in the past while not
    /// leading.
    pub fn valid_until(&self) -> Instant {
        *self.rx.borrow()
    }

    /// Whether `Instant::now()` is before [`valid_until`](Fence::valid_until).
    pub fn is_valid(&self) -> bool {
        Instant::now() < self.valid_until()
    }

    /// The underlying receiver (changes on every renewal and at the fence), e.g. for
    /// `clientgo_workqueue::WorkerPool::fence`. Nothing is sent when the deadline merely
    /// passes, so a watcher must also wake at the deadline it last read, not only on a change:
    /// when renewals stop, or the elector's own task stalls, no change comes in time.
    pub fn deadline(&self) -> watch::Receiver<Instant> {
        self.rx.clone()
    }
}
