//! Server configuration: [`SimConfig`].
//!
//! Gathers the kube-apiserver flags and built-in constants the simulator mirrors (watch
//! cache size, bookmark frequency, `--min-request-timeout`, the WatchList feature gate, TLS
//! serving, token authentication) as plain fields with the real defaults, so that tests can
//! shrink the intervals instead of sleeping.

use std::time::Duration;

/// How to run an [`ApiServerSim`](crate::ApiServerSim).
///
/// Its `Debug` shows whether a token is set, never the token.
#[derive(Clone)]
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
    /// How long an HTTP/1.1 client may take to send a request's headers before the
    /// connection is closed. Default 32 s, kube-apiserver's `ReadHeaderTimeout`. hyper counts
    /// the time a kept-alive connection waits for its next request too, so an idle connection
    /// is closed after this long (kube-apiserver closes them after 90 s).
    pub header_read_timeout: Duration,
    /// Most watches open at once; one more is answered 429 TooManyRequests with
    /// `Retry-After: 1`, as kube-apiserver answers past its in-flight limits. Default 10,000.
    pub max_watches: usize,
    /// Most client connections open at once; one more is closed as soon as it is accepted.
    /// Default 4,096 (kube-apiserver has no such limit of its own: the process's file
    /// descriptors bound it).
    pub max_connections: usize,
}

impl std::fmt::Debug for SimConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimConfig")
            .field("bind", &self.bind)
            .field("tls", &self.tls)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("history_size", &self.history_size)
            .field("bookmark_interval", &self.bookmark_interval)
            .field("bookmark_before_timeout", &self.bookmark_before_timeout)
            .field("default_watch_timeout", &self.default_watch_timeout)
            .field("watch_list", &self.watch_list)
            .field("too_large_rv_wait", &self.too_large_rv_wait)
            .field("gc_interval", &self.gc_interval)
            .field("max_body_bytes", &self.max_body_bytes)
            .field("git_version", &self.git_version)
            .field("header_read_timeout", &self.header_read_timeout)
            .field("max_watches", &self.max_watches)
            .field("max_connections", &self.max_connections)
            .finish()
    }
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
            header_read_timeout: Duration::from_secs(32),
            max_watches: 10_000,
            max_connections: 4_096,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_redacts_the_token() {
        let text = format!(
            "{:?}",
            SimConfig::default().with_token("sekrit-token-value")
        );
        assert!(!text.contains("sekrit-token-value"), "{text}");
        assert!(text.contains("token: Some(\"<redacted>\")"), "{text}");
    }
}
