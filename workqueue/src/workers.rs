//! Workers: the loop every controller writes around its work queue, once, with its failure
//! boundaries.
//!
//! Mirrors what a client-go controller's `Run` does with
//! `wait.UntilWithContext(ctx, c.runWorker, time.Second)` and `processNextWorkItem`: N workers
//! take keys, reconcile each, `Forget` it on success and `AddRateLimited` it on error, until
//! the context ends and the queue shuts down. What this adds, and why:
//! * Panic isolation: a reconcile that panics is a failure of that key (logged, retried after
//!   its backoff), not of the worker or the process. client-go's `HandleCrash` re-panics by
//!   default and kills the process; a controller that wants that keeps its own loop.
//! * A bounded drain: on cancel the queue shuts down, workers start nothing new (client-go's
//!   `Get` would still hand out queued keys), reconciles in hand get `drain_timeout` to
//!   finish, and then their futures are dropped, so no write is sent after `run` returns.
//! * The outcome of each key goes through the work queue's guard ([`Processing`]), the only
//!   way to end a hold.
//! * Counters ([`WorkerStats`]): succeeded, failed, panicked, cancelled, and the reconciles
//!   running now; client-go leaves these to each controller, controller-runtime has them as
//!   `controller_runtime_reconcile_*`.
//! * A `reconcile` span around each reconcile (target `clientgo_workqueue::journey`, `TRACE`):
//!   the queue, the key, the worker's index and the outcome, for the flight recorder
//!   (`clientgo-flightrecorder`) or any tracing backend; the reconcile's requests nest in it.
//! * The workers are tasks, so N workers use N cores (client-go's are goroutines): one
//!   CPU-heavy or blocking reconcile stalls its own worker, not the others.
//! * A fence ([`WorkerPool::fence`]): given the deadline of a lease (a leader election's, a
//!   shard's), no reconcile starts after it and none in hand is polled again after it.
//!
//! ## The fence: nothing runs after `run`
//!
//! A controller that lost its lease drops the future of `run` (the elector does), and relies
//! on this: *once `run` has returned, or its future has been dropped, no reconcile of this
//! pool is polled again*, so none sends another request. It is kept by one lock, taken for
//! reading around every poll of every reconcile and for writing once, by the pool, when it
//! ends: the write waits for the polls in progress on other threads to finish, and marks the
//! pool fenced, and a reconcile polled after that is dropped unpolled. So a reconcile that
//! never yields (a long computation) delays the fence until it does; the write it may send at
//! the end of that poll was started before the fence returned. The queue is shut down first,
//! so the keys the workers held end as done rather than being re-queued, and the worker tasks
//! are aborted last. With a lease deadline, each poll of a reconcile first compares the clock
//! with the deadline: a process that was frozen (SIGSTOP, a paused VM) past its lease resumes
//! with its reconciles dropped unpolled, whichever task the runtime wakes first.
//!
//! Where it differs from client-go: client-go's workers run on until the process exits
//! (kube-controller-manager exits on a lost lease); here the pool fences itself.

mod fence;

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio::sync::watch;
use tokio::task::JoinSet;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use clientgo_journey::{ReconcileOutcome, Stage, target};

use crate::queue::{Processing, Queue, QueueItem};
use fence::{Deadline, Fence, Guarded, Outcome, Stopped};

/// What a successful reconcile asks for its key: nothing until it is added again (a change
/// came in), or another look once a delay has passed, for state outside the API server's
/// watch (an external system, a certificate's expiry, a periodic check). controller-runtime's
/// `Result{RequeueAfter}`, kube-rs's `Action`.
///
/// A reconcile returning `Result<(), E>` means [`Reconciled::Done`] on `Ok`; one returning
/// `Result<Reconciled, E>` chooses. An error always means a retry after the key's backoff,
/// whatever a success would have asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reconciled {
    /// Forget the key's failures; it comes back when something adds it again.
    #[default]
    Done,
    /// Forget the key's failures and add it again once this much time has passed (at once
    /// for zero). An add that comes sooner runs it sooner; the delayed add still comes, and
    /// finds it waiting or runs it again.
    RequeueAfter(Duration),
}

