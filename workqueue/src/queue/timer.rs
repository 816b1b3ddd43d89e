//! The queue's timer: client-go's `delaying_queue.go` waiting loop.
//!
//! Delayed items sit in the queue's own state, under its lock: the item's table entry holds
//! its ready time next to its place in line (see `state.rs`), and a min-heap orders the ready
//! times. **One** timer task per queue sleeps until the earliest ready time, moves every item
//! that has come due into line in one batch, and sleeps again.
//!
//! ## Where it differs from client-go
//!
//! * The task starts with the queue's first delayed add, so a queue that never delays costs
//!   no task (client-go starts the goroutine with every delaying queue).
//! * `add_after` never blocks (client-go sends to the timer goroutine over a channel of 1,000
//!   entries), and the timer moves a due item into line with one lookup of its entry.
//! * The timer is woken only when an add makes a ready time the earliest, and needs no 10 s
//!   heartbeat: it cannot miss a wake-up (a `Notify` permit is kept until it is consumed). It
//!   moves due items in batches of at most [`FIRE_BATCH`], yielding between batches, so a
//!   burst of due items never holds the lock for long.
//! * A waiting item costs one heap entry (ready time, hash, key) and, unless the item is in
//!   line or being processed anyway, one table entry (key and one word): about 85 bytes with
//!   the tables' slack, plus the key itself, which is shared, not copied.
//! * Ready times are nanoseconds since the timer started on tokio's clock, so tests drive the
//!   queue with a paused clock.
//!
//! The task holds the queue weakly: it ends when the queue is shut down or dropped (the
//! queue wakes it then).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::{QueueItem, Shared};
#[cfg(not(clientgo_loom))]
use {super::Queue, crate::state::Fired};

/// How many due items the timer moves in line per critical section.
pub(crate) const FIRE_BATCH: usize = 1024;

/// A queue's timer, started by the first delayed add.
pub(super) struct Timer {
    started: OnceLock<Started>,
    /// The runtime the queue was built in, if any: the task starts there, so that plain
    /// threads can delay adds on a queue built inside a runtime.
    #[cfg(not(clientgo_loom))]
    runtime: Option<tokio::runtime::Handle>,
}

struct Started {
    wake: Arc<Notify>,
    /// Ready times count nanoseconds from here.
    epoch: Instant,
}

impl Timer {
    /// A timer for a queue being built now.
    pub(super) fn new() -> Self {
        Self {
            started: OnceLock::new(),
            #[cfg(not(clientgo_loom))]
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    /// When an add after `delay` from now is due, in nanoseconds on the timer's clock,
    /// starting the timer task if this is the queue's first delayed add. A delay past the end
    /// of time (a limiter may return `Duration::MAX`) never comes due.
    ///
    pub(super) fn ready_at<T: QueueItem>(
        &self,
        shared: &crate::sync::Arc<Shared<T>>,
        delay: Duration,
    ) -> u64 {
        let started = self.started.get_or_init(|| self.start(shared));
        Instant::now()
            .checked_add(delay)
            .map_or(u64::MAX, |at| ticks(started.epoch, at))
    }

    /// Wakes the task (if started) to look at the earliest ready time, the shut down or the
    /// queue's end.
    pub(super) fn wake(&self) {
        if let Some(started) = self.started.get() {
            started.wake.notify_one();
        }
    }
}

fn ticks(epoch: Instant, at: Instant) -> u64 {
    let since = at.saturating_duration_since(epoch).as_nanos();
    u64::try_from(since).unwrap_or(u64::MAX)
}

#[cfg(not(clientgo_loom))]
impl Timer {
    /// Starts the task in the queue's runtime, else in the caller's, else (a queue of plain
    /// threads) on a thread of its own with a one-thread runtime, which ends with the task.
    fn start<T: QueueItem>(&self, shared: &Arc<Shared<T>>) -> Started {
        let started = Started {
            wake: Arc::new(Notify::new()),
            epoch: Instant::now(),
        };
        let task = run(Arc::downgrade(shared), started.wake.clone(), started.epoch);
        let runtime = self
            .runtime
            .clone()
            .or_else(|| tokio::runtime::Handle::try_current().ok());
        match runtime {
            Some(runtime) => drop(runtime.spawn(task)),
            None => {
                let thread = std::thread::Builder::new()
                    .name("workqueue-timer".into())
                    .spawn(move || {
                        match tokio::runtime::Builder::new_current_thread()
                            .enable_time()
                            .build()
                        {
                            Ok(runtime) => runtime.block_on(task),
                            Err(error) => tracing::error!(
                                %error,
                                "work queue timer: no runtime; delayed adds never come due"
                            ),
                        }
                    });
                if let Err(error) = thread {
                    tracing::error!(
                        %error,
                        "work queue timer: no thread; delayed adds never come due"
                    );
                }
            }
        }
        started
    }
}

/// Under loom there is no task: delayed items stay delayed (the model checks add and get).
#[cfg(clientgo_loom)]
impl Timer {
    fn start<T: QueueItem>(&self, _: &crate::sync::Arc<Shared<T>>) -> Started {
        Started {
            wake: Arc::new(Notify::new()),
            epoch: Instant::now(),
        }
    }
}

#[cfg(not(clientgo_loom))]
async fn run<T: QueueItem>(queue: std::sync::Weak<Shared<T>>, wake: Arc<Notify>, epoch: Instant) {
    loop {
        let next = {
            let Some(shared) = queue.upgrade() else {
                return;
            };
            let queue = Queue { shared };
            if queue.shutting_down() {
                return;
            }
            match queue.fire_due(ticks(epoch, Instant::now()), FIRE_BATCH) {
                Fired::NextAt(at) => epoch.checked_add(Duration::from_nanos(at)),
                Fired::Empty => None,
                Fired::More => {
                    drop(queue);
                    tokio::task::yield_now().await;
                    continue;
                }
            }
        };
        match next {
            Some(at) => {
                let _ = tokio::time::timeout_at(at, wake.notified()).await;
            }
            None => wake.notified().await,
        }
    }
}
