//! Two replicas with leader election against apiserver-sim, on tokio's paused clock: only the
//! leader writes (the sim's request log tells them apart by user agent), and when it stops the
//! other takes over with a warm cache and converges; a leader whose renewals fail is fenced
//! before its successor writes; a busy leader keeps its lease.

mod support;

use std::time::Duration;

use clientgo_apiserver_sim::faults::RequestMatch;
use clientgo_apiserver_sim::requests::RecordedRequest;
use clientgo_rest::PostParams;
use clientgo_sample_controller::app::{LeaderElection, Options, RunError};
use k8s_openapi::api::coordination::v1::Lease;
use support::{Cluster, Running, eventually, options};

/// Options for a replica sending as `agent`, campaigning as `identity`; its lease client
/// sends as `<agent>/leader-election`.
fn elected(cluster: &Cluster, agent: &str, identity: &str) -> Options {
    let election = LeaderElection::new(
        &cluster.config_as(agent),
        "kube-system",
        "sample-controller",
        identity,
    )
    .unwrap();
    Options {
        leader_election: Some(election),
        ..options()
    }
}

/// Launches replica a, waits until it leads, then replica b, and waits until its caches
/// have synced.
async fn leader_and_follower(cluster: &Cluster, a: Options, b: Options) -> (Running, Running) {
    let a = cluster.launch("replica-a", a, None);
    eventually("a to lead", || async {
        (holder(cluster).await? == "a").then_some(())
    })
    .await;
    let b = cluster.launch("replica-b", b, None);
    eventually("b's caches to sync", || async { b.ready().then_some(()) }).await;
    (a, b)
}

/// The Lease's holder, if it can be read.
async fn holder(cluster: &Cluster) -> Option<String> {
    let leases = clientgo_rest::ResourceClient::<Lease>::namespaced(&cluster.client, "kube-system");
    let lease = leases
        .get("sample-controller", &Default::default())
        .await
        .ok()?;
    lease.spec?.holder_identity
}

fn touched(writes: &[RecordedRequest]) -> Vec<&str> {
    let mut resources: Vec<&str> = writes.iter().map(|r| r.resource.as_str()).collect();
    resources.sort_unstable();
    resources.dedup();
    resources
}

#[tokio::test(start_paused = true)]
async fn only_the_leader_writes_and_the_other_takes_over_when_it_stops() {
    let cluster = Cluster::start().await;
    let (a, b) = leader_and_follower(
        &cluster,
        elected(&cluster, "replica-a", "a"),
        elected(&cluster, "replica-b", "b"),
    )
    .await;

    cluster.create_foo("web", "web", 2).await;
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
    // Let resyncs and b's election attempts (every 2 s or so) go on for a while.
    let synced = a.controller.stats().synced.get();
    eventually("two resyncs on a", || async {
        (a.controller.stats().synced.get() >= synced + 2).then_some(())
    })
    .await;

    let by_a = cluster.writes_since("replica-a", 0);
    let touched_by_a = touched(&by_a);
    for resource in ["configmaps", "deployments", "foos"] {
        assert!(touched_by_a.contains(&resource), "{by_a:#?}");
    }
    // The lease is written through the election's own client, never the controller's.
    assert!(!touched_by_a.contains(&"leases"), "{by_a:#?}");
    let lease_writes = cluster.writes_since("replica-a/leader-election", 0);
    assert_eq!(touched(&lease_writes), ["leases"]);
    assert_eq!(cluster.writes_since("replica-b", 0), [], "b only watches");
    assert_eq!(b.controller.stats().synced.get(), 0, "b never reconciled");

    // a stops and gives the lease up; b takes over, its cache already warm.
    a.stop().await;
    let mark = cluster.sim.requests().mark();
    cluster.create_foo("api", "api", 1).await;
    eventually("b to lead", || async {
        (holder(&cluster).await? == "b").then_some(())
    })
    .await;
    eventually("the deployment of api", || async {
        cluster
            .deployments
            .get("api", &Default::default())
            .await
            .ok()
    })
    .await;
    cluster.make_available("api").await;
    cluster.wait_ready("api", "True").await;
    assert_eq!(cluster.record("api").await.as_deref(), Some("api"));

    assert_eq!(cluster.writes_since("replica-a", mark), [], "a has stopped");
    let by_b = cluster.writes_since("replica-b", mark);
    let touched_by_b = touched(&by_b);
    for resource in ["configmaps", "deployments", "foos"] {
        assert!(touched_by_b.contains(&resource), "{by_b:#?}");
    }
    assert!(b.controller.stats().synced.get() > 0);
    b.stop().await;
}

