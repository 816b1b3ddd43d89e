//! The work queue workloads of the benchmark plan, each a function returning its JSON figures.
//!
//! | id | what |
//! |---|---|
//! | Q1 | throughput: 1 producer adds N = 1,000,000 keys over K = 10,000, 4 workers `get` → done |
//! | Q1p4 | as Q1 with 4 producers adding N/4 each |
//! | Q2 | delaying queue: 100,000 `add_after` with delays uniform in 0..500 ms, 2 workers; lateness |
//! | Q2m | delaying queue memory: bytes per waiting item, 1,000,000 items waiting (keys excluded) |
//! | Q2d, Q2s | delaying queue: debounced adds, shut down with 1,000,000 waiting (see [`queue_debounce`](crate::queue_debounce)) |
//! | Q3 | rate-limited requeue: 100,000 keys, each requeued 3 times (exponential 1 ms .. 10 ms), 4 workers |
//! | Q1pq, Q3pq, Q4 | Q1 and Q3 on the priority queue; the restart backlog (see [`queue_priority`](crate::queue_priority)) |
//! | S1 | 100,000 pods inserted into an indexed store; `by_index` and `list` (see [`store`](crate::store)) |
//! | S1typed | the same read as typed `Pod`s through a `TypedLister` (views of hot pods kept); typed `get` hot and cold, lazy and typed `list` |
//! | S1openapi | the same with k8s-openapi's `Pod` in the store (client-go's and kube-rs's typed cache) |
//! | D1 | a PodList of 10,000 pods decoded into the lean form a cache holds (see [`decode`](crate::decode)) |
//! | D1typed | the same PodList decoded into k8s-openapi's typed `Pod` |
//! | I1 | an informer syncing 10,000 ConfigMaps, then seeing 10,000 patches (see [`informer`](crate::informer)) |
//! | I1list | as I1 with streaming lists off (LIST, then WATCH) |
//! | I1sync, I1listsync | I1's and I1list's sync alone, for profiling it |
//! | W1 | a recorded stream of 10,000 pod events through `Watch<T>`, lean and typed |
//! | W2 | the write path: creates, updates, patches, status updates and deletes of 10,000 ConfigMaps and Foos (see [`write`](crate::write)) |
//! | X1 | a sharded controller: 20,000 objects, 20 ms reconciles, 1, 2 and 4 shards (see [`sharding`](crate::sharding)) |
//!
//! Keys are `Arc<str>` formatted before the timer starts (a cheap-to-clone key, as Go's strings
//! are). Workers are tokio tasks on a multi-thread runtime with one thread per core, as a
//! controller runs them. Q1's producers are plain threads, free-running like Go's goroutines:
//! `add` is synchronous, and a tokio task that never yields would keep the workers it wakes
//! queued behind it on its own runtime thread.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clientgo_ratelimit::{ItemExponentialFailureRateLimiter, RateLimiter};
use clientgo_workqueue::Queue;
use serde_json::{Value, json};

use crate::SplitMix64;
use crate::process;

/// Every workload `bench-report` knows, in the order it runs them.
pub const ALL: &[&str] = &[
    "Q1",
    "Q1p4",
    "Q1pq",
    "Q2",
    "Q2m",
    "Q2d",
    "Q2s",
    "Q3",
    "Q3pq",
    "Q4",
    "S1",
    "S1typed",
    "S1openapi",
    "D1",
    "D1typed",
    "W1",
    "I1",
    "I1list",
    "I1sync",
    "I1listsync",
    "W2",
    "X1",
];

