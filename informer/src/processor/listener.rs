//! One registered handler: its unbounded buffer, the thread that drains it into the
//! handler, its resync schedule and its sync tracking (client-go's `processorListener` and
//! `synctrack.SingleFileTracker`).
//!
//! Notifications go into an unbounded channel, drained in order by the listener's own tokio
//! task. So a slow handler delays only itself: the informer's process loop and the other
//! handlers never wait for it (at the price of memory while it lags, as in client-go;
//! [`Registration::pending`] shows the backlog).
//!
//! Where the handler is called depends on what it declares
//! ([`ResourceEventHandler::is_nonblocking`]):
//!
//! * By default the task does not call the handler itself: it takes what is queued (up to
//!   `MAX_BATCH` notifications) and hands the batch to [`tokio::task::spawn_blocking`],
//!   which calls the handler for each, in order, on the runtime's blocking pool. Why:
//!   handlers are synchronous, and one that is slow would otherwise hold an async worker for
//!   as long as it runs, and the tasks parked on that worker (its LIFO slot, its list of
//!   tasks that yielded) with it. Our test of a slow handler next to a fast one, with the
//!   handler called on the task, saw the fast one stop after 128 notifications (tokio's
//!   cooperative budget) until the slow one returned. On the blocking pool a slow handler
//!   holds only a pool thread; the handler runs in the runtime's context (it may
//!   `tokio::spawn`); and tokio's paused test clock does not jump ahead while a handler
//!   runs, so tests stay deterministic.
//! * A handler that declares itself non-blocking (an
//!   [`EnqueueHandler`](crate::EnqueueHandler): a queue add) is called on the task, one
//!   notification at a time, with a cooperative yield point (tokio's budget) after each.
//!   The hand-off above costs two thread wake-ups per batch (the pool thread's, then the
//!   task's when the batch is done), and when events arrive one at a time, as a controller's
//!   steady state has them, every batch is one event: on a real kube-apiserver that was
//!   about half of the informer's CPU per event (I1 in benches/README.md).
//!
//! client-go runs each listener in goroutines of its own, where a hand-off costs little;
//! tokio tasks are as cheap, but only for code that does not block.
//!
//! ## Sync tracking
//!
//! A registration has synced when the informer has synced **and** the handler has returned
//! from every `on_add(_, true)` queued for it. `initial_pending` counts the queued initial
//! adds: it is incremented when one is queued (before the informer can report synced: the
//! informer counts an item as processed only after handing its notifications out) and
//! decremented after the handler returned. [`Registration::has_synced`] reads the
//! informer's flag *first*, then the count: if the flag is set, every increment it depends
//! on happened before, so a zero count means they were all handled.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::{Notify, mpsc};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::fifo::SyncedFlag;
use crate::handler::ResourceEventHandler;
use crate::keys::DeleteEvent;
use crate::panics::{Failures, PanicSource};

/// What a listener learns from its informer: whether it has synced, and whether a panic
/// stopped it (a handler's own panic is reported there too).
pub(crate) struct Upstream {
    pub(crate) synced: Arc<SyncedFlag>,
    pub(crate) failures: Arc<Failures>,
    /// Woken when this listener's buffer drains to half the limit: the process loop may
    /// be waiting for room.
    pub(crate) room: Arc<Room>,
}

/// How many notifications a handler's buffer holds before the process loop waits, and the
/// wake-up for that wait.
#[derive(Debug)]
pub(crate) struct Room {
    pub(crate) limit: usize,
    pub(crate) drained: Notify,
}

/// What a listener is told.
pub(crate) enum Notification<T> {
    Add { object: Arc<T>, initial: bool },
    Update { old: Arc<T>, new: Arc<T> },
    Delete(DeleteEvent<T>),
}

