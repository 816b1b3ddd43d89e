//! Fan-out of notifications to the registered handlers: client-go's `sharedProcessor`.
//!
//! Each handler has a listener (see `listener.rs`): an unbounded buffer drained by the
//! listener's own task (handlers run on the blocking pool), so one slow handler never blocks
//! the informer or the others.
//! [`SharedProcessor::distribute`] hands a notification to every listener, or, for a resync
//! notification, only to the listeners whose own resync period is due.
//!
//! Resync bookkeeping follows client-go: the reflector's resync timer fires every *check
//! period* (the smallest handler period) and asks [`SharedProcessor::should_resync`], which
//! marks each listener due or not and schedules its next resync; the informer then resyncs,
//! and the `on_update(o, o)` notifications that follow (same resourceVersion on both sides)
//! go to the due listeners only.
//!
//! ## Invariants
//!
//! * Listeners added before [`run`](SharedProcessor::run) buffer what they are given and
//!   start with the processor; listeners added after start at once. A listener is started
//!   at most once (its receiver is taken by its task).
//! * A removed or stopped listener receives nothing more; what it had not handled is
//!   dropped (client-go closes its channel the same way).
//!
//! Where it differs from client-go: a handler's buffer is bounded
//! ([`DEFAULT_HANDLER_BUFFER_LIMIT`], or the informer's `handler_buffer_limit`). Before it
//! pops the next item, the process loop waits until every buffer is below the limit (woken
//! when the buffer drains to half of it); the queue behind it then fills and the reflector
//! waits too. A slow handler so bounds the memory held for it, at the price of slowing the
//! other handlers once it is that far behind (client-go's buffers grow without bound). A
//! handler must therefore not wait for its own informer to make progress.

mod listener;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::{Mutex, RwLock};
use tokio::time::Instant;

use crate::fifo::SyncedFlag;
use crate::handler::ResourceEventHandler;
use crate::panics::Failures;

pub use listener::Registration;
pub(crate) use listener::{Listener, Notification, Room, Upstream};

/// How many notifications a handler's buffer holds before the informer's process loop waits
/// for it, by default (one relist may add more at once).
pub const DEFAULT_HANDLER_BUFFER_LIMIT: usize = 10_000;

/// The listeners of one informer.
pub(crate) struct SharedProcessor<T> {
    pub(crate) id: u64,
    /// The informer's name, for messages.
    owner: Arc<str>,
    listeners: RwLock<Vec<Arc<Listener<T>>>>,
    /// How many listeners were ever added: the next one's index, its default name.
    added: AtomicUsize,
    run: Mutex<RunState>,
    /// The informer's panic bookkeeping, handed to each listener.
    failures: Arc<Failures>,
    /// The handler buffer limit, and the wake-up when a buffer drains.
    room: Arc<Room>,
}

#[derive(Default)]
struct RunState {
    /// Where listener tasks are spawned, while running.
    runtime: Option<tokio::runtime::Handle>,
}

/// The period a listener gets for the `requested` one, given the informer's check period
/// (client-go's `determineResyncPeriod`).
pub(crate) fn determine_resync_period(requested: Duration, check: Duration) -> Duration {
    if requested.is_zero() {
        return requested;
    }
    if check.is_zero() {
        tracing::warn!(
            ?requested,
            "the resync period is ignored: this shared informer does not resync"
        );
        return Duration::ZERO;
    }
    if requested < check {
        tracing::warn!(
            ?requested,
            ?check,
            "the resync period is raised to the informer's resync check period"
        );
        return check;
    }
    requested
}

