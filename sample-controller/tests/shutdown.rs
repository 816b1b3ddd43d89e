//! Shutdown against apiserver-sim, on tokio's paused clock: cancelling lets the reconcile in
//! flight finish, starts no new one, and only then returns.

mod support;

use std::time::Duration;

use clientgo_apimachinery::Object;
use clientgo_sample_controller::app::Options;
use clientgo_sample_controller::finalizer::FINALIZER;
use clientgo_sample_controller::foo::Foo;
use support::{CONTROLLER_AGENT, Cluster, eventually, options};

/// Creates a Foo directly in the sim's store: no HTTP request, so no added latency.
fn seed(cluster: &Cluster, name: &str) {
    let foo = serde_json::to_value(Foo::new("default", name, name, 1)).unwrap();
    cluster
        .sim
        .create(
            "samplecontroller.k8s.io",
            "v1alpha1",
            "foos",
            "default",
            foo,
        )
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn cancelling_finishes_the_reconcile_in_flight_and_starts_no_new_one() {
    let cluster = Cluster::start().await;
    let running = cluster.launch(
        CONTROLLER_AGENT,
        Options {
            workers: 1,
            ..options()
        },
        None,
    );
    eventually("the caches to sync", || async {
        running.ready().then_some(())
    })
    .await;

    // Every request now takes 5 s: a reconcile (several requests) stays in flight a while.
    cluster.sim.faults().set_latency(Duration::from_secs(5));
    seed(&cluster, "first");
    let stats = running.controller.stats();
    eventually("first's reconcile to start", || async {
        (stats.active.get() == 1).then_some(())
    })
    .await;
    // The only worker is busy: second waits in line.
    seed(&cluster, "second");
    eventually("second to be queued", || async {
        (running.controller.queue().len() == 1).then_some(())
    })
    .await;

    let controller = running.stop().await;
    cluster.sim.faults().clear();

    // first's reconcile ran to its end before `run` returned...
    assert_eq!(controller.stats().active.get(), 0);
    assert_eq!(controller.stats().synced.get(), 1);
    assert_eq!(controller.stats().failed.get(), 0);
    let first = cluster.foo("first").await.unwrap();
    assert_eq!(first.finalizers(), [FINALIZER]);
    assert_eq!(first.condition("Ready").unwrap().status, "False");
    assert!(
        cluster
            .deployments
            .get("first", &Default::default())
            .await
            .is_ok()
    );
    assert_eq!(cluster.record("first").await.as_deref(), Some("first"));

    // ... and second's never started: no write names it, and it has no Deployment.
    let second = cluster.foo("second").await.unwrap();
    assert!(second.finalizers().is_empty());
    assert!(second.condition("Ready").is_none());
    let writes = cluster.writes_since(CONTROLLER_AGENT, 0);
    assert!(
        writes.iter().all(|r| r.name.as_deref() != Some("second")),
        "{writes:#?}"
    );
    assert!(
        cluster
            .deployments
            .get("second", &Default::default())
            .await
            .unwrap_err()
            .is_not_found()
    );
}
