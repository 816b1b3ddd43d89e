//! Wiring the controller to a cluster, as kubernetes/sample-controller's `main.go` does: a
//! REST client from the configuration, one shared informer factory handing out an informer
//! per resource, an event recorder, and (optionally) leader election so that only one
//! replica acts at a time.
//!
//! Leader election runs through a client of its own ([`LeaderElection::new`]), so renewals
//! never queue behind the controller's requests in a shared throttle. When the lease is
//! lost, the controller is fenced (its future dropped, every reconcile in flight with it) and
//! [`App::run`] returns [`RunError::LostLeadership`]: the binary then exits non-zero, as
//! kube-controller-manager does, and its Deployment restarts it as a fresh candidate. A clean
//! shutdown drains the reconciles in flight for at most [`Options::drain_timeout`], then
//! releases the lease.

use std::sync::Arc;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::rest::{Config, RestClient};
use clientgo::tools::cache::{
    InformerMetrics, SharedIndexInformer, SharedInformerFactory, SharedInformerFactoryBuilder,
    SharedInformerOptions,
};
use clientgo::tools::leaderelection::{
    Ended, LeaderElectionConfig, LeaderElector, LeaseLock, leader_election_client,
};
use clientgo::tools::record::{EventBroadcaster, EventSource, RestEventSink};
use clientgo::util::workqueue::{PrometheusMetricsProvider, QueueConfig};
use k8s_openapi::api::apps::v1::Deployment;
use prometheus_client::registry::Registry;

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
    /// Run only while holding a Lease.
    pub leader_election: Option<LeaderElection>,
    /// Use the priority work queue (see [`crate::work_queue`]) instead of client-go's FIFO.
    pub priority_queue: bool,
    /// How long a shutdown waits for the reconciles in flight before it cancels them. With
    /// leader election the elector allows the drain its renew deadline at most (10 s).
    pub drain_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            workers: 2,
            namespace: None,
            resync: Duration::from_secs(30),
            leader_election: None,
            priority_queue: false,
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
        }
    }
}

/// The default drain timeout: half the default renew deadline, so a draining leader stops
/// well before the elector's own bound.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long stopping waits for the informers to end.
const INFORMERS_STOP: Duration = Duration::from_secs(10);

/// Which Lease to hold, as whom, with which timing, through which client.
#[derive(Debug, Clone)]
pub struct LeaderElection {
    /// The Lease's namespace.
    pub namespace: String,
    /// The Lease's name.
    pub name: String,
    /// This replica's identity in the Lease.
    pub identity: String,
    /// The timing (client-go's defaults; the name and `release_on_cancel` are set here).
    pub config: LeaderElectionConfig,
    /// The client the Lease is read and written through: not the controller's.
    pub client: RestClient,
}

impl LeaderElection {
    /// The Lease `namespace/name` for `identity`, with client-go's timing and a client of its
    /// own built from `config` (see [`leader_election_client`]).
    pub fn new(
        config: &Config,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Result<Self, clientgo::rest::Error> {
        let election = LeaderElectionConfig {
            name: CONTROLLER_NAME.to_owned(),
            release_on_cancel: true,
            ..LeaderElectionConfig::default()
        };
        Ok(Self {
            namespace: namespace.into(),
            name: name.into(),
            identity: identity.into(),
            client: leader_election_client(config, &election)?,
            config: election,
        })
    }
}

/// Why [`App::run`] failed.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// The controller could not be set up or stopped on an error.
    #[error("{0}")]
    Controller(String),
    /// The lease was lost: the controller was fenced. The process should exit (non-zero) and
    /// be restarted, as kube-controller-manager is.
    #[error("lost the lease {lease}: stopped all work; exiting so that the replica restarts")]
    LostLeadership {
        /// The Lease, `namespace/name`.
        lease: String,
    },
}

/// A controller wired to its informers and event recorder, not yet running.
pub struct App {
    pub(crate) options: Options,
    pub(crate) factory: SharedInformerFactory,
    pub(crate) foos: SharedIndexInformer<Foo>,
    pub(crate) deployments: SharedIndexInformer<clientgo::apimachinery::Compact<Deployment>>,
    pub(crate) broadcaster: EventBroadcaster,
    pub(crate) controller: Arc<Controller>,
}

