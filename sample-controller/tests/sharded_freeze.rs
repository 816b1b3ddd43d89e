//! `--sharded` against a real kube-apiserver 1.36 (the envtest crate), with the failure a
//! Lease exists for: a replica frozen past its lease (SIGSTOP, as a paused VM or a stopped
//! container is) and then resumed (SIGCONT). Three `sample-controller --sharded` binaries run
//! with their default identities (no `--identity`: the hostname made valid, and the pid).
//!
//! While the replica is frozen, its Foos are scaled; the sharder must take its member Lease
//! before moving them, and the two others converge them. When the frozen replica resumes, it
//! must find its lease lost before anything else: it exits non-zero, and its log shows no
//! write (no reconcile's, no renewal; Events it had queued aside) after the moment it was
//! frozen, so no two replicas ever acted on one Foo. Real time: every wait is bounded.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use clientgo_envtest::{ControlPlane, ControlPlaneOptions};
use clientgo_leaderelection::Lease;
use clientgo_rest::config::Config;
use clientgo_rest::{ListParams, PostParams, ResourceClient, RestClient};
use clientgo_sample_controller::foo::{self, Foo};
use clientgo_sharding::MEMBER_LABEL;
use k8s_openapi::api::apps::v1::Deployment;
use support::{converged_on_shards, eventually, free_addr, http_get, metrics_total};
use tokio::process::Child;

const FOOS: usize = 30;
const CONTROLLER: &str = "sample-controller";

/// One `sample-controller --sharded` process: its endpoints and its log.
struct Replica {
    child: Child,
    endpoints: SocketAddr,
    log: PathBuf,
}

/// Starts a replica with its default identity; its log (every request's response, at debug,
/// with a UTC timestamp) goes to a file of `dir`.
fn start(cp: &ControlPlane, namespace: &str, dir: &Path, n: usize) -> Replica {
    let endpoints = free_addr();
    let log = dir.join(format!("replica-{n}.log"));
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_sample-controller"))
        .arg("--kubeconfig")
        .arg(cp.kubeconfig_path())
        .args(["--sharded", "--namespace", namespace])
        .args(["--lease-namespace", namespace])
        .args(["--metrics-addr", &endpoints.to_string()])
        .env("RUST_LOG", "warn,clientgo_rest::execute=debug")
        .stderr(Stdio::from(std::fs::File::create(&log).unwrap()))
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    Replica {
        child,
        endpoints,
        log,
    }
}

/// Foo name → its shard, once every Foo is converged on one of `members`.
async fn converged(
    foos: &ResourceClient<Foo>,
    deployments: &ResourceClient<Deployment>,
    members: &BTreeSet<String>,
) -> BTreeMap<String, String> {
    converged_on_shards(foos, deployments, FOOS, |shard| members.contains(shard)).await
}

/// The sum of the sample `name` over the `/metrics` of `replicas`.
async fn total<'a>(replicas: impl Iterator<Item = &'a Replica>, name: &str) -> Option<f64> {
    metrics_total(replicas.map(|r| r.endpoints), name).await
}

