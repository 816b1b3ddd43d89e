//! Why a control plane could not be found, started or used.
//!
//! Every failure names what to do about it: the environment variable to set when no binaries
//! are found, the binary and the last lines of its log when one does not become ready.

use std::path::PathBuf;
use std::time::Duration;

/// Why a control plane could not be found, started or used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No binaries: neither `KUBEBUILDER_ASSETS` nor the xz archives were found.
    #[error(
        "no control-plane binaries: set KUBEBUILDER_ASSETS to a directory holding etcd and \
         kube-apiserver, or CLIENTGO_ENVTEST_ARCHIVES to a directory holding etcd.xz and \
         kube-apiserver.xz (looked in: {})",
        looked_in.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    )]
    NoBinaries {
        /// The directories searched.
        looked_in: Vec<PathBuf>,
    },
    /// A binary named by `KUBEBUILDER_ASSETS` is missing or not executable.
    #[error("{binary} not found or not executable in {dir}")]
    MissingBinary {
        /// The binary's name.
        binary: &'static str,
        /// The directory it was looked for in.
        dir: PathBuf,
    },
    /// Unpacking an archive failed.
    #[error("unpacking {archive}: {source}")]
    Unpack {
        /// The archive.
        archive: PathBuf,
        /// The decoder's or the file system's error.
        source: std::io::Error,
    },
    /// A file-system or process operation failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Generating the PKI failed.
    #[error("generating the control plane's certificates: {0}")]
    Pki(#[from] rcgen::Error),
    /// A component exited before it became ready.
    #[error(
        "{component} exited with {status} before it became ready; last lines of {log}:\n{tail}"
    )]
    Exited {
        /// The component (`etcd`, `kube-apiserver`, `kube-controller-manager`).
        component: &'static str,
        /// Its exit status.
        status: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
    /// A component did not become ready in time.
    #[error(
        "{component} did not become ready within {waited:?} ({last_probe}); last lines of {log}:\n{tail}"
    )]
    NotReady {
        /// The component.
        component: &'static str,
        /// How long was waited.
        waited: Duration,
        /// What the last readiness probe saw.
        last_probe: String,
        /// Its log file.
        log: PathBuf,
        /// The last lines of its log.
        tail: String,
    },
    /// An admin request (namespace, compaction) failed.
    #[error("{what}: {detail}")]
    Request {
        /// The request.
        what: String,
        /// What went wrong (status and the server's message, or the transport error).
        detail: String,
    },
    /// The operation needs a component that this control plane was started without.
    #[error("{0} is not running in this control plane")]
    NotRunning(&'static str),
}

impl Error {
    pub(crate) fn io(what: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            what: what.into(),
            source,
        }
    }
}
