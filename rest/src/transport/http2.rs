//! HTTP/2 on the h2 crate directly: one connection per pool that every request and watch of
//! a client shares, as net/http's HTTP/2 transport (`http2.Transport`, `ClientConn`) keeps
//! one per host for client-go.
//!
//! What this does that hyper's HTTP/2 client does not: a request's body is queued on its
//! stream in the same call that opens the stream, so the connection task writes the HEADERS
//! and DATA frames in one flush, and nothing is spawned per request. hyper sends HEADERS,
//! then waits until the stream is open before a task spawned for the request pipes the body,
//! which costs a second task, a second wake-up and a second write for every request with a
//! body (I1 in benches/README.md measured it).
//!
//! How a connection lives:
//! * It is made on the first request ([`Http2::route`]): TCP and TLS by the pool's
//!   [`Connector`], offering `h2` and `http/1.1` by ALPN. When the server does not choose
//!   `h2` the pool remembers it and every request is handed back for the HTTP/1.1 pool
//!   ([`Route::Http1`]), which takes the connection just made for its first request. One
//!   connect at a time: concurrent first requests wait for it and share the connection.
//! * A task drives it (reads frames, writes what the streams queue) and pings the server
//!   every [`Config::http2_read_idle_timeout`](crate::Config::http2_read_idle_timeout); a
//!   ping unanswered within
//!   [`Config::http2_ping_timeout`](crate::Config::http2_ping_timeout) closes it, failing
//!   its streams (a watch sees its body end with an error). client-go pings only after that
//!   long without a frame read; pinging on a timer regardless bounds the detection the same
//!   way (a dead connection is noticed within the two durations) at the cost of one ping
//!   frame per interval on a busy connection.
//! * When the task ends (the server closed the connection, sent GOAWAY, or a ping went
//!   unanswered) the pool forgets the connection and the next request makes a new one. A
//!   request that finds the connection closed before its stream was opened is sent on a new
//!   connection once, as net/http retries a request the connection never took.
//! * The connection ends when the pool is dropped and its last stream is done.
//!
//! Invariant, kept by [`Http2::route`]: at most one live connection is current, and a new
//! one is only made under the `connecting` lock after seeing no live one under it.

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use h2::client::SendRequest;
use http_body::{Body as HttpBody, Frame};
use http_body_util::BodyExt as _;
use parking_lot::Mutex;
use tower_service::Service as _;

use super::classify::SendError;
use super::connector::{Connector, Stream};
use super::{HTTP2_CONNECTION_WINDOW, HTTP2_STREAM_WINDOW};
use crate::body::Body;
use crate::error::BoxError;

/// Where a request goes.
enum Route {
    /// On the shared HTTP/2 connection.
    Http2(Connection),
    /// To the HTTP/1.1 pool: the server did not choose HTTP/2.
    Http1,
}

/// A failure of the HTTP/2 path.
pub(crate) type Http2Error = SendError<h2::Error>;

/// The HTTP/2 connection of one pool. See the module documentation.
pub(crate) struct Http2 {
    connector: Connector,
    ping_after: Duration,
    ping_timeout: Duration,
    current: Mutex<Option<Connection>>,
    /// Held while a connection is made.
    connecting: tokio::sync::Mutex<()>,
    /// The server chose HTTP/1.1 by ALPN.
    http1_only: AtomicBool,
}

/// A connection: a handle to open streams on, and whether its task still runs.
#[derive(Clone)]
struct Connection {
    send: SendRequest<Bytes>,
    alive: Arc<AtomicBool>,
}

impl Http2 {
    pub(crate) fn new(connector: Connector, ping_after: Duration, ping_timeout: Duration) -> Self {
        Http2 {
            connector,
            ping_after,
            ping_timeout,
            current: Mutex::new(None),
            connecting: tokio::sync::Mutex::new(()),
            http1_only: AtomicBool::new(false),
        }
    }

    /// The live connection, if there is one; a dead one is forgotten.
    fn live(&self) -> Option<Connection> {
        let mut current = self.current.lock();
        match &*current {
            Some(live) if live.alive.load(Ordering::Acquire) => Some(live.clone()),
            Some(_) => {
                *current = None;
                None
            }
            None => None,
        }
    }

