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
//!
//! The workers are futures polled by the task that awaits [`WorkerPool::run`], not tasks of
//! their own, on purpose: dropping `run`'s future drops every reconcile in flight, so none
//! sends another write after it (a controller that lost its lease relies on that fence), and
//! the queue is shut down first, so their held keys end as done rather than being re-queued.
//! Reconciles wait on the network, not the CPU, so one task serves them.

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::queue::{Processing, Queue, QueueItem};

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
}

impl WorkerPool {
    /// `workers` workers (at least one), with [`DEFAULT_DRAIN_TIMEOUT`].
    pub fn new(workers: usize) -> Self {
        WorkerPool {
            workers: workers.max(1),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            stats: WorkerStats::default(),
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

    /// Runs the workers until `cancel`, then shuts `queue` down, drains (bounded) and returns.
    /// Each key is handed to `reconcile`: `Ok` forgets its failures, `Err` or a panic
    /// retries it after its backoff (on a rate-limited queue; at once on a plain one). The
    /// queue is shut down when this returns or its future is dropped.
    pub async fn run<T, F, Fut, E>(self, queue: &Queue<T>, reconcile: F, cancel: CancellationToken)
    where
        T: QueueItem + Display,
        F: Fn(T) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
    {
        let reconcile = &reconcile;
        let stats = &self.stats;
        let mut pool: Vec<_> = (0..self.workers)
            .map(|index| Box::pin(worker(index, queue, reconcile, stats)))
            .collect();
        // Declared after the pool, so dropped before it: a dropped `run` shuts the queue down
        // before the held keys are released, and they end as done instead of re-queued.
        let _shut_down = ShutDownOnDrop(queue);
        let mut all = std::pin::pin!(JoinAll(&mut pool));
        let mut cancelled = std::pin::pin!(cancel.cancelled());
        let queue_shut_down = std::future::poll_fn(|cx| {
            if all.as_mut().poll(cx).is_ready() {
                return Poll::Ready(true);
            }
            cancelled.as_mut().poll(cx).map(|()| false)
        })
        .await;
        if queue_shut_down {
            return; // by someone else: the workers are done
        }
        tracing::info!(drain_timeout = ?self.drain_timeout, "shutting down: draining in-flight work");
        queue.shut_down();
        if tokio::time::timeout(self.drain_timeout, all).await.is_err() {
            tracing::warn!(
                drain_timeout = ?self.drain_timeout,
                "reconciles still running after the drain timeout: cancelled"
            );
        }
        // Dropping the pool here drops any reconcile still in hand: nothing outlives `run`.
    }
}

/// [`WorkerPool::new(workers).run(queue, reconcile, cancel)`](WorkerPool::run).
pub async fn run_workers<T, F, Fut, E>(
    queue: &Queue<T>,
    workers: usize,
    reconcile: F,
    cancel: CancellationToken,
) where
    T: QueueItem + Display,
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    WorkerPool::new(workers).run(queue, reconcile, cancel).await
}

/// One worker: takes keys until the queue is shut down and empty; once shutting down it
/// starts nothing new.
async fn worker<T, F, Fut, E>(index: usize, queue: &Queue<T>, reconcile: &F, stats: &WorkerStats)
where
    T: QueueItem + Display,
    F: Fn(T) -> Fut,
    Fut: Future<Output = Result<(), E>>,
    E: Display,
{
    while let Some(held) = queue.get().await {
        if queue.shutting_down() {
            held.done();
            continue;
        }
        let key = held.item().clone();
        // The reconcile's journey span (see the flight recorder): its worker, its outcome.
        let span = tracing::trace_span!(target: "clientgo_workqueue::journey", "reconcile",
            stage = "reconcile", queue = queue.name(), key = %key, worker = index as u64,
            outcome = tracing::field::Empty);
        let active = Active::new(stats);
        let outcome = CatchUnwind(Box::pin(reconcile(key)))
            .instrument(span.clone())
            .await;
        active.finished();
        span.record(
            "outcome",
            match &outcome {
                Ok(Ok(())) => "ok",
                Ok(Err(_)) => "error",
                Err(_) => "panic",
            },
        );
        drop(span);
        settle(held, outcome, stats);
    }
}

/// Ends the hold according to the reconcile's outcome.
fn settle<T, E>(
    held: Processing<'_, T>,
    outcome: Result<Result<(), E>, Box<dyn Any + Send>>,
    stats: &WorkerStats,
) where
    T: QueueItem + Display,
    E: Display,
{
    match outcome {
        Ok(Ok(())) => {
            stats.succeeded.inc();
            held.forget();
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

/// A reconcile in flight: counted in `active`, and in `cancelled` if dropped unfinished.
struct Active<'a> {
    stats: &'a WorkerStats,
    finished: bool,
}

impl<'a> Active<'a> {
    fn new(stats: &'a WorkerStats) -> Self {
        stats.active.inc();
        Active {
            stats,
            finished: false,
        }
    }

    fn finished(mut self) {
        self.finished = true;
    }
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        self.stats.active.dec();
        if !self.finished {
            self.stats.cancelled.inc();
        }
    }
}

/// Shuts the queue down when dropped.
struct ShutDownOnDrop<'a, T: QueueItem>(&'a Queue<T>);

impl<T: QueueItem> Drop for ShutDownOnDrop<'_, T> {
    fn drop(&mut self) {
        self.0.shut_down();
    }
}

/// Polls a future, turning a panic in any poll into `Err` with the payload.
struct CatchUnwind<F>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = Result<F::Output, Box<dyn Any + Send>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let inner = self.0.as_mut();
        match std::panic::catch_unwind(AssertUnwindSafe(|| inner.poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// Polls every worker until all have returned.
struct JoinAll<'a, W>(&'a mut Vec<Pin<Box<W>>>);

impl<W: Future<Output = ()>> Future for JoinAll<'_, W> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        self.0
            .retain_mut(|worker| worker.as_mut().poll(cx).is_pending());
        if self.0.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}
