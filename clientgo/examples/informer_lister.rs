//! informer-lister: keeps the namespace's ConfigMaps in a local cache and prints them grouped
//! by their `app` label each time the cache changes.
//!
//! Shows client-go's `tools/cache`: a shared informer (from the factory) lists and watches
//! once, then keeps its cache current; a custom index (client-go's `AddIndexers` with an
//! `IndexFunc`) files each ConfigMap under its `app` label, so "the ConfigMaps of app web" is
//! a lookup (`by_index`), not a scan; the lister reads the cache, never the server. The event
//! handler only signals a change: reading is done outside the handler, as a controller's
//! workers do.
//!
//! `cargo run -p clientgo --example informer_lister` (the kubeconfig's cluster and
//! namespace), then `kubectl create configmap x` and `kubectl label configmap x app=web`.

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::Object;
use clientgo::rest::{Config, RestClient};
use clientgo::tools::cache::{
    Indexers, ResourceEventHandlerFuncs, SharedInformerFactory, label_index_func,
};
use k8s_openapi::api::core::v1::ConfigMap;
use tokio::sync::Notify;

type BoxError = Box<dyn Error + Send + Sync>;

/// The custom index: ConfigMaps by the value of their `app` label.
pub const BY_APP: &str = "by-app";

/// What the cache holds: how many ConfigMaps, and the names of those of each app.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// ConfigMaps in the namespace.
    pub total: usize,
    /// App label value -> names of its ConfigMaps, sorted.
    pub by_app: BTreeMap<String, Vec<String>>,
}

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    tracing_subscriber::fmt::init();
    let config = Config::infer()?;
    let namespace = config.default_namespace.clone();
    let shutdown = clientgo::signals::shutdown_on_signal();
    run(config, &namespace, shutdown, |report| {
        println!("{} ConfigMaps", report.total);
        for (app, names) in &report.by_app {
            println!("  app={app}: {}", names.join(", "));
        }
    })
    .await
}

/// Reports the cache once synced and after every change, until `shutdown`.
pub async fn run(
    config: Config,
    namespace: &str,
    shutdown: CancellationToken,
    mut report: impl FnMut(&Report),
) -> Result<(), BoxError> {
    let client = RestClient::new(&config)?;
    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.to_owned())
        .build();
    let configmaps = factory.informer::<ConfigMap>();
    // The custom index, added before the informer starts (client-go's `AddIndexers`).
    configmaps.add_indexers(Indexers::new().with(BY_APP, label_index_func("app")))?;

    // A `Notify` holds one wake-up: a burst of changes makes one report, not one each.
    let changed = Arc::new(Notify::new());
    let (on_add, on_update, on_delete) = (changed.clone(), changed.clone(), changed.clone());
    configmaps.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(move |_, _| on_add.notify_one())
            .update_func(move |_, _| on_update.notify_one())
            .delete_func(move |_| on_delete.notify_one()),
    )?;
    factory.start(&shutdown);
    factory.wait_for_cache_sync(Duration::from_secs(60)).await?;

    let lister = configmaps.lister();
    loop {
        let mut by_app = BTreeMap::new();
        // Every value the index holds, and the ConfigMaps filed under each: lookups, no scan.
        for app in lister.indexer().list_index_func_values(BY_APP) {
            let of_app = lister.indexer().by_index(BY_APP, &app)?;
            let mut names: Vec<String> = of_app.iter().map(|cm| cm.name().to_owned()).collect();
            names.sort();
            by_app.insert(app, names);
        }
        let total = lister.namespace(namespace).list_all().len();
        report(&Report { total, by_app });
        tokio::select! {
            () = changed.notified() => {}
            () = shutdown.cancelled() => break,
        }
    }
    factory.shutdown().await;
    Ok(())
}
