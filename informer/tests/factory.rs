//! The shared informer factory against apiserver-sim over HTTP (client-go's
//! `informers/factory_test.go` and the factory behaviour controllers rely on): one informer
//! per resource, late informers started by a later `start`, the namespace and list-options
//! tweaks, per-resource resync, transforms, sync reports, shutdown, and informers a panic
//! stopped started again.

mod cache_support;

use std::sync::Arc;
use std::time::Duration;

use cache_support::{ConfigMap, eventually, settle};
use clientgo_apimachinery::{
    ApiResource, DynamicObject, GroupVersionResource, Object, ObjectMeta, Resource, impl_object,
};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{
    NotSyncedReason, PanicPolicy, PanicSource, SharedIndexInformer, SharedInformerFactory,
};
use clientgo_rest::RestClient;
use clientgo_rest::config::Config;
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(60);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Lease {
    #[serde(default)]
    metadata: ObjectMeta,
}
impl_object!(Lease);

impl Resource for Lease {
    const GROUP: &'static str = "coordination.k8s.io";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Lease";
    const PLURAL: &'static str = "leases";
    const NAMESPACED: bool = true;
}

fn resource(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

fn config_maps() -> ApiResource {
    ApiResource::of::<ConfigMap>()
}

async fn start_sim() -> (ApiServerSim, RestClient) {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    (sim, client)
}

fn create_config_map(sim: &ApiServerSim, namespace: &str, name: &str, app: &str) {
    sim.create(
        "",
        "v1",
        "configmaps",
        namespace,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, "labels": {"app": app}},
            "data": {"k": "v"},
        }),
    )
    .unwrap();
}

fn keys<T: Object + Send + Sync + 'static>(informer: &SharedIndexInformer<T>) -> Vec<String> {
    let mut keys: Vec<String> = informer.indexer().list().iter().map(|o| o.key()).collect();
    keys.sort();
    keys
}

#[tokio::test]
async fn the_same_informer_is_returned_for_the_same_resource() {
    let client = RestClient::new(&Config::new("http://127.0.0.1:9".parse().unwrap())).unwrap();
    let factory = SharedInformerFactory::new(&client, Duration::ZERO);

    let a = factory.informer::<ConfigMap>();
    let b = factory.informer::<ConfigMap>();
    assert!(Arc::ptr_eq(a.indexer(), b.indexer()), "typed: one per type");
    assert_eq!(a.name(), "configmaps.v1");
    let lister = factory.lister::<ConfigMap>();
    a.indexer().add(Arc::new(ConfigMap {
        metadata: ObjectMeta::namespaced("default", "x"),
        ..ConfigMap::default()
    }));
    assert!(
        lister.namespace("default").get("x").is_some(),
        "the lister reads that cache"
    );

    let d1 = factory.dynamic_informer(&config_maps());
    let d2 = factory.dynamic_informer(&config_maps());
    assert!(
        Arc::ptr_eq(d1.indexer(), d2.indexer()),
        "dynamic: one per resource"
    );
    assert_eq!(d1.name(), "configmaps.v1 (dynamic)");
    assert!(d1.indexer().is_empty(), "not the typed informer's cache");
    let secrets = factory.dynamic_informer(&resource("", "Secret", "secrets"));
    assert!(!Arc::ptr_eq(d1.indexer(), secrets.indexer()));

    let m1 = factory.metadata_informer(&config_maps());
    let m2 = factory.metadata_informer(&config_maps());
    assert!(
        Arc::ptr_eq(m1.indexer(), m2.indexer()),
        "metadata: one per resource"
    );
    assert_eq!(m1.name(), "configmaps.v1 (metadata)");
    let leases = factory.metadata_informer(&ApiResource::of::<Lease>());
    assert_eq!(leases.name(), "leases.v1.coordination.k8s.io (metadata)");
    assert!(!Arc::ptr_eq(m1.indexer(), leases.indexer()));
    assert!(!a.has_started() && !d1.has_started() && !m1.has_started());
}

