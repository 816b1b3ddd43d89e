//! Running a shared informer: the reflector's task, the process loop, and how a run ends
//! (cancelled for good, or stopped by a panic and ready to run again). client-go's
//! `sharedIndexInformer.Run` and `controller.processLoop`.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;

use clientgo_apimachinery::Object;
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::SharedIndexInformer;
use super::wiring::{Distributor, InformerQueue, resync_loop};
use crate::controller::process_deltas;
use crate::fifo::Queue;
use crate::metrics::approx_json_size;
use crate::panics::PanicSource;

impl<T: Object + Send + Sync + 'static> SharedIndexInformer<T> {
    /// Runs the informer until `cancel` fires: the reflector, the process loop and the
    /// handlers' tasks. Returns once they all stopped. A second call while it runs, or after
    /// it was stopped by `cancel`, returns at once.
    ///
    /// Under [`PanicPolicy::Stop`](crate::PanicPolicy::Stop) a panic also ends the run, with
    /// [`failure`](Self::failure) saying why; the handlers stay registered (what is buffered
    /// for them is still delivered), and calling `run` again starts over with a relist whose
    /// notifications reach every handler.
    pub async fn run(&self, cancel: CancellationToken) {
        let inner = &*self.inner;
        let (reflector, resync_period) = {
            let mut state = inner.state.lock();
            if state.started {
                tracing::warn!(informer = %inner.name, "the informer has started already; run more than once is not allowed");
                return;
            }
            state.started = true;
            state.runs += 1;
            if state.runs > 1 {
                tracing::info!(informer = %inner.name, "running again after a failure: relisting");
            }
            if state.metered {
                let estimate = state
                    .size_estimator
                    .take()
                    .unwrap_or_else(|| Arc::new(approx_json_size::<T>));
                inner.indexer.keep_sizes(estimate);
            }
            let check = state.resync_check_period;
            if let Some(factory) = state.factory.take() {
                let processor = inner.processor.clone();
                let mut options = state.reflector_options.clone();
                if options.name.is_empty() {
                    options.name.clone_from(&inner.name);
                }
                options.resync_period = (!check.is_zero()).then_some(check);
                options.should_resync =
                    Some(Arc::new(move || processor.should_resync(Instant::now())));
                let reflector = factory(inner.queue.store(), options);
                if let Some(handler) = state.watch_error_handler.clone() {
                    reflector.set_watch_error_handler(handler);
                }
                state.reflector = Some(reflector);
            }
            (
                state.reflector.clone(),
                (state.manual && !check.is_zero()).then_some(check),
            )
        };
        // The run's own token: the caller's cancellation, or a panic under `Stop`.
        let run = cancel.child_token();
        inner.failures.run_started(run.clone());
        inner.processor.run();
        let mut reflector = reflector.map(|r| tokio::spawn(r.run(run.clone())));
        let resync = resync_period.map(|period| {
            tokio::spawn(resync_loop(
                inner.queue.store(),
                inner.processor.clone(),
                period,
                run.clone(),
            ))
        });

        // Until cancelled, or until the reflector's task dies (a panic).
        let reflector_ended = async {
            match reflector.as_mut() {
                Some(task) => task.await,
                None => std::future::pending().await,
            }
        };
        let ended = tokio::select! {
            () = self.process(&run) => None,
            joined = reflector_ended => Some(joined),
        };
        if let Some(joined) = ended {
            reflector = None;
            self.reflector_ended(joined);
        }
        run.cancel();

        // Stop: the queue, the reflector, then (no new handlers) the handlers.
        let failed = inner.failures.failure().is_some() && !cancel.is_cancelled();
        if !failed {
            inner.queue.close();
        }
        for task in reflector.into_iter().chain(resync) {
            self.reflector_ended(task.await);
        }
        inner.failures.run_ended();
        if let Some(failure) = inner.failures.failure().filter(|_| failed) {
            // The queue was discarded when the panic was reported; with the reflector gone,
            // it takes pushes again (a manual informer's feeder may relist before the next
            // run). The handlers keep their registrations and buffers for the next run.
            inner.queue.reopen();
            tracing::error!(informer = %inner.name, %failure, "informer stopped; run it again to rebuild the cache from a relist");
            inner.state.lock().started = false;
            return;
        }
        inner.state.lock().stopped = true;
        inner.processor.stop().await;
    }

    /// How a task of the run ended: a panic is reported (the reflector's, unless it is the
    /// transform's, already reported).
    fn reflector_ended(&self, joined: Result<(), tokio::task::JoinError>) {
        match joined {
            Ok(()) => {}
            Err(error) if error.is_panic() => {
                let payload = error.into_panic();
                self.inner
                    .failures
                    .panicked(PanicSource::Reflector, &*payload);
            }
            Err(error) => {
                tracing::error!(informer = %self.inner.name, %error, "informer task failed");
            }
        }
    }

    /// Pops the queue into the store and the handlers until `run` is cancelled (client-go's
    /// `processLoop`). A panic while an item is applied (an index function's) is reported
    /// once the queue's lock is released.
    async fn process(&self, run: &CancellationToken) {
        match &self.inner.queue {
            InformerQueue::Real(queue) => self.process_queue(&**queue, run).await,
            InformerQueue::Delta(queue) => self.process_queue(&**queue, run).await,
        }
    }

    async fn process_queue<Q: Queue<T>>(&self, queue: &Q, run: &CancellationToken) {
        let inner = &*self.inner;
        // A panic ends the loop; it is reported after `pop` returned, outside the queue's
        // lock (the DeltaFIFO processes under it, and a report discards the queue).
        let panicked = Mutex::new(None);
        let mut process = |deltas, initial| {
            let _blocked = inner.block_deltas.lock();
            let distributor = Distributor {
                processor: &inner.processor,
                initial,
            };
            let applied = std::panic::catch_unwind(AssertUnwindSafe(|| {
                process_deltas(&distributor, &inner.indexer, deltas, initial)
            }));
            if let Err(payload) = applied {
                *panicked.lock() = Some(payload);
                run.cancel();
            }
        };
        loop {
            // A handler far behind holds the next item back (see `processor`).
            tokio::select! {
                biased;
                _ = run.cancelled() => break,
                () = inner.processor.wait_for_room() => {}
            }
            let popped = tokio::select! {
                biased;
                _ = run.cancelled() => break,
                popped = queue.pop(&mut process) => popped,
            };
            if popped.is_none() {
                break; // closed and drained
            }
        }
        if let Some(payload) = panicked.into_inner() {
            inner.failures.panicked(PanicSource::Indexer, &*payload);
        }
    }
}
