//! One cache per collection, shared by many handlers: client-go's `SharedIndexInformer`
//! (`tools/cache/shared_informer.go`).
//!
//! A [`SharedIndexInformer`] owns one reflector, one queue ([`RealFIFO`] in atomic mode by
//! default, [`DeltaFIFO`] on request), one [`Indexer`] and one processor. [`run`] starts the
//! reflector, pops the queue, applies each item to the indexer and then hands the
//! notifications to every registered handler through the handler's own unbounded buffer and
//! task (see `processor/`): a slow handler never blocks the queue or the others.
//!
//! Handlers can be added before or after [`run`]. A handler added later first receives an
//! `on_add(obj, true)` for every cached object, queued while delivery to all handlers is
//! held (`block_deltas`), so it misses nothing and sees nothing twice. Each
//! [`Registration`](crate::Registration) has its own `has_synced`: the informer has synced
//! and the handler has handled its initial adds.
//!
//! Resyncs follow client-go's rules: a handler's period is at least 1 s; the informer's
//! *check period* (how often the reflector's resync timer fires) starts at the informer's
//! default period and is lowered by handlers asking for less before the informer starts;
//! after the start, a smaller period is raised to the check period. At each check, handlers
//! whose period is due are marked, and the resync's `on_update(o, o)` notifications reach
//! only them.
//!
//! Where it differs from client-go, and why:
//!
//! * [`SharedIndexInformer::new_manual`] builds an informer without a reflector whose queue
//!   ([`SharedIndexInformer::queue`]) the caller feeds: an informer that tests (ours, and
//!   users' controller tests) drive without a server. It runs the resync timer itself.
//! * [`wait_for_cache_sync`] takes a timeout and says why each cache is not synced (the
//!   reflector's last error: forbidden, not found, throttled, ...), instead of polling
//!   until a stop channel closes.
//! * What a panic in a transform, an index function or a handler does is a per-informer
//!   choice, [`PanicPolicy`](crate::PanicPolicy): abort the process (client-go's default,
//!   and ours) or stop the informer as a whole, reported by [`failure`](SharedIndexInformer::failure),
//!   `has_synced`, `wait_for_cache_sync` and metrics, until [`run`] is called again and
//!   rebuilds the cache from a relist. See the `panics` module.
//! * With [`SharedInformerOptions::metrics`], the informer reports its reflector's lists and
//!   watches, its cache's size and its handlers' backlogs to Prometheus (see
//!   [`InformerMetrics`]); client-go's informers have no such metrics.
//!
//! [`run`]: SharedIndexInformer::run

use std::any::type_name;
use std::fmt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::time::Duration;

use clientgo_apimachinery::Object;
use parking_lot::Mutex;
use serde::de::DeserializeOwned;

mod handlers;
pub(crate) mod journey;
mod run;
mod wiring;

pub use handlers::HandlerOptions;

use crate::cache_sync::{InformerSynced, NotSyncedReason};
use crate::fifo::{DEFAULT_QUEUE_CAPACITY, DeltaFIFO, DeltaFIFOOptions, RealFIFO, SyncedFlag};
use crate::lister::Lister;
use crate::listwatch::{ListWatchError, ListerWatcher};
use crate::metrics::{InformerMetrics, InformerSource, ObjectSizeFn, SourceSnapshot};
use crate::panics::{Failures, InformerFailure, PanicPolicy, PanicSource};
use crate::processor::{DEFAULT_HANDLER_BUFFER_LIMIT, SharedProcessor};
use crate::reflector::{Reflector, ReflectorOptions};
use crate::reflector_store::ReflectorStore;
use crate::store::{IndexError, Indexer, Indexers};
use crate::transform::TransformFunc;
use wiring::{ErrorHandler, InformerQueue, ReflectorFactory, RunReflector};

/// The smallest resync period a handler gets (client-go's `minimumResyncPeriod`).
pub const MINIMUM_RESYNC_PERIOD: Duration = Duration::from_secs(1);

/// Which queue an informer uses.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QueueKind {
    /// [`RealFIFO`] in atomic mode: client-go's default (`InOrderInformers`, `AtomicFIFO`).
    #[default]
    RealFifo,
    /// [`DeltaFIFO`] with the indexer as known objects: client-go's classic informer queue.
    DeltaFifo,
}

