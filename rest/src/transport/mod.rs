//! The HTTP transport to the API server, built by hand on h2 (HTTP/2), hyper 1's connections
//! (HTTP/1.1) and rustls: client-go's `transport` package and the net/http
//! `Transport` it configures (`transport/transport.go`, `transport/cache.go`,
//! `transport/round_trippers.go`, `apimachinery/pkg/util/net/http.go`).
//!
//! What a [`Transport`] does, with client-go's numbers:
//!
//! | concern | here |
//! |---|---|
//! | connections | a pool per client: one shared HTTP/2 connection; for HTTP/1.1 up to 25 idle connections per host, closed after 90 s idle |
//! | connect | 30 s timeout, TCP keep-alive 30 s, no Nagle delay |
//! | TLS | see [`tls`]: the configuration's CA (else the system roots), client certificate, `insecure_skip_tls_verify`, `tls_server_name` as SNI and for verification; 10 s handshake timeout |
//! | HTTP version | HTTP/2 when ALPN agrees on `h2`, HTTP/1.1 otherwise (plain `http` is always HTTP/1.1); [`Config::disable_http2`] (or a non-empty `DISABLE_HTTP2`, as client-go reads it) offers HTTP/1.1 alone |
//! | dead connections | HTTP/2 pings every 30 s, even while idle; no answer within 15 s closes the connection (client-go's `ReadIdleTimeout`/`PingTimeout`; [`Config::http2_read_idle_timeout`], [`Config::http2_ping_timeout`]). HTTP/1.1 has no pings: requests read whole give up after [`Config::read_idle_timeout`] without a byte (see the `execute` module) |
//! | HTTP/2 flow control | Go's windows: 4 MiB per stream, 1 GiB per connection ([`HTTP2_STREAM_WINDOW`], [`HTTP2_CONNECTION_WINDOW`]), so a large list page streams without waiting on window updates |
//! | plain `http` | no credentials unless [`Config::allow_insecure_credentials`] |
//! | headers | `User-Agent`, credentials and `Impersonate-*`: see the `auth` module |
//!
//! HTTP/2 requests do not go through hyper: the `http2` module sends them on the h2 crate
//! directly, so a request's headers and body leave in one write and no task is spawned per
//! request (hyper's HTTP/2 client sends the body from a task of its own once the stream is
//! open, in a second write: about 15 us more client CPU per small write, measured by I1 in
//! benches/README.md). HTTP/1.1 (plain `http`, [`Config::disable_http2`], or a server that
//! does not choose `h2`) goes through the `http1` module's pool of hyper connections, which
//! spawns nothing per request either. HTTP/2 stays the default, as in
//! client-go: one connection carries every watch and request of a client, where HTTP/1.1
//! needs a connection per watch and per concurrent request.
//!
//! Exec plugins that return a client certificate: the credential's certificate is compared
//! with the one the current connection pool was built with, and when it differs (first use,
//! rotation after expiry or a 401) a new pool is built with a TLS configuration presenting the
//! new certificate. Requests in flight finish on the old connections, which close when they
//! are done; new requests only use the new pool (client-go rotates the certificate in its TLS
//! callback and closes the old connections).
//!
//! Differences from client-go, and why:
//! * No HTTP proxy: a configuration with `proxy_url` is refused (rather than silently
//!   connecting directly), and the `HTTPS_PROXY`/`NO_PROXY` environment is not read.
//! * No response compression is asked for (client-go's net/http asks for gzip unless
//!   `disable_compression`): API responses are decoded as they stream, and JSON from a
//!   cluster-local API server is rarely worth the CPU.
//! * Connections are pooled per client, not in a process-wide cache keyed by TLS settings:
//!   clone the [`RestClient`](crate::RestClient) to share them.
//! * HTTP/2 pings go out on a timer rather than only after a quiet spell (see the `http2`
//!   module): the same bound on noticing a dead connection, one small frame more per
//!   interval on a busy one. The HTTP/2 connection is not closed for being idle (Go closes
//!   it after 90 s); it ends when the client is dropped, the server closes it, or a ping goes
//!   unanswered.
//! * Tokens, keys, certificates and the `Authorization` header are never logged (client-go
//!   redacts them at high verbosity levels only).

mod auth;
mod classify;
mod connector;
mod http1;
mod http2;
pub mod tls;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;

