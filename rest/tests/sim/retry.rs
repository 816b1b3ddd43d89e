//! Retries with the sim's injected 429/503/504 and `Retry-After` (honoured: real waits of one
//! second), what is not retried (a 500 without `Retry-After`, a POST whose response was cut),
//! and client-side throttling, counted with the client's metrics.

use std::time::{Duration, Instant};

use clientgo_apimachinery::DynamicObject;
use clientgo_apiserver_sim::SimConfig;
use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch};
use clientgo_rest::{DynamicClient, GetParams, ListParams, PostParams, RestClient};
use prometheus_client::registry::Registry;
use serde_json::json;

use crate::common;

fn config_maps(client: &RestClient) -> DynamicClient {
    common::config_maps(client, "default")
}

/// A client that records its metrics, and a way to read one counter line.
fn metered(config: &clientgo_rest::Config) -> (RestClient, impl Fn(&str) -> u64) {
    let mut registry = Registry::default();
    let client = RestClient::builder(config.clone())
        .metrics(&mut registry)
        .build()
        .unwrap();
    let read = move |needle: &str| {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text.lines()
            .filter(|l| l.starts_with(needle))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    (client, read)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_is_honoured_on_429_503_and_504() {
    let s = common::secure().await;
    let (client, counter) = metered(&s.config);
    let api = config_maps(&client);
    let faults = s.sim.faults();
    faults.fail_next(
        1,
        RequestMatch::new("list", "configmaps"),
        InjectedError::TooManyRequests { retry_after: 1 },
    );
    faults.fail_next(
        1,
        RequestMatch::new("list", "configmaps"),
        InjectedError::ServiceUnavailable { retry_after: 1 },
    );

    let start = Instant::now();
    api.list(&ListParams::default())
        .await
        .expect("succeeds after two retries");
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_secs(2),
        "Retry-After honoured: {waited:?}"
    );
    assert!(waited < Duration::from_secs(6), "{waited:?}");
    assert_eq!(
        counter(r#"rest_client_requests_total{code="429",method="GET""#),
        1
    );
    assert_eq!(
        counter(r#"rest_client_requests_total{code="503",method="GET""#),
        1
    );
    assert_eq!(
        counter(r#"rest_client_requests_total{code="200",method="GET""#),
        1
    );
    assert_eq!(counter("rest_client_request_retries_total"), 2);

    // A 504 with Retry-After is retried too; a create as well (it never reached storage).
    faults.fail_next(
        1,
        RequestMatch::new("create", "configmaps"),
        InjectedError::GatewayTimeout { retry_after: 1 },
    );
    let cm: DynamicObject =
        serde_json::from_value(json!({"metadata": {"name": "after-504"}})).unwrap();
    api.create(&cm, &PostParams::default())
        .await
        .expect("succeeds after a retry");
    assert_eq!(
        counter(r#"rest_client_requests_total{code="504",method="POST""#),
        1
    );
    assert_eq!(
        counter(r#"rest_client_requests_total{code="201",method="POST""#),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retries_stop_at_the_limit_and_500_is_not_retried() {
    let s = common::secure().await;
    let client = RestClient::builder(s.config.clone())
        .max_retries(1)
        .build()
        .unwrap();
    let api = config_maps(&client);
    let faults = s.sim.faults();
    faults.fail_next(
        2,
        RequestMatch::new("get", "configmaps"),
        InjectedError::TooManyRequests { retry_after: 1 },
    );
    let err = api.get("x", &GetParams::default()).await.unwrap_err();
    assert!(
        err.is_too_many_requests(),
        "one retry, then the 429 is the answer: {err}"
    );
    faults.fail_next(
        1,
        RequestMatch::new("get", "configmaps"),
        InjectedError::InternalError,
    );
    let err = api.get("x", &GetParams::default()).await.unwrap_err();
    assert!(err.is_internal_error(), "no Retry-After, no retry: {err}");
    let err = api.get("x", &GetParams::default()).await.unwrap_err();
    assert!(
        err.is_not_found(),
        "every fault was used exactly once: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_whose_response_is_cut_is_not_sent_again() {
    let s = common::secure().await;
    let (client, counter) = metered(&s.config);
    let api = config_maps(&client);
    s.sim.faults().fail_next(
        1,
        RequestMatch::new("create", "configmaps"),
        InjectedError::CutBody,
    );
    let cm: DynamicObject = serde_json::from_value(json!({"metadata": {"name": "once"}})).unwrap();
    let err = api.create(&cm, &PostParams::default()).await.unwrap_err();
    assert!(
        err.transport_error().is_some(),
        "a transport error, not a 409 from a resend: {err}"
    );
    assert_eq!(
        counter(r#"rest_client_requests_total{code="201",method="POST""#),
        1
    );
    assert_eq!(counter("rest_client_request_retries_total"), 0);
    // The server did create it, once.
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 1);
    assert_eq!(listed.items[0].metadata.name, "once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_throttles_to_its_qps() {
    let s = common::plain_with(SimConfig::default(), |config| {
        config.qps = 10.0;
        config.burst = 1;
    })
    .await;
    let (client, counter) = metered(&s.config);
    let api = config_maps(&client);
    let start = Instant::now();
    for _ in 0..6 {
        api.list(&ListParams::default()).await.unwrap();
    }
    let elapsed = start.elapsed();
    // One token at once, then one every 100 ms.
    assert!(elapsed >= Duration::from_millis(450), "{elapsed:?}");
    assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    assert_eq!(
        counter("rest_client_rate_limiter_duration_seconds_count"),
        6
    );
}
