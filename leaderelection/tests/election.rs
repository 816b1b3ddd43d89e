//! Elections between candidates sharing an in-memory lease with optimistic concurrency, on
//! tokio's paused clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use clientgo_leaderelection::{
    Ended, LeaderElectionConfig, LeaderElectionRecord, LeaderElector, Lock, LockError,
};

use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// The lease as an API server would keep it: a record and a version bumped on every write,
/// and when each candidate's writes were applied.
#[derive(Default)]
struct Server {
    lease: Mutex<Option<(LeaderElectionRecord, u64)>>,
    applied: Mutex<Vec<(String, Instant)>>,
}

impl Server {
    fn record(&self) -> Option<LeaderElectionRecord> {
        self.lease.lock().as_ref().map(|(record, _)| record.clone())
    }

    /// When the writes of `who` were applied.
    fn applied_by(&self, who: &str) -> Vec<Instant> {
        self.applied
            .lock()
            .iter()
            .filter(|(w, _)| w == who)
            .map(|(_, at)| *at)
            .collect()
    }
}

/// What goes wrong between one candidate and the server.
#[derive(Default)]
struct Faults {
    /// Every request fails at once.
    down: AtomicBool,
    /// The next this many requests never get an answer.
    hang_next: AtomicUsize,
    /// Writes are applied at once, but answered this long after.
    answer_after: Mutex<Duration>,
    /// How long each request that was abandoned had been waiting.
    abandoned: Mutex<Vec<Duration>>,
    /// How many requests were started.
    started: AtomicUsize,
}

/// Notes how long a request waited if it is dropped before it completes.
struct Pending<'a> {
    faults: &'a Faults,
    since: Instant,
    done: bool,
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.faults.abandoned.lock().push(self.since.elapsed());
        }
    }
}

/// One candidate's view of the server: remembers the version it last saw; can be cut off,
/// hung or slowed down.
struct MemLock {
    server: Arc<Server>,
    identity: String,
    seen: Mutex<Option<u64>>,
    faults: Arc<Faults>,
}

fn unreachable() -> LockError {
    LockError::Other("connection refused".into())
}

impl MemLock {
    /// Runs one request through the faults: fails, hangs, or applies `apply` and answers,
    /// late if told to.
    async fn request<T>(
        &self,
        apply: impl FnOnce() -> Result<T, LockError>,
    ) -> Result<T, LockError> {
        self.faults.started.fetch_add(1, Ordering::SeqCst);
        let mut pending = Pending {
            faults: &self.faults,
            since: Instant::now(),
            done: false,
        };
        if self.faults.down.load(Ordering::SeqCst) {
            pending.done = true;
            return Err(unreachable());
        }
        let hang = self
            .faults
            .hang_next
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if hang {
            std::future::pending::<()>().await;
        }
        let result = apply();
        let late = *self.faults.answer_after.lock();
        if !late.is_zero() {
            tokio::time::sleep(late).await;
        }
        pending.done = true;
        result
    }

    fn write(&self, record: &LeaderElectionRecord, create: bool) -> Result<(), LockError> {
        let mut lease = self.server.lease.lock();
        let mut seen = self.seen.lock();
        match lease.as_mut() {
            Some(_) if create => Err(LockError::AlreadyExists),
            None if create => {
                *lease = Some((record.clone(), 1));
                *seen = Some(1);
                self.applied(record);
                Ok(())
            }
            Some((stored, version)) if Some(*version) == *seen => {
                *stored = record.clone();
                *version += 1;
                *seen = Some(*version);
                self.applied(record);
                Ok(())
            }
            Some(_) => Err(LockError::Conflict),
            None => Err(LockError::Other("lease not found".into())),
        }
    }

    fn applied(&self, record: &LeaderElectionRecord) {
        if record.holder_identity == self.identity {
            self.server
                .applied
                .lock()
                .push((self.identity.clone(), Instant::now()));
        }
    }
}

