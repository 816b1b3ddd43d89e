//! `--sharded`: three replicas of the Foo controller against apiserver-sim, on tokio's paused
//! clock. Every Foo gets its Deployment; each Foo and its Deployment carry the same shard;
//! only a Foo's shard writes its Deployment (the sim's request log tells the replicas apart by
//! user agent); and when a replica stops, its Foos move to the others and are still served.

mod support;

use std::collections::BTreeMap;

use clientgo_apimachinery::Object;
use clientgo_sample_controller::sharded::{self, Sharding};
use clientgo_sharding::shard_label;
use support::{Cluster, eventually, options};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const FOOS: usize = 30;

fn launch(cluster: &Cluster, id: &str) -> (CancellationToken, JoinHandle<()>) {
    let config = cluster.config_as(id);
    let client = cluster.client_as(id);
    let cancel = CancellationToken::new();
    let sharding = Sharding {
        identity: id.to_owned(),
        lease_namespace: "kube-system".into(),
    };
    let token = cancel.clone();
    let run = tokio::spawn(async move {
        sharded::run(&config, client, options(), sharding, token)
            .await
            .unwrap();
    });
    (cancel, run)
}

/// Foo name → (its shard, its Deployment's shard), once every Foo has a Deployment and both
/// carry the same shard among `members`.
async fn placed(cluster: &Cluster, members: &[&str]) -> BTreeMap<String, String> {
    let label = shard_label("sample-controller");
    eventually("every Foo and its Deployment on one live shard", || async {
        let foos = cluster.foos.list(&Default::default()).await.ok()?;
        let deployments = cluster.deployments.list(&Default::default()).await.ok()?;
        let deployment_shards: BTreeMap<String, Option<String>> = deployments
            .items
            .iter()
            .map(|d| {
                let shard = d.labels().get(&label).map(str::to_owned);
                (d.name().to_owned(), shard)
            })
            .collect();
        let mut placed = BTreeMap::new();
        for foo in &foos.items {
            let shard = foo.labels().get(&label)?;
            if !members.contains(&shard) {
                return None;
            }
            if deployment_shards.get(foo.name())?.as_deref() != Some(shard) {
                return None;
            }
            placed.insert(foo.name().to_owned(), shard.to_owned());
        }
        (placed.len() == FOOS).then_some(placed)
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn three_shards_share_the_foos_and_take_over_a_stopped_one() {
    let cluster = Cluster::start().await;
    let mut replicas: BTreeMap<&str, (CancellationToken, JoinHandle<()>)> = ["a", "b", "c"]
        .into_iter()
        .map(|id| (id, launch(&cluster, id)))
        .collect();
    let mark = cluster.sim.requests().mark();
    for i in 0..FOOS {
        let name = format!("foo-{i}");
        cluster.create_foo(&name, &name, 1).await;
    }
    let first = placed(&cluster, &["a", "b", "c"]).await;
    for id in ["a", "b", "c"] {
        let owned = first.values().filter(|s| *s == id).count();
        assert!(owned > 0, "shard {id} got no Foo: {first:?}");
        // Only the Foo's own shard created or changed its Deployment.
        for write in cluster.writes_since(id, mark) {
            if write.resource == "deployments" && write.verb != "patch" {
                let name = write.name.unwrap_or_default();
                assert!(
                    name.is_empty() || first.get(&name).is_some_and(|s| s == id),
                    "{id} wrote the Deployment {name} of another shard"
                );
            }
        }
    }

    // b stops cleanly: its Foos move to a and c, and their Deployments follow.
    let (cancel, run) = replicas.remove("b").unwrap();
    cancel.cancel();
    run.await.unwrap();
    let second = placed(&cluster, &["a", "c"]).await;
    for (foo, shard) in &first {
        if shard != "b" {
            assert_eq!(
                second.get(foo),
                Some(shard),
                "{foo} moved off a shard that stayed"
            );
        }
    }
    for (_, (cancel, run)) in replicas {
        cancel.cancel();
        run.await.unwrap();
    }
}
