//! Reflector acceptance tests (client-go's reflector_test.go): the list-then-watch round, the
//! exact requests it makes, event handling, resourceVersion tracking, stopping, and the error
//! handler. All on tokio's paused clock.

mod reflector_support;

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{Bookmark, StatusReason, WatchEvent};
use clientgo_informer::{
    FailureKind, ListWatchError, Reflector, ReflectorOperation, ReflectorOptions,
};
use clientgo_rest::{ListParams, WatchParams};
use parking_lot::Mutex;
use reflector_support::*;
use tokio_util::sync::CancellationToken;

fn list_watch_options() -> ReflectorOptions {
    ReflectorOptions {
        name: "test".into(),
        use_watch_list: false,
        ..ReflectorOptions::default()
    }
}

fn reflector(lw: &FakeLw, store: &Arc<RecordingStore>) -> Arc<Reflector<Pod, FakeLw>> {
    Arc::new(Reflector::new(
        lw.clone(),
        store.clone(),
        list_watch_options(),
    ))
}

fn spawn_run(
    r: &Arc<Reflector<Pod, FakeLw>>,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let (r, cancel) = (r.clone(), cancel.clone());
    tokio::spawn(async move { r.run(cancel).await })
}

fn without_timeout(mut calls: Vec<WatchParams>) -> Vec<WatchParams> {
    for call in &mut calls {
        let seconds = call
            .timeout_seconds
            .take()
            .expect("every watch has a timeout");
        assert!((300..=600).contains(&seconds), "timeoutSeconds {seconds}");
    }
    calls
}

// TestReflectorListAndWatch, "UseWatchList disabled": exact List and Watch options, and the
// store sees the list then each event.
#[tokio::test(start_paused = true)]
async fn test_reflector_list_and_watch() {
    let feeds: Arc<Mutex<Vec<Feed>>> = Arc::default();
    let lw = FakeLw::new(|_, _| Ok(list("1", vec![pod("foo", "1")])), {
        let feeds = feeds.clone();
        move |_, _| {
            let (watch, feed) = fed();
            feeds.lock().push(feed);
            Ok(watch)
        }
    });
    let store = RecordingStore::new();
    let r = reflector(&lw, &store);
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    lw.wait_for_watch_calls(1).await;
    let feed = feeds.lock()[0].clone();
    feed.send(WatchEvent::Modified(pod("foo", "2")));
    for (name, rv) in [("bar", "3"), ("baz", "4"), ("qux", "5"), ("zoo", "6")] {
        feed.send(WatchEvent::Added(pod(name, rv)));
    }
    store.wait_for(|ops| ops.len() == 6).await;
    assert_eq!(
        store.ops(),
        [
            Op::Replace(vec!["foo@1".into()], "1".into()),
            Op::Update("foo@2".into()),
            Op::Add("bar@3".into()),
            Op::Add("baz@4".into()),
            Op::Add("qux@5".into()),
            Op::Add("zoo@6".into()),
        ]
    );
    assert_eq!(r.last_sync_resource_version(), "6");
    cancel.cancel();
    run.await.unwrap();
    assert!(feed.is_stopped(), "the watch is dropped on cancel");
    assert_eq!(
        lw.list_calls(),
        [ListParams {
            resource_version: Some("0".into()),
            limit: Some(500),
            ..ListParams::default()
        }]
    );
    assert_eq!(
        without_timeout(lw.watch_calls()),
        [WatchParams {
            resource_version: Some("1".into()),
            allow_watch_bookmarks: true,
            ..WatchParams::default()
        }]
    );
}

