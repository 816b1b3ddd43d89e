//! Client configuration: where the API server is, how to trust it, how to authenticate, and how
//! fast to talk to it.
//!
//! [`Config`] is client-go's `rest.Config` reduced to what a controller's transport needs, with
//! every decision that client-go defers to transport assembly already taken: files are read,
//! PEM is checked, and exactly one [`Auth`] is chosen. It is built from
//!
//! * a **kubeconfig**, as kubectl loads it ([`Config::from_kubeconfig`],
//!   [`Config::from_kubeconfig_file`]; client-go `tools/clientcmd`): see [`LoadingRules`] for
//!   which files are read and how they merge, and [`KubeconfigOptions`] for choosing a context,
//!   cluster, user or namespace;
//! * the **in-cluster** environment of a pod ([`Config::in_cluster`]; client-go
//!   `rest.InClusterConfig`);
//! * or whichever of the two applies ([`Config::infer`]; client-go's deferred loading client
//!   config, as `kubectl` inside a pod and most controllers use it).
//!
//! Module map:
//!
//! | module | client-go |
//! |---|---|
//! | [`kubeconfig`](Kubeconfig) | `tools/clientcmd/api/v1/types.go`, `clientcmd.Load` |
//! | [`loader`](LoadingRules) | `tools/clientcmd/loader.go` |
//! | `from_kubeconfig` | `tools/clientcmd/client_config.go`, `validation.go` |
//! | `in_cluster` | `rest/config.go` `InClusterConfig`, `inClusterClientConfig` |
//! | [`exec`](ExecAuthenticator) | `plugin/pkg/client/auth/exec/exec.go` |
//! | [`token_file`](TokenFile) | `transport/token_source.go` |
//! | [`auth`](Auth), [`tls`](TlsConfig) | `rest.Config`'s auth and `TLSClientConfig` fields |
//!
//! ```no_run
//! use clientgo_rest::config::{Config, KubeconfigOptions};
//!
//! # fn main() -> Result<(), clientgo_rest::config::ConfigError> {
//! // ~/.kube/config or $KUBECONFIG, else the pod's service account:
//! let config = Config::infer()?;
//! println!("talking to {} as {:?}", config.cluster_url, config.auth); // never prints secrets
//!
//! // A given context of the kubeconfig, with another namespace:
//! let config = Config::from_kubeconfig(&KubeconfigOptions {
//!     context: Some("staging".into()),
//!     namespace: Some("team-a".into()),
//!     ..KubeconfigOptions::default()
//! })?;
//! # Ok(()) }
//! ```
//!
//! Differences from client-go's `rest.Config`, and why: no `Transport`/`WrapTransport`/`Dial`
//! hooks, content configuration or rate limiter object (those belong to the transport and
//! client built on top of this); `Debug` is safe to log, since tokens, passwords, private keys,
//! exec arguments and environment values, and proxy credentials are all redacted.

use std::fmt;
use std::time::Duration;

mod auth;
mod clock;
mod error;
mod exec;
mod from_kubeconfig;
mod in_cluster;
mod kubeconfig;
mod loader;
#[cfg(test)]
mod log_tests;
mod secret;
mod server_url;
#[cfg(test)]
mod testutil;
mod tls;
mod token_file;

pub use auth::{Auth, Impersonation};
pub use clock::Clock;
pub use error::ConfigError;
pub use exec::{
    DEFAULT_EXEC_TIMEOUT, EXEC_API_V1, EXEC_API_V1BETA1, EXEC_CLUSTER_EXTENSION, EXEC_INFO_ENV,
    ExecAuthenticator, ExecClusterInfo, ExecCredential, InteractiveMode, MAX_EXEC_STDERR,
    MAX_EXEC_STDOUT, check_exec_config,
};
pub use from_kubeconfig::KubeconfigOptions;
pub use in_cluster::{InClusterEnv, SERVICE_ACCOUNT_DIR};
pub use kubeconfig::{
    AuthInfo, AuthProvider, Cluster, Context, ExecConfig, ExecEnvVar, Kubeconfig, RedactedArgs,
};
pub use loader::{KUBECONFIG_ENV, LoadedKubeconfig, LoadingRules, default_kubeconfig_path};
pub use secret::Secret;
pub use tls::TlsConfig;
pub use token_file::{TOKEN_FILE_REFRESH, TokenFile};

