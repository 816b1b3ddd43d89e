//! Informer metrics as a Prometheus scrape shows them: a manual informer's cache and handler
//! gauges, and an informer against apiserver-sim counting its lists, watches, the relist a
//! compaction forces, and its streaming lists.

use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, Object, ObjectMut};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{
    HandlerOptions, Indexers, InformerMetrics, ListWatch, ResourceEventHandlerFuncs,
    SharedIndexInformer, SharedInformerOptions, approx_json_size, wait_for_cache_sync,
};
use clientgo_rest::config::Config;
use clientgo_rest::{DeleteParams, DynamicClient, ListParams, PatchParams, PatchType, RestClient};
use prometheus_client::registry::Registry;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(60);

fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

/// The value of the sample `series` (metric name and labels, exactly as encoded).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.parse().ok()
    })
}

fn value(registry: &Registry, series: &str) -> f64 {
    let text = scrape(registry);
    sample(&text, series).unwrap_or_else(|| panic!("{series} missing from\n{text}"))
}

/// Waits, scraping every 100 ms of (paused) time, until `series` satisfies `done`.
async fn wait_for(registry: &Registry, series: &str, done: impl Fn(f64) -> bool) -> f64 {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let text = scrape(registry);
        if let Some(v) = sample(&text, series).filter(|&v| done(v)) {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{series} not as expected after {WAIT:?}:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn config_map(name: &str, rv: &str, payload: &str) -> DynamicObject {
    let mut o = DynamicObject::new(name)
        .within("default")
        .with_field("data", json!({ "payload": payload }));
    o.set_resource_version(rv.to_owned());
    o
}

/// Σ of the cached objects' JSON lengths, serialized for the comparison.
fn serialized_bytes(informer: &SharedIndexInformer<DynamicObject>) -> f64 {
    let objects = informer.indexer().list();
    let estimated: usize = objects.iter().map(|o| approx_json_size(&**o)).sum();
    let serialized: usize = objects
        .iter()
        .map(|o| serde_json::to_vec(&**o).unwrap().len())
        .sum();
    assert_eq!(estimated, serialized, "no string needs escaping here");
    serialized as f64
}

fn start(informer: &SharedIndexInformer<DynamicObject>) -> (CancellationToken, JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    (cancel, task)
}

fn noop() -> ResourceEventHandlerFuncs<DynamicObject> {
    ResourceEventHandlerFuncs::new()
}

fn named(name: &str) -> HandlerOptions {
    HandlerOptions {
        name: Some(name.to_owned()),
        ..HandlerOptions::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_manual_informer_reports_its_cache_and_handler_buffers() {
    let mut registry = Registry::default();
    let metrics = InformerMetrics::register(&mut registry);
    let informer = SharedIndexInformer::new_manual(
        Indexers::namespace(),
        SharedInformerOptions {
            name: "widgets".into(),
            metrics: Some(metrics),
            ..SharedInformerOptions::default()
        },
    );
    let first = informer.add_event_handler(noop()).unwrap();
    let audit = informer
        .add_event_handler_with_options(noop(), named("audit"))
        .unwrap();
    assert_eq!((first.name(), audit.name()), ("0", "audit"));

    let (cancel, task) = start(&informer);
    informer.queue().replace(
        vec![
            config_map("a", "1", "aaaa"),
            config_map("b", "2", "b"),
            config_map("c", "3", "cc"),
        ],
        "3".into(),
    );
    wait_for_cache_sync(&[&informer, &first, &audit], WAIT)
        .await
        .unwrap();
    for handler in ["0", "audit"] {
        let series =
            format!(r#"informer_handler_buffer_length{{name="widgets",handler="{handler}"}}"#);
        wait_for(&registry, &series, |v| v == 0.0).await;
    }
    assert_eq!(
        value(&registry, r#"informer_cache_objects{name="widgets"}"#),
        3.0
    );
    assert_eq!(
        value(&registry, r#"informer_cache_bytes{name="widgets"}"#),
        serialized_bytes(&informer)
    );

    // A handler joining a running informer gets the cache replayed into its buffer at once.
    let late = informer
        .add_event_handler_with_options(noop(), named("late"))
        .unwrap();
    assert_eq!(late.pending(), 3);
    assert_eq!(
        value(
            &registry,
            r#"informer_handler_buffer_length{name="widgets",handler="late"}"#
        ),
        3.0
    );
    wait_for(
        &registry,
        r#"informer_handler_buffer_length{name="widgets",handler="late"}"#,
        |v| v == 0.0,
    )
    .await;
    // Unnamed handlers are named by their registration index, removed ones disappear.
    let fourth = informer.add_event_handler(noop()).unwrap();
    assert_eq!(fourth.name(), "3");
    informer.remove_event_handler(&audit);
    assert!(!scrape(&registry).contains(r#"handler="audit""#));

    // Deletes and updates move the byte count by the objects' sizes.
    let before = value(&registry, r#"informer_cache_bytes{name="widgets"}"#);
    informer.queue().delete(config_map("a", "4", "aaaa"));
    informer.queue().update(config_map("b", "5", "bbbbbbbbbb"));
    informer
        .indexer()
        .wait_for_resource_version("5", WAIT)
        .await
        .unwrap();
    assert_eq!(
        value(&registry, r#"informer_cache_objects{name="widgets"}"#),
        2.0
    );
    let after = value(&registry, r#"informer_cache_bytes{name="widgets"}"#);
    assert_eq!(after, serialized_bytes(&informer));
    assert!(
        after < before,
        "a 4-byte payload object went, a payload grew by 9"
    );

    cancel.cancel();
    task.await.unwrap();
    drop(informer);
    let text = scrape(&registry);
    assert!(
        !text.contains(r#"name="widgets""#),
        "a dropped informer leaves no series:\n{text}"
    );
}

fn config_maps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}

/// Creates a ConfigMap directly in the server's store (no request, no await).
fn create(sim: &ApiServerSim, name: &str) {
    sim.create(
        "",
        "v1",
        "configmaps",
        "default",
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "default"},
            "data": {"k": "v0"},
        }),
    )
    .unwrap();
}

async fn sim_with(config: SimConfig, objects: usize) -> (ApiServerSim, DynamicClient) {
    let sim = ApiServerSim::start(config).await.unwrap();
    for i in 0..objects {
        create(&sim, &format!("cm-{i}"));
    }
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    let api = DynamicClient::from_api_resource(&client, &config_maps(), Some("default"));
    (sim, api)
}

fn sim_informer(
    api: &DynamicClient,
    metrics: InformerMetrics,
    use_watch_list: bool,
) -> SharedIndexInformer<DynamicObject> {
    let mut options = SharedInformerOptions {
        name: "configmaps".into(),
        metrics: Some(metrics),
        ..SharedInformerOptions::default()
    };
    options.reflector.use_watch_list = use_watch_list;
    SharedIndexInformer::new(ListWatch::new(api.clone()), Indexers::default(), options)
}

/// Waits until the cache holds exactly what the server serves.
async fn converge(informer: &SharedIndexInformer<DynamicObject>, api: &DynamicClient) {
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let served = api.list(&ListParams::default()).await.unwrap();
        let mut served: Vec<String> = served
            .items
            .iter()
            .map(|o| format!("{}@{}", o.key(), o.resource_version()))
            .collect();
        let mut cached: Vec<String> = informer
            .indexer()
            .list()
            .iter()
            .map(|o| format!("{}@{}", o.key(), o.resource_version()))
            .collect();
        served.sort();
        cached.sort();
        if served == cached {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the cache did not converge"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(start_paused = true)]
async fn lists_watches_and_a_forced_relist_are_counted_against_the_sim() {
    let (sim, api) = sim_with(SimConfig::default(), 40).await;
    let mut registry = Registry::default();
    let metrics = InformerMetrics::register(&mut registry);
    let informer = sim_informer(&api, metrics, false);
    let _counter = informer.add_event_handler(noop()).unwrap();
    let (cancel, task) = start(&informer);
    wait_for_cache_sync(&[&informer], WAIT).await.unwrap();

    // One LIST of 40 items, then a WATCH.
    let text = scrape(&registry);
    for (series, expected) in [
        (r#"reflector_lists_total{name="configmaps"}"#, 1.0),
        (r#"reflector_items_per_list_count{name="configmaps"}"#, 1.0),
        (r#"reflector_items_per_list_sum{name="configmaps"}"#, 40.0),
        (
            r#"reflector_list_duration_seconds_count{name="configmaps"}"#,
            1.0,
        ),
        (r#"reflector_watch_lists_total{name="configmaps"}"#, 0.0),
        (r#"informer_cache_objects{name="configmaps"}"#, 40.0),
    ] {
        assert_eq!(sample(&text, series), Some(expected), "{series} in\n{text}");
    }
    wait_for(
        &registry,
        r#"reflector_watches_total{name="configmaps"}"#,
        |v| v == 1.0,
    )
    .await;

    // Watch events move the cache and the last resourceVersion.
    let patch = json!({"data": {"k": "v1"}});
    api.patch("cm-7", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    api.delete("cm-8", &DeleteParams::default()).await.unwrap();
    converge(&informer, &api).await;
    let rv: f64 = informer.last_sync_resource_version().parse().unwrap();
    assert_eq!(
        value(
            &registry,
            r#"reflector_last_resource_version{name="configmaps"}"#
        ),
        rv
    );
    assert_eq!(
        value(&registry, r#"informer_cache_objects{name="configmaps"}"#),
        39.0
    );
    assert_eq!(
        value(&registry, r#"informer_cache_bytes{name="configmaps"}"#),
        serialized_bytes(&informer)
    );
    assert_eq!(
        value(
            &registry,
            r#"reflector_relists_total{name="configmaps",reason="expired"}"#
        ),
        0.0
    );

    // A change the reflector has not seen yet, then the history is compacted past it and the
    // watch cut (all before the reflector's task runs again): the watch ends with 410 Gone,
    // or re-watching from the last resourceVersion gets it, and the reflector relists.
    create(&sim, "cm-late");
    sim.compact();
    sim.close_all_watches();
    api.patch("cm-9", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    api.delete("cm-10", &DeleteParams::default()).await.unwrap();
    wait_for(
        &registry,
        r#"reflector_relists_total{name="configmaps",reason="expired"}"#,
        |v| v == 1.0,
    )
    .await;
    converge(&informer, &api).await;
    let text = scrape(&registry);
    let lists = sample(&text, r#"reflector_lists_total{name="configmaps"}"#).unwrap();
    assert!(lists >= 2.0, "a relist after the compaction:\n{text}");
    assert!(
        sample(&text, r#"reflector_watches_total{name="configmaps"}"#).unwrap() >= 2.0,
        "the cut watch and the one after it:\n{text}"
    );
    let ended = r#"reflector_watch_duration_seconds_count{name="configmaps"}"#;
    assert!(sample(&text, ended).unwrap() >= 1.0, "{text}");
    let delivered = r#"reflector_items_per_watch_sum{name="configmaps"}"#;
    assert!(
        sample(&text, delivered).unwrap() >= 2.0,
        "the patch and the delete:\n{text}"
    );
    for reason in ["short_watch", "watch_error"] {
        let series = format!(r#"reflector_relists_total{{name="configmaps",reason="{reason}"}}"#);
        assert_eq!(sample(&text, &series), Some(0.0), "{series} in\n{text}");
    }
    wait_for(
        &registry,
        r#"informer_cache_objects{name="configmaps"}"#,
        |v| v == 39.0,
    )
    .await;
    assert_eq!(
        value(&registry, r#"informer_cache_bytes{name="configmaps"}"#),
        serialized_bytes(&informer)
    );
    wait_for(
        &registry,
        r#"informer_handler_buffer_length{name="configmaps",handler="0"}"#,
        |v| v == 0.0,
    )
    .await;

    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_streaming_list_is_counted_as_a_list_without_a_list_request() {
    let (_sim, api) = sim_with(SimConfig::default(), 25).await;
    let mut registry = Registry::default();
    let metrics = InformerMetrics::register(&mut registry);
    let informer = sim_informer(&api, metrics, true);
    let (cancel, task) = start(&informer);
    wait_for_cache_sync(&[&informer], WAIT).await.unwrap();

    let text = scrape(&registry);
    for (series, expected) in [
        (r#"reflector_watch_lists_total{name="configmaps"}"#, 1.0),
        (r#"reflector_lists_total{name="configmaps"}"#, 0.0),
        (r#"reflector_items_per_list_sum{name="configmaps"}"#, 25.0),
        (r#"reflector_watches_total{name="configmaps"}"#, 0.0),
        (r#"informer_cache_objects{name="configmaps"}"#, 25.0),
    ] {
        assert_eq!(sample(&text, series), Some(expected), "{series} in\n{text}");
    }
    for reason in ["error", "timeout", "short_watch", "undecodable"] {
        let series = format!(
            r#"reflector_watch_list_fallbacks_total{{name="configmaps",reason="{reason}"}}"#
        );
        assert_eq!(sample(&text, &series), Some(0.0), "{series} in\n{text}");
    }

    cancel.cancel();
    task.await.unwrap();
    drop(informer);
    let text = scrape(&registry);
    assert!(
        !text.contains(r#"name="configmaps""#),
        "the reflector's and the cache's series went with the informer:\n{text}"
    );
}
