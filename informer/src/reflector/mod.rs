//! The reflector: keeps a [`ReflectorStore`] in step with a collection on the API server, by
//! listing it and then watching it. client-go's `tools/cache/reflector.go`.
//!
//! [`Reflector::run`] repeats list-and-watch until cancelled, waiting a backoff delay
//! ([`BackoffConfig`]: 800 ms doubling to 30 s, jitter 1.0, reset after 2 minutes) after each
//! round. One round:
//!
//! 1. **Streaming list** (when [`ReflectorOptions::use_watch_list`] is on and the
//!    [`ListerWatcher`] supports it): a watch with `sendInitialEvents=true`,
//!    `resourceVersionMatch=NotOlderThan` and bookmarks, whose initial `ADDED` events are
//!    collected until the bookmark annotated `k8s.io/initial-events-end`; then one
//!    [`ReflectorStore::replace`] and the same watch goes on. If the server rejects it, the
//!    round falls back to LIST+WATCH.
//! 2. Otherwise a **LIST** through the [`ListPager`](crate::ListPager): the first at
//!    `resourceVersion=0&limit=500` (any cached state), later ones at the last synced
//!    resourceVersion without a limit so that the watch cache can serve them (unless the first
//!    list came back in pages, i.e. there is no watch cache, or a page size is configured). If
//!    that resourceVersion is expired or too new for the server, the list is retried at once
//!    as a consistent read (`resourceVersion` unset).
//! 3. **WATCH** from the last synced resourceVersion with `allowWatchBookmarks=true` and a
//!    random `timeoutSeconds` in [min, 2×min] (5 minutes by default), re-opened as it ends.
//!
//! What happens next (client-go's decision table):
//!
//! | situation | action | error handler |
//! |---|---|---|
//! | LIST fails with Expired/Gone/too large | one immediate LIST at `""` | only if that fails |
//! | LIST fails otherwise | backoff, new round | yes |
//! | WATCH request: connection refused / 429 | backoff, re-watch (no relist) | no |
//! | WATCH request: other error | backoff, new round (relist) | yes |
//! | watch ends cleanly | re-watch at once from the last resourceVersion | no |
//! | watch ends within 1 s with no event | backoff, relist | no |
//! | `ERROR` 410 | backoff, relist at the last resourceVersion (then `""` if that list says expired too: no relist storm, kubernetes#86430) | no |
//! | `ERROR` 429 | backoff, re-watch | no |
//! | `ERROR` 500 within [`ReflectorOptions::max_internal_error_retry_duration`] | re-watch at once | no |
//! | any other `ERROR`, an undecodable stream | backoff, relist | no |
//! | cancelled | stop, dropping the watch | no |
//!
//! Bookmarks advance the resourceVersion and reach [`ReflectorStore::bookmark`]. After a watch
//! from `""` or `"0"` (whose first events are synthetic `ADDED`s in no order), the
//! resourceVersion is held back until the first event that is not an `ADDED`. With a resync
//! period, [`ReflectorStore::resync`] is called periodically while watching, when
//! [`ReflectorOptions::should_resync`] agrees.
//!
//! Where it differs from client-go, and why:
//!
//! * A streaming list gives up after [`ReflectorOptions::initial_events_timeout`] without
//!   progress toward its closing bookmark. A server or proxy that silently drops
//!   `sendInitialEvents` never sends it, and client-go (like kube-rs) then waits forever;
//!   here the reflector says so once in the log, stops trying streaming lists for its
//!   lifetime, and uses LIST+WATCH. A streaming list closed before its bookmark is retried
//!   after a backoff, not at once, and transforms each initial object as it arrives.
//! * The store may bound what it holds ([`ReflectorStore::has_room`]); the reflector waits
//!   for room before each watch event (the informer's queue is bounded this way).
//! * [`Reflector::last_failure`] keeps what the last list or watch failure was (not found,
//!   forbidden, throttled, server silent, ...), so an unsynced cache can say why.
//! * Objects are typed (`T`), so client-go's checks of each event's Go type, GVK and `Table`
//!   kind have nothing to check; a frame that does not decode as a `T` ends the watch as
//!   client-go's decoder error does (an internal error: relist).
//! * A watch stream that breaks (reset, truncated, stalled) ends like a clean close, as
//!   client-go's stream watcher treats EOF-like and timeout errors; the very-short-watch rule
//!   still turns an instant failure into a backoff and relist.
//! * The clock is tokio's, so tests drive time with its paused clock rather than a fake clock.
//! * With [`ReflectorOptions::metrics`], lists, watches, relists (with their reason) and
//!   streaming-list fallbacks are counted under client-go's historical `reflector_*` names
//!   (see [`InformerMetrics`](crate::InformerMetrics)).