/// How a [`SharedIndexInformer`] behaves (client-go's `SharedIndexInformerOptions`).
#[derive(Debug, Clone, Default)]
pub struct SharedInformerOptions {
    /// The name in logs and sync errors; empty for the object type's name.
    pub name: String,
    /// The default handler resync period and initial resync check period; zero for none.
    pub resync_period: Duration,
    /// The queue between the reflector and the indexer.
    pub queue: QueueKind,
    /// How many items the [`RealFIFO`] holds (for the [`DeltaFIFO`]: how many deltas of
    /// watch events) before the reflector waits for the process loop; `None` for
    /// [`DEFAULT_QUEUE_CAPACITY`](crate::DEFAULT_QUEUE_CAPACITY). Relists are not counted.
    pub queue_capacity: Option<usize>,
    /// How many notifications a handler's buffer holds before the process loop waits for it
    /// to drain to half; `None` for
    /// [`DEFAULT_HANDLER_BUFFER_LIMIT`](crate::DEFAULT_HANDLER_BUFFER_LIMIT). A handler so far
    /// behind slows the informer (and its other handlers) instead of growing its buffer.
    pub handler_buffer_limit: Option<usize>,
    /// The reflector's options; its `name`, `resync_period` and `should_resync` are set by
    /// the informer, and its `metrics` default to the informer's.
    pub reflector: ReflectorOptions,
    /// Where to report the informer's metrics (its reflector's, its cache's size, its
    /// handlers' backlogs); `None` for no metrics, at no cost.
    pub metrics: Option<InformerMetrics>,
    /// What a panic in the transform, an index function or a handler does: abort the
    /// process (the default) or stop the informer; see [`PanicPolicy`].
    pub on_panic: PanicPolicy,
}

/// Why an informer refused a call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InformerError {
    /// The call must come before [`SharedIndexInformer::run`].
    #[error("informer {name} has already started")]
    AlreadyStarted {
        /// The informer's name.
        name: String,
    },
    /// The informer has stopped.
    #[error("handler was not added to shared informer {name} because it has stopped already")]
    Stopped {
        /// The informer's name.
        name: String,
    },
    /// [`SharedIndexInformer::add_indexers`] failed.
    #[error(transparent)]
    Index(#[from] IndexError),
}

struct Inner<T> {
    name: String,
    indexer: Arc<Indexer<T>>,
    queue: InformerQueue<T>,
    /// The queue's synced flag: the informer's `has_synced`, and its handlers' upstream.
    synced: Arc<SyncedFlag>,
    processor: Arc<SharedProcessor<T>>,
    /// What a panic does, and the failure that stopped the last run.
    failures: Arc<Failures>,
    /// Held while a popped item is applied and distributed, and while a late handler joins.
    block_deltas: Mutex<()>,
    state: Mutex<State<T>>,
}

struct State<T> {
    /// A run is going on (or went on and was stopped for good: see `stopped`).
    started: bool,
    stopped: bool,
    /// How many runs started: a run after the first starts over after a panic.
    runs: u64,
    resync_check_period: Duration,
    default_handler_resync_period: Duration,
    transform: Option<TransformFunc<T>>,
    watch_error_handler: Option<ErrorHandler>,
    /// Taken by `run`; `None` for a manual informer.
    factory: Option<ReflectorFactory<T>>,
    manual: bool,
    reflector_options: ReflectorOptions,
    reflector: Option<Arc<dyn RunReflector>>,
    /// Whether the informer reports metrics.
    metered: bool,
    /// The estimate behind `informer_cache_bytes`; `None` for [`approx_json_size`].
    size_estimator: Option<ObjectSizeFn<T>>,
}

