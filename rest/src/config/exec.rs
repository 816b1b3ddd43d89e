//! Exec credential plugins: run a command that prints an `ExecCredential`, cache what it
//! returns until it expires, run it again when asked.
//!
//! Mirrors client-go `plugin/pkg/client/auth/exec/exec.go` (`Authenticator`), for
//! `client.authentication.k8s.io/v1` and `v1beta1` (v1alpha1 was removed in Kubernetes 1.24):
//! * The command runs with this process's environment plus the configured `env` and
//!   `KUBERNETES_EXEC_INFO`, an `ExecCredential` whose `spec` says whether the plugin may talk
//!   to the user (`interactive`) and, with `provideClusterInfo`, describes the cluster
//!   (server, `tls-server-name`, `insecure-skip-tls-verify`, `certificate-authority-data`,
//!   `proxy-url`, `disable-compression`, and the cluster extension named
//!   `client.authentication.k8s.io/exec` as `config`).
//! * Interactive mode: `Never` → not interactive; `IfAvailable` → interactive when standard
//!   input is a terminal; `Always` → a terminal is required. `interactiveMode` is required for
//!   v1 and defaults to `IfAvailable` for v1beta1 (`clientcmd/api/v1/defaults.go`). Only an
//!   interactive plugin gets this process's standard input (and standard error, for prompts).
//! * Its standard output must be an `ExecCredential` of the configured apiVersion whose
//!   `status` carries a `token`, or `clientCertificateData` and `clientKeyData` (PEM), or
//!   both, and optionally an RFC 3339 `expirationTimestamp`.
//! * The credential is cached until `expirationTimestamp` (forever without one). Only one plugin
//!   run happens at a time; callers waiting for it share its result. After a 401, the
//!   transport calls [`ExecAuthenticator::invalidate_if_current`] with the credential it sent
//!   (client-go's `maybeRefreshCreds`), so concurrent 401s cause one new run, not many.
//!
//! Bounds (client-go has none): a run, waiting for another caller's run included, lasts at
//! most [`DEFAULT_EXEC_TIMEOUT`] (1 minute; [`ExecAuthenticator::set_timeout`]), after which
//! the plugin is killed and the caller gets [`ConfigError::ExecTimeout`] naming the command
//! (never its arguments or environment). So the one-run-at-a-time lock is never held past the
//! time limit, and a hung plugin cannot hold up every request of the client forever. The
//! plugin's standard output may be at most [`MAX_EXEC_STDOUT`] (1 MiB; more kills it:
//! [`ConfigError::ExecOutputTooLarge`]); of its standard error only the last
//! [`MAX_EXEC_STDERR`] (64 KiB) is kept while it runs.
//!
//! Differences from client-go, and why:
//! * The plugin runs on the next [`credential`](ExecAuthenticator::credential) call after a
//!   401, not inside the failed request: the failed request is not retried by client-go either,
//!   so the observable behaviour is the same and the request path stays simple.
//! * A non-interactive plugin's standard error is captured rather than passed through: the end
//!   of it (1 KiB) goes into [`ConfigError::ExecFailed`] when the plugin fails, and it is logged
//!   at debug level otherwise. Its standard output, where the credential is, is never logged
//!   or quoted in errors.
//! * Authenticators are not cached process-wide by configuration hash; a [`Config`](super::Config)
//!   and its clones share one.
//! * `installHint`'s control characters are escaped as `U+001B` (client-go also escapes other
//!   non-printable Unicode categories, which Rust's standard library cannot name).

use std::fmt;
use std::io::IsTerminal as _;
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use tokio::io::{AsyncRead, AsyncReadExt as _};

use base64::Engine as _;
use serde::Serialize;

use super::clock::Clock;
use super::error::ConfigError;
use super::kubeconfig::ExecConfig;
use super::secret::Secret;
use super::tls::{Bytes, check_certificates, check_private_key};

