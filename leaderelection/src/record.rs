//! The election record and the lock that stores it: client-go's
//! `tools/leaderelection/resourcelock` (`interface.go`).
//!
//! A [`LeaderElectionRecord`] says who holds the lease, for how long, and since when; a
//! [`Lock`] reads and writes it with optimistic concurrency. Lease-backed locks keep the
//! record in a `coordination.k8s.io/v1` Lease's spec, and every write carries the
//! resourceVersion of the Lease last read, so two candidates can never both overwrite it: one
//! of them gets a conflict.
//!
//! Where it differs from client-go: the lock's operations are async, and "not found" is
//! `Ok(None)` from [`Lock::get`] rather than an error to test for.

use std::future::Future;

use clientgo_apimachinery::MicroTime;
use serde::{Deserialize, Serialize};

/// Who holds the lease: client-go's `LeaderElectionRecord`, the Lease spec's fields.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LeaderElectionRecord {
    /// The holder's identity; empty when the lease was released.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub holder_identity: String,
    /// How long, in seconds, the holder may be considered leader after its last renewal.
    #[serde(default)]
    pub lease_duration_seconds: i32,
    /// When the current holder acquired the lease.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acquire_time: Option<MicroTime>,
    /// When the current holder last renewed it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renew_time: Option<MicroTime>,
    /// How many times the lease changed hands.
    #[serde(default, rename = "leaseTransitions")]
    pub leader_transitions: i32,
}

/// Why a lock operation failed.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Someone else wrote the lease since it was read (HTTP 409).
    #[error("lease was modified concurrently")]
    Conflict,
    /// The lease already exists (a create raced another candidate).
    #[error("lease already exists")]
    AlreadyExists,
    /// Any other failure (the API server unreachable, forbidden, ...).
    #[error("lease operation failed: {0}")]
    Other(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Reads and writes one election record with optimistic concurrency.
///
/// Implementations remember the version of what they last read or wrote, and `update` fails
/// with [`LockError::Conflict`] if the stored record has changed since.
pub trait Lock: Send + Sync {
    /// The current record, or `None` if the lease does not exist.
    fn get(&self) -> impl Future<Output = Result<Option<LeaderElectionRecord>, LockError>> + Send;
    /// Creates the lease with `record`.
    fn create(
        &self,
        record: &LeaderElectionRecord,
    ) -> impl Future<Output = Result<(), LockError>> + Send;
    /// Replaces the record, if it has not changed since it was last read or written here.
    fn update(
        &self,
        record: &LeaderElectionRecord,
    ) -> impl Future<Output = Result<(), LockError>> + Send;
    /// This candidate's identity.
    fn identity(&self) -> &str;
    /// The lock, for logs (e.g. `kube-system/my-controller`).
    fn describe(&self) -> String;
}