/// One reflector and one indexed cache shared by many event handlers (client-go's
/// `SharedIndexInformer`). Cloning gives another handle to the same informer.
///
/// Each handler is fed through its own unbounded buffer and task, so a slow handler never
/// blocks the others or the cache; the cache is updated before any handler hears of a
/// change. Handlers may join after the start: they first receive the cached objects as
/// `on_add(obj, true)`.
///
/// ```no_run
/// # async fn example(lw: impl clientgo_informer::ListerWatcher<clientgo_apimachinery::DynamicObject>) {
/// use std::time::Duration;
/// use clientgo_apimachinery::{DynamicObject, Object};
/// use clientgo_informer::{
///     Indexers, ResourceEventHandlerFuncs, SharedIndexInformer, SharedInformerOptions,
///     strip_managed_fields, wait_for_cache_sync,
/// };
/// use tokio_util::sync::CancellationToken;
///
/// let informer = SharedIndexInformer::new(lw, Indexers::namespace(), SharedInformerOptions::default());
/// informer.set_transform(strip_managed_fields).unwrap();
/// let registration = informer
///     .add_event_handler(ResourceEventHandlerFuncs::new().add_func(|o: &std::sync::Arc<DynamicObject>, _| {
///         println!("{} appeared", o.key())
///     }))
///     .unwrap();
/// let cancel = CancellationToken::new();
/// tokio::spawn({
///     let (informer, cancel) = (informer.clone(), cancel.clone());
///     async move { informer.run(cancel).await }
/// });
/// wait_for_cache_sync(&[&informer, &registration], Duration::from_secs(60)).await.unwrap();
/// let cached = informer.lister().namespace("prod").get("web");
/// # }
/// ```
pub struct SharedIndexInformer<T> {
    inner: Arc<Inner<T>>,
}

impl<T> Clone for SharedIndexInformer<T> {
    fn clone(&self) -> Self {
        SharedIndexInformer {
            inner: self.inner.clone(),
        }
    }
}