mod backoff;
mod list;
mod status;
mod watch;
mod watch_list;

use std::any::type_name;
use std::convert::Infallible;
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clientgo_apimachinery::Object;
use parking_lot::{Mutex, RwLock};
use serde::de::DeserializeOwned;
use tokio_util::sync::CancellationToken;

pub use backoff::BackoffConfig;
pub use status::{FailureKind, ReflectorFailure, ReflectorOperation};

use crate::listwatch::{ListWatchError, ListerWatcher};
use crate::metrics::{InformerMetrics, ReflectorMetrics};
use crate::reflector_store::ReflectorStore;
use backoff::{BackoffState, SplitMix64};
use status::FailureRecord;

/// The shortest watch timeout a reflector asks for: 5 minutes (client-go's
/// `defaultMinWatchTimeout`). Each watch asks for a random timeout in [min, 2×min].
pub const DEFAULT_MIN_WATCH_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// How long a streaming list waits for its closing bookmark by default: 60 seconds.
pub const DEFAULT_INITIAL_EVENTS_TIMEOUT: Duration = Duration::from_secs(60);

/// The longest deadline the reflector sets (about 30 years): longer ones mean "no deadline".
const LONGEST_DEADLINE: Duration = Duration::from_secs(30 * 365 * 24 * 3600);

/// The longest `timeoutSeconds` a watch asks for (about 136 years): `timeoutSeconds` seconds
/// in nanoseconds must fit the server's `int64` durations.
const LONGEST_WATCH_TIMEOUT_SECONDS: i64 = u32::MAX as i64;

/// A watch that ends sooner than this with no event is treated as a failure.
const VERY_SHORT_WATCH: Duration = Duration::from_secs(1);

/// The decision "resync now?", asked each resync period (client-go's `ShouldResync`).
pub type ShouldResync = Arc<dyn Fn() -> bool + Send + Sync>;

type ErrorHandler = Arc<dyn Fn(&ListWatchError) + Send + Sync>;

/// How a [`Reflector`] behaves (client-go's `ReflectorOptions` and the reflector's public
/// fields).
#[derive(Clone)]
pub struct ReflectorOptions {
    /// The name in logs; empty for the file and line that called [`Reflector::new`].
    pub name: String,
    /// How often to call [`ReflectorStore::resync`] while watching; `None` (or zero) for never.
    pub resync_period: Option<Duration>,
    /// The page size of every LIST (client-go's `WatchListPageSize`). `None` lets the
    /// reflector choose: 500 for `resourceVersion` `"0"` and `""`, no paging for a specific
    /// version (so that the watch cache serves it) unless the first list came back paginated.
    pub page_size: Option<u32>,
    /// The shortest watch timeout (default and minimum 5 minutes: smaller values are raised to
    /// it, as in client-go); each watch asks for a random one in [min, 2×min].
    pub min_watch_timeout: Duration,
    /// Whether to start with a streaming list (client-go's `WatchListClient` gate, on by
    /// default). Also needs [`ListerWatcher::supports_watch_list`].
    pub use_watch_list: bool,
    /// How long a streaming list may go without progress (no initial event, no bookmark)
    /// before the reflector gives up streaming lists and uses LIST+WATCH. It measures
    /// silence, not the length of the stream; `Duration::MAX` waits as long as it takes
    /// (client-go's behaviour).
    pub initial_events_timeout: Duration,
    /// The delays between attempts.
    pub backoff: BackoffConfig,
    /// Asked each resync period; `None` always resyncs.
    pub should_resync: Option<ShouldResync>,
    /// How long `ERROR` 500 events are answered by an immediate re-watch rather than a
    /// relist, counted from the first of a series (client-go's
    /// `MaxInternalErrorRetryDuration`). Zero (the default, as informers use it) turns it off.
    pub max_internal_error_retry_duration: Duration,
    /// Where to count lists, watches and relists, labelled with the reflector's name; `None`
    /// for no metrics, at no cost.
    pub metrics: Option<InformerMetrics>,
}

impl Default for ReflectorOptions {
    fn default() -> Self {
        ReflectorOptions {
            name: String::new(),
            resync_period: None,
            page_size: None,
            min_watch_timeout: DEFAULT_MIN_WATCH_TIMEOUT,
            use_watch_list: true,
            initial_events_timeout: DEFAULT_INITIAL_EVENTS_TIMEOUT,
            backoff: BackoffConfig::default(),
            should_resync: None,
            max_internal_error_retry_duration: Duration::ZERO,
            metrics: None,
        }
    }
}