impl From<()> for Reconciled {
    fn from((): ()) -> Reconciled {
        Reconciled::Done
    }
}

/// How long reconciles in hand may run on after cancel, by default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// What a [`WorkerPool`]'s workers did. Clones share their counts, so a controller can keep
/// one and hand clones to the pool.
#[derive(Debug, Clone, Default)]
pub struct WorkerStats {
    /// Reconciles that succeeded (their keys were forgotten).
    pub succeeded: Counter,
    /// Reconciles that failed or panicked (their keys retried after backoff).
    pub failed: Counter,
    /// Reconciles that panicked (also counted in `failed`).
    pub panicked: Counter,
    /// Reconciles dropped unfinished: a drain that ran out of time, or `run`'s future dropped.
    pub cancelled: Counter,
    /// Reconciles running now.
    pub active: Gauge,
}

impl WorkerStats {
    /// Registers the counters as `reconciles_succeeded`, `reconciles_failed`,
    /// `reconcile_panics`, `reconciles_cancelled` and the gauge `active_reconciles`; give a
    /// registry with the controller's prefix (`Registry::sub_registry_with_prefix`).
    pub fn register(&self, registry: &mut Registry) {
        for (name, help, counter) in [
            (
                "reconciles_succeeded",
                "Reconciles that succeeded",
                &self.succeeded,
            ),
            (
                "reconciles_failed",
                "Reconciles that failed and were retried with backoff",
                &self.failed,
            ),
            (
                "reconcile_panics",
                "Reconciles that panicked (also counted as failed)",
                &self.panicked,
            ),
            (
                "reconciles_cancelled",
                "Reconciles cancelled in flight (a drain that ran out of time, or the workers dropped)",
                &self.cancelled,
            ),
        ] {
            registry.register(name, help, counter.clone());
        }
        registry.register(
            "active_reconciles",
            "Reconciles running now",
            self.active.clone(),
        );
    }
}

/// A pool of workers over one queue. See the module documentation.
#[derive(Debug, Clone)]
pub struct WorkerPool {
    workers: usize,
    drain_timeout: Duration,
    stats: WorkerStats,
    deadline: Option<watch::Receiver<Instant>>,
}

impl WorkerPool {
    /// `workers` workers (at least one), with [`DEFAULT_DRAIN_TIMEOUT`].
    pub fn new(workers: usize) -> Self {
        WorkerPool {
            workers: workers.max(1),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            stats: WorkerStats::default(),
            deadline: None,
        }
    }

    /// Counts into `stats` (a clone of the controller's own) instead of private counters.
    pub fn stats(mut self, stats: WorkerStats) -> Self {
        self.stats = stats;
        self
    }

    /// How long reconciles in hand may run on after cancel before they are dropped.
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Works only while a lease is valid: `valid_until` holds the instant until which its
    /// holder may act, moved forward by each renewal (a leader election's `Fence::deadline`).
    /// No reconcile starts at or after it, and each poll of a reconcile in hand first checks
    /// it, so one in hand when it passes is dropped unfinished (its key retried), even when
    /// the process was frozen and the runtime wakes the reconcile before the elector.
    pub fn fence(mut self, valid_until: watch::Receiver<Instant>) -> Self {
        self.deadline = Some(valid_until);
        self
    }