/// The environment variable that carries the `ExecCredential` input to the plugin.
pub const EXEC_INFO_ENV: &str = "KUBERNETES_EXEC_INFO";
/// `client.authentication.k8s.io/v1`.
pub const EXEC_API_V1: &str = "client.authentication.k8s.io/v1";
/// `client.authentication.k8s.io/v1beta1`.
pub const EXEC_API_V1BETA1: &str = "client.authentication.k8s.io/v1beta1";
/// The cluster extension handed to plugins as `spec.cluster.config`.
pub const EXEC_CLUSTER_EXTENSION: &str = "client.authentication.k8s.io/exec";
/// The default time limit of a plugin run: 1 minute.
pub const DEFAULT_EXEC_TIMEOUT: Duration = Duration::from_secs(60);
/// The most a plugin may write to standard output: 1 MiB.
pub const MAX_EXEC_STDOUT: usize = 1 << 20;
/// How much of a plugin's standard error is kept while it runs (the end of it): 64 KiB.
pub const MAX_EXEC_STDERR: usize = 64 << 10;

/// When a plugin may interact with the user through standard input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InteractiveMode {
    /// Never.
    Never,
    /// When standard input is a terminal.
    IfAvailable,
    /// Always: a terminal is required.
    Always,
}

/// The cluster as described to a plugin in `spec.cluster` (when `provideClusterInfo` is set).
#[derive(Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub struct ExecClusterInfo {
    /// The server URL as written in the kubeconfig.
    pub server: String,
    /// `tls-server-name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tls_server_name: Option<String>,
    /// `insecure-skip-tls-verify`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub insecure_skip_tls_verify: bool,
    /// CA certificates (PEM), sent base64-encoded.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "as_base64")]
    pub certificate_authority_data: Option<Vec<u8>>,
    /// `proxy-url`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub proxy_url: Option<String>,
    /// `disable-compression`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub disable_compression: bool,
    /// The cluster's `client.authentication.k8s.io/exec` extension.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<serde_json::Value>,
}

impl fmt::Debug for ExecClusterInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proxy_url = self
            .proxy_url
            .as_deref()
            .map(super::server_url::redact_userinfo);
        f.debug_struct("ExecClusterInfo")
            .field("server", &super::server_url::redact_userinfo(&self.server))
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field(
                "certificate_authority_data",
                &self.certificate_authority_data.as_deref().map(Bytes),
            )
            .field("proxy_url", &proxy_url)
            .field("disable_compression", &self.disable_compression)
            .field("config", &self.config)
            .finish()
    }
}

fn as_base64<S: serde::Serializer>(data: &Option<Vec<u8>>, s: S) -> Result<S::Ok, S::Error> {
    let encoded = data
        .as_deref()
        .map(|d| base64::engine::general_purpose::STANDARD.encode(d));
    encoded.serialize(s)
}

/// What a plugin returned.
#[derive(Clone, PartialEq)]
pub struct ExecCredential {
    /// A bearer token.
    pub token: Option<Secret<String>>,
    /// A client certificate chain (PEM).
    pub client_certificate_pem: Option<Vec<u8>>,
    /// The client certificate's private key (PEM).
    pub client_key_pem: Option<Secret<Vec<u8>>>,
    /// When the credential stops being valid; `None` means never.
    pub expiration: Option<SystemTime>,
}

impl fmt::Debug for ExecCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExecCredential")
            .field("token", &self.token)
            .field(
                "client_certificate_pem",
                &self.client_certificate_pem.as_deref().map(Bytes),
            )
            .field("client_key_pem", &self.client_key_pem)
            .field("expiration", &self.expiration)
            .finish()
    }
}

/// Runs an exec plugin and caches its credential; clones share the cache.
#[derive(Clone)]
pub struct ExecAuthenticator {
    inner: Arc<Inner>,
}

struct Inner {
    config: ExecConfig,
    api_version: &'static str,
    interactive_mode: InteractiveMode,
    cluster: Option<ExecClusterInfo>,
    clock: Clock,
    stdin_is_terminal: fn() -> bool,
    cached: Mutex<Option<Arc<ExecCredential>>>,
    run_lock: tokio::sync::Mutex<()>,
    timeout: Mutex<Duration>,
    /// Tasks reading a plugin's standard error now (each ends with its run, or is aborted).
    stderr_readers: Arc<AtomicUsize>,
}

