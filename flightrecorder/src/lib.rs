//! A flight recorder of a controller's loop: every key's journey, from the watch event that
//! put it on the work queue to the reconcile that handled it, as a timeline a person can look
//! at.
//!
//! The library crates emit structured `tracing` events and spans at each stage of the loop,
//! under targets that end in `::journey`, at `TRACE` level: with no subscriber interested
//! they cost a relaxed load. A [`Recorder`] is a `tracing` layer for those targets only; it
//! keeps the newest events in a bounded ring buffer and writes them out on demand as
//!
//! * the Chrome Trace Event Format JSON that [Perfetto](https://ui.perfetto.dev) and
//!   `chrome://tracing` open ([`Snapshot::chrome_trace`]): a track per worker and per key,
//!   the queue depth as a counter, and flow arrows from each watch event to the reconcile it
//!   caused;
//! * one self-contained HTML file ([`Snapshot::html`]; no script, font or network access
//!   beyond the file): lanes per worker, the queue depth over time, each key's journey on
//!   hover or click, coalesced events and backoffs marked.
//!
//! It also keeps the queues' current state ([`Recorder::queue_view`]: depth, keys in flight
//! with their worker and age, keys waiting with their ready time and failure count), which
//! the sample-controller serves at `/debug/queue`.
//!
//! ```
//! use clientgo_flightrecorder::Recorder;
//! use tracing_subscriber::layer::SubscriberExt;
//!
//! let recorder = Recorder::new(100_000);
//! let subscriber = tracing_subscriber::registry().with(recorder.layer());
//! tracing::subscriber::with_default(subscriber, || {
//!     // ... the controller runs; the library crates emit journey events ...
//!     tracing::trace!(target: "clientgo_workqueue::journey", stage = "add",
//!         queue = "foos", key = "default/web", outcome = "new", depth = 1u64);
//! });
//! let snapshot = recorder.snapshot();
//! assert_eq!(snapshot.entries.len(), 1);
//! let json = snapshot.chrome_trace(); // open in ui.perfetto.dev
//! let html = snapshot.html("my controller"); // open in any browser
//! # assert!(json.contains("traceEvents") && html.contains("id=\"chart\""));
//! ```
//!
//! Other layers (a `fmt` layer with its `EnvFilter`) keep their own filters: add them with
//! `.with_filter(...)` rather than as a global filter, or a global `info` level would hide the
//! journey's `trace` events from the recorder too.
//!
//! # The journey vocabulary
//!
//! The stages, their fields and the words of their outcomes are defined once, in the
//! `clientgo-journey` crate ([`vocabulary`]), which every emitter uses too: its documentation
//! has the table of who emits what. The recorder reads each entry's `stage` as a
//! [`vocabulary::Stage`], in an exhaustive `match`, so a stage added to the vocabulary is a
//! compile error here until the timeline handles it.
//!
//! The wait of a key (from its first add to its get) is computed from the events; the queue
//! keeps no add times of its own.
//!
//! Nothing in the vocabulary carries an object's content, a token or a query string: keys,
//! resourceVersions, paths and status codes only.
//!
//! # OpenTelemetry
//!
//! The `http` spans use OpenTelemetry's HTTP semantic-convention names (numbers as `i64`, as
//! OpenTelemetry's attributes have it), and each `reconcile` span is their parent, so a
//! program that adds `tracing-opentelemetry` exports a trace per reconcile with its requests
//! as child spans (and the queue's events as span events). With opentelemetry 0.33's crates
//! and `tracing-opentelemetry` 0.34 (this library does not depend on them), the layer is:
//!
//! ```text
//! let provider = SdkTracerProvider::builder().with_batch_exporter(exporter).build();
//! let reconciles_and_requests = Targets::new()
//!     .with_target("clientgo_workqueue::journey", Level::TRACE)
//!     .with_target("clientgo_rest::journey", Level::TRACE);
//! tracing_subscriber::registry()
//!     .with(
//!         tracing_opentelemetry::layer()
//!             .with_tracer(provider.tracer("my-controller"))
//!             .with_filter(reconciles_and_requests),
//!     )
//!     .init();
//! // ... run the controller; provider.shutdown() flushes the spans still batched
//! ```
//!
//! where `exporter` is `opentelemetry_otlp::SpanExporter::builder().with_http().build()?`
//! for an OTLP collector (`opentelemetry-otlp` with its `http-proto` feature). The whole of
//! it runs in this crate's test `tests/opentelemetry.rs`, with the SDK's in-memory exporter
//! in place of OTLP: a reconcile on apiserver-sim over a client holding a bearer token, whose
//! exported request spans carry `http.request.method`, `http.response.status_code`,
//! `server.address` and `url.path`, are children of the reconcile's span, and hold neither
//! the token nor the query in any attribute. Other layers (a `fmt` layer) keep their own
//! filters, as above.

