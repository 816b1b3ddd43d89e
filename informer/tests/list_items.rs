//! Informers fed lists whose items carry no `apiVersion`/`kind`, as kube-apiserver writes
//! built-in types' lists (observed on kube-apiserver 1.36.2; apiserver-sim writes them so):
//! typed objects and the lean `Compact<K>`, through LIST + WATCH and through the streaming
//! list (watch events carry both, list items neither), hold every object and read it whole.

mod cache_support;

use std::time::Duration;

use cache_support::{ConfigMap, eventually};
use clientgo_apimachinery::{Compact, Object, Resource};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{
    Indexers, ListWatch, SharedIndexInformer, SharedInformerOptions, wait_for_cache_sync,
};
use clientgo_rest::config::Config;
use clientgo_rest::{ResourceClient, RestClient};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(60);

fn config_map(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"}, "data": {"k": name}})
}

async fn start_sim() -> (ApiServerSim, RestClient) {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    // The premise: the sim lists ConfigMaps without their type, as kube-apiserver does.
    let raw: Value = client
        .get()
        .abs_path("/api/v1/namespaces/default/configmaps")
        .send()
        .await
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(raw["kind"], "ConfigMapList");
    (sim, client)
}

/// Runs an informer of `T` (streaming list or not) over a ConfigMap created before it starts
/// and one created after; returns its cache's objects once both are there.
async fn cached<T>(watch_list: bool) -> Vec<std::sync::Arc<T>>
where
    T: Object + Resource + DeserializeOwned + Send + Sync + 'static,
{
    let (sim, client) = start_sim().await;
    sim.create("", "v1", "configmaps", "default", config_map("before"))
        .unwrap();
    let mut options = SharedInformerOptions::default();
    options.reflector.use_watch_list = watch_list;
    let informer: SharedIndexInformer<T> = SharedIndexInformer::new(
        ListWatch::new(ResourceClient::<T>::all(&client)),
        Indexers::namespace(),
        options,
    );
    let cancel = CancellationToken::new();
    let task = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    wait_for_cache_sync(&[&informer], WAIT).await.unwrap();
    sim.create("", "v1", "configmaps", "default", config_map("after"))
        .unwrap();
    eventually("the second ConfigMap through the watch", WAIT, || {
        informer.indexer().len() == 2
    })
    .await;
    let mut objects = informer.indexer().list();
    objects.sort_by_key(|o| o.key());
    cancel.cancel();
    task.await.unwrap();
    objects
}

#[tokio::test(start_paused = true)]
async fn typed_informers_read_untyped_list_items() {
    for watch_list in [false, true] {
        let objects = cached::<ConfigMap>(watch_list).await;
        let data: Vec<(String, &str)> = objects
            .iter()
            .map(|c| (c.key(), c.data["k"].as_str()))
            .collect();
        assert_eq!(
            data,
            [
                ("default/after".to_owned(), "after"),
                ("default/before".to_owned(), "before")
            ],
            "watch list: {watch_list}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn compact_informers_read_untyped_list_items() {
    for watch_list in [false, true] {
        let objects = cached::<Compact<ConfigMap>>(watch_list).await;
        for object in &objects {
            let typed: ConfigMap = object.to_typed().unwrap();
            assert_eq!(typed.data["k"], object.name(), "watch list: {watch_list}");
            // The whole text names the type, from `K`, wherever the item came from.
            let whole: Value = serde_json::from_str(&object.to_json()).unwrap();
            assert_eq!(
                (&whole["apiVersion"], &whole["kind"]),
                (&json!("v1"), &json!("ConfigMap"))
            );
        }
        assert_eq!(objects.len(), 2);
    }
}
