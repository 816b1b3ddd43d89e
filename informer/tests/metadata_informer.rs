//! Metadata-only informers against apiserver-sim over HTTP (client-go's `metadatainformer`):
//! the server reduces every listed and watched ConfigMap to `PartialObjectMetadata`, the
//! cache holds only metadata, and adds, updates and deletes reach the handlers. Also the
//! metadata REST client underneath.

mod cache_support;

use std::sync::Arc;
use std::time::Duration;

use cache_support::{config_maps, eventually};
use clientgo_apimachinery::{DynamicObject, Object, PartialObjectMetadata};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{
    DeleteEvent, Indexers, ListWatch, ResourceEventHandler, SharedIndexInformer,
    SharedInformerFactory, SharedInformerOptions, wait_for_cache_sync,
};
use clientgo_rest::config::Config;
use clientgo_rest::{
    DeleteParams, DynamicClient, GetParams, ListParams, MetadataClient, PatchParams, PatchType,
    PostParams, RestClient,
};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(60);

async fn start_sim() -> (ApiServerSim, RestClient) {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    (sim, client)
}

fn config_map(name: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"}},
        "data": {"password": "hunter2"},
    })
}

/// What the handler saw, as `verb key labels`.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl Seen {
    fn push(&self, verb: &str, object: &PartialObjectMetadata) {
        let labels: Vec<String> = object
            .labels()
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        self.0
            .lock()
            .push(format!("{verb} {} {}", object.key(), labels.join(",")));
    }
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.0.lock())
    }
    fn len(&self) -> usize {
        self.0.lock().len()
    }
}

impl ResourceEventHandler<PartialObjectMetadata> for Seen {
    fn on_add(&self, object: &Arc<PartialObjectMetadata>, _initial: bool) {
        self.push("add", object);
    }
    fn on_update(&self, _old: &Arc<PartialObjectMetadata>, new: &Arc<PartialObjectMetadata>) {
        self.push("update", new);
    }
    fn on_delete(&self, event: DeleteEvent<PartialObjectMetadata>) {
        match event.object() {
            Some(object) => self.push("delete", object),
            None => self
                .0
                .lock()
                .push(format!("delete {} (tombstone)", event.key())),
        }
    }
}

/// Asserts the cached object is what the server reduced: typed `meta.k8s.io/v1`
/// `PartialObjectMetadata`, and nothing but metadata when written back out.
fn assert_only_metadata(object: &PartialObjectMetadata) {
    assert!(object.is_partial(), "{object:?}");
    assert_eq!(object.types.api_version, "meta.k8s.io/v1");
    assert_eq!(object.types.kind, "PartialObjectMetadata");
    let json = serde_json::to_value(object).unwrap();
    let keys: Vec<&String> = json.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["apiVersion", "kind", "metadata"]);
    assert!(!json.to_string().contains("hunter2"));
}

