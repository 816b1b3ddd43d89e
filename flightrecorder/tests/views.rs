//! The recorder on a scripted stream of journey events (the vocabulary the library crates
//! emit), on tokio's paused clock: the journey it rebuilds, the Chrome trace's required
//! fields, the HTML page's self-containment, the queue view and the ring's bound.

use std::time::Duration;

use clientgo_flightrecorder::vocabulary::target;
use clientgo_flightrecorder::{Recorder, StepKind};
use serde_json::Value;
use tracing::{Level, span, trace};
use tracing_subscriber::layer::SubscriberExt;

const INFORMER: &str = target::INFORMER;
const QUEUE: &str = target::WORKQUEUE;
const REST: &str = target::REST;

/// A watch event, its handler's span and the add it makes.
fn watch_and_add(event_type: &str, rv: &str, outcome: &str, depth: u64) {
    trace!(target: INFORMER, stage = "watch", resource = "Foo", r#type = event_type,
        key = "default/web", rv);
    let handler = span!(target: INFORMER, Level::TRACE, "handler", stage = "handler",
        resource = "Foo", handler = "0", r#type = "update", key = "default/web", rv);
    let _in = handler.enter();
    trace!(target: QUEUE, stage = "add", queue = "foos", key = "default/web", outcome, depth);
}

/// A reconcile on worker 0 with one request, ended by `outcome`.
fn reconcile(write: Option<&str>, outcome: &str) {
    trace!(target: QUEUE, stage = "get", queue = "foos", key = "default/web", depth = 0u64);
    let span = span!(target: QUEUE, Level::TRACE, "reconcile", stage = "reconcile",
        queue = "foos", key = "default/web", worker = 0u64, outcome = tracing::field::Empty);
    {
        let _in = span.enter();
        if let Some(method) = write {
            let http = span!(target: REST, Level::TRACE, "http", stage = "http",
                "http.request.method" = method, "url.path" = "/apis/apps/v1/namespaces/default/deployments",
                "server.address" = "127.0.0.1", "k8s.resource" = "deployments",
                "k8s.namespace" = "default", "k8s.name" = "web",
                "http.response.status_code" = tracing::field::Empty);
            http.record("http.response.status_code", 201u64);
        }
    }
    span.record("outcome", outcome);
    drop(span);
    let done = if outcome == "ok" { "forget" } else { "retry" };
    trace!(target: QUEUE, stage = "done", queue = "foos", key = "default/web", outcome = done);
}

async fn scripted(recorder: &Recorder) {
    let subscriber = tracing_subscriber::registry().with(recorder.layer());
    let _default = tracing::subscriber::set_default(subscriber);
    // Unrelated events never reach the recorder.
    tracing::info!(key = "default/web", "not a journey event");
    watch_and_add("ADDED", "10", "new", 1);
    tokio::time::advance(Duration::from_millis(2)).await;
    watch_and_add("MODIFIED", "11", "coalesced", 1);
    watch_and_add("MODIFIED", "12", "coalesced", 1);
    tokio::time::advance(Duration::from_millis(3)).await;
    reconcile(Some("POST"), "error");
    trace!(target: QUEUE, stage = "backoff", queue = "foos", key = "default/web",
        delay_us = 5_000u64, failures = 1u64);
    tokio::time::advance(Duration::from_millis(5)).await;
    trace!(target: QUEUE, stage = "fired", queue = "foos", count = 1u64, depth = 1u64);
    trace!(target: QUEUE, stage = "add", queue = "foos", key = "default/web",
        outcome = "new", depth = 1u64);
    reconcile(Some("POST"), "ok");
    watch_and_add("MODIFIED", "13", "new", 1);
    tokio::time::advance(Duration::from_millis(1)).await;
    reconcile(None, "ok");
}

#[tokio::test(start_paused = true)]
async fn the_journey_links_watch_events_to_the_reconcile_they_caused() {
    let recorder = Recorder::new(1000);
    scripted(&recorder).await;
    let snapshot = recorder.snapshot();
    assert!(snapshot.entries.iter().all(|e| {
        !e.fields
            .iter()
            .any(|(_, v)| v.as_str() == Some("not a journey event"))
    }));
    let timeline = snapshot.timeline();
    let journey = timeline.journey("default/web").expect("a journey");
    let names: Vec<&str> = journey.steps.iter().map(|s| s.kind.name()).collect();
    assert_eq!(
        names,
        [
            "watch",
            "add",
            "watch",
            "add",
            "watch",
            "add", // three changes ...
            "get",
            "reconcile",
            "request",
            "done",
            "backoff", // ... one reconcile, failed
            "add",
            "get",
            "reconcile",
            "request",
            "done", // the retry
            "watch",
            "add",
            "get",
            "reconcile",
            "done", // the last change, no write
        ]
    );
    assert_eq!(journey.coalesced, 2);
    assert_eq!(journey.backoffs, 1);
    // Three watch events flow into the first reconcile, the last one into the third.
    let flows: Vec<_> = timeline.flows.iter().map(|f| (f.from, f.to)).collect();
    assert_eq!(flows.len(), 4, "{flows:?}");
    assert_eq!(flows[0].1, flows[2].1);
    match &journey.steps[6].kind {
        StepKind::Get { waited_us, .. } => assert_eq!(*waited_us, 5_000),
        other => panic!("not a get: {other:?}"),
    }
    assert_eq!(timeline.workers.len(), 1);
    assert_eq!(timeline.workers[0].slices.len(), 3);
    assert_eq!(timeline.workers[0].slices[0].outcome, "error");
    assert_eq!(timeline.workers[0].slices[1].requests.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_chrome_trace_has_the_required_fields() {
    let recorder = Recorder::new(1000);
    scripted(&recorder).await;
    let trace: Value = serde_json::from_str(&recorder.snapshot().chrome_trace()).unwrap();
    let events = trace["traceEvents"].as_array().expect("traceEvents");
    assert!(!events.is_empty());
    for event in events {
        let ph = event["ph"]
            .as_str()
            .unwrap_or_else(|| panic!("no ph: {event}"));
        assert!(event["name"].is_string(), "no name: {event}");
        assert!(
            event["pid"].is_u64() && event["tid"].is_u64(),
            "no pid/tid: {event}"
        );
        assert!(event["ts"].is_number(), "no ts: {event}");
        match ph {
            "X" => assert!(event["dur"].as_f64().is_some_and(|d| d >= 0.0), "{event}"),
            "s" | "f" => {
                assert!(event["id"].is_u64() && event["cat"].is_string(), "{event}");
                if ph == "f" {
                    assert_eq!(event["bp"], "e");
                }
            }
            "C" => assert!(
                event["args"]
                    .as_object()
                    .is_some_and(|a| a.values().all(Value::is_number)),
                "{event}"
            ),
            "M" => assert!(event["args"].is_object(), "{event}"),
            "i" => assert!(matches!(event["s"].as_str(), Some("t" | "p" | "g"))),
            other => panic!("unexpected phase {other}: {event}"),
        }
    }
    // Every flow has its start and its end.
    let starts = events.iter().filter(|e| e["ph"] == "s").count();
    let ends = events.iter().filter(|e| e["ph"] == "f").count();
    assert_eq!((starts, ends), (4, 4));
    let names: Vec<&str> = events
        .iter()
        .filter(|e| e["name"] == "thread_name")
        .filter_map(|e| e["args"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"worker 0") && names.contains(&"foos: default/web"),
        "{names:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn the_html_page_is_self_contained() {
    let recorder = Recorder::new(1000);
    scripted(&recorder).await;
    let html = recorder.snapshot().html("demo <run>");
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.contains("<title>demo &lt;run&gt;</title>"));
    for external in [
        "src=",
        "href=",
        "@import",
        "url(http",
        "<link",
        "fetch(",
        "XMLHttpRequest",
    ] {
        assert!(!html.contains(external), "the page references {external}");
    }
    // The only URL is SVG's namespace name, which is never fetched.
    let urls: Vec<&str> = html
        .match_indices("://")
        .map(|(i, _)| &html[i.saturating_sub(5)..i + 23])
        .collect();
    assert!(
        urls.iter()
            .all(|u| u.contains("http://www.w3.org/2000/svg")),
        "{urls:?}"
    );
    assert!(html.contains("\"coalesced\":2"));
}

#[test]
fn a_key_cannot_close_the_data_element() {
    let recorder = Recorder::new(10);
    let subscriber = tracing_subscriber::registry().with(recorder.layer());
    tracing::subscriber::with_default(subscriber, || {
        trace!(target: QUEUE, stage = "add", queue = "q", key = "</script><script>alert(1)</script>",
            outcome = "new", depth = 1u64);
    });
    let html = recorder.snapshot().html("t");
    assert_eq!(
        html.matches("</script>").count(),
        2,
        "only the page's own two elements end"
    );
}

#[tokio::test(start_paused = true)]
async fn the_queue_view_shows_keys_in_flight_and_waiting() {
    let recorder = Recorder::new(1000);
    let subscriber = tracing_subscriber::registry().with(recorder.layer());
    let _default = tracing::subscriber::set_default(subscriber);
    trace!(target: QUEUE, stage = "add", queue = "foos", key = "a", outcome = "new", depth = 1u64);
    trace!(target: QUEUE, stage = "add", queue = "foos", key = "b", outcome = "new", depth = 2u64);
    trace!(target: QUEUE, stage = "get", queue = "foos", key = "a", depth = 1u64);
    let held = span!(target: QUEUE, Level::TRACE, "reconcile", stage = "reconcile", queue = "foos", key = "a", worker = 3u64);
    tokio::time::advance(Duration::from_millis(40)).await;
    trace!(target: QUEUE, stage = "add", queue = "foos", key = "a", outcome = "deferred", depth = 1u64);
    let view = recorder.queue_view();
    let foos = &view.queues[0];
    assert_eq!(foos.depth, 1);
    assert_eq!(foos.in_flight.len(), 1);
    assert_eq!(
        (
            foos.in_flight[0].key.as_str(),
            foos.in_flight[0].worker.as_deref()
        ),
        ("a", Some("3"))
    );
    assert_eq!(foos.in_flight[0].age_ms, 40);
    assert!(foos.in_flight[0].added_again);
    assert_eq!(foos.waiting.len(), 1);
    drop(held);
    // The failed hold of b: back after 100 ms, its first failure.
    trace!(target: QUEUE, stage = "get", queue = "foos", key = "b", depth = 0u64);
    trace!(target: QUEUE, stage = "backoff", queue = "foos", key = "b", delay_us = 100_000u64, failures = 1u64);
    trace!(target: QUEUE, stage = "done", queue = "foos", key = "b", outcome = "retry");
    tokio::time::advance(Duration::from_millis(30)).await;
    let view = recorder.queue_view();
    let b = view.queues[0]
        .waiting
        .iter()
        .find(|w| w.key == "b")
        .expect("b waits");
    assert_eq!((b.ready_in_ms, b.failures), (70, 1));
}

#[test]
fn the_ring_keeps_the_newest_entries() {
    let recorder = Recorder::new(5);
    let subscriber = tracing_subscriber::registry().with(recorder.layer());
    tracing::subscriber::with_default(subscriber, || {
        for i in 0..20u64 {
            trace!(target: QUEUE, stage = "get", queue = "q", key = "k", depth = i);
        }
    });
    let snapshot = recorder.snapshot();
    assert_eq!(snapshot.entries.len(), 5);
    assert_eq!(snapshot.dropped, 15);
    assert_eq!(snapshot.entries[0].fields.u64("depth"), Some(15));
}

#[tokio::test(start_paused = true)]
async fn a_listed_object_starts_a_journey_as_a_watch_event_would() {
    let recorder = Recorder::new(1000);
    {
        let subscriber = tracing_subscriber::registry().with(recorder.layer());
        let _default = tracing::subscriber::set_default(subscriber);
        // A relist by LIST: two objects replace the cache; the handler enqueues only one.
        for key in ["default/web", "default/unwatched"] {
            trace!(target: INFORMER, stage = "listed", resource = "Foo", via = "LIST", key,
                rv = "20");
        }
        let handler = span!(target: INFORMER, Level::TRACE, "handler", stage = "handler",
            resource = "Foo", handler = "0", r#type = "update", key = "default/web", rv = "20");
        handler.in_scope(|| {
            trace!(target: QUEUE, stage = "add", queue = "foos", key = "default/web",
                outcome = "new", depth = 1u64);
        });
        tokio::time::advance(Duration::from_millis(1)).await;
        reconcile(None, "ok");
    }
    let snapshot = recorder.snapshot();
    let timeline = snapshot.timeline();
    let web = timeline.journey("default/web").unwrap();
    let names: Vec<&str> = web.steps.iter().map(|s| s.kind.name()).collect();
    assert_eq!(names, ["listed", "add", "get", "reconcile", "done"]);
    assert_eq!(
        web.steps[0].kind,
        StepKind::Listed {
            resource: "Foo".into(),
            via: "LIST".into(),
            object_key: "default/web".into(),
            rv: "20".into(),
        }
    );
    assert_eq!(
        web.steps[0].kind.label(),
        "listed (LIST) Foo default/web rv=20"
    );
    assert_eq!(timeline.flows.len(), 1);
    assert_eq!(timeline.flows[0].from_entry, web.steps[0].entry);
    // The object that enqueued nothing is kept aside, as an unlinked watch event is.
    assert_eq!(timeline.other_watches.len(), 1);
    assert!(matches!(
        &timeline.other_watches[0].kind,
        StepKind::Listed { object_key, .. } if object_key == "default/unwatched"
    ));
    let trace: Value = serde_json::from_str(&snapshot.chrome_trace()).unwrap();
    let listed = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["cat"] == "listed")
        .count();
    assert_eq!(listed, 2);
    assert!(snapshot.html("relist").contains(r#""kind":"listed""#));
}
