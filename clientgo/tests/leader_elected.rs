//! The leader-elected example on apiserver-sim, paused clock: of two candidates only the one
//! holding the Lease works; when it stops it releases the Lease and the other takes over,
//! starting with the keys its informer queued meanwhile.

#[allow(dead_code)] // its `main` is the example's, not the test's
#[path = "../examples/leader_elected.rs"]
mod leader_elected;

mod support;

use std::time::Duration;

use clientgo::rest::{Config, PostParams, ResourceClient, RestClient};
use clientgo::tools::leaderelection::Lease;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use support::{lines, printing, stop};

fn configmap(name: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some([("k".to_owned(), "v".to_owned())].into()),
        ..ConfigMap::default()
    }
}

#[tokio::test(start_paused = true)]
async fn only_the_leader_works_and_a_released_lease_passes_at_once() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let config = Config::new(sim.url().parse().unwrap());
    let client = RestClient::new(&config).unwrap();
    let configmaps = ResourceClient::<ConfigMap>::namespaced(&client, "default");
    let post = PostParams::default();
    configmaps.create(&configmap("a"), &post).await.unwrap();

    let (mut first_out, first_stop, first) = printing({
        let config = config.clone();
        |shutdown, out| async move {
            leader_elected::run(config, "default", "first", shutdown, out).await
        }
    });
    assert_eq!(
        lines(&mut first_out, 2).await,
        ["first leads", "first reconciled default/a (1 entries)"]
    );

    // The second candidate finds the Lease held: it waits, and does nothing.
    let (mut second_out, second_stop, second) = printing({
        let config = config.clone();
        |shutdown, out| async move {
            leader_elected::run(config, "default", "second", shutdown, out).await
        }
    });
    configmaps.create(&configmap("b"), &post).await.unwrap();
    assert_eq!(
        lines(&mut first_out, 1).await,
        ["first reconciled default/b (1 entries)"]
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(
        second_out.try_recv().is_err(),
        "the second candidate did nothing while the first held the Lease"
    );
    let lease = ResourceClient::<Lease>::namespaced(&client, "default")
        .get(leader_elected::LEASE, &Default::default())
        .await
        .unwrap();
    assert_eq!(
        lease.spec.holder_identity, "first",
        "the Lease names the leader"
    );

    // The leader stops: it releases the Lease, and the second takes over at its next try,
    // well before the 15 s a vanished leader's Lease takes to expire (virtual time: the
    // clock is paused, and a try comes at most 4.4 s after the last).
    stop(first_stop, first).await;
    let took_over = tokio::time::Instant::now();
    let mut seen = lines(&mut second_out, 3).await;
    assert!(
        took_over.elapsed() < Duration::from_secs(15),
        "taken over after {:?}",
        took_over.elapsed()
    );
    seen[1..].sort();
    assert_eq!(
        seen,
        [
            "second leads",
            "second reconciled default/a (1 entries)",
            "second reconciled default/b (1 entries)"
        ],
        "the new leader starts with the keys its informer queued while it waited"
    );
    stop(second_stop, second).await;
    assert!(first_out.try_recv().is_err(), "the first stopped working");
}