impl fmt::Debug for ReflectorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorOptions")
            .field("name", &self.name)
            .field("resync_period", &self.resync_period)
            .field("page_size", &self.page_size)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("use_watch_list", &self.use_watch_list)
            .field("initial_events_timeout", &self.initial_events_timeout)
            .field("backoff", &self.backoff)
            .field("should_resync", &self.should_resync.is_some())
            .field(
                "max_internal_error_retry_duration",
                &self.max_internal_error_retry_duration,
            )
            .field("metrics", &self.metrics.is_some())
            .finish()
    }
}

/// Where the reflector is: the resourceVersion it synced to and what it learned about the
/// server's answers.
#[derive(Debug, Default)]
struct SyncState {
    /// The resourceVersion of the last list, or of the last event the watch delivered.
    last_sync_rv: String,
    /// The last list or watch said `last_sync_rv` is expired or too new: use `""`.
    rv_unavailable: bool,
    /// The first list (at `"0"`) came back in pages: the server has no watch cache for this
    /// resource, so later lists keep paging.
    paginated_result: bool,
}

/// Keeps a store in step with a collection: client-go's `Reflector`. See the module docs.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use bytes::Bytes;
/// use clientgo_apimachinery::{DynamicObject, ObjectList};
/// use clientgo_informer::{
///     ListWatchError, ListerWatcher, Reflector, ReflectorOptions, ReflectorStore,
/// };
/// use clientgo_rest::{ListParams, WatchParams};
/// use clientgo_watch::Watch;
/// use tokio::sync::mpsc;
/// use tokio_util::sync::CancellationToken;
///
/// /// A collection of one ConfigMap (the REST client plays this part for real).
/// struct OneConfigMap;
///
/// impl ListerWatcher<DynamicObject> for OneConfigMap {
///     async fn list(&self, _: &ListParams) -> Result<ObjectList<DynamicObject>, ListWatchError> {
///         let mut list = ObjectList::new(vec![DynamicObject::new("settings").within("prod")]);
///         list.metadata.resource_version = "7".into();
///         Ok(list)
///     }
///     async fn watch(&self, _: &WatchParams) -> Result<Watch<DynamicObject>, ListWatchError> {
///         Ok(Watch::new(http_body_util::Empty::<Bytes>::new()))
///     }
///     fn supports_watch_list(&self) -> bool {
///         false
///     }
/// }
///
/// /// Reports each relist.
/// struct Relists(mpsc::UnboundedSender<String>);
///
/// impl ReflectorStore<DynamicObject> for Relists {
///     fn add(&self, _: DynamicObject) {}
///     fn update(&self, _: DynamicObject) {}
///     fn delete(&self, _: DynamicObject) {}
///     fn replace(&self, objects: Vec<DynamicObject>, resource_version: String) {
///         let _ = self.0.send(format!("{} object(s) at {resource_version}", objects.len()));
///     }
///     fn resync(&self) {}
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
/// let (tx, mut relists) = mpsc::unbounded_channel();
/// let reflector = Arc::new(Reflector::new(
///     OneConfigMap,
///     Arc::new(Relists(tx)),
///     ReflectorOptions::default(),
/// ));
/// let cancel = CancellationToken::new();
/// let task = tokio::spawn({
///     let (reflector, cancel) = (reflector.clone(), cancel.clone());
///     async move { reflector.run(cancel).await }
/// });
/// assert_eq!(relists.recv().await.unwrap(), "1 object(s) at 7");
/// assert_eq!(reflector.last_sync_resource_version(), "7");
/// cancel.cancel();
/// task.await.unwrap();
/// # });
/// ```
pub struct Reflector<T, L> {
    lister_watcher: L,
    store: Arc<dyn ReflectorStore<T>>,
    name: String,
    resync_period: Option<Duration>,
    page_size: Option<u32>,
    min_watch_timeout: Duration,
    /// Cleared for good when a streaming list misses its closing bookmark.
    use_watch_list: AtomicBool,
    initial_events_timeout: Duration,
    should_resync: Option<ShouldResync>,
    max_internal_error_retry: Duration,
    sync: Mutex<SyncState>,
    backoff: Mutex<BackoffState>,
    rng: Mutex<SplitMix64>,
    error_handler: RwLock<Option<ErrorHandler>>,
    failure: FailureRecord,
    metrics: Option<ReflectorMetrics>,
    _objects: PhantomData<fn() -> T>,
}

