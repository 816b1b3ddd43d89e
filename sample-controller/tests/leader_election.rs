//! Two replicas with leader election against apiserver-sim, on tokio's paused clock: only the
//! leader writes (the sim's request log tells them apart by user agent), and when it stops the
//! other takes over with a warm cache and converges.

mod support;

use clientgo_apiserver_sim::requests::RecordedRequest;
use clientgo_sample_controller::app::Options;
use k8s_openapi::api::coordination::v1::Lease;
use support::{Cluster, eventually, options};

fn elected(identity: &str) -> Options {
    Options {
        leader_election: Some((
            "kube-system".into(),
            "sample-controller".into(),
            identity.into(),
        )),
        ..options()
    }
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
    let leases = clientgo_rest::ResourceClient::<Lease>::namespaced(&cluster.client, "kube-system");
    let holder = || async {
        let lease = leases
            .get("sample-controller", &Default::default())
            .await
            .ok()?;
        lease.spec?.holder_identity
    };

    let a = cluster.launch("replica-a", elected("a"), None);
    eventually("a to lead", || async {
        (holder().await? == "a").then_some(())
    })
    .await;
    let b = cluster.launch("replica-b", elected("b"), None);
    eventually("b's caches to sync", || async { b.ready().then_some(()) }).await;

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
    for resource in ["configmaps", "deployments", "foos", "leases"] {
        assert!(touched_by_a.contains(&resource), "{by_a:#?}");
    }
    assert_eq!(cluster.writes_since("replica-b", 0), [], "b only watches");
    assert_eq!(b.controller.stats().synced.get(), 0, "b never reconciled");

    // a stops and gives the lease up; b takes over, its cache already warm.
    a.stop().await;
    let mark = cluster.sim.requests().mark();
    cluster.create_foo("api", "api", 1).await;
    eventually("b to lead", || async {
        (holder().await? == "b").then_some(())
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
