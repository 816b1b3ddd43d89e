//! Who the shards are: one Lease per replica, renewed like a leader lease.
//!
//! Mirrors the reference design's shard Leases (timebertt's kubernetes-controller-sharding:
//! each shard holds a Lease labelled with its ring; the sharder reads shard liveness from
//! them). Here a replica's membership *is* a leader election over a Lease of its own
//! (`<controller>-shard-<replica>`), run by this project's [`LeaderElector`]: so a member
//! gets the elector's fence for free. Its work (the reconciles and drain acknowledgements)
//! runs as the elector's leader work, and is dropped as soon as renewals have failed for the
//! renew deadline, before the lease duration is up, which is the earliest moment the sharder
//! may hand its objects to another shard. A clean shutdown drains the work and then
//! releases the Lease, so the sharder moves its objects at once.
//!
//! The sharder's side, [`LiveMembers`], judges validity the way the elector does: from when
//! *it* saw each renewal (a change of the Lease's resourceVersion), on its own clock, never
//! from the timestamps written in the Lease, so clock offsets between replicas do not
//! matter. A sharder that has just started counts every Lease it finds as renewed at that
//! moment: a dead replica's objects then wait one lease duration, never less.
//!
//! Where it differs from the reference: there, the sharder also acquires an expired shard's
//! Lease to declare it dead; here a member whose Lease is not renewed is simply not live,
//! and a replica that comes back campaigns for its own Lease again (a fresh start).

use std::collections::HashMap;
use std::future::Future;
use std::time::Duration;

use clientgo_apimachinery::{Object, ObjectMeta};
use clientgo_leaderelection::{
    Ended, Fence, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, Lease, LeaseLock,
    Lock, LockError,
};
use clientgo_rest::{PostParams, ResourceClient, RestClient};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::MEMBER_LABEL;
use crate::ring::Ring;

/// The name of `replica`'s member Lease for `controller`: `<controller>-shard-<replica>`.
pub fn member_lease_name(controller: &str, replica: &str) -> String {
    format!("{controller}-shard-{replica}")
}

/// A member Lease named `name` in `namespace`, labelled as one of `controller`'s (so the
/// sharder's informer finds it), holding `spec`.
pub(crate) fn member_lease(
    namespace: &str,
    name: &str,
    controller: &str,
    spec: LeaderElectionRecord,
) -> Lease {
    let mut metadata = ObjectMeta {
        name: name.to_owned(),
        namespace: namespace.to_owned(),
        ..ObjectMeta::default()
    };
    metadata
        .labels
        .insert(MEMBER_LABEL.to_owned(), controller.to_owned());
    Lease { metadata, spec }
}

/// A [`LeaseLock`] whose Lease is created with the member label, so the sharder finds it
/// with a label selector.
pub struct MemberLock {
    lock: LeaseLock,
    leases: ResourceClient<Lease>,
    namespace: String,
    name: String,
    controller: String,
}

impl std::fmt::Debug for MemberLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemberLock")
            .field("lease", &self.lock.describe())
            .field("controller", &self.controller)
            .finish_non_exhaustive()
    }
}

impl MemberLock {
    /// The member Lease of `replica` for `controller`, in `namespace`.
    pub fn new(client: &RestClient, namespace: &str, controller: &str, replica: &str) -> Self {
        let name = member_lease_name(controller, replica);
        MemberLock {
            lock: LeaseLock::new(client, namespace, name.clone(), replica),
            leases: ResourceClient::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name,
            controller: controller.to_owned(),
        }
    }
}

impl Lock for MemberLock {
    async fn get(&self) -> Result<Option<LeaderElectionRecord>, LockError> {
        self.lock.get().await
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        let lease = member_lease(
            &self.namespace,
            &self.name,
            &self.controller,
            record.clone(),
        );
        match self.leases.create(&lease, &PostParams::default()).await {
            Ok(_) => {}
            Err(error) if error.is_already_exists() => return Err(LockError::AlreadyExists),
            Err(error) => return Err(LockError::Other(Box::new(error))),
        }
        // The lock remembers the Lease it last read: its next update needs the version.
        match self.lock.get().await? {
            Some(_) => Ok(()),
            None => Err(LockError::Other(
                "the member Lease vanished after its create".into(),
            )),
        }
    }

