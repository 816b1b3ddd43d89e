//! Elections between candidates sharing an in-memory lease with optimistic concurrency, on
//! tokio's paused clock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use clientgo_leaderelection::{
    Ended, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, Lock, LockError,
};
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The lease as an API server would keep it: a record and a version bumped on every write.
#[derive(Default)]
struct Server {
    lease: Mutex<Option<(LeaderElectionRecord, u64)>>,
}

impl Server {
    fn record(&self) -> Option<LeaderElectionRecord> {
        self.lease.lock().as_ref().map(|(record, _)| record.clone())
    }
}

/// One candidate's view of the server: remembers the version it last saw; can be cut off.
struct MemLock {
    server: Arc<Server>,
    identity: String,
    seen: Mutex<Option<u64>>,
    down: Arc<AtomicBool>,
}

fn unreachable() -> LockError {
    LockError::Other("connection refused".into())
}

impl Lock for MemLock {
    async fn get(&self) -> Result<Option<LeaderElectionRecord>, LockError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(unreachable());
        }
        let lease = self.server.lease.lock();
        *self.seen.lock() = lease.as_ref().map(|(_, version)| *version);
        Ok(lease.as_ref().map(|(record, _)| record.clone()))
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(unreachable());
        }
        let mut lease = self.server.lease.lock();
        if lease.is_some() {
            return Err(LockError::AlreadyExists);
        }
        *lease = Some((record.clone(), 1));
        *self.seen.lock() = Some(1);
        Ok(())
    }

    async fn update(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        if self.down.load(Ordering::SeqCst) {
            return Err(unreachable());
        }
        let mut lease = self.server.lease.lock();
        let mut seen = self.seen.lock();
        match lease.as_mut() {
            Some((stored, version)) if Some(*version) == *seen => {
                *stored = record.clone();
                *version += 1;
                *seen = Some(*version);
                Ok(())
            }
            Some(_) => Err(LockError::Conflict),
            None => Err(LockError::Other("lease not found".into())),
        }
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        "test/lease".to_owned()
    }
}

/// A candidate: its elector, its network switch, and a log of its leadership.
struct Candidate {
    elector: Arc<LeaderElector<MemLock>>,
    down: Arc<AtomicBool>,
    cancel: CancellationToken,
}

/// Shared between candidates: how many lead right now, and when leadership started/stopped.
#[derive(Default)]
struct Ledger {
    leading: AtomicUsize,
    max_leading: AtomicUsize,
    log: Mutex<Vec<(String, &'static str, Instant)>>,
}

impl Ledger {
    fn note(&self, who: &str, what: &'static str) {
        self.log.lock().push((who.to_owned(), what, Instant::now()));
    }

    fn starts_of(&self, who: &str) -> Vec<Instant> {
        self.log
            .lock()
            .iter()
            .filter(|(w, what, _)| w == who && *what == "start")
            .map(|(_, _, at)| *at)
            .collect()
    }