#[tokio::test(start_paused = true)]
async fn start_starts_informers_requested_after_an_earlier_start() {
    let (sim, client) = start_sim().await;
    create_config_map(&sim, "default", "a", "web");
    sim.create(
        "coordination.k8s.io",
        "v1",
        "leases",
        "default",
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}),
    )
    .unwrap();
    let factory = SharedInformerFactory::new(&client, Duration::ZERO);
    let config_maps = factory.informer::<ConfigMap>();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.unwrap();
    assert_eq!(keys(&config_maps), ["default/a"]);
    assert_eq!(
        config_maps.indexer().list()[0].data["k"],
        "v",
        "typed, whole"
    );

    // Asked for after the start: not running, and not waited for, until the next start.
    let leases = factory.informer::<Lease>();
    let dynamic = factory.dynamic_informer(&ApiResource::of::<Lease>());
    assert!(!leases.has_started() && !dynamic.has_started());
    factory.wait_for_cache_sync(WAIT).await.unwrap();
    assert!(!leases.has_synced());
    settle().await;
    assert!(!leases.has_started() && !dynamic.has_started());
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.unwrap();
    assert!(leases.has_synced() && dynamic.has_synced());
    assert_eq!(keys(&leases), ["default/l"]);
    assert_eq!(keys(&dynamic), ["default/l"]);
    assert_eq!(dynamic.indexer().list()[0].kind(), "Lease");

    // A third start has nothing left to start.
    factory.start(&cancel);
    cancel.cancel();
    factory.shutdown().await;
    assert!(config_maps.is_stopped() && leases.is_stopped() && dynamic.is_stopped());
}

