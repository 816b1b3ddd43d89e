//! per-object-controller: mirrors each ConfigMap labelled `clientgo.example/mirror=true` into
//! a Secret of the same name, owned by the ConfigMap through a controller ownerReference.
//!
//! The smallest honest version of kubernetes/sample-controller's loop (Foo -> Deployment,
//! here ConfigMap -> Secret): one key per owner (`namespace/name`); the owner's changes enqueue
//! its key, and so do the owned Secret's changes (through its controller reference), so a
//! tampered or deleted copy is repaired (`EnqueueHandler` does both); `run_workers` hands each
//! key to the reconcile, which reads both listers, computes the desired Secret and writes
//! only when it differs, retried with backoff on error. Deleting the ConfigMap deletes the Secret
//! through the garbage collector (the ownerReference), not through this controller.
//!
//! `cargo run -p clientgo --example per_object_controller` (the kubeconfig's cluster and
//! namespace), then `kubectl create configmap x --from-literal=k=v` and
//! `kubectl label configmap x clientgo.example/mirror=true`.

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::Arc;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::{Object, ObjectKey, OwnerReference};
use clientgo::rest::{Config, PostParams, ResourceClient, RestClient};
use clientgo::tools::cache::{
    EnqueueHandler, NamespaceLister, SharedInformerFactory, controller_key,
};
use clientgo::util::workqueue::{Queue, run_workers};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

type Result<T = (), E = Box<dyn Error + Send + Sync>> = std::result::Result<T, E>;

/// The label that opts a ConfigMap in.
pub const MIRROR: &str = "clientgo.example/mirror";

#[tokio::main]
async fn main() -> Result {
    tracing_subscriber::fmt::init();
    let (config, shutdown) = (Config::infer()?, clientgo::signals::shutdown_on_signal());
    run(config.clone(), &config.default_namespace, shutdown).await
}

/// What a reconcile reads and writes through.
struct Controller {
    configmaps: NamespaceLister<ConfigMap>,
    secrets: NamespaceLister<Secret>,
    secrets_api: ResourceClient<Secret>,
}

/// Runs the controller in `namespace` until `shutdown`.
pub async fn run(config: Config, namespace: &str, shutdown: CancellationToken) -> Result {
    let client = RestClient::new(&config)?;
    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.to_owned())
        .build();
    let configmaps = factory.informer::<ConfigMap>();
    let secrets = factory.informer::<Secret>();
    // Keys wait here; a key from the initial list goes behind real changes.
    let queue = Queue::builder().default_rate_limiter().priority().build();

    // Handlers only enqueue keys: a ConfigMap's own key for its changes, and for a Secret's
    // changes (deletion included) the key of the ConfigMap controlling it.
    configmaps.add_event_handler(EnqueueHandler::new(queue.clone()))?;
    let owner_key = |s: &Secret| controller_key(s, "ConfigMap");
    secrets.add_event_handler(EnqueueHandler::with_key_fn(queue.clone(), owner_key))?;

    factory.start(&shutdown);
    factory.wait_for_cache_sync(Duration::from_secs(60)).await?;
    let controller = Arc::new(Controller {
        configmaps: configmaps.lister().namespace(namespace),
        secrets: secrets.lister().namespace(namespace),
        secrets_api: ResourceClient::namespaced(&client, namespace),
    });
    // The workers are tasks: each reconcile gets its own handle on the controller.
    let reconcile = move |key| {
        let controller = controller.clone();
        async move { controller.reconcile(key).await }
    };
    run_workers(&queue, 2, reconcile, shutdown).await;
    factory.shutdown().await;
    Ok(())
}

impl Controller {
    /// Makes the Secret of ConfigMap `key` match it. Reads only the caches; writes only a
    /// difference, and returns once the cache holds it.
    async fn reconcile(&self, key: ObjectKey) -> Result {
        let name = key.name();
        let mirrored =
            |cm: &ConfigMap| cm.labels().get(MIRROR) == Some("true") && !cm.is_being_deleted();
        let Some(cm) = self.configmaps.get(name).filter(|cm| mirrored(cm)) else {
            return Ok(()); // gone (the garbage collector deletes its Secret), or not mirrored
        };
        let (data, post) = (desired_data(&cm), PostParams::default());
        let written = match self.secrets.get(name) {
            None => {
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        // client-go's `metav1.NewControllerRef(cm, gvk)`.
                        owner_references: Some(vec![OwnerReference::controller_of(&*cm).into()]),
                        ..ObjectMeta::default()
                    },
                    data: Some(data),
                    ..Secret::default()
                };
                self.secrets_api.create(&secret, &post).await?
            }
            // Never take over a Secret someone else made (the sample-controller's rule).
            Some(s) if !s.is_controlled_by(&*cm) => return Err(format!("{key}: not ours").into()),
            Some(secret) if secret.data.as_ref() == Some(&data) => return Ok(()), // up to date
            Some(secret) => {
                let mut secret = (*secret).clone(); // the cache's copy is shared: clone to edit
                secret.data = Some(data);
                self.secrets_api.update(name, &secret, &post).await?
            }
        };
        // Read your writes: the next reconcile of this key finds this write in the cache.
        let rv = written.resource_version();
        let synced = self
            .secrets
            .wait_for_resource_version(rv, Duration::from_secs(10));
        Ok(synced.await?)
    }
}

/// The Secret's data: the ConfigMap's `data`, as bytes.
fn desired_data(cm: &ConfigMap) -> BTreeMap<String, ByteString> {
    let data = cm.data.iter().flatten();
    data.map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec())))
        .collect()
}
