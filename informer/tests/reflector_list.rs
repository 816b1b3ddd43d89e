//! Reflector LIST tests (client-go's reflector_test.go): which resourceVersion and page size
//! each list uses, the fallbacks for expired and too-large versions, and the periodic resync.
//! All on tokio's paused clock.

mod reflector_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use clientgo_apimachinery::{StatusCause, StatusDetails, StatusReason};
use clientgo_informer::{
    CAUSE_RESOURCE_VERSION_TOO_LARGE, ListWatchError, Reflector, ReflectorOptions,
};
use clientgo_rest::ListParams;
use reflector_support::*;
use tokio_util::sync::CancellationToken;

fn options() -> ReflectorOptions {
    ReflectorOptions {
        name: "test".into(),
        use_watch_list: false,
        ..ReflectorOptions::default()
    }
}

/// A ListerWatcher whose list is `list`, and whose watches cancel the current round (these
/// tests look at lists only). Returns it with the token to hand to each round.
struct Rounds {
    lw: FakeLw,
    cancel: Arc<parking_lot::Mutex<CancellationToken>>,
}

impl Rounds {
    fn new(
        list: impl FnMut(
            usize,
            &ListParams,
        ) -> Result<clientgo_apimachinery::ObjectList<Pod>, ListWatchError>
        + Send
        + 'static,
    ) -> Self {
        let cancel = Arc::new(parking_lot::Mutex::new(CancellationToken::new()));
        let lw = FakeLw::new(list, {
            let cancel = cancel.clone();
            move |_, _| {
                cancel.lock().cancel();
                Ok(open_with(vec![]))
            }
        });
        Rounds { lw, cancel }
    }

    /// Runs one list-and-watch round to its end.
    async fn round(&self, r: &Reflector<Pod, FakeLw>) -> Result<(), ListWatchError> {
        let cancel = CancellationToken::new();
        *self.cancel.lock() = cancel.clone();
        r.list_and_watch(&cancel).await
    }
}

fn page_of(options: &ListParams, all: &[Pod], rv: &str) -> clientgo_apimachinery::ObjectList<Pod> {
    match options.continue_token.as_deref() {
        None => list_page(rv, "C1", all[0..4].to_vec()),
        Some("C1") => list_page(rv, "C2", all[4..8].to_vec()),
        Some("C2") => list_page(rv, "", all[8..10].to_vec()),
        Some(other) => panic!("unknown continue token {other}"),
    }
}

// TestReflectorWatchListPageSize: a configured page size applies to every list, including
// relists at a specific resourceVersion.
#[tokio::test(start_paused = true)]
async fn test_reflector_watch_list_page_size() {
    let all = pods(0..10);
    let rounds = Rounds::new(move |_, o| {
        assert_eq!(o.limit, Some(4), "every page asks for 4: {o:?}");
        Ok(page_of(o, &all, "10"))
    });
    let store = RecordingStore::new();
    let r = Reflector::new(
        rounds.lw.clone(),
        store.clone() as _,
        ReflectorOptions {
            page_size: Some(4),
            ..options()
        },
    );
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 10);
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 10);
    assert_eq!(rounds.lw.list_rvs(), ["0", "", "", "10", "", ""]);
}

// TestReflectorNotPaginatingNotConsistentReads: a relist at a specific resourceVersion asks
// for everything at once, so that the watch cache can serve it.
#[tokio::test(start_paused = true)]
async fn test_reflector_not_paginating_not_consistent_reads() {
    let rounds = Rounds::new(|n, o| match n {
        1 => Ok(list("10", vec![])),
        _ => {
            assert_eq!(o.resource_version.as_deref(), Some("10"));
            assert_eq!(o.limit, None, "no limit for a specific resourceVersion");
            Ok(list("10", pods(0..10)))
        }
    });
    let store = RecordingStore::new();
    let r = Reflector::new(rounds.lw.clone(), store.clone() as _, options());
    rounds.round(&r).await.unwrap();
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 10);
    assert_eq!(rounds.lw.list_calls()[0].limit, Some(500));
}

// TestReflectorPaginatingNonConsistentReadsIfWatchCacheDisabled: when the first list (at
// "0") comes back in pages there is no watch cache, so relists keep the default page size.
#[tokio::test(start_paused = true)]
async fn test_reflector_paginating_non_consistent_reads_if_watch_cache_disabled() {
    let all = pods(0..10);
    let rounds = Rounds::new(move |_, o| {
        assert_eq!(o.limit, Some(500), "the default page size: {o:?}");
        Ok(page_of(o, &all, "10"))
    });
    let store = RecordingStore::new();
    let r = Reflector::new(rounds.lw.clone(), store.clone() as _, options());
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 10);
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 10);
    assert_eq!(rounds.lw.list_rvs(), ["0", "", "", "10", "", ""]);
}

