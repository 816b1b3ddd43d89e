//! Reflector backoff tests (client-go's reflector_test.go): refused connections and 429s are
//! retried after a backoff without relisting, internal errors within their budget are
//! retried at once, and failing rounds back off. All on tokio's paused clock, so elapsed
//! times are exact sums of the delays.

mod reflector_support;

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{StatusReason, WatchEvent};
use clientgo_informer::{BackoffConfig, FailureKind, Reflector, ReflectorOptions};
use reflector_support::*;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

fn options(backoff: BackoffConfig) -> ReflectorOptions {
    ReflectorOptions {
        name: "test".into(),
        use_watch_list: false,
        backoff,
        ..ReflectorOptions::default()
    }
}

/// 1 s, 2 s, 4 s, ... without jitter: elapsed times tell how many delays were taken.
fn exact_backoff() -> BackoffConfig {
    BackoffConfig {
        initial: Duration::from_secs(1),
        jitter: 0.0,
        ..BackoffConfig::default()
    }
}

// TestReflectorListAndWatchInitConnBackoff: refused connections back off exponentially, then
// flatten at the cap; the list is not repeated.
#[tokio::test(start_paused = true)]
async fn test_reflector_list_and_watch_init_conn_backoff() {
    let max = Duration::from_millis(50);
    // (failures, lower bound, upper bound): jitter 1.0 puts each delay in [d, 2d).
    for (fails, low, high) in [
        (5, Duration::from_millis(31), Duration::from_millis(62)),
        // 1+2+...+32 = 63 ms, then 34 delays at the 50 ms cap.
        (
            40,
            Duration::from_millis(63 + 34 * 50),
            Duration::from_millis(2 * (63 + 34 * 50)),
        ),
    ] {
        let cancel = CancellationToken::new();
        let lw = FakeLw::new(|_, _| Ok(list("1", vec![])), {
            let cancel = cancel.clone();
            move |n, _| {
                if n <= fails {
                    return Err(connection_refused());
                }
                cancel.cancel();
                Ok(open_with(vec![]))
            }
        });
        let backoff = BackoffConfig {
            initial: Duration::from_millis(1),
            cap: max,
            reset_interval: Duration::from_secs(3600),
            ..BackoffConfig::default()
        };
        let r = Reflector::new(lw.clone(), RecordingStore::new() as _, options(backoff));
        let start = Instant::now();
        r.list_and_watch(&cancel).await.unwrap();
        let elapsed = start.elapsed();
        // tokio's timer fires on whole milliseconds, rounding each delay up.
        let high = high + Duration::from_millis(fails as u64);
        assert!(
            elapsed >= low && elapsed < high,
            "{fails} failures took {elapsed:?}"
        );
        assert_eq!(lw.list_calls().len(), 1);
        assert_eq!(lw.watch_calls().len(), fails + 1);
    }
}

// TestBackoffOnTooManyRequests: a 429 on the watch request and a 429 ERROR event each cost
// one backoff delay.
#[tokio::test(start_paused = true)]
async fn test_backoff_on_too_many_requests() {
    let lw = FakeLw::new(
        |_, _| Ok(list("1", vec![])),
        |n, _| match n {
            1 => Err(too_many_requests()),
            2 => Ok(open_with(vec![error_event(too_many_requests())])),
            // Closed at once: a very short watch ends the round.
            _ => Ok(closed()),
        },
    );
    let r = Reflector::new(
        lw.clone(),
        RecordingStore::new() as _,
        options(exact_backoff()),
    );
    let start = Instant::now();
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(start.elapsed(), Duration::from_secs(1 + 2), "two delays");
    assert_eq!(lw.watch_calls().len(), 3);
    let failure = r.last_failure().unwrap();
    assert_eq!(failure.kind, FailureKind::ServerSilent, "{failure}");
}

// TestNoRelistOnTooManyRequests: 429s on the watch request never cause a relist.
#[tokio::test(start_paused = true)]
async fn test_no_relist_on_too_many_requests() {
    let lw = FakeLw::new(
        |_, _| Ok(list("1", vec![])),
        |n, _| {
            if n < 5 {
                Err(too_many_requests())
            } else {
                Ok(closed())
            }
        },
    );
    let r = Reflector::new(
        lw.clone(),
        RecordingStore::new() as _,
        options(exact_backoff()),
    );
    r.list_and_watch(&CancellationToken::new()).await.unwrap();
    assert_eq!(lw.list_calls().len(), 1);
    assert_eq!(lw.watch_calls().len(), 5);
    let rvs: Vec<_> = lw
        .watch_calls()
        .into_iter()
        .map(|o| o.resource_version)
        .collect();
    assert!(rvs.iter().all(|rv| rv.as_deref() == Some("1")));
}

