//! An informer over the REST client against apiserver-sim: initial sync through paginated
//! lists, watch events, and convergence after the history is compacted under it.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, Object};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{
    Indexers, ListWatch, ResourceEventHandlerFuncs, SharedIndexInformer, SharedInformerOptions,
    wait_for_cache_sync,
};
use clientgo_rest::config::Config;
use clientgo_rest::{DeleteParams, DynamicClient, ListParams, PatchParams, PatchType, RestClient};
use parking_lot::Mutex;
use serde_json::json;
use tokio_util::sync::CancellationToken;

fn config_maps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}

/// The informer's cache as sorted `key@resourceVersion` lines.
fn cached(informer: &SharedIndexInformer<DynamicObject>) -> Vec<String> {
    let mut lines: Vec<String> = informer
        .indexer()
        .list()
        .iter()
        .map(|o| format!("{}@{}", o.key(), o.resource_version()))
        .collect();
    lines.sort();
    lines
}

/// The server's state, the same way.
async fn served(client: &DynamicClient) -> Vec<String> {
    let list = client.list(&ListParams::default()).await.unwrap();
    let mut lines: Vec<String> = list
        .items
        .iter()
        .map(|o| format!("{}@{}", o.key(), o.resource_version()))
        .collect();
    lines.sort();
    lines
}

async fn converge(informer: &SharedIndexInformer<DynamicObject>, client: &DynamicClient) {
    for _ in 0..600 {
        if cached(informer) == served(client).await {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the cache did not converge to the server's state");
}

#[tokio::test(start_paused = true)]
async fn syncs_follows_and_survives_compaction() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    for i in 0..1_200 {
        sim.create(
            "",
            "v1",
            "configmaps",
            "default",
            json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": format!("cm-{i}"), "namespace": "default"},
                "data": {"k": "v0"},
            }),
        )
        .unwrap();
    }
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    let api = DynamicClient::from_api_resource(&client, &config_maps(), Some("default"));
    let informer = SharedIndexInformer::new(
        ListWatch::new(api.clone()),
        Indexers::default(),
        SharedInformerOptions {
            name: "configmaps".into(),
            ..SharedInformerOptions::default()
        },
    );
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let log = seen.clone();
    let _registration = informer
        .add_event_handler(ResourceEventHandlerFuncs::new().update_func(
            move |_old: &Arc<DynamicObject>, new: &Arc<DynamicObject>| {
                log.lock().push(new.key());
            },
        ))
        .unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    wait_for_cache_sync(&[&informer], Duration::from_secs(60))
        .await
        .unwrap();
    assert_eq!(
        informer.indexer().list().len(),
        1_200,
        "initial list over three pages"
    );
    converge(&informer, &api).await;

    // Changes arrive through the watch.
    let patch = json!({"data": {"k": "v1"}});
    api.patch("cm-7", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    api.delete("cm-8", &DeleteParams::default()).await.unwrap();
    converge(&informer, &api).await;
    assert!(seen.lock().iter().any(|k| k == "default/cm-7"));

    // The history is compacted and every watch cut: the informer re-lists and converges,
    // changes made meanwhile included.
    sim.compact();
    sim.close_all_watches();
    api.patch("cm-9", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    api.delete("cm-10", &DeleteParams::default()).await.unwrap();
    converge(&informer, &api).await;
    assert_eq!(informer.indexer().list().len(), 1_198);

    cancel.cancel();
    run.await.unwrap();
}
