//! Kubernetes events for controllers: client-go's `tools/record`, in Rust.
//!
//! A controller reports what it did, or failed to do, to an object by recording a core/v1
//! [`Event`] about it; `kubectl describe` shows them. The pieces, as in client-go:
//!
//! * [`EventBroadcaster`]: receives recorded events and hands each to its watchers, each with
//!   a bounded queue of [`MAX_QUEUED_EVENTS`] that never makes the recorder wait (a full queue
//!   drops the event and counts it: [`EventBroadcaster::dropped_events`]).
//! * Watchers: [`EventBroadcaster::start_recording_to_sink`] writes to an [`EventSink`] (the API
//!   server, through the REST client), [`EventBroadcaster::start_logging`] logs with `tracing`,
//!   [`EventBroadcaster::start_event_watcher`] calls a handler.
//! * [`EventRecorder`] (from [`EventBroadcaster::new_recorder`]): `event`, `eventf` and
//!   `annotated_event` about an [`ObjectReference`], on behalf of an [`EventSource`]. The
//!   [`Recorder`] trait lets code take a [`FakeRecorder`] in tests instead.
//! * [`EventCorrelator`]: in front of every sink, combines similar events, counts identical
//!   ones into one event with a growing `count` (written as a patch), and drops spam.
//!
//! | client-go (`tools/record`) | here |
//! |---|---|
//! | `NewBroadcaster(opts...)` | [`EventBroadcaster::new`], [`EventBroadcaster::with_options`] |
//! | `StartRecordingToSink`, `StartStructuredLogging`, `StartEventWatcher`, `Shutdown` | the methods of the same names |
//! | `NewRecorder(scheme, source)` | [`EventBroadcaster::new_recorder`] |
//! | `EventRecorder` interface: `Event`, `Eventf`, `AnnotatedEventf` | [`Recorder`]: `event`, `eventf`, `annotated_event` |
//! | `EventSink` (`Create`, `Patch`; `Update` unused) | [`EventSink`] |
//! | `EventCorrelator`, `CorrelatorOptions`, `EventCorrelateResult` | [`EventCorrelator`], [`CorrelatorOptions`], [`EventCorrelateResult`] |
//! | `FakeRecorder` | [`FakeRecorder`] |
//! | `v1.Event`, `v1.ObjectReference`, `v1.EventSource`; `ref.GetReference` | [`Event`], [`ObjectReference`], [`EventSource`]; [`ObjectReference::from_object`] |
//!
//! ```
//! use clientgo_record::{Event, EventBroadcaster, EventSink, EventSource, EventType, ObjectReference, SinkError};
//!
//! /// A stand-in for the API server.
//! struct PrintSink;
//! impl EventSink for PrintSink {
//!     async fn create(&self, event: &Event) -> Result<Event, SinkError> {
//!         println!("create {}/{}: {}", event.metadata.namespace, event.metadata.name, event.message);
//!         Ok(event.clone())
//!     }
//!     async fn patch(&self, event: &Event, patch: &serde_json::Value) -> Result<Event, SinkError> {
//!         println!("patch {}: {patch}", event.metadata.name);
//!         Ok(event.clone())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
//! let broadcaster = EventBroadcaster::new();
//! let sink = broadcaster.start_recording_to_sink(PrintSink);
//! let log = broadcaster.start_logging();
//! let recorder = broadcaster.new_recorder(EventSource::component("sample-controller"));
//!
//! let foo = ObjectReference {
//!     kind: "Foo".into(),
//!     api_version: "samplecontroller.k8s.io/v1alpha1".into(),
//!     namespace: "default".into(),
//!     name: "example-foo".into(),
//!     ..ObjectReference::default()
//! };
//! recorder.event(&foo, EventType::Normal, "Synced", "Foo synced successfully");
//! recorder.event(&foo, EventType::Normal, "Synced", "Foo synced successfully"); // count: 2, a patch
//!
//! broadcaster.shutdown(); // the queued events are still written
//! sink.join().await;
//! log.join().await;
//! assert_eq!(broadcaster.dropped_events(), 0);
//! # });
//! ```

#![deny(missing_docs)]

mod broadcaster;
mod clock;
pub mod correlator;
mod event;
mod fake;
mod recorder;
mod rest_sink;
mod sink;

pub use broadcaster::{BroadcasterOptions, EventBroadcaster, EventWatcher, MAX_QUEUED_EVENTS};
pub use clock::{Clock, SystemClock, TokioClock};
pub use correlator::{CorrelatorOptions, EventCorrelateResult, EventCorrelator};
pub use event::{
    EVENT_TYPE_NORMAL, EVENT_TYPE_WARNING, Event, EventSeries, EventSource, EventType,
    ObjectReference, UnsupportedEventType,
};
pub use fake::FakeRecorder;
pub use recorder::{EventRecorder, NAMESPACE_DEFAULT, Recorder, generate_event_name};
pub use rest_sink::RestEventSink;
pub use sink::{
    BoxError, DEFAULT_SLEEP_DURATION, EventSink, MAX_TRIES_PER_EVENT, NAMESPACE_TERMINATING_CAUSE,
    SinkError,
};
