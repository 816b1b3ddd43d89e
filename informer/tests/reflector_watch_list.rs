//! Streaming-list tests (client-go's reflector_test.go "UseWatchList enabled" and
//! reflector_watchlist_test.go): the request, the store replaced once at the closing bookmark,
//! the same watch going on, the retries, and the fallbacks to LIST+WATCH when the server
//! rejects the request or never ends the initial events. All on tokio's paused clock.

mod reflector_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clientgo_apimachinery::{Bookmark, StatusReason, WatchEvent};
use clientgo_informer::{BackoffConfig, Delta, RealFIFO, Reflector, ReflectorOptions};
use clientgo_rest::{ListParams, WatchParams};
use parking_lot::Mutex;
use reflector_support::*;
use tokio::sync::Notify;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn options() -> ReflectorOptions {
    ReflectorOptions {
        name: "test".into(),
        initial_events_timeout: Duration::from_secs(30),
        ..ReflectorOptions::default()
    }
}

fn spawn_run(
    r: &Arc<Reflector<Pod, FakeLw>>,
    cancel: &CancellationToken,
) -> tokio::task::JoinHandle<()> {
    let (r, cancel) = (r.clone(), cancel.clone());
    tokio::spawn(async move { r.run(cancel).await })
}

fn streaming(rv: Option<&str>) -> WatchParams {
    WatchParams {
        resource_version: rv.map(Into::into),
        resource_version_match: Some("NotOlderThan".into()),
        send_initial_events: Some(true),
        allow_watch_bookmarks: true,
        ..WatchParams::default()
    }
}

fn plain(rv: &str) -> WatchParams {
    WatchParams {
        resource_version: Some(rv.into()),
        allow_watch_bookmarks: true,
        ..WatchParams::default()
    }
}

fn without_timeout(calls: Vec<WatchParams>) -> Vec<WatchParams> {
    calls
        .into_iter()
        .map(|mut c| {
            assert!((300..=600).contains(&c.timeout_seconds.take().unwrap()));
            c
        })
        .collect()
}

fn feeds_lw(
    list: impl FnMut(
        usize,
        &ListParams,
    ) -> Result<
        clientgo_apimachinery::ObjectList<Pod>,
        clientgo_informer::ListWatchError,
    > + Send
    + 'static,
) -> (FakeLw, Arc<Mutex<Vec<Feed>>>) {
    let feeds: Arc<Mutex<Vec<Feed>>> = Arc::default();
    let lw = FakeLw::new(list, {
        let feeds = feeds.clone();
        move |_, _| {
            let (watch, feed) = fed();
            feeds.lock().push(feed);
            Ok(watch)
        }
    });
    (lw, feeds)
}

// TestReflectorListAndWatch "UseWatchList enabled" / TestWatchList: one streaming request, no
// LIST; nothing reaches the store before the closing bookmark; then one Replace and the same
// watch goes on.
#[tokio::test(start_paused = true)]
async fn test_watch_list_success() {
    let (lw, feeds) = feeds_lw(|_, _| panic!("no LIST with a streaming list"));
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(lw.clone(), store.clone() as _, options()));
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    lw.wait_for_watch_calls(1).await;
    let feed = feeds.lock()[0].clone();
    feed.send(WatchEvent::Added(pod("foo", "1")));
    feed.send(WatchEvent::Added(pod("bar", "2")));
    // A bookmark without the annotation does not end the initial events.
    feed.send(WatchEvent::Bookmark(Bookmark::new("2")));
    feed.send(end_bookmark("3"));
    feed.send(WatchEvent::Modified(pod("foo", "4")));
    feed.send(WatchEvent::Added(pod("baz", "5")));
    store.wait_for(|ops| ops.len() == 3).await;
    assert_eq!(
        store.ops(),
        [
            Op::Replace(vec!["foo@1".into(), "bar@2".into()], "3".into()),
            Op::Update("foo@4".into()),
            Op::Add("baz@5".into()),
        ]
    );
    assert_eq!(r.last_sync_resource_version(), "5");
    cancel.cancel();
    run.await.unwrap();
    assert!(feed.is_stopped());
    assert!(lw.list_calls().is_empty());
    assert_eq!(without_timeout(lw.watch_calls()), [streaming(None)]);
}