impl fmt::Debug for ExecAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let inner = &*self.inner;
        f.debug_struct("ExecAuthenticator")
            .field("command", &inner.config.command)
            .field("args", &inner.config.args)
            .field("env", &inner.config.env)
            .field("api_version", &inner.api_version)
            .field("interactive_mode", &inner.interactive_mode)
            .field("provide_cluster_info", &inner.config.provide_cluster_info)
            .finish_non_exhaustive()
    }
}

impl ExecAuthenticator {
    /// An authenticator for `config`; `cluster` is sent to the plugin if `provideClusterInfo`
    /// is set. Fails if the configuration is invalid (see [`check_exec_config`]).
    pub fn new(config: ExecConfig, cluster: Option<ExecClusterInfo>) -> Result<Self, ConfigError> {
        ExecAuthenticator::with_clock(config, cluster, Clock::system())
    }

    /// Like [`ExecAuthenticator::new`], judging expiry with the given clock.
    pub fn with_clock(
        config: ExecConfig,
        cluster: Option<ExecClusterInfo>,
        clock: Clock,
    ) -> Result<Self, ConfigError> {
        ExecAuthenticator::build(config, cluster, clock, || std::io::stdin().is_terminal())
    }

    pub(crate) fn build(
        mut config: ExecConfig,
        cluster: Option<ExecClusterInfo>,
        clock: Clock,
        stdin_is_terminal: fn() -> bool,
    ) -> Result<Self, ConfigError> {
        let (api_version, interactive_mode) =
            check_exec_config(&config).map_err(|(field, reason)| ConfigError::ExecConfig {
                command: config.command.clone(),
                reason: format!("{field}: {reason}"),
            })?;
        config.install_hint = config.install_hint.as_deref().map(escape_control_chars);
        Ok(ExecAuthenticator {
            inner: Arc::new(Inner {
                config,
                api_version,
                interactive_mode,
                cluster,
                clock,
                stdin_is_terminal,
                cached: Mutex::new(None),
                run_lock: tokio::sync::Mutex::new(()),
                timeout: Mutex::new(DEFAULT_EXEC_TIMEOUT),
                stderr_readers: Arc::default(),
            }),
        })
    }

    /// The plugin's configuration.
    pub fn config(&self) -> &ExecConfig {
        &self.inner.config
    }

    /// The cluster description handed to the plugin when `provideClusterInfo` is set.
    pub fn cluster_info(&self) -> Option<&ExecClusterInfo> {
        self.inner.cluster.as_ref()
    }

    /// Sets the time limit of a call to [`credential`](Self::credential) that runs the
    /// plugin or waits for another call's run (default [`DEFAULT_EXEC_TIMEOUT`]); shared by
    /// every clone.
    pub fn set_timeout(&self, timeout: Duration) {
        *self.inner.timeout.lock().unwrap_or_else(|p| p.into_inner()) = timeout;
    }

