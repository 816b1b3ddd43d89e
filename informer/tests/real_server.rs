//! Informers against a real kube-apiserver 1.36 (clientgo-envtest): the initial sync through
//! list pages and through a streaming list, the relist after a real compaction (410 Expired),
//! bookmarks, metadata-only informers and read-your-writes.
//!
//! Each test works in a namespace of its own on the binary's shared control plane, and every
//! wait is bounded. Only the compaction test compacts etcd; it holds [`COMPACTION`] for
//! writing and the others hold it for reading, so no list page or watch of theirs meets a
//! compaction it did not ask for.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{
    ApiResource, DynamicObject, Object, ObjectList, PartialObjectMetadata,
};
use clientgo_envtest::ControlPlane;
use clientgo_informer::{
    Indexers, InformerMetrics, ListWatch, ListWatchError, ListerWatcher,
    RESOURCE_VERSION_MATCH_NOT_OLDER_THAN, ReflectorOptions, SharedIndexInformer,
    SharedInformerFactory, SharedInformerOptions, wait_for_cache_sync,
};
use clientgo_rest::{
    Config, DeleteParams, DynamicClient, ListParams, PatchParams, PatchType, PostParams,
    RestClient, WatchParams,
};
use clientgo_watch::Watch;
use parking_lot::Mutex;
use prometheus_client::registry::Registry;
use serde_json::{Value, json};
use tokio::sync::RwLock;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The bound of every wait on the server or the cache.
const WAIT: Duration = Duration::from_secs(60);

/// Held for writing by the test that compacts etcd, for reading by the others.
static COMPACTION: RwLock<()> = RwLock::const_new(());

/// A namespace of a test's own on the shared control plane, and `resource` in it.
struct Scene {
    cp: &'static ControlPlane,
    namespace: String,
    client: RestClient,
    api: DynamicClient,
}

/// `None` when no control plane can run here (the reason is printed).
fn scene(prefix: &str, resource: &ApiResource) -> Option<Scene> {
    let cp = ControlPlane::shared()?;
    let namespace = cp.create_namespace(prefix).unwrap();
    let client = client(cp);
    let api = DynamicClient::from_api_resource(&client, resource, Some(&namespace));
    Some(Scene {
        cp,
        namespace,
        client,
        api,
    })
}

/// A JSON merge patch of `name`; returns the object as written.
async fn merge(api: &DynamicClient, name: &str, patch: Value) -> DynamicObject {
    api.patch(name, PatchType::Merge, &patch, &PatchParams::default())
        .await
        .expect("patched")
}

fn client(cp: &ControlPlane) -> RestClient {
    let config = Config::from_kubeconfig_file(cp.kubeconfig_path()).expect("the kubeconfig loads");
    // Unthrottled: the tests write hundreds of objects.
    RestClient::builder(config)
        .throttle(None)
        .build()
        .expect("a client")
}

fn core_v1(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

fn config_maps() -> ApiResource {
    core_v1("ConfigMap", "configmaps")
}

fn pod_templates() -> ApiResource {
    core_v1("PodTemplate", "podtemplates")
}

fn config_map(name: &str, app: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": app}},
        "data": {"secret": "hunter2"},
    }))
    .unwrap()
}

fn pod_template(name: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "PodTemplate",
        "metadata": {"name": name},
        "template": {"spec": {"containers": [{"name": "main", "image": "busybox"}]}},
    }))
    .unwrap()
}

/// Creates `objects` concurrently; returns the largest resourceVersion written.
async fn create_all(api: &DynamicClient, objects: Vec<DynamicObject>) -> String {
    let mut tasks = tokio::task::JoinSet::new();
    for object in objects {
        let api = api.clone();
        tasks.spawn(async move { api.create(&object, &PostParams::default()).await });
    }
    let mut newest = String::new();
    while let Some(created) = tasks.join_next().await {
        let rv = created
            .unwrap()
            .expect("created")
            .resource_version()
            .to_owned();
        if (rv.len(), &rv) > (newest.len(), &newest) {
            newest = rv;
        }
    }
    newest
}