/// Runs workload `id` once in this process; `None` for an unknown id.
pub fn run(id: &str) -> Option<Value> {
    let figures = match id {
        "Q1" => runtime().block_on(throughput(1, Queue::new())),
        "Q1p4" => runtime().block_on(throughput(4, Queue::new())),
        "Q1pq" => runtime().block_on(crate::queue_priority::throughput()),
        "Q2" => runtime().block_on(delaying_lateness()),
        "Q2m" => runtime().block_on(delaying_memory()),
        "Q2d" => runtime().block_on(crate::queue_debounce::debounce()),
        "Q2s" => runtime().block_on(crate::queue_debounce::shut_down_stall()),
        "Q3" => runtime().block_on(rate_limited_requeue(Queue::rate_limiting)),
        "Q3pq" => runtime().block_on(crate::queue_priority::rate_limited_requeue()),
        "Q4" => crate::queue_priority::restart_backlog(),
        "S1" => crate::store::s1(),
        "S1typed" => crate::store::s1_typed(),
        "S1openapi" => crate::store::s1_openapi(),
        "D1" => crate::decode::d1(),
        "D1typed" => crate::decode::d1_typed(),
        "W1" => crate::decode::w1(),
        "I1" => crate::informer::i1(),
        "I1list" => crate::informer::i1_list(),
        "I1sync" => crate::informer::i1_sync(),
        "I1listsync" => crate::informer::i1_list_sync(),
        "W2" => crate::write::w2(),
        "X1" => crate::sharding::x1(),
        _ => return None,
    };
    Some(figures)
}

fn runtime() -> tokio::runtime::Runtime {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cores)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// Q1 / Q1p4: producers add, workers get and mark done with no work in between, on `queue`.
pub(crate) async fn throughput(producers: usize, queue: Queue<Arc<str>>) -> Value {
    const N: usize = 1_000_000;
    const K: usize = 10_000;
    const WORKERS: usize = 4;
    let keys: Arc<Vec<Arc<str>>> = Arc::new(
        (0..K)
            .map(|i| Arc::from(format!("ns-{}/obj-{}", i % 100, i)))
            .collect(),
    );
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let queue = queue.clone();
            tokio::spawn(async move {
                let mut gets = 0u64;
                while let Some(item) = queue.get().await {
                    item.done();
                    gets += 1;
                }
                gets
            })
        })
        .collect();
    tokio::task::yield_now().await;

    let start = Instant::now();
    let adders: Vec<_> = (0..producers)
        .map(|p| {
            let (queue, keys) = (queue.clone(), keys.clone());
            std::thread::spawn(move || {
                for i in p * N / producers..(p + 1) * N / producers {
                    queue.add(keys[i % K].clone());
                }
            })
        })
        .collect();
    for adder in adders {
        adder.join().expect("producer");
    }
    queue.shut_down();
    let mut gets = 0;
    for worker in workers {
        gets += worker.await.expect("worker");
    }
    let wall = start.elapsed().as_secs_f64();
    json!({
        "wall_s": wall,
        "adds": N,
        "gets": gets,
        "adds_per_s": N as f64 / wall,
    })
}

/// The Q2 delays: splitmix64 with seed 1, modulo 500 ms, in microseconds.
fn q2_delays(n: usize) -> Vec<Duration> {
    let mut rng = SplitMix64::new(1);
    (0..n)
        .map(|_| Duration::from_micros(rng.next_u64() % 500_000))
        .collect()
}

