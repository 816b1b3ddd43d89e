//! What an informer does when code given to it panics: a transform, an index function (or
//! the object size estimator), an event handler. client-go's `HandleCrash` and
//! `PanicHandlers`, as an explicit per-informer choice.
//!
//! A panic in that code would otherwise leave the informer in a silent half-state (a dead
//! reflector behind a cache that says it is synced, a process loop gone while the queue
//! grows, a lost notification). The two outcomes an informer may choose instead, the
//! default (abort, as client-go) and what each source leaves behind are documented on
//! [`PanicPolicy`], the public face of this module. [`Failures`] is the bookkeeping an
//! informer shares with its handlers' tasks and its transform.

use std::any::Any;
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

/// What an informer does when a transform, an index function (or the object size
/// estimator) or an event handler panics (client-go's `HandleCrash`).
///
/// A panic in that code would otherwise leave the informer in a silent half-state: a
/// transform runs on the reflector's task, and its panic kills the reflector while the cache
/// keeps saying it is synced; an index function runs on the process loop, and its panic
/// stops the loop while the reflector keeps filling the queue; a handler's panic loses the
/// notification it was handling. Each ends instead in one of two defined states, chosen by
/// [`PanicPolicy`]:
///
/// * [`PanicPolicy::Abort`] (**the default**): the panic is logged with its source and
///   message, then the process aborts. This is client-go's default (`HandleCrash` re-panics
///   with `ReallyCrash = true`), and the safe one for a controller that does not watch its
///   informers: the pod restarts and every cache is rebuilt, instead of workers acting on a
///   cache that no longer moves.
/// * [`PanicPolicy::Stop`]: the informer stops as a whole and says so. Its reflector and
///   process loop end, [`run`](crate::SharedIndexInformer::run) returns,
///   [`has_synced`](crate::SharedIndexInformer::has_synced) and every handler's
///   [`Registration::has_synced`](crate::Registration::has_synced) turn false,
///   [`failure`](crate::SharedIndexInformer::failure) returns the [`InformerFailure`],
///   [`wait_for_cache_sync`](crate::wait_for_cache_sync) reports it as the reason, and
///   metrics count it (`informer_panics_total{name,source}`, `informer_failed{name}`).
///   Calling `run` again (a factory's `start` does it for its informers) starts over with
///   a relist: the cache keeps its content until the relist replaces it, and the relist's
///   notifications reach every handler, not only those due for a resync, so each handler
///   hears of every object again and of every deletion missed meanwhile.
///
/// Set it per informer ([`SharedInformerOptions::on_panic`](crate::SharedInformerOptions::on_panic),
/// [`SharedIndexInformer::set_panic_policy`](crate::SharedIndexInformer::set_panic_policy)) or
/// for every informer of a factory
/// ([`SharedInformerFactoryBuilder::on_panic`](crate::SharedInformerFactoryBuilder::on_panic)).
///
/// What each source leaves behind under [`PanicPolicy::Stop`]:
///
/// * **transform**: the object it was transforming never reaches the queue; the reflector's
///   task ends. Items queued before are dropped with the queue (the relist replaces them).
/// * **index function**: the store calls every index function of a change before it changes
///   anything, so the change is not applied at all: objects, indexes and resourceVersion stay
///   as they were (no half-updated index). The item's handlers are not notified.
/// * **handler**: the notification it was handling is lost *for that handler only*, and not
///   silently: the informer stops and records it. Handlers are not isolated from each other
///   on purpose: a handler that missed a change has a queue that no longer reflects the
///   cache, and only a relist delivered to every handler repairs that. Notifications already
///   buffered for the handlers are still delivered (the one that panicked goes on with its
///   next notification). A deletion the handler panicked on is not delivered again: the
///   relist no longer has the object.
///
/// A panic anywhere else in the reflector's task (a bug of ours) is reported the same way,
/// with [`PanicSource::Reflector`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PanicPolicy {
    /// Log the panic and abort the process (client-go's default).
    #[default]
    Abort,
    /// Stop the informer as a whole and report it; a later `run` rebuilds from a relist.
    Stop,
}

/// Where a panic came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PanicSource {
    /// The informer's transform.
    Transform,
    /// An index function or the object size estimator, while a change was applied to the
    /// store.
    Indexer,
    /// The event handler with this name (see [`Registration::name`](crate::Registration::name)).
    Handler(String),
    /// The reflector's task, outside the transform.
    Reflector,
}

impl PanicSource {
    /// The source's label in `informer_panics_total`.
    pub fn label(&self) -> &'static str {
        match self {
            PanicSource::Transform => "transform",
            PanicSource::Indexer => "indexer",
            PanicSource::Handler(_) => "handler",
            PanicSource::Reflector => "reflector",
        }
    }
}

