//! Work queues for Kubernetes controllers: client-go's `util/workqueue`, in Rust.
//!
//! A controller's event handlers turn changes into keys (`namespace/name`) and add them to a
//! work queue; workers take keys from the queue and reconcile them. The queue is what makes that
//! loop level-based and safe:
//!
//! * [`Queue`], one type for client-go's three layers: coalesces duplicate keys, never hands
//!   one key to two workers at once, and hands a key out again if it changed while it was
//!   being processed; adds keys after a delay, with one timer for the whole queue; retries
//!   failed keys after a delay chosen by a [`RateLimiter`], typically growing per failure.
//! * Priority: a queue built with [`QueueBuilder::priority`] hands out the highest priority
//!   first, with aging so that nothing starves; after a restart, real changes pass the backlog
//!   of the initial list (not in client-go; controller-runtime has one without aging).
//! * [`run_workers`] and [`WorkerPool`]: the worker loop around a queue, workers as tasks on
//!   every core, with panic isolation, forget on success, retry after backoff on failure, a
//!   bounded drain on cancel, and a fence (nothing runs after the pool, nor past a lease's
//!   deadline).
//! * Metrics with client-go's names through a [`MetricsProvider`], ready for Prometheus with
//!   [`PrometheusMetricsProvider`].
//!
//! # The worker loop
//!
//! [`run_workers`] is the loop a controller runs over its queue (client-go's
//! `wait.UntilWithContext(ctx, c.runWorker, time.Second)` around `processNextWorkItem`): each
//! key goes to the reconcile, is forgotten on success and comes back after its backoff on an
//! error or a panic; on cancel the queue shuts down and the reconciles in hand get a bounded
//! drain. A reconcile that needs another look later, for state the API server does not watch
//! (an external system, an expiry), returns `Ok(`[`Reconciled::RequeueAfter`]`(delay))`
//! instead of `Ok(())`: the key comes back once the delay has passed.
//!
//! ```
//! use clientgo_workqueue::{ObjectKey, Queue, run_workers};
//! use tokio_util::sync::CancellationToken;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let queue = Queue::<ObjectKey>::with_default_rate_limiter();
//! queue.add(ObjectKey::new("default", "web")); // what an event handler does on a change
//! let shutdown = CancellationToken::new(); // cancelled on SIGTERM in a program
//! let stop = shutdown.clone();
//! // The workers are tasks: the reconcile owns what it uses (clones of handles).
//! let reconcile = move |key: ObjectKey| {
//!     let shutdown = stop.clone();
//!     async move {
//!         // read the cache at key.namespace(), key.name(); write the difference
//!         println!("reconciling {key}");
//!         shutdown.cancel(); // (this one stops after a key)
//!         Ok::<(), String>(()) // Err: retried after a backoff
//!     }
//! };
//! run_workers(&queue, 2, reconcile, shutdown.clone()).await;
//! # }
//! ```
//!
//! Where the keys come from, the informers, is in `clientgo_informer`'s crate docs; complete
//! controllers are the examples of the `clientgo` crate (`clientgo/examples/`).
//!
//! # What a worker does
//!
//! The same loop by hand, one worker, without the panic isolation and the bounded drain:
//!
//! ```
//! use std::sync::Arc;
//! use clientgo_workqueue::Queue;
//!
//! async fn reconcile(key: &str) -> Result<(), String> {
//!     println!("reconciling {key}");
//!     Ok(())
//! }
//!
//! async fn worker(queue: Queue<Arc<str>>) {
//!     // `get` returns None once the queue is shut down and empty.
//!     while let Some(key) = queue.get().await {
//!         // End each hold with an outcome. A guard dropped without one (a panic, an aborted
//!         // task) counts as a failure: the key is retried after its backoff, not lost.
//!         match reconcile(&key).await {
//!             Ok(()) => key.forget(), // success: drop its failure history; done
//!             Err(_) => key.retry(),  // failure: back in line after its backoff; done
//!         }
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let queue = Queue::rate_limiting(Arc::new(
//!     clientgo_ratelimit::default_controller_rate_limiter(),
//! ));
//! queue.add(Arc::from("default/web"));
//! let worker = tokio::spawn(worker(queue.clone()));
//! queue.shut_down_with_drain().await;
//! worker.await.unwrap();
//! # }
//! ```

#![deny(missing_docs)]

mod builder;
mod item;
mod line;
mod metrics;
mod options;
mod pending;
mod prometheus;
mod queue;
mod state;
mod sync;
mod waiters;
#[cfg(not(clientgo_loom))]
mod workers;

pub use builder::QueueBuilder;
pub use line::{PRIORITY_LOW, PRIORITY_NORMAL, Priority};
pub use metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric, set_provider,
};
pub use options::{AddOptions, DEFAULT_AGING, QueueConfig};
pub use prometheus::PrometheusMetricsProvider;
pub use queue::{Drain, Get, Processing, Queue, QueueItem};
#[cfg(not(clientgo_loom))]
pub use workers::{DEFAULT_DRAIN_TIMEOUT, Reconciled, WorkerPool, WorkerStats, run_workers};

#[doc(no_inline)]
pub use clientgo_apimachinery::ObjectKey;
#[doc(no_inline)]
pub use clientgo_ratelimit::RateLimiter;
