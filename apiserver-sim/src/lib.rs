//! clientgo-apiserver-sim: an in-process Kubernetes API server for tests, demos and fault
//! injection.
//!
//! It speaks the kube-apiserver's HTTP API (JSON only) closely enough for client-go style
//! clients and a stock kubectl: discovery, get/list/watch/create/update/patch/delete/
//! deletecollection on built-in resources and on custom resources defined by CRDs, the
//! resourceVersion rules of list and watch (pagination, 410 Expired, bookmarks, WatchList),
//! finalizers, garbage collection, optional TLS and bearer-token auth, and faults injected
//! on demand. See the crate README for what is and is not implemented.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
//! use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch};
//!
//! let sim = ApiServerSim::start(SimConfig::default()).await?;
//! println!("serving at {}", sim.url());
//! sim.faults().fail_next(1, RequestMatch::new("list", "pods"), InjectedError::TooManyRequests { retry_after: 1 });
//! # Ok(()) }
//! ```

#![deny(missing_docs)]

pub mod config;
pub mod crd;
pub mod defaults;
pub mod errors;
pub mod faults;
pub mod gc;
pub mod go_strconv;
pub mod go_text;
pub mod http;
pub mod managed_fields;
pub mod manifests;
pub mod patch;
pub mod pruning;
pub mod requests;
pub mod resources;
pub mod schema;
pub mod server;
pub mod state;
pub mod store;
pub mod tls;
pub mod validation;
pub mod verbs;

pub use config::SimConfig;
pub use server::{ApiServerSim, StartError};
