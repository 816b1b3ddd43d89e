//! Sharded controllers: one controller run by N replicas at once, each reconciling its own
//! share of the objects, with the Kubernetes API server as the only coordination engine
//! (Leases, labels and label-selector watches; no side channel, no consensus of our own).
//!
//! client-go, controller-runtime and kube-rs stop at leader election: one replica works, the
//! others wait. This crate follows the label-based design of timebertt's
//! kubernetes-controller-sharding, built from this project's own pieces:
//!
//! * [`identity`]: a replica's default identity, and the checks an identity and a controller
//!   name must pass to name Leases and label values the API server accepts.
//! * [`membership`]: each replica holds a Lease of its own, labelled with the controller's
//!   name and renewed like a leader lease; its work is fenced when renewals fail, and the
//!   Lease is released on a clean shutdown. The members are the replicas with valid Leases.
//! * [`ring`]: rendezvous hashing places each partition key on a live member; a join or a
//!   leave moves about 1/N of the keys and no more.
//! * [`sharder`]: one elected replica watches the sharded resources' metadata and the member
//!   Leases and labels each object `shard.clientgo-rs.io/<controller>: <replica>`. An object
//!   leaving a live shard is first marked `drain.shard.clientgo-rs.io/<controller>`; the old
//!   owner finishes its work on it and removes both labels; only then is the new shard
//!   assigned. An object of a dead shard moves once the sharder holds that shard's Lease
//!   (taken by compare-and-swap; see [`sharder`]'s fence), never while the shard may still
//!   be working.
//! * [`replica`]: a replica's side: the label selector for its informer factory, and the
//!   [`ShardGate`] its handlers and workers go through to honour drains.
//! * [`metrics`]: objects per shard, moves, drain durations, assignment latency.
//! * [`sharded_replica`]: the roles of one replica wired together: its gate, its member
//!   Lease and a sharder candidate, run beside the controller's workers.
//!
//! ```text
//!   sharder (elected)            API server                  replica A        replica B
//!   ─────────────────            ──────────                  ─────────        ─────────
//!   members = {A, B}  ──label──▶ foo: shard=A   ──watch(shard=A)──▶ reconciles foo
//!   B joins, ring says B
//!   ──label drain──────────────▶ foo: shard=A, drain ──────────▶ stops foo, waits for
//!                                                                 the reconcile in hand
//!                                foo: (no shard) ◀──ack (remove both labels)──
//!   ──label─────────────────────▶ foo: shard=B   ─────────────────watch(shard=B)──▶ reconciles foo
//! ```

#![deny(missing_docs)]

pub mod identity;
pub mod membership;
pub mod metrics;
pub mod replica;
pub mod ring;
pub mod sharded_replica;
pub mod sharder;

/// The deadline of a member Lease, handed to the work of [`ShardedReplica::run`].
pub use clientgo_leaderelection::Fence;
pub use identity::{IdentityError, default_identity, validate_identity};
pub use membership::{MemberLock, Membership, member_lease_name};
pub use metrics::ShardingMetrics;
pub use replica::{Shard, ShardGate};
pub use ring::{Partition, Ring};
pub use sharded_replica::{ReplicaError, ShardedReplica};
pub use sharder::{ShardedResource, Sharder, SharderConfig};

/// The label a member's Lease carries, with the controller's name as its value.
pub const MEMBER_LABEL: &str = "member.shard.clientgo-rs.io/controller";

/// The label that assigns an object of `controller` to a shard: `shard.clientgo-rs.io/<controller>`.
pub fn shard_label(controller: &str) -> String {
    format!("shard.clientgo-rs.io/{controller}")
}

/// The label that asks the shard of an object of `controller` to let it go:
/// `drain.shard.clientgo-rs.io/<controller>`.
pub fn drain_label(controller: &str) -> String {
    format!("drain.shard.clientgo-rs.io/{controller}")
}

/// A label key as a JSON pointer segment (RFC 6901: `~` as `~0`, `/` as `~1`).
fn pointer_segment(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys() {
        assert_eq!(shard_label("foo"), "shard.clientgo-rs.io/foo");
        assert_eq!(drain_label("foo"), "drain.shard.clientgo-rs.io/foo");
        assert_eq!(
            pointer_segment("drain.shard.clientgo-rs.io/foo"),
            "drain.shard.clientgo-rs.io~1foo"
        );
    }
}