// TestReflectorResyncWithResourceVersion: the relist uses the last synced resourceVersion,
// so the reflector never goes back in time.
#[tokio::test(start_paused = true)]
async fn test_reflector_resync_with_resource_version() {
    let rounds = Rounds::new(|_, o| match o.resource_version.as_deref() {
        Some("0") => Ok(list("10", pods(0..4))),
        Some("10") => Ok(list("11", pods(0..8))),
        other => panic!("unexpected resourceVersion {other:?}"),
    });
    let store = RecordingStore::new();
    let r = Reflector::new(rounds.lw.clone(), store.clone() as _, options());
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(rounds.lw.list_rvs(), ["0", "10"]);
}

// TestReflectorExpiredExactResourceVersion: an expired resourceVersion (a server without
// watch cache, 1.16 and earlier) is retried at once as a consistent read.
#[tokio::test(start_paused = true)]
async fn test_reflector_expired_exact_resource_version() {
    let rounds = Rounds::new(|_, o| match o.resource_version.as_deref() {
        Some("0") => Ok(list("10", pods(0..4))),
        Some("10") => Err(expired()),
        None => Ok(list("11", pods(0..8))),
        other => panic!("unexpected resourceVersion {other:?}"),
    });
    let store = RecordingStore::new();
    let r = Reflector::new(rounds.lw.clone(), store.clone() as _, options());
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(rounds.lw.list_rvs(), ["0", "10", ""]);
    assert_eq!(r.last_sync_resource_version(), "11");
    assert_eq!(r.last_error(), None);
}

// TestReflectorFullListIfExpired: an expired continue token falls back to one full list at
// the same resourceVersion (the pager's FullListIfExpired).
#[tokio::test(start_paused = true)]
async fn test_reflector_full_list_if_expired() {
    let all = pods(0..8);
    let rounds = Rounds::new(move |_, o| {
        let key = (
            o.resource_version.as_deref(),
            o.continue_token.as_deref(),
            o.limit,
        );
        match key {
            (Some("0"), None, Some(4)) => Ok(list("10", all[0..4].to_vec())),
            (Some("10"), None, Some(4)) => Ok(list_page("11", "C1", all[0..4].to_vec())),
            (None, Some("C1"), Some(4)) => Err(expired()),
            (Some("10"), None, None) => Ok(list("11", all.clone())),
            other => panic!("unexpected list options {other:?}"),
        }
    });
    let store = RecordingStore::new();
    let r = Reflector::new(
        rounds.lw.clone(),
        store.clone() as _,
        ReflectorOptions {
            page_size: Some(4),
            ..options()
        },
    );
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 4);
    rounds.round(&r).await.unwrap();
    assert_eq!(store.len(), 8);
    assert_eq!(rounds.lw.list_rvs(), ["0", "10", "", "10"]);
}

fn too_large(form: usize) -> ListWatchError {
    let mut error = status(504, StatusReason::Timeout, "too large resource version");
    let ListWatchError::Status(s) = &mut error else {
        unreachable!()
    };
    match form {
        // 1.18.6 and later.
        0 => {
            s.details = Some(StatusDetails {
                causes: vec![StatusCause {
                    reason: CAUSE_RESOURCE_VERSION_TOO_LARGE.into(),
                    ..StatusCause::default()
                }],
                ..StatusDetails::default()
            });
        }
        // 1.17.0 - 1.18.5.
        1 => {
            s.details = Some(StatusDetails {
                causes: vec![StatusCause {
                    message: "Too large resource version".into(),
                    ..StatusCause::default()
                }],
                ..StatusDetails::default()
            });
        }
        // Before 1.17.
        _ => s.message = "Too large resource version".into(),
    }
    error
}

// TestReflectorFullListIfTooLarge: a resourceVersion newer than the server's (a watch cache
// behind the others) is retried at once as a consistent read, in all three error forms.
#[tokio::test(start_paused = true)]
async fn test_reflector_full_list_if_too_large() {
    let version = AtomicUsize::new(30);
    let rounds = Rounds::new(move |_, o| match o.resource_version.as_deref() {
        Some("0") => Ok(list("20", vec![])),
        Some("20") => Err(too_large(0)),
        Some("30") => Err(too_large(1)),
        Some("40") => Err(too_large(2)),
        None => Ok(list(
            &version.fetch_add(10, Ordering::SeqCst).to_string(),
            vec![],
        )),
        other => panic!("unexpected resourceVersion {other:?}"),
    });
    let r = Reflector::new(rounds.lw.clone(), RecordingStore::new() as _, options());
    rounds.round(&r).await.unwrap();
    for _ in 0..3 {
        rounds.round(&r).await.unwrap();
    }
    assert_eq!(rounds.lw.list_rvs(), ["0", "20", "", "30", "", "40", ""]);
}

