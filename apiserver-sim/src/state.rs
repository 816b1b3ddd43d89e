//! The state shared by every request: store, served resources, configuration, faults.
//!
//! In kube-apiserver these are spread over the generic API server, its REST storage map and
//! the storage factory; here one [`SimState`] behind an `Arc` is handed to every handler,
//! the watch tasks and the background controllers (garbage collector, CRD establishing).

use std::sync::Arc;

use tokio::sync::{Notify, Semaphore, watch};

use crate::config::SimConfig;
use crate::faults::Faults;
use crate::requests::Requests;
use crate::resources::Registry;
use crate::store::Store;

/// Everything a request handler needs.
#[derive(Debug)]
pub struct SimState {
    /// The configuration the server was started with.
    pub config: SimConfig,
    /// The object store.
    pub store: Store,
    /// The served resources.
    pub registry: Registry,
    /// Injected faults.
    pub faults: Faults,
    /// The log of API requests received.
    pub requests: Requests,
    /// Flips to `true` when the server shuts down.
    pub shutdown: watch::Receiver<bool>,
    /// Wakes the garbage collector.
    pub gc_kick: Notify,
    /// One permit per open watch ([`SimConfig::max_watches`](crate::SimConfig::max_watches)).
    pub watch_slots: Arc<Semaphore>,
    /// One permit per open connection
    /// ([`SimConfig::max_connections`](crate::SimConfig::max_connections)).
    pub connection_slots: Arc<Semaphore>,
}

/// A shared handle on the state.
pub type State = Arc<SimState>;

impl SimState {
    /// `None` when namespace `name` does not exist, `Some(false)` while it terminates.
    pub fn namespace_exists(&self, name: &str) -> Option<bool> {
        self.store
            .get("/namespaces", name)
            .map(|ns| !ns.is_deleting())
    }
}