impl Lock for MemLock {
    async fn get(&self) -> Result<Option<LeaderElectionRecord>, LockError> {
        self.request(|| {
            let lease = self.server.lease.lock();
            *self.seen.lock() = lease.as_ref().map(|(_, version)| *version);
            Ok(lease.as_ref().map(|(record, _)| record.clone()))
        })
        .await
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        self.request(|| self.write(record, true)).await
    }

    async fn update(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        self.request(|| self.write(record, false)).await
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        "test/lease".to_owned()
    }
}

/// A candidate: its elector, its faults, and its cancel switch.
struct Candidate {
    elector: Arc<LeaderElector<MemLock>>,
    faults: Arc<Faults>,
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

/// Leader work in progress: counted in the ledger from its start until it returns or is
/// dropped (fenced).
struct Acting {
    ledger: Arc<Ledger>,
    who: String,
}

impl Acting {
    fn start(ledger: &Arc<Ledger>, who: &str) -> Acting {
        let now = ledger.leading.fetch_add(1, Ordering::SeqCst) + 1;
        ledger.max_leading.fetch_max(now, Ordering::SeqCst);
        ledger.note(who, "start");
        Acting {
            ledger: ledger.clone(),
            who: who.to_owned(),
        }
    }
}

impl Drop for Acting {
    fn drop(&mut self) {
        self.ledger.note(&self.who, "stop");
        self.ledger.leading.fetch_sub(1, Ordering::SeqCst);
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
    let faults = Arc::new(Faults::default());
    let lock = MemLock {
        server: server.clone(),
        identity: identity.to_owned(),
        seen: Mutex::new(None),
        faults: faults.clone(),
    };
    Candidate {
        elector: Arc::new(LeaderElector::new(lock, config(release_on_cancel)).unwrap()),
        faults,
        cancel: CancellationToken::new(),
    }
}

/// How the leader work reacts to its token being cancelled.
#[derive(Clone, Copy)]
enum Work {
    /// Returns at once.
    Prompt,
    /// Takes this long to return.
    Drains(Duration),
    /// Never returns: only dropping it stops it.
    Ignores,
}

/// Runs the candidate's election in a task; its leader work records itself in the ledger.
fn campaign(c: &Candidate, who: &str, ledger: &Arc<Ledger>) -> tokio::task::JoinHandle<Ended> {
    campaign_with(c, who, ledger, Work::Prompt)
}

fn campaign_with(
    c: &Candidate,
    who: &str,
    ledger: &Arc<Ledger>,
    work: Work,
) -> tokio::task::JoinHandle<Ended> {
    let (elector, cancel, ledger, who) = (
        c.elector.clone(),
        c.cancel.clone(),
        ledger.clone(),
        who.to_owned(),
    );
    tokio::spawn(async move {
        elector
            .run(cancel, |leading| async move {
                let _acting = Acting::start(&ledger, &who);
                leading.cancelled().await;
                match work {
                    Work::Prompt => {}
                    Work::Drains(time) => tokio::time::sleep(time).await,
                    Work::Ignores => std::future::pending().await,
                }
            })
            .await
    })
}

/// Checks `condition` every 10 ms of paused time, for at most 60 s.
async fn wait_for(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Waits (at most `bound` of paused time) for `run` to end.
async fn ended_within(run: tokio::task::JoinHandle<Ended>, bound: Duration) -> Ended {
    tokio::time::timeout(bound, run)
        .await
        .expect("the election ends within the bound")
        .unwrap()
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
    a.faults.down.store(true, Ordering::SeqCst);
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
    a.faults.down.store(true, Ordering::SeqCst);
    b.faults.down.store(true, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(6)).await;
    a.faults.down.store(false, Ordering::SeqCst);
    b.faults.down.store(false, Ordering::SeqCst);
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
    assert!(!a.elector.fence().is_valid(), "fenced");
}

#[tokio::test(start_paused = true)]
async fn new_leaders_are_announced() {
    let server = Arc::new(Server::default());
    let seen = Arc::new(Mutex::new(Vec::<String>::new()));
    let lock = |id: &str| MemLock {
        server: server.clone(),
        identity: id.to_owned(),
        seen: Mutex::new(None),
        faults: Arc::default(),
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
        faults: Arc::default(),
    };
    assert!(LeaderElector::new(lock, config(false)).is_err());
}

/// The lease counts from when a renewal was sent: a leader whose renewals are applied at
/// once but answered 3 s late, then cut off, fences its work within the renew deadline of
/// the last renewal the server applied, not of the last answer it got. (Each renewal is
/// answered 2 × 3 s + the 2 s retry period after the previous one was sent, within the 10 s
/// renew deadline; at 4 s late it would be answered exactly at the deadline, when the lease
/// has already lapsed.)
#[tokio::test(start_paused = true)]
async fn the_lease_is_counted_from_when_the_renewal_was_sent() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&server, "a", false);
    let run = campaign(&a, "a", &ledger);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(a.elector.is_leader());

