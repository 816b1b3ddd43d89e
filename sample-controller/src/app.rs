//! Wiring the controller to a cluster, as kubernetes/sample-controller's `main.go` does: a
//! REST client from the configuration, one informer per resource, an event recorder, and
//! (optionally) leader election so that only one replica acts at a time.

use std::sync::Arc;
use std::time::Duration;

use clientgo_informer::{Indexers, ListWatch, SharedIndexInformer, SharedInformerOptions};
use clientgo_leaderelection::{LeaderElectionConfig, LeaderElector, LeaseLock};
use clientgo_record::{EventBroadcaster, EventSource, RestEventSink};
use clientgo_rest::{ResourceClient, RestClient};
use clientgo_workqueue::{PrometheusMetricsProvider, QueueConfig};
use k8s_openapi::api::apps::v1::Deployment;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::controller::{CONTROLLER_NAME, Controller};
use crate::foo::Foo;

/// How to run the controller.
#[derive(Debug, Clone)]
pub struct Options {
    /// Parallel workers.
    pub workers: usize,
    /// Only this namespace (`None`: all namespaces).
    pub namespace: Option<String>,
    /// How often informers re-deliver their whole cache (client-go's resync period).
    pub resync: Duration,
    /// Run only while holding this Lease (`namespace/name`), with this identity.
    pub leader_election: Option<(String, String, String)>,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            workers: 2,
            namespace: None,
            resync: Duration::from_secs(30),
            leader_election: None,
        }
    }
}

/// An informer over `T` in the options' namespace (or all).
fn informer<T>(client: &RestClient, options: &Options, name: &str) -> SharedIndexInformer<T>
where
    T: clientgo_apimachinery::Resource
        + clientgo_apimachinery::Object
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    let resources = match &options.namespace {
        Some(namespace) => ResourceClient::<T>::namespaced(client, namespace),
        None => ResourceClient::<T>::all(client),
    };
    SharedIndexInformer::new(
        ListWatch::new(resources),
        Indexers::default(),
        SharedInformerOptions {
            name: name.to_owned(),
            resync_period: options.resync,
            ..SharedInformerOptions::default()
        },
    )
}

/// A controller wired to its informers and event recorder, not yet running.
pub struct App {
    client: RestClient,
    options: Options,
    foos: SharedIndexInformer<Foo>,
    deployments: SharedIndexInformer<Deployment>,
    broadcaster: EventBroadcaster,
    controller: Arc<Controller>,
}

/// Builds the controller; with a `registry`, its work queue and reconcile counters are
/// exported there (the REST client's metrics are registered where the client is built).
pub fn build(
    client: RestClient,
    options: Options,
    registry: Option<&mut Registry>,
) -> Result<App, String> {
    let foos = informer::<Foo>(&client, &options, "foos");
    let deployments = informer::<Deployment>(&client, &options, "deployments");
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(RestEventSink::new(&client));
    let recorder = broadcaster.new_recorder(EventSource::component(CONTROLLER_NAME));
    let mut queue_config = QueueConfig::named("Foos");
    let mut registry = registry;
    if let Some(registry) = registry.as_deref_mut() {
        queue_config =
            queue_config.with_metrics_provider(Arc::new(PrometheusMetricsProvider::new(registry)));
    }
    let controller = Controller::new(
        client.clone(),
        foos.clone(),
        deployments.clone(),
        recorder,
        queue_config,
    )
    .map_err(|e| e.to_string())?;
    if let Some(registry) = registry {
        controller.stats().register(registry);
    }
    Ok(App {
        client,
        options,
        foos,
        deployments,
        broadcaster,
        controller,
    })
}

impl App {
    /// Whether both informer caches have synced (what `/readyz` reports).
    pub fn ready(&self) -> impl Fn() -> bool + Send + Sync + 'static {
        let (foos, deployments) = (self.foos.clone(), self.deployments.clone());
        move || foos.has_synced() && deployments.has_synced()
    }

    /// Runs until `cancel`: informers, workers, and leader election when asked for. Returns
    /// once everything has stopped.
    pub async fn run(self, cancel: CancellationToken) -> Result<Arc<Controller>, String> {
        let App {
            client,
            options,
            foos,
            deployments,
            broadcaster,
            controller,
        } = self;
        // The informers run for the whole life of the process, leader or not, so a new
        // leader starts with a warm cache.
        let informers = CancellationToken::new();
        let running = [
            tokio::spawn({
                let (foos, token) = (foos.clone(), informers.clone());
                async move { foos.run(token).await }
            }),
            tokio::spawn({
                let (deployments, token) = (deployments.clone(), informers.clone());
                async move { deployments.run(token).await }
            }),
        ];

        let result = match options.leader_election.clone() {
            None => {
                controller
                    .clone()
                    .run(options.workers, cancel.clone())
                    .await
            }
            Some((namespace, name, identity)) => {
                let lock = LeaseLock::new(&client, namespace, name, identity);
                let config = LeaderElectionConfig {
                    name: CONTROLLER_NAME.to_owned(),
                    release_on_cancel: true,
                    ..LeaderElectionConfig::default()
                };
                let elector = LeaderElector::new(lock, config)
                    .map_err(|e| e.to_string())?
                    .on_new_leader(|holder| tracing::info!(holder, "new leader"));
                let workers = options.workers;
                let leader = controller.clone();
                let ended = elector
                    .run(cancel.clone(), |leading| async move {
                        if let Err(error) = leader.run(workers, leading).await {
                            tracing::error!(%error, "controller stopped");
                        }
                    })
                    .await;
                tracing::info!(?ended, "leader election ended");
                Ok(())
            }
        };
        informers.cancel();
        for task in running {
            let _ = task.await;
        }
        broadcaster.shutdown();
        result.map(|()| controller)
    }
}

/// Builds and runs the controller without metrics (the demo and the tests).
pub async fn run(
    client: RestClient,
    options: Options,
    cancel: CancellationToken,
) -> Result<Arc<Controller>, String> {
    build(client, options, None)?.run(cancel).await
}
