//! cm-summary: keeps the ConfigMap `cm-summary` counting the namespace's ConfigMaps per `app`
//! label. A one-key controller: every change to any ConfigMap enqueues the same key, and the
//! reconcile recomputes the summary from the cache, writing only when it differs. Level-based:
//! however many changes arrive, the summary is recomputed, not patched per event.
//!
//! `cargo run -p clientgo --example cm_summary` (the kubeconfig's cluster and namespace).

use std::collections::BTreeMap;
use std::error::Error;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::{Object, ObjectKey};
use clientgo::rest::{Config, PatchParams, ResourceClient, RestClient};
use clientgo::tools::cache::{EnqueueHandler, NamespaceLister, SharedInformerFactory};
use clientgo::util::workqueue::{Queue, run_workers};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

const SUMMARY: &str = "cm-summary";

type Result<T = (), E = Box<dyn Error + Send + Sync>> = std::result::Result<T, E>;

#[tokio::main]
async fn main() -> Result {
    tracing_subscriber::fmt::init();
    let (config, shutdown) = (Config::infer()?, clientgo::signals::shutdown_on_signal());
    run(config.clone(), &config.default_namespace, shutdown).await
}

/// Runs the controller in `namespace` until `shutdown`.
pub async fn run(config: Config, namespace: &str, shutdown: CancellationToken) -> Result {
    let client = RestClient::new(&config)?;
    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.to_owned())
        .build();
    let configmaps = factory.informer::<ConfigMap>();
    // The one key: there is one thing to reconcile, whatever changed (added, updated or
    // deleted, tombstones included).
    let queue = Queue::with_default_rate_limiter();
    let summary = ObjectKey::new(namespace, SUMMARY);
    let one_key = move |_: &ConfigMap| Some(summary.clone());
    configmaps.add_event_handler(EnqueueHandler::with_key_fn(queue.clone(), one_key))?;
    factory.start(&shutdown);
    factory.wait_for_cache_sync(Duration::from_secs(60)).await?;

    // The factory's namespace holds for its listers and clients too.
    let lister = factory
        .namespaced_lister::<ConfigMap>()
        .ok_or("a namespaced factory")?;
    let api = factory.client::<ConfigMap>();
    // The workers are tasks: each reconcile gets its own handles on the cache and the client.
    let work = move |_| {
        let (lister, api) = (lister.clone(), api.clone());
        async move { reconcile(&lister, &api).await }
    };
    run_workers(&queue, 1, work, shutdown).await;
    factory.shutdown().await;
    Ok(())
}

/// Makes `cm-summary` say how many ConfigMaps carry each `app` label.
async fn reconcile(cache: &NamespaceLister<ConfigMap>, api: &ResourceClient<ConfigMap>) -> Result {
    let mut counts = BTreeMap::<String, usize>::new();
    for cm in cache.list_all() {
        if let Some(app) = cm.labels().get("app").filter(|_| cm.name() != SUMMARY) {
            *counts.entry(app.to_owned()).or_default() += 1;
        }
    }
    let data: BTreeMap<String, String> = counts
        .into_iter()
        .map(|(app, n)| (app, n.to_string()))
        .collect();
    let current = cache.get(SUMMARY);
    if current.is_some_and(|cm| cm.data.clone().unwrap_or_default() == data) {
        return Ok(()); // up to date: no write
    }
    // Create or update in one request (server-side apply): the summary as this controller
    // wants it; `force` takes the fields back from anyone who changed them.
    let summary = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": SUMMARY}, "data": data});
    let params = PatchParams::apply(SUMMARY).force();
    let written = api.apply(SUMMARY, &summary, &params).await?;
    // Read your writes: the next reconcile finds this write in the cache.
    let rv = written.resource_version();
    let synced = cache.wait_for_resource_version(rv, Duration::from_secs(10));
    Ok(synced.await?)
}
