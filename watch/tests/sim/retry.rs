//! The retry watcher over the REST client, against the sim's injected faults.

use std::time::Duration;

use clientgo_apimachinery::{DynamicObject, Object, WatchEvent};
use clientgo_apiserver_sim::SimConfig;
use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch, WatchFault};
use clientgo_rest::{Auth, RestClient, WatchParams};
use clientgo_watch::{ResourceWatchSource, RetryWatchError, RetryWatcher, WatchResource};

use crate::common::{self, config_maps, create, within};

type Watcher = RetryWatcher<DynamicObject, ResourceWatchSource<DynamicObject>>;

/// Only `app=watched` objects are seen; others move the resourceVersion silently.
fn watched() -> WatchParams {
    WatchParams {
        label_selector: Some("app=watched".into()),
        ..WatchParams::default()
    }
}

async fn added(watcher: &mut Watcher) -> String {
    match within("an event", watcher.next()).await {
        Some(Ok(WatchEvent::Added(o))) => o.name().to_owned(),
        other => panic!("expected ADDED, got {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_closes_cuts_malformed_frames_and_refusals() {
    let s = common::start(SimConfig::default()).await;
    let api = config_maps(&s.client, "default");
    let start = s.sim.resource_version().to_string();
    let mut watcher = api.retry_watcher(watched(), &start).unwrap();

    create(&api, "e1", "watched").await;
    assert_eq!(added(&mut watcher).await, "e1");

    // Each fault ends the open watch; the next event still arrives, once, in order.
    let faults = [
        WatchFault::Close,
        WatchFault::CutMidFrame,
        WatchFault::MalformedFrame,
    ];
    for (i, fault) in faults.into_iter().enumerate() {
        assert!(
            s.sim.faults().watches(fault) >= 1,
            "{fault:?} reached the open watch"
        );
        let name = format!("after-{i}");
        create(&api, &name, "watched").await;
        assert_eq!(added(&mut watcher).await, name, "after {fault:?}");
    }

    // A refused re-watch (500 without Retry-After: the client does not retry it) is retried
    // by the watcher after its backoff.
    let injected = s.sim.faults().injected();
    s.sim.faults().fail_next(
        1,
        RequestMatch::new("watch", "configmaps"),
        InjectedError::InternalError,
    );
    assert!(s.sim.close_all_watches() >= 1);
    // The close reaches the open watch asynchronously: the object is created only once the
    // re-watch it causes (driven by polling the watcher) was refused, so its event cannot go
    // out on the old stream.
    let refused_then_created = async {
        within("the re-watch is refused", async {
            while s.sim.faults().injected() == injected {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        })
        .await;
        create(&api, "after-refusal", "watched").await;
    };
    let (name, ()) = tokio::join!(added(&mut watcher), refused_then_created);
    assert_eq!(name, "after-refusal");
    assert_eq!(
        s.sim.faults().injected() - injected,
        1,
        "the re-watch was refused once"
    );
    let last: u64 = watcher.last_resource_version().parse().unwrap();
    assert_eq!(last, s.sim.resource_version());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_watch_is_replaced_after_the_idle_timeout() {
    let s = common::start(SimConfig::default()).await;
    let api = config_maps(&s.client, "default");
    let start = s.sim.resource_version().to_string();
    let source = ResourceWatchSource::new(api.clone(), watched())
        .with_idle_timeout(Duration::from_millis(300));
    let mut watcher = RetryWatcher::new(source, start).unwrap();
    create(&api, "before", "watched").await;
    assert_eq!(added(&mut watcher).await, "before");
    assert!(s.sim.faults().watches(WatchFault::Stall) >= 1);
    create(&api, "after-stall", "watched").await;
    assert_eq!(added(&mut watcher).await, "after-stall");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ends_with_gone_when_its_version_is_compacted() {
    let s = common::start(SimConfig::default()).await;
    let api = config_maps(&s.client, "default");
    let start = s.sim.resource_version().to_string();
    let mut watcher = api.retry_watcher(watched(), &start).unwrap();
    create(&api, "seen", "watched").await;
    assert_eq!(added(&mut watcher).await, "seen");
    // Changes it does not see move the store on; compaction then drops its position.
    create(&api, "unseen-1", "other").await;
    create(&api, "unseen-2", "other").await;
    s.sim.compact();
    s.sim.close_all_watches();
    match within("the end", watcher.next()).await {
        Some(Err(RetryWatchError::Gone(status))) => {
            assert_eq!(status.code, 410);
            assert!(status.is_resource_expired(), "{status}");
        }
        other => panic!("expected Gone, got {other:?}"),
    }
    assert!(watcher.next().await.is_none(), "Gone is the end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bookmarks_carry_it_past_a_compaction() {
    let config = SimConfig::default().with_bookmark_interval(Duration::from_millis(100));
    let s = common::start(config).await;
    let api = config_maps(&s.client, "default");
    let start = s.sim.resource_version().to_string();
    let mut watcher = api.retry_watcher(watched(), &start).unwrap();
    create(&api, "seen", "watched").await;
    assert_eq!(added(&mut watcher).await, "seen");
    create(&api, "unseen", "other").await;
    let current = s.sim.resource_version().to_string();
    // Keep reading (no event will come) until a bookmark has moved it to the current version.
    let deadline = tokio::time::Instant::now() + common::LIMIT;
    while watcher.last_resource_version() != current {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no bookmark advanced the watcher"
        );
        let read = tokio::time::timeout(Duration::from_millis(50), watcher.next()).await;
        assert!(read.is_err(), "no event is expected: {read:?}");
    }
    s.sim.compact();
    s.sim.close_all_watches();
    create(&api, "after-compaction", "watched").await;
    assert_eq!(added(&mut watcher).await, "after-compaction");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_ends_it_as_unauthorized() {
    let s = common::start(SimConfig::default()).await;
    let mut wrong = s.config.clone();
    wrong.auth = Auth::Bearer("wrong".into());
    let api = config_maps(&RestClient::new(&wrong).unwrap(), "default");
    let mut watcher = api.retry_watcher(watched(), "1").unwrap();
    match within("the refusal", watcher.next()).await {
        Some(Err(RetryWatchError::Unauthorized(status))) => assert_eq!(status.code, 401),
        other => panic!("expected Unauthorized, got {other:?}"),
    }
}