    /// The time limit of a plugin run (see [`set_timeout`](Self::set_timeout)).
    pub fn timeout(&self) -> Duration {
        *self.inner.timeout.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The current credential: the cached one while it has not expired, otherwise the plugin
    /// runs (once, however many callers wait).
    ///
    /// Runs the plugin with `tokio::process`, so it needs a Tokio runtime with I/O enabled.
    /// Waiting for another caller's run and running the plugin take at most the time limit
    /// ([`set_timeout`](Self::set_timeout)) together; past it the plugin is killed and the
    /// result is [`ConfigError::ExecTimeout`]. Dropping the future kills the plugin too.
    pub async fn credential(&self) -> Result<Arc<ExecCredential>, ConfigError> {
        if let Some(credential) = self.cached() {
            return Ok(credential);
        }
        let timeout = self.timeout();
        let bounded = async {
            let _running = self.inner.run_lock.lock().await;
            if let Some(credential) = self.cached() {
                return Ok(credential);
            }
            let credential = Arc::new(self.run().await?);
            *self.slot() = Some(credential.clone());
            Ok(credential)
        };
        tokio::time::timeout(timeout, bounded)
            .await
            .unwrap_or_else(|_| {
                tracing::warn!(command = %self.inner.config.command, ?timeout, "exec credential plugin timed out");
                Err(ConfigError::ExecTimeout {
                    command: self.inner.config.command.clone(),
                    timeout,
                })
            })
    }

    /// The cached credential, if there is one and it has not expired.
    pub fn cached(&self) -> Option<Arc<ExecCredential>> {
        let now = self.inner.clock.now();
        self.slot()
            .as_ref()
            .filter(|c| c.expiration.is_none_or(|exp| now <= exp))
            .cloned()
    }

    /// Drops the cached credential: the next [`credential`](Self::credential) call runs the
    /// plugin.
    pub fn invalidate(&self) {
        *self.slot() = None;
    }

    /// Drops the cached credential if it is `used` (the one a request that got 401 sent), and
    /// says whether it did. A credential already replaced by another caller is left alone.
    pub fn invalidate_if_current(&self, used: &Arc<ExecCredential>) -> bool {
        let mut slot = self.slot();
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, used)) {
            *slot = None;
            true
        } else {
            false
        }
    }

    fn slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<ExecCredential>>> {
        self.inner.cached.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn run(&self) -> Result<ExecCredential, ConfigError> {
        let inner = &*self.inner;
        let command = &inner.config.command;
        let interactive = match inner.interactive_mode {
            InteractiveMode::Never => false,
            InteractiveMode::IfAvailable => (inner.stdin_is_terminal)(),
            InteractiveMode::Always if (inner.stdin_is_terminal)() => true,
            InteractiveMode::Always => {
                return Err(ConfigError::ExecNotInteractive {
                    command: command.clone(),
                });
            }
        };
        let mut spec = serde_json::json!({ "interactive": interactive });
        if inner.config.provide_cluster_info {
            if let Some(cluster) = &inner.cluster {
                spec["cluster"] = serde_json::to_value(cluster).unwrap_or_default();
            }
        }
        let input = serde_json::json!({
            "apiVersion": inner.api_version,
            "kind": "ExecCredential",
            "spec": spec,
        });

        let mut cmd = tokio::process::Command::new(command);
        cmd.args(&inner.config.args.0);
        for var in &inner.config.env {
            cmd.env(&var.name, var.value.expose());
        }
        cmd.env(EXEC_INFO_ENV, input.to_string())
            .stdout(Stdio::piped())
            .stdin(if interactive {
                Stdio::inherit()
            } else {
                Stdio::null()
            })
            .stderr(if interactive {
                Stdio::inherit()
            } else {
                Stdio::piped()
            })
            .kill_on_drop(true);

        tracing::debug!(command = %command, interactive, "running exec credential plugin");
        let mut child = cmd.spawn().map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                ConfigError::ExecNotFound {
                    command: command.clone(),
                    install_hint: inner.config.install_hint.clone(),
                }
            } else {
                ConfigError::ExecSpawn {
                    command: command.clone(),
                    source,
                }
            }
        })?;
        let spawn_error = |source| ConfigError::ExecSpawn {
            command: command.clone(),
            source,
        };
        let stdout_pipe = child.stdout.take();
        let stderr_pipe = child.stderr.take();
        // Standard error is drained alongside (a plugin blocked on a full pipe would hang).
        // The task ends when the pipe closes, or is aborted when this run ends or is dropped
        // (a timeout): a grandchild of the plugin may hold the pipe open long after.
        let reader = StderrReader::new(&inner.stderr_readers);
        let mut stderr_task = AbortOnDrop(tokio::spawn(async move {
            let _reader = reader;
            read_capped(stderr_pipe, MAX_EXEC_STDERR, true).await
        }));
        let stdout = read_capped(stdout_pipe, MAX_EXEC_STDOUT, false).await;
        let stdout = match stdout {
            Ok(Some(stdout)) => stdout,
            // Dropping the child (kill_on_drop) kills it.
            Ok(None) => {
                return Err(ConfigError::ExecOutputTooLarge {
                    command: command.clone(),
                    limit: MAX_EXEC_STDOUT,
                });
            }
            Err(source) => return Err(spawn_error(source)),
        };
        let status = child.wait().await.map_err(spawn_error)?;
        let stderr = match (&mut stderr_task.0).await {
            Ok(stderr) => stderr.map_err(spawn_error)?.unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        let stderr = stderr_excerpt(&stderr);
        if !status.success() {
            return Err(ConfigError::ExecFailed {
                command: command.clone(),
                status: status.to_string(),
                stderr,
            });
        }
        if !stderr.is_empty() {
            tracing::debug!(command = %command, %stderr, "exec credential plugin wrote to stderr");
        }
        let credential = parse_output(&stdout, command, inner.api_version)?;
        tracing::debug!(
            command = %command,
            token = credential.token.is_some(),
            client_certificate = credential.client_certificate_pem.is_some(),
            expiration = ?credential.expiration,
            "exec credential plugin returned a credential"
        );
        Ok(credential)
    }
}

