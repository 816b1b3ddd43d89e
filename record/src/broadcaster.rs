//! Fanning recorded events out to sinks, logs and handlers: [`EventBroadcaster`] and the
//! [`EventWatcher`] handle of each destination.
//!
//! Mirrors client-go's `EventBroadcaster` (`tools/record/event.go`) and the long-queue
//! `watch.Broadcaster` with `DropIfChannelFull` under it. Each destination started on a
//! broadcaster (a sink, the log, a handler) is a watcher: a bounded queue of
//! [`MAX_QUEUED_EVENTS`] (1000) events and a tokio task that takes them in order. Recording
//! puts the event on every watcher's queue without waiting; a watcher whose queue is full loses
//! it, and the loss is counted ([`EventBroadcaster::dropped_events`],
//! [`EventWatcher::dropped_events`]) and logged. Events recorded while no watcher runs go
//! nowhere, as in client-go.
//!
//! A sink watcher ([`EventBroadcaster::start_recording_to_sink`]) has its own
//! [`EventCorrelator`], so two sinks count and aggregate independently, and writes with the
//! retry rules described in the `sink` module. [`EventBroadcaster::shutdown`] refuses new
//! events and new watchers, closes every queue (each task still takes what its queue holds)
//! and cancels the sinks' retry sleeps, so each remaining event gets one try.
//!
//! Where it differs from client-go: the recorder writes straight into each watcher's queue,
//! where Go goes through one more goroutine and queue (the broadcaster's `incoming` channel)
//! that distributes to the watchers; the result (bounded, never blocking, dropping when full) is
//! the same with one hop less. Options are a struct rather than functional options, and
//! `WithContext` is [`EventBroadcaster::shutdown`]. Logging goes to `tracing` (client-go's
//! `StartStructuredLogging`); [`EventBroadcaster::start_event_watcher`] takes any other handler.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::RwLock;
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TrySendError;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::clock::{Clock, SystemClock};
use crate::correlator::{CorrelatorOptions, EventCorrelator};
use crate::event::Event;
use crate::sink::{DEFAULT_SLEEP_DURATION, EventSink, Jitter, SinkWriter};

/// The length of each watcher's queue (client-go's `maxQueuedEvents`).
pub const MAX_QUEUED_EVENTS: usize = 1000;

/// How an [`EventBroadcaster`] behaves. [`Default`] gives client-go's defaults.
#[derive(Clone)]
pub struct BroadcasterOptions {
    /// The length of each watcher's queue (default [`MAX_QUEUED_EVENTS`]; at least 1).
    pub queue_length: usize,
    /// The sleep between write tries; the first is a random fraction of it (default
    /// [`DEFAULT_SLEEP_DURATION`], client-go's `WithSleepDuration`).
    pub sleep_duration: Duration,
    /// The options of each sink's correlator (client-go's `WithCorrelatorOptions`).
    pub correlator: CorrelatorOptions,
    /// Wall-clock time for the events recorders make (default [`SystemClock`]).
    pub clock: Arc<dyn Clock>,
    /// Seeds the random first retry sleep (each sink gets its own sequence from it); `None`
    /// draws a random seed.
    pub seed: Option<u64>,
}

impl Default for BroadcasterOptions {
    fn default() -> BroadcasterOptions {
        BroadcasterOptions {
            queue_length: MAX_QUEUED_EVENTS,
            sleep_duration: DEFAULT_SLEEP_DURATION,
            correlator: CorrelatorOptions::default(),
            clock: Arc::new(SystemClock),
            seed: None,
        }
    }
}

impl fmt::Debug for BroadcasterOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BroadcasterOptions")
            .field("queue_length", &self.queue_length)
            .field("sleep_duration", &self.sleep_duration)
            .field("correlator", &self.correlator)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

/// Receives recorded events and hands them to sinks, the log and handlers (client-go's
/// `EventBroadcaster`). Cheap to clone; clones share everything.
///
/// The `start_*` methods spawn a tokio task and so must be called within a tokio runtime
/// (they panic otherwise, as [`tokio::spawn`] does).
#[derive(Clone)]
pub struct EventBroadcaster {
    pub(crate) shared: Arc<Shared>,
}

