//! [`ConfigError`]: every way building a client configuration can fail.
//!
//! client-go reports these as a mix of wrapped `fmt.Errorf` strings, `errConfigurationInvalid`
//! aggregates and `os` errors (`tools/clientcmd/validation.go`, `loader.go`,
//! `plugin/pkg/client/auth/exec/exec.go`). Here they are one typed enum so that callers can
//! match on the cause, and every message names where the problem is: the kubeconfig file, the
//! entry (`cluster "prod"`, `user "alice"`) and the field.
//!
//! Differences from client-go, and why:
//! * The loader stops at the first bad file instead of collecting an aggregate: the first error
//!   is the one to fix, and an aggregate of one is the common case.
//! * No message ever contains a credential. Base64 and PEM errors describe the problem without
//!   quoting the offending bytes (the `base64` and `rustls-pki-types` messages would), an exec
//!   plugin's stdout (where its credential is) is never quoted, only the line and column of a
//!   JSON error, and a server URL's user-info part is replaced by `REDACTED`.

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// Why a client configuration could not be built. See the module documentation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A kubeconfig file exists but could not be read (permissions, a directory, I/O error).
    #[error("unable to read kubeconfig {}: {source}", .path.display())]
    ReadKubeconfig {
        /// The kubeconfig file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },

    /// A kubeconfig named explicitly (not found through `KUBECONFIG` or the home directory)
    /// does not exist.
    #[error("kubeconfig {} does not exist (it was named explicitly, so it must)", .path.display())]
    KubeconfigNotFound {
        /// The missing file.
        path: PathBuf,
    },

    /// A kubeconfig is not valid YAML or JSON, or a field has the wrong type.
    #[error("{}: {}{message}", Origin(.file), LineCol(*.line, *.column))]
    Syntax {
        /// The kubeconfig file (`None` for one given in memory).
        file: Option<PathBuf>,
        /// 1-based line of the error, when the parser knows it.
        line: Option<usize>,
        /// 1-based column of the error, when the parser knows it.
        column: Option<usize>,
        /// The parser's description (never a credential: see [`Secret`](super::Secret)).
        message: String,
    },

    /// Two entries of the same list in one kubeconfig share a name.
    #[error("{}: duplicate name {name:?} in {list}", Origin(.file))]
    DuplicateName {
        /// The kubeconfig file.
        file: Option<PathBuf>,
        /// `clusters`, `users`, `contexts` or `extensions`.
        list: &'static str,
        /// The repeated name.
        name: String,
    },

    /// A `*-data` field is not valid base64.
    #[error("{}: {entry}: {field} is not valid base64 ({reason})", Origin(.file))]
    Base64 {
        /// The kubeconfig file.
        file: Option<PathBuf>,
        /// The entry, e.g. `user "alice"`.
        entry: String,
        /// The field, e.g. `client-key-data`.
        field: &'static str,
        /// What is wrong (position and kind, never the bytes).
        reason: String,
    },

    /// Certificate or key material is not usable PEM.
    #[error("{}: {entry}: {field}{}: {reason}", Origin(.file), OptPath(.path))]
    Pem {
        /// The kubeconfig file.
        file: Option<PathBuf>,
        /// The entry, e.g. `cluster "prod"`.
        entry: String,
        /// The field, e.g. `certificate-authority-data`.
        field: &'static str,
        /// The PEM file, when the field names one.
        path: Option<PathBuf>,
        /// What is wrong.
        reason: String,
    },

    /// A file that a kubeconfig entry refers to (CA, client certificate or key, token file)
    /// could not be read.
    #[error("{}: {entry}: unable to read {field} {}: {source}", Origin(.file), .path.display())]
    ReadReferencedFile {
        /// The kubeconfig file.
        file: Option<PathBuf>,
        /// The entry, e.g. `user "alice"`.
        entry: String,
        /// The field, e.g. `tokenFile`.
        field: &'static str,
        /// The referenced file (already resolved against the kubeconfig's directory).
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },

    /// No context was chosen and no kubeconfig sets `current-context` (client-go's
    /// `ErrEmptyConfig`). [`Config::infer`](super::Config::infer) falls back to in-cluster
    /// configuration on this error only.
    #[error("no configuration has been provided: {}", EmptyReason(.files, .missing))]
    EmptyConfig {
        /// The kubeconfig files that were read.
        files: Vec<PathBuf>,
        /// The kubeconfig files that were looked for and do not exist.
        missing: Vec<PathBuf>,
    },

    /// The chosen context (explicit, or `current-context`) does not exist.
    #[error("context {name:?} not found in {}", Files(.files))]
    ContextNotFound {
        /// The context name.
        name: String,
        /// The kubeconfig files that were read.
        files: Vec<PathBuf>,
    },

    /// The chosen cluster (explicit, or named by the context) does not exist.
    #[error("cluster {name:?}{} not found in {}", NamedBy(.context), Files(.files))]
    ClusterNotFound {
        /// The cluster name.
        name: String,
        /// The context that named it, if it was not chosen explicitly.
        context: Option<String>,
        /// The kubeconfig files that were read.
        files: Vec<PathBuf>,
    },

    /// The chosen user (explicit, or named by the context) does not exist.
    #[error("user {name:?}{} not found in {}", NamedBy(.context), Files(.files))]
    UserNotFound {
        /// The user name.
        name: String,
        /// The context that named it, if it was not chosen explicitly.
        context: Option<String>,
        /// The kubeconfig files that were read.
        files: Vec<PathBuf>,
    },

    /// The chosen context names no cluster and none was chosen explicitly.
    #[error("{}: context {context:?} names no cluster", Origin(.file))]
    ContextWithoutCluster {
        /// The kubeconfig file that defines the context.
        file: Option<PathBuf>,
        /// The context name.
        context: String,
    },

    /// The chosen cluster has no `server`.
    #[error("{}: cluster {cluster:?} has no server", Origin(.file))]
    NoServer {
        /// The kubeconfig file that defines the cluster.
        file: Option<PathBuf>,
        /// The cluster name.
        cluster: String,
    },

    /// A server or proxy URL cannot be used.
    #[error("{origin}: {field} {url:?} is not usable: {reason}")]
    InvalidUrl {
        /// Where the URL came from, e.g. `cluster "prod" in kubeconfig /home/me/.kube/config`.
        origin: String,
        /// `server` or `proxy-url`.
        field: &'static str,
        /// The URL, with any user-info part replaced by `REDACTED`.
        url: String,
        /// What is wrong.
        reason: String,
    },

    /// A field, or a combination of fields, is invalid (client-go's validation errors).
    #[error("{}: {entry}: {field}: {reason}", Origin(.file))]
    Invalid {
        /// The kubeconfig file.
        file: Option<PathBuf>,
        /// The entry, e.g. `user "alice"`.
        entry: String,
        /// The field, e.g. `exec.apiVersion`.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },

    /// The chosen user authenticates through an `auth-provider`, which is not supported.
    #[error(
        "{}: user {user:?} uses auth-provider {provider:?}, which is not supported (client-go \
         removed its in-tree providers in 1.26); use an exec credential plugin instead, such as \
         gke-gcloud-auth-plugin for GKE or kubelogin for Azure and OIDC",
        Origin(.file)
    )]
    AuthProviderUnsupported {
        /// The kubeconfig file that defines the user.
        file: Option<PathBuf>,
        /// The user name.
        user: String,
        /// The provider's name, e.g. `gcp`, `azure`, `oidc`.
        provider: String,
    },

    /// `KUBERNETES_SERVICE_HOST` or `KUBERNETES_SERVICE_PORT` is not set (client-go's
    /// `ErrNotInCluster`).
    #[error(
        "unable to load in-cluster configuration: KUBERNETES_SERVICE_HOST and \
         KUBERNETES_SERVICE_PORT must be defined"
    )]
    NotInCluster,

    /// A file outside any kubeconfig (the service-account token, a bearer token file being
    /// re-read) could not be read.
    #[error("unable to read {what} {}: {source}", .path.display())]
    ReadFile {
        /// What the file is, e.g. `service-account token`.
        what: &'static str,
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: io::Error,
    },

    /// A token file holds nothing but white space.
    #[error("{what} {} is empty", .path.display())]
    EmptyFile {
        /// What the file is, e.g. `tokenFile`.
        what: &'static str,
        /// The file.
        path: PathBuf,
    },

    /// [`Config::infer`](super::Config::infer) found no kubeconfig to use and in-cluster
    /// configuration failed too.
    #[error(
        "unable to infer a client configuration: kubeconfig: {kubeconfig}; in-cluster: {in_cluster}"
    )]
    Infer {
        /// Why the kubeconfig could not be used.
        kubeconfig: Box<ConfigError>,
        /// Why in-cluster configuration could not be used.
        in_cluster: Box<ConfigError>,
    },

    /// An exec plugin's configuration is invalid (unsupported apiVersion, interactiveMode, …).
    #[error("exec plugin {command:?}: {reason}")]
    ExecConfig {
        /// The plugin's command.
        command: String,
        /// What is wrong.
        reason: String,
    },

    /// An exec plugin's executable does not exist.
    #[error("exec plugin {command:?}: executable not found{}", InstallHint(.install_hint))]
    ExecNotFound {
        /// The plugin's command.
        command: String,
        /// The kubeconfig's `installHint`, shown to the user.
        install_hint: Option<String>,
    },

    /// An exec plugin could not be started.
    #[error("exec plugin {command:?}: unable to start: {source}")]
    ExecSpawn {
        /// The plugin's command.
        command: String,
        /// The I/O error.
        source: io::Error,
    },

    /// An exec plugin did not finish within its time limit; it was killed. Names the
    /// command only: its arguments and environment may hold secrets.
    #[error(
        "exec plugin {command:?} did not finish within {timeout:?} and was killed (waiting for it included)"
    )]
    ExecTimeout {
        /// The plugin's command.
        command: String,
        /// The time limit ([`ExecAuthenticator::set_timeout`](super::ExecAuthenticator::set_timeout)).
        timeout: std::time::Duration,
    },

    /// An exec plugin wrote more to its standard output than a credential can be; it was
    /// killed.
    #[error(
        "exec plugin {command:?} wrote more than {limit} bytes to standard output and was killed"
    )]
    ExecOutputTooLarge {
        /// The plugin's command.
        command: String,
        /// The cap, in bytes.
        limit: usize,
    },

    /// An exec plugin ran and failed.
    #[error("exec plugin {command:?} failed ({status}){}", Stderr(.stderr))]
    ExecFailed {
        /// The plugin's command.
        command: String,
        /// How it ended, e.g. `exit status: 73`.
        status: String,
        /// The end of what it wrote to standard error (at most 1 KiB). Its standard output,
        /// where a credential would be, is never kept.
        stderr: String,
    },

    /// An exec plugin with `interactiveMode: Always` cannot run: standard input is not a
    /// terminal.
    #[error(
        "exec plugin {command:?}: interactiveMode is Always but standard input is not a terminal"
    )]
    ExecNotInteractive {
        /// The plugin's command.
        command: String,
    },

    /// An exec plugin's standard output is not JSON.
    #[error(
        "exec plugin {command:?}: output is not valid JSON ({problem} at line {line}, column {column})"
    )]
    ExecBadJson {
        /// The plugin's command.
        command: String,
        /// `syntax error`, `unexpected end of output`, …
        problem: &'static str,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
    },

    /// An exec plugin returned something other than an `ExecCredential` of the configured
    /// apiVersion.
    #[error(
        "exec plugin {command:?}: output has apiVersion {got_api_version:?} and kind {got_kind:?}, \
         expected apiVersion {expected:?} and kind \"ExecCredential\""
    )]
    ExecWrongType {
        /// The plugin's command.
        command: String,
        /// The configured apiVersion.
        expected: String,
        /// The apiVersion returned, if any.
        got_api_version: Option<String>,
        /// The kind returned, if any.
        got_kind: Option<String>,
    },

    /// An exec plugin's `ExecCredential` has missing or malformed fields.
    #[error("exec plugin {command:?}: {field}: {reason}")]
    ExecInvalidCredential {
        /// The plugin's command.
        command: String,
        /// The field, e.g. `status.expirationTimestamp`.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
}

