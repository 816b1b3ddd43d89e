//! `/metrics`, `/healthz` and `/readyz` of a running controller, against apiserver-sim.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_rest::config::Config;
use clientgo_rest::{PostParams, ResourceClient, RestClient};
use clientgo_sample_controller::app::{self, Options};
use clientgo_sample_controller::foo::Foo;
use clientgo_sample_controller::serve::{Endpoints, serve};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// A plain HTTP/1.1 GET: the status code and the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
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
