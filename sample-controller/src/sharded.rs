//! `--sharded`: the Foo controller as one of N shards, each replica reconciling the Foos the
//! sharder assigned it (see the `clientgo-sharding` crate), instead of one leader doing all.
//!
//! The wiring of [`app`], with these differences:
//! * The informer factory's list options carry the shard's label selector, so this
//!   replica's caches hold only its Foos and their Deployments (the sharder labels a
//!   Deployment with its Foo's shard).
//! * Leader election is only for the sharder role: every replica campaigns, one labels the
//!   objects; every replica reconciles. A replica that loses the sharder role campaigns again.
//! * The replica joins (takes its member Lease) only once its caches have synced, and exits
//!   non-zero without joining if they do not within a minute: a member is assigned Foos, so
//!   it must be able to reconcile them.
//! * The workers run while this replica holds its member Lease, and go through a
//!   [`ShardGate`]: a Foo being drained is no longer reconciled here, and once its reconcile
//!   in hand (if any) has finished the gate gives it back. The workers stop at the Lease's
//!   renew deadline ([`WorkerPool::fence`]); a lost member Lease fences them and ends [`run`]
//!   with [`RunError::LostLeadership`], so the process exits and is restarted, as with
//!   `--leader-elect`.
//! * The sharder's label patches and the gate's drain acknowledgements go through a client of
//!   their own, throttled apart from the reconciles' (`--sharder-qps`, 50 requests/s by
//!   default): assigning a collection is one patch per object.
//!
//! The controller itself is unchanged but for one thing: the Deployments it creates carry
//! their Foo's shard label from their creation on (dependents follow their controller), so a
//! new Deployment is in this replica's cache at once; the sharder, which labels dependents
//! too, leaves a correct label alone. The gate's handler enqueues a Foo once the gate knows
//! it owns it (the controller's own handler may enqueue it earlier, when a worker would still
//! skip it), and the gate wraps each reconcile.
//!
//! The endpoints are those of the normal mode (see [`serve`](crate::serve)): `/readyz` once
//! the shard's caches have synced, and on `/metrics` the same work queue, informer, REST
//! client and worker metrics, plus the sharder's (`sharding_*`, see
//! [`clientgo::sharding::metrics`]: objects per shard, assignments, moves, drains, drain
//! durations, assignment latency; written by the replica that holds the sharder role, so
//! the others export zeros) and the gate's (`sharding_gate_*`: drains this replica
//! acknowledged, reconciles it skipped).

use std::sync::Arc;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::{ApiResource, Resource};
use clientgo::rest::{Config, RestClient};
use clientgo::sharding::{Partition, ShardGate, ShardedReplica, ShardedResource, SharderConfig};
use clientgo::tools::cache::{EnqueueHandler, InformerSynced, wait_for_cache_sync};
use clientgo::tools::leaderelection::{Ended, Fence, leader_election_client};
use clientgo::util::workqueue::{ObjectKey, WorkerPool};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::registry::Registry;

use crate::app::{self, App, Options, RunError};
use crate::controller::{CONTROLLER_NAME, Controller};
use crate::foo::Foo;

/// Which replica this is, and where the Leases live.
#[derive(Debug, Clone)]
pub struct Sharding {
    /// This replica's identity: the shard label's value (a valid label value, e.g. the pod
    /// name; keep it across restarts so a restarted replica keeps its Foos).
    pub identity: String,
    /// Where the member Leases and the sharder's Lease live.
    pub lease_namespace: String,
    /// The sharder's own client-side throttle, in requests per second (burst twice that):
    /// assigning a whole collection is one label patch per object, which the reconciles'
    /// throttle (client-go's 5 requests/s) would stretch to an hour for 20,000 Foos, and
    /// would starve the reconciles of. [`DEFAULT_SHARDER_QPS`] by default. Ignored when the
    /// configuration turns the throttle off.
    pub sharder_qps: f32,
}

/// The sharder's default throttle: 50 label patches per second (burst 100).
pub const DEFAULT_SHARDER_QPS: f32 = 50.0;

