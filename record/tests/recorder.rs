//! Recording through a broadcaster to a sink, end to end: client-go's `TestEventf`,
//! `TestEventfNoNamespace` and `TestMultiSinkCache`, plus aggregation and spam filtering seen
//! from the sink. All time is tokio's paused clock.

mod common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::ObjectMeta;
use clientgo_record::{Event, EventBroadcaster, EventSource, EventType, ObjectReference, Recorder};
use common::{FakeSink, Op, next_write, pod, test_options, validate_event};
use tokio::sync::mpsc;

struct Item {
    object: ObjectReference,
    reason: &'static str,
    /// Client-go's table uses two format strings: "some verbose message: %v" and "some other
    /// verbose message: %v".
    other_format: bool,
    expect: Event,
    expect_update: bool,
}

fn expected(
    object: &ObjectReference,
    namespace: &str,
    reason: &str,
    message: &str,
    count: i32,
) -> Event {
    Event {
        metadata: ObjectMeta::namespaced(namespace, object.name.clone()),
        involved_object: object.clone(),
        reason: reason.into(),
        message: message.into(),
        source: EventSource::component("eventTest"),
        reporting_controller: "eventTest".into(),
        count,
        type_: "Normal".into(),
        ..Event::default()
    }
}

/// The table of client-go's `TestEventf` (and `TestMultiSinkCache`).
fn eventf_table() -> Vec<Item> {
    let test_pod = ObjectReference::from_object(&pod("baz", "foo", "bar"));
    let test_ref = test_pod.clone().with_field_path("spec.containers[2]");
    let test_ref2 = ObjectReference::from_object(&pod("baz", "foo", "differentUid"))
        .with_field_path("spec.containers[3]");
    let item =
        |object: &ObjectReference, reason: &'static str, message: &str, count, expect_update| {
            Item {
                object: object.clone(),
                reason,
                other_format: message.contains("other"),
                expect: expected(object, "baz", reason, message, count),
                expect_update,
            }
        };
    vec![
        item(&test_ref, "Started", "some verbose message: 1", 1, false),
        item(
            &test_pod,
            "Killed",
            "some other verbose message: 1",
            1,
            false,
        ),
        item(&test_ref, "Started", "some verbose message: 1", 2, true),
        item(&test_ref2, "Started", "some verbose message: 1", 1, false),
        item(&test_ref, "Started", "some verbose message: 1", 3, true),
        item(&test_ref2, "Stopped", "some verbose message: 1", 1, false),
        item(&test_ref2, "Stopped", "some verbose message: 1", 2, true),
    ]
}

fn record(recorder: &impl Recorder, item: &Item) {
    let (object, reason, arg) = (&item.object, item.reason, 1);
    if item.other_format {
        recorder.eventf(
            object,
            EventType::Normal,
            reason,
            format_args!("some other verbose message: {arg}"),
        );
    } else {
        recorder.eventf(
            object,
            EventType::Normal,
            reason,
            format_args!("some verbose message: {arg}"),
        );
    }
}

async fn play(
    table: &[Item],
    recorder: &impl Recorder,
    written: &mut mpsc::UnboundedReceiver<(Op, Event)>,
    mut seen: Option<&mut mpsc::UnboundedReceiver<Event>>,
) {
    for (index, item) in table.iter().enumerate() {
        tokio::time::advance(Duration::from_secs(1)).await;
        record(recorder, item);
        if let Some(seen) = seen.as_deref_mut() {
            // What a watcher (client-go's StartLogging callback) is handed: the raw event.
            let event = tokio::time::timeout(common::WAIT, seen.recv())
                .await
                .unwrap()
                .unwrap();
            assert_eq!(event.involved_object, item.object, "item {index}");
            assert_eq!(event.count, 1, "item {index}: counting happens per sink");
        }
        let (op, event) = next_write(written).await;
        let want = if item.expect_update {
            Op::Patch
        } else {
            Op::Create
        };
        assert_eq!(op, want, "item {index}");
        validate_event(&event, &item.expect);
    }
}

