//! HTTP/1.1 on hyper's connection API, pooled by hand: net/http's `Transport` idle-connection
//! pool (`getConn`, `tryPutIdleConn`, `idleConnTimeout`) as client-go configures it.
//!
//! A connection carries one request at a time. A request takes the most recently used idle
//! connection to its server, or makes a new one; the connection goes back to the idle list
//! when the response's body has been read to its end, and is closed when the body is dropped
//! before that (a watch that stops, a response read only in part). At most
//! [`MAX_IDLE_PER_HOST`] connections wait idle per server, each for at most [`IDLE_TIMEOUT`].
//!
//! What this does that hyper-util's pooling client does not: nothing is spawned per request
//! (hyper-util spawns a task for each response to wait until its connection is ready again
//! before pooling it), and a request that finds no idle connection dials at once instead of
//! racing a dial against the pool's next returned connection. A connection returned while
//! hyper has not yet finished reading its response's end is checked out with
//! [`SendRequest::ready`], which waits for it (or fails, and the next one is tried).
//!
//! A request sent on a reused connection that the server had closed meanwhile comes back
//! from hyper unsent; it then goes to the next idle connection, or a new one, as net/http
//! retries a request the connection never took.
//!
//! Invariant, kept by [`Http1::send`] and [`PooledBody`]: each connection's [`SendRequest`]
//! is held by exactly one of the idle list, one request on its way, or the body of that
//! request's response (it is not `Clone`: it moves between them); so no two requests ever
//! share a connection, and a connection is only idle once its last response has been read
//! whole.

use std::pin::Pin;
use std::sync::{Arc, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::uri::{Authority, Scheme};
use http_body::{Body as HttpBody, Frame};
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use parking_lot::Mutex;
use tokio::time::Instant;
use tower_service::Service as _;

use super::classify::SendError;
use super::connector::Connector;
use super::{IDLE_TIMEOUT, MAX_IDLE_PER_HOST};
use crate::body::Body;
use crate::error::BoxError;

type Sender = SendRequest<Full<Bytes>>;

/// A failure of the HTTP/1.1 path.
pub(crate) type Http1Error = SendError<hyper::Error>;

/// The server a connection goes to.
#[derive(Clone, PartialEq, Eq, Debug)]
struct Key {
    scheme: Scheme,
    authority: Authority,
}

/// An idle connection and when it became idle.
struct Idle {
    key: Key,
    send: Sender,
    since: Instant,
}

/// The idle connections, and whether a task is closing the expired ones.
#[derive(Default)]
struct IdleList {
    conns: Vec<Idle>,
    reaping: bool,
}

/// The HTTP/1.1 connections of one transport pool. See the module documentation.
pub(crate) struct Http1 {
    connector: Connector,
    shared: Arc<Shared>,
}

/// What the pool shares with its responses' bodies and its reaper: the idle list and its
/// limits.
struct Shared {
    idle: Mutex<IdleList>,
    max_idle: usize,
    idle_timeout: Duration,
}

impl Http1 {
    pub(crate) fn new(connector: Connector) -> Self {
        Http1::with_limits(connector, MAX_IDLE_PER_HOST, IDLE_TIMEOUT)
    }

    fn with_limits(connector: Connector, max_idle: usize, idle_timeout: Duration) -> Self {
        Http1 {
            connector,
            shared: Arc::new(Shared {
                idle: Mutex::default(),
                max_idle,
                idle_timeout,
            }),
        }
    }

    /// Sends `request` (its URI absolute) and waits for the response's headers.
    pub(crate) async fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Body>, Http1Error> {
        let (mut parts, body) = request.into_parts();
        let key = match (parts.uri.scheme(), parts.uri.authority()) {
            (Some(scheme), Some(authority)) => Key {
                scheme: scheme.clone(),
                authority: authority.clone(),
            },
            _ => {
                return Err(Http1Error::Connect(
                    "the request's URL is not absolute".into(),
                ));
            }
        };
        // HTTP/1.1 names the server in `Host` (its host and port, never a URL's user info)
        // and the target in origin form (`/path?query`).
        let absolute = std::mem::take(&mut parts.uri);
        if !parts.headers.contains_key(http::header::HOST) {
            let host_port = key
                .authority
                .as_str()
                .rsplit('@')
                .next()
                .unwrap_or_default();
            let host = http::HeaderValue::from_str(host_port)
                .map_err(|e| Http1Error::Connect(Box::new(e)))?;
            parts.headers.insert(http::header::HOST, host);
        }
        parts.uri = match absolute.path_and_query() {
            Some(target) => http::Uri::from(target.clone()),
            None => http::Uri::from_static("/"),
        };
        let mut request = http::Request::from_parts(parts, Full::new(body));

        while let Some(mut send) = self.checkout(&key) {
            if send.ready().await.is_err() {
                // Closed while idle (by the server, or after a response asking for it).
                continue;
            }
            match send.try_send_request(request).await {
                Ok(response) => return Ok(self.pooled(response, key, send)),
                Err(mut failed) => match failed.take_message() {
                    // Never written: the connection had closed. Try the next one.
                    Some(unsent) => request = unsent,
                    None => return Err(Http1Error::Request(failed.into_error())),
                },
            }
        }
        let mut send = self.connect(&absolute).await?;
        match send.send_request(request).await {
            Ok(response) => Ok(self.pooled(response, key, send)),
            Err(error) => Err(Http1Error::Request(error)),
        }
    }

    /// The most recently used idle connection to `key` that is still open; expired and
    /// closed ones met on the way are dropped (closing them).
    fn checkout(&self, key: &Key) -> Option<Sender> {
        let mut idle = self.shared.idle.lock();
        let now = Instant::now();
        let timeout = self.shared.idle_timeout;
        idle.conns
            .retain(|c| !c.send.is_closed() && now.duration_since(c.since) < timeout);
        let at = idle.conns.iter().rposition(|c| c.key == *key)?;
        Some(idle.conns.remove(at).send)
    }

    /// A new connection to the server of `uri`, driven by a task of its own until it closes.
    async fn connect(&self, uri: &http::Uri) -> Result<Sender, Http1Error> {
        let stream = self
            .connector
            .clone()
            .call(uri.clone())
            .await
            .map_err(Http1Error::Connect)?;
        if stream.is_http2() {
            // Only when the server chose HTTP/1.1 for the first connection, and HTTP/2 now.
            return Err(Http1Error::Connect(
                "the server chose HTTP/2 by ALPN on a connection for the HTTP/1.1 pool".into(),
            ));
        }
        let (send, connection) = hyper::client::conn::http1::handshake(stream)
            .await
            .map_err(|e| Http1Error::Connect(Box::new(e)))?;
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "HTTP/1.1 connection closed");
            }
        });
        Ok(send)
    }

    /// `response` with a body that returns `send` to the idle list once read to its end.
    fn pooled(
        &self,
        response: http::Response<Incoming>,
        key: Key,
        send: Sender,
    ) -> http::Response<Body> {
        let home = Home {
            pool: Arc::downgrade(&self.shared),
            key,
        };
        response.map(|body| {
            let mut pooled = PooledBody {
                body,
                conn: Some((home, send)),
            };
            // A response with no body (a 204, or `Content-Length: 0`) is read whole already.
            if pooled.body.is_end_stream() {
                pooled.give_back();
            }
            pooled.boxed()
        })
    }
}

