//! A custom resource nested as deep as kube-apiserver accepts (10,000 levels, under
//! `x-kubernetes-preserve-unknown-fields`) cannot take the process down. A dynamic informer
//! leaves such an object out (it would keep a `serde_json::Value` too deep to drop safely),
//! counts it and keeps the rest, including one exactly as deep as a decode keeps, which the
//! cache-size metric measures on the test thread's stack; a metadata informer, which skips
//! everything but `metadata`, keeps every object.
//!
//! The server is a raw HTTP/1.1 responder on 127.0.0.1 (apiserver-sim, like serde_json,
//! refuses bodies past 128 levels). It answers every list with the same three objects at
//! resourceVersion 10; its first watch sends one deep object (an event that does not decode
//! ends a dynamic informer's watch) and every later watch one shallow object, then both stay
//! open. Run in debug by the workspace's test command and in release by
//! `cargo test --release -p clientgo-informer --test deep_objects`.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, Object, PartialObjectMetadata};
use clientgo_informer::{
    Indexers, InformerMetrics, ListWatch, SharedIndexInformer, SharedInformerOptions,
};
use clientgo_rest::config::Config;
use clientgo_rest::json::{MAX_DEPTH, MAX_KEPT_DEPTH};
use clientgo_rest::{DynamicClient, MetadataClient, RestClient};
use prometheus_client::registry::Registry;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(120);

/// Levels of the deep objects: close to the server's limit, far past what a decode keeps.
const DEEP: usize = MAX_DEPTH - 1_000;

fn deeps() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Deep".into(),
        plural: "deeps".into(),
        namespaced: true,
    }
}

/// A `Deep` object whose `spec` nests `levels` objects.
fn object(name: &str, resource_version: u64, levels: usize) -> String {
    let spec = format!("{}1{}", r#"{"a":"#.repeat(levels), "}".repeat(levels));
    format!(
        r#"{{"apiVersion":"example.com/v1","kind":"Deep","metadata":{{"name":"{name}","namespace":"default","resourceVersion":"{resource_version}"}},"spec":{spec}}}"#
    )
}

/// The list every list request gets: a shallow object, one too deep to keep, and one whose
/// root object sits exactly at the kept depth (its spec one level less).
fn list_body() -> String {
    format!(
        r#"{{"apiVersion":"example.com/v1","kind":"DeepList","metadata":{{"resourceVersion":"10"}},"items":[{},{},{}]}}"#,
        object("shallow", 4, 1),
        object("deep", 5, DEEP),
        object("edge", 6, MAX_KEPT_DEPTH - 1),
    )
}

async fn read_request(stream: &mut TcpStream) -> Option<String> {
    let mut request = Vec::new();
    let mut buf = [0u8; 4096];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return None,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request);
    Some(text.lines().next().unwrap_or("").to_owned())
}

/// Serves lists and watches as the module documentation says; counts the watches.
async fn serve(listener: TcpListener, watches: Arc<AtomicUsize>) {
    let mut held = Vec::new();
    while let Ok((mut stream, _)) = listener.accept().await {
        let Some(line) = read_request(&mut stream).await else {
            continue;
        };
        if line.contains("watch=true") || line.contains("watch=1") {
            let first = watches.fetch_add(1, Ordering::SeqCst) == 0;
            let event = if first {
                object("deep-watched", 11, DEEP)
            } else {
                object("later", 12, 1)
            };
            let frame = format!("{{\"type\":\"ADDED\",\"object\":{event}}}\n");
            let response = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n{:x}\r\n{frame}\r\n",
                frame.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
            held.push(stream);
        } else {
            let body = list_body();
            let response = format!(
                "HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
                body.len()
            );
            let _ = stream.write_all(response.as_bytes()).await;
        }
    }
}

struct Server {
    url: String,
    watches: Arc<AtomicUsize>,
}

async fn start_server() -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let watches = Arc::new(AtomicUsize::new(0));
    tokio::spawn(serve(listener, watches.clone()));
    Server { url, watches }
}