#[tokio::test(start_paused = true)]
async fn test_eventf() {
    let broadcaster = EventBroadcaster::with_options(test_options());
    let (sink, mut written) = FakeSink::new();
    let sink_watcher = broadcaster.start_recording_to_sink(Arc::clone(&sink));
    let (seen_tx, mut seen) = mpsc::unbounded_channel();
    let watcher = broadcaster.start_event_watcher(move |e| {
        let _ = seen_tx.send(e.clone());
    });
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));

    play(&eventf_table(), &recorder, &mut written, Some(&mut seen)).await;

    assert_eq!(sink.stored(), 4, "three counted events were patches");
    sink_watcher.stop();
    watcher.stop();
    sink_watcher.join().await;
    watcher.join().await;
    broadcaster.shutdown();
}

#[tokio::test(start_paused = true)]
async fn test_eventf_no_namespace() {
    let broadcaster = EventBroadcaster::with_options(test_options());
    let (sink, mut written) = FakeSink::new();
    let _sink_watcher = broadcaster.start_recording_to_sink(sink);
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));

    let cluster_scoped =
        ObjectReference::from_object(&pod("", "foo", "bar")).with_field_path("spec.containers[2]");
    tokio::time::advance(Duration::from_secs(1)).await;
    recorder.eventf(
        &cluster_scoped,
        EventType::Normal,
        "Started",
        format_args!("some verbose message: {}", 1),
    );

    let (op, event) = next_write(&mut written).await;
    assert_eq!(op, Op::Create);
    let mut want = expected(
        &cluster_scoped,
        "default",
        "Started",
        "some verbose message: 1",
        1,
    );
    want.involved_object.namespace = String::new();
    validate_event(&event, &want);
    assert_eq!(event.metadata.namespace, "default");
    broadcaster.shutdown();
}

#[tokio::test(start_paused = true)]
async fn test_multi_sink_cache() {
    let broadcaster = EventBroadcaster::with_options(test_options());
    let recorder = broadcaster.new_recorder(EventSource::component("eventTest"));
    let table = eventf_table();

    let (sink, mut written) = FakeSink::new();
    let sink_watcher = broadcaster.start_recording_to_sink(sink);
    play(&table, &recorder, &mut written, None).await;
    // Stop before recording more, so the first sink sees none of what follows.
    sink_watcher.stop();
    sink_watcher.join().await;

    // Another sink starts with a clean correlator: the same counts again.
    let (sink2, mut written2) = FakeSink::new();
    let sink_watcher2 = broadcaster.start_recording_to_sink(Arc::clone(&sink2));
    play(&table, &recorder, &mut written2, None).await;
    assert!(
        written.try_recv().is_err(),
        "the stopped sink wrote nothing more"
    );
    assert_eq!(sink2.stored(), 4);
    sink_watcher2.stop();
    sink_watcher2.join().await;
}

#[tokio::test(start_paused = true)]
async fn events_carry_source_annotations_and_reporting_fields() {
    let broadcaster = EventBroadcaster::with_options(test_options());
    let (sink, mut written) = FakeSink::new();
    let _w = broadcaster.start_recording_to_sink(sink);
    let recorder = broadcaster.new_recorder(EventSource {
        component: "sample-controller".into(),
        host: "node-7".into(),
    });
    let foo = ObjectReference::from_object(&pod("prod", "Web_1", "u1"));
    let annotations = BTreeMap::from([("note".to_owned(), "x".to_owned())]);
    recorder.annotated_event(
        &foo,
        annotations.clone(),
        EventType::Warning,
        "Failed",
        "boom",
    );

    let (_, event) = next_write(&mut written).await;
    assert_eq!(event.reporting_controller, "sample-controller");
    assert_eq!(event.reporting_instance, "node-7");
    assert_eq!(event.source.host, "node-7");
    assert_eq!(event.type_, "Warning");
    assert_eq!(event.metadata.annotations, annotations);
    assert!(
        uuid_like(&event.metadata.name),
        "\"Web_1.<hex>\" is not a valid name, so a UUID is used: {}",
        event.metadata.name
    );
    broadcaster.shutdown();
}

fn uuid_like(name: &str) -> bool {
    name.len() == 36 && name.chars().filter(|c| *c == '-').count() == 4
}