    async fn update(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        self.lock.update(record).await
    }

    fn identity(&self) -> &str {
        self.lock.identity()
    }

    fn describe(&self) -> String {
        self.lock.describe()
    }
}

/// One replica's membership of a controller's shards; see the module docs.
#[derive(Debug, Clone)]
pub struct Membership {
    client: RestClient,
    namespace: String,
    controller: String,
    replica: String,
    config: LeaderElectionConfig,
}

impl Membership {
    /// `replica` (a valid label value, e.g. the pod name) as a member of `controller`'s
    /// shards, with its Lease in `namespace`, the leader-election defaults (15 s lease,
    /// 10 s renew deadline, 2 s retry) and release on a clean shutdown. `client` is best
    /// one of its own ([`clientgo_leaderelection::leader_election_client`]).
    pub fn new(client: &RestClient, namespace: &str, controller: &str, replica: &str) -> Self {
        Membership {
            client: client.clone(),
            namespace: namespace.to_owned(),
            controller: controller.to_owned(),
            replica: replica.to_owned(),
            config: LeaderElectionConfig {
                name: member_lease_name(controller, replica),
                release_on_cancel: true,
                ..LeaderElectionConfig::default()
            },
        }
    }

    /// Other timings (lease duration, renew deadline, retry period); the name and the release
    /// on shutdown stay.
    pub fn timings(
        mut self,
        lease_duration: Duration,
        renew_deadline: Duration,
        retry_period: Duration,
    ) -> Self {
        self.config.lease_duration = lease_duration;
        self.config.renew_deadline = renew_deadline;
        self.config.retry_period = retry_period;
        self
    }

    /// This replica's identity.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// Takes the member Lease, runs `work` while holding it (cancelled, then dropped, as the
    /// elector fences leader work), and returns why it ended. `work` is given the token
    /// cancelled when the membership ends and the Lease's [`Fence`], for what it runs on
    /// other tasks (a [`WorkerPool`](clientgo_workqueue::WorkerPool)'s workers: pass
    /// `fence.deadline()` to its `fence`). A replica whose membership was [`Ended::Lost`]
    /// must start over (a new informer cache and queue), as a process that lost its leader
    /// lease exits.
    pub async fn run<F, Fut>(
        &self,
        cancel: CancellationToken,
        work: F,
    ) -> Result<Ended, clientgo_leaderelection::ConfigError>
    where
        F: FnOnce(CancellationToken, Fence) -> Fut,
        Fut: Future<Output = ()>,
    {
        let lock = MemberLock::new(
            &self.client,
            &self.namespace,
            &self.controller,
            &self.replica,
        );
        let elector = LeaderElector::new(lock, self.config.clone())?;
        let fence = elector.fence();
        Ok(elector.run(cancel, |member| work(member, fence)).await)
    }
}

/// What the sharder saw of one member Lease.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// The holder written in the Lease: the replica itself while it is a member; empty once
    /// released; the sharder's marker while the sharder holds it.
    pub(crate) holder: String,
    pub(crate) resource_version: String,
    pub(crate) duration: Duration,
    /// When the sharder saw the current resourceVersion first.
    pub(crate) at: Instant,
}

/// The sharder's view of the members: which Leases are valid, judged on its own clock.
#[derive(Debug)]
pub struct LiveMembers {
    /// `<controller>-shard-`: a member Lease's name is this and the replica's identity.
    prefix: String,
    /// By replica.
    leases: HashMap<String, Seen>,
}

impl LiveMembers {
    /// No members yet, of `controller`'s shards.
    pub fn new(controller: &str) -> Self {
        LiveMembers {
            prefix: member_lease_name(controller, ""),
            leases: HashMap::new(),
        }
    }