/// The client the sharder and the drain acknowledgements write through: `config` with a
/// throttle of its own and a user agent that names the role.
fn sharder_client(config: &Config, qps: f32) -> Result<RestClient, clientgo::rest::Error> {
    let mut config = config.clone();
    if config.qps >= 0.0 {
        config.qps = qps;
        config.burst = (2.0 * qps).ceil() as i32;
    }
    config.user_agent = format!("{}/sharder", config.user_agent);
    RestClient::new(&config)
}

/// The sharded resources: Foos by their own key, Deployments following their Foo.
pub fn sharded_resources() -> Vec<ShardedResource> {
    let foos = ApiResource {
        group: Foo::GROUP.into(),
        version: Foo::VERSION.into(),
        kind: Foo::KIND.into(),
        plural: Foo::PLURAL.into(),
        namespaced: true,
    };
    let deployments = ApiResource {
        group: "apps".into(),
        version: "v1".into(),
        kind: "Deployment".into(),
        plural: "deployments".into(),
        namespaced: true,
    };
    vec![
        ShardedResource {
            resource: foos,
            partition: Partition::Object,
        },
        ShardedResource {
            resource: deployments,
            partition: Partition::Controller {
                kind: Foo::KIND.into(),
            },
        },
    ]
}

/// One shard of the controller, wired, not yet running: [`build`] it, serve its
/// [`ready`](Replica::ready) and metrics, then [`run`](Replica::run) it.
pub struct Replica {
    app: App,
    sharded: ShardedReplica,
    lease: String,
}

/// Wires this replica as one shard (see the module docs); with a `registry`, exports its
/// metrics there (the REST client's are registered where the client is built).
pub fn build(
    config: &Config,
    client: RestClient,
    options: Options,
    sharding: Sharding,
    registry: Option<&mut Registry>,
) -> Result<Replica, RunError> {
    let controller_error = |e: &dyn std::fmt::Display| RunError::Controller(e.to_string());
    let mut registry = registry;
    let mut sharder_config = SharderConfig::new(
        CONTROLLER_NAME,
        &sharding.lease_namespace,
        &sharding.identity,
        sharded_resources(),
    );
    sharder_config.watch_namespace = options.namespace.clone();
    let election_client = leader_election_client(config, &sharder_config.election)
        .map_err(|e| controller_error(&e))?;
    let sharder_client =
        sharder_client(config, sharding.sharder_qps).map_err(|e| controller_error(&e))?;
    let sharded = ShardedReplica::new(&sharder_client, &election_client, sharder_config)
        .map_err(|e| controller_error(&e))?;
    let app = app::build_with(
        client.clone(),
        options,
        sharded.informer_factory(&client),
        vec![sharded.shard().label().0],
        registry.as_deref_mut(),
    )
    .map_err(RunError::Controller)?;
    let gate = sharded.gate();
    app.foos
        .add_event_handler(gate.handler(EnqueueHandler::new(app.controller.queue().clone())))
        .map_err(|e| controller_error(&e))?;
    if let Some(registry) = registry {
        let registry = registry.sub_registry_with_prefix("sharding");
        sharded.sharder().metrics().register(registry);
        registry.register_collector(Box::new(GateCollector(gate.clone())));
    }
    let lease = format!(
        "{}/{}",
        sharding.lease_namespace,
        clientgo::sharding::member_lease_name(CONTROLLER_NAME, &sharding.identity)
    );
    Ok(Replica {
        app,
        sharded,
        lease,
    })
}

/// Runs this replica as one shard until `cancel`, without metrics; see the module docs.
pub async fn run(
    config: &Config,
    client: RestClient,
    options: Options,
    sharding: Sharding,
    cancel: CancellationToken,
) -> Result<(), RunError> {
    build(config, client, options, sharding, None)?
        .run(cancel)
        .await
}

