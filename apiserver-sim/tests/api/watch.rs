//! watch: events, framing, 410, bookmarks, timeouts, selectors, WatchList.

use std::time::Duration;

use clientgo_apiserver_sim::SimConfig;
use serde_json::json;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn events_in_order_with_chunked_json_frames() {
    let (_sim, c) = sim().await;
    let list = c.get(CMS).await;
    let start = list.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    let resp = c
        .send(
            http::Method::GET,
            &format!("{CMS}?watch=true&resourceVersion={start}"),
            None,
            "",
            None,
        )
        .await;
    assert_eq!(resp.0.status(), 200);
    assert_eq!(resp.0.headers()["content-type"], "application/json");
    assert_eq!(resp.0.headers()["transfer-encoding"], "chunked");
    let mut w = Watch::from(resp);

    let a = c.configmap("default", "a", json!({})).await;
    let mut changed = a.clone();
    changed["data"] = json!({"k": "2"});
    let m = c.put(&format!("{CMS}/a"), changed).await.body;
    c.delete(&format!("{CMS}/a")).await;

    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), name(&o)), ("ADDED", "a"));
    assert_eq!(o, a);
    let (t, o) = w.event().await;
    assert_eq!(t, "MODIFIED");
    assert_eq!(o, m);
    let (t, o) = w.event().await;
    assert_eq!(t, "DELETED");
    assert!(
        rv(&o) > rv(&m),
        "a DELETED object carries the deletion revision"
    );
    assert!(w.raw.ends_with(b"}\n"));
    assert_eq!(
        w.raw.iter().filter(|b| **b == b'\n').count(),
        3,
        "one frame per line"
    );
}

#[tokio::test]
async fn watch_without_resource_version_starts_with_the_current_state() {
    let (_sim, c) = sim().await;
    c.configmap("default", "x", json!({})).await;
    c.configmap("kube-system", "y", json!({})).await;
    let mut w = c.watch(&format!("{CMS}?watch=1")).await;
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), name(&o)), ("ADDED", "x"));
    c.configmap("default", "z", json!({})).await;
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), name(&o)), ("ADDED", "z"));
    // The legacy /watch/ prefix works too, for all namespaces.
    let mut w = c.watch("/api/v1/watch/configmaps?resourceVersion=0").await;
    let mut seen = vec![
        name(&w.event().await.1).to_owned(),
        name(&w.event().await.1).to_owned(),
    ];
    seen.push(name(&w.event().await.1).to_owned());
    seen.sort();
    assert_eq!(seen, vec!["x", "y", "z"]);
}

#[tokio::test]
async fn too_old_resource_version_is_an_error_event() {
    let (sim, c) = sim().await;
    c.configmap("default", "a", json!({})).await;
    sim.compact();
    let now = sim.resource_version();
    let mut w = c
        .watch(&format!("{CMS}?watch=true&resourceVersion=1"))
        .await;
    let (t, o) = w.event().await;
    assert_eq!(t, "ERROR");
    assert_eq!(o["kind"], "Status");
    assert_eq!(o["code"], 410);
    assert_eq!(o["reason"], "Expired");
    assert_eq!(o["message"], format!("too old resource version: 1 ({now})"));
    assert!(matches!(w.next().await, Next::End));

    // A bounded history compacts by itself.
    let (_sim, c) = start(SimConfig::default().with_history_size(3)).await;
    for i in 0..5 {
        c.configmap("default", &format!("c{i}"), json!({})).await;
    }
    let mut w = c
        .watch(&format!("{CMS}?watch=true&resourceVersion=2"))
        .await;
    assert_eq!(w.event().await.0, "ERROR");
}

