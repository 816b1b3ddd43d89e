//! The broadcaster's queues, retries and shutdown: client-go's `TestLotsOfEvents`,
//! `TestBroadcasterShutdown`, `TestNonRacyShutdown`, and `TestWriteEventError` /
//! `TestCancelEvent` seen through the public API.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use clientgo_apimachinery::{Status, StatusReason};
use clientgo_record::{
    BroadcasterOptions, EventBroadcaster, EventSource, EventType, MAX_QUEUED_EVENTS,
    MAX_TRIES_PER_EVENT, ObjectReference, SinkError,
};
use common::{FakeSink, Op, WAIT, next_write, pod, test_options};

fn object(i: usize) -> ObjectReference {
    // A distinct object per event, so that the spam filter lets all of them through.
    ObjectReference {
        kind: "Pod".into(),
        name: format!("foo-{i}"),
        namespace: "baz".into(),
        uid: "bar".into(),
        api_version: "version".into(),
        ..ObjectReference::default()
    }
}

fn transport_error() -> SinkError {
    SinkError::Transport("fake error".into())
}

#[tokio::test(start_paused = true)]
async fn test_lots_of_events() {
    // Fail each event four times to put some load on the retries.
    let (sink, mut written) = FakeSink::failing(Some(Box::new(|_, _, attempt| {
        (attempt < 5).then(transport_error)
    })));
    let broadcaster = EventBroadcaster::with_options(test_options());
    let sink_watcher = broadcaster.start_recording_to_sink(Arc::clone(&sink));
    let logged = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&logged);
    let log_watcher = broadcaster.start_event_watcher(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));

    for i in 0..MAX_QUEUED_EVENTS {
        // Vary the reason too, so nothing is combined.
        recorder.eventf(
            &object(i),
            EventType::Normal,
            &format!("Reason-{i}"),
            format_args!("{i}"),
        );
    }
    // Nobody ran yet (single-threaded runtime, no await): every queue holds all 1000.
    assert_eq!(broadcaster.dropped_events(), 0);

    for _ in 0..MAX_QUEUED_EVENTS {
        let (op, _) = next_write(&mut written).await;
        assert_eq!(op, Op::Create);
    }
    for i in 0..MAX_QUEUED_EVENTS {
        assert_eq!(sink.attempts(&i.to_string()), 5, "event {i}");
    }
    assert_eq!(logged.load(Ordering::SeqCst), MAX_QUEUED_EVENTS as u32);
    assert_eq!(broadcaster.dropped_events(), 0);
    assert_eq!(
        sink_watcher.dropped_events() + log_watcher.dropped_events(),
        0
    );
    broadcaster.shutdown();
    sink_watcher.join().await;
    log_watcher.join().await;
}

#[tokio::test(start_paused = true)]
async fn a_full_queue_drops_and_counts_without_blocking() {
    let (sink, mut written) = FakeSink::new();
    let broadcaster = EventBroadcaster::with_options(test_options());
    let sink_watcher = broadcaster.start_recording_to_sink(Arc::clone(&sink));
    let log_watcher = broadcaster.start_logging();
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));

    // 1500 events without yielding: the queues take 1000, the rest is dropped, and the
    // recorder returns every time (it never waits for room).
    for i in 0..1500 {
        recorder.eventf(
            &object(i),
            EventType::Normal,
            &format!("Reason-{i}"),
            format_args!("{i}"),
        );
    }
    assert_eq!(broadcaster.dropped_events(), 500);
    assert_eq!(sink_watcher.dropped_events(), 500);
    assert_eq!(log_watcher.dropped_events(), 500);

    for _ in 0..MAX_QUEUED_EVENTS {
        next_write(&mut written).await;
    }
    assert_eq!(sink.attempts("999"), 1);
    assert_eq!(
        sink.attempts("1000"),
        0,
        "dropped events never reach the sink"
    );

    // Room again: nothing more is dropped.
    recorder.event(&object(5000), EventType::Normal, "Again", "again");
    assert_eq!(next_write(&mut written).await.1.message, "again");
    assert_eq!(broadcaster.dropped_events(), 500);
    broadcaster.shutdown();
}

#[tokio::test(start_paused = true)]
async fn a_stalled_sink_never_blocks_the_recorder() {
    let (sink, mut written) = FakeSink::new();
    let broadcaster = EventBroadcaster::with_options(test_options());
    let sink_watcher = broadcaster.start_recording_to_sink(Arc::clone(&sink));
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));

    // Stall the sink inside its first write.
    let gate = sink.gate.lock().await;
    recorder.event(&object(0), EventType::Normal, "First", "first");
    sink.wait_until(|s| s.entered() == 1).await;

    // The sink holds one event and waits; recording 3000 more still returns every time, and
    // the queue keeps 1000 of them.
    for i in 1..=3000 {
        recorder.eventf(
            &object(i),
            EventType::Normal,
            &format!("R{i}"),
            format_args!("{i}"),
        );
    }
    assert_eq!(broadcaster.dropped_events(), 2000);
    assert_eq!(sink_watcher.dropped_events(), 2000);

    drop(gate);
    assert_eq!(next_write(&mut written).await.1.message, "first");
    for i in 1..=MAX_QUEUED_EVENTS {
        assert_eq!(next_write(&mut written).await.1.message, i.to_string());
    }
    broadcaster.shutdown();
    tokio::time::timeout(WAIT, sink_watcher.join())
        .await
        .unwrap();
    assert!(written.try_recv().is_err());
}