impl Replica {
    /// Whether the shard's informer caches have synced (what `/readyz` reports).
    pub fn ready(&self) -> impl Fn() -> bool + Send + Sync + 'static {
        self.app.ready()
    }

    /// The controller, e.g. to watch its [`Stats`](crate::controller::Stats) while it runs.
    pub fn controller(&self) -> Arc<Controller> {
        self.app.controller()
    }

    /// The gate the workers and the Foo handler go through.
    pub fn gate(&self) -> &ShardGate {
        self.sharded.gate()
    }

    /// Runs until `cancel`: informers, the sharder candidate, and the workers while this
    /// replica holds its member Lease. After a lost member Lease, returns
    /// [`RunError::LostLeadership`].
    pub async fn run(self, cancel: CancellationToken) -> Result<(), RunError> {
        let Replica {
            app,
            sharded,
            lease,
        } = self;
        let informers = CancellationToken::new();
        app.factory.start(&informers);
        let (workers, drain) = (app.options.workers, app.options.drain_timeout);
        let (foos, deployments) = (&app.foos, &app.deployments);
        let (gate, controller) = (sharded.gate(), &app.controller);
        // No Lease without work: this replica joins the shards only once its caches have
        // synced (the informers retry with backoff meanwhile, and /readyz says not ready),
        // and gives up, exiting non-zero without ever holding its member Lease, if they have
        // not within a minute.
        let caches: [&dyn InformerSynced; 2] = [foos, deployments];
        let synced = tokio::select! {
            synced = wait_for_cache_sync(&caches, Duration::from_secs(60)) => Some(synced),
            () = cancel.cancelled() => None,
        };
        match synced {
            Some(Ok(())) => {}
            Some(Err(error)) => {
                app::stop(&informers, &app.factory, &app.broadcaster).await;
                return Err(RunError::Controller(format!(
                    "caches not synced ({error}): not joining the shards"
                )));
            }
            None => {
                app::stop(&informers, &app.factory, &app.broadcaster).await;
                return Ok(());
            }
        }
        tracing::info!(shard = %gate.shard().replica(), "caches synced; joining the shards");
        // While this replica holds its member Lease: the workers, each reconcile through the
        // gate, stopped at the Lease's deadline as well as by the elector.
        let work = |member: CancellationToken, fence: Fence| async move {
            let reconcile = {
                let (gate, controller) = (gate.clone(), controller.clone());
                move |key: ObjectKey| {
                    let (gate, controller) = (gate.clone(), controller.clone());
                    async move { gate.reconcile(&key, || controller.reconcile(&key)).await }
                }
            };
            WorkerPool::new(workers)
                .drain_timeout(drain)
                .stats(controller.stats().workers())
                .fence(fence.deadline())
                .run(controller.queue(), reconcile, member)
                .await;
        };
        let cancel_seen = cancel.clone();
        let ended = sharded.run(cancel, work).await;
        app::stop(&informers, &app.factory, &app.broadcaster).await;
        match ended.map_err(|e| RunError::Controller(e.to_string()))? {
            Ended::Lost => Err(RunError::LostLeadership { lease }),
            Ended::Cancelled => Ok(()),
            // The workers return only when cancelled; anything else left the shards.
            Ended::WorkFinished if cancel_seen.is_cancelled() => Ok(()),
            Ended::WorkFinished => Err(RunError::Controller(
                "the workers stopped: left the shards".into(),
            )),
        }
    }
}

/// Exports the gate's counts (`sharding_gate_acknowledged_drains_total`,
/// `sharding_gate_skipped_reconciles_total`), read when scraped.
#[derive(Debug)]
struct GateCollector(ShardGate);

impl prometheus_client::collector::Collector for GateCollector {
    fn encode(
        &self,
        mut encoder: prometheus_client::encoding::DescriptorEncoder,
    ) -> Result<(), std::fmt::Error> {
        use prometheus_client::encoding::EncodeMetric;
        let counts = [
            (
                "gate_acknowledged_drains",
                "Drains this replica acknowledged",
                self.0.acknowledged(),
            ),
            (
                "gate_skipped_reconciles",
                "Reconciles this replica skipped: the key was not its own, or draining",
                self.0.skipped(),
            ),
        ];
        for (name, help, count) in counts {
            let counter = ConstCounter::new(count);
            let metric = encoder.encode_descriptor(name, help, None, counter.metric_type())?;
            counter.encode(metric)?;
        }
        Ok(())
    }
}
