//! watch-printer: prints every change to the namespace's ConfigMaps as it happens, `ADDED`,
//! `MODIFIED` or `DELETED` and the name, over a watch that survives disconnects.
//!
//! Shows client-go's `tools/watch.RetryWatcher` (`clientgo::tools::watch::RetryWatcher`,
//! opened with `WatchResource::retry_watcher`): a list gives a starting resourceVersion, the retry
//! watcher re-opens the watch from the last resourceVersion it delivered whenever the
//! connection ends (no gap, no repeat), and only when that version has expired (410 Gone)
//! must the program list again. An informer does all of this for you and keeps a cache; a
//! retry watcher is for a program that only wants the events.
//!
//! `cargo run -p clientgo --example watch_printer` (the kubeconfig's cluster and namespace),
//! then `kubectl create configmap x` in the same namespace.

use std::error::Error;

use clientgo::CancellationToken;
use clientgo::apimachinery::{Object, WatchEvent};
use clientgo::rest::{Config, ListParams, ResourceClient, RestClient, WatchParams};
use clientgo::tools::watch::{RetryWatchError, WatchResource};
use k8s_openapi::api::core::v1::ConfigMap;

type BoxError = Box<dyn Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    tracing_subscriber::fmt::init();
    let config = Config::infer()?;
    let namespace = config.default_namespace.clone();
    let shutdown = clientgo::signals::shutdown_on_signal();
    run(config, &namespace, shutdown, |line| println!("{line}")).await
}

/// Prints (through `out`) what is there, then every change, until `shutdown`.
pub async fn run(
    config: Config,
    namespace: &str,
    shutdown: CancellationToken,
    mut out: impl FnMut(String),
) -> Result<(), BoxError> {
    let api = ResourceClient::<ConfigMap>::namespaced(&RestClient::new(&config)?, namespace);
    loop {
        // A retry watcher resumes from a concrete resourceVersion: a list gives one, and
        // shows what is there at that version.
        let list = api.list(&ListParams::default()).await?;
        for cm in &list.items {
            out(format!("LISTED {}", cm.name()));
        }
        let mut watcher = api.retry_watcher(WatchParams::default(), list.resource_version())?;
        loop {
            let event = tokio::select! {
                event = watcher.next() => event,
                () = shutdown.cancelled() => return Ok(()),
            };
            match event {
                Some(Ok(WatchEvent::Added(cm))) => out(format!("ADDED {}", cm.name())),
                Some(Ok(WatchEvent::Modified(cm))) => out(format!("MODIFIED {}", cm.name())),
                Some(Ok(WatchEvent::Deleted(cm))) => out(format!("DELETED {}", cm.name())),
                // Bookmarks only move the watcher's resourceVersion on; it keeps them.
                Some(Ok(_)) => {}
                // Changes since that version are gone from the server's history: what
                // happened meanwhile cannot be told, only the present state. List again.
                Some(Err(RetryWatchError::Gone(_))) => {
                    out("EXPIRED: listing again".to_owned());
                    break;
                }
                // Forbidden, unauthorized: retrying would not help.
                Some(Err(error)) => return Err(error.into()),
                None => return Ok(()),
            }
        }
    }
}