#[tokio::test(start_paused = true)]
async fn a_metadata_informer_syncs_and_follows_changes_with_metadata_only() {
    let (sim, client) = start_sim().await;
    for name in ["a", "b"] {
        sim.create("", "v1", "configmaps", "default", config_map(name))
            .unwrap();
    }
    let factory = SharedInformerFactory::new(&client, Duration::ZERO);
    let informer = factory.metadata_informer(&config_maps());
    let seen = Seen::default();
    let registration = informer.add_event_handler(seen.clone()).unwrap();
    let cancel = CancellationToken::new();
    factory.start(&cancel);
    factory.wait_for_cache_sync(WAIT).await.unwrap();
    wait_for_cache_sync(&[&registration], WAIT).await.unwrap();
    let mut initial = seen.take();
    initial.sort();
    assert_eq!(initial, ["add default/a app=web", "add default/b app=web"]);
    for object in informer.indexer().list() {
        assert_only_metadata(&object);
        assert!(!object.uid().is_empty() && !object.resource_version().is_empty());
    }

    // Add, update (labels and data), delete: each arrives, reduced.
    let api = DynamicClient::from_api_resource(&client, &config_maps(), Some("default"));
    let c: DynamicObject = serde_json::from_value(config_map("c")).unwrap();
    api.create(&c, &PostParams::default()).await.unwrap();
    let patch = json!({"metadata": {"labels": {"tier": "front"}}, "data": {"password": "x"}});
    api.patch("a", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    eventually("three changes", WAIT, || seen.len() == 3).await;
    assert_eq!(
        seen.take(),
        [
            "add default/c app=web",
            "update default/a app=web,tier=front",
            "delete default/b app=web",
        ]
    );
    let lister = informer.lister();
    let a = lister.namespace("default").get("a").unwrap();
    assert_only_metadata(&a);
    assert_eq!(a.labels().get("tier"), Some("front"));
    assert!(lister.namespace("default").get("b").is_none());
    assert_only_metadata(&lister.namespace("default").get("c").unwrap());
    assert_eq!(
        informer.indexer().len(),
        2,
        "{:?}",
        informer.indexer().list()
    );

    cancel.cancel();
    factory.shutdown().await;
    assert!(informer.is_stopped());
}

#[tokio::test(start_paused = true)]
async fn a_metadata_informer_without_the_factory_and_without_watch_lists() {
    // LIST + WATCH (no streaming list): the list answer is a PartialObjectMetadataList.
    let (sim, client) = start_sim().await;
    sim.create("", "v1", "configmaps", "default", config_map("a"))
        .unwrap();
    let metadata = MetadataClient::metadata(&client, &config_maps(), None);
    let mut options = SharedInformerOptions::default();
    options.reflector.use_watch_list = false;
    let informer: SharedIndexInformer<PartialObjectMetadata> =
        SharedIndexInformer::new(ListWatch::new(metadata), Indexers::namespace(), options);
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    wait_for_cache_sync(&[&informer], WAIT).await.unwrap();
    assert_eq!(informer.indexer().len(), 1);
    assert_only_metadata(&informer.indexer().list()[0]);
    sim.create("", "v1", "configmaps", "default", config_map("b"))
        .unwrap();
    eventually("b through the watch", WAIT, || {
        informer.indexer().len() == 2
    })
    .await;
    for object in informer.indexer().list() {
        assert_only_metadata(&object);
    }
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn the_metadata_client_reads_patches_and_refuses_whole_object_writes() {
    let (sim, client) = start_sim().await;
    sim.create("", "v1", "configmaps", "default", config_map("a"))
        .unwrap();
    let metadata = MetadataClient::metadata(&client, &config_maps(), Some("default"));
    assert!(metadata.is_metadata_only());

    let a = metadata.get("a", &GetParams::default()).await.unwrap();
    assert_only_metadata(&a);
    assert_eq!(a.labels().get("app"), Some("web"));
    let list = metadata.list(&ListParams::default()).await.unwrap();
    assert_eq!(list.kind, "PartialObjectMetadataList");
    assert_eq!(list.api_version, "meta.k8s.io/v1");
    assert!(!list.resource_version().is_empty());
    assert_eq!(list.items.len(), 1);
    assert_only_metadata(&list.items[0]);
    let missing = metadata
        .get("nope", &GetParams::default())
        .await
        .unwrap_err();
    assert!(missing.is_not_found(), "{missing}");

    // A patch changes the object and answers with its metadata; the data stays.
    let patch = json!({"metadata": {"labels": {"patched": "yes"}}});
    let patched = metadata
        .patch("a", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(patched.labels().get("patched"), Some("yes"));
    let whole = DynamicClient::from_api_resource(&client, &config_maps(), Some("default"))
        .get("a", &GetParams::default())
        .await
        .unwrap();
    assert_eq!(whole.data["data"]["password"], "hunter2");

    // Creating or replacing from metadata alone would wipe the data: refused, unsent.
    let error = metadata
        .update("a", &patched, &PostParams::default())
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("metadata client cannot update"),
        "{error}"
    );
    let error = metadata
        .create(&PartialObjectMetadata::default(), &PostParams::default())
        .await
        .unwrap_err();
    assert!(error.to_string().contains("cannot create"), "{error}");
    let whole = DynamicClient::from_api_resource(&client, &config_maps(), Some("default"))
        .get("a", &GetParams::default())
        .await
        .unwrap();
    assert_eq!(whole.data["data"]["password"], "hunter2");
    assert_eq!(patched.name(), "a");
}
