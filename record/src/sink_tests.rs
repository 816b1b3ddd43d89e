//! client-go's `TestWriteEventError`, `TestUpdateExpiredEvent` and `TestCancelEvent`, which
//! drive `recordToSink` directly, ported to [`SinkWriter::record_to_sink`]; plus the timing of
//! the retries, under tokio's paused clock.

use std::sync::atomic::{AtomicU32, Ordering};

use clientgo_apimachinery::{ObjectMeta, StatusCause, StatusDetails};
use parking_lot::Mutex;
use tokio::time::Instant;

use super::*;

/// The answer to the n-th create of an event.
type OnCreate = Box<dyn Fn(u32, &Event) -> Result<Event, SinkError> + Send + Sync>;
/// The answer to a patch.
type OnPatch = Box<dyn Fn(&Event) -> Result<Event, SinkError> + Send + Sync>;

/// A sink whose answers a test scripts, and which remembers every call.
#[derive(Default)]
struct ScriptedSink {
    on_create: Option<OnCreate>,
    on_patch: Option<OnPatch>,
    creates: AtomicU32,
    patches: AtomicU32,
    calls: Mutex<Vec<(&'static str, Instant, Event)>>,
}

impl EventSink for ScriptedSink {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        let attempt = self.creates.fetch_add(1, Ordering::SeqCst) + 1;
        self.calls
            .lock()
            .push(("create", Instant::now(), event.clone()));
        match &self.on_create {
            Some(f) => f(attempt, event),
            None => Ok(event.clone()),
        }
    }

    async fn patch(&self, event: &Event, _patch: &Value) -> Result<Event, SinkError> {
        self.patches.fetch_add(1, Ordering::SeqCst);
        self.calls
            .lock()
            .push(("patch", Instant::now(), event.clone()));
        match &self.on_patch {
            Some(f) => f(event),
            None => Ok(event.clone()),
        }
    }
}

fn writer(seed: u64) -> SinkWriter {
    SinkWriter {
        sleep_duration: DEFAULT_SLEEP_DURATION,
        cancel: CancellationToken::new(),
        jitter: Jitter::new(seed),
    }
}

fn status(code: i32, reason: StatusReason) -> Box<Status> {
    Box::new(Status::failure(code, reason, "test"))
}

fn transport() -> SinkError {
    SinkError::Transport("connection refused".into())
}

type ErrorFactory = fn() -> SinkError;