impl<T, L> fmt::Debug for Reflector<T, L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("name", &self.name)
            .field("type", &type_name::<T>())
            .field("last_sync_resource_version", &self.sync.lock().last_sync_rv)
            .finish_non_exhaustive()
    }
}

/// `Some(rv)` unless it is empty: an empty resourceVersion is not sent at all.
fn non_empty(rv: String) -> Option<String> {
    Some(rv).filter(|rv| !rv.is_empty())
}

impl<T, L> Reflector<T, L>
where
    T: Object + DeserializeOwned + Send + 'static,
    L: ListerWatcher<T>,
{
    /// A reflector that lists and watches through `lister_watcher` into `store`.
    #[track_caller]
    pub fn new(
        lister_watcher: L,
        store: Arc<dyn ReflectorStore<T>>,
        options: ReflectorOptions,
    ) -> Self {
        let name = if options.name.is_empty() {
            let caller = std::panic::Location::caller();
            format!("{}:{}", caller.file(), caller.line())
        } else {
            options.name
        };
        let metrics = options.metrics.as_ref().map(|m| m.reflector(&name));
        let failure = FailureRecord::named(&name);
        Reflector {
            lister_watcher,
            store,
            name,
            resync_period: options.resync_period.filter(|p| !p.is_zero()),
            page_size: options.page_size.filter(|&n| n > 0),
            min_watch_timeout: options.min_watch_timeout.max(DEFAULT_MIN_WATCH_TIMEOUT),
            use_watch_list: AtomicBool::new(options.use_watch_list),
            // Bounded so that `start + timeout` cannot overflow: `Duration::MAX` means "wait".
            initial_events_timeout: options.initial_events_timeout.min(LONGEST_DEADLINE),
            should_resync: options.should_resync,
            max_internal_error_retry: options.max_internal_error_retry_duration,
            sync: Mutex::new(SyncState::default()),
            backoff: Mutex::new(BackoffState::new(
                options.backoff,
                SplitMix64::from_entropy(),
            )),
            rng: Mutex::new(SplitMix64::from_entropy()),
            error_handler: RwLock::new(None),
            failure,
            metrics,
            _objects: PhantomData,
        }
    }

    /// The reflector's name, as it appears in logs.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The resourceVersion the store was last synced to: the last list's, or that of the last
    /// event or bookmark the watch delivered. Empty before the first list.
    pub fn last_sync_resource_version(&self) -> String {
        self.sync.lock().last_sync_rv.clone()
    }

    /// Replaces the watch error handler, called with each error that ends a list-and-watch
    /// round (a failed list, a watch request that failed for a reason other than a refused
    /// connection or a 429). The default logs it. Keep it quick: the reflector waits for it.
    pub fn set_watch_error_handler(
        &self,
        handler: impl Fn(&ListWatchError) + Send + Sync + 'static,
    ) {
        *self.error_handler.write() = Some(Arc::new(handler));
    }

    /// The last list or watch failure, as text (e.g. `list failed (forbidden): ...`); `None`
    /// once the store is synced again or the watch delivers events.
    pub fn last_error(&self) -> Option<String> {
        self.failure.get().map(|f| f.to_string())
    }

    /// The last list or watch failure, classified. See [`last_error`](Self::last_error).
    pub fn last_failure(&self) -> Option<ReflectorFailure> {
        self.failure.get()
    }

    /// Lists and watches until `cancel` fires, with a backoff delay after each round.
    pub async fn run(&self, cancel: CancellationToken) {
        tracing::debug!(reflector = %self.name, r#type = type_name::<T>(), "starting reflector");
        while !cancel.is_cancelled() {
            if let Err(error) = self.list_and_watch(&cancel).await {
                self.call_error_handler(&error);
            }
            if !self.sleep_backoff(&cancel).await {
                break;
            }
        }
        tracing::debug!(reflector = %self.name, r#type = type_name::<T>(), "stopping reflector");
    }

    /// One round: a (streaming) list, then watches until something calls for a relist. Returns
    /// the error that ended the round when it is one the watch error handler should see;
    /// `Ok` when cancelled or when the watch ended in a way that calls for a relist.
    pub async fn list_and_watch(&self, cancel: &CancellationToken) -> Result<(), ListWatchError> {
        if cancel.is_cancelled() {
            return Ok(());
        }
        tracing::debug!(reflector = %self.name, r#type = type_name::<T>(), "listing and watching");
        let mut stream = None;
        if self.watch_list_enabled() {
            match self.watch_list(cancel).await {
                watch_list::WatchListEnd::Cancelled => return Ok(()),
                watch_list::WatchListEnd::Synced(watch) => stream = Some(watch),
                watch_list::WatchListEnd::Failed => {}
            }
        }
        if stream.is_none() {
            tokio::select! {
                biased;
                _ = cancel.cancelled() => return Ok(()),
                listed = self.list() => listed?,
            }
        }
        tracing::debug!(reflector = %self.name, r#type = type_name::<T>(), "caches populated");
        self.watch_with_resync(stream, cancel).await
    }

    fn watch_list_enabled(&self) -> bool {
        self.use_watch_list.load(Ordering::Relaxed) && self.lister_watcher.supports_watch_list()
    }

    /// The watch, with the periodic resync running beside it.
    async fn watch_with_resync(
        &self,
        stream: Option<clientgo_watch::Watch<T>>,
        cancel: &CancellationToken,
    ) -> Result<(), ListWatchError> {
        tokio::select! {
            result = self.watch(stream, cancel) => result,
            never = self.resync_loop() => match never {},
        }
    }

    async fn resync_loop(&self) -> Infallible {
        let Some(period) = self.resync_period else {
            return std::future::pending().await;
        };
        loop {
            tokio::time::sleep(period).await;
            if self.should_resync.as_ref().is_none_or(|should| should()) {
                tracing::trace!(reflector = %self.name, "forcing resync");
                self.store.resync();
            }
        }
    }

    fn call_error_handler(&self, error: &ListWatchError) {
        let handler = self.error_handler.read().clone();
        match handler {
            Some(handler) => handler(error),
            // client-go's DefaultWatchErrorHandler.
            None if error.is_expired() => {
                tracing::debug!(reflector = %self.name, r#type = type_name::<T>(), %error, "watch closed");
            }
            // The failure record has logged it (once per kind, reminders rate-limited).
            None => {
                tracing::debug!(reflector = %self.name, %error, "failed to list or watch");
            }
        }
    }

    /// Waits until the store has room for another change (back-pressure); false if cancelled
    /// meanwhile.
    async fn wait_for_room(&self, cancel: &CancellationToken) -> bool {
        if self.store.has_room() {
            return true;
        }
        tracing::trace!(reflector = %self.name, "the queue is full, waiting for the informer");
        tokio::select! {
            biased;
            _ = cancel.cancelled() => false,
            () = self.store.room() => true,
        }
    }

    /// Waits one backoff delay; false if cancelled meanwhile.
    async fn sleep_backoff(&self, cancel: &CancellationToken) -> bool {
        let delay = self.backoff.lock().next_delay();
        tokio::select! {
            biased;
            _ = cancel.cancelled() => false,
            _ = tokio::time::sleep(delay) => true,
        }
    }

    /// A random watch timeout in [min, 2×min], in whole seconds: at least 5 minutes, at most
    /// [`LONGEST_WATCH_TIMEOUT_SECONDS`], never negative.
    fn watch_timeout_seconds(&self) -> i64 {
        let jitter = self.rng.lock().next_f64();
        // `as` saturates: an absurd minimum cannot overflow.
        let seconds = (self.min_watch_timeout.as_secs_f64() * (jitter + 1.0)) as i64;
        seconds.clamp(1, LONGEST_WATCH_TIMEOUT_SECONDS)
    }

    fn set_last_sync_resource_version(&self, rv: &str) {
        {
            let mut sync = self.sync.lock();
            sync.last_sync_rv.clear();
            sync.last_sync_rv.push_str(rv);
        }
        if let Some(metrics) = &self.metrics {
            metrics.synced_to(rv);
        }
    }

    fn set_resource_version_unavailable(&self, unavailable: bool) {
        self.sync.lock().rv_unavailable = unavailable;
    }

    /// Where a LIST starts (client-go's `relistResourceVersion`): `""` (a consistent read)
    /// after an expired or too-large resourceVersion, `"0"` (any cached state) the first time,
    /// else the last synced version, so the reflector never goes back in time.
    fn relist_resource_version(&self) -> String {
        let sync = self.sync.lock();
        if sync.rv_unavailable {
            String::new()
        } else if sync.last_sync_rv.is_empty() {
            "0".to_owned()
        } else {
            sync.last_sync_rv.clone()
        }
    }

    /// Where a streaming list starts (client-go's `rewatchResourceVersion`): `""` (the most
    /// recent state, consistent) initially or after an unavailable version, else the last
    /// synced version.
    fn rewatch_resource_version(&self) -> String {
        let sync = self.sync.lock();
        if sync.rv_unavailable {
            String::new()
        } else {
            sync.last_sync_rv.clone()
        }
    }
}