/// `key@resourceVersion`, sorted: a collection's state, for comparisons.
fn state<'a, O: Object + 'a>(objects: impl IntoIterator<Item = &'a O>) -> Vec<String> {
    let mut lines: Vec<String> = objects
        .into_iter()
        .map(|o| format!("{}@{}", o.key(), o.resource_version()))
        .collect();
    lines.sort();
    lines
}

fn cached<O: Object + Send + Sync + 'static>(informer: &SharedIndexInformer<O>) -> Vec<String> {
    let objects = informer.indexer().list();
    state(objects.iter().map(|o| &**o))
}

/// The server's state, read consistently (from etcd).
async fn served(api: &DynamicClient) -> Vec<String> {
    let list = api.list(&ListParams::default()).await.expect("list");
    state(&list.items)
}

fn scrape(registry: &Registry) -> String {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    text
}

/// The value of the sample `series` (metric name and labels, exactly as encoded).
fn sample(registry: &Registry, series: &str) -> f64 {
    let text = scrape(registry);
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
}

/// Waits at most [`WAIT`] for `done`, checking every 50 ms.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// What a [`Probe`] saw, and how it shapes the watches it forwards.
struct Requests {
    lists: Mutex<Vec<ListParams>>,
    watches: Mutex<Vec<WatchParams>>,
    /// The `timeoutSeconds` every watch asks for instead of the reflector's, if set.
    watch_timeout: Option<i64>,
    /// Watch requests wait while this is false.
    open: tokio::sync::watch::Sender<bool>,
}

impl Requests {
    fn new(watch_timeout: Option<i64>, open: bool) -> Arc<Requests> {
        Arc::new(Requests {
            lists: Mutex::default(),
            watches: Mutex::default(),
            watch_timeout,
            open: tokio::sync::watch::Sender::new(open),
        })
    }

    fn lists(&self) -> Vec<ListParams> {
        self.lists.lock().clone()
    }

    fn watches(&self) -> Vec<WatchParams> {
        self.watches.lock().clone()
    }
}

/// A [`ListerWatcher`] in front of the REST client's that records each request, may ask for
/// shorter watches, and may hold watches back until the test opens them.
struct Probe<L> {
    inner: L,
    requests: Arc<Requests>,
}

impl<T, L> ListerWatcher<T> for Probe<L>
where
    T: Send + Sync + 'static,
    L: ListerWatcher<T>,
{
    async fn list(&self, options: &ListParams) -> Result<ObjectList<T>, ListWatchError> {
        self.requests.lists.lock().push(options.clone());
        self.inner.list(options).await
    }

    async fn watch(&self, options: &WatchParams) -> Result<Watch<T>, ListWatchError> {
        let mut options = options.clone();
        if let Some(timeout) = self.requests.watch_timeout {
            options.timeout_seconds = Some(timeout);
        }
        self.requests.watches.lock().push(options.clone());
        let mut open = self.requests.open.subscribe();
        // The sender lives in `self.requests`: the wait ends only when the test opens it.
        let _ = open.wait_for(|open| *open).await;
        self.inner.watch(&options).await
    }

    fn supports_watch_list(&self) -> bool {
        self.inner.supports_watch_list()
    }
}

/// An informer of `resource` in `namespace` behind a [`Probe`], reporting to a registry of
/// its own.
struct Probed {
    informer: SharedIndexInformer<DynamicObject>,
    requests: Arc<Requests>,
    registry: Registry,
    cancel: CancellationToken,
    task: JoinHandle<()>,
}