#[tokio::test(start_paused = true)]
async fn test_broadcaster_shutdown() {
    let (sink, mut written) = FakeSink::new();
    let broadcaster = EventBroadcaster::with_options(test_options());
    let sink_watcher = broadcaster.start_recording_to_sink(Arc::clone(&sink));
    let log_watcher = broadcaster.start_logging();
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));

    recorder.event(
        &object(1),
        EventType::Normal,
        "Queued",
        "queued before shutdown",
    );
    broadcaster.shutdown();
    assert!(broadcaster.is_shut_down());
    recorder.event(
        &object(2),
        EventType::Normal,
        "Late",
        "recorded after shutdown",
    );

    // Both tasks end (the goroutine-leak check of client-go's test), after handling what was
    // queued.
    tokio::time::timeout(WAIT, sink_watcher.join())
        .await
        .unwrap();
    tokio::time::timeout(WAIT, log_watcher.join())
        .await
        .unwrap();
    assert_eq!(
        next_write(&mut written).await.1.message,
        "queued before shutdown"
    );
    assert!(
        written.try_recv().is_err(),
        "nothing recorded after shutdown is written"
    );
    assert_eq!(
        broadcaster.dropped_events(),
        0,
        "refused, not dropped for a full queue"
    );

    // A watcher started after shutdown ends at once.
    let late = broadcaster.start_event_watcher(|_| {});
    tokio::time::timeout(WAIT, late.join()).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn shutdown_cuts_retries_short() {
    let (sink, _written) = FakeSink::failing(Some(Box::new(|_, _, _| Some(transport_error()))));
    let broadcaster = EventBroadcaster::with_options(test_options());
    let sink_watcher = broadcaster.start_recording_to_sink(Arc::clone(&sink));
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));
    for i in 0..3 {
        recorder.eventf(
            &object(i),
            EventType::Normal,
            &format!("R{i}"),
            format_args!("{i}"),
        );
    }
    // Let the first try happen; the sink then sleeps before retrying.
    sink.wait_until(|s| s.total_attempts() > 0).await;
    broadcaster.shutdown();
    tokio::time::timeout(WAIT, sink_watcher.join())
        .await
        .unwrap();
    // One try each: the sleeping event gives up, the queued ones get their one try.
    assert_eq!(
        (sink.attempts("0"), sink.attempts("1"), sink.attempts("2")),
        (1, 1, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn test_write_event_error_end_to_end() {
    let rejected = || SinkError::from_status(Status::from_reason(StatusReason::Invalid, "bad"));
    type Case = (&'static str, fn() -> SinkError, u32);
    let cases: [Case; 3] = [
        ("transport", transport_error, MAX_TRIES_PER_EVENT),
        ("rejected", rejected, 1),
        (
            "exists",
            || SinkError::from_status(Status::from_reason(StatusReason::AlreadyExists, "x")),
            1,
        ),
    ];
    for (name, error, attempts) in cases {
        let (sink, _written) = FakeSink::failing(Some(Box::new(move |_, _, _| Some(error()))));
        let broadcaster = EventBroadcaster::with_options(test_options());
        let watcher = broadcaster.start_recording_to_sink(Arc::clone(&sink));
        let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));
        let started = tokio::time::Instant::now();
        recorder.event(&object(0), EventType::Warning, "Failed", name);
        // A sentinel on the same queue: once it is tried, the first event is done.
        recorder.event(&object(1), EventType::Normal, "Sentinel", "sentinel");
        sink.wait_until(|s| s.attempts("sentinel") > 0).await;
        assert_eq!(sink.attempts(name), attempts, "{name}");
        if attempts == MAX_TRIES_PER_EVENT {
            // One random sleep below 10 s, then ten of exactly 10 s.
            let elapsed = started.elapsed();
            assert!(elapsed >= Duration::from_secs(100) && elapsed < Duration::from_secs(111));
        }
        broadcaster.shutdown();
        watcher.join().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn test_non_racy_shutdown() {
    let (sink, _written) = FakeSink::new();
    let broadcaster = EventBroadcaster::with_options(BroadcasterOptions {
        sleep_duration: Duration::ZERO,
        ..BroadcasterOptions::default()
    });
    let watcher = broadcaster.start_recording_to_sink(sink);
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));
    let tasks: Vec<_> = (0..100)
        .map(|_| {
            let recorder = recorder.clone();
            tokio::spawn(async move {
                recorder.event(
                    &ObjectReference::default(),
                    EventType::Normal,
                    "Started",
                    "blah",
                );
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    broadcaster.shutdown();
    tokio::time::timeout(Duration::from_secs(30), watcher.join())
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_stopped_watcher_finishes_its_queue_and_takes_no_more() {
    let broadcaster = EventBroadcaster::with_options(test_options());
    let seen = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&seen);
    let watcher = broadcaster.start_event_watcher(move |_| {
        counter.fetch_add(1, Ordering::SeqCst);
    });
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));
    let foo = ObjectReference::from_object(&pod("ns", "foo", "u"));
    recorder.event(&foo, EventType::Normal, "One", "one");
    recorder.event(&foo, EventType::Normal, "Two", "two");
    watcher.stop();
    recorder.event(&foo, EventType::Normal, "Three", "three");
    assert!(!watcher.is_finished());
    tokio::time::timeout(WAIT, watcher.join()).await.unwrap();
    assert_eq!(seen.load(Ordering::SeqCst), 2);
    assert_eq!(broadcaster.dropped_events(), 0);
}