// TestReflectorListAndWatchWithErrors: rounds that fail on the list or the watch request
// return the error; clean rounds return Ok and keep the store in step.
#[tokio::test(start_paused = true)]
async fn test_reflector_list_and_watch_with_errors() {
    struct Round {
        list: Result<Vec<Pod>, &'static str>,
        list_rv: &'static str,
        events: Vec<WatchEvent<Pod>>,
        watch_err: Option<&'static str>,
    }
    let rounds = vec![
        Round {
            list: Ok(vec![]),
            list_rv: "1",
            events: vec![
                WatchEvent::Added(pod("foo", "2")),
                WatchEvent::Added(pod("bar", "3")),
            ],
            watch_err: None,
        },
        Round {
            list: Ok(vec![pod("foo", "2"), pod("bar", "3")]),
            list_rv: "3",
            events: vec![
                WatchEvent::Deleted(pod("foo", "4")),
                WatchEvent::Added(pod("qux", "5")),
            ],
            watch_err: None,
        },
        Round {
            list: Err("a list error"),
            list_rv: "",
            events: vec![],
            watch_err: None,
        },
        Round {
            list: Ok(vec![pod("bar", "3"), pod("qux", "5")]),
            list_rv: "5",
            events: vec![],
            watch_err: Some("a watch error"),
        },
        Round {
            list: Ok(vec![pod("bar", "3"), pod("qux", "5")]),
            list_rv: "5",
            events: vec![WatchEvent::Added(pod("baz", "6"))],
            watch_err: None,
        },
        Round {
            list: Ok(vec![pod("bar", "3"), pod("qux", "5"), pod("baz", "6")]),
            list_rv: "6",
            events: vec![],
            watch_err: None,
        },
    ];
    let store = RecordingStore::new();
    let mut expected_state = Vec::<String>::new();
    for (i, round) in rounds.into_iter().enumerate() {
        if let Ok(items) = &round.list {
            // The list a round starts with is what the previous rounds left in the store.
            let mut want: Vec<String> = items
                .iter()
                .map(|p| format!("{}@{}", p.metadata.name, p.metadata.resource_version))
                .collect();
            want.sort();
            assert_eq!(store.items(), want, "round {i}");
            expected_state = want;
        }
        let cancel = CancellationToken::new();
        let Round {
            list: listed,
            list_rv,
            events,
            watch_err,
        } = round;
        let listed = Mutex::new(Some(listed));
        let events = Mutex::new(Some(events));
        let lw = FakeLw::new(
            move |_, _| match listed.lock().take().expect("one list per round") {
                Ok(items) => Ok(list(list_rv, items)),
                Err(message) => Err(ListWatchError::Transport(message.into())),
            },
            {
                let cancel = cancel.clone();
                move |n, _| {
                    if let Some(message) = watch_err {
                        return Err(ListWatchError::Transport(message.into()));
                    }
                    assert_eq!(n, 1, "second watch");
                    let mut steps: Vec<Step> = events
                        .lock()
                        .take()
                        .unwrap()
                        .into_iter()
                        .map(Step::Event)
                        .collect();
                    // Stop once the events are handled.
                    let cancel = cancel.clone();
                    steps.push(Step::Run(Box::new(move || cancel.cancel())));
                    steps.push(Step::Hang);
                    Ok(scripted(steps))
                }
            },
        );
        let r = Reflector::new(lw, store.clone() as _, list_watch_options());
        let result = r.list_and_watch(&cancel).await;
        match (i, result) {
            (2, Err(e)) => assert_eq!(e.to_string(), "request failed: a list error"),
            (3, Err(e)) => assert_eq!(e.to_string(), "request failed: a watch error"),
            (_, Err(e)) => panic!("round {i}: {e}"),
            (2 | 3, Ok(())) => panic!("round {i} should fail"),
            (_, Ok(())) => {}
        }
    }
    assert_eq!(store.items(), ["bar@3", "baz@6", "qux@5"]);
    assert_eq!(expected_state, ["bar@3", "baz@6", "qux@5"]);
}

// TestRunUntil: cancelling stops run and drops (stops) the watch.
#[tokio::test(start_paused = true)]
async fn test_run_until() {
    let (watch, feed) = fed();
    let watch = Mutex::new(Some(watch));
    let lw = FakeLw::new(
        |_, _| Ok(list("1", vec![])),
        move |_, _| Ok(watch.lock().take().expect("a single watch")),
    );
    let store = RecordingStore::new();
    let r = reflector(&lw, &store);
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    feed.send(WatchEvent::Added(pod("bar", "2")));
    store.wait_for(|ops| ops.len() == 2).await;
    assert!(!feed.is_stopped());
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(1), run)
        .await
        .expect("run returns promptly")
        .unwrap();
    assert!(feed.is_stopped(), "watch left open after cancellation");
}

// TestReflectorWatchStoppedBefore: a cancelled token means no request at all.
#[tokio::test(start_paused = true)]
async fn test_reflector_watch_stopped_before() {
    let lw = FakeLw::new(
        |_, _| panic!("list called unexpectedly"),
        |_, _| panic!("watch called unexpectedly"),
    );
    let store = RecordingStore::new();
    let cancel = CancellationToken::new();
    cancel.cancel();
    reflector(&lw, &store)
        .list_and_watch(&cancel)
        .await
        .unwrap();
    reflector(&lw, &store).run(cancel).await;
}

