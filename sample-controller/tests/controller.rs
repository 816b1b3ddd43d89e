//! The controller against apiserver-sim, end to end, on tokio's paused clock: create, scale,
//! refuse a foreign Deployment, settle without hot-looping, garbage-collect, shut down.

mod support;

use std::time::Duration;

use clientgo_apimachinery::{ApiResource, Object};
use clientgo_rest::{DeleteParams, DynamicClient, ListParams, PatchParams, PatchType, PostParams};
use clientgo_sample_controller::foo::Foo;
use support::{CONTROLLER_AGENT, Cluster, Running, eventually, options};

/// A sim with the CRD, and the controller running against it.
async fn start() -> (Cluster, Running) {
    let cluster = Cluster::start().await;
    let running = cluster.launch(CONTROLLER_AGENT, options(), None);
    (cluster, running)
}

#[tokio::test(start_paused = true)]
async fn a_foo_gets_an_owned_deployment_and_reports_ready() {
    let (env, running) = start().await;
    let foo = env
        .foos
        .create(
            &Foo::new("default", "web", "web-deploy", 3),
            &PostParams::default(),
        )
        .await
        .unwrap();

    let deployment = eventually("the deployment", || async {
        env.deployments
            .get("web-deploy", &Default::default())
            .await
            .ok()
    })
    .await;
    let owner = deployment.controller_ref().expect("a controller reference");
    assert_eq!(
        (owner.kind, owner.name, owner.uid),
        ("Foo", "web", foo.uid())
    );
    assert_eq!(owner.block_owner_deletion, Some(true));
    assert_eq!(deployment.spec.replicas, Some(3));

    let pending = eventually("a not-ready status", || async {
        let foo = env.foos.get("web", &Default::default()).await.ok()?;
        foo.condition("Ready").is_some().then_some(foo)
    })
    .await;
    let condition = pending.condition("Ready").unwrap();
    assert_eq!(
        (condition.status.as_str(), condition.reason.as_str()),
        ("False", "DeploymentProgressing")
    );
    let first_transition = condition.last_transition_time;

    env.make_available("web-deploy").await;
    let ready = eventually("Ready", || async {
        let foo = env.foos.get("web", &Default::default()).await.ok()?;
        (foo.condition("Ready")?.status == "True").then_some(foo)
    })
    .await;
    assert_eq!(ready.status.available_replicas, 3);
    assert_eq!(ready.status.observed_generation, ready.metadata.generation);
    let condition = ready.condition("Ready").unwrap();
    assert_ne!(condition.last_transition_time, None);
    assert!(condition.last_transition_time >= first_transition);
    running.stop().await;
}

