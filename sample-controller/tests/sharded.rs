//! `--sharded`: three replicas of the Foo controller against apiserver-sim, on tokio's paused
//! clock. Every Foo gets its Deployment; each Foo and its Deployment carry the same shard;
//! only a Foo's shard writes its Deployment (the sim's request log tells the replicas apart by
//! user agent), and each Deployment is created once, already carrying its shard (no reconcile
//! meets `AlreadyExists`, and the sharder has no Deployment to label). When a replica stops,
//! its Foos move to the others and are still served; when it comes back, drains give it back
//! the same Foos. Each replica serves `/readyz` and `/metrics` with the sharding metrics.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use clientgo_apimachinery::Object;
use clientgo_rest::RestClient;
use clientgo_sample_controller::serve::{Endpoints, serve};
use clientgo_sample_controller::sharded::{self, Sharding};
use clientgo_sharding::shard_label;
use prometheus_client::registry::Registry;
use support::{Cluster, eventually, http_get, options, sample};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const FOOS: usize = 30;

/// A replica running, and the address of its endpoints.
struct Launched {
    cancel: CancellationToken,
    run: JoinHandle<()>,
    endpoints: SocketAddr,
}

impl Launched {
    async fn stop(self) {
        self.cancel.cancel();
        self.run.await.unwrap();
    }
}

async fn launch(cluster: &Cluster, id: &str) -> Launched {
    let config = cluster.config_as(id);
    let mut registry = Registry::default();
    let client = RestClient::builder(config.clone())
        .metrics(&mut registry)
        .build()
        .unwrap();
    let sharding = Sharding {
        identity: id.to_owned(),
        lease_namespace: "kube-system".into(),
        sharder_qps: sharded::DEFAULT_SHARDER_QPS,
    };
    let replica =
        sharded::build(&config, client, options(), sharding, Some(&mut registry)).unwrap();
    let cancel = CancellationToken::new();
    let endpoints = Arc::new(Endpoints::new(Some(registry), replica.ready()));
    let endpoints = serve("127.0.0.1:0".parse().unwrap(), endpoints, cancel.clone())
        .await
        .unwrap();
    let run = tokio::spawn(replica.run(cancel.clone()));
    let run = tokio::spawn(async move { run.await.unwrap().unwrap() });
    Launched {
        cancel,
        run,
        endpoints,
    }
}

/// Foo name → its shard, if every Foo has a Deployment and both carry the same shard among
/// `members`.
async fn placement(cluster: &Cluster, members: &[&str]) -> Option<BTreeMap<String, String>> {
    let label = shard_label("sample-controller");
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
}

/// Waits for a [`placement`] on `members`.
async fn placed(cluster: &Cluster, members: &[&str]) -> BTreeMap<String, String> {
    eventually("every Foo and its Deployment on one live shard", || {
        placement(cluster, members)
    })
    .await
}

/// The sum of `name` over the `/metrics` of `replicas`.
async fn total(replicas: &BTreeMap<&str, Launched>, name: &str) -> f64 {
    let mut sum = 0.0;
    for replica in replicas.values() {
        let (status, text) = http_get(replica.endpoints, "/metrics").await.unwrap();
        assert_eq!(status, 200);
        sum += sample(&text, name).unwrap_or(0.0);
    }
    sum
}

/// Waits until the sum of `name` over `replicas` is `want`.
async fn wait_total(replicas: &BTreeMap<&str, Launched>, name: &str, want: usize) {
    eventually(&format!("{name} to sum to {want}"), || async {
        let sum = total(replicas, name).await;
        (sum == want as f64).then_some(())
    })
    .await;
}