impl ConfigError {
    /// True for [`ConfigError::EmptyConfig`]: there was simply no kubeconfig to use, as
    /// opposed to a kubeconfig with a mistake in it.
    pub fn is_empty_config(&self) -> bool {
        matches!(self, ConfigError::EmptyConfig { .. })
    }
}

/// `kubeconfig /path` or `in-memory kubeconfig`.
pub(crate) struct Origin<'a>(pub(crate) &'a Option<PathBuf>);

impl fmt::Display for Origin<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(path) => write!(f, "kubeconfig {}", path.display()),
            None => f.write_str("in-memory kubeconfig"),
        }
    }
}

struct LineCol(Option<usize>, Option<usize>);

impl fmt::Display for LineCol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(line), Some(column)) => write!(f, "line {line}, column {column}: "),
            (Some(line), None) => write!(f, "line {line}: "),
            _ => Ok(()),
        }
    }
}

struct OptPath<'a>(&'a Option<PathBuf>);

impl fmt::Display for OptPath<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(path) => write!(f, " {}", path.display()),
            None => Ok(()),
        }
    }
}

struct Files<'a>(&'a [PathBuf]);

impl fmt::Display for Files<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            [] => f.write_str("the kubeconfig (no file was read)"),
            [one] => write!(f, "kubeconfig {}", one.display()),
            many => {
                f.write_str("kubeconfig files ")?;
                write_list(f, many)
            }
        }
    }
}