/// Q2: how late items come out of the delaying queue.
async fn delaying_lateness() -> Value {
    const N: usize = 100_000;
    const WORKERS: usize = 2;
    let keys: Vec<Arc<str>> = (0..N)
        .map(|i| Arc::from(format!("ns-{}/obj-{}", i % 100, i)))
        .collect();
    let index: Arc<HashMap<Arc<str>, usize>> = Arc::new(
        keys.iter()
            .cloned()
            .enumerate()
            .map(|(i, k)| (k, i))
            .collect(),
    );
    let delays = q2_delays(N);
    let queue: Queue<Arc<str>> = Queue::new();
    let got = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (queue, index, got) = (queue.clone(), index.clone(), got.clone());
            tokio::spawn(async move {
                let mut seen = Vec::with_capacity(N);
                while let Some(item) = queue.get().await {
                    let at = Instant::now();
                    seen.push((index[item.item()], at));
                    item.done();
                    if got.fetch_add(1, Ordering::Relaxed) + 1 == N {
                        queue.shut_down();
                    }
                }
                seen
            })
        })
        .collect();
    tokio::task::yield_now().await;

    let mut due = Vec::with_capacity(N);
    let start = Instant::now();
    for (key, delay) in keys.iter().zip(&delays) {
        let before = Instant::now();
        queue.add_after(key.clone(), *delay);
        due.push(before + *delay);
    }
    let mut lateness_ms = Vec::with_capacity(N);
    let mut end = start;
    for worker in workers {
        for (i, at) in worker.await.expect("worker") {
            end = end.max(at);
            lateness_ms.push(at.saturating_duration_since(due[i]).as_secs_f64() * 1e3);
        }
    }
    lateness_ms.sort_by(f64::total_cmp);
    let pct = |p: f64| lateness_ms[((lateness_ms.len() - 1) as f64 * p).round() as usize];
    json!({
        "wall_s": end.duration_since(start).as_secs_f64(),
        "gets": lateness_ms.len(),
        "lateness_p50_ms": pct(0.50),
        "lateness_p99_ms": pct(0.99),
        "lateness_max_ms": pct(1.0),
    })
}

/// Q2m: resident memory per item waiting in a delaying queue, keys excluded.
async fn delaying_memory() -> Value {
    const N: usize = 1_000_000;
    let keys: Vec<Arc<str>> = (0..N)
        .map(|i| Arc::from(format!("ns-{}/obj-{}", i % 100, i)))
        .collect();
    let queue: Queue<Arc<str>> = Queue::new();
    let before = process::resident_bytes_trimmed().unwrap_or(0);
    for (i, key) in keys.iter().enumerate() {
        queue.add_after(key.clone(), Duration::from_secs(3600 + i as u64 % 3600));
    }
    let after = process::resident_bytes_trimmed().unwrap_or(0);
    let waiting = queue.delayed_len();
    queue.shut_down();
    json!({
        "waiting": waiting,
        "bytes_per_waiting_item": after.saturating_sub(before) as f64 / N as f64,
    })
}

/// Q3: every key fails three times (requeued through the rate limiter), then succeeds, on the
/// rate-limited queue `make` builds around the limiter.
pub(crate) async fn rate_limited_requeue(
    make: impl FnOnce(Arc<dyn RateLimiter<Arc<str>>>) -> Queue<Arc<str>>,
) -> Value {
    const N: usize = 100_000;
    const WORKERS: usize = 4;
    const REQUEUES: usize = 3;
    let keys: Vec<Arc<str>> = (0..N)
        .map(|i| Arc::from(format!("ns-{}/obj-{}", i % 100, i)))
        .collect();
    let limiter =
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(1), Duration::from_millis(10));
    let limiter: Arc<dyn RateLimiter<Arc<str>>> = Arc::new(limiter);
    let queue = make(limiter.clone());
    let forgotten = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..WORKERS)
        .map(|_| {
            let (queue, forgotten, limiter) = (queue.clone(), forgotten.clone(), limiter.clone());
            tokio::spawn(async move {
                let (mut gets, mut end) = (0u64, None);
                while let Some(item) = queue.get().await {
                    gets += 1;
                    if limiter.num_requeues(item.item()) < REQUEUES {
                        item.retry();
                    } else {
                        item.forget();
                        if forgotten.fetch_add(1, Ordering::Relaxed) + 1 == N {
                            end = Some(Instant::now());
                            queue.shut_down();
                        }
                    }
                }
                (gets, end)
            })
        })
        .collect();
    tokio::task::yield_now().await;

    let start = Instant::now();
    for key in &keys {
        queue.add(key.clone());
    }
    let (mut gets, mut end) = (0, start);
    for worker in workers {
        let (worker_gets, worker_end) = worker.await.expect("worker");
        gets += worker_gets;
        if let Some(at) = worker_end {
            end = at;
        }
    }
    json!({
        "wall_s": end.duration_since(start).as_secs_f64(),
        "gets": gets,
    })
}
