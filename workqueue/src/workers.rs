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

use std::any::Any;
use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio_util::sync::CancellationToken;

use crate::queue::{Processing, Queue, QueueItem};

/// How long reconciles in hand may run on after cancel, by default.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// A pool of workers over one queue. See the module documentation.
#[derive(Debug, Clone, Copy)]
pub struct WorkerPool {
    workers: usize,
    drain_timeout: Duration,
}

impl WorkerPool {
    /// `workers` workers (at least one), with [`DEFAULT_DRAIN_TIMEOUT`].
    pub fn new(workers: usize) -> Self {
        WorkerPool {
            workers: workers.max(1),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }

    /// How long reconciles in hand may run on after cancel before they are dropped.
    pub fn drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// Runs the workers until `cancel`, then shuts `queue` down, drains (bounded) and returns.
    /// Each key is handed to `reconcile`: `Ok` forgets its failures, `Err` or a panic
    /// retries it after its backoff (on a rate-limited queue; at once on a plain one).
    pub async fn run<T, F, Fut, E>(self, queue: &Queue<T>, reconcile: F, cancel: CancellationToken)
    where
        T: QueueItem + Display,
        F: Fn(T) -> Fut,
        Fut: Future<Output = Result<(), E>>,
        E: Display,
    {
        let reconcile = &reconcile;
        let mut pool: Vec<_> = (0..self.workers)
            .map(|_| Box::pin(worker(queue, reconcile)))
            .collect();
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
async fn worker<T, F, Fut, E>(queue: &Queue<T>, reconcile: &F)
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
        let outcome = CatchUnwind(Box::pin(reconcile(key))).await;
        settle(held, outcome);
    }
}

/// Ends the hold according to the reconcile's outcome.
fn settle<T, E>(held: Processing<'_, T>, outcome: Result<Result<(), E>, Box<dyn Any + Send>>)
where
    T: QueueItem + Display,
    E: Display,
{
    match outcome {
        Ok(Ok(())) => held.forget(),
        Ok(Err(error)) => {
            tracing::warn!(key = %held.item(), %error, "reconcile failed; retrying after backoff");
            held.retry();
        }
        Err(panic) => {
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
