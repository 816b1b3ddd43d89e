//! Criterion benches of decoding: a recorded watch stream of pod events through `Watch<T>`
//! (bytes/s and events/s; lean pods, k8s-openapi's typed `Pod`, `DynamicObject`; each event is
//! dropped once decoded), and D1's PodList decode (lean and typed). The watch stream's pods
//! have gen-podlist.py's shape, generated in Rust; the PodList is gen-podlist.py's output when
//! Python and the script are there. `bench-report D1 D1typed W1` gives the plan's figures.

use std::time::Duration;

use clientgo_apimachinery::DynamicObject;
use clientgo_benches::decode::{LeanPod, decode_lean, decode_typed, decode_watch};
use clientgo_benches::pods;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;

const EVENTS: usize = 2_000;
const CHUNK: usize = 16 * 1024;

fn watch_decode(c: &mut Criterion) {
    let (chunks, total) = pods::watch_stream(EVENTS, 500, CHUNK);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    for (group, throughput) in [
        ("watch_decode_bytes", Throughput::Bytes(total as u64)),
        ("watch_decode_events", Throughput::Elements(EVENTS as u64)),
    ] {
        let mut group = c.benchmark_group(group);
        group.throughput(throughput);
        group.sample_size(20);
        group.measurement_time(Duration::from_secs(4));
        group.bench_function(BenchmarkId::new("lean", EVENTS), |b| {
            b.iter(|| runtime.block_on(decode_watch::<LeanPod>(&chunks)));
        });
        group.bench_function(BenchmarkId::new("k8s-openapi", EVENTS), |b| {
            b.iter(|| runtime.block_on(decode_watch::<Pod>(&chunks)));
        });
        group.bench_function(BenchmarkId::new("dynamic", EVENTS), |b| {
            b.iter(|| runtime.block_on(decode_watch::<DynamicObject>(&chunks)));
        });
        group.finish();
    }
}

fn list_decode(c: &mut Criterion) {
    // gen-podlist.py's own bytes when it is there (as bench-report's D1), else the Rust port.
    let (list, _) = pods::podlist(10_000);
    let mut group = c.benchmark_group("list_decode_d1");
    group.throughput(Throughput::Bytes(list.len() as u64));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    // Only the decode is timed (D1's rule): the decoded lists are dropped outside the timing.
    group.bench_function("lean", |b| b.iter_with_large_drop(|| decode_lean(&list)));
    group.bench_function("k8s-openapi", |b| {
        b.iter_with_large_drop(|| decode_typed(&list))
    });
    group.finish();
}

criterion_group!(benches, watch_decode, list_decode);
criterion_main!(benches);
