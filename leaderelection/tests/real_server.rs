//! Leader election on a real `coordination.k8s.io/v1` Lease, served by kube-apiserver 1.36
//! (clientgo-envtest), in real time with short durations: two candidates, one leader at a
//! time, the holder on the server is the leader; a leader that steps down releases the lease
//! so that the other takes over without waiting for it to expire, and the lease of a leader
//! that vanished passes to the other only once it has expired.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clientgo_envtest::ControlPlane;
use clientgo_leaderelection::{
    Ended, LeaderElectionConfig, LeaderElector, Lease, LeaseLock, leader_election_client,
};
use clientgo_rest::{Config, GetParams, ResourceClient, RestClient};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The bound of every wait.
const WAIT: Duration = Duration::from_secs(30);
const LEASE: &str = "real-election";

fn config(cp: &ControlPlane) -> Config {
    Config::from_kubeconfig_file(cp.kubeconfig_path()).expect("the kubeconfig loads")
}

/// Short durations: a 2 s lease, renewals given up after 1.5 s, attempts every 0.2 s.
fn election() -> LeaderElectionConfig {
    LeaderElectionConfig {
        name: LEASE.into(),
        lease_duration: Duration::from_secs(2),
        renew_deadline: Duration::from_millis(1500),
        retry_period: Duration::from_millis(200),
        release_on_cancel: true,
        ..LeaderElectionConfig::default()
    }
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

struct Candidate {
    id: &'static str,
    elector: Arc<LeaderElector<LeaseLock>>,
    cancel: CancellationToken,
    run: JoinHandle<Ended>,
}

/// Starts campaigning as `id`, through a leader-election client of its own.
fn campaign(
    cp: &ControlPlane,
    namespace: &str,
    id: &'static str,
    ledger: &Arc<Ledger>,
) -> Candidate {
    let election = election();
    let client = leader_election_client(&config(cp), &election).expect("a client");
    let lock = LeaseLock::new(&client, namespace, LEASE, id);
    let elector = Arc::new(LeaderElector::new(lock, election).expect("a valid configuration"));
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (elector, cancel, ledger) = (elector.clone(), cancel.clone(), ledger.clone());
        async move {
            elector
                .run(cancel, |leading| async move {
                    let now = ledger.now.fetch_add(1, Ordering::SeqCst) + 1;
                    ledger.most.fetch_max(now, Ordering::SeqCst);
                    ledger.starts.fetch_add(1, Ordering::SeqCst);
                    let _acting = Acting(ledger.clone());
                    leading.cancelled().await;
                })
                .await
        }
    });
    Candidate {
        id,
        elector,
        cancel,
        run,
    }
}

async fn lease(client: &RestClient, namespace: &str) -> Lease {
    ResourceClient::<Lease>::namespaced(client, namespace)
        .get(LEASE, &GetParams::default())
        .await
        .expect("the Lease exists")
}