// TestWatchList "not synced before the bookmark", and "stopping after sync issues a plain
// watch": when the streamed watch ends cleanly, the reflector re-watches from the bookmark
// without a new streaming list.
#[tokio::test(start_paused = true)]
async fn after_sync_a_clean_end_rewatches_plainly() {
    let (lw, feeds) = feeds_lw(|_, _| panic!("no LIST"));
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(lw.clone(), store.clone() as _, options()));
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    lw.wait_for_watch_calls(1).await;
    let feed = feeds.lock()[0].clone();
    feed.send(WatchEvent::Added(pod("foo", "1")));
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(store.ops().is_empty(), "not synced before the bookmark");
    assert_eq!(r.last_sync_resource_version(), "");
    feed.send(end_bookmark("7"));
    feed.send(WatchEvent::Modified(pod("foo", "8")));
    store.wait_for(|ops| ops.len() == 2).await;
    // The server ends the watch.
    drop(feeds.lock().remove(0));
    drop(feed);
    lw.wait_for_watch_calls(2).await;
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        without_timeout(lw.watch_calls()),
        [streaming(None), plain("8")]
    );
}

// TestWatchList "stopping before sync issues a new watch-list": a stream that ends before its
// bookmark is started over, still as a streaming list (after a backoff delay: client-go
// starts over at once).
#[tokio::test(start_paused = true)]
async fn before_sync_a_clean_end_starts_the_streaming_list_over() {
    let lw = FakeLw::new(
        |_, _| panic!("no LIST"),
        |n, _| {
            Ok(match n {
                1 => scripted(vec![
                    Step::Event(WatchEvent::Added(pod("foo", "1"))),
                    Step::Sleep(Duration::from_secs(2)),
                ]),
                _ => open_with(vec![WatchEvent::Added(pod("bar", "2")), end_bookmark("2")]),
            })
        },
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(lw.clone(), store.clone() as _, options()));
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    store.wait_for(|ops| !ops.is_empty()).await;
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(store.ops(), [Op::Replace(vec!["bar@2".into()], "2".into())]);
    assert_eq!(
        without_timeout(lw.watch_calls()),
        [streaming(None), streaming(None)]
    );
}

// TestWatchList "fallback on error": a server that rejects sendInitialEvents gets LIST+WATCH
// for this round; the next round tries streaming again (client-go).
#[tokio::test(start_paused = true)]
async fn rejected_streaming_list_falls_back_to_list_and_watch() {
    let lw = FakeLw::new(
        |_, _| Ok(list("10", vec![pod("a", "9")])),
        |n, o| {
            if o.send_initial_events == Some(true) {
                return Err(status(
                    422,
                    StatusReason::Invalid,
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
                ));
            }
            // The first plain watch expires: a new round.
            Ok(if n == 2 {
                open_with(vec![error_event(expired())])
            } else {
                open_with(vec![])
            })
        },
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(lw.clone(), store.clone() as _, options()));
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    lw.wait_for_watch_calls(4).await;
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        without_timeout(lw.watch_calls()),
        [
            streaming(None),
            plain("10"),
            streaming(Some("10")),
            plain("10")
        ]
    );
    assert_eq!(lw.list_rvs(), ["0", "10"]);
    assert_eq!(store.items(), ["a@9"]);
}

/// Counts WARN events whose message contains a text (the reflector logs through `tracing`).
struct WarnCounter {
    needle: &'static str,
    count: Arc<std::sync::atomic::AtomicUsize>,
}