impl<T: Object + Send + Sync + 'static> SharedIndexInformer<T> {
    /// An informer over the collection `lister_watcher` lists and watches (client-go's
    /// `NewSharedIndexInformerWithOptions`).
    pub fn new<L>(lister_watcher: L, indexers: Indexers<T>, options: SharedInformerOptions) -> Self
    where
        T: DeserializeOwned,
        L: ListerWatcher<T>,
    {
        let factory: ReflectorFactory<T> = Box::new(move |store, options| {
            Arc::new(Reflector::new(lister_watcher, store, options))
        });
        SharedIndexInformer::build(Some(factory), indexers, options)
    }

    /// An informer without a reflector: the caller feeds its [`queue`](Self::queue) (as a
    /// reflector would: `replace` for a list, `add`/`update`/`delete` for watch events). The
    /// informer runs the resync timer itself. For tests of handlers and controllers.
    pub fn new_manual(indexers: Indexers<T>, options: SharedInformerOptions) -> Self {
        SharedIndexInformer::build(None, indexers, options)
    }

    fn build(
        factory: Option<ReflectorFactory<T>>,
        indexers: Indexers<T>,
        options: SharedInformerOptions,
    ) -> Self {
        let name = if options.name.is_empty() {
            type_name::<T>()
                .rsplit("::")
                .next()
                .unwrap_or("object")
                .to_owned()
        } else {
            options.name
        };
        let indexer = Arc::new(Indexer::with_indexers(indexers));
        let capacity = options.queue_capacity.unwrap_or(DEFAULT_QUEUE_CAPACITY);
        let queue = match options.queue {
            QueueKind::RealFifo => {
                InformerQueue::Real(Arc::new(RealFIFO::new().with_capacity(capacity)))
            }
            QueueKind::DeltaFifo => InformerQueue::Delta(Arc::new(
                DeltaFIFO::new(DeltaFIFOOptions {
                    known_objects: Some(indexer.clone()),
                    emit_delta_type_replaced: true,
                    transform: None,
                })
                .with_capacity(capacity),
            )),
        };
        let synced = queue.synced_flag();
        let manual = factory.is_none();
        let failures = Arc::new(Failures::new(&name, options.on_panic));
        failures.on_stop(Box::new({
            let queue = queue.clone();
            move || queue.discard()
        }));
        let buffer_limit = options
            .handler_buffer_limit
            .unwrap_or(DEFAULT_HANDLER_BUFFER_LIMIT);
        let processor = Arc::new(SharedProcessor::new(&name, failures.clone(), buffer_limit));
        let mut reflector_options = options.reflector;
        if reflector_options.metrics.is_none() {
            reflector_options.metrics.clone_from(&options.metrics);
        }
        let informer = SharedIndexInformer {
            inner: Arc::new(Inner {
                name,
                indexer,
                queue,
                synced,
                processor,
                failures,
                block_deltas: Mutex::new(()),
                state: Mutex::new(State {
                    started: false,
                    stopped: false,
                    runs: 0,
                    resync_check_period: options.resync_period,
                    default_handler_resync_period: options.resync_period,
                    transform: None,
                    watch_error_handler: None,
                    factory,
                    manual,
                    reflector_options,
                    reflector: None,
                    metered: options.metrics.is_some(),
                    size_estimator: None,
                }),
            }),
        };
        if let Some(metrics) = &options.metrics {
            let source: Weak<Inner<T>> = Arc::downgrade(&informer.inner);
            metrics.track(source);
        }
        informer
    }

    /// The informer's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The informer's cache (client-go's `GetIndexer`).
    pub fn indexer(&self) -> &Arc<Indexer<T>> {
        &self.inner.indexer
    }

    /// The informer's cache (client-go's `GetStore`; the same object as
    /// [`indexer`](Self::indexer)).
    pub fn store(&self) -> &Arc<Indexer<T>> {
        &self.inner.indexer
    }

    /// A lister over the cache.
    pub fn lister(&self) -> Lister<T> {
        Lister::new(self.inner.indexer.clone())
    }

    /// What the reflector writes into: feed it by hand for a [`new_manual`](Self::new_manual)
    /// informer.
    pub fn queue(&self) -> Arc<dyn ReflectorStore<T>> {
        self.inner.queue.store()
    }

    /// Adds indexes to the cache, also after the start (client-go's `AddIndexers`).
    pub fn add_indexers(&self, indexers: Indexers<T>) -> Result<(), InformerError> {
        let state = self.inner.state.lock();
        if state.stopped {
            return Err(InformerError::Stopped {
                name: self.inner.name.clone(),
            });
        }
        Ok(self.inner.indexer.add_indexers(indexers)?)
    }

    /// Sets the transform applied to every object before it is cached (client-go's
    /// `SetTransform`); only before [`run`](Self::run). See
    /// [`strip_managed_fields`](crate::strip_managed_fields).
    pub fn set_transform(
        &self,
        transform: impl Fn(T) -> T + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut state = self.inner.state.lock();
        if state.started {
            return Err(InformerError::AlreadyStarted {
                name: self.inner.name.clone(),
            });
        }
        // A panic is reported under the informer's policy, then goes on unwinding out of
        // the reflector's task (or a manual informer's caller).
        let failures = self.inner.failures.clone();
        let transform: TransformFunc<T> = Arc::new(move |object| {
            match std::panic::catch_unwind(AssertUnwindSafe(|| transform(object))) {
                Ok(object) => object,
                Err(payload) => {
                    failures.panicked(PanicSource::Transform, &*payload);
                    std::panic::resume_unwind(payload)
                }
            }
        });
        // Into the queue now: a manual informer's queue may be fed before `run`.
        self.inner.queue.set_transform(Some(transform.clone()));
        state.transform = Some(transform);
        Ok(())
    }

    /// Sets how `informer_cache_bytes` estimates an object's size, in bytes (default:
    /// [`approx_json_size`](crate::approx_json_size), exact for a `DynamicObject`, metadata only for typed objects);
    /// only before [`run`](Self::run), and used only with metrics. Called once per object
    /// entering the cache, on the process loop: keep it quick (a typed object's serialized
    /// length is exact but costs a serialization per change).
    pub fn set_object_size_estimator(
        &self,
        estimate: impl Fn(&T) -> usize + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut state = self.inner.state.lock();
        if state.started {
            return Err(InformerError::AlreadyStarted {
                name: self.inner.name.clone(),
            });
        }
        state.size_estimator = Some(Arc::new(estimate));
        Ok(())
    }

    /// Sets the handler of errors that end a list-and-watch round (client-go's
    /// `SetWatchErrorHandler`); only before [`run`](Self::run).
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&ListWatchError) + Send + Sync + 'static,
    ) -> Result<(), InformerError> {
        let mut state = self.inner.state.lock();
        if state.started {
            return Err(InformerError::AlreadyStarted {
                name: self.inner.name.clone(),
            });
        }
        state.watch_error_handler = Some(Arc::new(handler));
        Ok(())
    }

    /// Whether the initial list has been applied to the cache and handed to the handlers.
    pub fn has_synced(&self) -> bool {
        self.inner.state.lock().started
            && self.inner.synced.is_set()
            && !self.inner.failures.is_failed()
    }

    /// Waits until [`has_synced`](Self::has_synced), without a deadline; see
    /// [`wait_for_cache_sync`](crate::wait_for_cache_sync) for one.
    pub async fn wait_synced(&self) {
        self.inner.synced.wait().await
    }

    /// How often the resync timer fires: the informer's default resync period, lowered by
    /// handlers added before the start (client-go's `resyncCheckPeriod`); zero for never.
    pub fn resync_check_period(&self) -> Duration {
        self.inner.state.lock().resync_check_period
    }

    /// Whether [`run`](Self::run) was called.
    pub fn has_started(&self) -> bool {
        self.inner.state.lock().started
    }

    /// Whether the informer ran and stopped (client-go's `IsStopped`).
    pub fn is_stopped(&self) -> bool {
        self.inner.state.lock().stopped
    }

    /// The resourceVersion the reflector last synced to; `""` before, or without a reflector.
    pub fn last_sync_resource_version(&self) -> String {
        let reflector = self.inner.state.lock().reflector.clone();
        reflector
            .map(|r| r.last_sync_resource_version())
            .unwrap_or_default()
    }

    /// The reflector's last list or watch failure, while it lasts.
    pub fn last_error(&self) -> Option<String> {
        let reflector = self.inner.state.lock().reflector.clone();
        reflector.and_then(|r| r.last_error())
    }

    /// Why the last run stopped on its own: a panic under [`PanicPolicy::Stop`]; `None`
    /// while the informer runs normally (a new run forgets the last failure).
    pub fn failure(&self) -> Option<InformerFailure> {
        self.inner.failures.failure()
    }

    /// Sets what a panic in the transform, an index function or a handler does (see
    /// [`PanicPolicy`]); takes effect for the next panic.
    pub fn set_panic_policy(&self, policy: PanicPolicy) {
        self.inner.failures.set_policy(policy);
    }

    /// The policy in effect.
    pub fn panic_policy(&self) -> PanicPolicy {
        self.inner.failures.policy()
    }
}