    /// Marks the connection whose flag is `dead` as dead, and forgets it if it is current: a
    /// handle of it failed before opening a stream, so no new request goes to it (its task
    /// may not have noticed yet, and finishes the streams it has).
    fn forget(&self, dead: &Arc<AtomicBool>) {
        dead.store(false, Ordering::Release);
        let mut current = self.current.lock();
        if current
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(&c.alive, dead))
        {
            *current = None;
        }
    }

    /// Where a request to `uri` goes: the live HTTP/2 connection, a new one, or the HTTP/1.1
    /// pool when the server does not speak HTTP/2.
    async fn route(&self, uri: &http::Uri) -> Result<Route, Http2Error> {
        if let Some(live) = self.live() {
            return Ok(Route::Http2(live));
        }
        if self.http1_only.load(Ordering::Acquire) {
            return Ok(Route::Http1);
        }
        let _connecting = self.connecting.lock().await;
        if let Some(live) = self.live() {
            return Ok(Route::Http2(live));
        }
        if self.http1_only.load(Ordering::Acquire) {
            return Ok(Route::Http1);
        }
        let stream = self
            .connector
            .clone()
            .call(uri.clone())
            .await
            .map_err(Http2Error::Connect)?;
        let chose_h2 = stream.is_http2();
        let tls = match stream {
            Stream::Tls(tls) if chose_h2 => tls.into_inner(),
            http1 => {
                tracing::debug!("the server chose HTTP/1.1: requests go to the HTTP/1.1 pool");
                // The HTTP/1.1 pool's next connect takes this connection rather than dialing.
                self.connector.keep_spare(http1);
                self.http1_only.store(true, Ordering::Release);
                return Ok(Route::Http1);
            }
        };
        let (send, mut connection) = h2::client::Builder::new()
            .initial_window_size(HTTP2_STREAM_WINDOW)
            .initial_connection_window_size(HTTP2_CONNECTION_WINDOW)
            .enable_push(false)
            .handshake::<_, Bytes>(tls)
            .await
            .map_err(|e| Http2Error::Connect(Box::new(e)))?;
        let alive = Arc::new(AtomicBool::new(true));
        let ping = connection.ping_pong();
        tokio::spawn(drive(
            connection,
            ping,
            self.ping_after,
            self.ping_timeout,
            Arc::clone(&alive),
        ));
        let connection = Connection { send, alive };
        *self.current.lock() = Some(connection.clone());
        Ok(Route::Http2(connection))
    }

    /// Sends `request` on the HTTP/2 connection and waits for the response's headers, or
    /// hands it back (`Ok(Err(request))`) for the HTTP/1.1 pool when the server does not speak
    /// HTTP/2. When the connection turns out closed before the stream is opened, the request
    /// goes once more on a new connection.
    pub(crate) async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<Result<http::Response<Body>, http::Request<Bytes>>, Http2Error> {
        let Connection { send, alive } = match self.route(request.uri()).await? {
            Route::Http2(connection) => connection,
            Route::Http1 => return Ok(Err(request)),
        };
        let mut send = match send.ready().await {
            Ok(send) => send,
            Err(first) => {
                tracing::debug!(error = %first, "HTTP/2 connection closed before the request: connecting again");
                self.forget(&alive);
                match self.route(request.uri()).await? {
                    Route::Http1 => return Ok(Err(request)),
                    Route::Http2(again) => again.send.ready().await.map_err(Http2Error::Request)?,
                }
            }
        };
        let (parts, body) = request.into_parts();
        let end_of_stream = body.is_empty();
        let (response, mut stream) = send
            .send_request(http::Request::from_parts(parts, ()), end_of_stream)
            .map_err(Http2Error::Request)?;
        if !end_of_stream {
            // Queued now: the connection writes it with the HEADERS frame in one flush, as the
            // stream's window allows.
            stream.send_data(body, true).map_err(Http2Error::Request)?;
        }
        let response = response.await.map_err(Http2Error::Request)?;
        Ok(Ok(response.map(|recv| {
            ResponseBody {
                recv,
                data_done: false,
            }
            .boxed()
        })))
    }
}

/// Drives `connection` until it ends, pinging every `ping_after` and closing it when a ping
/// goes unanswered for `ping_timeout`; then marks it dead.
async fn drive<T>(
    connection: h2::client::Connection<T, Bytes>,
    mut ping: Option<h2::PingPong>,
    ping_after: Duration,
    ping_timeout: Duration,
    alive: Arc<AtomicBool>,
) where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut connection = std::pin::pin!(connection);
    loop {
        // Biased, the connection first: this is polled for every frame read or written, and
        // an unbiased select draws a random number each time to choose the order.
        tokio::select! {
            biased;
            ended = &mut connection => {
                if let Err(error) = ended {
                    tracing::debug!(%error, "HTTP/2 connection closed");
                }
                break;
            }
            () = tokio::time::sleep(ping_after), if ping.is_some() => {
                let Some(pinger) = ping.as_mut() else { break };
                if pinger.send_ping(h2::Ping::opaque()).is_err() {
                    break;
                }
                let pong = tokio::time::timeout(ping_timeout, poll_fn(|cx| pinger.poll_pong(cx)));
                tokio::select! {
                    biased;
                    ended = &mut connection => {
                        if let Err(error) = ended {
                            tracing::debug!(%error, "HTTP/2 connection closed");
                        }
                        break;
                    }
                    answered = pong => match answered {
                        Ok(Ok(_)) => {}
                        Ok(Err(error)) => {
                            tracing::debug!(%error, "HTTP/2 ping failed: closing the connection");
                            break;
                        }
                        Err(_) => {
                            tracing::warn!(
                                timeout = ?ping_timeout,
                                "HTTP/2 ping unanswered: closing the connection"
                            );
                            break;
                        }
                    },
                }
            }
        }
    }
    alive.store(false, Ordering::Release);
}

/// A response body read from its stream; each chunk read gives its bytes back to the
/// stream's flow-control window.
struct ResponseBody {
    recv: h2::RecvStream,
    data_done: bool,
}

impl HttpBody for ResponseBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if !this.data_done {
            match std::task::ready!(this.recv.poll_data(cx)) {
                Some(Ok(data)) => {
                    let _ = this.recv.flow_control().release_capacity(data.len());
                    return Poll::Ready(Some(Ok(Frame::data(data))));
                }
                Some(Err(error)) => return Poll::Ready(Some(Err(Box::new(error)))),
                None => this.data_done = true,
            }
        }
        match std::task::ready!(this.recv.poll_trailers(cx)) {
            Ok(Some(trailers)) => Poll::Ready(Some(Ok(Frame::trailers(trailers)))),
            Ok(None) => Poll::Ready(None),
            Err(error) => Poll::Ready(Some(Err(Box::new(error)))),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.recv.is_end_stream()
    }
}