// TestRetryInternalError: ERROR 500 events are answered by an immediate re-watch while the
// budget lasts (from the first error of a series; a quiet minute starts a new series).
#[tokio::test(start_paused = true)]
async fn test_retry_internal_error() {
    for (max, rewind_at, want_retries) in [
        (Duration::ZERO, 0, 0),
        (Duration::from_secs(30), 0, 31),
        (Duration::from_secs(30), 10, 40),
    ] {
        let lw = FakeLw::new(
            |_, _| Ok(list("1", vec![])),
            move |n, _| {
                // Each watch fails a second after it starts; one of them a minute later.
                let delay = if n == rewind_at { 61 } else { 1 };
                Ok(scripted(vec![
                    Step::Sleep(Duration::from_secs(delay)),
                    Step::Event(error_event(status(
                        500,
                        StatusReason::InternalError,
                        "etcdserver: no leader",
                    ))),
                ]))
            },
        );
        let r = Reflector::new(
            lw.clone(),
            RecordingStore::new() as _,
            ReflectorOptions {
                max_internal_error_retry_duration: max,
                ..options(exact_backoff())
            },
        );
        r.list_and_watch(&CancellationToken::new()).await.unwrap();
        assert_eq!(
            lw.watch_calls().len() - 1,
            want_retries,
            "max {max:?}, rewind at {rewind_at}"
        );
        assert_eq!(lw.list_calls().len(), 1);
    }
}

// Failing rounds are spaced by the backoff ([0.8, 1.6), [1.6, 3.2), ... up to [30, 60) s), so
// an unhealthy server sees about 0.22 requests a second.
#[tokio::test(start_paused = true)]
async fn failing_rounds_back_off_to_the_cap() {
    let lw = FakeLw::new(
        |_, _| Err(status(503, StatusReason::ServiceUnavailable, "unavailable")),
        |_, _| panic!("no watch without a list"),
    );
    let r = Arc::new(Reflector::new(
        lw.clone(),
        RecordingStore::new() as _,
        options(BackoffConfig::default()),
    ));
    let cancel = CancellationToken::new();
    let run = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.run(cancel).await })
    };
    let start = Instant::now();
    let mut at = Vec::new();
    for n in 1..=12 {
        lw.wait_for_list_calls(n).await;
        at.push(Instant::now());
    }
    cancel.cancel();
    run.await.unwrap();
    // As in client-go, the steps start over once 2 minutes have passed since they last did,
    // failing or not: the delay taken after the round at `at[i]` follows that rule.
    let mut last_reset = start;
    let mut base = 0.8f64;
    let mut resets = 0;
    for pair in at.windows(2) {
        if pair[0] - last_reset > Duration::from_secs(120) {
            (last_reset, base) = (pair[0], 0.8);
            resets += 1;
        }
        let gap = (pair[1] - pair[0]).as_secs_f64();
        // tokio's timer fires on whole milliseconds, rounding each delay up.
        assert!(
            gap >= base && gap <= 2.0 * base + 0.001,
            "gap {gap} for step {base}"
        );
        base = (base * 2.0).min(30.0);
    }
    assert!(resets >= 1, "12 rounds take more than 2 minutes");
    assert_eq!(r.last_failure().unwrap().kind, FailureKind::ServerError);
}

// A watch that ends within a second without an event: backoff, then relist.
#[tokio::test(start_paused = true)]
async fn very_short_watch_backs_off_and_relists() {
    let lw = FakeLw::new(
        |_, _| Ok(list("1", vec![])),
        |n, _| {
            Ok(if n == 1 {
                scripted(vec![Step::Fail])
            } else {
                open_with(vec![])
            })
        },
    );
    let r = Arc::new(Reflector::new(
        lw.clone(),
        RecordingStore::new() as _,
        options(exact_backoff()),
    ));
    let cancel = CancellationToken::new();
    let run = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.run(cancel).await })
    };
    let start = Instant::now();
    lw.wait_for_watch_calls(2).await;
    assert_eq!(start.elapsed(), Duration::from_secs(1), "one backoff delay");
    assert_eq!(lw.list_rvs(), ["0", "1"]);
    cancel.cancel();
    run.await.unwrap();
}

// A watch that breaks after events resumes at once from the last event, without a relist;
// one that delivers undecodable data relists after a backoff.
#[tokio::test(start_paused = true)]
async fn broken_stream_rewatches_undecodable_stream_relists() {
    let lw = FakeLw::new(
        |n, _| {
            Ok(if n == 1 {
                list("1", vec![])
            } else {
                list("3", vec![pod("a", "2")])
            })
        },
        |n, _| {
            Ok(match n {
                1 => scripted(vec![
                    Step::Event(WatchEvent::Added(pod("a", "2"))),
                    Step::Fail,
                ]),
                2 => scripted(vec![Step::Raw(b"{\"type\":\"ADDED\",\"object\":7}\n")]),
                _ => open_with(vec![]),
            })
        },
    );
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(
        lw.clone(),
        store.clone() as _,
        options(exact_backoff()),
    ));
    let cancel = CancellationToken::new();
    let run = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.run(cancel).await })
    };
    // The second watch fails as soon as it is read, before this task runs again.
    lw.wait_for_watch_calls(2).await;
    let failure = r.last_failure().unwrap();
    assert_eq!(failure.kind, FailureKind::Decode, "{failure}");
    lw.wait_for_watch_calls(3).await;
    assert_eq!(r.last_failure(), None, "cleared by the relist");
    cancel.cancel();
    run.await.unwrap();
    let rvs: Vec<_> = lw
        .watch_calls()
        .into_iter()
        .map(|o| o.resource_version.unwrap())
        .collect();
    assert_eq!(rvs, ["1", "2", "3"]);
    assert_eq!(lw.list_rvs(), ["0", "2"]);
    assert_eq!(store.items(), ["a@2"]);
}