#[tokio::test]
async fn bookmarks_are_periodic_and_only_when_allowed() {
    let config = SimConfig::default().with_bookmark_interval(Duration::from_millis(100));
    let (sim, c) = start(config).await;
    // Bookmarks come once the resource's cache has seen a write.
    c.configmap("default", "seed", json!({})).await;
    let rv_now = sim.resource_version();
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={rv_now}&allowWatchBookmarks=true"
        ))
        .await;
    // kube-apiserver 1.36.2 sends no bookmark that would not move the watch past where it
    // started: none while nothing has been written since.
    assert!(
        w.next_within(Duration::from_millis(400)).await.is_none(),
        "no bookmark at the watch's own resourceVersion"
    );
    // A write the watch does not see (another namespace) moves the revision on.
    let elsewhere = c.configmap("kube-system", "elsewhere", json!({})).await;
    for _ in 0..2 {
        let (t, o) = w.event().await;
        assert_eq!(t, "BOOKMARK");
        assert_eq!(
            o,
            json!({"kind": "ConfigMap", "apiVersion": "v1",
                "metadata": {"resourceVersion": rv(&elsewhere).to_string()}}),
            "the type's zero value with a resourceVersion, no creationTimestamp"
        );
    }
    let mut quiet = c
        .watch(&format!("{CMS}?watch=true&resourceVersion={rv_now}"))
        .await;
    assert!(
        quiet
            .next_within(Duration::from_millis(400))
            .await
            .is_none(),
        "no bookmarks unless allowed"
    );
}

#[tokio::test]
async fn timeout_ends_the_watch_after_a_last_bookmark() {
    let config = SimConfig {
        bookmark_before_timeout: Duration::from_millis(500),
        ..SimConfig::default()
    };
    let (_sim, c) = start(config).await;
    // kube-apiserver's cacher sends no bookmark before it has processed a write of the
    // resource (`Cacher.dispatchEvents` in kube-apiserver 1.36: "never send a bookmark
    // event if we did not see an event here"): a watch of a resource never written ends
    // bare.
    let mut bare = c
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion=1&allowWatchBookmarks=true&timeoutSeconds=1"
        ))
        .await;
    assert!(
        matches!(bare.next().await, Next::End),
        "no bookmark before progress"
    );
    let seed = c.configmap("default", "seed", json!({})).await;
    let started = tokio::time::Instant::now();
    // From just before the seed: its ADDED event, then the bookmark past the start.
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={}&allowWatchBookmarks=true&timeoutSeconds=1",
            rv(&seed) - 1
        ))
        .await;
    assert_eq!(w.event().await.0, "ADDED");
    let (t, o) = w.event().await;
    assert_eq!(t, "BOOKMARK");
    assert_eq!(rv(&o), rv(&seed));
    assert!(
        matches!(w.next().await, Next::End),
        "the stream ends cleanly"
    );
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(5),
        "{took:?}"
    );
}

#[tokio::test]
async fn selectors_turn_transitions_into_added_and_deleted() {
    let (sim, c) = sim().await;
    let rv_now = sim.resource_version();
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={rv_now}&labelSelector=app%3Dweb"
        ))
        .await;
    c.configmap("default", "other", json!({"app": "db"})).await;
    let a = c.configmap("default", "a", json!({"app": "web"})).await;
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), name(&o)), ("ADDED", "a"));

    let mut moved = a.clone();
    moved["metadata"]["labels"] = json!({"app": "db"});
    let moved = c.put(&format!("{CMS}/a"), moved).await.body;
    let (t, o) = w.event().await;
    assert_eq!(t, "DELETED");
    assert_eq!(
        o["metadata"]["labels"]["app"], "web",
        "the last matching state"
    );
    assert_eq!(
        rv(&o),
        rv(&moved),
        "stamped with the revision of the change"
    );

    let mut back = moved.clone();
    back["metadata"]["labels"] = json!({"app": "web"});
    c.put(&format!("{CMS}/a"), back).await;
    let (t, _) = w.event().await;
    assert_eq!(t, "ADDED");

    let mut by_name = c
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={rv_now}&fieldSelector=metadata.name%3Dother"
        ))
        .await;
    let (t, o) = by_name.event().await;
    assert_eq!((t.as_str(), name(&o)), ("ADDED", "other"));
}

