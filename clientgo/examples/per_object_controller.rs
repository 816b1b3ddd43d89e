//! per-object-controller: mirrors each ConfigMap labelled `clientgo.example/mirror=true` into
//! a Secret of the same name, owned by the ConfigMap through a controller ownerReference.
//!
//! The smallest honest version of kubernetes/sample-controller's loop (Foo -> Deployment,
//! here ConfigMap -> Secret): one key per owner (`namespace/name`); the owner's changes enqueue
//! its key, and so do the owned Secret's changes (through its controller reference), so a
//! tampered or deleted copy is repaired; the reconcile reads both listers, computes the
//! desired Secret and writes only when it differs. Deleting the ConfigMap deletes the Secret
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
use clientgo::apimachinery::Object;
use clientgo::rest::{Config, PostParams, ResourceClient, RestClient};
use clientgo::tools::cache::{
    DeleteEvent, NamespaceLister, ResourceEventHandlerFuncs, SharedInformerFactory,
    split_meta_namespace_key, wait_for_cache_sync,
};
use clientgo::util::workqueue::{RateLimitingQueue, run_workers};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

type BoxError = Box<dyn Error + Send + Sync>;

/// The label that opts a ConfigMap in.
pub const MIRROR: &str = "clientgo.example/mirror";

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    tracing_subscriber::fmt::init();
    let config = Config::infer()?;
    let namespace = config.default_namespace.clone();
    run(config, &namespace, clientgo::signals::shutdown_on_signal()).await
}

/// What a reconcile reads and writes through.
struct Controller {
    configmaps: NamespaceLister<ConfigMap>,
    secrets: NamespaceLister<Secret>,
    secrets_api: ResourceClient<Secret>,
}

/// Runs the controller in `namespace` until `shutdown`.
pub async fn run(
    config: Config,
    namespace: &str,
    shutdown: CancellationToken,
) -> Result<(), BoxError> {
    let client = RestClient::new(&config)?;
    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.to_owned())
        .build();
    let (configmaps, secrets) = (
        factory.informer::<ConfigMap>(),
        factory.informer::<Secret>(),
    );
    let queue = RateLimitingQueue::<Arc<str>>::with_default_rate_limiter();

    // Handlers only enqueue keys. An owner's add or update enqueues the owner. A deleted
    // owner needs nothing: the garbage collector deletes its Secret.
    let (on_add, on_update) = (queue.clone(), queue.clone());
    configmaps.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(move |cm: &Arc<ConfigMap>, _| on_add.add(cm.key().into()))
            .update_func(move |_, cm: &Arc<ConfigMap>| on_update.add(cm.key().into())),
    )?;
    // Any change to a Secret, its deletion included, enqueues the ConfigMap controlling it.
    let (on_add, on_update, on_delete) = (queue.clone(), queue.clone(), queue.clone());
    secrets.add_event_handler(
        ResourceEventHandlerFuncs::new()
            .add_func(move |s: &Arc<Secret>, _| enqueue_owner(&on_add, s))
            .update_func(move |_, s: &Arc<Secret>| enqueue_owner(&on_update, s))
            .delete_func(move |event: DeleteEvent<Secret>| {
                // A tombstone (a delete the watch missed) may carry the last known state.
                if let Some(s) = event.object() {
                    enqueue_owner(&on_delete, s);
                }
            }),
    )?;

    factory.start(&shutdown);
    wait_for_cache_sync(&[&configmaps, &secrets], Duration::from_secs(60)).await?;
    let controller = Controller {
        configmaps: configmaps.lister().namespace(namespace),
        secrets: secrets.lister().namespace(namespace),
        secrets_api: ResourceClient::namespaced(&client, namespace),
    };
    run_workers(&queue, 2, |key| controller.reconcile(key), shutdown).await;
    factory.shutdown().await;
    Ok(())
}

/// Enqueues the key of the ConfigMap that controls `secret`, if one does.
fn enqueue_owner(queue: &RateLimitingQueue<Arc<str>>, secret: &Secret) {
    if let Some(owner) = secret.controller_ref().filter(|o| o.kind == "ConfigMap") {
        queue.add(format!("{}/{}", secret.namespace(), owner.name).into());
    }
}

impl Controller {
    /// Makes the Secret of ConfigMap `key` match it. Reads only the caches; writes only a
    /// difference.
    async fn reconcile(&self, key: Arc<str>) -> Result<(), BoxError> {
        let (_, name) = split_meta_namespace_key(&key)?;
        let Some(cm) = self.configmaps.get(name) else {
            return Ok(()); // deleted: the garbage collector deletes its Secret
        };
        if cm.labels().get(MIRROR) != Some("true") || cm.is_being_deleted() {
            return Ok(());
        }
        let data = desired_data(&cm);
        match self.secrets.get(name) {
            None => {
                let secret = Secret {
                    metadata: ObjectMeta {
                        name: Some(name.to_owned()),
                        // client-go's `metav1.NewControllerRef(cm, gvk)`.
                        owner_references: Some(vec![OwnerReference {
                            api_version: "v1".into(),
                            kind: "ConfigMap".into(),
                            name: cm.name().to_owned(),
                            uid: cm.uid().to_owned(),
                            controller: Some(true),
                            block_owner_deletion: Some(true),
                        }]),
                        ..ObjectMeta::default()
                    },
                    data: Some(data),
                    ..Secret::default()
                };
                self.secrets_api
                    .create(&secret, &PostParams::default())
                    .await?;
            }
            // Never take over a Secret someone else made (the sample-controller's rule).
            Some(secret) if secret.controller_ref().is_none_or(|o| o.uid != cm.uid()) => {
                return Err(
                    format!("Secret {key} exists and is not controlled by its ConfigMap").into(),
                );
            }
            Some(secret) if secret.data.as_ref() == Some(&data) => {} // up to date
            Some(secret) => {
                let mut secret = (*secret).clone(); // the cache's copy is shared: clone to edit
                secret.data = Some(data);
                self.secrets_api
                    .update(name, &secret, &PostParams::default())
                    .await?;
            }
        }
        Ok(())
    }
}

/// The Secret's data: the ConfigMap's `data`, as bytes.
fn desired_data(cm: &ConfigMap) -> BTreeMap<String, ByteString> {
    let data = cm.data.iter().flatten();
    data.map(|(k, v)| (k.clone(), ByteString(v.as_bytes().to_vec())))
        .collect()
}