#[tokio::test(start_paused = true)]
async fn namespace_and_label_selector_restrict_every_cache() {
    let (sim, client) = start_sim().await;
    create_config_map(&sim, "default", "web-1", "web");
    create_config_map(&sim, "default", "db-1", "db");
    create_config_map(&sim, "kube-system", "web-2", "web");
    let factory = SharedInformerFactory::builder(&client)
        .namespace("default")
        .tweak_list_options(|o| o.label_selector = Some("app=web".into()))
        .build();
    assert_eq!(factory.namespace(), Some("default"));
    let typed = factory.informer::<ConfigMap>();
    let dynamic = factory.dynamic_informer(&config_maps());
    let metadata = factory.metadata_informer(&config_maps());
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.unwrap();
    assert_eq!(keys(&typed), ["default/web-1"]);
    assert_eq!(keys(&dynamic), ["default/web-1"]);
    assert_eq!(keys(&metadata), ["default/web-1"]);
    // The namespace is said once: the factory's listers and clients are in it.
    let lister = factory.namespaced_lister::<ConfigMap>().unwrap();
    assert_eq!(lister.namespace(), "default");
    assert!(lister.get("web-1").is_some());
    assert_eq!(factory.client::<ConfigMap>().namespace(), Some("default"));
    let everywhere = SharedInformerFactory::builder(&client).build();
    assert!(everywhere.namespaced_lister::<ConfigMap>().is_none());
    assert_eq!(
        everywhere.client::<ConfigMap>().namespace(),
        Some(""),
        "all namespaces"
    );

    // Watches carry the same restrictions: the objects outside them, created first, never
    // arrive; the one inside, created last, does.
    create_config_map(&sim, "kube-system", "web-3", "web");
    create_config_map(&sim, "default", "db-2", "db");
    create_config_map(&sim, "default", "web-4", "web");
    eventually("web-4 in every cache", WAIT, || {
        [&keys(&typed), &keys(&dynamic), &keys(&metadata)]
            .iter()
            .all(|k| k.contains(&"default/web-4".to_owned()))
    })
    .await;
    for cached in [keys(&typed), keys(&dynamic), keys(&metadata)] {
        assert_eq!(cached, ["default/web-1", "default/web-4"]);
    }
    cancel.cancel();
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_names_an_unserved_resource() {
    let (sim, client) = start_sim().await;
    create_config_map(&sim, "default", "a", "web");
    let factory = SharedInformerFactory::new(&client, Duration::ZERO);
    let served = factory.dynamic_informer(&config_maps());
    let widgets = resource("example.com", "Widget", "widgets");
    let unserved = factory.dynamic_informer(&widgets);
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    let error = factory
        .wait_for_cache_sync(Duration::from_secs(10))
        .await
        .unwrap_err();
    assert!(served.has_synced());
    assert_eq!(error.not_synced.len(), 1, "{error}");
    let (name, reason) = &error.not_synced[0];
    assert_eq!(name, "widgets.v1.example.com (dynamic)");
    let NotSyncedReason::Failing(message) = reason else {
        panic!("expected the reflector's error, got {reason:?}");
    };
    assert!(
        message.contains("the server could not find the requested resource"),
        "{message}"
    );
    assert!(!unserved.has_synced());
    cancel.cancel();
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn resync_periods_and_transforms_apply_per_resource_and_type() {
    let (sim, client) = start_sim().await;
    create_config_map(&sim, "default", "a", "web");
    let factory = SharedInformerFactory::builder(&client)
        .default_resync(Duration::from_secs(30))
        .custom_resync::<ConfigMap>(Duration::from_secs(5))
        .transform(|mut o: DynamicObject| {
            o.data.remove("data");
            o
        })
        .build();
    assert_eq!(factory.default_resync(), Duration::from_secs(30));
    let typed = factory.informer::<ConfigMap>();
    let dynamic = factory.dynamic_informer(&config_maps());
    let secrets = factory.dynamic_informer(&resource("", "Secret", "secrets"));
    assert_eq!(typed.resync_check_period(), Duration::from_secs(5));
    assert_eq!(dynamic.resync_check_period(), Duration::from_secs(5));
    assert_eq!(secrets.resync_check_period(), Duration::from_secs(30));
    let leases = GroupVersionResource::new("coordination.k8s.io", "v1", "leases");
    let custom = SharedInformerFactory::builder(&client)
        .custom_resync_for(leases, Duration::from_secs(7))
        .build();
    let lease_metadata = custom.metadata_informer(&ApiResource::of::<Lease>());
    assert_eq!(lease_metadata.resync_check_period(), Duration::from_secs(7));

    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.unwrap();
    assert!(
        dynamic.indexer().list()[0].data.get("data").is_none(),
        "transformed"
    );
    assert_eq!(
        typed.indexer().list()[0].data["k"],
        "v",
        "another type: untouched"
    );
    cancel.cancel();
    factory.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn shutdown_waits_for_the_informers_and_refuses_later_starts() {
    let (sim, client) = start_sim().await;
    create_config_map(&sim, "default", "a", "web");
    let factory = SharedInformerFactory::new(&client, Duration::ZERO);
    // Nothing started: nothing to wait for.
    factory.shutdown().await;
    let factory = SharedInformerFactory::new(&client, Duration::ZERO);
    let typed = factory.informer::<ConfigMap>();
    let metadata = factory.metadata_informer(&config_maps());
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.unwrap();

    // While the informers run, shutdown waits.
    let waiting = tokio::time::timeout(Duration::from_secs(5), factory.shutdown()).await;
    assert!(
        waiting.is_err(),
        "shutdown returned while the informers run"
    );
    assert!(!typed.is_stopped() && !metadata.is_stopped());
    cancel.cancel();
    factory.shutdown().await;
    assert!(typed.is_stopped() && metadata.is_stopped());

    // Once shut down, a start starts nothing.
    let late = factory.dynamic_informer(&config_maps());
    factory.start(&CancellationToken::new());
    settle().await;
    assert!(!late.has_started());
    factory.shutdown().await;
}

// Under `PanicPolicy::Stop` for the whole factory, a transform's panic stops its informer
// (the factory's sync report says why), and the next `start` runs it again from a relist.
#[tokio::test(start_paused = true)]
async fn start_runs_again_an_informer_a_panic_stopped() {
    static BROKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(true);
    let (sim, client) = start_sim().await;
    create_config_map(&sim, "default", "a", "web");
    let factory = SharedInformerFactory::builder(&client)
        .transform(|cm: ConfigMap| {
            let broken = BROKEN.load(std::sync::atomic::Ordering::SeqCst);
            assert!(!(broken && cm.metadata.name == "bad"), "transform bug");
            cm
        })
        .on_panic(PanicPolicy::Stop)
        .build();
    let informer = factory.informer::<ConfigMap>();
    assert_eq!(informer.panic_policy(), PanicPolicy::Stop);
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.unwrap();

    create_config_map(&sim, "default", "bad", "web");
    eventually("the informer stops", WAIT, || {
        informer.failure().is_some() && !informer.has_started()
    })
    .await;
    let err = factory
        .wait_for_cache_sync(Duration::from_secs(1))
        .await
        .unwrap_err();
    assert!(
        matches!(&err.not_synced[0].1, NotSyncedReason::Failed(f) if f.source == PanicSource::Transform),
        "{err}"
    );

    BROKEN.store(false, std::sync::atomic::Ordering::SeqCst);
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.unwrap();
    assert_eq!(keys(&informer), ["default/a", "default/bad"]);
    cancel.cancel();
    factory.shutdown().await;
}
