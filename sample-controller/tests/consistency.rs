//! The consistency rules, observed at the API server (apiserver-sim's request log) on tokio's
//! paused clock: a status computed from a stale cache conflicts and is retried through the
//! rate-limited queue, and a converged controller writes nothing on resyncs or no-op events.

mod support;

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{Compact, Object, ObjectKey};

use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch, WatchFault};
use clientgo_informer::{Indexers, ListWatch, SharedIndexInformer, SharedInformerOptions};
use clientgo_record::{EventBroadcaster, EventSource};
use clientgo_rest::{PatchParams, PatchType, ResourceClient, RestClient};
use clientgo_sample_controller::controller::Controller;
use clientgo_sample_controller::finalizer::FINALIZER;
use clientgo_sample_controller::foo::Foo;
use clientgo_workqueue::QueueConfig;
use prometheus_client::registry::Registry;
use support::{CONTROLLER_AGENT, Cluster, eventually, metric, options};
use tokio_util::sync::CancellationToken;

fn informer<T>(client: &RestClient) -> SharedIndexInformer<T>
where
    T: clientgo_apimachinery::Resource
        + clientgo_apimachinery::Object
        + serde::de::DeserializeOwned
        + Send
        + Sync
        + 'static,
{
    SharedIndexInformer::new(
        ListWatch::new(ResourceClient::<T>::namespaced(client, "default")),
        Indexers::default(),
        SharedInformerOptions::default(),
    )
}

/// Read-your-writes. The controller runs its informers but no workers: the test calls
/// `reconcile` itself.
#[tokio::test(start_paused = true)]
async fn a_reconcile_returns_once_the_cache_shows_its_writes() {
    let cluster = Cluster::start().await;
    let client = cluster.client_as(CONTROLLER_AGENT);
    let (foos, deployments) = (informer::<Foo>(&client), informer::<Compact<_>>(&client));
    let recorder = EventBroadcaster::new().new_recorder(EventSource::component("test"));
    let controller: Arc<Controller> = Controller::new(
        client,
        foos.clone(),
        deployments.clone(),
        recorder,
        QueueConfig::default(),
        false,
    )
    .unwrap();
    let stop = CancellationToken::new();
    tokio::spawn({
        let (foos, stop) = (foos.clone(), stop.clone());
        async move { foos.run(stop).await }
    });
    tokio::spawn({
        let (deployments, stop) = (deployments.clone(), stop.clone());
        async move { deployments.run(stop).await }
    });
    cluster.create_foo("web", "web", 1).await;
    eventually("the Foo in the cache", || async {
        foos.lister().namespace("default").get("web")
    })
    .await;
    eventually("the Deployment cache to sync", || async {
        deployments.has_synced().then_some(())
    })
    .await;

    // Stall both watches: the caches see nothing new until they are closed.
    assert_eq!(cluster.sim.faults().watches(WatchFault::Stall), 2);
    let mark = cluster.sim.requests().mark();
    let mut first = tokio::spawn({
        let controller = controller.clone();
        async move {
            controller
                .reconcile(&ObjectKey::new("default", "web"))
                .await
        }
    });
    let writes = eventually("the reconcile's writes", || async {
        let writes = cluster.writes_since(CONTROLLER_AGENT, mark);
        (writes.len() == 4).then_some(writes)
    })
    .await;
    let writes: Vec<(&str, &str)> = writes
        .iter()
        .map(|r| (r.verb.as_str(), r.resource.as_str()))
        .collect();
    assert_eq!(
        writes,
        [
            ("patch", "foos"), // the finalizer
            ("create", "deployments"),
            ("create", "configmaps"), // the record
            ("update", "foos"),       // the status
        ]
    );
    // Written, but not returned: it waits for the caches to show its writes.
    let waited = tokio::time::timeout(Duration::from_secs(5), &mut first).await;
    assert!(waited.is_err(), "returned before its writes were cached");

    // The watches end, the informers resume from where they were and catch up: the
    // reconcile returns, and the cache it leaves behind already has everything it wrote.
    cluster.sim.close_all_watches();
    first.await.unwrap().unwrap();
    let cached = foos.lister().namespace("default").get("web").unwrap();
    assert_eq!(cached.finalizers(), [FINALIZER]);
    assert!(cached.condition("Ready").is_some());
    assert!(
        deployments
            .lister()
            .namespace("default")
            .get("web")
            .is_some()
    );

    // So the next pass, straight away, finds nothing to do. (From a cache that missed the
    // writes, it would add the finalizer again with a stale resourceVersion: a conflict.)
    let mark = cluster.sim.requests().mark();
    controller
        .reconcile(&ObjectKey::new("default", "web"))
        .await
        .unwrap();
    assert_eq!(cluster.writes_since(CONTROLLER_AGENT, mark), []);
    stop.cancel();
}