#[tokio::test(start_paused = true)]
async fn test_write_event_error() {
    let cases: [(&str, u32, u32, ErrorFactory); 7] = [
        ("rejected gives up", 1000, 1, || {
            SinkError::Rejected(status(422, StatusReason::Invalid))
        }),
        ("already exists gives up", 1000, 1, || {
            SinkError::AlreadyExists(status(409, StatusReason::AlreadyExists))
        }),
        ("not found on create gives up", 1000, 1, || {
            SinkError::NotFound(status(404, StatusReason::NotFound))
        }),
        ("namespace terminating gives up", 1000, 1, || {
            let mut s = status(403, StatusReason::Forbidden);
            s.details = Some(StatusDetails {
                causes: vec![StatusCause {
                    reason: NAMESPACE_TERMINATING_CAUSE.into(),
                    ..StatusCause::default()
                }],
                ..StatusDetails::default()
            });
            SinkError::Rejected(s)
        }),
        ("transport retries 12 times", 1000, 12, transport),
        ("succeeds eventually", 2, 2, transport),
        ("succeeds at the last try", 12, 12, transport),
    ];
    for (name, times_to_send_error, attempts_wanted, err) in cases {
        let sink = ScriptedSink {
            on_create: Some(Box::new(move |attempt, event| {
                if attempt < times_to_send_error {
                    Err(err())
                } else {
                    Ok(event.clone())
                }
            })),
            ..ScriptedSink::default()
        };
        let mut correlator = EventCorrelator::new();
        writer(7)
            .record_to_sink(&sink, Event::default(), &mut correlator)
            .await;
        assert_eq!(
            sink.creates.load(Ordering::SeqCst),
            attempts_wanted,
            "{name}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn retries_sleep_a_random_fraction_then_the_full_duration() {
    let sink = ScriptedSink {
        on_create: Some(Box::new(|_, _| Err(transport()))),
        ..ScriptedSink::default()
    };
    let mut correlator = EventCorrelator::new();
    writer(42)
        .record_to_sink(&sink, Event::default(), &mut correlator)
        .await;
    let times: Vec<Instant> = sink.calls.lock().iter().map(|(_, t, _)| *t).collect();
    assert_eq!(times.len(), 12);
    let first = times[1] - times[0];
    let expected_first = DEFAULT_SLEEP_DURATION.mul_f64(Jitter::new(42).next_fraction());
    // tokio's timers fire on whole milliseconds.
    assert!(
        first >= expected_first && first <= expected_first + Duration::from_millis(1),
        "the seed makes the first sleep reproducible: {first:?} vs {expected_first:?}"
    );
    assert!(first < DEFAULT_SLEEP_DURATION);
    for pair in times[1..].windows(2) {
        assert_eq!(pair[1] - pair[0], DEFAULT_SLEEP_DURATION);
    }
}

#[test]
fn jitter_fractions_are_in_the_unit_interval_and_spread() {
    let mut jitter = Jitter::new(0);
    let fractions: Vec<f64> = (0..10_000).map(|_| jitter.next_fraction()).collect();
    assert!(fractions.iter().all(|f| (0.0..1.0).contains(f)));
    let mean = fractions.iter().sum::<f64>() / fractions.len() as f64;
    assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
}

#[tokio::test(start_paused = true)]
async fn test_update_expired_event() {
    let sink = ScriptedSink {
        on_patch: Some(Box::new(|_| {
            Err(SinkError::NotFound(status(404, StatusReason::NotFound)))
        })),
        ..ScriptedSink::default()
    };
    let event = Event {
        metadata: ObjectMeta {
            resource_version: "updated-resource-version".into(),
            ..ObjectMeta::default()
        },
        count: 2,
        ..Event::default()
    };
    let mut correlator = EventCorrelator::new();
    writer(1)
        .record_to_sink(&sink, event, &mut correlator)
        .await;
    let calls = sink.calls.lock();
    let kinds: Vec<&str> = calls.iter().map(|(kind, _, _)| *kind).collect();
    assert_eq!(
        kinds,
        ["patch", "create"],
        "a patch answered 404 becomes a create"
    );
    assert_eq!(
        calls[0].2.metadata.resource_version,
        "updated-resource-version"
    );
    assert_eq!(
        calls[1].2.metadata.resource_version, "",
        "created without a resourceVersion"
    );
}

#[tokio::test(start_paused = true)]
async fn test_cancel_event() {
    let sink = ScriptedSink {
        on_create: Some(Box::new(|_, _| Err(transport()))),
        ..ScriptedSink::default()
    };
    let mut writer = writer(3);
    writer.sleep_duration = Duration::from_secs(1);
    // Cancelled before the event is even handed over.
    writer.cancel.cancel();
    let mut correlator = EventCorrelator::new();
    writer
        .record_to_sink(&sink, Event::default(), &mut correlator)
        .await;
    assert_eq!(
        sink.creates.load(Ordering::SeqCst),
        1,
        "one try, then give up at once"
    );
}

#[tokio::test(start_paused = true)]
async fn repeated_events_are_patched_with_the_count_patch() {
    let sink = ScriptedSink::default();
    let mut correlator = EventCorrelator::new();
    let mut w = writer(5);
    let event = Event {
        metadata: ObjectMeta::namespaced("ns", "pod.1"),
        message: "hello".into(),
        count: 1,
        ..Event::default()
    };
    w.record_to_sink(&sink, event.clone(), &mut correlator)
        .await;
    w.record_to_sink(&sink, event.clone(), &mut correlator)
        .await;
    let calls = sink.calls.lock();
    assert_eq!(calls.len(), 2);
    assert_eq!((calls[0].0, calls[1].0), ("create", "patch"));
    assert_eq!(calls[1].2.count, 2);
    assert_eq!(calls[1].2.metadata.name, "pod.1");
}

#[test]
fn sink_errors_from_statuses() {
    let not_found = SinkError::from_status(*status(404, StatusReason::NotFound));
    assert!(matches!(not_found, SinkError::NotFound(_)));
    let exists = SinkError::from_status(*status(409, StatusReason::AlreadyExists));
    assert!(matches!(exists, SinkError::AlreadyExists(_)));
    let conflict = SinkError::from_status(*status(409, StatusReason::Conflict));
    assert!(matches!(conflict, SinkError::Rejected(_)));
    assert_eq!(conflict.status().map(|s| s.code), Some(409));
    assert_eq!(conflict.to_string(), "test (Conflict, code 409)");
    assert!(transport().status().is_none());
    assert_eq!(transport().to_string(), "connection refused");
}
