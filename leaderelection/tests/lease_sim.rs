//! Leader election through real Leases on apiserver-sim, on tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_leaderelection::{
    Ended, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, Lease, LeaseLock, Lock,
    LockError,
};
use clientgo_rest::{Config, GetParams, ResourceClient, RestClient};
use tokio_util::sync::CancellationToken;

/// A Lease lock that can be cut off from the server, as a partitioned replica would be.
struct Partitionable {
    lock: LeaseLock,
    cut: Arc<AtomicBool>,
}

impl Partitionable {
    fn check(&self) -> Result<(), LockError> {
        if self.cut.load(Ordering::SeqCst) {
            return Err(LockError::Other("network partition".into()));
        }
        Ok(())
    }
}

impl Lock for Partitionable {
    async fn get(&self) -> Result<Option<LeaderElectionRecord>, LockError> {
        self.check()?;
        self.lock.get().await
    }
    async fn create(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        self.check()?;
        self.lock.create(record).await
    }
    async fn update(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        self.check()?;
        self.lock.update(record).await
    }
    fn identity(&self) -> &str {
        self.lock.identity()
    }
    fn describe(&self) -> String {
        self.lock.describe()
    }
}

struct Candidate {
    id: &'static str,
    elector: Arc<LeaderElector<Partitionable>>,
    cut: Arc<AtomicBool>,
    cancel: CancellationToken,
}

/// How many candidates run leader work right now, and the most ever at once.
#[derive(Default)]
struct Ledger {
    now: AtomicUsize,
    most: AtomicUsize,
    starts: AtomicUsize,
}

/// Leader work in progress, uncounted when it ends or is dropped.
struct Acting(Arc<Ledger>);

impl Drop for Acting {
    fn drop(&mut self) {
        self.0.now.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn start_sim() -> (ApiServerSim, RestClient) {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let config = Config::new(sim.url().parse().unwrap());
    let client = RestClient::new(&config).unwrap();
    (sim, client)
}

fn candidate(client: &RestClient, id: &'static str) -> Candidate {
    let cut = Arc::new(AtomicBool::new(false));
    let lock = Partitionable {
        lock: LeaseLock::new(client, "kube-system", "sample-controller", id),
        cut: cut.clone(),
    };
    let config = LeaderElectionConfig {
        name: "sample-controller".into(),
        release_on_cancel: true,
        ..LeaderElectionConfig::default()
    };
    Candidate {
        id,
        elector: Arc::new(LeaderElector::new(lock, config).unwrap()),
        cut,
        cancel: CancellationToken::new(),
    }
}

fn campaign(c: &Candidate, ledger: &Arc<Ledger>) -> tokio::task::JoinHandle<Ended> {
    let (elector, cancel, ledger) = (c.elector.clone(), c.cancel.clone(), ledger.clone());
    tokio::spawn(async move {
        elector
            .run(cancel, |leading| async move {
                let now = ledger.now.fetch_add(1, Ordering::SeqCst) + 1;
                ledger.most.fetch_max(now, Ordering::SeqCst);
                ledger.starts.fetch_add(1, Ordering::SeqCst);
                // Counted until the work returns or is dropped (fenced after a lost lease).
                let _acting = Acting(ledger.clone());
                leading.cancelled().await;
            })
            .await
    })
}

async fn lease(client: &RestClient) -> Lease {
    ResourceClient::<Lease>::namespaced(client, "kube-system")
        .get("sample-controller", &GetParams::default())
        .await
        .unwrap()
}

fn leaders(candidates: &[Candidate]) -> Vec<&'static str> {
    candidates
        .iter()
        .filter(|c| c.elector.is_leader())
        .map(|c| c.id)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn three_replicas_one_leader_and_handovers() {
    let (_sim, client) = start_sim().await;
    let ledger = Arc::new(Ledger::default());
    let candidates: Vec<Candidate> = ["a", "b", "c"]
        .into_iter()
        .map(|id| candidate(&client, id))
        .collect();
    let mut runs: Vec<_> = candidates
        .iter()
        .map(|c| Some(campaign(c, &ledger)))
        .collect();

    tokio::time::sleep(Duration::from_secs(30)).await;
    let first = leaders(&candidates);
    assert_eq!(first.len(), 1, "{first:?}");
    let stored = lease(&client).await;
    assert_eq!(stored.spec.holder_identity, first[0]);
    assert_eq!(stored.spec.lease_duration_seconds, 15);
    assert!(!stored.metadata.resource_version.is_empty());

    // The leader is cut off: it stops within its renew deadline, and another takes over.
    let leader = candidates.iter().position(|c| c.id == first[0]).unwrap();
    candidates[leader].cut.store(true, Ordering::SeqCst);
    let ended = runs[leader].take().unwrap().await.unwrap();
    assert_eq!(ended, Ended::Lost);
    tokio::time::sleep(Duration::from_secs(30)).await;
    let second = leaders(&candidates);
    assert_eq!(second.len(), 1, "{second:?}");
    assert_ne!(second[0], first[0]);
    let stored = lease(&client).await;
    assert_eq!(stored.spec.holder_identity, second[0]);
    assert_eq!(stored.spec.leader_transitions, 1);

    // The new leader shuts down gracefully: it releases, the last one takes over at once.
    let next = candidates.iter().position(|c| c.id == second[0]).unwrap();
    candidates[next].cancel.cancel();
    assert_eq!(runs[next].take().unwrap().await.unwrap(), Ended::Cancelled);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let third = leaders(&candidates);
    assert_eq!(third.len(), 1);
    assert!(third[0] != first[0] && third[0] != second[0]);

    for c in &candidates {
        c.cancel.cancel();
    }
    for run in runs.into_iter().flatten() {
        run.await.unwrap();
    }
    assert_eq!(
        ledger.most.load(Ordering::SeqCst),
        1,
        "never two leaders at once"
    );
    assert_eq!(ledger.starts.load(Ordering::SeqCst), 3);
    assert_eq!(
        lease(&client).await.spec.holder_identity,
        "",
        "released at the end"
    );
}

#[tokio::test(start_paused = true)]
async fn the_leader_survives_a_brief_api_server_outage() {
    let (sim, client) = start_sim().await;
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&client, "a");
    let run_a = campaign(&a, &ledger);
    tokio::time::sleep(Duration::from_secs(5)).await;
    let b = candidate(&client, "b");
    let run_b = campaign(&b, &ledger);
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(a.elector.is_leader());

    // The next four lease requests fail with 500 (no Retry-After: no client retry).
    let injected = sim.faults().injected();
    sim.faults().fail_next(
        4,
        RequestMatch::new("update", "leases"),
        InjectedError::InternalError,
    );
    sim.faults().fail_next(
        4,
        RequestMatch::new("get", "leases"),
        InjectedError::InternalError,
    );
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        sim.faults().injected() - injected,
        8,
        "every injected error was answered: the outage happened"
    );

    assert!(a.elector.is_leader(), "a kept the lease through the outage");
    assert!(!b.elector.is_leader());
    assert_eq!(ledger.starts.load(Ordering::SeqCst), 1);
    a.cancel.cancel();
    b.cancel.cancel();
    run_a.await.unwrap();
    run_b.await.unwrap();
    assert_eq!(ledger.most.load(Ordering::SeqCst), 1);
}
