//! One replica of a sharded controller, its sharding roles wired together: the
//! [`ShardGate`] of its shard, its [`Membership`], and a [`Sharder`] candidate.
//!
//! The reference design (timebertt's kubernetes-controller-sharding) wires these in the
//! controller-runtime manager: a shard Lease, the sharder in the same binary, a label
//! selector on the manager's cache. Here a program builds a [`ShardedReplica`] from the
//! sharder's configuration, narrows its informer factory with
//! [`informer_factory`](ShardedReplica::informer_factory), wraps its primary handler with the
//! [`gate`](ShardedReplica::gate), and [`run`](ShardedReplica::run)s its workers under the
//! member Lease:
//!
//! ```no_run
//! # use clientgo_apimachinery::ApiResource;
//! # use clientgo_informer::EnqueueHandler;
//! # use clientgo_rest::RestClient;
//! # use clientgo_sharding::{ShardedReplica, SharderConfig};
//! # use clientgo_workqueue::{ObjectKey, Queue, WorkerPool};
//! # use tokio_util::sync::CancellationToken;
//! # async fn reconcile(key: ObjectKey) -> Result<(), std::convert::Infallible> { Ok(()) }
//! # async fn example(
//! #     client: RestClient,
//! #     election_client: RestClient,
//! #     sharder_config: SharderConfig,
//! #     primary: ApiResource,
//! #     cancel: CancellationToken,
//! # ) -> Result<(), Box<dyn std::error::Error>> {
//! let queue = Queue::<ObjectKey>::new();
//! let replica = ShardedReplica::new(&client, &election_client, sharder_config)?;
//! let factory = replica.informer_factory(&client).build();
//! let informer = factory.dynamic_informer(&primary);
//! informer.add_event_handler(replica.gate().handler(EnqueueHandler::new(queue.clone())))?;
//! factory.start(&cancel);
//! let gate = replica.gate().clone();
//! let work = move |key: ObjectKey| {
//!     let gate = gate.clone();
//!     async move { gate.reconcile(&key.clone(), || reconcile(key)).await }
//! };
//! replica
//!     .run(cancel, |member, fence| {
//!         // The workers stop when `member` is cancelled, and at the Lease's deadline.
//!         WorkerPool::new(4).fence(fence.deadline()).run(&queue, work, member)
//!     })
//!     .await?;
//! # Ok(())
//! # }
//! ```
//!
//! The sample-controller's `--sharded` mode, the sharding tests and the X1 benchmark are built
//! this way.

use std::future::Future;

use clientgo_informer::SharedInformerFactoryBuilder;
use clientgo_leaderelection::{ConfigError, Ended, Fence};
use clientgo_rest::RestClient;
use tokio_util::sync::CancellationToken;

use crate::identity::{IdentityError, validate_identity};
use crate::membership::Membership;
use crate::replica::{Shard, ShardGate};
use crate::ring::Partition;
use crate::sharder::{Sharder, SharderConfig};

/// Why a [`ShardedReplica`] cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum ReplicaError {
    /// Every resource of the configuration follows a controller: there is no primary resource,
    /// whose keys the workers reconcile and whose drains the gate acknowledges.
    #[error("no sharded resource is placed by its own key (Partition::Object)")]
    NoPrimaryResource,
    /// More than one resource of the configuration is placed by its own key: the gate
    /// acknowledges drains of one primary resource only, so the others' drains would never
    /// be acknowledged and their objects would never move.
    #[error(
        "several sharded resources are placed by their own key (Partition::Object): {}; the \
         gate acknowledges drains of one primary resource only, so drains of the others would \
         never be acknowledged and would block rebalancing",
        kinds.join(", ")
    )]
    SeveralPrimaryResources {
        /// The kinds of the resources placed by their own key, in the configuration's order.
        kinds: Vec<String>,
    },
    /// The replica's identity or the controller's name would name a Lease or a label value
    /// the API server refuses (see [`validate_identity`]).
    #[error(transparent)]
    InvalidIdentity(#[from] IdentityError),
}

