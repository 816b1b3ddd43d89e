//! Criterion micro-benchmarks of the work queue's hot paths.

use std::sync::Arc;
use std::time::Duration;

use clientgo_workqueue::Queue;
use criterion::{Criterion, criterion_group, criterion_main};

fn keys(n: usize) -> Vec<Arc<str>> {
    (0..n)
        .map(|i| Arc::from(format!("ns-{}/obj-{}", i % 100, i)))
        .collect()
}

fn queue(c: &mut Criterion) {
    let keys = keys(10_000);
    let mut group = c.benchmark_group("queue");

    group.bench_function("add_coalesced", |b| {
        let queue = Queue::new();
        queue.add(keys[0].clone());
        b.iter(|| queue.add(keys[0].clone()));
    });

    group.bench_function("add_get_done", |b| {
        let queue = Queue::new();
        let mut i = 0;
        b.iter(|| {
            queue.add(keys[i % keys.len()].clone());
            i += 1;
            if let Some(item) = queue.get_blocking() {
                item.done();
            }
        });
    });
    group.finish();
}

fn delaying(c: &mut Criterion) {
    let keys = keys(10_000);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let _guard = runtime.enter();
    let mut group = c.benchmark_group("delaying_queue");
    group.bench_function("add_after_distinct", |b| {
        let queue = Queue::new();
        let mut i = 0u64;
        b.iter(|| {
            let key = keys[(i % keys.len() as u64) as usize].clone();
            queue.add_after(key, Duration::from_secs(3600 + i % 7));
            i += 1;
        });
    });
    group.finish();
}

criterion_group!(benches, queue, delaying);
criterion_main!(benches);