    /// Runs the workers, each a task of its own, until `cancel`, then shuts `queue` down,
    /// drains (bounded) and returns. Each key is handed to `reconcile`: `Ok` forgets its
    /// failures (and, with [`Reconciled::RequeueAfter`], adds it again after the delay, on a
    /// queue with delays), `Err` or a panic retries it after its backoff (on a rate-limited
    /// queue; at once on a plain one). The queue is shut down when this returns or its future is
    /// dropped, and then no reconcile of the pool is polled again (see the module docs).
    pub async fn run<T, F, Fut, R, E>(
        self,
        queue: &Queue<T>,
        reconcile: F,
        cancel: CancellationToken,
    ) where
        T: QueueItem + Display + Sync,
        F: Fn(T) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Into<Reconciled> + 'static,
        E: Display + 'static,
    {
        let shared = Arc::new(Shared {
            queue: queue.clone(),
            reconcile,
            stats: self.stats.clone(),
            fence: Fence::default(),
            deadline: self.deadline.clone(),
        });
        // Dropped last of all (a dropped `run` included): the queue is shut down, then the
        // fence closed, then the tasks aborted.
        let mut pool = Pool {
            shared: shared.clone(),
            tasks: JoinSet::new(),
        };
        for index in 0..self.workers {
            pool.tasks.spawn(worker(index, shared.clone()));
        }
        let finished = {
            let mut all = std::pin::pin!(pool.join());
            let mut cancelled = std::pin::pin!(cancel.cancelled());
            std::future::poll_fn(|cx| {
                if all.as_mut().poll(cx).is_ready() {
                    return std::task::Poll::Ready(true);
                }
                cancelled.as_mut().poll(cx).map(|()| false)
            })
            .await
        };
        if !finished {
            tracing::info!(drain_timeout = ?self.drain_timeout, "shutting down: draining in-flight work");
            queue.shut_down();
            if tokio::time::timeout(self.drain_timeout, pool.join())
                .await
                .is_err()
            {
                tracing::warn!(
                    drain_timeout = ?self.drain_timeout,
                    "reconciles still running after the drain timeout: cancelled"
                );
            }
        }
        pool.end();
        // The aborted tasks release their keys as they go; wait for that, so that nothing of
        // the pool is left when `run` returns.
        while pool.tasks.join_next().await.is_some() {}
    }
}

/// [`WorkerPool::new(workers).run(queue, reconcile, cancel)`](WorkerPool::run).
pub async fn run_workers<T, F, Fut, R, E>(
    queue: &Queue<T>,
    workers: usize,
    reconcile: F,
    cancel: CancellationToken,
) where
    T: QueueItem + Display + Sync,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Into<Reconciled> + 'static,
    E: Display + 'static,
{
    WorkerPool::new(workers).run(queue, reconcile, cancel).await
}

/// What the workers of one pool share.
struct Shared<T: QueueItem, F> {
    queue: Queue<T>,
    reconcile: F,
    stats: WorkerStats,
    fence: Fence,
    deadline: Option<watch::Receiver<Instant>>,
}

/// The running pool: its tasks, ended in the order the fence needs when dropped.
struct Pool<T: QueueItem, F> {
    shared: Arc<Shared<T, F>>,
    tasks: JoinSet<()>,
}

impl<T: QueueItem, F> Pool<T, F> {
    /// Waits until every worker has returned (the queue shut down and empty). A worker task
    /// cannot panic (reconciles are caught); if one did, that is logged.
    async fn join(&mut self) {
        while let Some(joined) = self.tasks.join_next().await {
            if let Err(error) = joined
                && error.is_panic()
            {
                tracing::error!("a worker task panicked outside its reconcile");
            }
        }
    }

    /// Shuts the queue down, closes the fence (waiting for reconcile polls in progress), and
    /// aborts the worker tasks. Idempotent.
    fn end(&mut self) {
        self.shared.queue.shut_down();
        self.shared.fence.close(&self.shared.stats);
        self.tasks.abort_all();
    }
}

impl<T: QueueItem, F> Drop for Pool<T, F> {
    fn drop(&mut self) {
        self.end();
    }
}