// TestReflectorWatchStoppedAfter / TestReflectorStopWatch / TestCloseWatchChannelOnError:
// a watch is always dropped when the reflector stops or the watch errors.
#[tokio::test(start_paused = true)]
async fn test_reflector_watch_stopped_after_and_on_error() {
    let feeds: Arc<Mutex<Vec<Feed>>> = Arc::default();
    let cancel = CancellationToken::new();
    let lw = FakeLw::new(|_, _| Ok(list("1", vec![])), {
        let feeds = feeds.clone();
        move |_, _| {
            let (watch, feed) = fed();
            feeds.lock().push(feed);
            Ok(watch)
        }
    });
    let store = RecordingStore::new();
    let r = reflector(&lw, &store);
    let round = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.list_and_watch(&cancel).await })
    };
    lw.wait_for_watch_calls(1).await;
    let first = feeds.lock()[0].clone();
    // An ERROR event (here one the reflector does not know) ends that watch: dropped.
    first.send(error_event(status(
        500,
        StatusReason::Other("Weird".into()),
        "x",
    )));
    round.await.unwrap().unwrap();
    assert!(first.is_stopped(), "watch left open after an ERROR event");
    assert_eq!(
        lw.watch_calls().len(),
        1,
        "an unknown ERROR ends the round (relist)"
    );

    let round = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.list_and_watch(&cancel).await })
    };
    lw.wait_for_watch_calls(2).await;
    let second = feeds.lock()[1].clone();
    assert!(!second.is_stopped());
    cancel.cancel();
    round.await.unwrap().unwrap();
    assert!(second.is_stopped(), "watch left open after cancellation");
}

// TestReflectorWatchHandler: events reach the store in order; the last synced
// resourceVersion is the last event's.
#[tokio::test(start_paused = true)]
async fn test_reflector_watch_handler() {
    let cancel = CancellationToken::new();
    let lw = FakeLw::new(
        |_, _| Ok(list("10", vec![pod("foo", "1"), pod("bar", "2")])),
        |_, _| {
            Ok(open_with(vec![
                WatchEvent::Deleted(pod("foo", "11")),
                WatchEvent::Modified(pod("bar", "55")),
                WatchEvent::Added(pod("baz", "32")),
            ]))
        },
    );
    let store = RecordingStore::new();
    let r = reflector(&lw, &store);
    let round = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.list_and_watch(&cancel).await })
    };
    store.wait_for(|ops| ops.len() == 4).await;
    assert_eq!(r.last_sync_resource_version(), "32");
    assert_eq!(store.items(), ["bar@55", "baz@32"]);
    cancel.cancel();
    round.await.unwrap().unwrap();
}

// TestReflectorResourceVersionUpdate: every event and bookmark advances the resourceVersion;
// bookmarks reach the store.
#[tokio::test(start_paused = true)]
async fn test_reflector_resource_version_update() {
    let (watch, feed) = fed();
    let watch = Mutex::new(Some(watch));
    let lw = FakeLw::new(
        |_, _| Ok(list("10", vec![])),
        move |_, _| Ok(watch.lock().take().expect("one watch")),
    );
    let store = RecordingStore::new();
    let r = reflector(&lw, &store);
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    store.wait_for(|ops| ops.len() == 1).await;
    assert_eq!(r.last_sync_resource_version(), "10");
    let steps = [
        (WatchEvent::Added(pod("a", "20")), "20"),
        (WatchEvent::Bookmark(Bookmark::new("30")), "30"),
        (WatchEvent::Modified(pod("a", "40")), "40"),
        (WatchEvent::Bookmark(Bookmark::new("50")), "50"),
    ];
    for (i, (event, rv)) in steps.into_iter().enumerate() {
        feed.send(event);
        store.wait_for(|ops| ops.len() == i + 2).await;
        assert_eq!(r.last_sync_resource_version(), rv);
    }
    assert_eq!(
        store.ops()[1..],
        [
            Op::Add("a@20".into()),
            Op::Bookmark("30".into()),
            Op::Update("a@40".into()),
            Op::Bookmark("50".into()),
        ]
    );
    cancel.cancel();
    run.await.unwrap();
}

// A watch from "" or "0" starts with synthetic ADDED events in no order: the resourceVersion
// is held back until the first other event.
#[tokio::test(start_paused = true)]
async fn resource_version_held_back_until_the_first_non_added_event() {
    let (watch, feed) = fed();
    let watch = Mutex::new(Some(watch));
    let lw = FakeLw::new(
        // A list without a resourceVersion: the watch starts from "".
        |_, _| Ok(list("", vec![])),
        move |_, _| Ok(watch.lock().take().expect("one watch")),
    );
    let store = RecordingStore::new();
    let r = reflector(&lw, &store);
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    feed.send(WatchEvent::Added(pod("b", "7")));
    feed.send(WatchEvent::Added(pod("a", "5")));
    store.wait_for(|ops| ops.len() == 3).await;
    assert_eq!(r.last_sync_resource_version(), "", "held back");
    feed.send(WatchEvent::Modified(pod("a", "8")));
    feed.send(WatchEvent::Added(pod("c", "9")));
    store.wait_for(|ops| ops.len() == 5).await;
    assert_eq!(
        r.last_sync_resource_version(),
        "9",
        "propagated from the first MODIFIED on"
    );
    assert_eq!(lw.watch_calls()[0].resource_version, None);
    cancel.cancel();
    run.await.unwrap();
}

