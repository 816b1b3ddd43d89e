//! Watch decoding: framing across arbitrary chunk splits, clean ends, and each failure.

mod common;

use std::time::Duration;

use bytes::Bytes;
use clientgo_apimachinery::{DynamicObject, Object, StatusReason, WatchEvent};
use clientgo_watch::{FrameError, Watch, WatchError};

use common::{Chunks, Then};

/// splitmix64, seeded, to choose chunk boundaries.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        ((z ^ (z >> 31)) % n as u64) as usize
    }
}

/// A recorded-style stream: events whose strings hold braces, quotes, escapes and unicode.
fn recorded_stream() -> (Vec<u8>, usize) {
    let mut body = Vec::new();
    let tricky = [
        r#"plain"#,
        r#"{not a brace}"#,
        r#"quote \" and } and { inside"#,
        r#"backslash at end \\"#,
        r#"unicode ☸ \u00e9 \ud83d\ude00"#,
        r#"\\\"}{"#,
    ];
    let mut events = 0;
    for i in 0..60 {
        let kind = ["ADDED", "MODIFIED", "DELETED"][i % 3];
        let value = tricky[i % tricky.len()];
        body.extend_from_slice(
            format!(
                r#"{{"type":"{kind}","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"cm-{i}","namespace":"ns","resourceVersion":"{rv}","labels":{{"app":"a{i}"}}}},"data":{{"k":"{value}","nested":"{{}}"}}}}}}"#,
                rv = 100 + i
            )
            .as_bytes(),
        );
        body.extend_from_slice(if i % 4 == 0 { b"\r\n" } else { b"\n" });
        events += 1;
        if i % 10 == 9 {
            body.extend_from_slice(
                format!(
                    r#"{{"type":"BOOKMARK","object":{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"resourceVersion":"{}"}}}}}}"#,
                    200 + i
                )
                .as_bytes(),
            );
            body.push(b'\n');
            events += 1;
        }
    }
    (body, events)
}

async fn collect(
    mut watch: Watch<DynamicObject>,
) -> (Vec<WatchEvent<DynamicObject>>, Option<WatchError>) {
    let mut events = Vec::new();
    while let Some(event) = watch.next().await {
        match event {
            Ok(event) => events.push(event),
            Err(error) => {
                assert!(watch.next().await.is_none(), "an error ends the watch");
                return (events, Some(error));
            }
        }
    }
    (events, None)
}

fn summary(events: &[WatchEvent<DynamicObject>]) -> Vec<(String, String, String)> {
    events
        .iter()
        .map(|event| {
            let (name, data) = match event.object() {
                Some(object) => (object.name().to_owned(), object.data["data"].to_string()),
                None => (String::new(), String::new()),
            };
            (
                format!(
                    "{}@{}",
                    event.event_type().as_str(),
                    event.resource_version().unwrap_or("")
                ),
                name,
                data,
            )
        })
        .collect()
}

#[tokio::test]
async fn any_chunking_gives_the_same_events() {
    let (body, count) = recorded_stream();
    let whole = collect(Watch::new(Chunks::new(
        [Bytes::from(body.clone())],
        Then::End,
    )))
    .await;
    assert!(whole.1.is_none(), "{:?}", whole.1);
    assert_eq!(whole.0.len(), count);
    let expected = summary(&whole.0);
    assert_eq!(expected[1].2, r#"{"k":"{not a brace}","nested":"{}"}"#);

    let byte_by_byte: Vec<Bytes> = body.iter().map(|b| Bytes::copy_from_slice(&[*b])).collect();
    let (events, error) = collect(Watch::new(Chunks::new(byte_by_byte, Then::End))).await;
    assert!(error.is_none());
    assert_eq!(summary(&events), expected, "one byte per chunk");

    for seed in 0..200u64 {
        let mut rng = Rng(seed);
        let mut chunks = Vec::new();
        let mut at = 0;
        while at < body.len() {
            let len = 1 + rng.below(if seed % 2 == 0 { 64 } else { 4096 });
            let end = (at + len).min(body.len());
            chunks.push(Bytes::copy_from_slice(&body[at..end]));
            at = end;
        }
        let (events, error) = collect(Watch::new(Chunks::new(chunks, Then::End))).await;
        assert!(error.is_none(), "seed {seed}: {error:?}");
        assert_eq!(summary(&events), expected, "seed {seed}");
    }
}

#[tokio::test]
async fn server_error_event_is_an_event() {
    let body = br#"{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (212)","reason":"Expired","code":410}}"#;
    let (events, error) = collect(Watch::new(Chunks::new(
        [Bytes::from_static(body)],
        Then::End,
    )))
    .await;
    assert!(error.is_none());
    let [WatchEvent::Error(status)] = &events[..] else {
        panic!("{events:?}")
    };
    assert_eq!(status.code, 410);
    assert_eq!(status.reason, StatusReason::Expired);
}

#[tokio::test]
async fn garbage_between_events_is_a_frame_error() {
    let body: &[u8] =
        b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"5\"}}}\n]oops";
    let garbage_at = body.iter().position(|&b| b == b']').unwrap() as u64;
    let chunks = [
        Bytes::from_static(&body[..40]),
        Bytes::from_static(&body[40..]),
    ];
    let (events, error) = collect(Watch::new(Chunks::new(chunks, Then::End))).await;
    assert_eq!(events.len(), 1);
    match error {
        Some(WatchError::Frame(FrameError::Unexpected { byte: b']', offset })) => {
            assert_eq!(
                offset, garbage_at,
                "the offset counts from the start of the body"
            )
        }
        other => panic!("{other:?}"),
    }
}

fn added(name: &str, rv: &str) -> String {
    format!(
        r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}}}"#
    )
}

