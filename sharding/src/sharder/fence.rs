//! Fencing a departed shard before its objects move: the sharder takes the member's Lease.
//!
//! Mirrors the reference design's shard-lease controller (timebertt's
//! kubernetes-controller-sharding acquires an expired shard Lease, marking the shard dead,
//! before the sharder moves its objects). Here the sharder writes its own marker,
//! [`sharder_holder`], into the member Lease by a compare-and-swap (an update carrying the
//! resourceVersion it read), keeps it renewed while the member still has objects, and deletes
//! the Lease once they have all moved, so the replica starts afresh if it comes back.
//!
//! ## The invariant: a move off a shard never overlaps that shard's work
//!
//! An object moves off shard R, other than by R's own acknowledgement of a drain, only
//! while the sharder holds R's member Lease, and only while that hold has at least a third
//! of a lease duration left. The sharder takes the Lease only when one of these holds, read
//! in the same consistent GET whose resourceVersion the take-over write is conditioned on:
//! * R released it (empty holder): R's work was fenced before the release was written;
//! * the sharder (any sharder, this role) already held it;
//! * R's renewals have not changed the Lease for a whole lease duration, as this sharder's
//!   clock counts from the moment it first saw that version (never from the timestamps in
//!   the Lease). R's last successful renewal was sent before that moment; R stops starting
//!   reconciles and drops those in hand at its renew deadline (by its own clock, see
//!   [`Fence`](clientgo_leaderelection::Fence)), a third of a lease duration before this.
//!
//! The compare-and-swap closes the gap between the read and the write: a renewal that lands
//! first makes the take-over fail (and shows R alive); one that lands after it fails, so R's
//! renew deadline passes and R fences itself. While the sharder holds the Lease, R cannot
//! take it back: a candidate waits a full lease duration after it last saw the record change,
//! and every renewal of the hold changes it. A lagging watch of the sharder's (a stalled
//! connection, a relist behind a backlog) can only delay moves: the read is consistent, and a
//! newer version than the one the sharder saw counts as a renewal seen now. What the margins
//! assume, as leader election does: clocks that run at the same rate, and requests that land
//! within a third of a lease duration after they are sent.

use std::collections::HashMap;
use std::time::Duration;

use clientgo_apimachinery::{MicroTime, Object};
use clientgo_leaderelection::{LeaderElectionRecord, Lease};
use clientgo_rest::{DeleteParams, GetParams, PostParams, Preconditions};
use tokio::time::Instant;

use super::State;
use crate::member_lease_name;
use crate::membership::member_lease;

/// The holder the sharder writes into a member Lease it holds: `sharder:<controller>`. A colon
/// is not allowed in a replica's identity, so no replica can ever be taken for it.
pub fn sharder_holder(controller: &str) -> String {
    format!("sharder:{controller}")
}

/// A member Lease the sharder holds: the Lease as last written, and when that write was sent.
#[derive(Debug, Clone)]
pub(super) struct Hold {
    lease: Lease,
    sent: Instant,
}

/// What a take-over attempt found.
enum Taken {
    /// The Lease as written, and when the write was sent.
    Held(Box<Lease>, Instant),
    /// R renewed (or the read or write failed): no hold, try again later.
    No,
}

impl State {
    /// How long a hold lasts after its write was sent.
    fn hold_duration(&self) -> Duration {
        self.config.election.lease_duration
    }

    /// Whether the objects of `replica`, a shard that is not live, may move now: only under a
    /// hold on its Lease with a third of a lease duration left (see the module docs). If not,
    /// the members loop is asked to take it.
    pub(super) fn may_move_off(&self, replica: &str) -> bool {
        let margin = self.hold_duration() / 3;
        if let Some(hold) = self.holds.lock().get(replica)
            && Instant::now() + margin < hold.sent + self.hold_duration()
        {
            return true;
        }
        if self.fence_wanted.lock().insert(replica.to_owned()) {
            self.members_changed.notify_one();
        }
        false
    }

    /// Whether any hold is kept or wanted (the members loop then looks every second).
    pub(super) fn fencing(&self) -> bool {
        !self.holds.lock().is_empty() || !self.fence_wanted.lock().is_empty()
    }

    /// One round of fencing, run by the members loop: takes the Leases of the shards whose
    /// objects wait to move, renews the holds due (a third of a lease duration after their
    /// last write), and gives up those whose objects have all moved (the Lease is deleted).
    pub(super) async fn fence_round(&self) {
        let wanted: Vec<String> = self.fence_wanted.lock().drain().collect();
        for replica in wanted {
            if self.live.lock().ring().contains(&replica)
                || self.holds.lock().contains_key(&replica)
            {
                continue;
            }
            if let Taken::Held(lease, sent) = self.take(&replica).await {
                tracing::info!(shard = %replica, "member Lease taken over: its objects may move");
                self.live.lock().observe(&lease);
                let lease = *lease;
                self.holds.lock().insert(replica, Hold { lease, sent });
                self.enqueue_all();
            }
        }
        let holds: Vec<(String, Hold)> = self
            .holds
            .lock()
            .iter()
            .map(|(replica, hold)| (replica.clone(), hold.clone()))
            .collect();
        if holds.is_empty() {
            return;
        }
        let objects = self.primaries_by_shard();
        let renew_after = self.hold_duration() / 3;
        for (replica, hold) in holds {
            if objects.get(&replica).copied().unwrap_or(0) == 0 {
                self.release(&replica, &hold).await;
            } else if Instant::now() >= hold.sent + renew_after {
                self.renew(&replica, hold).await;
            }
        }
    }

