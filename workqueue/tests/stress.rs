//! Seeded multi-thread stress tests of the queue's concurrency guarantees.
//!
//! Real threads race on the queue while the test checks, for every item:
//! * never two holders at once;
//! * no add is lost: every change made before an add is seen by a later hand-out (the
//!   level-triggered promise controllers rely on);
//! * `shut_down_with_drain` never returns while an item is held;
//! * a guard dropped without an outcome re-queues its item (the workers drop some that way).
//!
//! Each run prints its seed on failure; set `STRESS_SEED` to replay one.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use clientgo_ratelimit::ItemExponentialFailureRateLimiter;
use clientgo_workqueue::{AddOptions, Processing, Queue};

/// splitmix64: a small, seedable generator good enough to pick keys and pauses.
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

    /// Sometimes yields the thread, to shuffle the interleaving.
    fn jitter(&mut self) {
        if self.below(4) == 0 {
            thread::yield_now();
        }
    }
}

fn seeds() -> Vec<u64> {
    match std::env::var("STRESS_SEED") {
        Ok(seed) => vec![seed.parse().expect("STRESS_SEED is a number")],
        Err(_) => (1..=8).collect(),
    }
}

/// Runs `test` once per seed, naming the seed if it panics.
fn with_seeds(test: impl Fn(u64) + std::panic::RefUnwindSafe) {
    for seed in seeds() {
        if let Err(panic) = std::panic::catch_unwind(|| test(seed)) {
            eprintln!("stress test failed with STRESS_SEED={seed}");
            std::panic::resume_unwind(panic);
        }
    }
}

const KEYS: usize = 64;
const PRODUCERS: usize = 3;
const WORKERS: usize = 4;
const ADDS_PER_PRODUCER: usize = 20_000;

#[test]
fn no_double_holders_and_no_lost_adds() {
    with_seeds(|seed| {
        let queue: Queue<usize> = Queue::new();
        // version[k]: bumped before every add of k; seen[k]: the newest version a worker read.
        let version: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
        let seen: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
        let holders: Arc<Vec<AtomicUsize>> =
            Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());

        let workers: Vec<_> = (0..WORKERS)
            .map(|w| {
                let (queue, version, seen, holders) = (
                    queue.clone(),
                    version.clone(),
                    seen.clone(),
                    holders.clone(),
                );
                thread::spawn(move || {
                    let mut rng = Rng(seed ^ (0x1000 + w as u64));
                    let mut handed_out = 0u64;
                    while let Some(item) = queue.get_blocking() {
                        let key = *item;
                        let before = holders[key].fetch_add(1, Ordering::SeqCst);
                        assert_eq!(before, 0, "item {key} handed to two workers at once");
                        let current = version[key].load(Ordering::SeqCst);
                        seen[key].fetch_max(current, Ordering::SeqCst);
                        rng.jitter();
                        if rng.below(50) == 0 {
                            queue.add(key); // a worker may re-add its own item
                        }
                        holders[key].fetch_sub(1, Ordering::SeqCst);
                        if rng.below(100) == 0 {
                            drop(item); // no outcome (a panic, an abort): re-queued
                        } else {
                            item.done();
                        }
                        handed_out += 1;
                    }
                    handed_out
                })
            })
            .collect();

        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let (queue, version) = (queue.clone(), version.clone());
                thread::spawn(move || {
                    let mut rng = Rng(seed ^ p as u64);
                    for _ in 0..ADDS_PER_PRODUCER {
                        let key = rng.below(KEYS as u64) as usize;
                        version[key].fetch_add(1, Ordering::SeqCst);
                        queue.add(key);
                        rng.jitter();
                    }
                })
            })
            .collect();
        for producer in producers {
            producer.join().unwrap();
        }

        // Every add is now made; wait (bounded) until every change has been seen.
        let deadline = Instant::now() + Duration::from_secs(60);
        let all_seen = || {
            (0..KEYS).all(|k| seen[k].load(Ordering::SeqCst) == version[k].load(Ordering::SeqCst))
        };
        while !all_seen() {
            assert!(
                Instant::now() < deadline,
                "an add was lost: some change was never handed out"
            );
            thread::yield_now();
        }
        queue.shut_down();
        let handed_out: u64 = workers.into_iter().map(|w| w.join().unwrap()).sum();
        assert!(handed_out >= KEYS as u64 / 2);
        assert!(queue.is_empty());
    });
}

#[test]
fn drain_never_returns_while_an_item_is_held() {
    with_seeds(|seed| {
        for round in 0..50u64 {
            let queue: Queue<usize> = Queue::new();
            let held = Arc::new(AtomicUsize::new(0));
            let got = Arc::new(AtomicUsize::new(0));
            let release = Arc::new(AtomicBool::new(false));
            let workers: Vec<_> = (0..WORKERS)
                .map(|w| {
                    let (queue, held, got, release) =
                        (queue.clone(), held.clone(), got.clone(), release.clone());
                    thread::spawn(move || {
                        let mut rng = Rng(seed ^ round << 8 ^ w as u64);
                        while let Some(item) = queue.get_blocking() {
                            held.fetch_add(1, Ordering::SeqCst);
                            got.fetch_add(1, Ordering::SeqCst);
                            while !release.load(Ordering::SeqCst) || rng.below(3) != 0 {
                                thread::yield_now();
                            }
                            held.fetch_sub(1, Ordering::SeqCst);
                            item.done();
                        }
                    })
                })
                .collect();
            // One distinct item per worker, so nothing is left in line at the drain.
            for key in 0..WORKERS {
                queue.add(key);
            }
            let deadline = Instant::now() + Duration::from_secs(30);
            while got.load(Ordering::SeqCst) < WORKERS {
                assert!(Instant::now() < deadline, "workers did not take the items");
                thread::yield_now();
            }
            release.store(true, Ordering::SeqCst);
            queue.shut_down_with_drain_blocking();
            assert_eq!(
                held.load(Ordering::SeqCst),
                0,
                "shut_down_with_drain returned while an item was held"
            );
            for worker in workers {
                worker.join().unwrap();
            }
        }
    });
}