#[tokio::test(start_paused = true)]
async fn a_status_written_from_a_stale_cache_conflicts_and_is_retried_with_backoff() {
    let cluster = Cluster::start().await;
    let mut registry = Registry::default();
    let running = cluster.launch(CONTROLLER_AGENT, options(), Some(&mut registry));
    cluster.create_foo("web", "web", 2).await;
    cluster.wait_ready("web", "False").await;

    // Cut the controller's Foo cache off from the server: its Foo watch ends, and every
    // attempt to list or watch Foos again fails. The Deployment cache stays live.
    let requests = cluster.sim.requests();
    for verb in ["list", "watch"] {
        cluster.sim.faults().fail_next(
            10_000,
            RequestMatch::new(verb, "foos"),
            InjectedError::InternalError,
        );
    }
    let mark = requests.mark();
    cluster.sim.close_all_watches();
    // Once the informer tries to list or watch again, its old watch has certainly ended.
    eventually("the Foo informer to reconnect", || async {
        requests
            .since(mark)
            .iter()
            .any(|r| r.user_agent == CONTROLLER_AGENT && r.resource == "foos" && !r.is_write())
            .then_some(())
    })
    .await;

    // Someone else changes the Foo: the cached copy is now stale.
    let label = serde_json::json!({"metadata": {"labels": {"team": "web"}}});
    cluster
        .foos
        .patch("web", PatchType::Merge, &label, &PatchParams::default())
        .await
        .unwrap();
    // A Deployment change enqueues the Foo; its new status is written with the stale
    // resourceVersion, and the API server refuses it: 409 Conflict.
    let failed_before = running.controller.stats().failed.get();
    let status_writes_before = requests.count("update", "foos");
    cluster.make_available("web").await;
    eventually("a failed status write", || async {
        (running.controller.stats().failed.get() > failed_before).then_some(())
    })
    .await;
    let foo = cluster.foo("web").await.unwrap();
    assert_eq!(
        foo.condition("Ready").unwrap().status,
        "False",
        "not written"
    );
    assert!(requests.count("update", "foos") > status_writes_before);

    // The cache catches up; the retry computes the status from the current Foo and lands.
    cluster.sim.faults().clear();
    let foo = cluster.wait_ready("web", "True").await;
    assert_eq!(foo.status.available_replicas, 2);
    assert_eq!(
        foo.metadata.labels.get("team").map(String::as_str),
        Some("web")
    );
    let retries = metric(&registry, r#"workqueue_retries_total{name="Foos"}"#).unwrap_or(0.0);
    assert!(
        retries >= 1.0,
        "the failure went back through the rate-limited queue"
    );
    let controller = running.stop().await;
    assert_eq!(controller.stats().panicked.get(), 0);
}

#[tokio::test(start_paused = true)]
async fn once_converged_resyncs_and_no_op_events_write_nothing() {
    let cluster = Cluster::start().await;
    let running = cluster.launch(CONTROLLER_AGENT, options(), None);
    cluster.create_foo("web", "web", 1).await;
    eventually("the deployment", || async {
        cluster
            .deployments
            .get("web", &Default::default())
            .await
            .ok()
    })
    .await;
    cluster.make_available("web").await;
    cluster.wait_ready("web", "True").await;
    eventually("the record", || cluster.record("web")).await;

    // Resyncs (every 10 s) re-deliver the cached Foo: each is a full reconcile...
    let stats = running.controller.stats();
    let mark = cluster.sim.requests().mark();
    let synced = stats.synced.get();
    eventually("three more reconciles", || async {
        (stats.synced.get() >= synced + 3).then_some(())
    })
    .await;
    // ... that finds nothing to change, and so writes nothing.
    assert_eq!(cluster.writes_since(CONTROLLER_AGENT, mark), []);

    // An event that changes nothing the controller cares about: same outcome.
    let mark = cluster.sim.requests().mark();
    let note = serde_json::json!({"metadata": {"annotations": {"note": "hello"}}});
    cluster
        .foos
        .patch("web", PatchType::Merge, &note, &PatchParams::default())
        .await
        .unwrap();
    eventually("a reconcile after the event", || async {
        // Every reconcile of a live Foo checks its record.
        cluster
            .sim
            .requests()
            .since(mark)
            .iter()
            .any(|r| r.user_agent == CONTROLLER_AGENT && r.resource == "configmaps")
            .then_some(())
    })
    .await;
    assert_eq!(cluster.writes_since(CONTROLLER_AGENT, mark), []);
    let controller = running.stop().await;
    assert_eq!(
        controller.stats().failed.get(),
        0,
        "no conflicts, no retries"
    );
}