/// Now, as the replicas' logs write it (tracing-subscriber's UTC timestamp: RFC 3339 with
/// microseconds), so that log lines compare with it as strings.
fn log_time_now() -> String {
    let out = std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%S.%6NZ"])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The log lines of writes (responses to POST, PUT, PATCH or DELETE), with their time stamps;
/// but for Events: those the recorder had queued may still go out after a freeze, reports of
/// what was done before, not actions on a Foo.
fn writes(log: &Path) -> Vec<(String, String)> {
    let text = std::fs::read_to_string(log).unwrap();
    text.lines()
        .filter(|line| {
            line.contains("response")
                && !line.contains("/events")
                && ["\"POST\"", "\"PUT\"", "\"PATCH\"", "\"DELETE\""]
                    .iter()
                    .any(|verb| line.contains(&format!("verb={verb}")))
        })
        .map(|line| {
            let stamp = line.split_whitespace().next().unwrap_or_default();
            (stamp.to_owned(), line.to_owned())
        })
        .collect()
}

fn signal(child: &Child, signal: &str) {
    let pid = child.id().unwrap().to_string();
    let sent = std::process::Command::new("kill")
        .args([signal, &pid])
        .status()
        .unwrap();
    assert!(sent.success(), "kill {signal} {pid}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_frozen_past_its_lease_writes_nothing_when_it_resumes() {
    let Some(cp) = ControlPlane::shared_with(ControlPlaneOptions::default()) else {
        return;
    };
    let config = Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap();
    let client = RestClient::new(&config).unwrap();
    foo::install_crd(&client).await.unwrap();
    let namespace = cp.create_namespace("frozen").unwrap();
    let foos: ResourceClient<Foo> = ResourceClient::namespaced(&client, &namespace);
    let deployments: ResourceClient<Deployment> = ResourceClient::namespaced(&client, &namespace);
    let leases: ResourceClient<Lease> = ResourceClient::namespaced(&client, &namespace);
    eventually("the Foo CRD to be served", || async {
        foos.list(&ListParams::default()).await.ok()
    })
    .await;

    let logs = std::env::temp_dir().join(format!("clientgo-sharded-freeze-{}", std::process::id()));
    std::fs::create_dir_all(&logs).unwrap();
    let mut replicas: Vec<Replica> = (0..3).map(|n| start(cp, &namespace, &logs, n)).collect();
    for replica in &replicas {
        eventually("every replica's /readyz", || async {
            (http_get(replica.endpoints, "/readyz").await?.0 == 200).then_some(())
        })
        .await;
    }
    // The default identities, as the member Leases' holders: `<host>-<pid>`.
    let members_of = |pids: Vec<u32>| {
        let leases = &leases;
        async move {
            let selector = ListParams {
                label_selector: Some(format!("{MEMBER_LABEL}={CONTROLLER}")),
                ..ListParams::default()
            };
            let held = leases.list(&selector).await.ok()?;
            let holders: BTreeMap<u32, String> = held
                .items
                .into_iter()
                .map(|l| l.spec.holder_identity)
                .filter_map(|h| Some((h.rsplit('-').next()?.parse().ok()?, h)))
                .collect();
            pids.iter()
                .map(|pid| holders.get(pid).cloned())
                .collect::<Option<Vec<String>>>()
        }
    };
    let pids: Vec<u32> = replicas.iter().map(|r| r.child.id().unwrap()).collect();
    let identities = eventually("a member Lease held by each replica", || {
        members_of(pids.clone())
    })
    .await;
    let members: BTreeSet<String> = identities.iter().cloned().collect();
    assert_eq!(members.len(), 3, "three distinct default identities");

    for i in 0..FOOS {
        let name = format!("foo-{i}");
        let foo = Foo::new(&namespace, &name, &format!("{name}-deploy"), 1);
        foos.create(&foo, &PostParams::default()).await.unwrap();
    }
    let first = converged(&foos, &deployments, &members).await;

    // Freeze the replica that owns the most Foos.
    let (frozen_at, frozen_id) = identities
        .iter()
        .enumerate()
        .max_by_key(|(_, id)| first.values().filter(|s| s == id).count())
        .map(|(n, id)| (n, id.clone()))
        .unwrap();
    let owned: Vec<String> = first
        .iter()
        .filter(|(_, shard)| **shard == frozen_id)
        .map(|(foo, _)| foo.clone())
        .collect();
    assert!(!owned.is_empty(), "{frozen_id} owns no Foo: {first:?}");
    let frozen = replicas.remove(frozen_at);
    let since = log_time_now();
    signal(&frozen.child, "-STOP");

    // Its Foos change while it is frozen: only their new shards can converge them, once the
    // sharder has taken the frozen replica's Lease (one lease duration, 15 s) and moved them.
    for name in &owned {
        let mut foo = foos.get(name, &Default::default()).await.unwrap();
        foo.spec.replicas = Some(2);
        foos.update(name, &foo, &PostParams::default())
            .await
            .unwrap();
    }
    let others: BTreeSet<String> = members
        .iter()
        .filter(|m| **m != frozen_id)
        .cloned()
        .collect();
    let second = converged(&foos, &deployments, &others).await;
    for (foo, shard) in &first {
        if *shard != frozen_id {
            assert_eq!(second.get(foo), Some(shard), "{foo} left a live shard");
        }
    }
    eventually("the sharder's take-over and moves on /metrics", || async {
        let fenced = total(replicas.iter(), "sharding_members_fenced_total").await?;
        let moved = total(replicas.iter(), r#"sharding_moves_total{reason="dead"}"#).await?;
        (fenced >= 1.0 && moved == owned.len() as f64).then_some(())
    })
    .await;

    // It resumes: its first act is to find its lease lost, and it exits non-zero.
    let mut frozen = frozen;
    signal(&frozen.child, "-CONT");
    let status = tokio::time::timeout(Duration::from_secs(30), frozen.child.wait())
        .await
        .expect("the resumed replica exits within 30 s")
        .unwrap();
    assert!(!status.success(), "exit status {status}");
    let log = std::fs::read_to_string(&frozen.log).unwrap();
    assert!(
        log.contains("lost the lease"),
        "the resumed replica did not say it lost its Lease:\n{log}"
    );
    let written = writes(&frozen.log);
    assert!(
        written.iter().any(|(stamp, _)| *stamp < since),
        "no write of the frozen replica's found in its log before the freeze: the log's format \
         is not what this test reads"
    );
    let late: Vec<&str> = written
        .iter()
        .filter(|(stamp, _)| stamp.len() != since.len() || *stamp > since)
        .map(|(_, line)| line.as_str())
        .collect();
    assert!(
        late.is_empty(),
        "the resumed replica wrote after it was frozen:\n{}",
        late.join("\n")
    );
    // The others still own every Foo, converged.
    assert_eq!(converged(&foos, &deployments, &others).await, second);
    for mut replica in replicas {
        replica.child.start_kill().unwrap();
        replica.child.wait().await.unwrap();
    }
    let _ = std::fs::remove_dir_all(&logs);
}