fn write_list(f: &mut fmt::Formatter<'_>, paths: &[PathBuf]) -> fmt::Result {
    for (i, path) in paths.iter().enumerate() {
        if i > 0 {
            f.write_str(", ")?;
        }
        write!(f, "{}", path.display())?;
    }
    Ok(())
}

struct EmptyReason<'a>(&'a [PathBuf], &'a [PathBuf]);

impl fmt::Display for EmptyReason<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            ([], []) => f.write_str("no kubeconfig file to look for (KUBECONFIG and HOME unset)"),
            ([], missing) => {
                f.write_str("no kubeconfig file found (looked for ")?;
                write_list(f, missing)?;
                f.write_str(")")
            }
            (files, _) => {
                f.write_str("no context was chosen and no current-context is set in ")?;
                write_list(f, files)
            }
        }
    }
}

struct NamedBy<'a>(&'a Option<String>);

impl fmt::Display for NamedBy<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(context) => write!(f, " (named by context {context:?})"),
            None => Ok(()),
        }
    }
}

struct InstallHint<'a>(&'a Option<String>);

impl fmt::Display for InstallHint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "; it looks like a client-go credential plugin that is not installed \
             (see https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins)",
        )?;
        match self.0 {
            Some(hint) => write!(f, "\n\n{hint}"),
            None => Ok(()),
        }
    }
}

struct Stderr<'a>(&'a str);

impl fmt::Display for Stderr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0.is_empty() {
            Ok(())
        } else {
            write!(f, "; stderr: {}", self.0)
        }
    }
}

/// `cluster "name"`, `user "name"`, `context "name"`: the entry part of messages.
pub(crate) fn entry(kind: &str, name: &str) -> String {
    format!("{kind} {name:?}")
}

/// `path` as an owned optional path, for the `file` fields.
pub(crate) fn file_of(path: Option<&Path>) -> Option<PathBuf> {
    path.map(Path::to_path_buf)
}
