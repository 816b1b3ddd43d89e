//! The controller's own HTTP endpoints: `/metrics` for Prometheus, `/healthz` and `/readyz`
//! for the kubelet's probes (as controller-runtime and kube-controller-manager serve them).
//!
//! `/readyz` answers 200 only once the informer caches have synced: a replica that cannot
//! read its cache should not count as ready. `/healthz` answers 200 while the process serves.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

/// What the endpoints report from.
pub struct Endpoints {
    registry: Option<Mutex<Registry>>,
    ready: Box<dyn Fn() -> bool + Send + Sync>,
}

impl Endpoints {
    /// `/metrics` from `registry` (none: 404), `/readyz` from `ready`.
    pub fn new(
        registry: Option<Registry>,
        ready: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            registry: registry.map(Mutex::new),
            ready: Box::new(ready),
        }
    }

    fn answer(&self, path: &str) -> Response<Full<Bytes>> {
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

/// Serves `endpoints` on `addr` until `cancel`; returns the bound address once listening.
pub async fn serve(
    addr: SocketAddr,
    endpoints: Arc<Endpoints>,
    cancel: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let (stream, _) = tokio::select! {
                () = cancel.cancelled() => return,
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(error) => {
                        tracing::warn!(%error, "accepting a connection failed");
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
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}