// An expired list whose consistent retry fails too: the round fails with that error.
#[tokio::test(start_paused = true)]
async fn expired_list_whose_retry_fails_returns_the_error() {
    let rounds = Rounds::new(|_, o| match o.resource_version.as_deref() {
        Some("0") => Err(expired()),
        _ => Err(status(
            503,
            StatusReason::ServiceUnavailable,
            "etcd unavailable",
        )),
    });
    let r = Reflector::new(rounds.lw.clone(), RecordingStore::new() as _, options());
    let error = rounds.round(&r).await.unwrap_err();
    assert_eq!(error.code(), 503);
    assert_eq!(rounds.lw.list_rvs(), ["0", ""]);
    // The next round keeps reading consistently until a list succeeds.
    rounds.round(&r).await.unwrap_err();
    assert_eq!(rounds.lw.list_rvs(), ["0", "", ""]);
}

// kubernetes/kubernetes#86430: a watch that expires relists at the last resourceVersion
// (served by the watch cache), and falls back to "" only if that list says expired too.
#[tokio::test(start_paused = true)]
async fn expired_watch_relists_at_the_last_resource_version_first() {
    let lw = FakeLw::new(
        |_, o| match o.resource_version.as_deref() {
            Some("0") => Ok(list("10", vec![])),
            Some("12") => Err(expired()),
            None => Ok(list("20", vec![])),
            other => panic!("unexpected resourceVersion {other:?}"),
        },
        |n, _| {
            Ok(match n {
                1 => open_with(vec![
                    clientgo_apimachinery::WatchEvent::Added(pod("a", "12")),
                    error_event(expired()),
                ]),
                _ => open_with(vec![]),
            })
        },
    );
    let r = Arc::new(Reflector::new(
        lw.clone(),
        RecordingStore::new() as _,
        options(),
    ));
    let cancel = CancellationToken::new();
    let run = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.run(cancel).await })
    };
    lw.wait_for_watch_calls(2).await;
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(lw.list_rvs(), ["0", "12", ""]);
    assert_eq!(
        lw.watch_calls()[1].resource_version.as_deref(),
        Some("20"),
        "watching from the consistent list"
    );
}

// TestReflectorResync: the store is resynced every period while watching.
#[tokio::test(start_paused = true)]
async fn test_reflector_resync() {
    let lw = FakeLw::new(|_, _| Ok(list("0", vec![])), |_, _| Ok(open_with(vec![])));
    let store = RecordingStore::new();
    let r = Arc::new(Reflector::new(
        lw.clone(),
        store.clone() as _,
        ReflectorOptions {
            resync_period: Some(Duration::from_millis(1)),
            ..options()
        },
    ));
    let cancel = CancellationToken::new();
    let run = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.run(cancel).await })
    };
    let start = tokio::time::Instant::now();
    store
        .wait_for(|ops| ops.iter().filter(|op| **op == Op::Resync).count() == 2)
        .await;
    assert_eq!(start.elapsed(), Duration::from_millis(2));
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(
        lw.watch_calls().len(),
        1,
        "resync does not disturb the watch"
    );
}

// ShouldResync is asked each period; false skips that resync.
#[tokio::test(start_paused = true)]
async fn should_resync_gates_each_resync() {
    let lw = FakeLw::new(|_, _| Ok(list("1", vec![])), |_, _| Ok(open_with(vec![])));
    let store = RecordingStore::new();
    let asked = Arc::new(AtomicUsize::new(0));
    let allow = Arc::new(AtomicBool::new(false));
    let r = Arc::new(Reflector::new(
        lw,
        store.clone() as _,
        ReflectorOptions {
            resync_period: Some(Duration::from_secs(30)),
            should_resync: Some({
                let (asked, allow) = (asked.clone(), allow.clone());
                Arc::new(move || {
                    asked.fetch_add(1, Ordering::SeqCst);
                    allow.load(Ordering::SeqCst)
                })
            }),
            ..options()
        },
    ));
    let cancel = CancellationToken::new();
    let run = {
        let (r, cancel) = (r.clone(), cancel.clone());
        tokio::spawn(async move { r.run(cancel).await })
    };
    store.wait_for(|ops| ops.len() == 1).await;
    tokio::time::sleep(Duration::from_secs(95)).await;
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    assert!(!store.ops().contains(&Op::Resync));
    allow.store(true, Ordering::SeqCst);
    store.wait_for(|ops| ops.contains(&Op::Resync)).await;
    assert_eq!(asked.load(Ordering::SeqCst), 4);
    cancel.cancel();
    run.await.unwrap();
}
