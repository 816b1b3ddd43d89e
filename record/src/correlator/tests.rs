//! client-go's `events_cache_test.go`, ported: `TestEventCorrelator`, `TestEventSpamFilter`,
//! `TestEventAggregatorByReasonFunc`, `TestEventAggregatorByReasonMessageFunc`.
//!
//! Go's tests use a clock that moves forward by a fixed interval on every reading; here the
//! test advances tokio's paused clock by the interval before each event, and timestamps come
//! from a [`TokioClock`] that follows it.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::Time;

use super::*;
use crate::clock::TokioClock;
use crate::event::{EventSource, ObjectReference};

fn make_object_reference(kind: &str, name: &str, namespace: &str) -> ObjectReference {
    ObjectReference {
        kind: kind.into(),
        name: name.into(),
        namespace: namespace.into(),
        uid: "C934D34AFB20242".into(),
        api_version: "version".into(),
        field_path: "spec.containers{mycontainer}".into(),
        ..ObjectReference::default()
    }
}

fn make_event(reason: &str, message: &str, involved_object: ObjectReference) -> Event {
    let now = Time::now();
    Event {
        reason: reason.into(),
        message: message.into(),
        involved_object,
        source: EventSource {
            component: "kubelet".into(),
            host: "kublet.node1".into(),
        },
        count: 1,
        first_timestamp: Some(now),
        last_timestamp: Some(now),
        type_: "Normal".into(),
        ..Event::default()
    }
}

fn make_events(n: usize, template: &Event) -> Vec<Event> {
    vec![template.clone(); n]
}

fn make_unique_events(n: usize) -> Vec<Event> {
    (0..n)
        .map(|i| {
            let object = make_object_reference("Pod", &format!("pod-{i}"), &format!("ns-{i}"));
            make_event(&format!("reason-{i}"), &format!("message-{i}"), object)
        })
        .collect()
}

fn make_similar_events(n: usize, template: &Event, message_prefix: &str) -> Vec<Event> {
    (0..n)
        .map(|i| Event {
            message: format!("{message_prefix}-{i}-{}", template.message),
            ..template.clone()
        })
        .collect()
}

fn with_count(event: &Event, count: i32) -> Event {
    Event {
        count,
        ..event.clone()
    }
}

/// client-go's `validateEvent`: timestamps set, equal exactly when the count is 1, name
/// prefixed by the expected one, and everything else equal (reporting controller aside).
pub(crate) fn validate_event(scenario: &str, actual: &Event, expected: &Event) {
    let (first, last) = (actual.first_timestamp, actual.last_timestamp);
    assert!(
        first.is_some() && last.is_some(),
        "{scenario}: timestamps not set: {actual:?}"
    );
    if expected.count > 1 {
        assert_ne!(
            first, last,
            "{scenario}: a counted event must have moved lastTimestamp"
        );
    } else {
        assert_eq!(
            first, last,
            "{scenario}: a single occurrence has equal timestamps"
        );
    }
    assert!(
        actual.metadata.name.starts_with(&expected.metadata.name),
        "{scenario}: name {:?} does not start with {:?}",
        actual.metadata.name,
        expected.metadata.name
    );
    let normalized = Event {
        first_timestamp: expected.first_timestamp,
        last_timestamp: expected.last_timestamp,
        reporting_controller: expected.reporting_controller.clone(),
        metadata: clientgo_apimachinery::ObjectMeta {
            name: expected.metadata.name.clone(),
            ..actual.metadata.clone()
        },
        ..actual.clone()
    };
    assert_eq!(&normalized, expected, "{scenario}");
}

struct Scenario {
    name: &'static str,
    previous_events: Vec<Event>,
    new_event: Event,
    expected: Option<Event>, // None: expect a skip
    interval: Duration,
}

