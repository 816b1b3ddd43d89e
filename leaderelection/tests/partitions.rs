//! Never two holders acting: two and three candidates campaign for one Lease on apiserver-sim
//! while a seeded script partitions them at random, on tokio's paused clock.
//!
//! Each candidate reaches the sim through a link the script switches between: up; cut
//! (requests fail at once); a black hole (requests never answer); slow answers (the server
//! applies a write at once and the answer arrives up to 8 s later, or never if the candidate
//! gives up first). The script also holds the next Lease update at the server for up to 8 s
//! (the sim's matched delay), and restarts candidates cleanly (cancel, drain, release). Leader
//! work reacts to its token promptly, slowly, or not at all. A candidate whose `run` returns
//! comes back a second later with a new elector, as a restarted process would.
//!
//! A candidate *acts* from the moment its leader work is started (it observed its
//! acquisition) until that work returned or was dropped (its fence), both read on the sim's
//! clock: the sim runs in the test's runtime, so tokio's paused clock is its clock. The
//! check: no two candidates' acting intervals overlap. Each run prints its seed; set
//! `PARTITION_SEED` to replay one.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clientgo_apiserver_sim::faults::RequestMatch;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_leaderelection::{
    LeaderElectionConfig, LeaderElectionRecord, LeaderElector, LeaseLock, Lock, LockError,
    leader_election_client,
};
use clientgo_rest::{Config, RestClient};
use parking_lot::Mutex;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long each seeded run lasts, in paused time.
const RUN_FOR: Duration = Duration::from_secs(300);
/// How many seeds each test runs.
const SEEDS: u64 = 40;

/// SplitMix64: small, seeded, good enough to pick faults.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn millis(&mut self, from: u64, to: u64) -> Duration {
        Duration::from_millis(from + self.below(to - from))
    }
}

/// The state of one candidate's link to the server.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Link {
    Up,
    Cut,
    BlackHole,
    SlowAnswers(Duration),
}

/// A Lease lock behind a link the script controls.
struct Faulty {
    lock: LeaseLock,
    link: Arc<Mutex<Link>>,
    /// Counts each request that meets a fault (not each switch of the link).
    fired: Arc<Fired>,
}

impl Faulty {
    async fn through<T>(
        &self,
        request: impl Future<Output = Result<T, LockError>>,
    ) -> Result<T, LockError> {
        let link = *self.link.lock();
        let met = match link {
            Link::Up => None,
            Link::Cut => Some(&self.fired.cut),
            Link::BlackHole => Some(&self.fired.black_hole),
            Link::SlowAnswers(_) => Some(&self.fired.slow),
        };
        if let Some(met) = met {
            met.fetch_add(1, Ordering::Relaxed);
        }
        match link {
            Link::Up => request.await,
            Link::Cut => Err(LockError::Other("network partition".into())),
            Link::BlackHole => std::future::pending().await,
            Link::SlowAnswers(late) => {
                let answer = request.await;
                tokio::time::sleep(late).await;
                answer
            }
        }
    }
}

impl Lock for Faulty {
    async fn get(&self) -> Result<Option<LeaderElectionRecord>, LockError> {
        self.through(self.lock.get()).await
    }
    async fn create(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        self.through(self.lock.create(record)).await
    }
    async fn update(&self, record: &LeaderElectionRecord) -> Result<(), LockError> {
        self.through(self.lock.update(record)).await
    }
    fn identity(&self) -> &str {
        self.lock.identity()
    }
    fn describe(&self) -> String {
        self.lock.describe()
    }
}

/// Every acting interval: who, from, and until (`None` while acting).
#[derive(Default)]
struct Ledger {
    intervals: Mutex<Vec<(usize, Instant, Option<Instant>)>>,
}

/// Leader work in progress; its interval closes when it returns or is dropped.
struct Acting {
    ledger: Arc<Ledger>,
    index: usize,
}

impl Acting {
    fn start(ledger: &Arc<Ledger>, who: usize) -> Acting {
        let mut intervals = ledger.intervals.lock();
        intervals.push((who, Instant::now(), None));
        Acting {
            ledger: ledger.clone(),
            index: intervals.len() - 1,
        }
    }
}

impl Drop for Acting {
    fn drop(&mut self) {
        self.ledger.intervals.lock()[self.index].2 = Some(Instant::now());
    }
}

/// How leader work reacts to its token.
#[derive(Clone, Copy)]
enum Work {
    Prompt,
    Drains(Duration),
    Ignores,
}

/// One candidate: its link, and the token the script cancels to restart it.
struct Candidate {
    link: Arc<Mutex<Link>>,
    term: Mutex<CancellationToken>,
}

/// Campaigns, term after term, until `stop`: a new elector each time, as a restarted process.
async fn campaign(
    who: usize,
    client: RestClient,
    me: Arc<Candidate>,
    ledger: Arc<Ledger>,
    seed: u64,
    stop: CancellationToken,
    fired: Arc<Fired>,
) {
    let mut rng = Rng(seed ^ (who as u64 + 1).wrapping_mul(0xA076_1D64_78BD_642F));
    while !stop.is_cancelled() {
        let term = stop.child_token();
        *me.term.lock() = term.clone();
        let lock = Faulty {
            lock: LeaseLock::new(&client, "kube-system", "chaos", format!("c{who}")),
            link: me.link.clone(),
            fired: fired.clone(),
        };
        let config = LeaderElectionConfig {
            name: "chaos".into(),
            release_on_cancel: true,
            ..LeaderElectionConfig::default()
        };
        let work = match rng.below(3) {
            0 => Work::Prompt,
            1 => Work::Drains(rng.millis(0, 15_000)),
            _ => Work::Ignores,
        };
        let elector = LeaderElector::new(lock, config).unwrap();
        let ledger = ledger.clone();
        elector
            .run(term, |leading| async move {
                let _acting = Acting::start(&ledger, who);
                leading.cancelled().await;
                match work {
                    Work::Prompt => {}
                    Work::Drains(time) => tokio::time::sleep(time).await,
                    Work::Ignores => std::future::pending().await,
                }
            })
            .await;
        tokio::select! {
            () = stop.cancelled() => {}
            () = tokio::time::sleep(Duration::from_secs(1)) => {}
        }
    }
}