impl<T: Object + Send + Sync + 'static> InformerSynced for SharedIndexInformer<T> {
    fn name(&self) -> String {
        self.inner.name.clone()
    }

    fn has_synced(&self) -> bool {
        SharedIndexInformer::has_synced(self)
    }

    fn wait_synced(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(SharedIndexInformer::wait_synced(self))
    }

    fn not_synced_reason(&self) -> NotSyncedReason {
        let (started, stopped, reflector) = {
            let state = self.inner.state.lock();
            (state.started, state.stopped, state.reflector.clone())
        };
        if let Some(failure) = self.inner.failures.failure() {
            return NotSyncedReason::Failed(failure);
        }
        if stopped {
            return NotSyncedReason::Stopped;
        }
        if !started {
            return NotSyncedReason::NotStarted;
        }
        let Some(reflector) = reflector else {
            return NotSyncedReason::NoList;
        };
        if let Some(error) = reflector.last_error() {
            return NotSyncedReason::Failing(error);
        }
        match reflector.last_sync_resource_version() {
            rv if rv.is_empty() => NotSyncedReason::NoList,
            resource_version => NotSyncedReason::Processing { resource_version },
        }
    }
}

impl<T: Object + Send + Sync + 'static> InformerSource for Inner<T> {
    fn snapshot(&self, snapshot: &SourceSnapshot) {
        let (objects, bytes) = self.indexer.size_stats();
        snapshot.cache(&self.name, objects, bytes);
        let failed = self.failures.failure().is_some();
        snapshot.panics(&self.name, failed, &self.failures.counts());
        self.processor
            .buffer_lengths(|handler, pending| snapshot.handler(&self.name, handler, pending));
    }
}

impl<T: Object> fmt::Debug for SharedIndexInformer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        f.debug_struct("SharedIndexInformer")
            .field("name", &self.inner.name)
            .field("started", &state.started)
            .field("stopped", &state.stopped)
            .field("synced", &self.inner.synced.is_set())
            .field("resync_check_period", &state.resync_check_period)
            .field("indexer", &self.inner.indexer)
            .finish_non_exhaustive()
    }
}