/// Client-side requests per second when [`Config::qps`] is 0 (client-go's `DefaultQPS`).
pub const DEFAULT_QPS: f32 = 5.0;
/// Client-side burst when [`Config::burst`] is 0 (client-go's `DefaultBurst`).
pub const DEFAULT_BURST: i32 = 10;
/// The namespace used when the context names none.
pub const DEFAULT_NAMESPACE: &str = "default";
/// The default [`Config::max_response_bytes`]: 1 GiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 1 << 30;
/// The default [`Config::read_idle_timeout`]: 2 minutes, twice kube-apiserver's default
/// request timeout (after which it answers 504 itself).
pub const DEFAULT_READ_IDLE_TIMEOUT: Duration = Duration::from_secs(120);
/// The default of [`Config::max_list_item_bytes`]: 64 MiB, the watch decoder's frame cap
/// (`list_decode::DEFAULT_MAX_ITEM_BYTES`).
pub(crate) const DEFAULT_MAX_LIST_ITEM_BYTES: usize = 64 << 20;
/// The default of [`Config::http2_read_idle_timeout`] (`transport::HTTP2_READ_IDLE_TIMEOUT`).
pub(crate) const DEFAULT_HTTP2_READ_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// The default of [`Config::http2_ping_timeout`] (`transport::HTTP2_PING_TIMEOUT`).
pub(crate) const DEFAULT_HTTP2_PING_TIMEOUT: Duration = Duration::from_secs(15);

/// The environment variable that turns HTTP/2 off when non-empty (client-go's, read by
/// apimachinery's `SetTransportDefaults`).
pub const DISABLE_HTTP2_ENV: &str = "DISABLE_HTTP2";

/// The default `User-Agent`: `clientgo-rs/<crate version>`.
pub fn default_user_agent() -> String {
    format!("clientgo-rs/{}", env!("CARGO_PKG_VERSION"))
}

/// A resolved client configuration (client-go's `rest.Config`). See the module documentation.
#[derive(Clone)]
pub struct Config {
    /// The API server's base URL; a path, if any, prefixes every request.
    pub cluster_url: http::Uri,
    /// The namespace of the chosen context (or of the pod), `default` when none is set.
    pub default_namespace: String,
    /// How to trust the server and which client certificate to present. Only used for
    /// `https` URLs.
    pub tls: TlsConfig,
    /// The credential attached to every request.
    pub auth: Auth,
    /// Act as another user.
    pub impersonate: Option<Impersonation>,
    /// Send every request through this proxy (kubeconfig `proxy-url`); otherwise the
    /// transport follows the usual proxy environment variables.
    pub proxy_url: Option<http::Uri>,
    /// Do not ask for compressed responses.
    pub disable_compression: bool,
    /// Client-side requests per second: 0 means [`DEFAULT_QPS`], negative disables
    /// throttling. See [`Config::throttle`].
    pub qps: f32,
    /// Client-side burst: 0 means [`DEFAULT_BURST`]. See [`Config::throttle`].
    pub burst: i32,
    /// Overall time limit of each request; `None` for none (leave it `None` for watches).
    pub timeout: Option<Duration>,
    /// The `User-Agent` header.
    pub user_agent: String,
    /// The most bytes of a response body read whole (by `send`, and a list decoded as it
    /// arrives); more is a [`TransportErrorKind::TooLarge`](crate::TransportErrorKind::TooLarge)
    /// error. Watch and `stream` bodies are not counted (a watch bounds each event instead).
    /// Default [`DEFAULT_MAX_RESPONSE_BYTES`] (1 GiB).
    pub max_response_bytes: usize,
    /// The most bytes of one item of a list response; a larger item is skipped and reported
    /// (see [`list_decode`](crate::list_decode)). Default
    /// [`DEFAULT_MAX_ITEM_BYTES`](crate::list_decode::DEFAULT_MAX_ITEM_BYTES) (64 MiB).
    pub max_list_item_bytes: usize,
    /// How long a request read whole (`send`, lists) may wait for its response headers, or
    /// for the next bytes of its body, before it fails with a
    /// [`Timeout`](crate::TransportErrorKind::Timeout): a server that stops answering
    /// cannot hang a worker, whatever the protocol (HTTP/1.1 has no pings). Not applied to
    /// watches and `stream` (quiet for long by design: HTTP/2 pings and the watch decoder's
    /// idle timeout cover them). `None` for no limit. Default [`DEFAULT_READ_IDLE_TIMEOUT`].
    pub read_idle_timeout: Option<Duration>,
    /// HTTP/2: a ping is sent every this long (client-go's `ReadIdleTimeout`, 30 s, after
    /// which Go pings a connection it has read nothing from).
    pub http2_read_idle_timeout: Duration,
    /// HTTP/2: a ping unanswered this long closes the connection and fails every request on
    /// it, watches included (client-go's `PingTimeout`, 15 s).
    pub http2_ping_timeout: Duration,
    /// Offer HTTP/1.1 alone when connecting over TLS, never HTTP/2. Set by
    /// [`Config::new`] when the `DISABLE_HTTP2` environment variable is non-empty, the switch
    /// client-go's transport reads. Each watch then has a connection of its own instead of
    /// sharing one, and no HTTP/2 pings watch the connection (the watch decoder's idle
    /// timeout still does). Concurrent requests then go out on connections of their own too:
    /// kube-apiserver 1.36 answered 8 concurrent merge patches about 5 % faster that way than
    /// as 8 streams of one HTTP/2 connection, for the same client CPU (benches/README.md, I1).
    pub disable_http2: bool,
    /// Ask for answers in Kubernetes protobuf (lists, watches, and the objects a get, create,
    /// update, patch or delete returns) where the client can read the resource's objects in
    /// it (ConfigMaps, Secrets, Leases; [`clientgo_codec::protobuf::serves`]), taking JSON where
    /// the server answers with it, as client-go's clientsets ask
    /// (`application/vnd.kubernetes.protobuf, application/json`). On by default:
    /// kube-apiserver writes protobuf several times faster than JSON (a streaming list of
    /// 10,000 ConfigMaps arrives in about a third of the time). The objects decode into the
    /// same types either way; request bodies stay JSON.
    pub accept_protobuf: bool,
    /// Send credentials (a token, a password, an exec plugin's token) over plain `http`.
    /// Off by default: a hand-built configuration with an `http://` URL and credentials is
    /// refused when the client is built, since anyone on the path could read them. A
    /// kubeconfig with an `http://` server never carries its credentials
    /// ([`Config::from_kubeconfig`] drops them, as kubectl does).
    pub allow_insecure_credentials: bool,
}