/// A task handle that aborts the task when dropped.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Counts a standard-error reader as live until it is dropped (ended or aborted).
struct StderrReader(Arc<AtomicUsize>);

impl StderrReader {
    fn new(count: &Arc<AtomicUsize>) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        StderrReader(count.clone())
    }
}

impl Drop for StderrReader {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl ExecAuthenticator {
    /// The tasks reading a plugin's standard error now.
    #[cfg(test)]
    fn stderr_readers(&self) -> usize {
        self.inner.stderr_readers.load(Ordering::Relaxed)
    }
}

/// Validates an exec configuration as client-go's `validateAuthInfo` and defaulting do: the
/// apiVersion (v1 or v1beta1) and the effective interactive mode, or the field at fault and why.
pub fn check_exec_config(
    config: &ExecConfig,
) -> Result<(&'static str, InteractiveMode), (&'static str, String)> {
    if config.command.is_empty() {
        return Err(("exec.command", "must be specified".to_owned()));
    }
    let api_version = match config.api_version.as_str() {
        EXEC_API_V1 => EXEC_API_V1,
        EXEC_API_V1BETA1 => EXEC_API_V1BETA1,
        "" => return Err(("exec.apiVersion", "must be specified".to_owned())),
        other => {
            return Err((
                "exec.apiVersion",
                format!("{other:?} is not supported (use {EXEC_API_V1:?} or {EXEC_API_V1BETA1:?})"),
            ));
        }
    };
    if config.env.iter().any(|var| var.name.is_empty()) {
        return Err(("exec.env", "every variable needs a name".to_owned()));
    }
    let mode = match config.interactive_mode.as_deref() {
        Some("Never") => InteractiveMode::Never,
        Some("IfAvailable") => InteractiveMode::IfAvailable,
        Some("Always") => InteractiveMode::Always,
        None if api_version == EXEC_API_V1BETA1 => InteractiveMode::IfAvailable,
        None => {
            return Err((
                "exec.interactiveMode",
                format!("must be specified for {EXEC_API_V1} (Never, IfAvailable or Always)"),
            ));
        }
        Some(other) => {
            return Err((
                "exec.interactiveMode",
                format!("{other:?} is not one of Never, IfAvailable, Always"),
            ));
        }
    };
    Ok((api_version, mode))
}

/// Decodes the plugin's standard output. Errors never quote it: it holds the credential.
fn parse_output(
    stdout: &[u8],
    command: &str,
    api_version: &str,
) -> Result<ExecCredential, ConfigError> {
    use serde_json::Value;
    let invalid = |field: &'static str, reason: &str| ConfigError::ExecInvalidCredential {
        command: command.to_owned(),
        field,
        reason: reason.to_owned(),
    };
    let value: Value = serde_json::from_slice(stdout).map_err(|e| ConfigError::ExecBadJson {
        command: command.to_owned(),
        problem: match e.classify() {
            serde_json::error::Category::Eof => "unexpected end of output",
            serde_json::error::Category::Syntax => "syntax error",
            serde_json::error::Category::Data => "unexpected data",
            serde_json::error::Category::Io => "I/O error",
        },
        line: e.line(),
        column: e.column(),
    })?;
    let Value::Object(object) = value else {
        return Err(invalid("(output)", "is not a JSON object"));
    };
    let text = |key: &str| object.get(key).and_then(Value::as_str).map(str::to_owned);
    let (got_api_version, got_kind) = (text("apiVersion"), text("kind"));
    if got_api_version.as_deref() != Some(api_version)
        || got_kind.as_deref() != Some("ExecCredential")
    {
        return Err(ConfigError::ExecWrongType {
            command: command.to_owned(),
            expected: api_version.to_owned(),
            got_api_version,
            got_kind,
        });
    }
    let status = match object.get("status") {
        None | Some(Value::Null) => {
            return Err(invalid(
                "status",
                "missing: the plugin returned no credential",
            ));
        }
        Some(Value::Object(status)) => status,
        Some(_) => return Err(invalid("status", "is not an object")),
    };
    let field = |key: &str, name: &'static str| match status.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if s.is_empty() => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(name, "is not a string")),
    };
    let token = field("token", "status.token")?;
    let cert = field("clientCertificateData", "status.clientCertificateData")?;
    let key = field("clientKeyData", "status.clientKeyData")?;
    let expiration = field("expirationTimestamp", "status.expirationTimestamp")?;

    if token.is_none() && cert.is_none() && key.is_none() {
        return Err(invalid(
            "status",
            "has neither a token nor a client certificate and key",
        ));
    }
    match (&cert, &key) {
        (Some(_), None) => {
            return Err(invalid(
                "status.clientKeyData",
                "missing: a client certificate needs its key",
            ));
        }
        (None, Some(_)) => {
            return Err(invalid(
                "status.clientCertificateData",
                "missing: a client key needs its certificate",
            ));
        }
        _ => {}
    }
    if let Some(cert) = &cert {
        check_certificates(cert.as_bytes())
            .map_err(|r| invalid("status.clientCertificateData", &r))?;
    }
    if let Some(key) = &key {
        check_private_key(key.as_bytes()).map_err(|r| invalid("status.clientKeyData", &r))?;
    }
    let expiration = match expiration {
        None => None,
        Some(s) => {
            let time = clientgo_apimachinery::Time::parse(&s)
                .ok()
                .and_then(|time| time.to_system_time())
                .ok_or_else(|| {
                    invalid("status.expirationTimestamp", "is not an RFC 3339 timestamp")
                })?;
            Some(time)
        }
    };
    Ok(ExecCredential {
        token: token.map(Secret::new),
        client_certificate_pem: cert.map(String::into_bytes),
        client_key_pem: key.map(|k| Secret::new(k.into_bytes())),
        expiration,
    })
}

