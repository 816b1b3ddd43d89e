//! How the controller's workers run: as futures polled by the controller's own task, each
//! reconcile under [`isolated`], which turns a panic into a [`Failure`].
//!
//! client-go runs each worker as a goroutine and lets a panic crash the process (its
//! `HandleCrash`). Here the workers are futures, not tasks, for one reason: a spawned task
//! outlives a dropped handle, a future does not. When leadership is lost the elector drops
//! the controller's future, and with it every reconcile in flight, so none sends another
//! write (the fence). Reconciles wait on the network, not the CPU, so one task serves them.
//! A panic in a reconcile is caught in the worker ([`isolated`]), counted, and retried with
//! backoff like an error; the panicked future is never polled again.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use clientgo_workqueue::Queue;

use crate::controller::{ReconcileError, Stats};

/// How a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// It returned an error.
    #[error(transparent)]
    Error(#[from] ReconcileError),
    /// It panicked; the panic was caught and the worker went on.
    #[error("reconcile panicked: {0}")]
    Panicked(String),
}

/// Runs one reconcile so that a panic is caught and reported like an error instead of
/// taking the worker (and its held key) down with it. The reconcile runs in the caller's
/// task (see the module docs): dropping this future drops the reconcile.
pub async fn isolated<F>(reconcile: F) -> Result<(), Failure>
where
    F: Future<Output = Result<(), ReconcileError>>,
{
    let mut reconcile = std::pin::pin!(reconcile);
    std::future::poll_fn(|cx| {
        match std::panic::catch_unwind(AssertUnwindSafe(|| reconcile.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(result)) => Poll::Ready(result.map_err(Failure::Error)),
            // The panicked future is never polled again: it is dropped with this one.
            Err(panic) => Poll::Ready(Err(Failure::Panicked(panic_message(panic.as_ref())))),
        }
    })
    .await
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with a non-string payload".to_owned())
}

/// A worker's future, polled by the controller's task.
pub(crate) type Worker<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// Polls every worker whenever one is woken, until all have returned.
pub(crate) async fn join_all(mut workers: Vec<Worker<'_>>) {
    std::future::poll_fn(|cx| {
        workers.retain_mut(|worker| worker.as_mut().poll(cx).is_pending());
        if workers.is_empty() {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    })
    .await
}

/// Shuts the queue down when the controller's future ends or is dropped.
pub(crate) struct ShutDownOnDrop<'a>(pub(crate) &'a Queue<Arc<str>>);

impl Drop for ShutDownOnDrop<'_> {
    fn drop(&mut self) {
        self.0.shut_down();
    }
}

/// A reconcile in flight: counted in `active`, and in `cancelled` if dropped unfinished.
pub(crate) struct Active<'a> {
    stats: &'a Stats,
    finished: bool,
}

impl<'a> Active<'a> {
    pub(crate) fn new(stats: &'a Stats) -> Self {
        stats.active.inc();
        Active {
            stats,
            finished: false,
        }
    }

    pub(crate) fn finished(mut self) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_reconcile_is_a_failure_not_a_crash() {
        let outcome = isolated(async { panic!("bug in reconcile") }).await;
        assert!(matches!(outcome, Err(Failure::Panicked(_))), "{outcome:?}");
        let outcome = isolated(async { Err(ReconcileError::NotOwned("d".into())) }).await;
        assert!(matches!(
            outcome,
            Err(Failure::Error(ReconcileError::NotOwned(_)))
        ));
        assert!(isolated(async { Ok(()) }).await.is_ok());
    }
}