#[tokio::test]
async fn one_undecodable_event_fails_that_event_only() {
    let undecodable = [
        r#"{"type":"EXPLODED","object":{}}"#.to_owned(),
        r#"{"type":"ADDED","object":{"metadata":{"name":7}}}"#.to_owned(),
        // Deeper than kube-apiserver accepts.
        format!(
            r#"{{"type":"ADDED","object":{{"data":{}1{}}}}}"#,
            "[".repeat(10_001),
            "]".repeat(10_001)
        ),
    ];
    let mut lines = vec![added("a", "1")];
    lines.extend(undecodable.iter().cloned());
    lines.push(added("b", "2"));
    let chunks = lines.into_iter().map(|line| Bytes::from(line + "\n"));
    let reported = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = reported.clone();
    let mut watch = Watch::<DynamicObject>::new(Chunks::new(chunks, Then::End))
        .skipping_undecodable()
        .on_undecodable(move |error| seen.lock().unwrap().push(error.to_string()));
    let mut names = Vec::new();
    while let Some(event) = watch.next().await {
        names.push(
            event
                .expect("no error ends the watch")
                .object()
                .unwrap()
                .name()
                .to_owned(),
        );
    }
    assert_eq!(names, ["a", "b"]);
    assert_eq!(watch.undecodable_events(), 3);
    let reported = reported.lock().unwrap();
    assert_eq!(reported.len(), 3);
    assert!(
        reported[2].contains("nested deeper than 10000 levels"),
        "{}",
        reported[2]
    );
}

#[tokio::test]
async fn an_event_nested_as_deep_as_the_server_allows_decodes() {
    let deep = format!(
        r#"{{"type":"ADDED","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"deep"}},"data":{}1{}}}}}"#,
        r#"{"a":"#.repeat(9_990),
        "}".repeat(9_990)
    );
    let watch = Watch::<clientgo_apimachinery::PartialObjectMetadata>::new(Chunks::new(
        [Bytes::from(deep)],
        Then::End,
    ));
    let mut watch = watch;
    let event = watch.next().await.expect("an event").expect("it decodes");
    assert_eq!(event.object().unwrap().name(), "deep");
    assert!(watch.next().await.is_none());
}

#[tokio::test]
async fn an_undecodable_or_broken_frame_is_a_decode_error_that_quotes_nothing() {
    // Invalid JSON ends the watch even when undecodable events are skipped.
    let frames = [
        (
            &br#"{"type":"ADDED","object":{"data":{"password":"hunter2"}},}"#[..],
            true,
        ),
        (
            br#"{"type":"ADDED","object":{"metadata":{"generation":"hunter2"}}}"#,
            false,
        ),
        (br#"{"type":"EXPLODED","object":{}}"#, false),
    ];
    for (frame, skipping) in frames {
        let watch = Watch::new(Chunks::new([Bytes::copy_from_slice(frame)], Then::End));
        let watch = if skipping {
            watch.skipping_undecodable()
        } else {
            watch
        };
        let (events, error) = collect(watch).await;
        assert!(events.is_empty());
        let error = error.expect("a decode error");
        assert!(matches!(error, WatchError::Decode { .. }), "{error:?}");
        assert!(!error.to_string().contains("hunter2"), "{error}");
        assert!(std::error::Error::source(&error).is_none());
    }
}

#[tokio::test]
async fn oversized_event_is_refused_before_it_is_buffered_whole() {
    let big = format!(
        r#"{{"type":"ADDED","object":{{"data":{{"k":"{}"}}}}}}"#,
        "x".repeat(10_000)
    );
    let chunks: Vec<Bytes> = big
        .as_bytes()
        .chunks(1000)
        .map(Bytes::copy_from_slice)
        .collect();
    let watch = Watch::<DynamicObject>::new(Chunks::new(chunks, Then::Hang)).with_max_frame(4096);
    let (events, error) = collect(watch).await;
    assert!(events.is_empty());
    assert!(
        matches!(
            error,
            Some(WatchError::Frame(FrameError::TooLarge { limit: 4096 }))
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn body_ending_inside_an_event_is_truncated() {
    let chunks = [
        Bytes::from_static(
            b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"5\"}}}\n",
        ),
        Bytes::from_static(b"{\"type\":\"ADDED\",\"obj"),
    ];
    let (events, error) = collect(Watch::new(Chunks::new(chunks, Then::End))).await;
    assert_eq!(events.len(), 1);
    assert!(
        matches!(error, Some(WatchError::Truncated { pending: 20 })),
        "{error:?}"
    );
}

#[tokio::test]
async fn transport_failure_is_reported() {
    let (events, error) = collect(Watch::new(Chunks::new([], Then::Fail))).await;
    assert!(events.is_empty());
    let error = error.unwrap();
    assert!(matches!(error, WatchError::Transport(_)));
    assert!(error.to_string().contains("connection reset"));
}

#[tokio::test(start_paused = true)]
async fn stalled_watch_is_detected_by_the_idle_timeout() {
    let first = Bytes::from_static(
        b"{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"5\"}}}\n",
    );
    let watch = Watch::<DynamicObject>::new(Chunks::new([first], Then::Hang))
        .with_idle_timeout(Duration::from_secs(30));
    let start = tokio::time::Instant::now();
    let (events, error) = collect(watch).await;
    assert_eq!(events.len(), 1);
    assert!(
        matches!(error, Some(WatchError::Stalled { .. })),
        "{error:?}"
    );
    assert_eq!(start.elapsed(), Duration::from_secs(30));
}

#[tokio::test]
async fn stop_ends_the_stream() {
    let mut watch = Watch::<DynamicObject>::new(Chunks::new([], Then::Hang));
    watch.stop();
    assert!(watch.next().await.is_none());
}