impl<T> Clone for Notification<T> {
    fn clone(&self) -> Self {
        match self {
            Notification::Add { object, initial } => Notification::Add {
                object: object.clone(),
                initial: *initial,
            },
            Notification::Update { old, new } => Notification::Update {
                old: old.clone(),
                new: new.clone(),
            },
            Notification::Delete(event) => Notification::Delete(event.clone()),
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A fresh identity for a listener or a processor.
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A listener's resync schedule (client-go's `requestedResyncPeriod`, `resyncPeriod`,
/// `nextResync`).
#[derive(Debug)]
pub(crate) struct Resync {
    /// What the handler asked for (after the 1 s minimum).
    pub(crate) requested: Duration,
    /// What applies: 0 if the informer does not resync, at least the check period.
    pub(crate) period: Duration,
    pub(crate) next: Instant,
}

/// The most notifications handed to the blocking pool at once.
const MAX_BATCH: usize = 1024;

pub(crate) struct Listener<T> {
    pub(crate) id: u64,
    pub(crate) processor_id: u64,
    /// The informer's name, for messages.
    pub(crate) owner: Arc<str>,
    /// The handler's name (in metrics): given at registration, or its index.
    pub(crate) name: Arc<str>,
    tx: mpsc::UnboundedSender<Notification<T>>,
    /// Taken by the task when it starts.
    rx: Mutex<Option<mpsc::UnboundedReceiver<Notification<T>>>>,
    /// What the task needs; the task holds no sender, so it ends when the listener is
    /// dropped.
    core: Arc<Core<T>>,
    pub(crate) resync: Mutex<Resync>,
    /// Whether the last resync check found this listener due (sync notifications go only to
    /// due listeners).
    pub(crate) syncing: AtomicBool,
}

struct Core<T> {
    handler: Box<dyn ResourceEventHandler<T>>,
    /// The handler declared itself non-blocking: called on the task (see the module docs).
    on_task: bool,
    /// The handler's name, for the panic report.
    name: Arc<str>,
    /// The informer's panic bookkeeping: a handler's panic goes there.
    failures: Arc<Failures>,
    room: Arc<Room>,
    /// Notifications queued and not yet handled.
    pending: AtomicUsize,
    /// Initial-list adds queued and not yet handled.
    initial_pending: AtomicUsize,
    initial_done: Notify,
    /// The informer's synced flag.
    upstream: Arc<SyncedFlag>,
    stop: CancellationToken,
    stopped: SyncedFlag,
}

impl<T> Core<T> {
    fn initial_handled(&self) {
        if self.initial_pending.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.initial_done.notify_waiters();
        }
    }

    /// Nothing more will be handled: release whoever waits.
    fn finish(&self) {
        // What is left is dropped: it no longer holds the process loop back.
        self.pending.store(0, Ordering::SeqCst);
        self.room.drained.notify_waiters();
        self.initial_pending.store(0, Ordering::SeqCst);
        self.initial_done.notify_waiters();
        self.stopped.set();
    }

    /// One notification left the buffer: wakes the process loop at half the limit.
    fn handled(&self) {
        let before = self
            .pending
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                Some(n.saturating_sub(1))
            })
            .unwrap_or(0);
        if before.saturating_sub(1) == self.room.limit / 2 {
            self.room.drained.notify_waiters();
        }
    }

    fn handle(&self, notification: Notification<T>) {
        let initial = matches!(notification, Notification::Add { initial: true, .. });
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| match notification {
            Notification::Add { object, initial } => self.handler.on_add(&object, initial),
            Notification::Update { old, new } => self.handler.on_update(&old, &new),
            Notification::Delete(event) => self.handler.on_delete(event),
        }));
        if initial {
            self.initial_handled();
        }
        if let Err(payload) = outcome {
            // The informer's policy decides: abort, or stop the informer as a whole (see
            // the `panics` module); this handler goes on with what is buffered for it.
            let source = PanicSource::Handler(self.name.to_string());
            self.failures.panicked(source, &*payload);
        }
    }
}

impl<T: Send + Sync + 'static> Core<T> {
    async fn run(self: Arc<Self>, mut rx: mpsc::UnboundedReceiver<Notification<T>>, listener: u64) {
        let mut batch = Vec::new();
        loop {
            let first = tokio::select! {
                biased;
                _ = self.stop.cancelled() => break,
                next = rx.recv() => match next {
                    Some(notification) => notification,
                    None => break, // the listener is gone
                },
            };
            batch.push(first);
            while batch.len() < MAX_BATCH {
                match rx.try_recv() {
                    Ok(notification) => batch.push(notification),
                    Err(_) => break,
                }
            }
            if self.on_task {
                for notification in batch.drain(..) {
                    if self.stop.is_cancelled() {
                        break; // what is left is dropped, as client-go does
                    }
                    self.handle(notification);
                    self.handled();
                    tokio::task::consume_budget().await;
                }
                batch.clear();
                continue;
            }
            let core = self.clone();
            let notifications = std::mem::take(&mut batch);
            let handled = tokio::task::spawn_blocking(move || {
                for notification in notifications {
                    if core.stop.is_cancelled() {
                        break; // what is left is dropped, as client-go does
                    }
                    core.handle(notification);
                    core.handled();
                }
            });
            if let Err(error) = handled.await {
                // Panics are caught per notification; this is the runtime shutting down.
                tracing::debug!(listener, %error, "event handler batch did not run");
                break;
            }
        }
        self.finish();
    }
}