pub use connector::{CONNECT_TIMEOUT, TCP_KEEPALIVE, TLS_HANDSHAKE_TIMEOUT};

use crate::body::Body;
use crate::config::{Auth, Config, ExecCredential, TlsConfig};
use crate::error::Error;
use crate::http_client::{BoxFuture, HttpClient};
use auth::Authenticator;
use connector::{Connector, TlsSettings};
use tls::ClientIdentity;

/// Idle connections kept per host (client-go's `MaxIdleConnsPerHost`).
pub const MAX_IDLE_PER_HOST: usize = 25;
/// How long an idle connection is kept (Go's `IdleConnTimeout`).
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(90);
/// An HTTP/2 ping is sent after this long without reading (client-go's `ReadIdleTimeout`);
/// the default of [`Config::http2_read_idle_timeout`].
pub const HTTP2_READ_IDLE_TIMEOUT: Duration = crate::config::DEFAULT_HTTP2_READ_IDLE_TIMEOUT;
/// A ping unanswered this long closes the connection (client-go's `PingTimeout`); the default
/// of [`Config::http2_ping_timeout`].
pub const HTTP2_PING_TIMEOUT: Duration = crate::config::DEFAULT_HTTP2_PING_TIMEOUT;

/// The HTTP/2 flow-control window of each stream, as Go's HTTP/2 client advertises it
/// (`transportDefaultStreamFlow`, 4 MiB; hyper's default is 2 MiB): a watch or a list page
/// may have this much in flight before the server waits for the client to read.
pub const HTTP2_STREAM_WINDOW: u32 = 4 << 20;
/// The HTTP/2 flow-control window of a connection, as Go's (`transportDefaultConnFlow`,
/// 1 GiB; hyper's default is 5 MiB): the streams' own windows bound what is buffered, and
/// one slow stream does not hold back the others on the connection.
pub const HTTP2_CONNECTION_WINDOW: u32 = 1 << 30;

/// The transport built from a [`Config`]. See the module documentation.
pub struct Transport {
    authenticator: Authenticator,
    /// HTTP/2 keep-alive: ping after this long without reading, close after this long unanswered.
    http2: Http2,
    /// TLS settings, for rebuilding the pool with an exec plugin's client certificate.
    tls: Option<TlsConfig>,
    pool: Mutex<Arc<Pool>>,
}

/// A connection pool and the exec client certificate its TLS configuration presents.
struct Pool {
    /// The HTTP/2 connection, for `https` with HTTP/2 enabled (see the `http2` module).
    http2: Option<http2::Http2>,
    /// HTTP/1.1: `http`, HTTP/2 disabled, or a server that does not choose `h2`.
    http1: http1::Http1,
    exec_cert: Option<Vec<u8>>,
}

impl std::fmt::Debug for Transport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transport")
            .field("authenticator", &self.authenticator)
            .field("tls", &self.tls)
            .finish_non_exhaustive()
    }
}

impl Transport {
    /// A transport for `config`. Fails if the TLS material is unusable, the user agent or an
    /// impersonation value cannot be a header, a proxy is configured, or credentials would go
    /// over plain `http` without [`Config::allow_insecure_credentials`].
    pub fn new(config: &Config) -> Result<Transport, Error> {
        if config.proxy_url.is_some() {
            return Err(Error::InvalidConfig {
                field: "proxy_url",
                reason: "HTTP proxies are not supported by this transport".to_owned(),
            });
        }
        if !config.is_tls()
            && !matches!(config.auth, Auth::None)
            && !config.allow_insecure_credentials
        {
            return Err(Error::InvalidConfig {
                field: "auth",
                reason: "credentials would be sent in the clear over plain http; use https, or \
                         set allow_insecure_credentials for a local test server"
                    .to_owned(),
            });
        }
        let authenticator = Authenticator::new(config)?;
        let tls = config.is_tls().then(|| config.tls.clone());
        let http2 = Http2 {
            enabled: !config.disable_http2,
            ping_after: config.http2_read_idle_timeout,
            ping_timeout: config.http2_ping_timeout,
        };
        let pool = build_pool(tls.as_ref(), None, &http2)?;
        Ok(Transport {
            authenticator,
            http2,
            tls,
            pool: Mutex::new(Arc::new(pool)),
        })
    }