/// A queue with delayed adds, as the stress test below drives it.
trait Delaying: Clone + Send + 'static {
    /// The delaying queue underneath.
    fn delaying(&self) -> &Queue<usize>;
    /// A producer's add of `key`.
    fn produce(&self, key: usize, rng: &mut Rng);
    /// A worker's outcome for a held key.
    fn finish(held: Processing<'_, usize>, rng: &mut Rng) {
        let _ = rng;
        held.done();
    }
}

impl Delaying for Queue<usize> {
    fn delaying(&self) -> &Queue<usize> {
        self
    }

    fn produce(&self, key: usize, rng: &mut Rng) {
        match rng.below(3) {
            0 => self.add(key),
            _ => self.add_after(key, Duration::from_micros(rng.below(2000))),
        }
    }
}

/// A priority queue under random priorities, delays and rate-limited adds, whose workers end
/// holds with every outcome, including none (a dropped guard).
#[derive(Clone)]
struct Mixed(Queue<usize>);

impl Delaying for Mixed {
    fn delaying(&self) -> &Queue<usize> {
        &self.0
    }

    fn produce(&self, key: usize, rng: &mut Rng) {
        let options = AddOptions {
            priority: rng.below(3) as i32 * 50 - 100,
            after: (rng.below(2) == 0).then(|| Duration::from_micros(rng.below(2000))),
            rate_limited: rng.below(8) == 0,
        };
        self.0.add_with(key, options);
    }

    fn finish(held: Processing<'_, usize>, rng: &mut Rng) {
        match rng.below(20) {
            0 => held.retry(),
            1 => drop(held),
            2 => held.forget(),
            _ => held.done(),
        }
    }
}

/// The same guarantees with delayed adds mixed in: the timer task races the workers and the
/// producers for the one lock, and every change is still handed out after its delay.
#[test]
fn delayed_adds_are_never_lost_or_doubled() {
    with_seeds(|seed| {
        let runtime = runtime();
        let queue: Queue<usize> = {
            let _entered = runtime.enter();
            Queue::new()
        };
        never_lost_or_doubled(seed, queue);
    });
}

/// The same with a priority queue: priorities, aging and retries never lose or double a key.
#[test]
fn priority_adds_are_never_lost_or_doubled() {
    with_seeds(|seed| {
        let runtime = runtime();
        let limiter = ItemExponentialFailureRateLimiter::new(
            Duration::from_micros(50),
            Duration::from_millis(2),
        );
        let queue = {
            let _entered = runtime.enter();
            Queue::builder()
                .rate_limiter(Arc::new(limiter))
                .aging(Duration::from_micros(10))
                .build()
        };
        never_lost_or_doubled(seed, Mixed(queue));
    });
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_time()
        .build()
        .unwrap()
}

fn never_lost_or_doubled<Q: Delaying>(seed: u64, queue: Q) {
    let version: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let seen: Arc<Vec<AtomicU64>> = Arc::new((0..KEYS).map(|_| AtomicU64::new(0)).collect());
    let holders: Arc<Vec<AtomicUsize>> = Arc::new((0..KEYS).map(|_| AtomicUsize::new(0)).collect());
    let workers: Vec<_> = (0..WORKERS)
        .map(|w| {
            let (queue, version, seen, holders) = (
                queue.clone(),
                version.clone(),
                seen.clone(),
                holders.clone(),
            );
            thread::spawn(move || {
                let mut rng = Rng(seed ^ (0x2000 + w as u64));
                while let Some(item) = queue.delaying().get_blocking() {
                    let key = *item;
                    assert_eq!(
                        holders[key].fetch_add(1, Ordering::SeqCst),
                        0,
                        "two holders"
                    );
                    seen[key].fetch_max(version[key].load(Ordering::SeqCst), Ordering::SeqCst);
                    if rng.below(20) == 0 {
                        let delay = Duration::from_micros(rng.below(500));
                        queue.delaying().add_after(key, delay);
                    }
                    rng.jitter();
                    holders[key].fetch_sub(1, Ordering::SeqCst);
                    Q::finish(item, &mut rng);
                }
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (queue, version) = (queue.clone(), version.clone());
            thread::spawn(move || {
                let mut rng = Rng(seed ^ (0x3000 + p as u64));
                for _ in 0..ADDS_PER_PRODUCER / 4 {
                    let key = rng.below(KEYS as u64) as usize;
                    version[key].fetch_add(1, Ordering::SeqCst);
                    queue.produce(key, &mut rng);
                    rng.jitter();
                }
            })
        })
        .collect();
    for producer in producers {
        producer.join().unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(60);
    let all_seen =
        || (0..KEYS).all(|k| seen[k].load(Ordering::SeqCst) == version[k].load(Ordering::SeqCst));
    while !all_seen() {
        assert!(Instant::now() < deadline, "a delayed add was lost");
        thread::yield_now();
    }
    queue.delaying().shut_down();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(queue.delaying().delayed_len(), 0);
}