// A watch that ends normally is re-opened at once from the last resourceVersion, without a
// relist.
#[tokio::test(start_paused = true)]
async fn clean_watch_end_rewatches_without_relisting() {
    let lw = FakeLw::new(
        |_, _| Ok(list("1", vec![])),
        |n, _| {
            Ok(match n {
                1 => scripted(vec![
                    Step::Event(WatchEvent::Added(pod("a", "2"))),
                    Step::Event(WatchEvent::Bookmark(Bookmark::new("3"))),
                ]),
                _ => open_with(vec![]),
            })
        },
    );
    let store = RecordingStore::new();
    let r = reflector(&lw, &store);
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    lw.wait_for_watch_calls(2).await;
    let start = tokio::time::Instant::now();
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        start.elapsed(),
        Duration::ZERO,
        "no backoff before the re-watch"
    );
    assert_eq!(lw.list_calls().len(), 1);
    let rvs: Vec<_> = lw
        .watch_calls()
        .into_iter()
        .map(|o| o.resource_version)
        .collect();
    assert_eq!(rvs, [Some("1".to_owned()), Some("3".to_owned())]);
}

// The watch error handler sees only errors that end a round (a failed list, a failed watch
// request), not watch-stream errors that lead to a relist; last_error says what failed.
#[tokio::test(start_paused = true)]
async fn watch_error_handler_and_last_error() {
    let lw = FakeLw::new(
        |n, _| match n {
            1 => Err(status(403, StatusReason::Forbidden, "pods is forbidden")),
            _ => Ok(list("5", vec![])),
        },
        |n, _| match n {
            1 => Ok(open_with(vec![error_event(expired())])),
            2 => Err(status(500, StatusReason::InternalError, "etcd is down")),
            _ => Ok(open_with(vec![])),
        },
    );
    let store = RecordingStore::new();
    let r = reflector(&lw, &store);
    let seen: Arc<Mutex<Vec<String>>> = Arc::default();
    {
        let seen = seen.clone();
        r.set_watch_error_handler(move |e| seen.lock().push(e.to_string()));
    }
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    lw.wait_for_list_calls(1).await;
    let failure = r.last_failure().expect("the list failed");
    assert_eq!(
        (failure.operation, failure.kind),
        (ReflectorOperation::List, FailureKind::Forbidden)
    );
    assert_eq!(
        r.last_error().unwrap(),
        "list failed (forbidden): pods is forbidden (Forbidden, code 403)"
    );
    lw.wait_for_watch_calls(3).await;
    assert_eq!(r.last_error(), None, "cleared by the successful relist");
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        *seen.lock(),
        [
            "pods is forbidden (Forbidden, code 403)",
            "etcd is down (InternalError, code 500)"
        ]
    );
    assert_eq!(lw.list_rvs(), ["0", "0", "5", "5"]);
}

// TestWatchTimeout: timeoutSeconds is random in [min, 2×min]; a minimum below 5 minutes is
// ignored, a larger one honoured.
#[tokio::test(start_paused = true)]
async fn test_watch_timeout() {
    for (min, low, high) in [
        (None, 300, 600),
        (Some(Duration::from_secs(1)), 300, 600),
        (Some(Duration::from_secs(30 * 60)), 1800, 3600),
        // An absurd minimum is bounded: the server reads timeoutSeconds as int64 nanoseconds.
        (Some(Duration::MAX), 4_294_967_295, 4_294_967_295),
    ] {
        let cancel = CancellationToken::new();
        let lw = FakeLw::new(|_, _| Ok(list("1", vec![])), {
            let cancel = cancel.clone();
            move |n, _| {
                if n == 20 {
                    cancel.cancel();
                }
                Ok(scripted(vec![Step::Event(WatchEvent::Bookmark(
                    Bookmark::new("1"),
                ))]))
            }
        });
        let mut options = list_watch_options();
        if let Some(min) = min {
            options.min_watch_timeout = min;
        }
        let r = Reflector::new(lw.clone(), RecordingStore::new() as _, options);
        r.list_and_watch(&cancel).await.unwrap();
        let timeouts: Vec<i64> = lw
            .watch_calls()
            .iter()
            .map(|o| o.timeout_seconds.unwrap())
            .collect();
        assert_eq!(timeouts.len(), 20);
        assert!(
            timeouts.iter().all(|t| (low..=high).contains(t)),
            "{timeouts:?}"
        );
        assert!(
            low == high || timeouts.iter().any(|t| *t != timeouts[0]),
            "random: {timeouts:?}"
        );
    }
}