    /// The pool to send with, rebuilt when an exec credential brings a new certificate.
    fn pool_for(&self, credential: Option<&Arc<ExecCredential>>) -> Result<Arc<Pool>, Error> {
        let current = self.pool.lock().unwrap_or_else(|p| p.into_inner()).clone();
        let Some(tls) = &self.tls else {
            return Ok(current);
        };
        let wanted = credential.and_then(|c| c.client_certificate_pem.as_deref());
        if self.authenticator.exec().is_none() || current.exec_cert.as_deref() == wanted {
            return Ok(current);
        }
        let key = credential.and_then(|c| c.client_key_pem.as_ref());
        let identity = match (wanted, key) {
            (Some(cert_pem), Some(key)) => Some((cert_pem, key.expose().as_slice())),
            _ => None,
        };
        let pool = Arc::new(build_pool(Some(tls), identity, &self.http2)?);
        tracing::debug!(
            client_certificate = identity.is_some(),
            "exec plugin credential changed the client certificate: new connection pool"
        );
        let mut slot = self.pool.lock().unwrap_or_else(|p| p.into_inner());
        *slot = pool.clone();
        Ok(pool)
    }

    async fn send_request(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Body>, Error> {
        let (mut parts, body) = request.into_parts();
        let used = self.authenticator.apply(&mut parts.headers).await?;
        let pool = self.pool_for(used.as_ref())?;
        // Kept for an error's message only: clones share the URI's bytes (at most one small
        // allocation), where its text would be formatted for every request.
        let (method, uri) = (parts.method.clone(), parts.uri.clone());
        let mut request = http::Request::from_parts(parts, body);
        if let Some(http2) = &pool.http2 {
            match http2.send(request).await {
                Ok(Ok(response)) => {
                    self.authenticator
                        .on_response(response.status(), used.as_ref());
                    return Ok(response);
                }
                Ok(Err(http1)) => request = http1,
                Err(error) => {
                    return Err(classify::classify(error, &method, &uri.to_string()).into());
                }
            }
        }
        let response = pool
            .http1
            .send(request)
            .await
            .map_err(|e| Error::from(classify::classify(e, &method, &uri.to_string())))?;
        self.authenticator
            .on_response(response.status(), used.as_ref());
        Ok(response)
    }
}

impl HttpClient for Transport {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Body>, Error>> {
        Box::pin(self.send_request(request))
    }
}

/// Whether HTTP/2 is offered, and its dead-connection pings.
#[derive(Debug, Clone, Copy)]
struct Http2 {
    enabled: bool,
    ping_after: std::time::Duration,
    ping_timeout: std::time::Duration,
}

/// A pool whose connections use `tls` (for `https`) presenting the exec `identity` if given,
/// else the configuration's client certificate.
fn build_pool(
    tls: Option<&TlsConfig>,
    identity: Option<(&[u8], &[u8])>,
    http2: &Http2,
) -> Result<Pool, Error> {
    let settings = match tls {
        None => None,
        Some(tls) => {
            let config_identity = match (&tls.client_cert_pem, &tls.client_key_pem) {
                (Some(cert), Some(key)) => Some((cert.as_slice(), key.expose().as_slice())),
                _ => None,
            };
            let identity = identity
                .or(config_identity)
                .map(|(cert_pem, key_pem)| ClientIdentity { cert_pem, key_pem });
            let config = tls::client_config(tls, identity, http2.enabled)?;
            let server_name = match &tls.server_name {
                Some(name) => Some(tls::server_name(Some(name), "").map_err(|reason| {
                    Error::InvalidConfig {
                        field: "tls.server_name",
                        reason,
                    }
                })?),
                None => None,
            };
            Some(TlsSettings {
                connector: tokio_rustls::TlsConnector::from(config),
                server_name,
            })
        }
    };
    let tls_set = settings.is_some();
    let connector = Connector::new(settings);
    // HTTP/2 only over TLS, where ALPN can agree on it (as net/http: no h2c).
    let shared = (tls_set && http2.enabled)
        .then(|| http2::Http2::new(connector.clone(), http2.ping_after, http2.ping_timeout));
    Ok(Pool {
        http2: shared,
        http1: http1::Http1::new(connector),
        exec_cert: identity.map(|(cert, _)| cert.to_vec()),
    })
}
