//! Decoding the sim's watch streams with `Watch<T>`, opened through the REST client.

use std::time::Duration;

use clientgo_apimachinery::{DynamicObject, Object, WatchEvent};
use clientgo_apiserver_sim::SimConfig;
use clientgo_apiserver_sim::faults::WatchFault;
use clientgo_rest::{DeleteParams, ListParams, PatchParams, PatchType, WatchParams};
use clientgo_watch::{Watch, WatchError};
use serde_json::json;

use crate::common::{self, config_maps, create, within};

fn from(rv: &str) -> WatchParams {
    WatchParams {
        resource_version: Some(rv.to_owned()),
        ..WatchParams::default()
    }
}

async fn next(watch: &mut Watch<DynamicObject>) -> WatchEvent<DynamicObject> {
    within("a watch event", watch.next())
        .await
        .expect("the watch is open")
        .expect("the event decodes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_bookmarks_and_a_clean_timeout() {
    let config = SimConfig {
        bookmark_before_timeout: Duration::ZERO,
        ..SimConfig::default().with_bookmark_interval(Duration::from_millis(100))
    };
    let s = common::start(config).await;
    let api = config_maps(&s.client, "default");
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .resource_version()
        .to_owned();
    let params = WatchParams {
        allow_watch_bookmarks: true,
        timeout_seconds: Some(2),
        ..from(&rv)
    };
    let mut watch = api.watch(&params).await.unwrap();

    let created = create(&api, "a", "web").await;
    let patch = json!({"data": {"k": "v2"}});
    api.patch("a", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();

    let mut changes = Vec::new();
    let mut bookmarks = Vec::new();
    // The stream ends by itself after `timeoutSeconds`: a clean end, `None`.
    while let Some(event) = within("the watch to end", watch.next()).await {
        match event.expect("every event decodes") {
            WatchEvent::Bookmark(b) => bookmarks.push(b.resource_version().to_owned()),
            WatchEvent::Added(o) => changes.push(("ADDED", o.resource_version().to_owned())),
            WatchEvent::Modified(o) => changes.push(("MODIFIED", o.resource_version().to_owned())),
            WatchEvent::Deleted(o) => changes.push(("DELETED", o.resource_version().to_owned())),
            WatchEvent::Error(status) => panic!("{status}"),
        }
    }
    let kinds: Vec<&str> = changes.iter().map(|(k, _)| *k).collect();
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    assert_eq!(changes[0].1, created);
    assert!(!bookmarks.is_empty(), "bookmarks every 100 ms");
    let last: u64 = bookmarks.last().unwrap().parse().unwrap();
    assert_eq!(
        last,
        s.sim.resource_version(),
        "the last bookmark is the current version"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_events_then_the_end_bookmark() {
    let s = common::start(SimConfig::default()).await;
    let api = config_maps(&s.client, "default");
    create(&api, "one", "web").await;
    create(&api, "two", "db").await;
    let params = WatchParams {
        label_selector: Some("app=web".into()),
        send_initial_events: Some(true),
        resource_version_match: Some("NotOlderThan".into()),
        allow_watch_bookmarks: true,
        ..WatchParams::default()
    };
    let mut watch = api.watch(&params).await.unwrap();
    let WatchEvent::Added(one) = next(&mut watch).await else {
        panic!("the state comes first")
    };
    assert_eq!(one.name(), "one");
    let WatchEvent::Bookmark(end) = next(&mut watch).await else {
        panic!("then the end bookmark")
    };
    assert!(end.is_initial_events_end());
    create(&api, "three", "web").await;
    let WatchEvent::Added(three) = next(&mut watch).await else {
        panic!("then changes")
    };
    assert_eq!(three.name(), "three");
}

/// Opens a watch from now and waits until it delivers one event, so the server side is
/// streaming (and subscribed to faults).
async fn streaming(s: &common::Sim, name: &str) -> Watch<DynamicObject> {
    let api = config_maps(&s.client, "default");
    let rv = s.sim.resource_version().to_string();
    let mut watch = api.watch(&from(&rv)).await.unwrap();
    create(&api, name, "web").await;
    assert!(matches!(next(&mut watch).await, WatchEvent::Added(_)));
    watch
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_injected_stream_fault_is_told_apart() {
    let s = common::start(SimConfig::default()).await;

    let mut watch = streaming(&s, "close").await;
    assert!(s.sim.close_all_watches() >= 1);
    assert!(
        within("the end", watch.next()).await.is_none(),
        "a close is a clean end"
    );

    let mut watch = streaming(&s, "cut").await;
    assert!(s.sim.faults().watches(WatchFault::CutMidFrame) >= 1);
    let err = within("the cut", watch.next()).await.unwrap().unwrap_err();
    assert!(
        matches!(err, WatchError::Truncated { .. } | WatchError::Transport(_)),
        "{err}"
    );
    assert!(watch.next().await.is_none());

    let mut watch = streaming(&s, "malformed").await;
    assert!(s.sim.faults().watches(WatchFault::MalformedFrame) >= 1);
    let err = within("the bad frame", watch.next())
        .await
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(err, WatchError::Decode { .. } | WatchError::Frame(_)),
        "{err}"
    );
    assert!(
        watch.next().await.is_none(),
        "a malformed frame ends the watch"
    );

    let watch = streaming(&s, "stall").await;
    let mut watch = watch.with_idle_timeout(Duration::from_millis(200));
    assert!(s.sim.faults().watches(WatchFault::Stall) >= 1);
    let err = within("the stall", watch.next())
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, WatchError::Stalled { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compacted_version_is_an_error_event_and_bad_params_an_error() {
    let s = common::start(SimConfig::default()).await;
    let api = config_maps(&s.client, "default");
    let old = create(&api, "old", "web").await;
    create(&api, "new", "web").await;
    s.sim.compact();
    let mut watch = api.watch(&from(&old)).await.unwrap();
    let WatchEvent::Error(status) = next(&mut watch).await else {
        panic!("a 410 ERROR event")
    };
    assert_eq!(status.code, 410);
    assert!(status.is_resource_expired(), "{status}");
    assert!(within("the end", watch.next()).await.is_none());

    let bad = WatchParams {
        field_selector: Some("spec.unknown=1".into()),
        ..WatchParams::default()
    };
    let err = api.watch(&bad).await.unwrap_err();
    assert!(err.is_bad_request(), "{err}");
}
