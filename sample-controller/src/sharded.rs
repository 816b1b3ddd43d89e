//! `--sharded`: the Foo controller as one of N shards, each replica reconciling the Foos the
//! sharder assigned it (see the `clientgo-sharding` crate), instead of one leader doing all.
//!
//! The wiring of [`app`](crate::app), with three differences:
//! * The informer factory's list options carry the shard's label selector, so this
//!   replica's caches hold only its Foos and their Deployments (the sharder labels a
//!   Deployment with its Foo's shard).
//! * Leader election is only for the sharder role: every replica campaigns, one labels the
//!   objects; every replica reconciles. A replica that loses the sharder role campaigns again.
//! * The workers run while this replica holds its member Lease, and go through a
//!   [`ShardGate`]: a Foo being drained is no longer reconciled here, and once its reconcile
//!   in hand (if any) has finished the gate gives it back. A lost member Lease fences the
//!   workers and ends [`run`] with [`RunError::LostLeadership`], so the process exits and is
//!   restarted, as with `--leader-elect`.
//!
//! The controller itself is unchanged: the gate's handler enqueues a Foo once the gate knows
//! it owns it (the controller's own handler may enqueue it earlier, when a worker would still
//! skip it), and the gate wraps each reconcile. The Deployments a reconcile creates carry no
//! shard label until the sharder gives them their Foo's (milliseconds later); a reconcile in
//! between meets `AlreadyExists` and is retried after its backoff.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, Compact, Resource};
use clientgo_informer::{
    EnqueueHandler, InformerSynced, KeyQueue, SharedInformerFactory, wait_for_cache_sync,
};
use clientgo_leaderelection::{Ended, LeaderElectionConfig, leader_election_client};
use clientgo_record::{EventBroadcaster, EventSource, RestEventSink};
use clientgo_rest::{Config, RestClient};
use clientgo_sharding::{
    Membership, Partition, Shard, ShardGate, ShardedResource, Sharder, SharderConfig,
};
use clientgo_workqueue::{Priority, QueueConfig, WorkerPool};
use k8s_openapi::api::apps::v1::Deployment;
use tokio_util::sync::CancellationToken;

use crate::app::{Options, RunError};
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

/// The controller's queue, as the gate's handler adds to it.
struct ControllerQueue(Arc<Controller>);

impl KeyQueue for ControllerQueue {
    fn add_key(&self, key: Arc<str>, priority: Priority) {
        self.0.queue().add_key(key, priority);
    }
}

/// Runs this replica as one shard until `cancel`; see the module docs.
pub async fn run(
    config: &Config,
    client: RestClient,
    options: Options,
    sharding: Sharding,
    cancel: CancellationToken,
) -> Result<(), RunError> {
    let controller_error = |e: &dyn std::fmt::Display| RunError::Controller(e.to_string());
    let shard = Shard::new(CONTROLLER_NAME, &sharding.identity);
    let mut factory = SharedInformerFactory::builder(&client)
        .default_resync(options.resync)
        .tweak_list_options(shard.tweak());
    if let Some(namespace) = &options.namespace {
        factory = factory.namespace(namespace.clone());
    }
    let factory = factory.build();
    let foos = factory.informer::<Foo>();
    let deployments = factory.informer::<Compact<Deployment>>();
    let broadcaster = EventBroadcaster::new();
    broadcaster.start_recording_to_sink(RestEventSink::new(&client));
    let recorder = broadcaster.new_recorder(EventSource::component(CONTROLLER_NAME));
    let controller = Controller::new(
        client.clone(),
        foos.clone(),
        deployments.clone(),
        recorder,
        QueueConfig::named("Foos"),
        options.priority_queue,
    )
    .map_err(|e| controller_error(&e))?;
    let resources = sharded_resources();
    let gate = ShardGate::new(shard, &client, &resources[0].resource);
    foos.add_event_handler(gate.handler(EnqueueHandler::new(ControllerQueue(controller.clone()))))
        .map_err(|e| controller_error(&e))?;

    let election = LeaderElectionConfig::default();
    let election_client =
        leader_election_client(config, &election).map_err(|e| controller_error(&e))?;
    let membership = Membership::new(
        &election_client,
        &sharding.lease_namespace,
        CONTROLLER_NAME,
        &sharding.identity,
    );
    let mut sharder_config = SharderConfig::new(
        CONTROLLER_NAME,
        &sharding.lease_namespace,
        &sharding.identity,
        resources,
    );
    sharder_config.watch_namespace = options.namespace.clone();
    let sharder = Sharder::new(&client, sharder_config);

    let informers = CancellationToken::new();
    factory.start(&informers);
    let (workers, drain) = (options.workers, options.drain_timeout);
    let work = |member: CancellationToken| {
        let (gate, controller) = (gate.clone(), controller.clone());
        async move {
            let caches: [&dyn InformerSynced; 2] = [&foos, &deployments];
            tokio::select! {
                synced = wait_for_cache_sync(&caches, Duration::from_secs(60)) => {
                    if let Err(error) = synced {
                        tracing::error!(%error, "caches not synced: this shard stops");
                        return;
                    }
                }
                () = member.cancelled() => return,
            }
            tracing::info!(shard = %gate.shard().replica(), "caches synced; reconciling this shard's Foos");
            let reconcile = |key: Arc<str>| {
                let (gate, controller) = (gate.clone(), controller.clone());
                async move { gate.reconcile(&key, || controller.reconcile(&key)).await }
            };
            tokio::join!(
                gate.run_acks(member.clone()),
                WorkerPool::new(workers)
                    .drain_timeout(drain)
                    .stats(controller.stats().workers())
                    .run(controller.queue(), reconcile, member.clone()),
            );
        }
    };
    let sharder_cancel = cancel.child_token();
    let sharder_role = async {
        // The sharder role is campaigned for again after a loss; it ends with the member.
        while let Ok(Ended::Lost) = sharder.run(sharder_cancel.clone()).await {
            tracing::warn!("lost the sharder role; campaigning again");
        }
    };
    let member = async {
        let ended = membership.run(cancel.clone(), work).await;
        sharder_cancel.cancel();
        ended
    };
    let ((), ended) = tokio::join!(sharder_role, member);
    informers.cancel();
    if tokio::time::timeout(Duration::from_secs(10), factory.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("the informers did not stop in time");
    }
    broadcaster.shutdown();
    match ended.map_err(|e| controller_error(&e))? {
        Ended::Lost => Err(RunError::LostLeadership {
            lease: format!(
                "{}/{}",
                sharding.lease_namespace,
                clientgo_sharding::member_lease_name(CONTROLLER_NAME, &sharding.identity)
            ),
        }),
        Ended::Cancelled | Ended::WorkFinished => Ok(()),
    }
}
