//! `--priority-queue`: after a start, a real change to one Foo is handed out before the
//! backlog of the initial list; with client-go's FIFO queue it waits behind all of it. The
//! controller runs its informers but no workers: the test takes the keys itself. Paused clock.

mod support;

use std::sync::Arc;

use clientgo_apimachinery::Compact;
use clientgo_informer::{Indexers, ListWatch, SharedIndexInformer, SharedInformerOptions};
use clientgo_record::{EventBroadcaster, EventSource};
use clientgo_rest::{PostParams, ResourceClient};
use clientgo_sample_controller::controller::Controller;
use clientgo_sample_controller::foo::Foo;
use clientgo_workqueue::{PrometheusMetricsProvider, QueueConfig};
use k8s_openapi::api::apps::v1::Deployment;
use prometheus_client::registry::Registry;
use support::{Cluster, eventually, metric};
use tokio_util::sync::CancellationToken;

const BACKLOG: usize = 50;

/// Starts a controller on `BACKLOG` existing Foos, changes `foo-42` once the caches have
/// synced, and returns the first key the queue hands out.
async fn first_key_after_a_change(priority_queue: bool) -> String {
    let cluster = Cluster::start().await;
    for i in 0..BACKLOG {
        cluster
            .create_foo(&format!("foo-{i}"), &format!("deploy-{i}"), 1)
            .await;
    }
    let foos: SharedIndexInformer<Foo> = SharedIndexInformer::new(
        ListWatch::new(ResourceClient::<Foo>::namespaced(
            &cluster.client,
            "default",
        )),
        Indexers::default(),
        SharedInformerOptions::default(),
    );
    let deployments: SharedIndexInformer<Compact<Deployment>> = SharedIndexInformer::new(
        ListWatch::new(ResourceClient::<Compact<Deployment>>::namespaced(
            &cluster.client,
            "default",
        )),
        Indexers::default(),
        SharedInformerOptions::default(),
    );
    let mut registry = Registry::default();
    let controller: Arc<Controller> = Controller::new(
        cluster.client.clone(),
        foos.clone(),
        deployments.clone(),
        EventBroadcaster::new().new_recorder(EventSource::component("test")),
        QueueConfig::named("Foos")
            .with_metrics_provider(Arc::new(PrometheusMetricsProvider::new(&mut registry))),
        priority_queue,
    )
    .unwrap();
    assert_eq!(controller.queue().is_priority(), priority_queue);
    let stop = CancellationToken::new();
    tokio::spawn({
        let (foos, stop) = (foos.clone(), stop.clone());
        async move { foos.run(stop).await }
    });
    tokio::spawn({
        let (deployments, stop) = (deployments.clone(), stop.clone());
        async move { deployments.run(stop).await }
    });
    eventually("the initial list queued", || async {
        (controller.queue().len() == BACKLOG).then_some(())
    })
    .await;

    // A user scales foo-42.
    let mut foo = cluster.foo("foo-42").await.unwrap();
    foo.spec.replicas = Some(3);
    let changed = cluster
        .foos
        .update("foo-42", &foo, &PostParams::default())
        .await
        .unwrap();
    eventually("the change in the cache", || async {
        let cached = foos.lister().namespace("default").get("foo-42")?;
        (cached.metadata.resource_version == changed.metadata.resource_version).then_some(())
    })
    .await;
    // The handlers run after the cache is updated: wait until the change is on the queue.
    if priority_queue {
        let normal = r#"workqueue_depth_by_priority{name="Foos",priority="0"}"#;
        eventually("the change queued at normal priority", || async {
            (metric(&registry, normal) == Some(1.0)).then_some(())
        })
        .await;
    }

    let first = controller.queue().get().await.expect("a key");
    let key = first.item().to_string();
    first.done();
    stop.cancel();
    key
}

#[tokio::test(start_paused = true)]
async fn with_the_priority_queue_a_real_change_passes_the_initial_list() {
    assert_eq!(first_key_after_a_change(true).await, "default/foo-42");
}

#[tokio::test(start_paused = true)]
async fn with_the_fifo_queue_a_real_change_waits_behind_the_initial_list() {
    assert_ne!(first_key_after_a_change(false).await, "default/foo-42");
}