impl Probed {
    fn start(
        lister_watcher: ListWatch<DynamicObject>,
        requests: Arc<Requests>,
        reflector: ReflectorOptions,
    ) -> Probed {
        let mut registry = Registry::default();
        let metrics = InformerMetrics::register(&mut registry);
        let informer = SharedIndexInformer::new(
            Probe {
                inner: lister_watcher,
                requests: requests.clone(),
            },
            Indexers::namespace(),
            SharedInformerOptions {
                name: "probed".into(),
                reflector,
                metrics: Some(metrics),
                ..SharedInformerOptions::default()
            },
        );
        let cancel = CancellationToken::new();
        let task = tokio::spawn({
            let (informer, cancel) = (informer.clone(), cancel.clone());
            async move { informer.run(cancel).await }
        });
        Probed {
            informer,
            requests,
            registry,
            cancel,
            task,
        }
    }

    async fn synced(&self) {
        wait_for_cache_sync(&[&self.informer], WAIT)
            .await
            .expect("the informer syncs");
    }

    fn metric(&self, family: &str) -> f64 {
        sample(&self.registry, &format!(r#"{family}{{name="probed"}}"#))
    }

    fn reason(&self, family: &str, reason: &str) -> f64 {
        sample(
            &self.registry,
            &format!(r#"{family}{{name="probed",reason="{reason}"}}"#),
        )
    }

    async fn stop(self) {
        self.cancel.cancel();
        self.task.await.unwrap();
    }
}

/// The watch cache answers the reflector's first list (`resourceVersion=0`) in one piece
/// whatever its `limit`: paging happens where etcd serves the list, as for PodTemplates here.
#[tokio::test]
async fn an_initial_list_in_pages_of_50_caches_all_300_pod_templates() {
    let Some(Scene { api, .. }) = scene("paged", &pod_templates()) else {
        return;
    };
    let _shared = COMPACTION.read().await;
    let objects = (0..300)
        .map(|i| pod_template(&format!("pt-{i:03}")))
        .collect();
    create_all(&api, objects).await;

    let informer = Probed::start(
        ListWatch::new(api.clone()),
        Requests::new(None, true),
        ReflectorOptions {
            page_size: Some(50),
            use_watch_list: false,
            ..ReflectorOptions::default()
        },
    );
    informer.synced().await;

    let lists = informer.requests.lists();
    assert_eq!(lists.len(), 6, "six pages of 50: {lists:?}");
    assert!(lists.iter().all(|l| l.limit == Some(50)), "{lists:?}");
    assert_eq!(lists[0].continue_token, None);
    assert!(
        lists[1..].iter().all(|l| l.continue_token.is_some()),
        "later pages continue the first: {lists:?}"
    );
    assert_eq!(informer.metric("reflector_lists_total"), 1.0, "one LIST");
    assert_eq!(informer.informer.indexer().len(), 300);
    assert_eq!(cached(&informer.informer), served(&api).await);
    informer.stop().await;
}

#[tokio::test]
async fn the_initial_sync_is_a_streaming_list_on_a_server_that_serves_it() {
    let Some(Scene { api, .. }) = scene("streamed", &config_maps()) else {
        return;
    };
    let _shared = COMPACTION.read().await;
    let objects = (0..40)
        .map(|i| config_map(&format!("cm-{i:02}"), "web"))
        .collect();
    let newest = create_all(&api, objects).await;

    // The reflector's defaults: streaming lists on.
    let informer = Probed::start(
        ListWatch::new(api.clone()),
        Requests::new(None, true),
        ReflectorOptions::default(),
    );
    informer.synced().await;

    assert_eq!(informer.requests.lists(), [], "no LIST request");
    let watches = informer.requests.watches();
    assert_eq!(watches.len(), 1, "{watches:?}");
    assert_eq!(watches[0].send_initial_events, Some(true));
    assert_eq!(
        watches[0].resource_version_match.as_deref(),
        Some(RESOURCE_VERSION_MATCH_NOT_OLDER_THAN)
    );
    assert!(watches[0].allow_watch_bookmarks);
    assert_eq!(informer.metric("reflector_watch_lists_total"), 1.0);
    assert_eq!(informer.metric("reflector_lists_total"), 0.0);
    for reason in ["error", "timeout", "short_watch", "undecodable"] {
        assert_eq!(
            informer.reason("reflector_watch_list_fallbacks_total", reason),
            0.0,
            "no fallback ({reason})"
        );
    }
    assert_eq!(informer.informer.indexer().len(), 40);
    assert_eq!(cached(&informer.informer), served(&api).await);
    // The closing bookmark carries a version at least as new as every write.
    informer
        .informer
        .indexer()
        .wait_for_resource_version(&newest, Duration::ZERO)
        .await
        .expect("synced at or past the last write");
    informer.stop().await;
}

#[tokio::test]
async fn a_rewatch_from_a_compacted_resource_version_meets_410_and_the_relist_is_consistent() {
    let Some(Scene {
        cp, namespace, api, ..
    }) = scene("compacted", &pod_templates())
    else {
        return;
    };
    let _exclusive = COMPACTION.write().await;
    let objects = (0..5).map(|i| pod_template(&format!("pt-{i}"))).collect();
    create_all(&api, objects).await;

    // LIST then WATCH, the watch held back until the history it would start from is gone.
    let informer = Probed::start(
        ListWatch::new(api.clone()),
        Requests::new(None, false),
        ReflectorOptions {
            use_watch_list: false,
            ..ReflectorOptions::default()
        },
    );
    informer.synced().await;
    let listed_at = informer.informer.last_sync_resource_version();
    eventually("the watch is requested", || {
        informer.requests.watches().len() == 1
    })
    .await;
    assert_eq!(
        informer.requests.watches()[0].resource_version.as_deref(),
        Some(listed_at.as_str())
    );

    // Changes the informer cannot hear of, then the history is compacted past them.
    merge(
        &api,
        "pt-0",
        json!({"metadata": {"labels": {"changed": "yes"}}}),
    )
    .await;
    api.delete("pt-1", &DeleteParams::default()).await.unwrap();
    let last_write = api
        .create(&pod_template("pt-new"), &PostParams::default())
        .await
        .unwrap()
        .resource_version()
        .to_owned();
    let compacted_at = cp.compact().unwrap();
    assert!(compacted_at >= last_write.parse::<u64>().unwrap());
    informer.requests.open.send_replace(true);

    // The watch from `listed_at` gets 410 Expired; only a relist reaches the last write.
    informer
        .informer
        .indexer()
        .wait_for_resource_version(&last_write, WAIT)
        .await
        .expect("the relist reaches the last write");
    assert_eq!(
        informer.reason("reflector_relists_total", "expired"),
        1.0,
        "one relist, for an expired resourceVersion"
    );
    let lists = informer.requests.lists();
    assert!(lists.len() >= 2, "{lists:?}");
    assert_eq!(
        lists[1].resource_version.as_deref(),
        Some(listed_at.as_str()),
        "the relist starts at the last resourceVersion: {lists:?}"
    );
    assert_eq!(cached(&informer.informer), served(&api).await);
    let store = informer.informer.indexer();
    assert!(store.get_by_key(&format!("{namespace}/pt-1")).is_none());
    let changed = store.get_by_key(&format!("{namespace}/pt-0")).unwrap();
    assert_eq!(changed.labels().get("changed"), Some("yes"));
    informer.stop().await;
}

#[tokio::test]
async fn bookmarks_advance_the_cache_past_a_write_its_selector_filters_out() {
    let Some(Scene { namespace, api, .. }) = scene("bookmarks", &config_maps()) else {
        return;
    };
    let _shared = COMPACTION.read().await;
    create_all(&api, vec![config_map("web", "web")]).await;

    // kube-apiserver sends each watch a bookmark every minute, and 2 s before the watch's
    // deadline: watches of 5 s get one 3 s into each.
    let informer = Probed::start(
        ListWatch::new(api.clone()).with_label_selector("app=web"),
        Requests::new(Some(5), true),
        ReflectorOptions {
            use_watch_list: false,
            ..ReflectorOptions::default()
        },
    );
    informer.synced().await;
    let lists = informer.requests.lists().len();
    let synced_at = informer.informer.indexer().last_resource_version();

    let other = api
        .create(&config_map("other", "other"), &PostParams::default())
        .await
        .unwrap();
    let written = other.resource_version().to_owned();
    assert_ne!(synced_at, written);
    informer
        .informer
        .indexer()
        .wait_for_resource_version(&written, WAIT)
        .await
        .expect("a bookmark reaches the write");

    let store = informer.informer.indexer();
    assert_eq!(store.list_keys(), [format!("{namespace}/web")]);
    assert_eq!(
        informer.requests.lists().len(),
        lists,
        "no relist: only a bookmark moved the cache"
    );
    informer.stop().await;
}

#[tokio::test]
async fn a_metadata_only_informer_syncs_and_follows_changes() {
    let Some(Scene {
        namespace,
        client,
        api,
        ..
    }) = scene("metadata", &config_maps())
    else {
        return;
    };
    let _shared = COMPACTION.read().await;
    create_all(&api, vec![config_map("a", "web"), config_map("b", "web")]).await;

    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.as_str())
        .build();
    let informer = factory.metadata_informer(&config_maps());
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.expect("synced");
    let only_metadata = |object: &PartialObjectMetadata| {
        assert!(object.is_partial(), "{object:?}");
        let json = serde_json::to_value(object).unwrap();
        assert_eq!(json["kind"], "PartialObjectMetadata");
        assert_eq!(json["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(json.get("data"), None, "{json}");
        assert!(!json.to_string().contains("hunter2"));
    };
    let store = informer.indexer().clone();
    store.list().iter().for_each(|o| only_metadata(o));
    assert_eq!(cached(&informer), served(&api).await);

    // A label change, a deletion and a creation, then a marker write: events arrive in
    // order, so once the cache reaches the marker it has seen all three.
    merge(&api, "a", json!({"metadata": {"labels": {"app": "api"}}})).await;
    api.delete("b", &DeleteParams::default()).await.unwrap();
    create_all(&api, vec![config_map("c", "web")]).await;
    let marked = merge(
        &api,
        "c",
        json!({"metadata": {"annotations": {"marker": "1"}}}),
    )
    .await;
    store
        .wait_for_resource_version(marked.resource_version(), WAIT)
        .await
        .expect("the cache reaches the marker");

    assert_eq!(cached(&informer), served(&api).await);
    let a = store.get_by_key(&format!("{namespace}/a")).unwrap();
    assert_eq!(a.labels().get("app"), Some("api"));
    assert!(store.get_by_key(&format!("{namespace}/b")).is_none());
    let c = store.get_by_key(&format!("{namespace}/c")).unwrap();
    assert_eq!(c.annotations().get("marker"), Some("1"));
    store.list().iter().for_each(|o| only_metadata(o));
    cancel.cancel();
    factory.shutdown().await;
}

#[tokio::test]
async fn a_write_is_in_the_cache_once_the_cache_reaches_its_resource_version() {
    let Some(Scene {
        namespace,
        client,
        api,
        ..
    }) = scene("ryw", &config_maps())
    else {
        return;
    };
    let _shared = COMPACTION.read().await;
    create_all(&api, vec![config_map("settings", "web")]).await;

    let factory = SharedInformerFactory::builder(&client)
        .namespace(namespace.as_str())
        .build();
    let informer = factory.dynamic_informer(&config_maps());
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.expect("synced");

    let key = format!("{namespace}/settings");
    for round in 0..5 {
        let written = merge(
            &api,
            "settings",
            json!({"data": {"round": round.to_string()}}),
        )
        .await;
        informer
            .indexer()
            .wait_for_resource_version(written.resource_version(), WAIT)
            .await
            .expect("the cache reaches the write");
        let cached = informer.indexer().get_by_key(&key).unwrap();
        assert_eq!(cached.resource_version(), written.resource_version());
        assert_eq!(cached.data["data"]["round"], Value::from(round.to_string()));
    }
    cancel.cancel();
    factory.shutdown().await;
}
