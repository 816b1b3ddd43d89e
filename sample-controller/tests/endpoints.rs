//! `/metrics`, `/healthz` and `/readyz` of a running controller, against apiserver-sim, and
//! the limits of the server that serves them (on tokio's paused clock).

use std::sync::Arc;
use std::time::Duration;

use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_rest::config::Config;
use clientgo_rest::{PostParams, ResourceClient, RestClient};
use clientgo_sample_controller::app::{self, Options};
use clientgo_sample_controller::foo::Foo;
use clientgo_sample_controller::serve::{Endpoints, ServeOptions, serve, serve_with};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

mod support;

/// A plain HTTP/1.1 GET: the status code and the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    support::http_get(addr, path).await.expect("an HTTP answer")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_and_probes() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let mut registry = Registry::default();
    let client = RestClient::builder(Config::new(sim.url().parse().unwrap()))
        .metrics(&mut registry)
        .build()
        .unwrap();
    clientgo_sample_controller::foo::install_crd(&client)
        .await
        .unwrap();

    let app = app::build(
        client.clone(),
        Options {
            namespace: Some("default".into()),
            ..Options::default()
        },
        Some(&mut registry),
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let endpoints = Arc::new(Endpoints::new(Some(registry), app.ready()));
    let addr = serve("127.0.0.1:0".parse().unwrap(), endpoints, cancel.clone())
        .await
        .unwrap();

    assert_eq!(get(addr, "/healthz").await.0, 200);
    assert_eq!(
        get(addr, "/readyz").await.0,
        503,
        "not ready before the caches sync"
    );
    let run = tokio::spawn(app.run(cancel.clone()));

    let mut ready = false;
    for _ in 0..200 {
        if get(addr, "/readyz").await.0 == 200 {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(ready, "ready once the caches have synced");

    ResourceClient::<Foo>::namespaced(&client, "default")
        .create(
            &Foo::new("default", "web", "web", 1),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let succeeded = |metrics: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix("sample_controller_reconciles_succeeded_total "))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0)
    };
    let mut metrics = String::new();
    for _ in 0..200 {
        metrics = get(addr, "/metrics").await.1;
        if succeeded(&metrics) >= 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(succeeded(&metrics) >= 1, "a reconcile counted:\n{metrics}");
    for family in [
        r#"workqueue_adds_total{name="Foos"}"#,
        "rest_client_requests_total",
        "reflector_lists_total",
        "informer_cache_objects",
        "sample_controller_reconcile_panics_total 0",
    ] {
        assert!(metrics.contains(family), "missing {family} in:\n{metrics}");
    }
    assert_eq!(get(addr, "/nope").await.0, 404);
    cancel.cancel();
    run.await.unwrap().unwrap();
}

const LIMITS: ServeOptions = ServeOptions {
    header_read_timeout: Duration::from_secs(10),
    max_connections: 2,
};

async fn serve_probes() -> std::net::SocketAddr {
    let endpoints = Arc::new(Endpoints::new(None, || true));
    serve_with(
        "127.0.0.1:0".parse().unwrap(),
        endpoints,
        LIMITS,
        CancellationToken::new(),
    )
    .await
    .unwrap()
}

/// Reads until the server closes the connection (bounded: 120 s of paused time); returns
/// what was read.
async fn read_until_closed(stream: &mut TcpStream) -> String {
    let mut text = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(120), async {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => text.extend_from_slice(&buf[..n]),
            }
        }
    });
    read.await.expect("the server closes the connection");
    String::from_utf8_lossy(&text).into_owned()
}

/// A connection that never finishes its request head, first or next on a kept-alive
/// connection, is closed after the header-read timeout, not held forever.
#[tokio::test(start_paused = true)]
async fn a_connection_that_never_finishes_its_request_head_is_closed() {
    let addr = serve_probes().await;

    let mut partial = TcpStream::connect(addr).await.unwrap();
    partial
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n")
        .await
        .unwrap();
    let started = Instant::now();
    assert_eq!(read_until_closed(&mut partial).await, "");
    assert!(started.elapsed() >= LIMITS.header_read_timeout);

    // Kept alive after one answer, then silent: closed as well.
    let mut idle = TcpStream::connect(addr).await.unwrap();
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let answered = read_until_closed(&mut idle).await;
    assert!(answered.starts_with("HTTP/1.1 200"), "{answered}");
}

/// Connections beyond the cap are not served until one of those being served ends: idle
/// connections cannot crowd out more than the cap's worth of slots.
#[tokio::test(start_paused = true)]
async fn connections_beyond_the_cap_wait_until_a_slot_frees() {
    let addr = serve_probes().await;
    let mut idle: Vec<TcpStream> = Vec::new();
    for _ in 0..LIMITS.max_connections {
        idle.push(TcpStream::connect(addr).await.unwrap());
    }
    // Let the server accept them.
    tokio::time::sleep(Duration::from_millis(10)).await;

    let mut probe = TcpStream::connect(addr).await.unwrap();
    probe
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut byte = [0u8; 1];
    let early = tokio::time::timeout(Duration::from_secs(5), probe.read(&mut byte)).await;
    assert!(early.is_err(), "served beyond the cap: {early:?}");

    drop(idle.pop());
    let answer = read_until_closed(&mut probe).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}