/// One worker: takes keys until the queue is shut down and empty; once shutting down it
/// starts nothing new, nor while the lease deadline (if any) has passed.
async fn worker<T, F, Fut, R, E>(index: usize, shared: Arc<Shared<T, F>>)
where
    T: QueueItem + Display + Sync,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, E>> + Send + 'static,
    R: Into<Reconciled> + 'static,
    E: Display + 'static,
{
    let Shared {
        queue,
        reconcile,
        stats,
        fence,
        deadline,
    } = &*shared;
    let mut deadline = deadline.clone();
    while let Some(held) = queue.get().await {
        if queue.shutting_down() || fence.is_closed() {
            held.done();
            continue;
        }
        if let Some(until) = &mut deadline
            && Instant::now() >= *until.borrow_and_update()
        {
            // Not ours to work on now: back in the queue (a dropped hold is retried), and
            // wait for a renewal; the pool is ended before then if the lease was lost.
            drop(held);
            if until.changed().await.is_err() {
                return; // the lease's holder is gone: so is this pool, soon
            }
            continue;
        }
        // Yield once before the reconcile: the queue's hand-off woke the next getter from
        // this poll, and tokio keeps a task woken that way in this thread's LIFO slot, which
        // the other threads cannot steal from; a reconcile that held the thread for long
        // would keep that worker from starting (seen in the parallelism test without this).
        // After the yield the woken worker runs here next, and this one can be stolen.
        tokio::task::yield_now().await;
        let Some(active) = fence.start(stats) else {
            held.done();
            continue;
        };
        let key = held.item().clone();
        // The reconcile's journey span (see the flight recorder): its worker, its outcome.
        let span = tracing::trace_span!(target: target::WORKQUEUE, "reconcile",
            stage = Stage::Reconcile.name(), queue = queue.name(), key = %key,
            worker = index as u64, outcome = tracing::field::Empty);
        // A closure that panics before it returns a future fails the key like any panic.
        let outcome: Outcome<Result<R, E>> =
            match std::panic::catch_unwind(AssertUnwindSafe(|| reconcile(key))) {
                Ok(future) => {
                    Guarded::new(future, fence, deadline.clone().map(Deadline::new))
                        .instrument(span.clone())
                        .await
                }
                Err(panic) => Ok(Err(panic)),
            };
        let outcome = outcome.map(|caught| caught.map(|result| result.map(Into::into)));
        let word = match &outcome {
            Ok(Ok(Ok(Reconciled::Done))) => ReconcileOutcome::Ok,
            Ok(Ok(Ok(Reconciled::RequeueAfter(_)))) => ReconcileOutcome::Requeue,
            Ok(Ok(Err(_))) => ReconcileOutcome::Error,
            Ok(Err(_)) => ReconcileOutcome::Panic,
            Err(Stopped::Fenced) => ReconcileOutcome::Fenced,
            Err(Stopped::Expired) => ReconcileOutcome::Expired,
        };
        span.record("outcome", word.name());
        drop(span);
        match outcome {
            Ok(outcome) => {
                active.finished();
                settle(held, outcome, stats);
            }
            // Counted as cancelled; the hold is dropped: done if the queue is shut down,
            // retried otherwise.
            Err(Stopped::Fenced) => drop(active),
            Err(Stopped::Expired) => {
                tracing::warn!(key = %held.item(), "the lease ran out: reconcile dropped");
                drop(active);
            }
        }
    }
}

/// Ends the hold according to the reconcile's outcome.
fn settle<T, E>(
    held: Processing<'_, T>,
    outcome: Result<Result<Reconciled, E>, Box<dyn Any + Send>>,
    stats: &WorkerStats,
) where
    T: QueueItem + Display,
    E: Display,
{
    match outcome {
        Ok(Ok(reconciled)) => {
            stats.succeeded.inc();
            match reconciled {
                Reconciled::Done => held.forget(),
                Reconciled::RequeueAfter(delay) => held.requeue_after(delay),
            }
        }
        Ok(Err(error)) => {
            stats.failed.inc();
            tracing::warn!(key = %held.item(), %error, "reconcile failed; retrying after backoff");
            held.retry();
        }
        Err(panic) => {
            stats.failed.inc();
            stats.panicked.inc();
            tracing::error!(
                key = %held.item(),
                panic = panic_message(panic.as_ref()),
                "reconcile panicked; retrying after backoff"
            );
            held.retry();
        }
    }
}

/// The message of a panic payload, when it is a string.
fn panic_message(payload: &(dyn Any + Send)) -> &str {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("(not a string)")
}