/// Where a connection goes back to: its pool's idle list, if the pool still exists.
struct Home {
    pool: Weak<Shared>,
    key: Key,
}

impl Home {
    /// Puts `send` on the idle list, unless the pool is gone or has enough idle connections
    /// to this server already (then it is dropped, closing the connection).
    fn put(self, send: Sender) {
        let Some(pool) = self.pool.upgrade() else {
            return;
        };
        let mut list = pool.idle.lock();
        if list.conns.iter().filter(|c| c.key == self.key).count() >= pool.max_idle {
            return;
        }
        list.conns.push(Idle {
            key: self.key,
            send,
            since: Instant::now(),
        });
        if !list.reaping
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            list.reaping = true;
            runtime.spawn(reap(Arc::downgrade(&pool)));
        }
    }
}

/// Closes idle connections as they pass the pool's idle timeout, until none is idle or the
/// pool is gone.
async fn reap(pool: Weak<Shared>) {
    loop {
        let (oldest, timeout) = {
            let Some(pool) = pool.upgrade() else { return };
            let timeout = pool.idle_timeout;
            let mut list = pool.idle.lock();
            let now = Instant::now();
            list.conns.retain(|c| now.duration_since(c.since) < timeout);
            match list.conns.iter().map(|c| c.since).min() {
                Some(oldest) => (oldest, timeout),
                None => {
                    list.reaping = false;
                    return;
                }
            }
        };
        tokio::time::sleep_until(oldest + timeout).await;
    }
}

/// A response body holding its connection until read to its end. See the module
/// documentation.
struct PooledBody {
    body: Incoming,
    conn: Option<(Home, Sender)>,
}

impl PooledBody {
    fn give_back(&mut self) {
        if let Some((home, send)) = self.conn.take() {
            home.put(send);
        }
    }
}

impl HttpBody for PooledBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match std::task::ready!(Pin::new(&mut this.body).poll_frame(cx)) {
            Some(Ok(frame)) => {
                if this.body.is_end_stream() {
                    this.give_back();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Some(Err(error)) => {
                // The connection is not reusable: drop it.
                this.conn = None;
                Poll::Ready(Some(Err(Box::new(error))))
            }
            None => {
                this.give_back();
                Poll::Ready(None)
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
#[path = "http1_tests.rs"]
mod tests;
