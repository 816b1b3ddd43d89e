//! A real Kubernetes control plane for tests: etcd, kube-apiserver and, when asked,
//! kube-controller-manager, started in a few seconds and stopped with the test.
//!
//! The Rust counterpart of controller-runtime's `envtest`: where apiserver-sim answers in
//! microseconds and injects faults, this crate runs the real thing, so that what the sim
//! claims can be checked and what the clients do can be proven against kube-apiserver itself.
//!
//! | module | what | controller-runtime |
//! |---|---|---|
//! | `assets` | finding the binaries: `KUBEBUILDER_ASSETS`, else the project's xz archives unpacked once | `setup-envtest`, `KUBEBUILDER_ASSETS` |
//! | `pki` | CA, serving and client certificates, service-account key, bearer token (rcgen) | `internal/testing/certs` |
//! | `process` | child processes that never outlive the test process | `internal/testing/process` |
//! | `readiness`, `workdir` | waiting for readiness with a bound; working directories, swept when left behind | `internal/testing/process` |
//! | [`control_plane`] | [`ControlPlane`]: start, kubeconfig, namespaces, compaction, restart | `envtest.Environment` |
//!
//! ```no_run
//! use clientgo_envtest::ControlPlane;
//!
//! #[test]
//! fn lists_namespaces() {
//!     // One control plane per test binary; `None` (after one line saying what to set) when
//!     // no binaries are found, unless CLIENTGO_ENVTEST_REQUIRED=1.
//!     let Some(cp) = ControlPlane::shared() else { return };
//!     let namespace = cp.create_namespace("lists").unwrap();
//!     // clientgo_rest::Config::from_kubeconfig_file(cp.kubeconfig_path()) talks to it.
//!     # let _ = namespace;
//! }
//! ```
//!
//! Environment: `KUBEBUILDER_ASSETS` (a directory holding the binaries),
//! `CLIENTGO_ENVTEST_ARCHIVES` (a directory holding `etcd.xz`, `kube-apiserver.xz`,
//! `kube-controller-manager.xz`), `CLIENTGO_ENVTEST_CACHE` (where archives are unpacked),
//! `CLIENTGO_ENVTEST_APISERVER_ARGS` (extra kube-apiserver flags), `CLIENTGO_ENVTEST_REQUIRED`
//! (`1`: missing binaries fail instead of skipping, as in CI).

#![deny(missing_docs)]

mod assets;
pub mod control_plane;
mod error;
mod http;
mod pki;
mod process;
mod readiness;
mod workdir;

pub use assets::{ARCHIVED_VERSIONS, Binaries};
pub use control_plane::{ControlPlane, ControlPlaneOptions, DEFAULT_APISERVER_ARGS};
pub use error::Error;
