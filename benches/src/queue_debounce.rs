//! The delaying queue under a debounce load, and its shut down with many items waiting.
//!
//! | id | what |
//! |---|---|
//! | Q2d | 1,000,000 `add_after` over 10,000 keys, each moving its key's time earlier (a controller debouncing changes under a 1 h resync): resident bytes per waiting item |
//! | Q2s | shut down with 1,000,000 items waiting while another thread keeps calling the queue: how long the shut down takes, and the longest call of the other thread meanwhile |
//!
//! Q2d is the pattern that once left one stale heap entry per `add_after` (the heap grew with
//! the calls, not with the waiting items); the queue now compacts its heap, so the resident
//! bytes stay near those of 10,000 waiting items. Q2s measures the stall a shut down imposes on
//! the queue's other users: the waiting items are released in short critical sections and
//! dropped outside the lock.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use clientgo_workqueue::Queue;
use serde_json::{Value, json};

use crate::process;

fn keys(n: usize) -> Vec<Arc<str>> {
    (0..n)
        .map(|i| Arc::from(format!("ns-{}/obj-{}", i % 100, i)))
        .collect()
}

/// Q2d: a million debounced `add_after` calls over ten thousand keys.
pub async fn debounce() -> Value {
    const N: usize = 1_000_000;
    const K: usize = 10_000;
    let keys = keys(K);
    let queue: Queue<Arc<str>> = Queue::new();
    let before = process::resident_bytes_trimmed().unwrap_or(0);
    let start = Instant::now();
    for i in 0..N {
        // The delay shrinks by 1 µs per call, faster than the clock moves between two calls,
        // so every call after a key's first moves that key's time earlier.
        let delay = Duration::from_secs(3600) - Duration::from_micros(i as u64);
        queue.add_after(keys[i % K].clone(), delay);
    }
    let wall = start.elapsed().as_secs_f64();
    let after = process::resident_bytes_trimmed().unwrap_or(0);
    let waiting = queue.delayed_len();
    queue.shut_down();
    let resident = after.saturating_sub(before);
    json!({
        "adds": N,
        "waiting": waiting,
        "adds_per_s": N as f64 / wall,
        "resident_bytes": resident,
        "bytes_per_waiting_item": resident as f64 / waiting.max(1) as f64,
    })
}

/// Q2s: shut down with a million items waiting, while another thread calls the queue.
pub async fn shut_down_stall() -> Value {
    const N: usize = 1_000_000;
    let keys = keys(N);
    let queue: Queue<Arc<str>> = Queue::new();
    for (i, key) in keys.iter().enumerate() {
        queue.add_after(key.clone(), Duration::from_secs(3600 + i as u64 % 3600));
    }
    drop(keys); // the queue holds the last references: the shut down frees the keys
    let stop = Arc::new(AtomicBool::new(false));
    let started = Arc::new(AtomicBool::new(false));
    let prober = {
        let (queue, stop, started) = (queue.clone(), stop.clone(), started.clone());
        std::thread::spawn(move || {
            let (mut longest, mut calls, mut slow) = (Duration::ZERO, 0u64, 0u64);
            while !stop.load(Ordering::Acquire) {
                let at = Instant::now();
                std::hint::black_box(queue.len());
                let took = at.elapsed();
                longest = longest.max(took);
                slow += u64::from(took > Duration::from_millis(1));
                calls += 1;
                started.store(true, Ordering::Release);
            }
            (longest, calls, slow)
        })
    };
    while !started.load(Ordering::Acquire) {
        std::thread::yield_now();
    }
    let start = Instant::now();
    queue.shut_down();
    let shut_down = start.elapsed();
    stop.store(true, Ordering::Release);
    let (longest, calls, slow) = prober.join().expect("prober");
    json!({
        "waiting": N,
        "shut_down_ms": shut_down.as_secs_f64() * 1e3,
        "other_thread_longest_call_us": longest.as_secs_f64() * 1e6,
        "other_thread_calls": calls,
        // A thread preempted by the OS also shows as a slow call: on a busy machine, read
        // this beside the longest call.
        "other_thread_calls_over_1ms": slow,
    })
}
