//! The Foo finalizer against apiserver-sim, on tokio's paused clock: a deleted Foo stays until
//! the controller has removed its record, and a failing cleanup holds it until a retry works.

mod support;

use clientgo_apimachinery::Object;
use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch};
use clientgo_rest::{DeleteParams, Deleted, GetParams, ResourceClient};
use clientgo_sample_controller::finalizer::FINALIZER;
use clientgo_sample_controller::records::RECORDS;
use k8s_openapi::api::core::v1::ConfigMap;
use support::{CONTROLLER_AGENT, Cluster, eventually, options};

#[tokio::test(start_paused = true)]
async fn deleting_a_foo_removes_its_record_then_its_finalizer() {
    let cluster = Cluster::start().await;
    let running = cluster.launch(CONTROLLER_AGENT, options(), None);
    cluster.create_foo("web", "web-deploy", 1).await;

    let entry = eventually("the record", || cluster.record("web")).await;
    assert_eq!(entry, "web-deploy");
    let foo = cluster.foo("web").await.unwrap();
    assert_eq!(foo.finalizers(), [FINALIZER]);
    // The records ConfigMap has no owner: garbage collection would never clean it up.
    let records = ResourceClient::<ConfigMap>::namespaced(&cluster.client, "default")
        .get(RECORDS, &GetParams::default())
        .await
        .unwrap();
    assert!(records.metadata.owner_references.is_none());

    let mark = cluster.sim.requests().mark();
    let deleted = cluster
        .foos
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    // The API server does not remove a Foo with a finalizer: it marks it and waits.
    let Deleted::Object(marked) = deleted else {
        panic!("a Foo with a finalizer must not be removed at once");
    };
    assert!(marked.is_being_deleted());
    assert_eq!(marked.finalizers(), [FINALIZER]);

    eventually("the Foo to be gone", || async {
        cluster.foo("web").await.is_none().then_some(())
    })
    .await;
    assert_eq!(cluster.record("web").await, None, "the record was removed");
    // The cleanup was written before the finalizer came off, each exactly once.
    let writes = cluster.writes_since(CONTROLLER_AGENT, mark);
    let position = |verb: &str, resource: &str| {
        let all: Vec<usize> = writes
            .iter()
            .enumerate()
            .filter(|(_, r)| r.verb == verb && r.resource == resource)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(all.len(), 1, "one {verb} of {resource}: {writes:#?}");
        all[0]
    };
    assert!(position("patch", "configmaps") < position("patch", "foos"));
    // The Deployment is garbage collection's job, not the finalizer's.
    eventually("garbage collection of the Deployment", || async {
        match cluster
            .deployments
            .get("web-deploy", &Default::default())
            .await
        {
            Err(e) if e.is_not_found() => Some(()),
            _ => None,
        }
    })
    .await;
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn a_failing_cleanup_keeps_the_finalizer_until_a_retry_succeeds() {
    let cluster = Cluster::start().await;
    let running = cluster.launch(CONTROLLER_AGENT, options(), None);
    cluster.create_foo("web", "web", 1).await;
    eventually("the record", || cluster.record("web")).await;

    // Every write to the records fails from now on (reads still work).
    cluster.sim.faults().fail_next(
        1_000,
        RequestMatch::new("patch", "configmaps"),
        InjectedError::InternalError,
    );
    let failed_before = running.controller.stats().failed.get();
    let mark = cluster.sim.requests().mark();
    cluster
        .foos
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    eventually("three failed cleanups", || async {
        (running.controller.stats().failed.get() >= failed_before + 3).then_some(())
    })
    .await;

    // Still there, still held by the finalizer, record untouched; the finalizer was never
    // even tried.
    let foo = cluster.foo("web").await.expect("held by the finalizer");
    assert!(foo.is_being_deleted());
    assert_eq!(foo.finalizers(), [FINALIZER]);
    assert_eq!(cluster.record("web").await.as_deref(), Some("web"));
    let writes = cluster.writes_since(CONTROLLER_AGENT, mark);
    assert!(writes.len() >= 3, "{writes:#?}");
    assert!(
        writes
            .iter()
            .all(|r| (r.verb.as_str(), r.resource.as_str()) != ("patch", "foos")),
        "the finalizer must stay while the cleanup fails: {writes:#?}"
    );

    // The records accept writes again: the next retry cleans up and releases the Foo.
    cluster.sim.faults().clear();
    eventually("the Foo to be gone", || async {
        cluster.foo("web").await.is_none().then_some(())
    })
    .await;
    assert_eq!(cluster.record("web").await, None);
    running.stop().await;
}
