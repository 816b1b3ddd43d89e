//! `--sharded` against a real kube-apiserver 1.36 (the envtest crate): the `sample-controller`
//! binary run three times as a user runs it (`--sharded --kubeconfig`), 30 Foos. Every Foo
//! converges (its Deployment, labelled with the Foo's shard, and its status), each Foo
//! carries the shard label of a live replica, and every replica serves `/readyz` and the
//! sharding metrics. Then one replica stops cleanly on SIGTERM: it exits 0, its Foos move to
//! the two others and converge there, which a scale of each moved Foo proves. Real time:
//! every wait is bounded.

mod support;

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use clientgo_envtest::{ControlPlane, ControlPlaneOptions};
use clientgo_rest::config::Config;
use clientgo_rest::{ListParams, PostParams, ResourceClient, RestClient};
use clientgo_sample_controller::foo::{self, Foo};
use k8s_openapi::api::apps::v1::Deployment;
use support::{converged_on_shards, eventually, free_addr, http_get, metrics_total};
use tokio::process::Child;

const FOOS: usize = 30;
const REPLICAS: [&str; 3] = ["shard-0", "shard-1", "shard-2"];

/// One `sample-controller --sharded` process and the address of its endpoints.
struct Replica {
    child: Child,
    endpoints: SocketAddr,
}

fn start(cp: &ControlPlane, namespace: &str, identity: &str) -> Replica {
    let endpoints = free_addr();
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sample-controller"))
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(["--sharded", "--namespace", namespace])
        .args(["--lease-namespace", namespace, "--identity", identity])
        .args(["--metrics-addr", &endpoints.to_string()])
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    Replica { child, endpoints }
}

struct Cluster {
    foos: ResourceClient<Foo>,
    deployments: ResourceClient<Deployment>,
}

impl Cluster {
    /// Foo name → its shard, once every Foo is converged: it carries the shard label of one
    /// of `members`, its Deployment exists with the same label and the Foo's replicas, and
    /// its status describes its current generation.
    async fn converged(&self, members: &[&str]) -> BTreeMap<String, String> {
        converged_on_shards(&self.foos, &self.deployments, FOOS, |shard| {
            members.contains(&shard)
        })
        .await
    }
}

/// The sum of the samples `name` over the `/metrics` of `replicas`.
async fn total<'a>(replicas: impl Iterator<Item = &'a Replica>, name: &str) -> Option<f64> {
    metrics_total(replicas.map(|r| r.endpoints), name).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_sharded_binaries_share_the_foos_and_hand_over_on_sigterm() {
    let Some(cp) = ControlPlane::shared_with(ControlPlaneOptions::default()) else {
        return;
    };
    let config = Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap();
    let client = RestClient::new(&config).unwrap();
    foo::install_crd(&client).await.unwrap();
    let namespace = cp.create_namespace("sharded").unwrap();
    let cluster = Cluster {
        foos: ResourceClient::namespaced(&client, &namespace),
        deployments: ResourceClient::namespaced(&client, &namespace),
    };
    // The CRD is served once it is Established: until then its path is a plain-text 404.
    eventually("the Foo CRD to be served", || async {
        cluster.foos.list(&ListParams::default()).await.ok()
    })
    .await;

    let mut replicas: BTreeMap<&str, Replica> = REPLICAS
        .into_iter()
        .map(|id| (id, start(cp, &namespace, id)))
        .collect();
    for replica in replicas.values() {
        eventually("every replica's /readyz", || async {
            (http_get(replica.endpoints, "/readyz").await?.0 == 200).then_some(())
        })
        .await;
    }
    for i in 0..FOOS {
        let name = format!("foo-{i}");
        cluster
            .foos
            .create(
                &Foo::new(&namespace, &name, &format!("{name}-deploy"), 1),
                &PostParams::default(),
            )
            .await
            .unwrap();
    }
    let first = cluster.converged(&REPLICAS).await;
    for id in REPLICAS {
        assert!(
            first.values().any(|s| s == id),
            "{id} got no Foo: {first:?}"
        );
    }
    eventually("the sharder's assignments on /metrics", || async {
        let assigned = total(replicas.values(), "sharding_assignments_total").await?;
        (assigned == FOOS as f64).then_some(())
    })
    .await;
    // Assignment latency, real time: from the sharder seeing a Foo without a shard to its
    // label written (the histogram of whichever replica holds the sharder role).
    let seen = total(
        replicas.values(),
        "sharding_assignment_latency_seconds_count",
    )
    .await
    .unwrap_or(0.0);
    let spent = total(replicas.values(), "sharding_assignment_latency_seconds_sum")
        .await
        .unwrap_or(0.0);
    assert!(seen > 0.0, "no assignment latency observed on /metrics");
    println!(
        "assignment latency on kube-apiserver: {:.1} ms on average over {seen} Foos",
        1000.0 * spent / seen
    );

    // shard-1 stops cleanly: it drains, releases its Lease and exits 0; the sharder moves
    // its Foos at once.
    let mut stopped = replicas.remove("shard-1").unwrap();
    let pid = stopped.child.id().unwrap().to_string();
    let signalled = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(signalled.success());
    let status = tokio::time::timeout(Duration::from_secs(30), stopped.child.wait())
        .await
        .expect("the replica exits within 30 s of SIGTERM")
        .unwrap();
    assert!(status.success(), "exit status {status}");
    let second = cluster.converged(&["shard-0", "shard-2"]).await;
    let moved: Vec<&String> = first
        .iter()
        .filter(|(_, shard)| *shard == "shard-1")
        .map(|(foo, _)| foo)
        .collect();
    for (foo, shard) in &first {
        if shard != "shard-1" {
            assert_eq!(
                second.get(foo),
                Some(shard),
                "{foo} left a shard that stayed"
            );
        }
    }
    // The moved Foos are served by their new shards: scaled, they converge again.
    for name in &moved {
        let mut foo = cluster.foos.get(name, &Default::default()).await.unwrap();
        foo.spec.replicas = Some(2);
        cluster
            .foos
            .update(name, &foo, &PostParams::default())
            .await
            .unwrap();
    }
    let third = cluster.converged(&["shard-0", "shard-2"]).await;
    assert_eq!(third, second, "a scale moved no Foo");
    eventually("the dead shard's moves on /metrics", || async {
        let moves = total(replicas.values(), r#"sharding_moves_total{reason="dead"}"#).await?;
        (moves == moved.len() as f64).then_some(())
    })
    .await;
    for (_, mut replica) in replicas {
        replica.child.start_kill().unwrap();
        replica.child.wait().await.unwrap();
    }
}