impl Config {
    /// A configuration for `cluster_url` with no credentials and client-go's defaults.
    pub fn new(cluster_url: http::Uri) -> Config {
        Config {
            cluster_url,
            default_namespace: DEFAULT_NAMESPACE.to_owned(),
            tls: TlsConfig::default(),
            auth: Auth::None,
            impersonate: None,
            proxy_url: None,
            disable_compression: false,
            qps: DEFAULT_QPS,
            burst: DEFAULT_BURST,
            timeout: None,
            user_agent: default_user_agent(),
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_list_item_bytes: DEFAULT_MAX_LIST_ITEM_BYTES,
            read_idle_timeout: Some(DEFAULT_READ_IDLE_TIMEOUT),
            http2_read_idle_timeout: DEFAULT_HTTP2_READ_IDLE_TIMEOUT,
            http2_ping_timeout: DEFAULT_HTTP2_PING_TIMEOUT,
            disable_http2: std::env::var_os(DISABLE_HTTP2_ENV).is_some_and(|v| !v.is_empty()),
            accept_protobuf: true,
            allow_insecure_credentials: false,
        }
    }

    /// Allows credentials over plain `http` (see
    /// [`allow_insecure_credentials`](Config::allow_insecure_credentials)): for a local test
    /// server, never for a real cluster.
    pub fn allowing_insecure_credentials(mut self) -> Config {
        self.allow_insecure_credentials = true;
        self
    }

    /// True when the server is reached over TLS (`https`).
    pub fn is_tls(&self) -> bool {
        self.cluster_url.scheme() == Some(&http::uri::Scheme::HTTPS)
    }

    /// The effective client-side throttle as (requests per second, burst), or `None` when
    /// throttling is disabled (negative `qps`). 0 means the default for both; a negative
    /// burst, which client-go would let fail every request, also means the default.
    pub fn throttle(&self) -> Option<(f32, u32)> {
        let qps = if self.qps == 0.0 {
            DEFAULT_QPS
        } else {
            self.qps
        };
        if qps < 0.0 || qps.is_nan() {
            return None;
        }
        let burst = if self.burst <= 0 {
            DEFAULT_BURST
        } else {
            self.burst
        };
        Some((qps, burst.unsigned_abs()))
    }