impl<T: Send + Sync + 'static> SharedProcessor<T> {
    pub(crate) fn new(owner: &str, failures: Arc<Failures>, buffer_limit: usize) -> Self {
        SharedProcessor {
            id: listener::next_id(),
            owner: Arc::from(owner),
            listeners: RwLock::new(Vec::new()),
            added: AtomicUsize::new(0),
            run: Mutex::new(RunState::default()),
            failures,
            room: Arc::new(Room {
                limit: buffer_limit.max(1),
                drained: tokio::sync::Notify::new(),
            }),
        }
    }

    /// Creates and registers a listener for `handler`, named `name` or else by its index
    /// among the listeners ever added; starts it if the processor runs.
    pub(crate) fn add_listener(
        &self,
        handler: Box<dyn ResourceEventHandler<T>>,
        name: Option<String>,
        requested: Duration,
        period: Duration,
        upstream: Arc<SyncedFlag>,
    ) -> Registration<T> {
        let index = self.added.fetch_add(1, Ordering::Relaxed);
        let name = name.unwrap_or_else(|| index.to_string());
        let listener = Listener::new(
            self.id,
            self.owner.clone(),
            Arc::from(name),
            handler,
            requested,
            period,
            Upstream {
                synced: upstream,
                failures: self.failures.clone(),
                room: self.room.clone(),
            },
        );
        self.listeners.write().push(listener.clone());
        if let Some(runtime) = &self.run.lock().runtime {
            listener.start(runtime);
        }
        Registration { listener }
    }

    /// Unregisters and stops a listener; a no-op for one that is not registered here.
    pub(crate) fn remove_listener(&self, registration: &Registration<T>) {
        if registration.listener.processor_id != self.id {
            return; // another informer's
        }
        let mut listeners = self.listeners.write();
        if let Some(i) = listeners
            .iter()
            .position(|l| l.id == registration.listener.id)
        {
            listeners.swap_remove(i).stop();
        }
    }

    pub(crate) fn is_registered(&self, registration: &Registration<T>) -> bool {
        self.listeners
            .read()
            .iter()
            .any(|l| l.id == registration.listener.id)
    }

    pub(crate) fn len(&self) -> usize {
        self.listeners.read().len()
    }

    /// Calls `f(name, pending)` for each listener: its name and how many notifications wait
    /// in its buffer.
    pub(crate) fn buffer_lengths(&self, mut f: impl FnMut(&str, usize)) {
        for listener in self.listeners.read().iter() {
            f(&listener.name, listener.pending());
        }
    }

    /// Whether every handler's buffer is below the limit.
    fn has_room(&self) -> bool {
        let limit = self.room.limit;
        self.listeners.read().iter().all(|l| l.pending() < limit)
    }

    /// Waits until every handler's buffer is below the limit (the process loop waits here
    /// before the next item, so a slow handler bounds what is buffered for it).
    pub(crate) async fn wait_for_room(&self) {
        loop {
            let drained = self.room.drained.notified();
            tokio::pin!(drained);
            drained.as_mut().enable();
            if self.has_room() {
                return;
            }
            drained.await;
        }
    }

    /// Hands `notification` to every listener, or only to the due ones when `is_sync`.
    pub(crate) fn distribute(&self, notification: Notification<T>, is_sync: bool) {
        let listeners = self.listeners.read();
        let mut targets = listeners
            .iter()
            .filter(|l| !is_sync || l.syncing.load(Ordering::Relaxed))
            .peekable();
        while let Some(listener) = targets.next() {
            if targets.peek().is_some() {
                listener.add(notification.clone());
            } else {
                listener.add(notification);
                break;
            }
        }
    }

    /// Marks each listener due for a resync or not, at `now`; returns whether any is
    /// (client-go's `shouldResync`).
    pub(crate) fn should_resync(&self, now: Instant) -> bool {
        let listeners = self.listeners.read();
        let mut any = false;
        for listener in listeners.iter() {
            any |= listener.check_resync(now);
        }
        any
    }

    /// Re-derives every listener's period for a new check period (client-go's
    /// `resyncCheckPeriodChanged`).
    pub(crate) fn resync_check_period_changed(&self, check: Duration) {
        for listener in self.listeners.read().iter() {
            let mut resync = listener.resync.lock();
            resync.period = determine_resync_period(resync.requested, check);
        }
    }

    /// Starts every listener's task on the current runtime, and later ones as they come.
    pub(crate) fn run(&self) {
        let runtime = tokio::runtime::Handle::current();
        let listeners = self.listeners.read();
        for listener in listeners.iter() {
            listener.start(&runtime);
        }
        self.run.lock().runtime = Some(runtime);
    }

    /// Stops every listener, unregisters them all, and waits for their tasks to end.
    pub(crate) async fn stop(&self) {
        self.run.lock().runtime = None;
        let listeners = std::mem::take(&mut *self.listeners.write());
        for listener in &listeners {
            listener.stop();
        }
        for listener in &listeners {
            // A task ends once its handler returns from the notification in hand.
            listener.wait_stopped().await;
        }
    }
}
