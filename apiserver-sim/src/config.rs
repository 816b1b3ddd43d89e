//! Server configuration: [`SimConfig`].
//!
//! Gathers the kube-apiserver flags and built-in constants the simulator mirrors (watch
//! cache size, bookmark frequency, `--min-request-timeout`, the WatchList feature gate, TLS
//! serving, token authentication) as plain fields with the real defaults, so that tests can
//! shrink the intervals instead of sleeping.

use std::time::Duration;

/// How to run an [`ApiServerSim`](crate::ApiServerSim).
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Address to bind; port 0 picks a free port. Default `127.0.0.1:0`.
    pub bind: std::net::SocketAddr,
    /// Serve HTTPS with a generated CA and serving certificate.
    pub tls: bool,
    /// Require `Authorization: Bearer <token>` on every request but the health checks.
    pub token: Option<String>,
    /// Events kept for watches and past reads (the watch cache window). Default 10,000.
    pub history_size: usize,
    /// Interval between watch BOOKMARKs. Default 60 s, as the real server.
    pub bookmark_interval: Duration,
    /// How long before a watch's `timeoutSeconds` deadline a last BOOKMARK is sent. Default 2 s.
    pub bookmark_before_timeout: Duration,
    /// Watch duration when the client gives no `timeoutSeconds`. Default 30 min.
    pub default_watch_timeout: Duration,
    /// Serve `sendInitialEvents` (the WatchList feature); off behaves like a 1.21 server.
    pub watch_list: bool,
    /// How long a read waits for a future resourceVersion before 504. Default 3 s.
    pub too_large_rv_wait: Duration,
    /// Minimum interval between garbage-collection passes. Default 100 ms.
    pub gc_interval: Duration,
    /// Largest accepted request body. Default 3 MiB, as the real server.
    pub max_body_bytes: usize,
    /// The version reported by `/version`.
    pub git_version: String,
}

impl Default for SimConfig {
    fn default() -> SimConfig {
        SimConfig {
            bind: std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            tls: false,
            token: None,
            history_size: 10_000,
            bookmark_interval: Duration::from_secs(60),
            bookmark_before_timeout: Duration::from_secs(2),
            default_watch_timeout: Duration::from_secs(1800),
            watch_list: true,
            too_large_rv_wait: Duration::from_secs(3),
            gc_interval: Duration::from_millis(100),
            max_body_bytes: 3 * 1024 * 1024,
            git_version: "v1.32.0-sim".to_owned(),
        }
    }
}

impl SimConfig {
    /// Serve HTTPS.
    pub fn with_tls(mut self) -> SimConfig {
        self.tls = true;
        self
    }

    /// Require this bearer token.
    pub fn with_token(mut self, token: impl Into<String>) -> SimConfig {
        self.token = Some(token.into());
        self
    }

    /// Keep this many events.
    pub fn with_history_size(mut self, n: usize) -> SimConfig {
        self.history_size = n;
        self
    }

    /// Send bookmarks at this interval.
    pub fn with_bookmark_interval(mut self, d: Duration) -> SimConfig {
        self.bookmark_interval = d;
        self
    }

    /// Turn the WatchList feature (`sendInitialEvents`) on or off.
    pub fn with_watch_list(mut self, on: bool) -> SimConfig {
        self.watch_list = on;
        self
    }
}
