//! Lease-based leader election: client-go's `tools/leaderelection`, in Rust.
//!
//! Several replicas of a controller run; one leads. [`LeaderElector::run`] campaigns for a
//! lease through a [`Lock`], runs the leader's work once it holds it, renews it, and fences
//! the work (drops its future) before the lease can pass to another candidate (see the
//! `elector` module docs for the timing argument).
//!
//! The lock is normally a [`LeaseLock`] on a `coordination.k8s.io/v1` Lease, through a REST
//! client of its own ([`leader_election_client`], so renewals never wait behind the
//! controller's requests): `LeaseLock::new(&client, "kube-system", "my-controller", pod_name)`.
//!
//! ```no_run
//! use clientgo_leaderelection::{LeaderElectionConfig, LeaderElector, Lock};
//! use tokio_util::sync::CancellationToken;
//!
//! async fn campaign(lock: impl Lock) {
//!     let config = LeaderElectionConfig {
//!         name: "my-controller".into(),
//!         release_on_cancel: true,
//!         ..LeaderElectionConfig::default() // 15 s lease, 10 s renew deadline, 2 s retry
//!     };
//!     let elector = LeaderElector::new(lock, config)
//!         .expect("valid configuration")
//!         .on_new_leader(|holder| println!("the leader is now {holder}"));
//!     let shutdown = CancellationToken::new();
//!     let ended = elector
//!         .run(shutdown.clone(), |leading| async move {
//!             // The controller's work: stop promptly once `leading` is cancelled.
//!             leading.cancelled().await;
//!         })
//!         .await;
//!     println!("no longer leading: {ended:?}");
//! }
//! ```

#![deny(missing_docs)]

mod config;
mod elector;
mod fence;
mod lease_lock;
mod record;

pub use config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};
pub use elector::{Ended, HealthCheck, LeaderElector, RenewalOverdue};
pub use fence::Fence;
pub use lease_lock::{Lease, LeaseLock, leader_election_client};
pub use record::{LeaderElectionRecord, Lock, LockError};