impl tracing::Subscriber for WarnCounter {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        if *event.metadata().level() == tracing::Level::WARN {
            let mut message = Message(String::new());
            event.record(&mut message);
            if message.0.contains(self.needle) {
                self.count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

// A server or proxy that ignores sendInitialEvents never sends the closing bookmark (here an
// old server streams the current state and then stays quiet): after the deadline the
// reflector says so once in the log, falls back to LIST+WATCH and never tries streaming
// lists again.
#[tokio::test(start_paused = true)]
async fn missing_bookmark_falls_back_within_the_deadline_for_good() {
    let warnings = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let _log = tracing::subscriber::set_default(WarnCounter {
        needle: "did not end the initial events",
        count: warnings.clone(),
    });
    // What the reflector reported when it fell back, seen from inside the first LIST.
    let reflector_slot = Arc::new(std::sync::OnceLock::<Arc<Reflector<Pod, FakeLw>>>::new());
    let seen_at_fallback: Arc<Mutex<Option<(Instant, String)>>> = Arc::default();
    let lw = FakeLw::new(
        {
            let (slot, seen) = (reflector_slot.clone(), seen_at_fallback.clone());
            move |n, _| {
                if n == 1 {
                    let error = slot.get().unwrap().last_error().unwrap();
                    *seen.lock() = Some((Instant::now(), error));
                }
                Ok(list("10", vec![pod("a", "9")]))
            }
        },
        |n, o| {
            Ok(if o.send_initial_events == Some(true) {
                open_with(vec![WatchEvent::Added(pod("a", "9"))])
            } else if n == 2 {
                open_with(vec![error_event(expired())])
            } else {
                open_with(vec![])
            })
        },
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(lw.clone(), store.clone() as _, options()));
    reflector_slot.set(r.clone()).ok().unwrap();
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let run = spawn_run(&r, &cancel);
    lw.wait_for_watch_calls(3).await;
    cancel.cancel();
    run.await.unwrap();
    let (at, error) = seen_at_fallback.lock().take().unwrap();
    assert_eq!(
        at - start,
        Duration::from_secs(30),
        "the initial_events_timeout"
    );
    assert_eq!(
        error,
        "streaming list failed (server silent): no progress toward the initial-events-end \
         bookmark for 30s"
    );
    assert_eq!(
        warnings.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "logged once"
    );
    assert_eq!(
        without_timeout(lw.watch_calls()),
        [streaming(None), plain("10"), plain("10")],
        "no streaming list after the timeout"
    );
    assert_eq!(lw.list_rvs(), ["0", "10"]);
    assert_eq!(store.ops()[0], Op::Replace(vec!["a@9".into()], "10".into()));
}

// The deadline also bounds a watch request that does not answer.
#[tokio::test(start_paused = true)]
async fn silent_watch_request_falls_back_within_the_deadline() {
    struct Silent(FakeLw);
    impl clientgo_informer::ListerWatcher<Pod> for Silent {
        async fn list(
            &self,
            o: &ListParams,
        ) -> Result<clientgo_apimachinery::ObjectList<Pod>, clientgo_informer::ListWatchError>
        {
            self.0.list(o).await
        }
        async fn watch(
            &self,
            o: &WatchParams,
        ) -> Result<clientgo_watch::Watch<Pod>, clientgo_informer::ListWatchError> {
            if o.send_initial_events == Some(true) {
                std::future::pending::<()>().await;
            }
            self.0.watch(o).await
        }
    }
    let lw = FakeLw::new(|_, _| Ok(list("4", vec![])), |_, _| Ok(open_with(vec![])));
    let store = RecordingStore::new();
    let r = Reflector::new(Silent(lw.clone()), store.clone() as _, options());
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let round = async {
        r.list_and_watch(&cancel).await.unwrap();
    };
    let check = async {
        lw.wait_for_watch_calls(1).await;
        assert_eq!(start.elapsed(), Duration::from_secs(30));
        cancel.cancel();
    };
    tokio::join!(round, check);
    assert_eq!(lw.list_rvs(), ["0"]);
    assert_eq!(without_timeout(lw.watch_calls()), [plain("4")]);
}

// TestWatchList "429 retry": a throttled streaming list is retried after a backoff.
#[tokio::test(start_paused = true)]
async fn throttled_streaming_list_is_retried_after_a_backoff() {
    let lw = FakeLw::new(
        |_, _| panic!("no LIST"),
        |n, _| match n {
            1 => Err(too_many_requests()),
            2 => Ok(open_with(vec![error_event(too_many_requests())])),
            _ => Ok(open_with(vec![
                WatchEvent::Added(pod("a", "1")),
                end_bookmark("1"),
            ])),
        },
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(
        lw.clone(),
        store.clone() as _,
        ReflectorOptions {
            backoff: clientgo_informer::BackoffConfig {
                initial: Duration::from_secs(1),
                jitter: 0.0,
                ..Default::default()
            },
            ..options()
        },
    ));
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let run = spawn_run(&r, &cancel);
    store.wait_for(|ops| !ops.is_empty()).await;
    assert_eq!(start.elapsed(), Duration::from_secs(1 + 2));
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(without_timeout(lw.watch_calls()), vec![streaming(None); 3]);
}

// TestWatchListResourceVersion: after a 410 a new round streams from the last resourceVersion;
// if that is expired too, from the newest state ("").
#[tokio::test(start_paused = true)]
async fn expired_streaming_list_restarts_from_the_newest_state() {
    let lw = FakeLw::new(
        |_, _| panic!("no LIST"),
        |n, _| match n {
            1 => Ok(open_with(vec![end_bookmark("5"), error_event(expired())])),
            2 => Err(expired()),
            _ => Ok(open_with(vec![
                WatchEvent::Added(pod("a", "8")),
                end_bookmark("9"),
            ])),
        },
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(lw.clone(), store.clone() as _, options()));
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    store.wait_for(|ops| ops.len() == 2).await;
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        without_timeout(lw.watch_calls()),
        [streaming(None), streaming(Some("5")), streaming(None)]
    );
    assert_eq!(
        store.ops(),
        [
            Op::Replace(vec![], "5".into()),
            Op::Replace(vec!["a@8".into()], "9".into()),
        ]
    );
    assert_eq!(r.last_sync_resource_version(), "9");
}

// TestNewReflectorWithDisablementWatchList: a client that cannot stream lists, or the option
// off, means LIST+WATCH from the start.
#[tokio::test(start_paused = true)]
async fn streaming_lists_off_when_unsupported_or_disabled() {
    for (supported, enabled) in [(false, true), (true, false)] {
        let mut lw = FakeLw::new(|_, _| Ok(list("3", vec![])), |_, _| Ok(open_with(vec![])));
        if !supported {
            lw = lw.without_watch_list();
        }
        let r = Arc::new(Reflector::new(
            lw.clone(),
            RecordingStore::new() as _,
            ReflectorOptions {
                use_watch_list: enabled,
                ..options()
            },
        ));
        let cancel = CancellationToken::new();
        let run = spawn_run(&r, &cancel);
        lw.wait_for_watch_calls(1).await;
        cancel.cancel();
        run.await.unwrap();
        assert_eq!(lw.list_rvs(), ["0"]);
        assert_eq!(without_timeout(lw.watch_calls()), [plain("3")]);
    }
}

// `Duration::MAX` waits for the closing bookmark as long as it takes (client-go's behaviour).
#[tokio::test(start_paused = true)]
async fn unbounded_initial_events_timeout_waits() {
    let lw = FakeLw::new(
        |_, _| panic!("no LIST"),
        |_, _| {
            Ok(scripted(vec![
                Step::Event(WatchEvent::Added(pod("a", "1"))),
                Step::Sleep(Duration::from_secs(50 * 60)),
                Step::Event(end_bookmark("2")),
                Step::Hang,
            ]))
        },
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(
        lw.clone(),
        store.clone() as _,
        ReflectorOptions {
            initial_events_timeout: Duration::MAX,
            ..options()
        },
    ));
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let run = spawn_run(&r, &cancel);
    store.wait_for(|ops| !ops.is_empty()).await;
    assert_eq!(start.elapsed(), Duration::from_secs(50 * 60));
    assert_eq!(store.ops(), [Op::Replace(vec!["a@1".into()], "2".into())]);
    cancel.cancel();
    run.await.unwrap();
}

/// A queue whose transform marks each object (one more `x` per call) and counts the calls.
fn marking_queue(calls: Arc<AtomicUsize>, called: Arc<Notify>) -> Arc<RealFIFO<Pod>> {
    Arc::new(RealFIFO::new().with_transform(move |mut pod: Pod| {
        pod.metadata
            .annotations
            .entry("transformed".into())
            .or_default()
            .push('x');
        calls.fetch_add(1, Ordering::SeqCst);
        called.notify_waiters();
        pod
    }))
}

// client-go builds the streaming list's temporary store with the transformer: each initial
// object is transformed as it arrives (the reflector holds only transformed objects until
// the bookmark), and once only.
#[tokio::test(start_paused = true)]
async fn initial_events_are_transformed_as_they_arrive() {
    let (lw, feeds) = feeds_lw(|_, _| panic!("no LIST with a streaming list"));
    let (calls, called) = (Arc::new(AtomicUsize::new(0)), Arc::new(Notify::new()));
    let queue = marking_queue(calls.clone(), called.clone());
    let r = Arc::new(Reflector::new(lw.clone(), queue.clone() as _, options()));
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    lw.wait_for_watch_calls(1).await;
    let feed = feeds.lock()[0].clone();
    feed.send(WatchEvent::Added(pod("a", "1")));
    feed.send(WatchEvent::Added(pod("b", "2")));
    feed.send(WatchEvent::Modified(pod("a", "3")));
    wait_until(&called, || calls.load(Ordering::SeqCst) == 3).await;
    assert!(queue.is_empty(), "nothing queued before the bookmark");

    feed.send(end_bookmark("3"));
    let (objects, rv) = queue
        .pop(|deltas, _| match deltas.into_iter().next() {
            Some(Delta::ReplacedAll {
                objects,
                resource_version,
            }) => (objects, resource_version),
            other => panic!("expected the relist, got {other:?}"),
        })
        .await
        .unwrap();
    assert_eq!(rv, "3");
    let marks: Vec<_> = objects
        .iter()
        .map(|o| {
            let mark = &o.metadata.annotations["transformed"];
            format!("{}@{} {mark}", o.metadata.name, o.metadata.resource_version)
        })
        .collect();
    assert_eq!(marks, ["a@3 x", "b@2 x"], "each transformed once");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    cancel.cancel();
    run.await.unwrap();
}

// The fallback deadline measures silence, not the stream's length: a streaming list that
// takes far longer than `initial_events_timeout` but keeps sending is not cut off.
#[tokio::test(start_paused = true)]
async fn a_slow_but_steady_streaming_list_is_not_cut_off() {
    let lw = FakeLw::new(
        |_, _| panic!("no LIST"),
        |_, _| {
            let mut steps = Vec::new();
            for i in 1..=6 {
                steps.push(Step::Sleep(Duration::from_secs(20)));
                steps.push(Step::Event(WatchEvent::Added(pod(
                    &format!("p{i}"),
                    &i.to_string(),
                ))));
            }
            steps.push(Step::Event(end_bookmark("6")));
            steps.push(Step::Hang);
            Ok(scripted(steps))
        },
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(lw.clone(), store.clone() as _, options()));
    let cancel = CancellationToken::new();
    let start = Instant::now();
    let run = spawn_run(&r, &cancel);
    store.wait_for(|ops| !ops.is_empty()).await;
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(120),
        "4× the 30 s timeout"
    );
    let Op::Replace(items, rv) = &store.ops()[0] else {
        panic!("{:?}", store.ops());
    };
    assert_eq!((items.len(), rv.as_str()), (6, "6"));
    assert_eq!(r.last_failure(), None);
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(without_timeout(lw.watch_calls()), [streaming(None)]);
}

// A streaming list that keeps closing before its bookmark is started over after a growing
// backoff delay, not at once.
#[tokio::test(start_paused = true)]
async fn a_streaming_list_that_keeps_closing_backs_off() {
    let opened: Arc<Mutex<Vec<Instant>>> = Arc::default();
    let lw = FakeLw::new(|_, _| panic!("no LIST"), {
        let opened = opened.clone();
        move |n, _| {
            opened.lock().push(Instant::now());
            Ok(if n < 4 {
                // One event (not a "very short" empty watch), then the stream ends.
                scripted(vec![Step::Event(WatchEvent::Added(pod(
                    "a",
                    &n.to_string(),
                )))])
            } else {
                open_with(vec![WatchEvent::Added(pod("a", "4")), end_bookmark("4")])
            })
        }
    });
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(
        lw.clone(),
        store.clone() as _,
        ReflectorOptions {
            backoff: BackoffConfig {
                initial: Duration::from_secs(1),
                jitter: 0.0,
                ..BackoffConfig::default()
            },
            ..options()
        },
    ));
    let cancel = CancellationToken::new();
    let run = spawn_run(&r, &cancel);
    store.wait_for(|ops| !ops.is_empty()).await;
    let opened = opened.lock().clone();
    let gaps: Vec<Duration> = opened.windows(2).map(|w| w[1] - w[0]).collect();
    assert_eq!(
        gaps,
        [
            Duration::from_secs(1),
            Duration::from_secs(2),
            Duration::from_secs(4)
        ]
    );
    assert_eq!(store.ops(), [Op::Replace(vec!["a@4".into()], "4".into())]);
    cancel.cancel();
    run.await.unwrap();
}
