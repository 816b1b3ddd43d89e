//! metadata-informer: prints the names and labels of the namespace's Pods as they come and
//! go, from an informer that never receives a Pod's spec or status.
//!
//! Shows client-go's `metadatainformer`: the factory's `metadata_informer` asks the server for
//! `PartialObjectMetadata` (the `Accept` header's `as=PartialObjectMetadata`), so lists,
//! watches and the cache hold only each object's metadata: names, labels, annotations,
//! owners, finalizers. A controller that only needs to know which objects exist, or who owns
//! them, caches a fraction of the bytes (a Pod's spec and status are most of it). It works
//! for any resource, custom ones included, given its `ApiResource`.
//!
//! `cargo run -p clientgo --example metadata_informer` (the kubeconfig's cluster and
//! namespace).

use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::{ApiResource, Object, PartialObjectMetadata};
use clientgo::rest::{Config, RestClient};
use clientgo::tools::cache::{ResourceEventHandlerFuncs, SharedInformerFactory};
use k8s_openapi::api::core::v1::Pod;

type BoxError = Box<dyn Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    tracing_subscriber::fmt::init();
    let config = Config::infer()?;
    let namespace = config.default_namespace.clone();
    let shutdown = clientgo::signals::shutdown_on_signal();
    run(config, &namespace, shutdown, |line| println!("{line}")).await
}

/// `ADDED web-1 {app=web}`: what happened, the Pod's name and its labels. (A deletion
/// prints the key, `DELETED default/web-1`: a tombstone may carry no labels.)
pub fn describe(what: &str, pod: &PartialObjectMetadata) -> String {
    let labels: Vec<String> = pod
        .labels()
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{what} {} {{{}}}", pod.name(), labels.join(","))
}

/// Prints (through `out`) each Pod's arrival, label change and departure until `shutdown`.
pub async fn run(
    config: Config,
    namespace: &str,
    shutdown: CancellationToken,
    out: impl Fn(String) + Send + Sync + 'static,
) -> Result<(), BoxError> {
    let client = RestClient::new(&config)?;
    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.to_owned())
        .build();
    // The resource by group, version and plural (an `ApiResource`, here taken from
    // k8s-openapi's Pod); what is cached is `PartialObjectMetadata`, whatever the resource.
    let pods = factory.metadata_informer(&ApiResource::of::<Pod>());

    // Printing is quick enough for a handler; real work belongs on a work queue.
    let out = Arc::new(out);
    let (on_add, on_update, on_delete) = (out.clone(), out.clone(), out);
    pods.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(move |pod: &Arc<PartialObjectMetadata>, _| on_add(describe("ADDED", pod)))
            .update_func(move |old: &Arc<PartialObjectMetadata>, new| {
                if old.labels() != new.labels() {
                    on_update(describe("RELABELLED", new));
                }
            })
            .delete_func(move |event| on_delete(format!("DELETED {}", event.key()))),
    )?;
    factory.start(&shutdown);
    factory.wait_for_cache_sync(Duration::from_secs(60)).await?;
    shutdown.cancelled().await;
    factory.shutdown().await;
    Ok(())
}