/// Every Foo's status written by its reconcile, for its generation.
async fn converged(cluster: &Cluster) {
    eventually("every Foo's status", || async {
        let foos = cluster.foos.list(&Default::default()).await.ok()?;
        let done = foos.items.iter().filter(|foo| {
            foo.condition("Ready").is_some()
                && foo.status.observed_generation == foo.metadata.generation
        });
        (done.count() == FOOS).then_some(())
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn three_shards_share_the_foos_and_take_over_a_stopped_one() {
    let cluster = Cluster::start().await;
    let mut replicas: BTreeMap<&str, Launched> = BTreeMap::new();
    for id in ["a", "b", "c"] {
        replicas.insert(id, launch(&cluster, id).await);
    }
    for replica in replicas.values() {
        eventually("/readyz once the shard's caches synced", || async {
            (http_get(replica.endpoints, "/readyz").await?.0 == 200).then_some(())
        })
        .await;
    }
    let mark = cluster.sim.requests().mark();
    for i in 0..FOOS {
        let name = format!("foo-{i}");
        cluster.create_foo(&name, &name, 1).await;
    }
    let first = placed(&cluster, &["a", "b", "c"]).await;
    converged(&cluster).await;
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
    let deployment_writes = |verb: &str| {
        cluster
            .sim
            .requests()
            .since(mark)
            .into_iter()
            .filter(|r| r.resource == "deployments" && r.verb == verb)
            .count()
    };
    // Created with their Foo's shard: once each, and never labelled by the sharder.
    assert_eq!(
        deployment_writes("create"),
        FOOS,
        "a create met AlreadyExists"
    );
    assert_eq!(
        deployment_writes("patch"),
        0,
        "the sharder relabelled a Deployment"
    );
    // The endpoints: the controller's metrics and the sharder's, which one replica writes.
    wait_total(&replicas, "sharding_assignments_total", FOOS).await;
    wait_total(&replicas, "sharding_assignment_latency_seconds_count", FOOS).await;
    eventually("the objects per shard to count every Foo", || async {
        let mut sum = 0.0;
        for (id, owned) in
            ["a", "b", "c"].map(|id| (id, first.values().filter(|s| *s == id).count()))
        {
            let count = total(&replicas, &format!("sharding_objects{{shard=\"{id}\"}}")).await;
            if count != owned as f64 {
                return None;
            }
            sum += count;
        }
        (sum == FOOS as f64).then_some(())
    })
    .await;
    assert!(total(&replicas, "sample_controller_reconciles_succeeded_total").await >= FOOS as f64);
    let (_, text) = http_get(replicas["a"].endpoints, "/metrics").await.unwrap();
    for family in [
        r#"workqueue_adds_total{name="Foos"}"#,
        "rest_client_requests_total",
        "informer_cache_objects",
        "sharding_drains_total 0",
        "sharding_drain_duration_seconds_count",
        "sharding_gate_acknowledged_drains_total 0",
        "sharding_gate_skipped_reconciles_total",
    ] {
        assert!(text.contains(family), "missing {family} in:\n{text}");
    }

    // b stops cleanly: its Lease is released, its Foos move at once to a and c, and their
    // Deployments follow.
    let b_owned = first.values().filter(|s| *s == "b").count();
    replicas.remove("b").unwrap().stop().await;
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
    wait_total(&replicas, r#"sharding_moves_total{reason="dead"}"#, b_owned).await;

    // b comes back: rendezvous hashing gives it the same Foos, each drained off its
    // interim shard (which acknowledges) before it is assigned to b.
    replicas.insert("b", launch(&cluster, "b").await);
    eventually("the first placement again", || async {
        (placement(&cluster, &["a", "b", "c"]).await? == first).then_some(())
    })
    .await;
    converged(&cluster).await;
    wait_total(
        &replicas,
        r#"sharding_moves_total{reason="drained"}"#,
        b_owned,
    )
    .await;
    wait_total(
        &replicas,
        "sharding_gate_acknowledged_drains_total",
        b_owned,
    )
    .await;
    wait_total(&replicas, "sharding_drain_duration_seconds_count", b_owned).await;
    assert_eq!(
        deployment_writes("create"),
        FOOS,
        "a Deployment created again"
    );
    for replica in replicas.into_values() {
        replica.stop().await;
    }
}
