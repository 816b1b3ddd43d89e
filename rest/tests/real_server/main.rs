//! The REST client against a real kube-apiserver 1.36 (clientgo-envtest): discovery, aggregated
//! and classic, and the RESTMapper on the real API surface; typed errors as the real server
//! sends them; server-side apply with a conflict between field managers; lists and watches in
//! protobuf.
//!
//! One control plane serves every test of this binary; each test works in a namespace of its
//! own, and cluster-scoped objects (CRDs) get unique names. Without the control plane's
//! binaries the tests are skipped with one line saying what to set (they fail instead when
//! `CLIENTGO_ENVTEST_REQUIRED=1`, as in CI). Real servers answer in their own time: every
//! wait is bounded, none is a sleep.

mod apply;
mod discovery;
mod errors;
mod protobuf;
mod restmapper;

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use clientgo_envtest::ControlPlane;
use clientgo_rest::transport::Transport;
use clientgo_rest::{Body, BoxFuture, Config, Error, HttpClient, RestClient};

/// The longest any single wait on the real server may take.
pub const BOUND: Duration = Duration::from_secs(30);

/// Compacting etcd can make kube-apiserver's watch cache start over, which ends the watches
/// it serves: the test that compacts runs alone, tests that watch hold this for reading.
pub static COMPACTION: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// The shared control plane, `None` when its binaries are not found (the test is skipped).
pub fn control_plane() -> Option<&'static ControlPlane> {
    ControlPlane::shared()
}

/// The configuration of the control plane's kubeconfig, throttling off (classic discovery
/// makes dozens of requests; tests need not wait for a token bucket).
pub fn config(cp: &ControlPlane) -> Config {
    let mut config =
        Config::from_kubeconfig_file(cp.kubeconfig_path()).expect("the kubeconfig loads");
    config.qps = -1.0;
    config
}

/// A client of the control plane.
pub fn client(cp: &ControlPlane) -> RestClient {
    RestClient::new(&config(cp)).expect("a client")
}

/// Bounds a future: panics with `what` after [`BOUND`].
pub async fn within<F: Future>(what: &str, future: F) -> F::Output {
    match tokio::time::timeout(BOUND, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {BOUND:?} waiting for {what}"),
    }
}

/// What a [`Recording`] client saw of one response.
#[derive(Clone, Debug)]
pub struct Seen {
    /// The request's path.
    pub path: String,
    /// The `Accept` header the request went out with.
    pub accept: String,
    /// The response's status code.
    pub status: u16,
    /// The response's `Content-Type`.
    pub content_type: String,
}

/// The real transport, recording each response's status and content type, and optionally
/// asking `/api` and `/apis` for plain JSON only (as a server without aggregated discovery
/// would answer), so that the discovery client takes its classic path against the real server.
pub struct Recording {
    transport: Transport,
    classic_discovery: bool,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Recording {
    /// A client of the control plane over a recording transport, and what it records.
    pub fn client(
        cp: &ControlPlane,
        classic_discovery: bool,
    ) -> (RestClient, Arc<Mutex<Vec<Seen>>>) {
        let config = config(cp);
        let seen = Arc::new(Mutex::new(Vec::new()));
        let recording = Recording {
            transport: Transport::new(&config).expect("a transport"),
            classic_discovery,
            seen: seen.clone(),
        };
        let client = RestClient::builder(config)
            .http_client(recording)
            .build()
            .expect("a client");
        (client, seen)
    }
}

impl HttpClient for Recording {
    fn send(
        &self,
        mut request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Body>, Error>> {
        let path = request.uri().path().to_owned();
        if self.classic_discovery && (path == "/api" || path == "/apis") {
            request.headers_mut().insert(
                http::header::ACCEPT,
                http::HeaderValue::from_static("application/json"),
            );
        }
        let accept = header(request.headers(), http::header::ACCEPT);
        Box::pin(async move {
            let response = self.transport.send(request).await?;
            let seen = Seen {
                path,
                accept,
                status: response.status().as_u16(),
                content_type: header(response.headers(), http::header::CONTENT_TYPE),
            };
            self.seen.lock().unwrap().push(seen);
            Ok(response)
        })
    }
}

fn header(headers: &http::HeaderMap, name: http::header::HeaderName) -> String {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}