fn correlator_with_clock() -> (EventCorrelator, TokioClock) {
    let clock = TokioClock::new();
    let correlator = EventCorrelator::with_options(CorrelatorOptions {
        clock: Arc::new(clock),
        ..CorrelatorOptions::default()
    });
    (correlator, clock)
}

async fn run(scenario: Scenario) {
    let (mut correlator, clock) = correlator_with_clock();
    for mut event in scenario.previous_events {
        tokio::time::advance(scenario.interval).await;
        event.first_timestamp = Some(clock.now());
        event.last_timestamp = event.first_timestamp;
        let result = correlator.event_correlate(event);
        // Skipped events are not written, so there is no server state to record.
        if !result.skip {
            correlator.update_state(&result.event);
        }
    }
    tokio::time::advance(scenario.interval).await;
    let mut event = scenario.new_event;
    event.first_timestamp = Some(clock.now());
    event.last_timestamp = event.first_timestamp;
    let result = correlator.event_correlate(event);
    match &scenario.expected {
        None => assert!(result.skip, "{}: expected a skip", scenario.name),
        Some(expected) => {
            assert!(!result.skip, "{}: unexpected skip", scenario.name);
            validate_event(scenario.name, &result.event, expected);
            assert_eq!(
                result.patch.is_some(),
                expected.count > 1,
                "{}",
                scenario.name
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn test_event_correlator() {
    let my_pod = || make_object_reference("Pod", "my-pod", "my-ns");
    let first_event = make_event("first", "i am first", my_pod());
    let duplicate_event = make_event("duplicate", "me again", my_pod());
    let unique_event = make_event("unique", "snowflake", my_pod());
    let mut similar_event = make_event("similar", "similar message", my_pod());
    similar_event.involved_object.field_path = "spec.containers{container1}".into();
    let aggregate_event = make_event(
        &similar_event.reason,
        &event_aggregator_by_reason_message_func(&similar_event),
        similar_event.involved_object.clone(),
    );
    let mut similar_but_different_container_event = similar_event.clone();
    similar_but_different_container_event
        .involved_object
        .field_path = "spec.containers{container2}".into();
    let max = DEFAULT_AGGREGATE_MAX_EVENTS;
    let secs = Duration::from_secs;

    let scenarios = vec![
        Scenario {
            name: "create-a-single-event",
            previous_events: vec![],
            new_event: first_event.clone(),
            expected: Some(with_count(&first_event, 1)),
            interval: secs(5),
        },
        Scenario {
            name: "the-same-event-should-just-count",
            previous_events: make_events(1, &duplicate_event),
            new_event: duplicate_event.clone(),
            expected: Some(with_count(&duplicate_event, 2)),
            interval: secs(5),
        },
        Scenario {
            name: "the-same-event-should-just-count-even-if-more-than-aggregate",
            previous_events: make_events(max, &duplicate_event),
            new_event: duplicate_event.clone(),
            expected: Some(with_count(&duplicate_event, max as i32 + 1)),
            interval: secs(30),
        },
        Scenario {
            name: "the-same-event-is-spam-if-happens-too-frequently",
            previous_events: make_events(DEFAULT_SPAM_BURST as usize + 1, &duplicate_event),
            new_event: duplicate_event.clone(),
            expected: None,
            interval: secs(1),
        },
        Scenario {
            name: "create-many-unique-events",
            previous_events: make_unique_events(30),
            new_event: unique_event.clone(),
            expected: Some(with_count(&unique_event, 1)),
            interval: secs(5),
        },
        Scenario {
            name: "similar-events-should-aggregate-event",
            previous_events: make_similar_events(max - 1, &similar_event, &similar_event.message),
            new_event: similar_event.clone(),
            expected: Some(with_count(&aggregate_event, 1)),
            interval: secs(5),
        },
        Scenario {
            name: "similar-events-many-times-should-count-the-aggregate",
            previous_events: make_similar_events(max, &similar_event, &similar_event.message),
            new_event: similar_event.clone(),
            expected: Some(with_count(&aggregate_event, 2)),
            interval: secs(5),
        },
        Scenario {
            name: "events-from-different-containers-do-not-aggregate",
            previous_events: make_events(1, &similar_but_different_container_event),
            new_event: similar_event.clone(),
            expected: Some(with_count(&similar_event, 1)),
            interval: secs(5),
        },
        Scenario {
            name: "similar-events-whose-interval-is-greater-than-aggregate-interval-do-not-aggregate",
            previous_events: make_similar_events(max - 1, &similar_event, &similar_event.message),
            new_event: similar_event.clone(),
            expected: Some(with_count(&similar_event, 1)),
            interval: DEFAULT_AGGREGATE_INTERVAL + secs(1),
        },
        // The window is inclusive: a gap of exactly 600 s still aggregates.
        Scenario {
            name: "similar-events-exactly-the-aggregate-interval-apart-aggregate",
            previous_events: make_similar_events(max - 1, &similar_event, &similar_event.message),
            new_event: similar_event.clone(),
            expected: Some(with_count(&aggregate_event, 1)),
            interval: DEFAULT_AGGREGATE_INTERVAL,
        },
    ];
    for scenario in scenarios {
        run(scenario).await;
    }
}

/// After combining, the group keeps max - 1 messages: an event with one of them passes on its
/// own, one with a new message is combined again (client-go's behaviour, made reproducible).
#[tokio::test(start_paused = true)]
async fn aggregation_keeps_the_group_below_the_threshold() {
    let (mut correlator, _clock) = correlator_with_clock();
    let template = make_event("similar", "m", make_object_reference("Pod", "p", "ns"));
    let events = make_similar_events(DEFAULT_AGGREGATE_MAX_EVENTS, &template, "x");
    let results: Vec<Event> = events
        .iter()
        .map(|e| correlator.event_correlate(e.clone()).event)
        .collect();
    assert!(
        results[..9]
            .iter()
            .all(|e| !e.message.starts_with(AGGREGATE_MESSAGE_PREFIX))
    );
    let first_combined = &results[9];
    assert_eq!(
        first_combined.message,
        "(combined from similar events): x-9-m"
    );
    assert_eq!(first_combined.count, 1);
    // "x-0-m" (the smallest) was forgotten; "x-5-m" is still in the group.
    let again = correlator.event_correlate(events[5].clone());
    assert_eq!(
        (again.event.message.as_str(), again.event.count),
        ("x-5-m", 2)
    );
    let combined = correlator.event_correlate(events[0].clone());
    assert_eq!(
        combined.event.message,
        "(combined from similar events): x-0-m"
    );
    assert_eq!(combined.event.count, 2, "counted into the combined event");
    assert_eq!(combined.event.metadata.name, first_combined.metadata.name);
    assert_eq!(
        combined.event.first_timestamp,
        first_combined.first_timestamp
    );
}

#[tokio::test(start_paused = true)]
async fn test_event_spam_filter() {
    let spam_key_based_on_objects_and_reason: EventSpamKeyFunc = Arc::new(|e: &Event| {
        let o = &e.involved_object;
        [
            e.source.component.as_str(),
            &e.source.host,
            &o.kind,
            &o.namespace,
            &o.name,
            &o.uid,
            &o.api_version,
            &e.reason,
        ]
        .join("/")
    });
    let my_pod = || make_object_reference("Pod", "my-pod", "my-ns");
    let original_event = make_event("original", "i am first", my_pod());
    let different_reason_event = make_event("duplicate", "me again", my_pod());
    let spam_event = make_event("original", "me again", my_pod());
    let mut warning_event = different_reason_event.clone();
    warning_event.type_ = "Warning".into();

    let cases: Vec<(&str, Event, bool, Option<EventSpamKeyFunc>)> = vec![
        (
            "event should be reported as spam if object reference is the same for default spam filter",
            different_reason_event.clone(),
            true,
            None,
        ),
        (
            "event should not be reported as spam if object reference is the same, but reason is different for custom spam filter",
            different_reason_event.clone(),
            false,
            Some(Arc::clone(&spam_key_based_on_objects_and_reason)),
        ),
        (
            "event should be reported as spam if object reference and reason is the same, but message is different for custom spam filter",
            spam_event,
            true,
            Some(Arc::clone(&spam_key_based_on_objects_and_reason)),
        ),
        (
            "event should not be reported as spam if only the type differs for default spam filter",
            warning_event,
            false,
            None,
        ),
    ];
    for (name, new_event, expect_skip, spam_key_func) in cases {
        let mut options = CorrelatorOptions {
            clock: Arc::new(TokioClock::new()),
            burst_size: 1,
            ..CorrelatorOptions::default()
        };
        if let Some(f) = spam_key_func {
            options.spam_key_func = f;
        }
        let mut correlator = EventCorrelator::with_options(options);
        tokio::time::advance(Duration::from_secs(1)).await;
        let result = correlator.event_correlate(original_event.clone());
        assert!(!result.skip, "{name}: the original event passes");
        correlator.update_state(&result.event);

        tokio::time::advance(Duration::from_secs(1)).await;
        let result = correlator.event_correlate(new_event.clone());
        assert_eq!(result.skip, expect_skip, "{name}");
        if !expect_skip {
            validate_event(name, &result.event, &new_event);
        }
    }
}

#[test]
fn test_event_aggregator_by_reason_func() {
    let pod1 = || make_object_reference("Pod", "pod1", "other");
    let event1 = make_event("end-of-world", "it was fun", pod1());
    let event2 = make_event("end-of-world", "it was awful", pod1());
    let event3 = make_event("nevermind", "it was a bug", pod1());
    let (agg1, local1) = event_aggregator_by_reason_func(&event1);
    let (agg2, local2) = event_aggregator_by_reason_func(&event2);
    let (agg3, _) = event_aggregator_by_reason_func(&event3);
    assert_eq!(agg1, agg2);
    assert_ne!(local1, local2);
    assert_ne!(agg1, agg3);
}

#[test]
fn test_event_aggregator_by_reason_message_func() {
    let event = make_event(
        "end-of-world",
        "it was fun",
        make_object_reference("Pod", "p", "o"),
    );
    assert_eq!(
        event_aggregator_by_reason_message_func(&event),
        "(combined from similar events): it was fun"
    );
}

#[test]
fn keys_do_not_collide_when_parts_shift() {
    // Go's bare concatenation gives both of these the same keys ("...xyz...").
    let c = make_event("r", "m", make_object_reference("Pod", "yz", "x"));
    let d = make_event("r", "m", make_object_reference("Pod", "z", "xy"));
    assert_ne!(event_key(&c), event_key(&d));
    assert_ne!(spam_key(&c), spam_key(&d));
    assert_ne!(
        event_aggregator_by_reason_func(&c).0,
        event_aggregator_by_reason_func(&d).0
    );
}

#[test]
fn zero_options_mean_defaults() {
    let options = CorrelatorOptions {
        lru_cache_size: 0,
        burst_size: 0,
        qps: 0.0,
        max_events: 0,
        max_interval: Duration::ZERO,
        ..CorrelatorOptions::default()
    }
    .with_defaults();
    assert_eq!(options.lru_cache_size, MAX_LRU_CACHE_ENTRIES);
    assert_eq!(options.burst_size, DEFAULT_SPAM_BURST);
    assert_eq!(options.qps, DEFAULT_SPAM_QPS);
    assert_eq!(options.max_events, DEFAULT_AGGREGATE_MAX_EVENTS);
    assert_eq!(options.max_interval, DEFAULT_AGGREGATE_INTERVAL);
    assert!(format!("{options:?}").contains("lru_cache_size: 4096"));
}
