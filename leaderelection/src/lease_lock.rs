//! The Lease lock: client-go's `resourcelock.LeaseLock`.
//!
//! The election record lives in the spec of a `coordination.k8s.io/v1` Lease. [`LeaseLock`]
//! remembers the Lease it last read or wrote, and every update sends that Lease back with its
//! `resourceVersion`, so the API server applies it only if nobody wrote in between (409
//! Conflict otherwise): never a blind overwrite.
//!
//! Lease is the only lock client-go still accepts (the Endpoints and ConfigMap locks were
//! removed), and the only one here. The [`Lease`] type is this crate's own small struct rather
//! than k8s-openapi's, so the crate does not pull in every Kubernetes type.
//!
//! The lock should have a client of its own, [`leader_election_client`] (client-go's
//! `resourcelock.NewFromKubeconfig` builds one the same way): with the controller's client,
//! renewals would queue behind its requests in the shared throttle, and a busy controller
//! would lose its own lease.

use clientgo_apimachinery::{ObjectMeta, Resource, impl_object};
use clientgo_rest::{Config, GetParams, PostParams, ResourceClient, RestClient};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use crate::record::{LeaderElectionRecord, Lock, LockError};

/// A `coordination.k8s.io/v1` Lease, with the spec fields leader election uses.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Lease {
    /// The Lease's metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Who holds it.
    #[serde(default)]
    pub spec: LeaderElectionRecord,
}

impl Resource for Lease {
    const GROUP: &'static str = "coordination.k8s.io";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Lease";
    const PLURAL: &'static str = "leases";
    const NAMESPACED: bool = true;
}

impl_object!(Lease);

/// A client for leader election only, built from `config` as client-go's
/// `resourcelock.NewFromKubeconfig` builds it: its own connections and throttle, so the
/// controller's requests never delay a renewal; the user agent `<config's>/leader-election`;
/// and `election`'s request timeout as the time limit of every request (the elector bounds
/// each attempt with it too, throttle wait included).
pub fn leader_election_client(
    config: &Config,
    election: &crate::LeaderElectionConfig,
) -> Result<RestClient, clientgo_rest::Error> {
    let mut config = config.clone();
    config.timeout = Some(election.request_timeout());
    config.user_agent = format!("{}/leader-election", config.user_agent);
    RestClient::new(&config)
}

/// A lock on the Lease `namespace/name`, for the candidate `identity`.
pub struct LeaseLock {
    leases: ResourceClient<Lease>,
    namespace: String,
    name: String,
    identity: String,
    /// The Lease as last read or written: its resourceVersion guards the next update.
    last: Mutex<Option<Lease>>,
}

impl std::fmt::Debug for LeaseLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaseLock")
            .field("lease", &self.describe())
            .field("identity", &self.identity)
            .finish_non_exhaustive()
    }
}

impl LeaseLock {
    /// A lock on the Lease `namespace/name` through `client` (best a
    /// [`leader_election_client`], not the controller's).
    pub fn new(
        client: &RestClient,
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        let namespace = namespace.into();
        Self {
            leases: ResourceClient::namespaced(client, &namespace),
            namespace,
            name: name.into(),
            identity: identity.into(),
            last: Mutex::new(None),
        }
    }

    fn remember(&self, lease: Lease) {
        *self.last.lock() = Some(lease);
    }
}

fn other(error: clientgo_rest::Error) -> LockError {
    LockError::Other(Box::new(error))
}

impl Lock for LeaseLock {
    async fn get(&self) -> Result<Option<LeaderElectionRecord>, LockError> {
        match self.leases.get(&self.name, &GetParams::default()).await {
            Ok(lease) => {
                let record = lease.spec.clone();
                self.remember(lease);
                Ok(Some(record))
            }
            Err(error) if error.is_not_found() => {
                *self.last.lock() = None;
                Ok(None)
            }
            Err(error) => Err(other(error)),
        }
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let lease = Lease {
            metadata: ObjectMeta {
                name: self.name.clone(),
                namespace: self.namespace.clone(),
                ..ObjectMeta::default()
            },
            spec: record.clone(),
        };
        match self.leases.create(&lease, &PostParams::default()).await {
            Ok(created) => {
                self.remember(created);
                Ok(())
            }
            Err(error) if error.is_already_exists() => Err(LockError::AlreadyExists),
            Err(error) => Err(other(error)),
        }
    }

    async fn update(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let Some(mut lease) = self.last.lock().clone() else {
            return Err(LockError::Other(
                "the lease must be read or created before it is updated".into(),
            ));
        };
        lease.spec = record.clone();
        match self
            .leases
            .update(&self.name, &lease, &PostParams::default())
            .await
        {
            Ok(updated) => {
                self.remember(updated);
                Ok(())
            }
            Err(error) if error.is_conflict() => Err(LockError::Conflict),
            Err(error) => Err(other(error)),
        }
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}