    *a.faults.answer_after.lock() = Duration::from_secs(3);
    tokio::time::sleep(Duration::from_secs(20)).await;
    let applied = server.applied_by("a").len();
    // Cut off right after a renewal was applied, while its answer is still on the way.
    wait_for("a renews", || server.applied_by("a").len() > applied).await;
    a.faults.down.store(true, Ordering::SeqCst);
    assert_eq!(
        ended_within(run, Duration::from_secs(60)).await,
        Ended::Lost
    );

    let last_applied = *server.applied_by("a").last().unwrap();
    let fenced = ledger.stops_of("a")[0];
    let renew_deadline = LeaderElectionConfig::default().renew_deadline;
    assert!(
        fenced - last_applied <= renew_deadline,
        "fenced {:?} after the last renewal was applied",
        fenced - last_applied
    );
}

/// Every acquire or renew attempt is abandoned after the request timeout (half the renew
/// deadline): a candidate whose first requests hang still campaigns and leads, and a leader
/// whose renewal hangs retries in time and keeps the lease.
#[tokio::test(start_paused = true)]
async fn every_lease_request_has_a_deadline_shorter_than_the_renew_deadline() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&server, "a", false);
    a.faults.hang_next.store(2, Ordering::SeqCst);
    let run = campaign(&a, "a", &ledger);
    wait_for("a leads despite its hung requests", || {
        a.elector.is_leader()
    })
    .await;
    assert_eq!(
        a.faults.abandoned.lock().len(),
        2,
        "both hung requests were abandoned"
    );

    // A renewal hangs: abandoned after the request timeout, the retry renews in time.
    tokio::time::sleep(Duration::from_secs(10)).await;
    a.faults.hang_next.store(1, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        a.faults.hang_next.load(Ordering::SeqCst),
        0,
        "the fault fired"
    );
    assert!(a.elector.is_leader(), "a kept the lease");
    assert_eq!(ledger.starts_of("a").len(), 1);
    assert!(ledger.stops_of("a").is_empty(), "a never stopped leading");

    let config = LeaderElectionConfig::default();
    let abandoned = a.faults.abandoned.lock().clone();
    assert_eq!(abandoned.len(), 3);
    for waited in abandoned {
        assert!(
            waited <= config.request_timeout() && waited < config.renew_deadline,
            "{waited:?}"
        );
    }
    a.cancel.cancel();
    assert_eq!(
        ended_within(run, Duration::from_secs(60)).await,
        Ended::Cancelled
    );
}

