//! The retry watcher against a scripted source, on tokio's paused clock.

mod common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use clientgo_apimachinery::{DynamicObject, Object, Status, StatusReason};
use clientgo_watch::{
    MAX_RETRY_AFTER, RetryWatchError, RetryWatcher, Watch, WatchSource, WatchStartError,
};
use common::{Chunks, Then};
use tokio::time::Instant;

/// What the source answers to one watch request.
enum Answer {
    /// A body with these lines, then the given end.
    Body(Vec<String>, Then),
    Refuse(Box<Status>),
    Unreachable,
}

#[derive(Clone, Default)]
struct Script {
    answers: Arc<Mutex<VecDeque<Answer>>>,
    /// (resourceVersion asked for, when).
    calls: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl Script {
    fn new(answers: impl IntoIterator<Item = Answer>) -> Self {
        Self {
            answers: Arc::new(Mutex::new(answers.into_iter().collect())),
            calls: Arc::default(),
        }
    }

    fn calls(&self) -> Vec<(String, Instant)> {
        self.calls.lock().unwrap().clone()
    }
}

impl WatchSource<DynamicObject> for Script {
    async fn watch(&self, rv: &str) -> Result<Watch<DynamicObject>, WatchStartError> {
        self.calls
            .lock()
            .unwrap()
            .push((rv.to_owned(), Instant::now()));
        let answer = self.answers.lock().unwrap().pop_front();
        match answer {
            Some(Answer::Body(lines, then)) => {
                let chunks = lines.into_iter().map(|line| Bytes::from(line + "\n"));
                Ok(Watch::new(Chunks::new(chunks, then)))
            }
            Some(Answer::Refuse(status)) => Err(WatchStartError::Status(status)),
            Some(Answer::Unreachable) => {
                Err(WatchStartError::Transport("connection refused".into()))
            }
            // Out of script: a watch that never says anything.
            None => Ok(Watch::new(Chunks::new([], Then::Hang))),
        }
    }
}

fn event(kind: &str, name: &str, rv: &str) -> String {
    format!(
        r#"{{"type":"{kind}","object":{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","namespace":"ns","resourceVersion":"{rv}"}}}}}}"#
    )
}

fn bookmark(rv: &str) -> String {
    format!(
        r#"{{"type":"BOOKMARK","object":{{"kind":"ConfigMap","apiVersion":"v1","metadata":{{"resourceVersion":"{rv}"}}}}}}"#
    )
}

fn error_event(code: i32, reason: &str, retry_after: i32) -> String {
    format!(
        r#"{{"type":"ERROR","object":{{"kind":"Status","apiVersion":"v1","status":"Failure","message":"m","reason":"{reason}","code":{code},"details":{{"retryAfterSeconds":{retry_after}}}}}}}"#
    )
}

async fn next_name(watcher: &mut RetryWatcher<DynamicObject, Script>) -> String {
    match watcher.next().await {
        Some(Ok(event)) => format!(
            "{}:{}",
            event.event_type().as_str(),
            event.object().map_or("", |o| o.name())
        ),
        other => panic!("expected an event, got {other:?}"),
    }
}

#[test]
fn refuses_synthetic_starting_points() {
    for rv in ["", "0"] {
        let error = RetryWatcher::<DynamicObject, _>::new(Script::default(), rv).unwrap_err();
        assert!(matches!(error, RetryWatchError::InvalidResourceVersion(_)));
    }
}

#[tokio::test(start_paused = true)]
async fn resumes_from_the_last_resource_version_without_gaps_or_repeats() {
    let script = Script::new([
        Answer::Body(vec![event("ADDED", "a", "11"), bookmark("15")], Then::End),
        Answer::Body(vec![event("MODIFIED", "a", "16")], Then::Fail),
        Answer::Unreachable,
        Answer::Body(vec![event("DELETED", "a", "17")], Then::End),
    ]);
    let mut watcher = RetryWatcher::new(script.clone(), "10").unwrap();
    assert_eq!(next_name(&mut watcher).await, "ADDED:a");
    assert_eq!(
        next_name(&mut watcher).await,
        "MODIFIED:a",
        "the bookmark was not passed on"
    );
    assert_eq!(next_name(&mut watcher).await, "DELETED:a");
    assert_eq!(watcher.last_resource_version(), "17");

    let calls = script.calls();
    let rvs: Vec<&str> = calls.iter().map(|(rv, _)| rv.as_str()).collect();
    assert_eq!(rvs, ["10", "15", "16", "16"]);
    let gaps: Vec<Duration> = calls.windows(2).map(|w| w[1].1 - w[0].1).collect();
    assert_eq!(
        gaps,
        [
            Duration::from_secs(1),
            Duration::from_secs(1),
            Duration::from_secs(2)
        ],
        "a clean end restarts after the 1 s minimum; failures back off"
    );
}

#[tokio::test(start_paused = true)]
async fn consecutive_failures_back_off_up_to_the_cap() {
    let script = Script::new((0..8).map(|_| Answer::Unreachable));
    let mut watcher = RetryWatcher::new(script.clone(), "10").unwrap();
    let next = tokio::time::timeout(Duration::from_secs(200), watcher.next()).await;
    assert!(next.is_err(), "the last answer is a silent watch");
    let calls = script.calls();
    let gaps: Vec<u64> = calls
        .windows(2)
        .map(|w| (w[1].1 - w[0].1).as_secs())
        .collect();
    assert_eq!(gaps, [1, 2, 4, 8, 16, 30, 30, 30]);
}

#[tokio::test(start_paused = true)]
async fn gone_ends_the_watcher_for_a_relist() {
    for answer in [
        Answer::Body(
            vec![event("ADDED", "a", "11"), error_event(410, "Expired", 0)],
            Then::Hang,
        ),
        Answer::Refuse(Box::new(Status::failure(410, StatusReason::Gone, "gone"))),
    ] {
        let script = Script::new([answer]);
        let mut watcher = RetryWatcher::new(script, "10").unwrap();
        let mut result = watcher.next().await;
        if matches!(result, Some(Ok(_))) {
            result = watcher.next().await;
        }
        assert!(
            matches!(result, Some(Err(RetryWatchError::Gone(_)))),
            "{result:?}"
        );
        assert!(watcher.next().await.is_none());
    }
}

#[tokio::test(start_paused = true)]
async fn unauthorized_and_forbidden_are_terminal() {
    let script = Script::new([Answer::Refuse(Box::new(Status::failure(
        403,
        StatusReason::Forbidden,
        "no",
    )))]);
    let mut watcher = RetryWatcher::new(script, "10").unwrap();
    assert!(matches!(
        watcher.next().await,
        Some(Err(RetryWatchError::Forbidden(_)))
    ));

    let script = Script::new([Answer::Refuse(Box::new(Status::failure(
        401,
        StatusReason::Unauthorized,
        "who",
    )))]);
    let mut watcher = RetryWatcher::new(script, "10").unwrap();
    assert!(matches!(
        watcher.next().await,
        Some(Err(RetryWatchError::Unauthorized(_)))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_server_error_event_honours_its_retry_hint() {
    let script = Script::new([
        Answer::Body(vec![error_event(500, "InternalError", 7)], Then::Hang),
        Answer::Body(vec![event("ADDED", "b", "12")], Then::Hang),
    ]);
    let mut watcher = RetryWatcher::new(script.clone(), "10").unwrap();
    assert_eq!(next_name(&mut watcher).await, "ADDED:b");
    let calls = script.calls();
    assert_eq!(calls[1].1 - calls[0].1, Duration::from_secs(7));
    assert_eq!(calls[1].0, "10");
}

#[tokio::test(start_paused = true)]
async fn a_retry_hint_is_capped_at_max_retry_after() {
    let script = Script::new([
        Answer::Body(
            vec![error_event(500, "InternalError", i32::MAX)],
            Then::Hang,
        ),
        Answer::Body(vec![event("ADDED", "b", "12")], Then::Hang),
    ]);
    let mut watcher = RetryWatcher::new(script.clone(), "10").unwrap();
    let next = tokio::time::timeout(Duration::from_secs(3600), next_name(&mut watcher)).await;
    assert_eq!(next.expect("re-watched within the hour"), "ADDED:b");
    let calls = script.calls();
    assert_eq!(calls[1].1 - calls[0].1, MAX_RETRY_AFTER);
}

#[tokio::test(start_paused = true)]
async fn an_event_without_resource_version_is_terminal() {
    let script = Script::new([Answer::Body(vec![event("ADDED", "a", "")], Then::Hang)]);
    let mut watcher = RetryWatcher::new(script, "10").unwrap();
    assert!(matches!(
        watcher.next().await,
        Some(Err(RetryWatchError::NoResourceVersion))
    ));
    assert!(watcher.next().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn dropping_next_keeps_the_backoff() {
    let script = Script::new([Answer::Unreachable, Answer::Unreachable]);
    let mut watcher = RetryWatcher::new(script.clone(), "10").unwrap();
    for _ in 0..5 {
        // Give up on `next` a little into each backoff; the deadline must not move.
        let _ = tokio::time::timeout(Duration::from_millis(300), watcher.next()).await;
    }
    let calls = script.calls();
    let gaps: Vec<Duration> = calls.windows(2).map(|w| w[1].1 - w[0].1).collect();
    assert_eq!(gaps[0], Duration::from_secs(1));
    assert_eq!(
        gaps.get(1).copied(),
        None,
        "the 2 s backoff had not passed yet"
    );
}

#[tokio::test(start_paused = true)]
async fn stop_ends_the_stream() {
    let mut watcher = RetryWatcher::new(Script::default(), "10").unwrap();
    watcher.stop();
    assert!(watcher.next().await.is_none());
}