    fn stops_of(&self, who: &str) -> Vec<Instant> {
        self.log
            .lock()
            .iter()
            .filter(|(w, what, _)| w == who && *what == "stop")
            .map(|(_, _, at)| *at)
            .collect()
    }
}

fn config(release_on_cancel: bool) -> LeaderElectionConfig {
    LeaderElectionConfig {
        name: "test".into(),
        release_on_cancel,
        ..LeaderElectionConfig::default()
    }
}

fn candidate(server: &Arc<Server>, identity: &str, release_on_cancel: bool) -> Candidate {
    let down = Arc::new(AtomicBool::new(false));
    let lock = MemLock {
        server: server.clone(),
        identity: identity.to_owned(),
        seen: Mutex::new(None),
        down: down.clone(),
    };
    Candidate {
        elector: Arc::new(LeaderElector::new(lock, config(release_on_cancel)).unwrap()),
        down,
        cancel: CancellationToken::new(),
    }
}

/// Runs the candidate's election in a task; its leader work records itself in the ledger
/// and checks that nobody else leads.
fn campaign(c: &Candidate, who: &str, ledger: &Arc<Ledger>) -> tokio::task::JoinHandle<Ended> {
    let (elector, cancel, ledger, who) = (
        c.elector.clone(),
        c.cancel.clone(),
        ledger.clone(),
        who.to_owned(),
    );
    tokio::spawn(async move {
        elector
            .run(cancel, |leading| async move {
                let now = ledger.leading.fetch_add(1, Ordering::SeqCst) + 1;
                ledger.max_leading.fetch_max(now, Ordering::SeqCst);
                ledger.note(&who, "start");
                leading.cancelled().await;
                ledger.note(&who, "stop");
                ledger.leading.fetch_sub(1, Ordering::SeqCst);
            })
            .await
    })
}

#[tokio::test(start_paused = true)]
async fn a_single_candidate_leads_and_releases_on_cancel() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&server, "a", true);
    let run = campaign(&a, "a", &ledger);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert!(a.elector.is_leader());
    assert_eq!(a.elector.leader().as_deref(), Some("a"));
    let record = server.record().unwrap();
    assert_eq!(
        (
            record.holder_identity.as_str(),
            record.lease_duration_seconds
        ),
        ("a", 15)
    );

    a.cancel.cancel();
    assert_eq!(run.await.unwrap(), Ended::Cancelled);
    assert_eq!(
        ledger.leading.load(Ordering::SeqCst),
        0,
        "the leader work drained"
    );
    let released = server.record().unwrap();
    assert_eq!(released.holder_identity, "", "released");
    assert_eq!(released.lease_duration_seconds, 1);
    assert!(!a.elector.is_leader());
}

#[tokio::test(start_paused = true)]
async fn exactly_one_of_three_leads_and_a_release_hands_over_quickly() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let candidates: Vec<(Candidate, &str)> = ["a", "b", "c"]
        .into_iter()
        .map(|id| (candidate(&server, id, true), id))
        .collect();
    let runs: Vec<_> = candidates
        .iter()
        .map(|(c, id)| campaign(c, id, &ledger))
        .collect();
    tokio::time::sleep(Duration::from_secs(120)).await;
    let leaders: Vec<&str> = candidates
        .iter()
        .filter(|(c, _)| c.elector.is_leader())
        .map(|(_, id)| *id)
        .collect();
    assert_eq!(leaders.len(), 1, "{leaders:?}");
    let first = leaders[0];
    assert_eq!(server.record().unwrap().leader_transitions, 0);

    // The leader steps down and releases: another takes over within a jittered retry period.
    let released_at = Instant::now();
    candidates
        .iter()
        .find(|(_, id)| *id == first)
        .unwrap()
        .0
        .cancel
        .cancel();
    tokio::time::sleep(Duration::from_secs(10)).await;
    let record = server.record().unwrap();
    assert!(!record.holder_identity.is_empty() && record.holder_identity != first);
    assert_eq!(record.leader_transitions, 1);
    let takeover = ledger.starts_of(&record.holder_identity)[0];
    assert!(
        takeover - released_at <= Duration::from_millis(4400),
        "{:?}",
        takeover - released_at
    );

    for (c, _) in &candidates {
        c.cancel.cancel();
    }
    for run in runs {
        run.await.unwrap();
    }
    assert_eq!(
        ledger.max_leading.load(Ordering::SeqCst),
        1,
        "never two leaders at once"
    );
}