/// On a lost lease the work is fenced at once, even work that ignores its token: its future
/// is dropped within the renew deadline of the last renewal, before the lease can expire for
/// anyone else, and the next leader starts after that.
#[tokio::test(start_paused = true)]
async fn lost_leadership_fences_the_work_before_the_lease_can_expire() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&server, "a", true);
    let run_a = campaign_with(&a, "a", &ledger, Work::Ignores);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let b = candidate(&server, "b", true);
    let run_b = campaign(&b, "b", &ledger);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(a.elector.is_leader());

    a.faults.down.store(true, Ordering::SeqCst);
    assert_eq!(
        ended_within(run_a, Duration::from_secs(60)).await,
        Ended::Lost
    );
    let fenced = ledger.stops_of("a");
    assert_eq!(fenced.len(), 1, "a's work was dropped");
    let last_renewal = *server.applied_by("a").last().unwrap();
    let config = LeaderElectionConfig::default();
    assert!(fenced[0] - last_renewal <= config.renew_deadline);
    assert_eq!(
        server.record().unwrap().holder_identity,
        "a",
        "a lost lease is not released"
    );

    wait_for("b takes over", || b.elector.is_leader()).await;
    assert!(ledger.starts_of("b")[0] >= last_renewal + config.lease_duration);
    b.cancel.cancel();
    ended_within(run_b, Duration::from_secs(60)).await;
    assert_eq!(ledger.max_leading.load(Ordering::SeqCst), 1);
}

/// A clean shutdown keeps the lease while the work drains (renewals go on), then releases it.
#[tokio::test(start_paused = true)]
async fn a_clean_shutdown_keeps_renewing_while_the_work_drains() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&server, "a", true);
    let run = campaign_with(&a, "a", &ledger, Work::Drains(Duration::from_secs(8)));
    tokio::time::sleep(Duration::from_secs(20)).await;
    assert!(a.elector.is_leader());

    let cancelled = Instant::now();
    a.cancel.cancel();
    assert_eq!(
        ended_within(run, Duration::from_secs(60)).await,
        Ended::Cancelled
    );
    let stopped = ledger.stops_of("a")[0];
    assert_eq!(
        stopped - cancelled,
        Duration::from_secs(8),
        "the work drained"
    );
    let renewed_while_draining = server
        .applied_by("a")
        .into_iter()
        .filter(|at| *at > cancelled && *at < stopped)
        .count();
    assert!(renewed_while_draining >= 2, "{renewed_while_draining}");
    assert_eq!(server.record().unwrap().holder_identity, "", "released");
}

/// The drain of a clean shutdown is bounded: work that does not stop is dropped at the renew
/// deadline, and the lease is then released.
#[tokio::test(start_paused = true)]
async fn a_drain_that_never_ends_is_cut_at_the_renew_deadline() {
    let server = Arc::new(Server::default());
    let ledger = Arc::new(Ledger::default());
    let a = candidate(&server, "a", true);
    let run = campaign_with(&a, "a", &ledger, Work::Ignores);
    tokio::time::sleep(Duration::from_secs(20)).await;
    let cancelled = Instant::now();
    a.cancel.cancel();
    assert_eq!(
        ended_within(run, Duration::from_secs(60)).await,
        Ended::Cancelled
    );
    let stopped = ledger.stops_of("a")[0];
    assert_eq!(
        stopped - cancelled,
        LeaderElectionConfig::default().renew_deadline
    );
    assert_eq!(server.record().unwrap().holder_identity, "", "released");
}

/// Polls `future` once by hand, as for a task nobody wakes: the test decides when it runs.
fn poll_once<F: Future>(future: Pin<&mut F>) -> Poll<F::Output> {
    future.poll(&mut Context::from_waker(Waker::noop()))
}

/// Leader work that writes every second and ignores its token (only the fence stops it); it
/// counts its polls and records when it started each write.
#[derive(Default)]
struct Writer {
    polls: AtomicUsize,
    writes: Mutex<Vec<Instant>>,
}

