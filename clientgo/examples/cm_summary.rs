//! cm-summary: keeps the ConfigMap `cm-summary` counting the namespace's ConfigMaps per `app`
//! label. A one-key controller: every change to any ConfigMap enqueues the same key, and the
//! reconcile recomputes the summary from the cache, writing only when it differs. Level-based:
//! however many changes arrive, the summary is recomputed, not patched per event.
//!
//! `cargo run -p clientgo --example cm_summary` (the kubeconfig's cluster and namespace).

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::Object;
use clientgo::rest::{Config, PatchParams, ResourceClient, RestClient};
use clientgo::tools::cache::{
    EnqueueHandler, NamespaceLister, SharedInformerFactory, wait_for_cache_sync,
};
use clientgo::util::workqueue::{Queue, run_workers};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::json;

const SUMMARY: &str = "cm-summary";

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error + Send + Sync>> {
    tracing_subscriber::fmt::init();
    let config = Config::infer()?;
    let namespace = config.default_namespace.clone();
    run(config, &namespace, clientgo::signals::shutdown_on_signal()).await
}

/// Runs the controller in `namespace` until `shutdown`.
pub async fn run(
    config: Config,
    namespace: &str,
    shutdown: CancellationToken,
) -> Result<(), Box<dyn Error + Send + Sync>> {
    let client = RestClient::new(&config)?;
    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.to_owned())
        .build();
    let configmaps = factory.informer::<ConfigMap>();
    // The one key: there is one thing to reconcile, whatever changed (added, updated or
    // deleted, tombstones included).
    let queue = Queue::<Arc<str>>::with_default_rate_limiter();
    let one_key = |_: &ConfigMap| Some(SUMMARY.to_owned());
    configmaps.add_event_handler(EnqueueHandler::with_key_fn(queue.clone(), one_key))?;
    factory.start(&shutdown);
    wait_for_cache_sync(&[&configmaps], Duration::from_secs(60)).await?;

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
async fn reconcile(
    lister: &NamespaceLister<ConfigMap>,
    api: &ResourceClient<ConfigMap>,
) -> Result<(), clientgo::rest::Error> {
    let mut counts = BTreeMap::<String, usize>::new();
    for cm in lister.list_all() {
        if let Some(app) = cm.labels().get("app").filter(|_| cm.name() != SUMMARY) {
            *counts.entry(app.to_owned()).or_default() += 1;
        }
    }
    let data: BTreeMap<String, String> = counts
        .into_iter()
        .map(|(app, n)| (app, n.to_string()))
        .collect();
    let current = lister.get(SUMMARY);
    if current.is_some_and(|cm| cm.data.clone().unwrap_or_default() == data) {
        return Ok(()); // up to date: no write
    }
    // Create or update in one request (server-side apply): the summary as this controller
    // wants it; `force` takes the fields back from anyone who changed them.
    let summary = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": SUMMARY}, "data": data});
    api.apply(SUMMARY, &summary, &PatchParams::apply(SUMMARY).force())
        .await?;
    Ok(())
}