#[tokio::test(start_paused = true)]
async fn the_deployment_follows_the_foo_and_the_loop_settles() {
    let (env, running) = start().await;
    env.foos
        .create(
            &Foo::new("default", "web", "web", 1),
            &PostParams::default(),
        )
        .await
        .unwrap();
    eventually("the deployment", || async {
        env.deployments.get("web", &Default::default()).await.ok()
    })
    .await;
    env.make_available("web").await;

    let patch = serde_json::json!({"spec": {"replicas": 4}});
    env.foos
        .patch("web", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    eventually("4 replicas", || async {
        let d = env.deployments.get("web", &Default::default()).await.ok()?;
        (d.spec.replicas == Some(4)).then_some(())
    })
    .await;
    env.make_available("web").await;
    let foo = eventually("Ready at generation 2", || async {
        let foo = env.foos.get("web", &Default::default()).await.ok()?;
        (foo.status.observed_generation == 2 && foo.condition("Ready")?.status == "True")
            .then_some(foo)
    })
    .await;
    assert_eq!(foo.status.available_replicas, 4);

    // Settled: resyncs (every 10 s) re-deliver everything, but nothing is written any more.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let foo_rv = env
        .foos
        .get("web", &Default::default())
        .await
        .unwrap()
        .resource_version()
        .to_owned();
    let deployment_rv = env
        .deployments
        .get("web", &Default::default())
        .await
        .unwrap()
        .resource_version()
        .to_owned();
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        env.foos
            .get("web", &Default::default())
            .await
            .unwrap()
            .resource_version(),
        foo_rv
    );
    assert_eq!(
        env.deployments
            .get("web", &Default::default())
            .await
            .unwrap()
            .resource_version(),
        deployment_rv
    );
    let controller = running.stop().await;
    assert_eq!(controller.stats().panicked.get(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_foreign_deployment_is_refused_with_a_warning_event() {
    let (env, running) = start().await;
    let mut foreign =
        clientgo_sample_controller::desired::new_deployment(&Foo::new("default", "x", "taken", 1));
    foreign.metadata.owner_references = None;
    env.deployments
        .create(&foreign, &PostParams::default())
        .await
        .unwrap();
    env.foos
        .create(
            &Foo::new("default", "intruder", "taken", 5),
            &PostParams::default(),
        )
        .await
        .unwrap();

    let events = DynamicClient::from_api_resource(
        &env.client,
        &ApiResource {
            group: String::new(),
            version: "v1".into(),
            kind: "Event".into(),
            plural: "events".into(),
            namespaced: true,
        },
        Some("default"),
    );
    let event = eventually("the warning event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .into_iter()
            .find(|e| e.data["reason"] == "ErrResourceExists")
    })
    .await;
    assert_eq!(event.data["type"], "Warning");
    assert_eq!(event.data["involvedObject"]["kind"], "Foo");
    assert_eq!(event.data["involvedObject"]["name"], "intruder");
    let taken = env
        .deployments
        .get("taken", &Default::default())
        .await
        .unwrap();
    assert_eq!(taken.spec.replicas, Some(1), "not touched");
    assert!(taken.metadata.owner_references.is_none(), "not adopted");
    let controller = running.stop().await;
    assert!(controller.stats().failed.get() >= 1, "retried with backoff");
}

#[tokio::test(start_paused = true)]
async fn deleting_a_foo_deletes_its_deployment() {
    let (env, running) = start().await;
    env.foos
        .create(
            &Foo::new("default", "short-lived", "short-lived", 1),
            &PostParams::default(),
        )
        .await
        .unwrap();
    eventually("the deployment", || async {
        env.deployments
            .get("short-lived", &Default::default())
            .await
            .ok()
    })
    .await;
    env.foos
        .delete("short-lived", &DeleteParams::default())
        .await
        .unwrap();
    eventually("garbage collection", || async {
        match env
            .deployments
            .get("short-lived", &Default::default())
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
async fn a_deployment_deleted_or_edited_behind_its_back_is_restored() {
    let (env, running) = start().await;
    env.foos
        .create(
            &Foo::new("default", "web", "web", 2),
            &PostParams::default(),
        )
        .await
        .unwrap();
    eventually("the deployment", || async {
        env.deployments.get("web", &Default::default()).await.ok()
    })
    .await;

    // Someone scales the Deployment by hand: the controller puts the Foo's count back.
    let patch = serde_json::json!({"spec": {"replicas": 7}});
    env.deployments
        .patch("web", PatchType::Merge, &patch, &PatchParams::default())
        .await
        .unwrap();
    eventually("the replicas reverted to 2", || async {
        let d = env.deployments.get("web", &Default::default()).await.ok()?;
        (d.spec.replicas == Some(2)).then_some(())
    })
    .await;

    // Someone deletes the Deployment (orphaning nothing): the controller creates it again.
    let old_uid = env
        .deployments
        .get("web", &Default::default())
        .await
        .unwrap()
        .uid()
        .to_owned();
    env.deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let recreated = eventually("a new deployment", || async {
        let d = env.deployments.get("web", &Default::default()).await.ok()?;
        (d.uid() != old_uid).then_some(d)
    })
    .await;
    assert_eq!(recreated.spec.replicas, Some(2));
    running.stop().await;
}