impl fmt::Display for PanicSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PanicSource::Transform => f.write_str("the transform"),
            PanicSource::Indexer => f.write_str("an index function"),
            PanicSource::Handler(name) => write!(f, "event handler {name:?}"),
            PanicSource::Reflector => f.write_str("the reflector"),
        }
    }
}

/// Why an informer stopped on its own: a panic under [`PanicPolicy::Stop`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InformerFailure {
    /// What panicked.
    pub source: PanicSource,
    /// The panic's message (`"<non-string panic payload>"` when it has none).
    pub message: String,
}

impl fmt::Display for InformerFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} panicked: {}", self.source, self.message)
    }
}

impl std::error::Error for InformerFailure {}

/// The panic message of a payload caught by `catch_unwind` or a `JoinError`.
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&'static str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "<non-string panic payload>".to_owned()
    }
}

/// The panic bookkeeping of one informer, shared with its handlers' tasks and its transform.
pub(crate) struct Failures {
    name: String,
    policy: Mutex<PanicPolicy>,
    /// The failure that stopped the current (or last) run.
    failure: Mutex<Option<InformerFailure>>,
    /// Whether `failure` is set, for lock-free reads.
    failed: AtomicBool,
    /// Cancels the current run; `None` between runs.
    run: Mutex<Option<CancellationToken>>,
    /// Panics counted, by source: transform, indexer, handler, reflector.
    counts: [AtomicU64; 4],
    /// What the informer does at once when a panic stops it (discard its queue).
    on_stop: Mutex<Option<StopHook>>,
}

type StopHook = Box<dyn Fn() + Send + Sync>;

impl Failures {
    pub(crate) fn new(name: &str, policy: PanicPolicy) -> Self {
        Failures {
            name: name.to_owned(),
            policy: Mutex::new(policy),
            failure: Mutex::new(None),
            failed: AtomicBool::new(false),
            run: Mutex::new(None),
            counts: Default::default(),
            on_stop: Mutex::new(None),
        }
    }

    /// Sets what to do at once when a panic stops the informer.
    pub(crate) fn on_stop(&self, hook: StopHook) {
        *self.on_stop.lock() = Some(hook);
    }

    pub(crate) fn set_policy(&self, policy: PanicPolicy) {
        *self.policy.lock() = policy;
    }

    pub(crate) fn policy(&self) -> PanicPolicy {
        *self.policy.lock()
    }

    /// A run starts: forgets the last failure, and lets a panic cancel `run`.
    pub(crate) fn run_started(&self, run: CancellationToken) {
        *self.failure.lock() = None;
        self.failed.store(false, Ordering::SeqCst);
        *self.run.lock() = Some(run);
    }

    pub(crate) fn run_ended(&self) {
        *self.run.lock() = None;
    }

    pub(crate) fn failure(&self) -> Option<InformerFailure> {
        self.failure.lock().clone()
    }

    /// Whether a panic stopped the current (or last) run.
    pub(crate) fn is_failed(&self) -> bool {
        self.failed.load(Ordering::SeqCst)
    }

    /// How many panics came from each source, in `informer_panics_total`'s label order.
    pub(crate) fn counts(&self) -> [(&'static str, u64); 4] {
        let labels = ["transform", "indexer", "handler", "reflector"];
        std::array::from_fn(|i| (labels[i], self.counts[i].load(Ordering::Relaxed)))
    }

    /// `source` panicked with `payload`: aborts, or records the failure and stops the run.
    /// A panic that follows another in the same run (the reflector's task ending after its
    /// transform panicked) is not counted twice.
    pub(crate) fn panicked(&self, source: PanicSource, payload: &(dyn Any + Send)) {
        let message = panic_message(payload);
        let policy = self.policy();
        tracing::error!(
            informer = %self.name, %source, %message, ?policy,
            "panic in code run by the informer"
        );
        if policy == PanicPolicy::Abort {
            eprintln!(
                "informer {}: {source} panicked: {message}; aborting (PanicPolicy::Abort)",
                self.name
            );
            std::process::abort();
        }
        {
            let mut failure = self.failure.lock();
            let follows = source == PanicSource::Reflector && failure.is_some();
            if follows {
                return;
            }
            let index = match source {
                PanicSource::Transform => 0,
                PanicSource::Indexer => 1,
                PanicSource::Handler(_) => 2,
                PanicSource::Reflector => 3,
            };
            self.counts[index].fetch_add(1, Ordering::Relaxed);
            failure.get_or_insert(InformerFailure { source, message });
            self.failed.store(true, Ordering::SeqCst);
        }
        if let Some(hook) = &*self.on_stop.lock() {
            hook();
        }
        if let Some(run) = &*self.run.lock() {
            run.cancel();
        }
    }
}

impl fmt::Debug for Failures {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Failures")
            .field("policy", &self.policy())
            .field("failure", &self.failure())
            .finish_non_exhaustive()
    }
}