/// What a broadcaster, its recorders and its watchers share.
pub(crate) struct Shared {
    watchers: RwLock<Watchers>,
    dropped: AtomicU64,
    cancel: CancellationToken,
    pub(crate) options: BroadcasterOptions,
    next_id: AtomicU64,
}

#[derive(Default)]
struct Watchers {
    closed: bool,
    list: Vec<Slot>,
}

struct Slot {
    id: u64,
    queue: mpsc::Sender<Arc<Event>>,
    dropped: Arc<AtomicU64>,
}

impl Shared {
    /// Queues `event` on every watcher without waiting (client-go's `ActionOrDrop`).
    pub(crate) fn action_or_drop(&self, event: Event) {
        let event = Arc::new(event);
        let watchers = self.watchers.read();
        if watchers.closed {
            tracing::error!(
                event = %event.metadata.name,
                reason = %event.reason,
                "Unable to record event: the broadcaster is shut down (will not retry!)"
            );
            return;
        }
        let mut lost = false;
        for slot in &watchers.list {
            match slot.queue.try_send(Arc::clone(&event)) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    slot.dropped.fetch_add(1, Ordering::Relaxed);
                    lost = true;
                }
                // The watcher's task has ended (its handler panicked): nobody to tell.
                Err(TrySendError::Closed(_)) => {}
            }
        }
        drop(watchers);
        if lost {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::error!(
                namespace = %event.metadata.namespace,
                event = %event.metadata.name,
                reason = %event.reason,
                "Unable to record event: too many queued events, dropped event"
            );
        }
    }

    /// Registers a new watcher's queue; after shutdown the queue comes back already closed.
    fn add_watcher(&self) -> (u64, Arc<AtomicU64>, mpsc::Receiver<Arc<Event>>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (queue, receiver) = mpsc::channel(self.options.queue_length.max(1));
        let dropped = Arc::new(AtomicU64::new(0));
        let mut watchers = self.watchers.write();
        if watchers.closed {
            tracing::error!("Unable to start event watcher: the broadcaster is shut down");
        } else {
            watchers.list.push(Slot {
                id,
                queue,
                dropped: Arc::clone(&dropped),
            });
        }
        (id, dropped, receiver)
    }

    fn remove_watcher(&self, id: u64) {
        self.watchers.write().list.retain(|slot| slot.id != id);
    }
}

impl Default for EventBroadcaster {
    fn default() -> EventBroadcaster {
        EventBroadcaster::new()
    }
}

impl fmt::Debug for EventBroadcaster {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let watchers = self.shared.watchers.read();
        f.debug_struct("EventBroadcaster")
            .field("watchers", &watchers.list.len())
            .field("shut_down", &watchers.closed)
            .field("dropped_events", &self.dropped_events())
            .finish_non_exhaustive()
    }
}

impl EventBroadcaster {
    /// A broadcaster with client-go's defaults (client-go's `NewBroadcaster`).
    pub fn new() -> EventBroadcaster {
        EventBroadcaster::with_options(BroadcasterOptions::default())
    }

    /// A broadcaster with the given options.
    pub fn with_options(options: BroadcasterOptions) -> EventBroadcaster {
        EventBroadcaster {
            shared: Arc::new(Shared {
                watchers: RwLock::new(Watchers::default()),
                dropped: AtomicU64::new(0),
                cancel: CancellationToken::new(),
                options,
                next_id: AtomicU64::new(0),
            }),
        }
    }

    /// Writes every event recorded from now on to `sink`: correlated (aggregated, counted,
    /// spam-filtered), then created or patched with retries (client-go's
    /// `StartRecordingToSink`). Each call has its own correlator.
    pub fn start_recording_to_sink<S: EventSink>(&self, sink: S) -> EventWatcher {
        let (id, dropped, mut queue) = self.shared.add_watcher();
        let options = &self.shared.options;
        let mut correlator = EventCorrelator::with_options(options.correlator.clone());
        let seed = match options.seed {
            Some(seed) => seed.wrapping_add(id.wrapping_mul(0x9E37_79B9_7F4A_7C15)),
            None => uuid::Uuid::new_v4().as_u64_pair().0,
        };
        let mut writer = SinkWriter {
            sleep_duration: options.sleep_duration,
            cancel: self.shared.cancel.clone(),
            jitter: Jitter::new(seed),
        };
        let task = tokio::spawn(async move {
            while let Some(event) = queue.recv().await {
                writer
                    .record_to_sink(&sink, Event::clone(&event), &mut correlator)
                    .await;
            }
        });
        self.watcher(id, dropped, task)
    }

