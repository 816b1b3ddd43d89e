//! client-go's controller machinery in Rust, in one dependency.
//!
//! This crate re-exports the project's crates under the package paths a client-go user
//! knows, so that a controller needs one line in its `Cargo.toml`:
//!
//! ```toml
//! [dependencies]
//! clientgo = { version = "0.1", features = ["k8s-openapi"] }
//! k8s-openapi = { version = "0.29", features = ["latest"] } # the Kubernetes version you target
//! tokio = { version = "1", features = ["macros", "rt-multi-thread"] }
//! tracing-subscriber = { version = "0.3", features = ["env-filter"] } # to see the library's logs
//! ```
//!
//! | here | client-go | crate |
//! |---|---|---|
//! | [`apimachinery`] | `k8s.io/apimachinery` (metadata, lists, watch events, Status, selectors) | `clientgo-apimachinery` |
//! | [`rest`] | `rest`, `transport`, `tools/clientcmd`, `discovery`, `restmapper` | `clientgo-rest` |
//! | [`tools::watch`] | `watch`, `tools/watch` (the retry watcher) | `clientgo-watch` |
//! | [`tools::cache`] | `tools/cache` (reflector, store, informers, listers) | `clientgo-informer` |
//! | [`tools::leaderelection`] | `tools/leaderelection` (feature `leaderelection`, on by default) | `clientgo-leaderelection` |
//! | [`tools::record`] | `tools/record` (feature `record`, on by default) | `clientgo-record` |
//! | [`util::workqueue`] | `util/workqueue` (queues) | `clientgo-workqueue` |
//! | [`util::ratelimit`] | `util/workqueue` rate limiters, `util/flowcontrol` | `clientgo-ratelimit` |
//! | [`signals`] | sample-controller's `signals.SetupSignalHandler` | this crate |
//! | `testing::sim` | (kube-apiserver, in process; feature `sim`) | `clientgo-apiserver-sim` |
//! | `testing::envtest` | controller-runtime's `envtest` (feature `envtest`) | `clientgo-envtest` |
//! | `flightrecorder` | (none: every key's journey as a timeline; feature `flightrecorder`) | `clientgo-flightrecorder` |
//! | `sharding` | (none: one controller over N replicas, each reconciling its share; feature `sharding`) | `clientgo-sharding` |
//!
//! Features: `k8s-openapi` implements the object traits for k8s-openapi's types (without it,
//! using a `Pod` where a `Resource` is wanted fails to compile, and the error names this
//! feature); `leaderelection` and `record` (default); `sim` and `envtest` for tests;
//! `flightrecorder` for the recorder of the loop's journey events; `sharding` for a controller
//! run by N replicas at once, each reconciling its own share of the objects (it turns on
//! `leaderelection`, whose `Fence` its replicas hold).
//!
//! [`CancellationToken`] is re-exported: informers, work queues and leader election take one.
//!
//! The [`patterns`] page answers what a controller needs beyond the loop: children without
//! owner references, several namespaces, read-your-writes, preconditions, apply, requeues.

#![deny(missing_docs)]

pub mod signals;

/// Patterns beyond the loop: children without owner references, several namespaces,
/// read-your-writes, preconditions, apply, requeues and shutdown (`docs/patterns.md`, whose
/// snippets are compiled here).
#[cfg(doc)]
#[doc = include_str!("../../docs/patterns.md")]
pub mod patterns {}

pub use clientgo_apimachinery as apimachinery;
#[cfg(feature = "flightrecorder")]
pub use clientgo_flightrecorder as flightrecorder;
pub use clientgo_rest as rest;
// Not a client-go package (client-go stops at leader election), so at the top level, as
// `flightrecorder` is.
#[cfg(feature = "sharding")]
pub use clientgo_sharding as sharding;
pub use tokio_util::sync::CancellationToken;

/// client-go's `tools/...` packages.
pub mod tools {
    pub use clientgo_informer as cache;
    #[cfg(feature = "leaderelection")]
    pub use clientgo_leaderelection as leaderelection;
    #[cfg(feature = "record")]
    pub use clientgo_record as record;
    pub use clientgo_watch as watch;
}

/// client-go's `util/...` packages.
pub mod util {
    pub use clientgo_ratelimit as ratelimit;
    pub use clientgo_workqueue as workqueue;
}

/// Servers to test a controller against.
#[cfg(any(feature = "sim", feature = "envtest"))]
pub mod testing {
    #[cfg(feature = "sim")]
    pub use clientgo_apiserver_sim as sim;
    #[cfg(feature = "envtest")]
    pub use clientgo_envtest as envtest;
}
