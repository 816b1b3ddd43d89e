//! Wiring the controller to a cluster, as kubernetes/sample-controller's `main.go` does: a
//! REST client from the configuration, one shared informer factory handing out an informer
//! per resource, an event recorder, and (optionally) leader election so that only one
//! replica acts at a time.

use std::sync::Arc;
use std::time::Duration;

use clientgo_informer::{
    InformerMetrics, SharedIndexInformer, SharedInformerFactory, SharedInformerOptions,
};
use clientgo_leaderelection::{LeaderElectionConfig, LeaderElector, LeaseLock};
use clientgo_record::{EventBroadcaster, EventSource, RestEventSink};
use clientgo_rest::RestClient;
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

/// A controller wired to its informers and event recorder, not yet running.
pub struct App {
    client: RestClient,
    options: Options,
    factory: SharedInformerFactory,
    foos: SharedIndexInformer<Foo>,
    deployments: SharedIndexInformer<Deployment>,
    broadcaster: EventBroadcaster,
    controller: Arc<Controller>,
}

/// Builds the controller; with a `registry`, its work queue, informer and reconcile metrics
/// are exported there (the REST client's metrics are registered where the client is built).
pub fn build(
    client: RestClient,
    options: Options,
    registry: Option<&mut Registry>,
) -> Result<App, String> {
    let mut registry = registry;
    // One factory per process: every part of the program that needs Foos or Deployments
    // shares one cache and one watch of each.
    let mut factory = SharedInformerFactory::builder(&client).default_resync(options.resync);
    if let Some(namespace) = &options.namespace {
        factory = factory.namespace(namespace.clone());
    }
    if let Some(registry) = registry.as_deref_mut() {
        factory = factory.informer_options(SharedInformerOptions {
            metrics: Some(InformerMetrics::register(registry)),
            ..SharedInformerOptions::default()
        });
    }
    let factory = factory.build();
    let foos = factory.informer::<Foo>();
    let deployments = factory.informer::<Deployment>();
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(RestEventSink::new(&client));
    let recorder = broadcaster.new_recorder(EventSource::component(CONTROLLER_NAME));
    let mut queue_config = QueueConfig::named("Foos");
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
        factory,
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

    /// The controller, e.g. to watch its [`Stats`](crate::controller::Stats) while it runs.
    pub fn controller(&self) -> Arc<Controller> {
        self.controller.clone()
    }

    /// Runs until `cancel`: informers, workers, and leader election when asked for. Returns
    /// once everything has stopped.
    pub async fn run(self, cancel: CancellationToken) -> Result<Arc<Controller>, String> {
        let App {
            client,
            options,
            factory,
            broadcaster,
            controller,
            ..
        } = self;
        // The informers run for the whole life of the process, leader or not, so a new
        // leader starts with a warm cache.
        let informers = CancellationToken::new();
        factory.start(&informers);

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
        factory.shutdown().await;
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
