//! The priority queue's workloads.
//!
//! | id | what |
//! |---|---|
//! | Q1pq | Q1 (1 producer, 1,000,000 adds over 10,000 keys, 4 workers `get` → done) on a priority `Queue`, every add at normal priority |
//! | Q3pq | Q3 (100,000 keys, each requeued 3 times through the limiter) on a priority `Queue` |
//! | Q4 | restart backlog: 100,000 keys added at low priority, then 1,000 of them changed (added at normal priority) over one second, while 4 workers reconcile each key in 100 µs; on the FIFO rate-limited queue and on the priority queue |
//!
//! Q4's figures, for each queue: the latency from a change's add to its key's hand-out (p50,
//! p99, max), and the longest wait of a key that only had its low-priority add (from its add to
//! its hand-out). A change hits a key that is waiting in the backlog (or was already handed
//! out): the FIFO queue coalesces it in place, the priority queue raises it.
//!
//! Q4's workers are plain threads sleeping 100 µs per key (`std::thread::sleep`, which keeps
//! sub-millisecond delays where tokio's timer rounds them up to 1 ms), so they reconcile about
//! 20,000 keys per second in all; the changes come from another thread, one every millisecond.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clientgo_ratelimit::default_controller_rate_limiter;
use clientgo_workqueue::{AddOptions, Queue};
use serde_json::{Value, json};

use crate::workloads;

/// Q1 on a priority queue.
pub async fn throughput() -> Value {
    let queue: Queue<Arc<str>> = Queue::builder().default_rate_limiter().priority().build();
    workloads::throughput(1, queue).await
}

/// Q3 on a priority queue.
pub async fn rate_limited_requeue() -> Value {
    workloads::rate_limited_requeue(|limiter| {
        Queue::builder().rate_limiter(limiter).priority().build()
    })
    .await
}

const BACKLOG: usize = 100_000;
const CHANGES: usize = 1_000;
const WORKERS: usize = 4;
const RECONCILE: Duration = Duration::from_micros(100);

/// Q4: the restart backlog on the FIFO rate-limited queue and on the priority queue.
pub fn restart_backlog() -> Value {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let _entered = runtime.enter();
    let fifo = backlog_run(&Queue::rate_limiting(Arc::new(
        default_controller_rate_limiter(),
    )));
    let priority = backlog_run(&Queue::builder().default_rate_limiter().priority().build());
    json!({
        "backlog": BACKLOG,
        "changes": CHANGES,
        "fifo_change_p50_ms": fifo.change_ms(0.50),
        "fifo_change_p99_ms": fifo.change_ms(0.99),
        "fifo_change_max_ms": fifo.change_ms(1.0),
        "fifo_longest_low_wait_s": fifo.longest_low_wait_s,
        "fifo_wall_s": fifo.wall_s,
        "priority_change_p50_ms": priority.change_ms(0.50),
        "priority_change_p99_ms": priority.change_ms(0.99),
        "priority_change_max_ms": priority.change_ms(1.0),
        "priority_longest_low_wait_s": priority.longest_low_wait_s,
        "priority_wall_s": priority.wall_s,
    })
}

/// What one queue did in Q4.
struct BacklogFigures {
    /// Sorted latencies of the changes, in milliseconds.
    change_ms: Vec<f64>,
    longest_low_wait_s: f64,
    wall_s: f64,
}

impl BacklogFigures {
    fn change_ms(&self, quantile: f64) -> f64 {
        let last = self.change_ms.len() - 1;
        self.change_ms[(last as f64 * quantile).round() as usize]
    }
}

/// Nanoseconds since `start`, never 0 (0 marks "not yet").
fn since(start: Instant) -> u64 {
    (start.elapsed().as_nanos() as u64).max(1)
}

/// Runs Q4 on `queue`: the backlog at low priority, the changes at normal priority (which a
/// FIFO queue ignores).
fn backlog_run(queue: &Queue<Arc<str>>) -> BacklogFigures {
    let keys: Vec<Arc<str>> = (0..BACKLOG)
        .map(|i| Arc::from(format!("ns-{}/obj-{}", i % 100, i)))
        .collect();
    let index: std::collections::HashMap<Arc<str>, usize> = keys
        .iter()
        .cloned()
        .enumerate()
        .map(|(i, k)| (k, i))
        .collect();
    // Change c targets key c × 100 + 50, spread over the backlog.
    let target = |c: usize| c * (BACKLOG / CHANGES) + BACKLOG / CHANGES / 2;
    let is_target = |i: usize| i % (BACKLOG / CHANGES) == BACKLOG / CHANGES / 2;
    let added: Vec<AtomicU64> = (0..BACKLOG).map(|_| AtomicU64::new(0)).collect();
    let changed: Vec<AtomicU64> = (0..CHANGES).map(|_| AtomicU64::new(0)).collect();
    let change_ns: Vec<AtomicU64> = (0..CHANGES).map(|_| AtomicU64::new(0)).collect();
    let handed_out: Vec<AtomicBool> = (0..BACKLOG).map(|_| AtomicBool::new(false)).collect();
    let (done_keys, done_changes) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let longest_low_ns = AtomicU64::new(0);
    let start = Instant::now();
    let queue: &Queue<Arc<str>> = queue;
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| {
                while let Some(held) = queue.get_blocking() {
                    let at = since(start);
                    let i = index[held.item()];
                    if is_target(i) {
                        let c = i / (BACKLOG / CHANGES);
                        let when = changed[c].load(Ordering::Acquire);
                        // A hand-out that began before the change was added does not count.
                        let after_change = when != 0 && when <= at;
                        if after_change && change_ns[c].load(Ordering::Relaxed) == 0 {
                            change_ns[c].store(at - when, Ordering::Relaxed);
                            done_changes.fetch_add(1, Ordering::AcqRel);
                        }
                    } else if !handed_out[i].load(Ordering::Relaxed) {
                        let wait = at.saturating_sub(added[i].load(Ordering::Acquire));
                        longest_low_ns.fetch_max(wait, Ordering::Relaxed);
                    }
                    if !handed_out[i].swap(true, Ordering::Relaxed) {
                        done_keys.fetch_add(1, Ordering::AcqRel);
                    }
                    std::thread::sleep(RECONCILE);
                    held.forget();
                    let finished = done_keys.load(Ordering::Acquire) == BACKLOG
                        && done_changes.load(Ordering::Acquire) == CHANGES;
                    if finished {
                        queue.shut_down();
                    }
                }
            });
        }
        for (i, key) in keys.iter().enumerate() {
            added[i].store(since(start), Ordering::Release);
            queue.add_with(key.clone(), AddOptions::low());
        }
        for c in 0..CHANGES {
            std::thread::sleep(Duration::from_millis(1));
            changed[c].store(since(start), Ordering::Release);
            queue.add(keys[target(c)].clone());
        }
    });
    let mut change_ms: Vec<f64> = change_ns
        .iter()
        .map(|ns| ns.load(Ordering::Relaxed) as f64 / 1e6)
        .collect();
    change_ms.sort_by(f64::total_cmp);
    BacklogFigures {
        change_ms,
        longest_low_wait_s: longest_low_ns.load(Ordering::Relaxed) as f64 / 1e9,
        wall_s: start.elapsed().as_secs_f64(),
    }
}