    /// Tries to take `replica`'s member Lease (see the module docs for when it may).
    async fn take(&self, replica: &str) -> Taken {
        let name = member_lease_name(&self.config.controller, replica);
        let marker = sharder_holder(&self.config.controller);
        let read = Instant::now();
        let current = match self.leases.get(&name, &GetParams::default()).await {
            Ok(lease) => lease,
            Err(error) if error.is_not_found() => {
                // No Lease: nobody holds it, and creating it keeps the replica from taking
                // it while its objects move.
                let lease = member_lease(
                    &self.config.lease_namespace,
                    &name,
                    &self.config.controller,
                    self.hold_record(&marker, 0),
                );
                return match self.leases.create(&lease, &PostParams::default()).await {
                    Ok(created) => {
                        self.metrics.members_fenced.inc();
                        Taken::Held(Box::new(created), read)
                    }
                    Err(error) => {
                        tracing::debug!(shard = %replica, %error, "creating a held member Lease failed");
                        Taken::No
                    }
                };
            }
            Err(error) => {
                tracing::debug!(shard = %replica, %error, "reading a member Lease failed");
                return Taken::No;
            }
        };
        let expired = {
            let mut live = self.live.lock();
            live.observe(&current); // a newer version than the watch's is a renewal seen now
            let holder = &current.spec.holder_identity;
            holder.is_empty()
                || *holder == marker
                || live.seen(replica).is_some_and(|seen| {
                    seen.resource_version == current.resource_version()
                        && Instant::now() >= seen.at + seen.duration
                })
        };
        if !expired {
            tracing::debug!(shard = %replica, "member Lease renewed since: not moving its objects");
            self.members_changed.notify_one();
            return Taken::No;
        }
        let transitions = current.spec.leader_transitions;
        let by_member = current.spec.holder_identity != marker;
        let mut held = current;
        held.spec = self.hold_record(&marker, transitions.saturating_add(i32::from(by_member)));
        let sent = Instant::now();
        match self
            .leases
            .update(&name, &held, &PostParams::default())
            .await
        {
            Ok(written) => {
                if by_member {
                    self.metrics.members_fenced.inc();
                }
                Taken::Held(Box::new(written), sent)
            }
            Err(error) => {
                // A conflict: the replica renewed (or another writer won); the watch brings it.
                tracing::debug!(shard = %replica, %error, "taking over a member Lease failed");
                Taken::No
            }
        }
    }

    /// The record the sharder writes into a Lease it holds.
    fn hold_record(&self, marker: &str, transitions: i32) -> LeaderElectionRecord {
        let now = MicroTime::now();
        LeaderElectionRecord {
            holder_identity: marker.to_owned(),
            lease_duration_seconds: i32::try_from(self.hold_duration().as_secs())
                .unwrap_or(i32::MAX),
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: transitions,
        }
    }

    /// Renews a hold; a conflict means it was lost (the replica took its Lease back after
    /// the hold lapsed): the hold is dropped, so nothing more moves off it.
    async fn renew(&self, replica: &str, hold: Hold) {
        let mut lease = hold.lease;
        lease.spec.renew_time = Some(MicroTime::now());
        let sent = Instant::now();
        match self
            .leases
            .update(lease.name(), &lease, &PostParams::default())
            .await
        {
            Ok(written) => {
                self.live.lock().observe(&written);
                if let Some(hold) = self.holds.lock().get_mut(replica) {
                    *hold = Hold {
                        lease: written,
                        sent,
                    };
                }
            }
            Err(error) if error.is_conflict() || error.is_not_found() => {
                tracing::warn!(shard = %replica, %error, "lost the hold on a member Lease");
                self.holds.lock().remove(replica);
            }
            Err(error) => tracing::debug!(shard = %replica, %error, "renewing a hold failed"),
        }
    }

    /// Gives a hold up once the shard has no objects left: deletes the Lease (if unchanged).
    async fn release(&self, replica: &str, hold: &Hold) {
        let params = DeleteParams {
            preconditions: Some(Preconditions {
                uid: None,
                resource_version: Some(hold.lease.resource_version().to_owned()),
            }),
            ..DeleteParams::default()
        };
        let name = hold.lease.name();
        match self.leases.delete(name, &params).await {
            Ok(_) => {
                tracing::info!(shard = %replica, "every object moved: member Lease deleted");
            }
            Err(error) if error.is_conflict() || error.is_not_found() => {}
            Err(error) => {
                tracing::debug!(shard = %replica, %error, "deleting a held member Lease failed");
                return;
            }
        }
        self.holds.lock().remove(replica);
        self.live.lock().forget(name);
    }

    /// The primary objects in the sharder's caches, by shard label.
    pub(super) fn primaries_by_shard(&self) -> HashMap<String, i64> {
        let mut counts: HashMap<String, i64> = HashMap::new();
        for (index, resource) in self.config.resources.iter().enumerate() {
            if resource.partition == crate::ring::Partition::Object {
                for object in self.informers[index].indexer().list() {
                    let shard = object.labels().get(&self.shard_label).unwrap_or_default();
                    *counts.entry(shard.to_owned()).or_default() += 1;
                }
            }
        }
        counts
    }
}