    /// Logs every event recorded from now on with `tracing`, at info level: "Event occurred"
    /// with the fields `object` (`namespace/name`), `field_path`, `kind`, `api_version`,
    /// `event_type`, `reason` and `event_message` (client-go's `StartStructuredLogging`, whose
    /// keys are `type` and `message`; `message` is taken by `tracing` itself).
    pub fn start_logging(&self) -> EventWatcher {
        self.start_event_watcher(log_event)
    }

    /// Calls `handler` with every event recorded from now on, in order, on a task of its own
    /// (client-go's `StartEventWatcher`).
    pub fn start_event_watcher<F>(&self, mut handler: F) -> EventWatcher
    where
        F: FnMut(&Event) + Send + 'static,
    {
        let (id, dropped, mut queue) = self.shared.add_watcher();
        let task = tokio::spawn(async move {
            while let Some(event) = queue.recv().await {
                handler(&event);
            }
        });
        self.watcher(id, dropped, task)
    }

    fn watcher(&self, id: u64, dropped: Arc<AtomicU64>, task: JoinHandle<()>) -> EventWatcher {
        EventWatcher {
            id,
            shared: Arc::downgrade(&self.shared),
            dropped,
            task,
        }
    }

    /// Stops the broadcaster (client-go's `Shutdown`): later events and watchers are refused,
    /// every watcher finishes what its queue holds, and sinks stop retrying, so each queued
    /// event gets at most one more try. Await [`EventWatcher::join`] to know they are done.
    pub fn shutdown(&self) {
        let slots = {
            let mut watchers = self.shared.watchers.write();
            watchers.closed = true;
            std::mem::take(&mut watchers.list)
        };
        // Dropping the senders closes the queues.
        drop(slots);
        self.shared.cancel.cancel();
    }

    /// Whether [`shutdown`](Self::shutdown) was called.
    pub fn is_shut_down(&self) -> bool {
        self.shared.watchers.read().closed
    }

    /// How many recorded events at least one watcher lost because its queue was full.
    pub fn dropped_events(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }
}

fn log_event(event: &Event) {
    let o = &event.involved_object;
    let object = if o.namespace.is_empty() {
        o.name.clone()
    } else {
        format!("{}/{}", o.namespace, o.name)
    };
    tracing::info!(
        %object,
        field_path = %o.field_path,
        kind = %o.kind,
        api_version = %o.api_version,
        event_type = %event.type_,
        reason = %event.reason,
        event_message = %event.message,
        "Event occurred"
    );
}

/// One destination of a broadcaster's events: a sink, the log, or a handler (the
/// `watch.Interface` client-go's `Start*` methods return).
///
/// Dropping the handle leaves the destination running, as ignoring the return value does in
/// client-go; [`stop`](Self::stop) ends it.
#[derive(Debug)]
pub struct EventWatcher {
    id: u64,
    shared: Weak<Shared>,
    dropped: Arc<AtomicU64>,
    task: JoinHandle<()>,
}

impl EventWatcher {
    /// Stops taking new events; the task still handles those already queued, then ends.
    pub fn stop(&self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.remove_watcher(self.id);
        }
    }

    /// How many events this watcher lost because its queue was full.
    pub fn dropped_events(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Whether the task has ended (after [`stop`](Self::stop) or a shutdown, once its queue
    /// is empty).
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for the task to end. Call [`stop`](Self::stop) or
    /// [`EventBroadcaster::shutdown`] first, or this waits for as long as events may come.
    pub async fn join(self) {
        if let Err(err) = self.task.await {
            tracing::error!(error = %err, "An event watcher ended abnormally");
        }
    }
}