/// The last KiB of standard error, trimmed, cut at a character boundary.
/// Reads `pipe` (if any) to its end. More than `cap` bytes: `None`, or, when `keep_tail`, the
/// last `cap` bytes (the rest is read and dropped so that the writer never blocks).
async fn read_capped<R: AsyncRead + Unpin>(
    pipe: Option<R>,
    cap: usize,
    keep_tail: bool,
) -> std::io::Result<Option<Vec<u8>>> {
    let Some(mut pipe) = pipe else {
        return Ok(Some(Vec::new()));
    };
    let mut kept = Vec::new();
    let mut buf = vec![0u8; 8192];
    loop {
        let n = pipe.read(&mut buf).await?;
        if n == 0 {
            return Ok(Some(kept));
        }
        kept.extend_from_slice(&buf[..n]);
        if kept.len() > cap {
            if !keep_tail {
                return Ok(None);
            }
            kept.drain(..kept.len() - cap);
        }
    }
}

fn stderr_excerpt(stderr: &[u8]) -> String {
    const MAX: usize = 1024;
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    if text.len() <= MAX {
        return text.to_owned();
    }
    let mut start = text.len() - MAX;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &text[start..])
}

/// Escapes control characters other than white space as `U+XXXX`, so that an install hint
/// cannot put the terminal in a strange state (client-go's `cleanANSIEscapeCodes`).
fn escape_control_chars(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_control() && !('\t'..='\r').contains(&c) {
            out.push_str(&format!("U+{:04X}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
#[path = "exec_tests.rs"]
mod tests;