#[tokio::test]
async fn send_initial_events_streams_state_then_an_annotated_bookmark() {
    let (_sim, c) = sim().await;
    c.configmap("default", "a", json!({})).await;
    c.configmap("default", "b", json!({})).await;
    let q = "watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true";
    let mut w = c.watch(&format!("{CMS}?{q}")).await;
    assert_eq!(name(&w.event().await.1), "a");
    assert_eq!(name(&w.event().await.1), "b");
    let (t, o) = w.event().await;
    assert_eq!(t, "BOOKMARK");
    assert_eq!(
        o["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    let end_rv = rv(&o);
    let created = c.configmap("default", "c", json!({})).await;
    let (t, o) = w.change().await;
    assert_eq!((t.as_str(), name(&o)), ("ADDED", "c"));
    assert!(rv(&created) > end_rv);

    // Options checked as kube-apiserver 1.36.2 checks them (the differential steps
    // `watch-options/*`): every error, on the field `resourceVersionMatch`.
    let r = c
        .get(&format!("{CMS}?watch=true&sendInitialEvents=true"))
        .await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
    );
    let r = c
        .get(&format!(
            "{CMS}?watch=true&resourceVersionMatch=Exact&resourceVersion=1"
        ))
        .await;
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: [resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided, resourceVersionMatch: Unsupported value: \"Exact\": supported values: \"NotOlderThan\"]"
    );
    let r = c.get(&format!("{CMS}?sendInitialEvents=true")).await;
    assert_status(&r, 422, "Invalid");

    // Without allowWatchBookmarks: the state, no bookmark (kube-apiserver 1.36.2 requires
    // no bookmarks of a watch list).
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1"
        ))
        .await;
    let mut seen = Vec::new();
    while let Next::Frame(v) = w.next().await {
        seen.push(v["type"].as_str().unwrap_or("").to_owned());
    }
    assert_eq!(seen, ["ADDED", "ADDED", "ADDED"]);
}

/// kube-apiserver 1.36.2 (the differential steps `watch/initial-end-*`): a watch without a
/// resourceVersion, or from "0", with allowWatchBookmarks ends its initial ADDED events with
/// the annotated bookmark too, whatever the resource's cache has seen; without
/// allowWatchBookmarks it sends none.
#[tokio::test]
async fn a_watch_from_the_current_state_ends_it_with_an_annotated_bookmark() {
    let (sim, c) = sim().await;
    c.configmap("default", "a", json!({})).await;
    let at = sim.resource_version();
    for query in ["", "&resourceVersion=0"] {
        let mut w = c
            .watch(&format!(
                "{CMS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1{query}"
            ))
            .await;
        assert_eq!(name(&w.event().await.1), "a");
        let (t, o) = w.event().await;
        assert_eq!(t, "BOOKMARK");
        assert_eq!(
            o,
            json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {
                "resourceVersion": at.to_string(),
                "annotations": {"k8s.io/initial-events-end": "true"}}})
        );
        assert!(matches!(w.next().await, Next::End), "nothing more {query}");
    }
    // A resource never written: the bookmark alone.
    let leases = "/apis/coordination.k8s.io/v1/namespaces/default/leases";
    let mut w = c
        .watch(&format!(
            "{leases}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1"
        ))
        .await;
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), &o["spec"]), ("BOOKMARK", &json!({})));
    assert!(matches!(w.next().await, Next::End));
    let mut w = c.watch(&format!("{CMS}?watch=true&timeoutSeconds=1")).await;
    assert_eq!(w.event().await.0, "ADDED");
    assert!(matches!(w.next().await, Next::End), "no bookmark unasked");
}

#[tokio::test]
async fn older_server_mode_rejects_match_and_ignores_send_initial_events() {
    let (sim, c) = start(SimConfig::default().with_watch_list(false)).await;
    c.configmap("default", "a", json!({})).await;
    let r = c.get(&format!("{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch"
    );
    let now = sim.resource_version();
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&sendInitialEvents=true&resourceVersion={now}"
        ))
        .await;
    c.configmap("default", "b", json!({})).await;
    let (t, o) = w.event().await;
    assert_eq!(
        (t.as_str(), name(&o)),
        ("ADDED", "b"),
        "no initial events: the parameter is ignored"
    );
    // No initial-events-end bookmark after the state either.
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&allowWatchBookmarks=true&timeoutSeconds=1"
        ))
        .await;
    assert_eq!(w.event().await.0, "ADDED");
    assert_eq!(w.event().await.0, "ADDED");
    assert!(matches!(w.next().await, Next::End));
}

#[tokio::test]
async fn http2_watch_and_list() {
    let (_sim, c) = sim().await;
    let h2 = Client::http2(&c.base);
    let r = h2.get(CMS).await;
    assert_eq!(r.status, 200);
    let mut w = h2.watch(&format!("{CMS}?watch=1&resourceVersion=1")).await;
    c.configmap("default", "h", json!({})).await;
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), name(&o)), ("ADDED", "h"));
}