#[tokio::test(start_paused = true)]
async fn similar_events_are_combined_at_the_sink() {
    let broadcaster = EventBroadcaster::with_options(test_options());
    let (sink, mut written) = FakeSink::new();
    let _w = broadcaster.start_recording_to_sink(sink);
    let recorder = broadcaster.new_recorder(EventSource::component("ctl"));
    let foo = ObjectReference::from_object(&pod("ns", "foo", "u"));

    for i in 0..11 {
        tokio::time::advance(Duration::from_secs(5)).await;
        recorder.eventf(
            &foo,
            EventType::Warning,
            "SyncFailed",
            format_args!("attempt {i} failed"),
        );
    }
    for i in 0..9 {
        let (op, event) = next_write(&mut written).await;
        assert_eq!(
            (op, event.message),
            (Op::Create, format!("attempt {i} failed"))
        );
    }
    let (op, combined) = next_write(&mut written).await;
    assert_eq!(op, Op::Create);
    assert_eq!(
        combined.message,
        "(combined from similar events): attempt 9 failed"
    );
    assert_eq!(combined.count, 1);
    let (op, again) = next_write(&mut written).await;
    assert_eq!(op, Op::Patch);
    assert_eq!(again.metadata.name, combined.metadata.name);
    assert_eq!(
        again.message,
        "(combined from similar events): attempt 10 failed"
    );
    assert_eq!(again.count, 2);
    broadcaster.shutdown();
}

#[tokio::test(start_paused = true)]
async fn spam_is_dropped_before_the_sink() {
    let broadcaster = EventBroadcaster::with_options(test_options());
    let (sink, mut written) = FakeSink::new();
    let _w = broadcaster.start_recording_to_sink(Arc::clone(&sink));
    let recorder = broadcaster.new_recorder(EventSource::component("ctl"));
    let foo = ObjectReference::from_object(&pod("ns", "foo", "u"));

    // Distinct reasons: nothing is counted or combined, only rate limited.
    for i in 0..30 {
        // Event names are `<object>.<hex nanos>`: let the clock move so they differ.
        tokio::time::advance(Duration::from_millis(1)).await;
        recorder.eventf(
            &foo,
            EventType::Normal,
            &format!("Reason{i}"),
            format_args!("m{i}"),
        );
    }
    // Events are handled in order, so once this one is written the 30 have been handled.
    let sentinel = ObjectReference::from_object(&pod("ns", "other", "u2"));
    recorder.event(&sentinel, EventType::Normal, "Done", "sentinel");
    let mut messages = Vec::new();
    loop {
        let (_, event) = next_write(&mut written).await;
        if event.message == "sentinel" {
            break;
        }
        messages.push(event.message);
    }
    assert_eq!(messages.len(), 25, "a burst of 25 per object");
    assert_eq!(messages.last().map(String::as_str), Some("m24"));

    // One token comes back every 300 s.
    tokio::time::advance(Duration::from_secs(300)).await;
    recorder.event(&foo, EventType::Normal, "Later", "after the refill");
    let (_, event) = next_write(&mut written).await;
    assert_eq!(event.message, "after the refill");
    broadcaster.shutdown();
}

#[tokio::test(start_paused = true)]
async fn an_expired_event_is_created_again() {
    let broadcaster = EventBroadcaster::with_options(test_options());
    let (sink, mut written) = FakeSink::new();
    let _w = broadcaster.start_recording_to_sink(Arc::clone(&sink));
    let recorder = broadcaster.new_recorder(EventSource::component("ctl"));
    let foo = ObjectReference::from_object(&pod("ns", "foo", "u"));

    recorder.event(&foo, EventType::Normal, "Synced", "synced");
    let (op, first) = next_write(&mut written).await;
    assert_eq!(op, Op::Create);
    sink.expire_all();

    tokio::time::advance(Duration::from_secs(60)).await;
    recorder.event(&foo, EventType::Normal, "Synced", "synced");
    let (op, second) = next_write(&mut written).await;
    assert_eq!(
        op,
        Op::Create,
        "the patch found nothing, so the event was created again"
    );
    assert_eq!(second.metadata.name, first.metadata.name);
    assert_eq!(second.count, 2);
    assert_eq!(sink.attempts("synced"), 3, "create, patch (404), create");
    broadcaster.shutdown();
}