fn client(url: &str, registry: &mut Registry) -> RestClient {
    let mut config = Config::new(url.parse().unwrap());
    config.qps = -1.0;
    RestClient::builder(config)
        .metrics(registry)
        .build()
        .unwrap()
}

fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

/// The value of the first sample of `metric` (any labels).
fn sample(registry: &Registry, metric: &str) -> Option<f64> {
    scrape(registry).lines().find_map(|line| {
        let rest = line.strip_prefix(metric)?;
        let value = rest.rsplit(' ').next()?;
        (rest.starts_with('{') || rest.starts_with(' ')).then(|| value.parse().ok())?
    })
}

fn names<T: Object + Send + Sync + 'static>(informer: &SharedIndexInformer<T>) -> Vec<String> {
    let mut names: Vec<String> = informer
        .store()
        .list()
        .iter()
        .map(|o| o.name().to_owned())
        .collect();
    names.sort();
    names
}

/// Waits (paused tokio time) until `done` holds, at most [`WAIT`].
async fn until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// LIST then WATCH: the server does not do streaming lists.
fn options(name: &str, metrics: InformerMetrics) -> SharedInformerOptions {
    let mut options = SharedInformerOptions {
        name: name.into(),
        metrics: Some(metrics),
        ..SharedInformerOptions::default()
    };
    options.reflector.use_watch_list = false;
    options
}

#[tokio::test(start_paused = true)]
async fn a_dynamic_informer_leaves_out_an_object_too_deep_to_keep_and_lives_on() {
    let server = start_server().await;
    let mut registry = Registry::default();
    let client = client(&server.url, &mut registry);
    let metrics = InformerMetrics::register(&mut registry);
    let api = DynamicClient::from_api_resource(&client, &deeps(), Some("default"));
    let informer = SharedIndexInformer::new(
        ListWatch::new(api),
        Indexers::default(),
        options("deeps", metrics),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });

    // The deep object of the list and the deep event of the first watch are left out; the
    // watch that follows the undecodable one brings the next object.
    until("the shallow objects and the later one", || {
        names(&informer) == ["edge", "later", "shallow"]
    })
    .await;
    assert!(server.watches.load(Ordering::SeqCst) >= 2);
    let skipped = sample(&registry, "rest_client_undecodable_items_total").unwrap_or(0.0);
    assert!(skipped >= 1.0, "the deep list item is counted: {skipped}");

    // The object at the kept depth is in the cache, measured by the size metric and usable.
    let edge = informer.store().get_by_key("default/edge").unwrap();
    let copy: DynamicObject = (*edge).clone();
    assert_eq!(serde_json::to_vec(&copy).unwrap().len(), {
        let text = object("edge", 6, MAX_KEPT_DEPTH - 1);
        text.len()
    });
    until("the cache size metric", || {
        sample(&registry, "informer_cache_bytes").is_some_and(|bytes| bytes > 2.0 * 512.0)
    })
    .await;
    drop(copy);

    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_metadata_informer_keeps_every_object_however_deep() {
    let server = start_server().await;
    let mut registry = Registry::default();
    let client = client(&server.url, &mut registry);
    let metrics = InformerMetrics::register(&mut registry);
    let api = MetadataClient::metadata(&client, &deeps(), Some("default"));
    let informer: SharedIndexInformer<PartialObjectMetadata> = SharedIndexInformer::new(
        ListWatch::new(api),
        Indexers::default(),
        options("deeps-metadata", metrics),
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });

    until("every object's metadata", || {
        names(&informer) == ["deep", "deep-watched", "edge", "shallow"]
    })
    .await;
    assert_eq!(server.watches.load(Ordering::SeqCst), 1);
    assert_eq!(
        sample(&registry, "rest_client_undecodable_items_total").unwrap_or(0.0),
        0.0
    );
    let deep = informer.store().get_by_key("default/deep").unwrap();
    assert_eq!(deep.resource_version(), "5");

    cancel.cancel();
    task.await.unwrap();
}
