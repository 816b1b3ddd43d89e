//! Shutdown against apiserver-sim, on tokio's paused clock: cancelling lets the reconcile in
//! flight finish, starts no new one, and only then returns; but it waits for it no longer than
//! the drain timeout.

mod support;

use std::time::Duration;

use clientgo_apimachinery::Object;
use clientgo_apiserver_sim::faults::RequestMatch;
use clientgo_sample_controller::app::{DEFAULT_DRAIN_TIMEOUT, Options};
use clientgo_sample_controller::finalizer::FINALIZER;
use support::{CONTROLLER_AGENT, Cluster, eventually, options};

#[tokio::test(start_paused = true)]
async fn cancelling_finishes_the_reconcile_in_flight_and_starts_no_new_one() {
    let cluster = Cluster::start().await;
    let running = cluster.launch(
        CONTROLLER_AGENT,
        Options {
            workers: 1,
            // Longer than the reconcile takes with 5 s per request.
            drain_timeout: Duration::from_secs(120),
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
    cluster.seed_foo("first");
    let stats = running.controller.stats();
    eventually("first's reconcile to start", || async {
        (stats.active.get() == 1).then_some(())
    })
    .await;
    // The only worker is busy: second waits in line.
    cluster.seed_foo("second");
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

/// The rule: the shutdown drain is bounded. A reconcile stuck in a write the server holds for
/// ten minutes is cancelled once the drain timeout has passed: `run` returns, the reconcile
/// is counted as cancelled, and its write is never handled.
#[tokio::test(start_paused = true)]
async fn the_shutdown_drain_is_bounded() {
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
    let faults = cluster.sim.faults();
    faults.delay_next(
        1,
        RequestMatch::new("create", "deployments"),
        Duration::from_secs(600),
    );
    cluster.seed_foo("stuck");
    let stats = running.controller.stats();
    eventually("the reconcile to be in the held write", || async {
        (faults.delayed() == 1 && stats.active.get() == 1).then_some(())
    })
    .await;

    let cancelled = tokio::time::Instant::now();
    let controller = running.stop().await;
    assert!(cancelled.elapsed() <= DEFAULT_DRAIN_TIMEOUT + Duration::from_secs(1));
    assert_eq!(controller.stats().cancelled.get(), 1);
    assert_eq!(controller.stats().active.get(), 0);
    tokio::time::sleep(Duration::from_secs(700)).await;
    let writes = cluster.writes_since(CONTROLLER_AGENT, 0);
    assert!(
        writes.iter().all(|r| r.resource != "deployments"),
        "{writes:#?}"
    );
}
