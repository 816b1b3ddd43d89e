//! The controller's own HTTP endpoints: `/metrics` for Prometheus, `/healthz` and `/readyz`
//! for the kubelet's probes (as controller-runtime and kube-controller-manager serve them),
//! and, with a flight recorder, the loop as a person can look at it: `/debug/trace` (the last
//! minutes as an HTML timeline), `/debug/trace.json` (the same for ui.perfetto.dev) and
//! `/debug/queue` (the work queue now: depth, keys in flight with their worker and age, keys
//! waiting with their ready time and failures). client-go's controllers have no such pages;
//! Go's `net/http/pprof` and `/debug/vars` are the nearest.
//!
//! `/readyz` answers 200 only once the informer caches have synced: a replica that cannot
//! read its cache should not count as ready. `/healthz` answers 200 while the process serves.
//!
//! The listener is open to whatever can reach the pod, so it protects itself as Go servers
//! do with `ReadHeaderTimeout` and `netutil.LimitListener`: a connection that has not sent a
//! complete request head within [`ServeOptions::header_read_timeout`] (the first request or
//! the next one on a kept-alive connection) is closed, and at most
//! [`ServeOptions::max_connections`] are served at once; further ones wait in the listen
//! backlog until a slot frees, so a flood of idle connections holds no more than that many
//! slots, each for no longer than the timeout.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use clientgo::CancellationToken;
use clientgo::flightrecorder::Recorder;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

/// What the endpoints report from.
pub struct Endpoints {
    registry: Option<Mutex<Registry>>,
    ready: Box<dyn Fn() -> bool + Send + Sync>,
    recorder: Option<Recorder>,
}

/// How far back `/debug/trace` and `/debug/trace.json` look.
pub const TRACE_WINDOW: Duration = Duration::from_secs(300);

impl Endpoints {
    /// `/metrics` from `registry` (none: 404), `/readyz` from `ready`.
    pub fn new(
        registry: Option<Registry>,
        ready: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            registry: registry.map(Mutex::new),
            ready: Box::new(ready),
            recorder: None,
        }
    }

    /// Serves the `/debug/...` pages from `recorder` (without one: 404).
    pub fn with_recorder(mut self, recorder: Recorder) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// A `/debug/...` page: its content type and body.
    fn debug_page(&self, path: &str) -> Option<(&'static str, String)> {
        let recorder = self.recorder.as_ref()?;
        match path {
            "/debug/trace" => Some((
                "text/html; charset=utf-8",
                recorder
                    .snapshot_last(TRACE_WINDOW)
                    .html("sample-controller: the last five minutes"),
            )),
            "/debug/trace.json" => Some((
                "application/json",
                recorder.snapshot_last(TRACE_WINDOW).chrome_trace(),
            )),
            "/debug/queue" => Some((
                "application/json",
                serde_json::to_string_pretty(&recorder.queue_view()).ok()?,
            )),
            _ => None,
        }
    }

    fn answer(&self, path: &str) -> Response<Full<Bytes>> {
        if let Some((content_type, body)) = self.debug_page(path) {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            response.headers_mut().insert(
                hyper::header::CONTENT_TYPE,
                hyper::header::HeaderValue::from_static(content_type),
            );
            return response;
        }
        let (status, body) = match path {
            "/healthz" | "/livez" => (StatusCode::OK, "ok".to_owned()),
            "/readyz" if (self.ready)() => (StatusCode::OK, "ok".to_owned()),
            "/readyz" => (
                StatusCode::SERVICE_UNAVAILABLE,
                "caches not synced".to_owned(),
            ),
            "/metrics" => match &self.registry {
                Some(registry) => {
                    let mut text = String::new();
                    match prometheus_client::encoding::text::encode(&mut text, &registry.lock()) {
                        Ok(()) => (StatusCode::OK, text),
                        Err(_) => (
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "encoding failed".to_owned(),
                        ),
                    }
                }
                None => (StatusCode::NOT_FOUND, "not found".to_owned()),
            },
            _ => (StatusCode::NOT_FOUND, "not found".to_owned()),
        };
        let mut response = Response::new(Full::new(Bytes::from(body)));
        *response.status_mut() = status;
        response
    }
}

/// Limits of the endpoints' server.
#[derive(Debug, Clone, Copy)]
pub struct ServeOptions {
    /// How long a connection may take to send a complete request head before it is closed.
    pub header_read_timeout: Duration,
    /// How many connections are served at once.
    pub max_connections: usize,
}

impl Default for ServeOptions {
    /// 10 s to send a request head (a probe sends it at once), 64 connections.
    fn default() -> Self {
        Self {
            header_read_timeout: Duration::from_secs(10),
            max_connections: 64,
        }
    }
}

/// Serves `endpoints` on `addr` until `cancel`, with the default [`ServeOptions`]; returns the
/// bound address once listening.
pub async fn serve(
    addr: SocketAddr,
    endpoints: Arc<Endpoints>,
    cancel: CancellationToken,
) -> std::io::Result<SocketAddr> {
    serve_with(addr, endpoints, ServeOptions::default(), cancel).await
}

/// Serves `endpoints` on `addr` until `cancel`, within `options`' limits; returns the bound
/// address once listening.
pub async fn serve_with(
    addr: SocketAddr,
    endpoints: Arc<Endpoints>,
    options: ServeOptions,
    cancel: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let slots = Arc::new(Semaphore::new(options.max_connections.max(1)));
    tokio::spawn(async move {
        loop {
            // A free slot first, then accept: over the cap, connections wait in the backlog.
            let slot = tokio::select! {
                () = cancel.cancelled() => return,
                slot = slots.clone().acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => return, // never closed
                },
            };
            let (stream, _) = tokio::select! {
                () = cancel.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        // Out of file descriptors, say: do not spin.
                        tracing::warn!(%error, "accepting a connection failed");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
            };
            let endpoints = endpoints.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: Request<Incoming>| {
                    let response = endpoints.answer(request.uri().path());
                    async move { Ok::<_, Infallible>(response) }
                });
                let _ = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(options.header_read_timeout)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
                drop(slot);
            });
        }
    });
    Ok(bound)
}