/// One replica of a sharded controller; see the module docs. Clones share the gate.
#[derive(Debug, Clone)]
pub struct ShardedReplica {
    gate: ShardGate,
    membership: Membership,
    sharder: Sharder,
    watch_namespace: Option<String>,
}

impl ShardedReplica {
    /// Replica `config.identity` of `config.controller`:
    /// * its gate acknowledges drains of the one resource of `config.resources` placed by
    ///   its own key (the primary one), through `client`;
    /// * its member Lease, in `config.lease_namespace` with `config.election`'s timings, is
    ///   read and written through `election_client` (best a client of its own, see
    ///   [`clientgo_leaderelection::leader_election_client`], so that renewals never wait
    ///   behind the controller's requests; `client` itself will do in tests);
    /// * its sharder candidate labels objects through `client`, and campaigns and holds
    ///   departed members' Leases through `election_client`.
    ///
    /// Refuses an identity or a controller name the API server would refuse in a Lease name
    /// or a label value ([`validate_identity`]), a configuration without a primary resource,
    /// and one with several.
    pub fn new(
        client: &RestClient,
        election_client: &RestClient,
        config: SharderConfig,
    ) -> Result<Self, ReplicaError> {
        validate_identity(&config.controller, &config.identity)?;
        let primaries: Vec<_> = config
            .resources
            .iter()
            .filter(|r| r.partition == Partition::Object)
            .collect();
        let primary = match primaries[..] {
            [] => return Err(ReplicaError::NoPrimaryResource),
            [primary] => primary,
            ref several => {
                let kinds = several.iter().map(|r| r.resource.kind.clone()).collect();
                return Err(ReplicaError::SeveralPrimaryResources { kinds });
            }
        };
        let shard = Shard::new(&config.controller, &config.identity);
        let gate = ShardGate::new(shard, client, &primary.resource);
        let election = &config.election;
        let membership = Membership::new(
            election_client,
            &config.lease_namespace,
            &config.controller,
            &config.identity,
        )
        .timings(
            election.lease_duration,
            election.renew_deadline,
            election.retry_period,
        );
        Ok(ShardedReplica {
            gate,
            membership,
            watch_namespace: config.watch_namespace.clone(),
            sharder: Sharder::new(client, config).election_client(election_client),
        })
    }

    /// This replica's shard.
    pub fn shard(&self) -> &Shard {
        self.gate.shard()
    }

    /// The gate the primary resource's handler and the workers go through.
    pub fn gate(&self) -> &ShardGate {
        &self.gate
    }

    /// The sharder candidate (its [`metrics`](Sharder::metrics) are written while this
    /// replica holds the sharder role).
    pub fn sharder(&self) -> &Sharder {
        &self.sharder
    }

    /// An informer factory builder over `client`, narrowed to this shard's label selector and
    /// to the configuration's watch namespace, if any.
    pub fn informer_factory(&self, client: &RestClient) -> SharedInformerFactoryBuilder {
        let mut builder = clientgo_informer::SharedInformerFactory::builder(client)
            .tweak_list_options(self.shard().tweak());
        if let Some(namespace) = &self.watch_namespace {
            builder = builder.namespace(namespace);
        }
        builder
    }

