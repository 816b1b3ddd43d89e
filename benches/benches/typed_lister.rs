//! Criterion benches of a typed read of S1's cache (100,000 pods of gen-podlist.py's shape,
//! generated in Rust, seed 1), the read a reconcile makes:
//!
//! - `typed_get_hot`: `TypedLister<Pod>::namespace(ns).get(name)` of a pod read before and
//!   unchanged since, cycling over 1,000 pods (S1typed's `get_hot_ns`);
//! - `typed_get_decode`: the same through a lister that keeps no view, so every get decodes
//!   (S1typed's `get_cold_us`, without the insert into the view cache);
//! - `lean_get`: `Lister<Compact<Pod>>::namespace(ns).get(name)` (S1's `get_hot_ns`);
//! - `openapi_get`: `Lister<Pod>::namespace(ns).get(name)` over a store of k8s-openapi's
//!   `Pod` (S1openapi's `get_hot_ns`: the typed store's pointer read);
//! - `list_lazy`: `TypedLister::list_lazy` of all 100,000 (S1typed's `list_lazy_ms`), and
//!   `list_ns`: the typed `list` of one namespace, 1,000 pods of which 10 are kept views.
//!
//! `bench-report S1 S1typed S1openapi` gives the plan's figures, with the bytes per pod.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::labels::Selector;
use clientgo_apimachinery::{Compact, Object, ObjectList};
use clientgo_benches::{pods, store};
use clientgo_informer::{Indexer, Indexers, Lister, TypedLister};
use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;

/// S1's pod count.
const PODS: usize = 100_000;
/// Distinct pods the hot gets cycle over.
const HOT_SET: usize = 1_000;

fn filled<T: Object + DeserializeOwned + Send + Sync + 'static>(list: &[u8]) -> Arc<Indexer<T>> {
    let list: ObjectList<T> = serde_json::from_slice(list).expect("the PodList decodes");
    assert_eq!(list.items.len(), PODS, "the PodList has {PODS} pods");
    let store = Arc::new(Indexer::with_indexers(Indexers::namespace()));
    for object in list.items {
        store.add(Arc::new(object));
    }
    store
}

/// `(namespace, name)` of `HOT_SET` stored pods, spread over the store.
fn hot_keys<T: Object>(store: &Indexer<T>) -> Vec<(String, String)> {
    store::keys(store)
        .into_iter()
        .step_by(PODS / HOT_SET)
        .collect()
}

/// Benches `get(namespace, name)` cycling over `keys`.
fn bench_get<R>(
    c: &mut Criterion,
    id: &str,
    keys: &[(String, String)],
    get: impl Fn(&str, &str) -> Option<R>,
) {
    let mut i = 0;
    c.bench_function(id, |b| {
        b.iter(|| {
            let (namespace, name) = &keys[i % keys.len()];
            i += 1;
            get(namespace, name).expect("cached")
        })
    });
}

fn typed_lister(c: &mut Criterion) {
    let list = pods::generate(PODS, 1);
    let store = filled::<Compact<Pod>>(&list);
    let keys = hot_keys(&store);

    let typed = TypedLister::new(store.clone());
    for (namespace, name) in &keys {
        typed.namespace(namespace).get(name).expect("cached");
    }
    bench_get(c, "typed_lister/typed_get_hot", &keys, |ns, name| {
        typed.namespace(ns).get(name)
    });
    let lean = Lister::new(store.clone());
    bench_get(c, "typed_lister/lean_get", &keys, |ns, name| {
        lean.namespace(ns).get(name)
    });
    let decoding = TypedLister::with_capacity(store.clone(), 0);
    bench_get(c, "typed_lister/typed_get_decode", &keys, |ns, name| {
        decoding.namespace(ns).get(name)
    });

    let mut group = c.benchmark_group("typed_lister");
    group.sample_size(20);
    group.measurement_time(Duration::from_secs(10));
    group.bench_function("list_lazy", |b| {
        b.iter_with_large_drop(|| typed.list_lazy(&Selector::everything()))
    });
    // One namespace: 1,000 pods, 10 of them among the kept views.
    group.bench_function("list_ns", |b| {
        b.iter_with_large_drop(|| typed.namespace("ns-7").list_all())
    });
    group.finish();
    drop((typed, decoding, lean, store));

    let openapi = Lister::new(filled::<Pod>(&list));
    drop(list);
    bench_get(c, "typed_lister/openapi_get", &keys, |ns, name| {
        openapi.namespace(ns).get(name)
    });
}

criterion_group!(benches, typed_lister);
criterion_main!(benches);
