//! Fault injection through the handle and the admin endpoint.

use std::time::Duration;

use clientgo_apiserver_sim::SimConfig;
use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch, WatchFault};
use serde_json::json;

use crate::support::*;

const CMS: &str = "/api/v1/namespaces/default/configmaps";

#[tokio::test]
async fn status_faults_hit_the_next_matching_requests() {
    let (sim, c) = sim().await;
    sim.faults().fail_next(
        2,
        RequestMatch::new("list", "configmaps"),
        InjectedError::TooManyRequests { retry_after: 3 },
    );
    let r = c.get("/api/v1/namespaces/default/secrets").await;
    assert_eq!(r.status, 200, "other resources are not affected");
    for _ in 0..2 {
        let r = c.get(CMS).await;
        assert_status(&r, 429, "TooManyRequests");
        assert_eq!(r.headers["retry-after"], "3");
        assert_eq!(r.body["details"]["retryAfterSeconds"], 3);
    }
    assert_eq!(c.get(CMS).await.status, 200, "the fault is used up");

    sim.faults()
        .fail_next(1, RequestMatch::any(), InjectedError::InternalError);
    assert_status(&c.get(CMS).await, 500, "InternalError");
    sim.faults().fail_next(
        1,
        RequestMatch::any(),
        InjectedError::ServiceUnavailable { retry_after: 1 },
    );
    let r = c.get(CMS).await;
    assert_status(&r, 503, "ServiceUnavailable");
    assert_eq!(r.headers["retry-after"], "1");
    sim.faults().fail_next(
        1,
        RequestMatch::new("create", "configmaps"),
        InjectedError::GatewayTimeout { retry_after: 2 },
    );
    let r = c.post(CMS, json!({"metadata": {"name": "x"}})).await;
    assert_status(&r, 504, "Timeout");
    assert_eq!(
        c.get(&format!("{CMS}/x")).await.status,
        404,
        "the failed create did nothing"
    );
}

#[tokio::test]
async fn latency_and_cut_list_bodies() {
    let (sim, c) = sim().await;
    c.configmap("default", "a", json!({})).await;
    sim.faults().set_latency(Duration::from_millis(300));
    let t = tokio::time::Instant::now();
    assert_eq!(c.get(CMS).await.status, 200);
    assert!(t.elapsed() >= Duration::from_millis(300));
    sim.faults().clear();

    sim.faults().fail_next(
        1,
        RequestMatch::new("list", "configmaps"),
        InjectedError::CutBody,
    );
    let resp = c.send(http::Method::GET, CMS, None, "", None).await;
    assert_eq!(resp.0.status(), 200);
    let body = http_body_util::BodyExt::collect(resp.0.into_body()).await;
    assert!(body.is_err(), "the body is cut short");
    assert_eq!(c.get(CMS).await.status, 200);
}

#[tokio::test]
async fn watch_stream_faults() {
    let (sim, c) =
        start(SimConfig::default().with_bookmark_interval(Duration::from_millis(100))).await;
    let now = sim.resource_version();
    let path = format!("{CMS}?watch=1&resourceVersion={now}");

    let mut w = c.watch(&path).await;
    let mut w2 = c.watch(&path).await;
    c.configmap("default", "a", json!({})).await;
    assert_eq!(w.event().await.0, "ADDED");
    assert_eq!(w2.event().await.0, "ADDED");
    assert_eq!(sim.close_all_watches(), 2);
    assert!(matches!(w.next().await, Next::End));
    assert!(matches!(w2.next().await, Next::End));

    let path = format!("{CMS}?watch=1&resourceVersion={}", sim.resource_version());
    let mut w = c.watch(&path).await;
    eventually("watch registered", || async {
        sim.faults().watches(WatchFault::MalformedFrame) == 1
    })
    .await;
    assert!(matches!(w.next().await, Next::Garbage(_)));
    c.configmap("default", "b", json!({})).await;
    assert_eq!(
        w.change().await.0,
        "ADDED",
        "the stream goes on after a bad frame"
    );

    assert_eq!(sim.faults().watches(WatchFault::CutMidFrame), 1);
    assert!(
        matches!(w.next().await, Next::Broken),
        "cut in the middle of a frame"
    );

    let path = format!("{CMS}?watch=1&resourceVersion={}", sim.resource_version());
    let mut w = c.watch(&format!("{path}&allowWatchBookmarks=true")).await;
    // A write elsewhere moves the revision on: bookmarks past the watch's start come.
    c.configmap("kube-system", "elsewhere", json!({})).await;
    assert_eq!(w.event().await.0, "BOOKMARK");
    assert_eq!(sim.faults().watches(WatchFault::Stall), 1);
    c.configmap("default", "c", json!({})).await;
    // Drain what was sent before the stall took effect, then expect silence.
    let mut got_after_stall = 0;
    while let Some(n) = w.next_within(Duration::from_millis(400)).await {
        assert!(matches!(n, Next::Frame(_)));
        got_after_stall += 1;
        assert!(got_after_stall < 3, "a stalled watch stays silent");
    }
}

#[tokio::test]
async fn admin_endpoint_switches_faults() {
    let (sim, c) = sim().await;
    let r = c
        .call(
            http::Method::POST,
            "/_sim/fail?code=503&count=1&verb=get&resource=namespaces",
            None,
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_status(
        &c.get("/api/v1/namespaces/default").await,
        503,
        "ServiceUnavailable",
    );
    assert_eq!(c.get("/api/v1/namespaces/default").await.status, 200);
    let before = sim.resource_version();
    c.configmap("default", "a", json!({})).await;
    assert_eq!(
        c.call(http::Method::POST, "/_sim/compact", None)
            .await
            .status,
        200
    );
    let r = c
        .get(&format!(
            "{CMS}?resourceVersion={before}&resourceVersionMatch=Exact"
        ))
        .await;
    assert_status(&r, 410, "Expired");
    assert_status(
        &c.call(http::Method::POST, "/_sim/explode", None).await,
        400,
        "BadRequest",
    );
    assert_status(&c.get("/_sim/compact").await, 405, "MethodNotAllowed");
}