#![deny(missing_docs)]

mod chrome;
mod html;
mod layer;
mod live;
mod record;
mod timeline;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tracing::Subscriber;
use tracing_subscriber::filter::Filtered;
use tracing_subscriber::layer::Layer;
use tracing_subscriber::registry::LookupSpan;

/// The journey vocabulary the recorder reads (the `clientgo-journey` crate).
pub use clientgo_journey as vocabulary;
pub use layer::{JourneyFilter, RecorderLayer};
pub use live::{InFlight, QueueState, QueueView, Waiting};
pub use record::{Entry, Fields, Value};
pub use timeline::{Flow, Journey, Step, StepKind, Timeline, WorkerLane};

/// The default capacity: entries kept in the ring buffer.
pub const DEFAULT_CAPACITY: usize = 200_000;

/// The flight recorder. Cloning gives another handle to the same buffer.
#[derive(Clone)]
pub struct Recorder {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder").finish_non_exhaustive()
    }
}

pub(crate) struct Shared {
    origin: tokio::time::Instant,
    seq: AtomicU64,
    state: Mutex<(record::Ring, live::Live)>,
}

impl Shared {
    pub(crate) fn next_id(&self) -> u64 {
        self.seq.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn now(&self) -> Duration {
        tokio::time::Instant::now().saturating_duration_since(self.origin)
    }

    pub(crate) fn record(&self, entry: Entry) {
        let mut state = self.state.lock();
        if entry.duration.is_none() {
            state.1.event(&entry);
        }
        state.0.push(entry);
    }

    pub(crate) fn span_opened(&self, stage: &str, fields: &Fields, _at: Duration) {
        self.state.lock().1.span_opened(stage, fields);
    }
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new(DEFAULT_CAPACITY)
    }
}

impl Recorder {
    /// A recorder keeping the newest `capacity` entries (at least one).
    pub fn new(capacity: usize) -> Self {
        Recorder {
            shared: Arc::new(Shared {
                origin: tokio::time::Instant::now(),
                seq: AtomicU64::new(0),
                state: Mutex::new((record::Ring::new(capacity), live::Live::default())),
            }),
        }
    }

    /// The layer to add to a `tracing_subscriber::registry()`: journey callsites only.
    pub fn layer<S>(&self) -> Filtered<RecorderLayer, JourneyFilter, S>
    where
        S: Subscriber + for<'l> LookupSpan<'l>,
    {
        RecorderLayer {
            shared: self.shared.clone(),
        }
        .with_filter(JourneyFilter)
    }

    /// Everything in the buffer.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_since(Duration::ZERO)
    }

    /// What started in the last `window`.
    pub fn snapshot_last(&self, window: Duration) -> Snapshot {
        self.snapshot_since(self.shared.now().saturating_sub(window))
    }

    fn snapshot_since(&self, since: Duration) -> Snapshot {
        let now = self.shared.now();
        let (entries, dropped) = self.shared.state.lock().0.copy_since(since);
        Snapshot {
            entries,
            dropped,
            now,
        }
    }

    /// The queues as of now.
    pub fn queue_view(&self) -> QueueView {
        let now = self.shared.now();
        self.shared.state.lock().1.view(now)
    }

    /// Empties the buffer (the queue view stays).
    pub fn clear(&self) {
        self.shared.state.lock().0.clear();
    }
}

/// A copy of the buffer, ready to be written out.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The entries, in the order they started.
    pub entries: Vec<Entry>,
    /// Entries the ring dropped (oldest first) before this copy.
    pub dropped: u64,
    /// When the copy was taken, on the recorder's clock.
    pub now: Duration,
}

impl Snapshot {
    /// The journeys, worker lanes and depth series the two views draw.
    pub fn timeline(&self) -> Timeline {
        Timeline::build(&self.entries, self.now)
    }

    /// The Chrome Trace Event Format JSON (Perfetto, `chrome://tracing`).
    pub fn chrome_trace(&self) -> String {
        chrome::write(&self.timeline())
    }

    /// One self-contained HTML page drawing the timeline.
    pub fn html(&self, title: &str) -> String {
        html::write(&self.timeline(), title, self.dropped)
    }
}