    /// Runs until `cancel`: campaigns for the sharder role (again after each lost term) and,
    /// while this replica holds its member Lease, acknowledges drains beside
    /// `work(member, fence)` (the workers: they stop taking keys when `member` is cancelled,
    /// stop at the Lease's deadline when given `fence.deadline()`, and are dropped with
    /// everything in flight when the Lease is lost). Returns how the membership ended; after
    /// [`Ended::Lost`] the replica must start over (a new cache and queue), as a process that
    /// lost its leader lease exits. Work that returns by itself ends the membership, and the
    /// Lease is released ([`Ended::WorkFinished`]): a replica holds a Lease only while it
    /// works. So sync the caches before calling this, and let the work return only on
    /// `member`'s cancellation.
    pub async fn run<F, Fut>(
        &self,
        cancel: CancellationToken,
        work: F,
    ) -> Result<Ended, ConfigError>
    where
        F: FnOnce(CancellationToken, Fence) -> Fut,
        Fut: Future<Output = ()>,
    {
        let sharder_cancel = cancel.child_token();
        let sharder_role = async {
            loop {
                match self.sharder.run(sharder_cancel.clone()).await {
                    Ok(Ended::Lost) => tracing::warn!("lost the sharder role; campaigning again"),
                    Ok(_) => return Ok(()),
                    Err(error) => return Err(error),
                }
            }
        };
        let gate = &self.gate;
        let member = async {
            let ended = self
                .membership
                .run(
                    cancel.clone(),
                    |member: CancellationToken, fence| async move {
                        // No Lease without work: when the work returns, so does the membership
                        // (the Lease is released), or the sharder would go on assigning
                        // objects that nobody here reconciles.
                        let acks = gate.run_acks(member.clone());
                        tokio::select! {
                            () = work(member.clone(), fence) => {}
                            () = acks => {}
                        }
                    },
                )
                .await;
            sharder_cancel.cancel();
            ended
        };
        let (sharder, ended) = tokio::join!(sharder_role, member);
        sharder?;
        ended
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ShardedResource;
    use clientgo_apimachinery::ApiResource;
    use clientgo_rest::Config;

    fn resource(kind: &str) -> ApiResource {
        ApiResource {
            group: String::new(),
            version: "v1".into(),
            kind: kind.into(),
            plural: format!("{}s", kind.to_lowercase()),
            namespaced: true,
        }
    }

    #[test]
    fn the_gate_serves_the_primary_resource_and_a_config_without_one_is_refused() {
        let client = RestClient::new(&Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
        let dependent = ShardedResource {
            resource: resource("Pod"),
            partition: Partition::Controller { kind: "Foo".into() },
        };
        let primary = ShardedResource {
            resource: resource("Foo"),
            partition: Partition::Object,
        };
        let config = SharderConfig::new("c", "leases", "a", vec![dependent.clone()]);
        assert!(matches!(
            ShardedReplica::new(&client, &client, config),
            Err(ReplicaError::NoPrimaryResource)
        ));
        let config =
            SharderConfig::new("c", "leases", "a", vec![dependent.clone(), primary.clone()]);
        let replica = ShardedReplica::new(&client, &client, config).unwrap();
        assert_eq!(replica.shard(), &Shard::new("c", "a"));
        assert_eq!(replica.membership.replica(), "a");

        // A second resource placed by its own key: its drains would never be acknowledged.
        let other = ShardedResource {
            resource: resource("Bar"),
            partition: Partition::Object,
        };
        let config = SharderConfig::new(
            "c",
            "leases",
            "a",
            vec![primary.clone(), dependent.clone(), other],
        );
        let error = ShardedReplica::new(&client, &client, config).unwrap_err();
        assert!(
            matches!(&error, ReplicaError::SeveralPrimaryResources { kinds } if kinds == &["Foo", "Bar"]),
            "{error:?}"
        );
        let message = error.to_string();
        assert!(message.contains("Foo, Bar"), "{message}");
        assert!(message.contains("would block rebalancing"), "{message}");
    }

    #[test]
    fn an_identity_or_controller_the_api_server_would_refuse_is_refused() {
        let client = RestClient::new(&Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
        let primary = ShardedResource {
            resource: resource("Foo"),
            partition: Partition::Object,
        };
        let build = |controller: &str, identity: &str| {
            let config = SharderConfig::new(controller, "leases", identity, vec![primary.clone()]);
            ShardedReplica::new(&client, &client, config)
        };
        for identity in ["Host_1", "", &"a".repeat(64), "a-"] {
            assert!(
                matches!(build("c", identity), Err(ReplicaError::InvalidIdentity(_))),
                "{identity:?}"
            );
        }
        assert!(matches!(
            build("Ctl", "a"),
            Err(ReplicaError::InvalidIdentity(
                IdentityError::SharderLeaseName { .. }
            ))
        ));
        let error = build("sample-controller", "Host_1").err().unwrap();
        assert_eq!(
            error.to_string(),
            IdentityError::MemberLeaseName {
                identity: "Host_1".into(),
                lease: "sample-controller-shard-Host_1".into(),
            }
            .to_string()
        );
        assert!(build("sample-controller", "sample-controller-7d9f8-x2x4k").is_ok());
    }
}