/// Builds the controller; with a `registry`, its work queue, informer and reconcile metrics
/// are exported there (the REST client's metrics are registered where the client is built).
pub fn build(
    client: RestClient,
    options: Options,
    registry: Option<&mut Registry>,
) -> Result<App, String> {
    let mut factory = SharedInformerFactory::builder(&client);
    if let Some(namespace) = &options.namespace {
        factory = factory.namespace(namespace.clone());
    }
    build_with(client, options, factory, Vec::new(), registry)
}

/// [`build`] over the informer factory `factory` will build (with `--sharded`, the shard's,
/// from [`ShardedReplica::informer_factory`](clientgo::sharding::ShardedReplica::informer_factory):
/// its informers list and watch only the shard's objects), the Deployments the controller
/// creates carrying their Foo's values of the labels `inherited_labels` (the shard label).
pub(crate) fn build_with(
    client: RestClient,
    options: Options,
    factory: SharedInformerFactoryBuilder,
    inherited_labels: Vec<String>,
    registry: Option<&mut Registry>,
) -> Result<App, String> {
    let mut registry = registry;
    // One factory per process: every part of the program that needs Foos or Deployments
    // shares one cache and one watch of each.
    let mut factory = factory.default_resync(options.resync);
    if let Some(registry) = registry.as_deref_mut() {
        factory = factory.informer_options(SharedInformerOptions {
            metrics: Some(InformerMetrics::register(registry)),
            ..SharedInformerOptions::default()
        });
    }
    let factory = factory.build();
    let foos = factory.informer::<Foo>();
    let deployments = factory.informer::<clientgo::apimachinery::Compact<Deployment>>();
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(RestEventSink::new(&client));
    let recorder = broadcaster.new_recorder(EventSource::component(CONTROLLER_NAME));
    let mut queue_config = QueueConfig::named("Foos");
    if let Some(registry) = registry.as_deref_mut() {
        queue_config =
            queue_config.with_metrics_provider(Arc::new(PrometheusMetricsProvider::new(registry)));
    }
    let controller = Controller::inheriting(
        client.clone(),
        foos.clone(),
        deployments.clone(),
        recorder,
        queue_config,
        options.priority_queue,
        inherited_labels,
    )
    .map_err(|e| e.to_string())?;
    if let Some(registry) = registry {
        controller.stats().register(registry);
    }
    Ok(App {
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
    /// once everything has stopped; after a lost lease, with [`RunError::LostLeadership`].
    pub async fn run(self, cancel: CancellationToken) -> Result<Arc<Controller>, RunError> {
        let App {
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

        let drain = options.drain_timeout;
        let result = match options.leader_election.clone() {
            None => controller
                .clone()
                .run(options.workers, drain, cancel.clone(), None)
                .await
                .map_err(RunError::Controller),
            Some(election) => {
                let lease = format!("{}/{}", election.namespace, election.name);
                let lock = LeaseLock::new(
                    &election.client,
                    election.namespace,
                    election.name,
                    election.identity,
                );
                let elector = LeaderElector::new(lock, election.config)
                    .map_err(|e| RunError::Controller(e.to_string()))?
                    .on_new_leader(|holder| tracing::info!(holder, "new leader"));
                let workers = options.workers;
                let leader = controller.clone();
                let fence = elector.fence();
                let ended = elector
                    .run(cancel.clone(), |leading| async move {
                        if let Err(error) = leader.run(workers, drain, leading, Some(fence)).await {
                            tracing::error!(%error, "controller stopped");
                        }
                    })
                    .await;
                tracing::info!(?ended, "leader election ended");
                match ended {
                    Ended::Lost => Err(RunError::LostLeadership { lease }),
                    Ended::Cancelled | Ended::WorkFinished => Ok(()),
                }
            }
        };
        stop(&informers, &factory, &broadcaster).await;
        result.map(|()| controller)
    }
}

/// Stops the informers (for a bounded time: after a lost lease the process must exit
/// promptly, whatever a watch does) and the event broadcaster.
pub(crate) async fn stop(
    informers: &CancellationToken,
    factory: &SharedInformerFactory,
    broadcaster: &EventBroadcaster,
) {
    informers.cancel();
    if tokio::time::timeout(INFORMERS_STOP, factory.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(timeout = ?INFORMERS_STOP, "the informers did not stop in time");
    }
    broadcaster.shutdown();
}

/// Builds and runs the controller without metrics (the demo and the tests).
pub async fn run(
    client: RestClient,
    options: Options,
    cancel: CancellationToken,
) -> Result<Arc<Controller>, RunError> {
    build(client, options, None)
        .map_err(RunError::Controller)?
        .run(cancel)
        .await
}
