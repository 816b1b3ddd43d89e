//! The OpenTelemetry integration the crate docs describe, compiled and run: the journey's
//! `reconcile` and `http` spans go through `tracing-opentelemetry` to the OpenTelemetry SDK
//! (here its in-memory exporter, where a program would use OTLP). A reconcile on
//! apiserver-sim reads a ConfigMap and lists with a label selector, over a client holding a
//! bearer token; the exported request spans carry OpenTelemetry's HTTP semantic-convention
//! attributes, are children of the reconcile's span in its trace, and no attribute carries
//! the token or the query.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_ratelimit::default_controller_rate_limiter;
use clientgo_rest::config::Secret;
use clientgo_rest::{Auth, Config, GetParams, ListParams, PostParams, ResourceClient, RestClient};
use clientgo_workqueue::{ObjectKey, Queue, QueueConfig, run_workers};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use opentelemetry::Value;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use tokio_util::sync::CancellationToken;
use tracing::Level;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::prelude::*;

const TOKEN: &str = "otel-test-token-5f1c";
/// A label value in a list's query: a query may carry secrets, so no span may show it.
const QUERY_SECRET: &str = "query-secret-93ab";

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a Value> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| &kv.value)
}

fn text(span: &SpanData, key: &str) -> String {
    attribute(span, key)
        .map(|v| v.as_str().into_owned())
        .unwrap_or_default()
}

#[tokio::test]
async fn reconcile_and_request_spans_reach_opentelemetry_with_its_http_names() {
    // The crate docs' setup, with the in-memory exporter in place of OTLP.
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let reconciles_and_requests = Targets::new()
        .with_target("clientgo_workqueue::journey", Level::TRACE)
        .with_target("clientgo_rest::journey", Level::TRACE);
    let subscriber = tracing_subscriber::registry().with(
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("flightrecorder-test"))
            .with_filter(reconciles_and_requests),
    );
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");

    let sim = ApiServerSim::start(SimConfig::default().with_token(TOKEN))
        .await
        .unwrap();
    let mut config = Config::new(sim.url().parse().unwrap()).allowing_insecure_credentials();
    config.auth = Auth::Bearer(Secret::new(TOKEN.to_owned()));
    let client = RestClient::new(&config).unwrap();
    let api = ResourceClient::<ConfigMap>::namespaced(&client, "default");
    let web = ConfigMap {
        metadata: ObjectMeta {
            name: Some("web".to_owned()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    };
    api.create(&web, &PostParams::default()).await.unwrap();

    let queue = Queue::<ObjectKey>::rate_limiting_with_config(
        Arc::new(default_controller_rate_limiter()),
        QueueConfig::named("otel"),
    );
    let (reconciled, mut reconciled_rx) = tokio::sync::mpsc::unbounded_channel();
    let shutdown = CancellationToken::new();
    let workers = {
        let (queue, api, shutdown) = (queue.clone(), api.clone(), shutdown.clone());
        tokio::spawn(async move {
            let reconcile = move |key: ObjectKey| {
                let (api, reconciled) = (api.clone(), reconciled.clone());
                async move {
                    let name = key.name();
                    api.get(name, &GetParams::default()).await?;
                    let selector = ListParams {
                        label_selector: Some(format!("secret={QUERY_SECRET}")),
                        ..ListParams::default()
                    };
                    api.list(&selector).await?;
                    let _ = reconciled.send(());
                    Ok::<(), clientgo_rest::Error>(())
                }
            };
            run_workers(&queue, 1, reconcile, shutdown).await;
        })
    };
    queue.add(ObjectKey::new("default", "web"));
    tokio::time::timeout(Duration::from_secs(30), reconciled_rx.recv())
        .await
        .expect("the reconcile ran")
        .unwrap();
    shutdown.cancel();
    workers.await.unwrap();
    provider.force_flush().unwrap();

    let url = sim.url();
    let host = url
        .trim_start_matches("http://")
        .split([':', '/'])
        .next()
        .unwrap();
    let spans = exporter.get_finished_spans().unwrap();
    let reconcile = spans
        .iter()
        .find(|s| s.name == "reconcile")
        .unwrap_or_else(|| panic!("no reconcile span in {spans:#?}"));
    assert_eq!(text(reconcile, "key"), "default/web");
    let requests: Vec<&SpanData> = spans.iter().filter(|s| s.name == "http").collect();
    // The test's own create ran outside any reconcile: its span is a root of its own.
    let in_reconcile: Vec<&SpanData> = requests
        .iter()
        .copied()
        .filter(|s| s.parent_span_id == reconcile.span_context.span_id())
        .collect();
    assert_eq!(in_reconcile.len(), 2, "{requests:#?}");
    for request in &in_reconcile {
        assert_eq!(
            request.span_context.trace_id(),
            reconcile.span_context.trace_id()
        );
        assert_eq!(text(request, "http.request.method"), "GET");
        assert_eq!(
            attribute(request, "http.response.status_code"),
            Some(&Value::I64(200)),
            "{request:#?}"
        );
        assert_eq!(text(request, "server.address"), host);
        assert_eq!(text(request, "k8s.resource"), "configmaps");
    }
    let paths: Vec<String> = in_reconcile.iter().map(|s| text(s, "url.path")).collect();
    assert_eq!(
        paths,
        [
            "/api/v1/namespaces/default/configmaps/web",
            "/api/v1/namespaces/default/configmaps"
        ]
    );
    let verbs: Vec<String> = in_reconcile.iter().map(|s| text(s, "k8s.verb")).collect();
    assert_eq!(verbs, ["get", "list"]);

    // Neither the token nor the query reaches the backend, in any span or span event.
    for span in &spans {
        let values = span.attributes.iter().map(|kv| kv.value.as_str()).chain(
            span.events
                .iter()
                .flat_map(|e| e.attributes.iter().map(|kv| kv.value.as_str())),
        );
        for value in values {
            assert!(
                !value.contains(TOKEN) && !value.contains(QUERY_SECRET) && !value.contains('?'),
                "span {} carries {value:?}",
                span.name
            );
        }
    }
    provider.shutdown().unwrap();
}