/// kube-apiserver 1.36.2 (the differential steps `watch/future-rv-*`): a watch from a
/// resourceVersion the server has not reached answers 200 and sends nothing, no bookmark
/// either, until the store passes it; then the changes after it, and bookmarks again.
#[tokio::test]
async fn watch_from_a_future_resource_version_waits_for_it() {
    let config = SimConfig::default().with_bookmark_interval(Duration::from_millis(100));
    let (sim, c) = start(config).await;
    c.configmap("kube-system", "seed", json!({})).await;
    let future = sim.resource_version() + 2;
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={future}&allowWatchBookmarks=true"
        ))
        .await;
    assert!(
        w.next_within(Duration::from_millis(400)).await.is_none(),
        "nothing before the store reaches {future}"
    );
    c.configmap("default", "one", json!({})).await;
    c.configmap("default", "two", json!({})).await;
    assert!(
        w.next_within(Duration::from_millis(400)).await.is_none(),
        "nothing at {future} itself"
    );
    let three = c.configmap("default", "three", json!({})).await;
    let (t, o) = w.event().await;
    assert_eq!(
        (t.as_str(), name(&o)),
        ("ADDED", "three"),
        "only changes after {future}"
    );
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), rv(&o)), ("BOOKMARK", rv(&three)));
}

/// kube-apiserver 1.36.2 (observed with the differential check, `delete/watch-last-finalizer`):
/// removing the last finalizer of an object being deleted deletes it during the update, and
/// watchers see one DELETED event whose object is the last stored state, finalizer included.
#[tokio::test]
async fn removing_the_last_finalizer_is_one_deleted_event_of_the_last_stored_state() {
    let (_sim, c) = sim().await;
    let held = json!({"metadata": {"name": "held", "finalizers": ["example.com/hold"]}});
    let created = c.post(CMS, held).await.body;
    let mut w = c
        .watch(&format!(
            "{CMS}?watch=true&resourceVersion={}",
            rv(&created)
        ))
        .await;
    let marked = c.delete(&format!("{CMS}/held")).await.body;
    assert!(marked["metadata"]["deletionTimestamp"].is_string());
    let answer = c
        .patch(
            &format!("{CMS}/held"),
            "application/merge-patch+json",
            json!({"metadata": {"finalizers": null}}),
        )
        .await;
    assert_eq!(answer.status, 200);
    assert!(
        answer.body["metadata"].get("finalizers").is_none(),
        "the object as written"
    );
    assert_eq!(c.get(&format!("{CMS}/held")).await.status, 404);

    let (t, o) = w.event().await;
    assert_eq!(
        (t.as_str(), name(&o)),
        ("MODIFIED", "held"),
        "the deletion mark"
    );
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), name(&o)), ("DELETED", "held"));
    assert_eq!(o["metadata"]["finalizers"], json!(["example.com/hold"]));
    assert!(rv(&o) > rv(&marked), "stamped with the deletion revision");
    assert!(
        w.next_within(Duration::from_millis(200)).await.is_none(),
        "nothing more"
    );
}

/// kube-apiserver 1.36.2 (the differential step `cr/watch-too-old-error`): a custom
/// resource's watch cache starts when its CRD is served, so a watch from an older
/// resourceVersion answers 200 and one ERROR event 410 "too old resource version", even
/// while the history still holds that revision; from the CRD's own revision on it replays.
#[tokio::test]
async fn a_custom_resource_watch_from_before_its_crd_is_too_old() {
    let (_sim, c) = sim().await;
    let before = rv(&c.get(CMS).await.body);
    let crd = gadgets_crd();
    let crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions";
    assert_eq!(c.post(crds, crd).await.status, 201);
    let established = rv(&c.get(&format!("{crds}/gadgets.example.com")).await.body);
    let gadgets = "/apis/example.com/v1/namespaces/default/gadgets";
    let g = json!({"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}});
    assert_eq!(c.post(gadgets, g).await.status, 201);

    let mut w = c
        .watch(&format!("{gadgets}?watch=true&resourceVersion={before}"))
        .await;
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), o["code"].as_i64()), ("ERROR", Some(410)));
    assert_eq!(o["reason"], "Expired");
    assert_eq!(
        o["message"],
        format!("too old resource version: {before} ({established})")
    );
    assert!(matches!(w.next().await, Next::End));

    let mut w = c
        .watch(&format!(
            "{gadgets}?watch=true&resourceVersion={established}"
        ))
        .await;
    let (t, o) = w.event().await;
    assert_eq!((t.as_str(), name(&o)), ("ADDED", "g"));
}
