//! `/debug/trace`, `/debug/trace.json` and `/debug/queue` of a running controller with a
//! flight recorder, against apiserver-sim: a Foo's reconcile shows in the trace, the queue
//! page has its shape; without a recorder the pages are 404.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_flightrecorder::Recorder;
use clientgo_rest::config::Config;
use clientgo_rest::{PostParams, ResourceClient, RestClient};
use clientgo_sample_controller::app::{self, Options};
use clientgo_sample_controller::foo::Foo;
use clientgo_sample_controller::serve::{Endpoints, serve};
use tokio_util::sync::CancellationToken;
use tracing_subscriber::layer::SubscriberExt;

mod support;

/// A GET that must be answered: the status code, the head and the body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    support::http_get_with_head(addr, path)
        .await
        .unwrap_or_else(|| panic!("GET {path}: no answer"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_debug_pages_show_the_loop() {
    // Handlers run on blocking threads: the recorder must be the global subscriber.
    let recorder = Recorder::new(100_000);
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(recorder.layer()))
        .unwrap();
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    clientgo_sample_controller::foo::install_crd(&client)
        .await
        .unwrap();
    let app = app::build(
        client.clone(),
        Options {
            namespace: Some("default".into()),
            ..Options::default()
        },
        None,
    )
    .unwrap();
    let cancel = CancellationToken::new();
    let plain = Arc::new(Endpoints::new(None, || true));
    let plain = serve("127.0.0.1:0".parse().unwrap(), plain, cancel.clone())
        .await
        .unwrap();
    assert_eq!(
        get(plain, "/debug/trace").await.0,
        404,
        "no recorder, no page"
    );
    let endpoints = Arc::new(Endpoints::new(None, app.ready()).with_recorder(recorder.clone()));
    let addr = serve("127.0.0.1:0".parse().unwrap(), endpoints, cancel.clone())
        .await
        .unwrap();
    let run = tokio::spawn(app.run(cancel.clone()));
    ResourceClient::<Foo>::namespaced(&client, "default")
        .create(
            &Foo::new("default", "web", "web", 1),
            &PostParams::default(),
        )
        .await
        .unwrap();

    let mut reconciled = false;
    for _ in 0..400 {
        let (status, head, body) = get(addr, "/debug/trace.json").await;
        assert_eq!(status, 200);
        assert!(head.contains("content-type: application/json"), "{head}");
        let trace: serde_json::Value = serde_json::from_str(&body).unwrap();
        reconciled = trace["traceEvents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["ph"] == "X" && e["name"] == "reconcile default/web");
        if reconciled {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(reconciled, "the Foo's reconcile is in the trace");

    let (status, head, page) = get(addr, "/debug/trace").await;
    assert_eq!(status, 200);
    assert!(head.contains("content-type: text/html"), "{head}");
    assert!(page.starts_with("<!DOCTYPE html>") && page.contains("default/web"));

    let (status, _, body) = get(addr, "/debug/queue").await;
    assert_eq!(status, 200);
    let view: serde_json::Value = serde_json::from_str(&body).unwrap();
    let queues = view["queues"].as_array().expect("queues");
    assert!(!queues.is_empty(), "{view}");
    for queue in queues {
        assert!(
            queue["depth"].is_u64() && queue["in_flight"].is_array() && queue["waiting"].is_array(),
            "{queue}"
        );
    }

    cancel.cancel();
    run.await.unwrap().unwrap();
}