    /// The replica whose member Lease this is, if it is one of this controller's.
    pub fn replica_of<'a>(&self, lease_name: &'a str) -> Option<&'a str> {
        lease_name
            .strip_prefix(&self.prefix)
            .filter(|replica| !replica.is_empty())
    }

    /// Records the Lease as seen now (a renewal if its resourceVersion changed).
    pub fn observe(&mut self, lease: &Lease) {
        let Some(replica) = self.replica_of(lease.name()) else {
            return;
        };
        let resource_version = lease.resource_version();
        let seconds = u64::try_from(lease.spec.lease_duration_seconds).unwrap_or(0);
        if let Some(seen) = self.leases.get(replica)
            && seen.resource_version == resource_version
        {
            return;
        }
        self.leases.insert(
            replica.to_owned(),
            Seen {
                holder: lease.spec.holder_identity.clone(),
                resource_version: resource_version.to_owned(),
                duration: Duration::from_secs(seconds),
                at: Instant::now(),
            },
        );
    }

    /// Forgets a deleted Lease.
    pub fn forget(&mut self, lease_name: &str) {
        if let Some(replica) = self.replica_of(lease_name) {
            let replica = replica.to_owned();
            self.leases.remove(&replica);
        }
    }

    /// What was last seen of `replica`'s Lease.
    pub(crate) fn seen(&self, replica: &str) -> Option<&Seen> {
        self.leases.get(replica)
    }

    /// Whether `replica` holds its own Lease and the sharder saw it renewed within its
    /// duration.
    fn live(replica: &str, seen: &Seen, now: Instant) -> bool {
        seen.holder == replica && now < seen.at + seen.duration
    }

    /// The ring of the members whose Leases are valid now.
    pub fn ring(&self) -> Ring {
        let now = Instant::now();
        Ring::new(
            self.leases
                .iter()
                .filter(|(replica, seen)| Self::live(replica, seen, now))
                .map(|(replica, _)| replica.clone()),
        )
    }

    /// When the next valid Lease expires, unless renewed before.
    pub fn next_expiry(&self) -> Option<Instant> {
        let now = Instant::now();
        self.leases
            .iter()
            .filter(|(replica, seen)| Self::live(replica, seen, now))
            .map(|(_, seen)| seen.at + seen.duration)
            .min()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lease(name: &str, holder: &str, rv: &str, seconds: i32) -> Lease {
        let mut lease = Lease::default();
        lease.metadata.name = name.into();
        lease.metadata.resource_version = rv.into();
        lease.spec.holder_identity = holder.into();
        lease.spec.lease_duration_seconds = seconds;
        lease
    }

    #[tokio::test(start_paused = true)]
    async fn a_member_lives_one_duration_past_the_renewal_the_sharder_saw() {
        let mut live = LiveMembers::new("c");
        live.observe(&lease("c-shard-a", "a", "1", 15));
        live.observe(&lease("c-shard-b", "b", "1", 15));
        assert_eq!(live.ring(), Ring::new(["a", "b"]));
        tokio::time::advance(Duration::from_secs(10)).await;
        live.observe(&lease("c-shard-a", "a", "2", 15)); // renewed
        live.observe(&lease("c-shard-b", "b", "1", 15)); // the same version: no renewal
        assert_eq!(
            live.next_expiry(),
            Some(Instant::now() + Duration::from_secs(5))
        );
        tokio::time::advance(Duration::from_secs(6)).await;
        assert_eq!(live.ring(), Ring::new(["a"]), "b's lease ran out");
        live.forget("c-shard-a");
        assert!(live.ring().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_released_lease_is_no_member() {
        let mut live = LiveMembers::new("c");
        live.observe(&lease("c-shard-a", "a", "1", 15));
        live.observe(&lease("c-shard-a", "", "2", 1));
        assert!(live.ring().is_empty());
        assert_eq!(live.next_expiry(), None);
    }

    #[tokio::test(start_paused = true)]
    async fn a_lease_held_by_the_sharder_or_of_another_controller_is_no_member() {
        let mut live = LiveMembers::new("c");
        live.observe(&lease("c-shard-a", "sharder:c", "1", 15));
        live.observe(&lease("d-shard-b", "b", "1", 15));
        live.observe(&lease("c-shard-", "x", "1", 15));
        assert!(live.ring().is_empty());
        assert_eq!(live.replica_of("c-shard-a"), Some("a"));
        assert_eq!(live.replica_of("c-sharder"), None);
        live.observe(&lease("c-shard-a", "a", "2", 15)); // the replica took it back
        assert_eq!(live.ring(), Ring::new(["a"]));
    }
}