/// Waits at most [`WAIT`] for `done`, checking every 20 ms.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn two_candidates_one_leader_and_a_released_lease_passes_to_the_other() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let namespace = cp.create_namespace("election").unwrap();
    let client = RestClient::new(&config(cp)).unwrap();
    let ledger = Arc::new(Ledger::default());
    let candidates = [
        campaign(cp, &namespace, "candidate-a", &ledger),
        campaign(cp, &namespace, "candidate-b", &ledger),
    ];
    let leaders = || -> Vec<&'static str> {
        candidates
            .iter()
            .filter(|c| c.elector.is_leader())
            .map(|c| c.id)
            .collect()
    };
    eventually("a leader", || !leaders().is_empty()).await;
    let leader = leaders()[0];
    let at = usize::from(candidates[1].id == leader);
    let (leading, following) = (&candidates[at], &candidates[1 - at]);

    // The leader renews the Lease several times (each renewal a new renewTime on the
    // server) while the other only watches.
    let mut renewals: Vec<String> = Vec::new();
    let deadline = Instant::now() + WAIT;
    while renewals.len() < 4 {
        assert!(Instant::now() < deadline, "renewals: {renewals:?}");
        let stored = lease(&client, &namespace).await;
        assert_eq!(stored.spec.holder_identity, leader);
        assert_eq!(stored.spec.lease_duration_seconds, 2);
        assert_eq!(stored.spec.leader_transitions, 0);
        let renewed = format!("{:?}", stored.spec.renew_time.expect("a renewTime"));
        if renewals.last() != Some(&renewed) {
            renewals.push(renewed);
        }
        assert_eq!(leaders(), [leader], "exactly one leader");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(following.elector.leader().as_deref(), Some(leader));
    assert_eq!(ledger.starts.load(Ordering::SeqCst), 1);

    // The leader steps down: its work is fenced, then the Lease is released.
    let stepped_down = Instant::now();
    leading.cancel.cancel();
    eventually("the leader's run returns", || leading.run.is_finished()).await;
    let after_release = lease(&client, &namespace).await;
    assert_ne!(
        after_release.spec.holder_identity, leader,
        "released: {:?}",
        after_release.spec
    );
    eventually("the other candidate leads", || {
        following.elector.is_leader()
    })
    .await;
    let took_over = stepped_down.elapsed();
    println!("took over {took_over:?} after the leader stepped down");

    let stored = lease(&client, &namespace).await;
    assert_eq!(stored.spec.holder_identity, following.id);
    assert_eq!(stored.spec.leader_transitions, 1);
    assert_eq!(
        ledger.most.load(Ordering::SeqCst),
        1,
        "never two leaders at once"
    );
    assert_eq!(ledger.starts.load(Ordering::SeqCst), 2);
    assert!(!following.run.is_finished());

    for candidate in &candidates {
        candidate.cancel.cancel();
    }
    let [a, b] = candidates;
    let ended = [a.run.await.unwrap(), b.run.await.unwrap()];
    assert_eq!(ended, [Ended::Cancelled, Ended::Cancelled]);
    let released = lease(&client, &namespace).await;
    assert_eq!(
        released.spec.holder_identity, "",
        "the last leader released too"
    );
}

#[tokio::test]
async fn a_leader_that_vanishes_without_releasing_is_replaced_once_its_lease_expires() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let namespace = cp.create_namespace("election").unwrap();
    let client = RestClient::new(&config(cp)).unwrap();
    let ledger = Arc::new(Ledger::default());
    let first = campaign(cp, &namespace, "first", &ledger);
    eventually("the first candidate leads", || first.elector.is_leader()).await;
    let second = campaign(cp, &namespace, "second", &ledger);
    eventually("the second candidate sees the leader", || {
        second.elector.leader().as_deref() == Some("first")
    })
    .await;

    // Catch a renewal: it was written after `renewed_after`, and the second candidate
    // cannot have seen it earlier.
    let seen = lease(&client, &namespace).await.spec.renew_time;
    let deadline = Instant::now() + WAIT;
    let renewed_after = loop {
        assert!(Instant::now() < deadline, "no renewal");
        let asked = Instant::now();
        if lease(&client, &namespace).await.spec.renew_time != seen {
            break asked;
        }
    };
    // A crash: the leader's task is gone, nothing released.
    first.run.abort();
    assert!(first.run.await.unwrap_err().is_cancelled());
    assert_eq!(
        lease(&client, &namespace).await.spec.holder_identity,
        "first"
    );
    eventually("the second candidate leads", || second.elector.is_leader()).await;
    let took_over = renewed_after.elapsed();
    println!("took over {took_over:?} after the last renewal seen");
    // The lease lasts 2 s from when the other candidate saw the last renewal.
    assert!(
        took_over >= election().lease_duration,
        "the lease was respected: {took_over:?}"
    );
    let stored = lease(&client, &namespace).await;
    assert_eq!(stored.spec.holder_identity, "second");
    assert_eq!(stored.spec.leader_transitions, 1);
    assert_eq!(
        ledger.most.load(Ordering::SeqCst),
        1,
        "never two leaders at once"
    );

    second.cancel.cancel();
    assert_eq!(second.run.await.unwrap(), Ended::Cancelled);
}
