//! Read-your-writes through an informer whose selector filters out the written object: the
//! write's own event never reaches the cache, so `wait_for_resource_version` can only end with
//! a bookmark at or past the write, or time out and say how far the cache got.

mod cache_support;

use std::time::Duration;

use cache_support::config_maps;
use clientgo_apimachinery::{DynamicObject, Object};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{SharedIndexInformer, SharedInformerFactory, WaitForResourceVersionError};
use clientgo_rest::config::Config;
use clientgo_rest::{DynamicClient, PostParams, RestClient};
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// A synced informer of the ConfigMaps labelled `app=web`, and a client to write with.
async fn web_informer(
    sim: &ApiServerSim,
    cancel: &CancellationToken,
) -> (SharedIndexInformer<DynamicObject>, RestClient) {
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    let factory = SharedInformerFactory::builder(&client)
        .tweak_list_options(|o| o.label_selector = Some("app=web".into()))
        .build();
    let informer = factory.dynamic_informer(&config_maps());
    factory.start(cancel);
    factory
        .wait_for_cache_sync(Duration::from_secs(60))
        .await
        .unwrap();
    (informer, client)
}

/// Creates a ConfigMap the informer's selector does not match; returns its resourceVersion.
async fn write_filtered_out(client: &RestClient) -> String {
    let api = DynamicClient::from_api_resource(client, &config_maps(), Some("default"));
    let object: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "other", "namespace": "default", "labels": {"app": "other"}},
        "data": {"k": "v"},
    }))
    .unwrap();
    let created = api.create(&object, &PostParams::default()).await.unwrap();
    created.resource_version().to_owned()
}

#[tokio::test(start_paused = true)]
async fn a_filtered_out_write_is_reached_by_a_bookmark() {
    let sim =
        ApiServerSim::start(SimConfig::default().with_bookmark_interval(Duration::from_secs(5)))
            .await
            .unwrap();
    let cancel = CancellationToken::new();
    let (informer, client) = web_informer(&sim, &cancel).await;
    let rv = write_filtered_out(&client).await;
    assert_ne!(informer.indexer().last_resource_version(), rv);

    let start = Instant::now();
    informer
        .indexer()
        .wait_for_resource_version(&rv, Duration::from_secs(60))
        .await
        .unwrap();
    assert!(
        start.elapsed() > Duration::ZERO,
        "only a bookmark can end this wait"
    );
    assert!(
        informer.indexer().get_by_key("default/other").is_none(),
        "the selector keeps the object out of the cache"
    );
    cancel.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_filtered_out_write_without_a_bookmark_times_out_clearly() {
    // Bookmarks every hour: none comes during the wait.
    let sim =
        ApiServerSim::start(SimConfig::default().with_bookmark_interval(Duration::from_secs(3600)))
            .await
            .unwrap();
    let cancel = CancellationToken::new();
    let (informer, client) = web_informer(&sim, &cancel).await;
    let listed_at = informer.indexer().last_resource_version();
    let rv = write_filtered_out(&client).await;

    let err = informer
        .indexer()
        .wait_for_resource_version(&rv, Duration::from_secs(10))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        WaitForResourceVersionError::Timeout {
            wanted: rv.clone(),
            reached: listed_at.clone(),
            waited: Duration::from_secs(10),
        }
    );
    assert_eq!(
        err.to_string(),
        format!(
            "timed out after 10s waiting for the cache to reach resourceVersion {rv}; it is at {listed_at}"
        )
    );
    cancel.cancel();
}