/// The faults that requests met, by kind: cut, black hole, slow answers, held at the server;
/// and the restarts the script made.
#[derive(Default, Debug)]
struct Fired {
    cut: AtomicUsize,
    black_hole: AtomicUsize,
    slow: AtomicUsize,
    held: AtomicUsize,
    restart: AtomicUsize,
}

/// One seeded run with `n` candidates; returns how many acting intervals there were.
async fn run_seed(n: usize, seed: u64, fired: &Arc<Fired>) -> usize {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let ledger = Arc::new(Ledger::default());
    let stop = CancellationToken::new();
    let candidates: Vec<Arc<Candidate>> = (0..n)
        .map(|_| {
            Arc::new(Candidate {
                link: Arc::new(Mutex::new(Link::Up)),
                term: Mutex::new(CancellationToken::new()),
            })
        })
        .collect();
    let runs: Vec<_> = candidates
        .iter()
        .enumerate()
        .map(|(who, me)| {
            let mut config = Config::new(sim.url().parse().unwrap());
            config.user_agent = format!("candidate-{who}");
            let client = leader_election_client(&config, &LeaderElectionConfig::default()).unwrap();
            tokio::spawn(campaign(
                who,
                client,
                me.clone(),
                ledger.clone(),
                seed,
                stop.clone(),
                fired.clone(),
            ))
        })
        .collect();

    let mut rng = Rng(seed);
    let end = Instant::now() + RUN_FOR;
    while Instant::now() < end {
        tokio::time::sleep(rng.millis(500, 6_000)).await;
        let c = &candidates[rng.below(n as u64) as usize];
        let roll = rng.below(100);
        let link = match roll {
            0..40 => Link::Up,
            40..55 => Link::Cut,
            55..65 => Link::BlackHole,
            65..80 => Link::SlowAnswers(rng.millis(500, 8_000)),
            80..90 => {
                let held = rng.millis(500, 8_000);
                sim.faults()
                    .delay_next(1, RequestMatch::new("update", "leases"), held);
                continue;
            }
            _ => {
                c.term.lock().cancel();
                fired.restart.fetch_add(1, Ordering::Relaxed);
                continue;
            }
        };
        *c.link.lock() = link;
    }

    // Work still acting now counts as acting until now.
    assert_no_overlap(seed, &ledger, Instant::now());
    // Heal everything and stop: every run ends within its bounds.
    for c in &candidates {
        *c.link.lock() = Link::Up;
    }
    sim.faults().clear();
    stop.cancel();
    for run in runs {
        tokio::time::timeout(Duration::from_secs(60), run)
            .await
            .expect("a candidate stops within the bound")
            .unwrap();
    }
    // Held at the server: only those a Lease update actually met.
    fired
        .held
        .fetch_add(sim.faults().delayed(), Ordering::Relaxed);
    let intervals = ledger.intervals.lock().len();
    assert!(
        ledger
            .intervals
            .lock()
            .iter()
            .all(|(_, _, end)| end.is_some()),
        "every acting interval is closed"
    );
    assert_no_overlap(seed, &ledger, Instant::now());
    intervals
}

/// No two candidates' acting intervals overlap; an interval still open ends at `now`.
fn assert_no_overlap(seed: u64, ledger: &Ledger, now: Instant) {
    let intervals = ledger.intervals.lock().clone();
    for (i, &(who, start, end)) in intervals.iter().enumerate() {
        let end = end.unwrap_or(now);
        for &(other, other_start, other_end) in &intervals[i + 1..] {
            let other_end = other_end.unwrap_or(now);
            assert!(
                who == other || end <= other_start || other_end <= start,
                "seed {seed}: c{who} acted {start:?}..{end:?} while c{other} acted \
                 {other_start:?}..{other_end:?}"
            );
        }
    }
}

/// Runs the seeds (or the one in `PARTITION_SEED`) with `n` candidates, checks that every
/// kind of fault fired and that leadership changed hands.
async fn many_seeds(n: usize, base: u64) {
    let seeds: Vec<u64> = match std::env::var("PARTITION_SEED") {
        Ok(seed) => vec![seed.parse().expect("PARTITION_SEED is a number")],
        Err(_) => (0..SEEDS).map(|i| base + i).collect(),
    };
    let fired = Arc::new(Fired::default());
    let mut terms = 0;
    for &seed in &seeds {
        println!("{n} candidates, seed {seed}");
        terms += run_seed(n, seed, &fired).await;
    }
    println!("{n} candidates: {terms} acting terms; faults fired: {fired:?}");
    for (kind, count) in [
        ("cut", &fired.cut),
        ("black hole", &fired.black_hole),
        ("slow answers", &fired.slow),
        ("held at the server", &fired.held),
        ("restart", &fired.restart),
    ] {
        assert!(count.load(Ordering::Relaxed) > 0, "no {kind} fired");
    }
    assert!(
        terms > seeds.len(),
        "leadership changed hands: {terms} terms"
    );
}

#[tokio::test(start_paused = true)]
async fn never_two_holders_acting_with_two_candidates_under_random_partitions() {
    many_seeds(2, 1_000).await;
}

#[tokio::test(start_paused = true)]
async fn never_two_holders_acting_with_three_candidates_under_random_partitions() {
    many_seeds(3, 2_000).await;
}
