//! S1, the indexed store: insert 100,000 pods into an [`Indexer`] with a namespace index and
//! a label index on `app`, then 1,000 `by_index(namespace, "ns-7")` queries and one full
//! `list`.
//!
//! The pods are decoded (and wrapped in their `Arc`s) before the timer, the input bytes
//! dropped; only the inserts are timed. `bytes_per_object` is the resident memory after the
//! inserts (freed memory returned to the OS first) minus the resident memory at the
//! process's start, divided by N: objects, store and indexes together, as the plan asks.
//!
//! Two forms are measured: [`Compact<Pod>`](clientgo_apimachinery::Compact), the form this
//! project recommends for caches (workload `S1`), and k8s-openapi's typed `Pod` (`S1typed`),
//! what client-go's typed cache and kube-rs hold.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clientgo_apimachinery::{Compact, Object, ObjectList};
use clientgo_informer::{Indexer, Indexers, NAMESPACE_INDEX, label_index_func};
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{pods, process};

/// S1's pod count.
pub const S1_PODS: usize = 100_000;
/// S1's `by_index` queries.
const S1_QUERIES: usize = 1_000;
/// The namespace S1 queries (1,000 of the 100,000 pods).
const S1_NAMESPACE: &str = "ns-7";

/// S1 with the compact form.
pub fn s1() -> Value {
    s1_with::<Compact<Pod>>("Compact<Pod>")
}

/// S1 with k8s-openapi's typed `Pod`.
pub fn s1_typed() -> Value {
    s1_with::<Pod>("k8s-openapi Pod")
}

fn s1_with<T>(form: &str) -> Value
where
    T: Object + DeserializeOwned + Send + Sync + 'static,
{
    let start = process::resident_bytes_trimmed().unwrap_or(0);
    let (input, source) = pods::podlist(S1_PODS);
    let input_bytes = input.len();
    let list: ObjectList<T> = serde_json::from_slice(&input).expect("the PodList decodes");
    drop(input);
    let objects: Vec<Arc<T>> = list.items.into_iter().map(Arc::new).collect();
    assert_eq!(objects.len(), S1_PODS, "the PodList has {S1_PODS} pods");

    let store: Indexer<T> =
        Indexer::with_indexers(Indexers::namespace().with("app", label_index_func::<T>("app")));
    let timer = Instant::now();
    for object in objects {
        store.add(object);
    }
    let insert = timer.elapsed();
    let after = process::resident_bytes_trimmed().unwrap_or(0);

    let mut hits = 0;
    let timer = Instant::now();
    for _ in 0..S1_QUERIES {
        let found = store
            .by_index(NAMESPACE_INDEX, S1_NAMESPACE)
            .expect("the namespace index exists");
        hits = found.len();
        std::hint::black_box(found);
    }
    let by_index = timer.elapsed() / S1_QUERIES as u32;

    let timer = Instant::now();
    let all = store.list();
    let list_time = timer.elapsed();
    assert_eq!(all.len(), S1_PODS);
    drop(all);

    json!({
        "form": form,
        "source": source.as_str(),
        "pods": S1_PODS,
        "input_bytes": input_bytes,
        "insert_per_s": S1_PODS as f64 / insert.as_secs_f64(),
        "bytes_per_object": after.saturating_sub(start) / S1_PODS as u64,
        "by_index_hits": hits,
        "by_index_mean_us": micros(by_index),
        "list_ms": micros(list_time) / 1e3,
        "peak_rss_kb": process::peak_rss_kib().unwrap_or(0),
    })
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
