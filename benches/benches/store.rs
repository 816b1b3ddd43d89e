//! Criterion benches of S1, the informer's indexed store: an [`Indexer`] with a namespace index
//! and a label index on `app`, holding N = 100,000 pods of gen-podlist.py's shape (generated in
//! Rust, seed 1; 100 namespaces, 50 apps).
//!
//! Measured, for [`Compact<Pod>`](clientgo_apimachinery::Compact) (workload `S1`) and
//! k8s-openapi's typed `Pod` (`S1typed`):
//! - `insert`: all N pods into a fresh store (S1's insert rate); the pods are decoded and
//!   wrapped in their `Arc`s before measuring, each batch clones the `Arc`s and builds an
//!   empty store outside the timing, and drops the filled store outside it too;
//! - `by_index`: one `by_index(NAMESPACE_INDEX, "ns-7")` query (1,000 hits) on the filled
//!   store (S1's query);
//! - `list`: one full `list()` (S1's list);
//! - `get_by_key`: one lookup by `namespace/name`.
//!
//! `bench-report S1 S1typed` gives the plan's figures, with the resident bytes per object.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{Compact, Object, ObjectList};
use clientgo_benches::pods;
use clientgo_informer::{
    Indexer, Indexers, NAMESPACE_INDEX, label_index_func, meta_namespace_key_func,
};
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;

/// S1's pod count.
const PODS: usize = 100_000;
/// The namespace S1 queries (1,000 of the pods).
const NAMESPACE: &str = "ns-7";

fn indexer<T: Object + Send + Sync + 'static>() -> Indexer<T> {
    Indexer::with_indexers(Indexers::namespace().with("app", label_index_func::<T>("app")))
}

fn decode<T: Object + DeserializeOwned>(list: &[u8]) -> Vec<Arc<T>> {
    let list: ObjectList<T> = serde_json::from_slice(list).expect("the PodList decodes");
    assert_eq!(list.items.len(), PODS, "the PodList has {PODS} pods");
    list.items.into_iter().map(Arc::new).collect()
}

fn s1<T>(c: &mut Criterion, form: &str, objects: &[Arc<T>])
where
    T: Object + Send + Sync + 'static,
{
    let mut group = c.benchmark_group(format!("s1_store/{form}"));
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(10));
    group.throughput(Throughput::Elements(PODS as u64));
    group.bench_function("insert", |b| {
        b.iter_batched(
            || (indexer::<T>(), objects.to_vec()),
            |(store, objects)| {
                for object in objects {
                    store.add(object);
                }
                store
            },
            BatchSize::PerIteration,
        );
    });

    let store = indexer::<T>();
    for object in objects {
        store.add(Arc::clone(object));
    }
    group.bench_function("list", |b| b.iter_with_large_drop(|| store.list()));

    let hits = store
        .by_index(NAMESPACE_INDEX, NAMESPACE)
        .expect("the namespace index exists")
        .len();
    assert_eq!(hits, PODS / 100, "{NAMESPACE} holds 1% of the pods");
    group.sample_size(50);
    group.measurement_time(Duration::from_secs(5));
    group.throughput(Throughput::Elements(hits as u64));
    group.bench_function("by_index_ns-7", |b| {
        b.iter_with_large_drop(|| store.by_index(NAMESPACE_INDEX, NAMESPACE))
    });

    let key = meta_namespace_key_func(&*objects[PODS / 2]);
    group.throughput(Throughput::Elements(1));
    group.bench_function("get_by_key", |b| {
        b.iter(|| store.get_by_key(std::hint::black_box(&key)))
    });
    group.finish();
}

fn store(c: &mut Criterion) {
    // Generated once; each form is decoded, measured and dropped in turn.
    let list = pods::generate(PODS, 1);
    let compact = decode::<Compact<Pod>>(&list);
    s1(c, "compact", &compact);
    drop(compact);
    let typed = decode::<Pod>(&list);
    drop(list);
    s1(c, "k8s-openapi", &typed);
}

criterion_group!(benches, store);
criterion_main!(benches);