/// The rule: a leader that loses its lease is fenced before a successor can act, so no
/// write of the old leader reaches the API server after the new leader's first write.
///
/// The leader's renewals start failing (every Lease update is held for two minutes) while
/// one of its reconciles is in a slow Deployment write (held for two minutes too). Within the
/// renew deadline the leader drops that reconcile, whose request is then never handled, and
/// `run` returns `LostLeadership` (the binary exits non-zero). The other replica takes over
/// and writes. The sim's request log shows every write of the first leader before the
/// second leader's first write (stronger than "none accepted after": none even arrived).
#[tokio::test(start_paused = true)]
async fn a_lost_leader_writes_nothing_after_the_new_leaders_first_write() {
    let cluster = Cluster::start().await;
    // A drain longer than the slow write: the fence, not the drain, must stop it.
    let patient = |agent, identity| Options {
        drain_timeout: Duration::from_secs(600),
        ..elected(&cluster, agent, identity)
    };
    let (a, b) = leader_and_follower(
        &cluster,
        patient("replica-a", "a"),
        patient("replica-b", "b"),
    )
    .await;
    cluster.create_foo("web", "web", 2).await;
    // Ready=False is written after the Deployment was created.
    cluster.wait_ready("web", "False").await;

    // A slow write: a's next Deployment update is held for two minutes.
    let held = Duration::from_secs(120);
    let faults = cluster.sim.faults();
    faults.delay_next(1, RequestMatch::new("update", "deployments"), held);
    let mut foo = cluster.foo("web").await.unwrap();
    foo.spec.replicas = Some(3);
    cluster
        .foos
        .update("web", &foo, &PostParams::default())
        .await
        .unwrap();
    eventually("a's reconcile to be in the slow write", || async {
        (faults.delayed() == 1 && a.controller.stats().active.get() == 1).then_some(())
    })
    .await;

    // Now a's renewals fail: every Lease update is held longer than any request may wait.
    faults.delay_next(usize::MAX, RequestMatch::new("update", "leases"), held);
    let ended = tokio::time::timeout(Duration::from_secs(60), a.run)
        .await
        .expect("a stops within the bound")
        .unwrap();
    assert!(
        matches!(ended, Err(RunError::LostLeadership { .. })),
        "{:?}",
        ended.err()
    );
    assert!(faults.delayed() >= 2, "a's renewals were held");
    assert_eq!(
        a.controller.stats().cancelled.get(),
        1,
        "the slow write was cancelled"
    );
    assert_eq!(a.controller.stats().active.get(), 0);
    faults.clear();

    eventually("b to lead", || async {
        (holder(&cluster).await? == "b").then_some(())
    })
    .await;
    eventually("b to scale the deployment", || async {
        let deployment = cluster
            .deployments
            .get("web", &Default::default())
            .await
            .ok()?;
        (deployment.spec.replicas == Some(3)).then_some(())
    })
    .await;
    // Long after the held write would have been handled, had it been sent.
    tokio::time::sleep(held + Duration::from_secs(10)).await;

    let log = cluster.sim.requests().snapshot();
    let b_first = log
        .iter()
        .find(|r| r.is_write() && r.user_agent == "replica-b")
        .expect("b wrote")
        .seq;
    let a_late: Vec<&RecordedRequest> = log
        .iter()
        .filter(|r| r.is_write() && r.user_agent.starts_with("replica-a") && r.seq > b_first)
        .collect();
    assert_eq!(a_late, Vec::<&RecordedRequest>::new());
    let a_deployment_updates = log
        .iter()
        .filter(|r| {
            r.user_agent == "replica-a" && r.verb == "update" && r.resource == "deployments"
        })
        .count();
    assert_eq!(a_deployment_updates, 0, "the held write was never handled");
    b.stop().await;
}

/// The rule: leader election has its own client. A leader busy enough to keep its
/// client-side throttle (5 requests per second) saturated, with 80 reconciles each waiting
/// on it, still renews on time and keeps the lease; on a shared client its renewals would
/// queue behind those requests for longer than the renew deadline and it would lose.
#[tokio::test(start_paused = true)]
async fn a_busy_leader_keeps_its_lease_through_its_own_client() {
    let cluster = Cluster::start().await;
    let busy = Options {
        workers: 80,
        ..elected(&cluster, "replica-a", "a")
    };
    let (a, b) = leader_and_follower(&cluster, busy, elected(&cluster, "replica-b", "b")).await;

    // 80 Foos at once, straight into the sim's store: about 400 writes for a, over a minute
    // of throttle, with a request of each of 80 reconciles waiting on it.
    for i in 0..80 {
        cluster.seed_foo(&format!("foo-{i}"));
    }
    let renewals_before = cluster.writes_since("replica-a/leader-election", 0).len();
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(
        a.controller.stats().synced.get() < 80,
        "a is still working through its backlog"
    );
    assert!(!a.run.is_finished(), "a never lost the lease");
    assert_eq!(holder(&cluster).await.as_deref(), Some("a"));
    assert_eq!(b.controller.stats().synced.get(), 0, "b never led");
    let renewals = cluster.writes_since("replica-a/leader-election", 0).len() - renewals_before;
    assert!(renewals >= 20, "a renewed while busy: {renewals}");
    b.stop().await;
    a.stop().await;
}