    /// The kubeconfig (`KUBECONFIG` or `~/.kube/config`, current context) if there is one to
    /// use, else the in-cluster configuration: client-go's default, as
    /// `NewNonInteractiveDeferredLoadingClientConfig` behaves.
    ///
    /// A kubeconfig that exists but is wrong (unknown context, bad PEM, …) is an error, not a
    /// reason to try in-cluster configuration: falling back would hide the mistake. When there
    /// is no kubeconfig to use and in-cluster configuration fails too, the error
    /// ([`ConfigError::Infer`]) carries both reasons.
    pub fn infer() -> Result<Config, ConfigError> {
        Config::infer_with(&KubeconfigOptions::default(), &InClusterEnv::from_process())
    }

    /// [`Config::infer`] with explicit kubeconfig options and in-cluster environment.
    pub fn infer_with(
        options: &KubeconfigOptions,
        in_cluster: &InClusterEnv,
    ) -> Result<Config, ConfigError> {
        match Config::from_kubeconfig(options) {
            Err(kubeconfig) if kubeconfig.is_empty_config() => {
                match Config::in_cluster_with(in_cluster) {
                    Ok(config) => {
                        tracing::debug!("no kubeconfig to use, using in-cluster configuration");
                        Ok(config)
                    }
                    Err(in_cluster) => Err(ConfigError::Infer {
                        kubeconfig: Box::new(kubeconfig),
                        in_cluster: Box::new(in_cluster),
                    }),
                }
            }
            other => other,
        }
    }
}

impl fmt::Debug for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proxy = self
            .proxy_url
            .as_ref()
            .map(|p| server_url::redact_userinfo(&p.to_string()));
        // A server URL may carry `user:password@`: never printed.
        f.debug_struct("Config")
            .field(
                "cluster_url",
                &server_url::redact_userinfo(&self.cluster_url.to_string()),
            )
            .field("default_namespace", &self.default_namespace)
            .field("tls", &self.tls)
            .field("auth", &self.auth)
            .field("impersonate", &self.impersonate)
            .field("proxy_url", &proxy)
            .field("disable_compression", &self.disable_compression)
            .field("qps", &self.qps)
            .field("burst", &self.burst)
            .field("timeout", &self.timeout)
            .field("user_agent", &self.user_agent)
            .field("max_response_bytes", &self.max_response_bytes)
            .field("max_list_item_bytes", &self.max_list_item_bytes)
            .field("read_idle_timeout", &self.read_idle_timeout)
            .field("http2_read_idle_timeout", &self.http2_read_idle_timeout)
            .field("http2_ping_timeout", &self.http2_ping_timeout)
            .field("disable_http2", &self.disable_http2)
            .field("accept_protobuf", &self.accept_protobuf)
            .field(
                "allow_insecure_credentials",
                &self.allow_insecure_credentials,
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_prints_userinfo_of_the_server_or_proxy_url() {
        let mut config = Config::new("https://admin:s3cret@k8s.example:6443/x".parse().unwrap());
        config.proxy_url = Some("http://proxyuser:pr0xy@proxy.example:3128".parse().unwrap());
        let printed = format!("{config:?}");
        for secret in ["admin", "s3cret", "proxyuser", "pr0xy"] {
            assert!(!printed.contains(secret), "{secret} in {printed}");
        }
        assert!(
            printed.contains("https://REDACTED@k8s.example:6443/x"),
            "{printed}"
        );
    }

    #[test]
    fn defaults_follow_client_go() {
        let config = Config::new("https://k8s.example:6443".parse().unwrap());
        assert_eq!(config.throttle(), Some((5.0, 10)));
        assert_eq!(config.default_namespace, "default");
        assert_eq!(
            config.user_agent,
            format!("clientgo-rs/{}", env!("CARGO_PKG_VERSION"))
        );
        assert!(config.is_tls());
        assert!(config.timeout.is_none());
    }

    #[test]
    fn qps_zero_means_default_and_negative_disables() {
        let mut config = Config::new("http://127.0.0.1:8080".parse().unwrap());
        assert!(!config.is_tls());
        config.qps = 0.0;
        config.burst = 0;
        assert_eq!(config.throttle(), Some((DEFAULT_QPS, 10)));
        config.qps = 50.0;
        config.burst = 100;
        assert_eq!(config.throttle(), Some((50.0, 100)));
        config.burst = -3;
        assert_eq!(config.throttle(), Some((50.0, 10)));
        config.qps = -1.0;
        assert_eq!(config.throttle(), None);
    }
}