impl Writer {
    fn work(writer: Arc<Writer>) -> impl Future<Output = ()> {
        let mut writing = Box::pin({
            let writer = writer.clone();
            async move {
                loop {
                    writer.writes.lock().push(Instant::now());
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        });
        std::future::poll_fn(move |cx| {
            writer.polls.fetch_add(1, Ordering::SeqCst);
            writing.as_mut().poll(cx)
        })
    }

    /// Its polls and writes so far.
    fn seen(&self) -> (usize, usize) {
        (self.polls.load(Ordering::SeqCst), self.writes.lock().len())
    }
}

/// Polls `run` by hand every 100 ms of paused time until `condition` holds (for at most 60 s);
/// it must still be running.
async fn drive_until<F: Future<Output = Ended>>(
    mut run: Pin<&mut F>,
    what: &str,
    condition: impl Fn() -> bool,
) {
    let bound = Instant::now() + Duration::from_secs(60);
    loop {
        assert_eq!(
            poll_once(run.as_mut()),
            Poll::Pending,
            "still running: {what}"
        );
        if condition() {
            return;
        }
        assert!(Instant::now() < bound, "timed out waiting: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The task running the elector stalls (not polled: the process frozen, the VM paused) past
/// the renew deadline. On resuming, the first poll fences: the work is not polled again, so
/// it sends nothing, and no renewal is started either, though a renewal was due.
#[tokio::test(start_paused = true)]
async fn a_stall_past_the_renew_deadline_fences_before_the_work_is_polled_again() {
    let server = Arc::new(Server::default());
    let a = candidate(&server, "a", false);
    let writer = Arc::new(Writer::default());
    let mut run = std::pin::pin!(
        a.elector
            .run(a.cancel.clone(), |_| Writer::work(writer.clone()))
    );
    drive_until(run.as_mut(), "a leads, writes, and renews twice", || {
        !writer.writes.lock().is_empty() && server.applied_by("a").len() >= 3
    })
    .await;

    stall_past_the_deadline_then_resume(run.as_mut(), &a, &writer, &server).await;
    assert!(!a.elector.fence().is_valid());
}

/// Stalls `run` (not polled) for the renew deadline, polls it once, and checks that it was
/// fenced before the work was polled or a lease request started, and did not release.
async fn stall_past_the_deadline_then_resume<F: Future<Output = Ended>>(
    run: Pin<&mut F>,
    a: &Candidate,
    writer: &Writer,
    server: &Server,
) {
    let seen = writer.seen();
    let started = a.faults.started.load(Ordering::SeqCst);
    tokio::time::advance(LeaderElectionConfig::default().renew_deadline).await;
    let resumed = poll_once(run);
    assert_eq!(
        writer.seen(),
        seen,
        "the work was not polled after the stall"
    );
    assert_eq!(
        a.faults.started.load(Ordering::SeqCst),
        started,
        "no lease request was started after the stall"
    );
    assert_eq!(resumed, Poll::Ready(Ended::Lost));
    assert_eq!(
        server.record().unwrap().holder_identity,
        "a",
        "not released"
    );
}

/// The same stall while the work drains after a clean shutdown: fenced on resuming, before the
/// work is polled again, and the lease is not released (it was lost).
#[tokio::test(start_paused = true)]
async fn a_stall_during_the_drain_fences_before_the_work_is_polled_again() {
    let server = Arc::new(Server::default());
    let a = candidate(&server, "a", true);
    let writer = Arc::new(Writer::default());
    let mut run = std::pin::pin!(
        a.elector
            .run(a.cancel.clone(), |_| Writer::work(writer.clone()))
    );
    drive_until(run.as_mut(), "a leads and renews", || {
        server.applied_by("a").len() >= 2
    })
    .await;
    a.cancel.cancel();
    let cancelled = Instant::now();
    drive_until(run.as_mut(), "the work drains for 3 s", || {
        Instant::now() - cancelled >= Duration::from_secs(3)
    })
    .await;

    stall_past_the_deadline_then_resume(run.as_mut(), &a, &writer, &server).await;
}

/// Runs a closure when dropped.
struct OnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

/// The published validity: none before leading; `renew_deadline` after the acquiring write
/// was sent (not answered), then after each renewal was sent; ended before the work is
/// dropped, at a clean shutdown and at a loss, and in the past once `run` returned. One fence,
/// taken before the first run, follows both runs.
#[tokio::test(start_paused = true)]
async fn the_fence_publishes_until_when_the_leader_may_act() {
    let server = Arc::new(Server::default());
    let a = candidate(&server, "a", true);
    let renew_deadline = LeaderElectionConfig::default().renew_deadline;
    let fence = a.elector.fence();
    assert!(!fence.is_valid(), "not valid before leading");
    assert!(fence.valid_until() <= Instant::now());
    *a.faults.answer_after.lock() = Duration::from_secs(1);

    // What the work saw of the fence when it was first polled and when it was dropped.
    let seen = Arc::new(Mutex::new(Vec::<(&'static str, bool, Instant)>::new()));
    let campaign = |cancel: CancellationToken| {
        let (elector, fence, seen) = (a.elector.clone(), fence.clone(), seen.clone());
        tokio::spawn(async move {
            elector
                .run(cancel, |_| async move {
                    let note =
                        move |what| seen.lock().push((what, fence.is_valid(), Instant::now()));
                    note("start");
                    let _dropped = OnDrop(move || note("dropped"));
                    std::future::pending::<()>().await;
                })
                .await
        })
    };

    let mut deadline = fence.deadline();
    let run = campaign(a.cancel.clone());
    let changed = async |deadline: &mut tokio::sync::watch::Receiver<Instant>| {
        tokio::time::timeout(Duration::from_secs(60), deadline.changed())
            .await
            .expect("the deadline changes within 60 s")
            .unwrap();
        *deadline.borrow_and_update()
    };
    let acquired = changed(&mut deadline).await;
    let sent = server.applied_by("a")[0];
    assert_eq!(
        acquired,
        sent + renew_deadline,
        "counted from the acquiring write's send"
    );
    assert_eq!(fence.valid_until(), acquired);
    assert!(fence.is_valid());
    let mut previous = acquired;
    for _ in 0..3 {
        let renewed = changed(&mut deadline).await;
        let sent = *server.applied_by("a").last().unwrap();
        assert_eq!(
            renewed,
            sent + renew_deadline,
            "counted from the renewal's send"
        );
        assert!(renewed > previous, "moves forward");
        assert_eq!(
            Instant::now() - sent,
            Duration::from_secs(1),
            "published at the answer"
        );
        previous = renewed;
    }

    // A clean shutdown: the work ignores its token, so the drain is cut at the renew deadline
    // while the lease is still valid; the fence is published before the work is dropped.
    a.cancel.cancel();
    assert_eq!(
        ended_within(run, Duration::from_secs(60)).await,
        Ended::Cancelled
    );
    assert!(!fence.is_valid());
    assert!(fence.valid_until() <= Instant::now());
    assert_eq!(server.record().unwrap().holder_identity, "", "released");
    {
        let seen = seen.lock();
        let kinds: Vec<_> = seen
            .iter()
            .map(|(what, valid, _)| (*what, *valid))
            .collect();
        assert_eq!(kinds, [("start", true), ("dropped", false)]);
        assert_eq!(fence.valid_until(), seen[1].2, "ended at the fence");
    }
    assert!(deadline.has_changed().unwrap(), "the fence was announced");
    deadline.borrow_and_update();

    // Again, on the same elector and fence: this time the lease is lost.
    seen.lock().clear();
    let run = campaign(CancellationToken::new());
    changed(&mut deadline).await;
    assert!(fence.is_valid(), "the same fence follows the next run");
    let renewed = changed(&mut deadline).await;
    // Cut off right after a renewal was answered: none is in flight.
    a.faults.down.store(true, Ordering::SeqCst);
    assert_eq!(
        ended_within(run, Duration::from_secs(60)).await,
        Ended::Lost
    );
    assert_eq!(
        fence.valid_until(),
        renewed,
        "not moved forward by the fence"
    );
    assert!(!fence.is_valid());
    let seen = seen.lock();
    let kinds: Vec<_> = seen
        .iter()
        .map(|(what, valid, _)| (*what, *valid))
        .collect();
    assert_eq!(kinds, [("start", true), ("dropped", false)]);
    assert_eq!(seen[1].2, renewed, "fenced at the deadline");
}
