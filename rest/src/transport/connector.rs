//! Making connections: TCP (hyper-util's `HttpConnector`), then TLS for `https` (tokio-rustls),
//! reporting to the pool whether ALPN chose HTTP/2.
//!
//! client-go gets this from net/http's `Transport` (`DialContext` with a 30 s timeout and 30 s
//! TCP keep-alive, `TLSHandshakeTimeout` 10 s). Here the same numbers apply, and the server name
//! checked and sent as SNI is the configuration's `tls_server_name` when it has one, else the
//! URL's host. Failures are a [`ConnectError`] saying which stage failed, which the transport
//! turns into a typed [`TransportError`](crate::TransportError).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tower_service::Service;

use crate::error::BoxError;

/// client-go's dial timeout.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// client-go's TCP keep-alive.
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(30);
/// client-go's `TLSHandshakeTimeout`.
pub const TLS_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Which stage of connecting failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ConnectStage {
    Tcp,
    Tls,
    TlsTimeout,
}

/// A failure to connect, with its stage.
#[derive(Debug)]
pub(crate) struct ConnectError {
    pub(crate) stage: ConnectStage,
    pub(crate) server_name: String,
    pub(crate) source: Option<BoxError>,
}

impl fmt::Display for ConnectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.stage {
            ConnectStage::Tcp => write!(f, "connecting to {}", self.server_name),
            ConnectStage::Tls => write!(f, "TLS handshake with {}", self.server_name),
            ConnectStage::TlsTimeout => write!(
                f,
                "TLS handshake with {} took longer than {TLS_HANDSHAKE_TIMEOUT:?}",
                self.server_name
            ),
        }
    }
}

impl std::error::Error for ConnectError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// TLS settings of a connector.
#[derive(Clone)]
pub(crate) struct TlsSettings {
    pub(crate) connector: TlsConnector,
    /// `tls_server_name`, already checked.
    pub(crate) server_name: Option<ServerName<'static>>,
}

/// Connects to the API server: TCP, then TLS for `https`.
#[derive(Clone)]
pub(crate) struct Connector {
    http: HttpConnector,
    tls: Option<TlsSettings>,
    /// A connection made but not used: the HTTP/2 path's first connection when the server
    /// chose HTTP/1.1 by ALPN. The next connect hands it out instead of dialing.
    spare: Arc<Mutex<Option<Stream>>>,
}

impl Connector {
    pub(crate) fn new(tls: Option<TlsSettings>) -> Self {
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(Some(CONNECT_TIMEOUT));
        http.set_keepalive(Some(TCP_KEEPALIVE));
        http.set_nodelay(true);
        Connector {
            http,
            tls,
            spare: Arc::default(),
        }
    }

    /// Keeps `stream` for the next connect to hand out.
    pub(crate) fn keep_spare(&self, stream: Stream) {
        *self.spare.lock() = Some(stream);
    }
}

impl Service<http::Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.http.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, uri: http::Uri) -> Self::Future {
        if let Some(spare) = self.spare.lock().take() {
            return Box::pin(std::future::ready(Ok(spare)));
        }
        let mut http = self.http.clone();
        let tls = self.tls.clone();
        Box::pin(async move {
            let host = uri.host().unwrap_or("").to_owned();
            let tcp = http.call(uri.clone()).await.map_err(|e| ConnectError {
                stage: ConnectStage::Tcp,
                server_name: host_port(&uri),
                source: Some(Box::new(e)),
            })?;
            if uri.scheme() != Some(&http::uri::Scheme::HTTPS) {
                return Ok(Stream::Plain(tcp));
            }
            let Some(tls) = tls else {
                return Err("an https URL needs a TLS configuration".into());
            };
            let name = match tls.server_name {
                Some(name) => name,
                None => super::tls::server_name(None, &host)?,
            };
            let shown = name.to_str().into_owned();
            let handshake = tls.connector.connect(name, tcp.into_inner());
            match tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, handshake).await {
                Ok(Ok(stream)) => Ok(Stream::Tls(Box::new(TokioIo::new(stream)))),
                Ok(Err(e)) => Err(Box::new(ConnectError {
                    stage: ConnectStage::Tls,
                    server_name: shown,
                    source: Some(Box::new(e)),
                }) as BoxError),
                Err(_) => Err(Box::new(ConnectError {
                    stage: ConnectStage::TlsTimeout,
                    server_name: shown,
                    source: None,
                }) as BoxError),
            }
        })
    }
}

fn host_port(uri: &http::Uri) -> String {
    let host = uri.host().unwrap_or("");
    match uri.port_u16() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}

/// A connection: plain TCP or TLS over TCP.
pub(crate) enum Stream {
    Plain(TokioIo<TcpStream>),
    Tls(Box<TokioIo<TlsStream<TcpStream>>>),
}

impl Stream {
    /// Whether ALPN chose HTTP/2 for this connection.
    pub(crate) fn is_http2(&self) -> bool {
        match self {
            Stream::Plain(_) => false,
            Stream::Tls(tls) => tls.inner().get_ref().1.alpn_protocol() == Some(b"h2".as_slice()),
        }
    }
}

impl Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Stream::Plain(s) => s.is_write_vectored(),
            Stream::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }
}