#[tokio::test(start_paused = true)]
async fn a_leader_cut_off_stops_before_another_takes_over() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&server, "a", false);
    let run_a = campaign(&a, "a", &ledger);
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(a.elector.is_leader());
    let b = candidate(&server, "b", false);
    let run_b = campaign(&b, "b", &ledger);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(!b.elector.is_leader(), "b waits while a renews");

    let cut = Instant::now();
    a.down.store(true, Ordering::SeqCst);
    assert_eq!(run_a.await.unwrap(), Ended::Lost);
    let a_stopped = ledger.stops_of("a")[0];
    assert!(
        a_stopped - cut <= Duration::from_secs(10),
        "a stops within the renew deadline"
    );

    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(
        b.elector.is_leader(),
        "b takes over once the lease expired for it"
    );
    let b_started = ledger.starts_of("b")[0];
    assert!(
        b_started > a_stopped,
        "no overlap: a stopped at {a_stopped:?}, b started at {b_started:?}"
    );
    assert!(
        b_started - a_stopped >= Duration::from_secs(3),
        "the safety margin is kept"
    );
    b.cancel.cancel();
    run_b.await.unwrap();
    assert_eq!(ledger.max_leading.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn a_brief_outage_keeps_the_leader() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&server, "a", false);
    let b = candidate(&server, "b", false);
    let run_a = campaign(&a, "a", &ledger);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let run_b = campaign(&b, "b", &ledger);
    tokio::time::sleep(Duration::from_secs(20)).await;

    // The API server is unreachable for everyone for 6 s: less than the renew deadline.
    a.down.store(true, Ordering::SeqCst);
    b.down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(6)).await;
    a.down.store(false, Ordering::SeqCst);
    b.down.store(false, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(60)).await;

    assert!(a.elector.is_leader());
    assert!(!b.elector.is_leader());
    assert_eq!(ledger.starts_of("a").len(), 1, "a never stepped down");
    assert!(ledger.starts_of("b").is_empty());
    a.cancel.cancel();
    b.cancel.cancel();
    assert_eq!(run_a.await.unwrap(), Ended::Cancelled);
    assert_eq!(run_b.await.unwrap(), Ended::Cancelled);
}

#[tokio::test(start_paused = true)]
async fn leader_work_that_returns_ends_leadership() {
    let server = Arc::new(Server::default());
    let a = candidate(&server, "a", true);
    let ended = a
        .elector
        .run(a.cancel.clone(), |_| {
            tokio::time::sleep(Duration::from_secs(5))
        })
        .await;
    assert_eq!(ended, Ended::WorkFinished);
    assert_eq!(server.record().unwrap().holder_identity, "");
}

#[tokio::test(start_paused = true)]
async fn new_leaders_are_announced() {
    let server = Arc::new(Server::default());
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let down = Arc::new(AtomicBool::new(false));
    let lock = |id: &str| MemLock {
        server: server.clone(),
        identity: id.to_owned(),
        seen: Mutex::new(None),
        down: down.clone(),
    };
    let a = LeaderElector::new(lock("a"), config(true)).unwrap();
    let b = {
        let seen = seen.clone();
        LeaderElector::new(lock("b"), config(true))
            .unwrap()
            .on_new_leader(move |holder| seen.lock().push(holder.to_owned()))
    };
    let cancel_a = CancellationToken::new();
    let cancel_b = CancellationToken::new();
    let run_a = {
        let cancel = cancel_a.clone();
        async move { a.run(cancel, |t| async move { t.cancelled().await }).await }
    };
    let run_b = async {
        tokio::time::sleep(Duration::from_secs(1)).await;
        b.run(cancel_b.clone(), |t| async move { t.cancelled().await })
            .await
    };
    let script = async {
        tokio::time::sleep(Duration::from_secs(20)).await;
        cancel_a.cancel();
        tokio::time::sleep(Duration::from_secs(20)).await;
        cancel_b.cancel();
    };
    let (ended_a, ended_b, ()) = tokio::join!(run_a, run_b, script);
    assert_eq!((ended_a, ended_b), (Ended::Cancelled, Ended::Cancelled));
    assert_eq!(*seen.lock(), ["a", "b"]);
}

#[test]
fn an_empty_identity_is_refused() {
    let lock = MemLock {
        server: Arc::default(),
        identity: String::new(),
        seen: Mutex::new(None),
        down: Arc::default(),
    };
    assert!(LeaderElector::new(lock, config(false)).is_err());
}