impl<T: Send + Sync + 'static> Listener<T> {
    pub(crate) fn new(
        processor_id: u64,
        owner: Arc<str>,
        name: Arc<str>,
        handler: Box<dyn ResourceEventHandler<T>>,
        requested: Duration,
        period: Duration,
        upstream: Upstream,
    ) -> Arc<Self> {
        let Upstream {
            synced: upstream,
            failures,
            room,
        } = upstream;
        let (tx, rx) = mpsc::unbounded_channel();
        Arc::new(Listener {
            id: next_id(),
            processor_id,
            owner,
            name: name.clone(),
            tx,
            rx: Mutex::new(Some(rx)),
            core: Arc::new(Core {
                on_task: handler.is_nonblocking(),
                handler,
                name,
                failures,
                room,
                pending: AtomicUsize::new(0),
                initial_pending: AtomicUsize::new(0),
                initial_done: Notify::new(),
                upstream,
                stop: CancellationToken::new(),
                stopped: SyncedFlag::default(),
            }),
            resync: Mutex::new(Resync {
                requested,
                period,
                next: Instant::now() + period,
            }),
            syncing: AtomicBool::new(true),
        })
    }

    /// Queues a notification for the handler (client-go's `processorListener.add`).
    pub(crate) fn add(&self, notification: Notification<T>) {
        let core = &self.core;
        let initial = matches!(notification, Notification::Add { initial: true, .. });
        if initial {
            core.initial_pending.fetch_add(1, Ordering::SeqCst);
        }
        core.pending.fetch_add(1, Ordering::SeqCst);
        if self.tx.send(notification).is_err() {
            // The task is gone (the listener was stopped): nobody will handle it.
            core.handled();
            if initial {
                core.initial_handled();
            }
        }
    }

    /// Whether due for a resync at `now`; if so, schedules the next one.
    pub(crate) fn check_resync(&self, now: Instant) -> bool {
        let mut resync = self.resync.lock();
        let due = !resync.period.is_zero() && now >= resync.next;
        if due {
            resync.next = now + resync.period;
        }
        self.syncing.store(due, Ordering::Relaxed);
        due
    }

    /// Starts the task that drains the buffer into the handler (once), on `runtime`.
    pub(crate) fn start(&self, runtime: &tokio::runtime::Handle) {
        let Some(rx) = self.rx.lock().take() else {
            return; // started already
        };
        runtime.spawn(self.core.clone().run(rx, self.id));
    }

    /// Stops the task; what it has not handled yet is dropped.
    pub(crate) fn stop(&self) {
        self.core.stop.cancel();
        // Never started: there is no task to finish the job.
        if let Some(rx) = self.rx.lock().take() {
            drop(rx);
            self.core.finish();
        }
    }

    /// Notifications queued and not yet handled.
    pub(crate) fn pending(&self) -> usize {
        self.core.pending.load(Ordering::SeqCst)
    }

    pub(crate) fn upstream_synced(&self) -> bool {
        self.core.upstream.is_set()
    }

    /// Why the informer stopped on its own, if it did.
    pub(crate) fn informer_failure(&self) -> Option<crate::panics::InformerFailure> {
        self.core.failures.failure()
    }

    pub(crate) fn has_synced(&self) -> bool {
        // Upstream first: see the module docs.
        self.core.upstream.is_set()
            && !self.core.failures.is_failed()
            && self.core.initial_pending.load(Ordering::SeqCst) == 0
    }

    async fn wait_synced(&self) {
        self.core.upstream.wait().await;
        loop {
            let done = self.core.initial_done.notified();
            if self.core.initial_pending.load(Ordering::SeqCst) == 0 {
                return;
            }
            done.await;
        }
    }

    pub(crate) async fn wait_stopped(&self) {
        self.core.stopped.wait().await
    }
}

/// The handle [`add_event_handler`](crate::SharedIndexInformer::add_event_handler) returns
/// (client-go's `ResourceEventHandlerRegistration`): identifies the handler for
/// [`remove_event_handler`](crate::SharedIndexInformer::remove_event_handler) and tells
/// whether it has seen the informer's initial state.
pub struct Registration<T> {
    pub(crate) listener: Arc<Listener<T>>,
}

impl<T> Clone for Registration<T> {
    fn clone(&self) -> Self {
        Registration {
            listener: self.listener.clone(),
        }
    }
}

impl<T: Send + Sync + 'static> Registration<T> {
    /// Whether the informer has synced and this handler has handled every object of the
    /// initial list (or, for a handler added later, every object cached when it joined).
    pub fn has_synced(&self) -> bool {
        self.listener.has_synced()
    }

    /// Waits until [`has_synced`](Self::has_synced).
    pub async fn wait_synced(&self) {
        self.listener.wait_synced().await
    }

    /// How many notifications wait in this handler's buffer: how far it lags (also
    /// `informer_handler_buffer_length` with metrics on).
    pub fn pending(&self) -> usize {
        self.listener.pending()
    }

    /// The handler's name, as it appears in metrics: the one given in
    /// [`HandlerOptions::name`](crate::HandlerOptions::name), or its registration index on the
    /// informer (`"0"` for the first handler added, ...).
    pub fn name(&self) -> &str {
        &self.listener.name
    }

    /// The resync period in effect for this handler (zero: no resync).
    pub fn resync_period(&self) -> Duration {
        self.listener.resync.lock().period
    }

    /// Whether the handler's task has ended (removed, or the informer stopped).
    pub fn is_stopped(&self) -> bool {
        self.listener.core.stopped.is_set()
    }

    /// Waits until the handler's task has ended: after
    /// [`remove_event_handler`](crate::SharedIndexInformer::remove_event_handler) returns, a
    /// notification may still be in the middle of being handled; after this, none is
    /// (client-go's `ShutDownEventHandler` waits the same way).
    pub async fn wait_stopped(&self) {
        self.listener.wait_stopped().await
    }
}

impl<T> fmt::Debug for Registration<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.listener.id)
            .field("name", &self.listener.name)
            .field(
                "pending",
                &self.listener.core.pending.load(Ordering::Relaxed),
            )
            .finish_non_exhaustive()
    }
}
