//! S1, the indexed store: insert 100,000 pods into an [`Indexer`] with a namespace index and
//! a label index on `app`, then 1,000 `by_index(namespace, "ns-7")` queries and one full
//! `list`.
//!
//! The pods are decoded (and wrapped in their `Arc`s) before the timer, the input bytes
//! dropped; only the inserts are timed. `bytes_per_object` is the resident memory after the
//! inserts (freed memory returned to the OS first) minus the resident memory at the
//! process's start, divided by N: objects, store and indexes together, as the plan asks.
//!
//! Three caches are measured:
//!
//! * `S1`: [`Compact<Pod>`](clientgo_apimachinery::Compact), the lean form this project
//!   recommends for caches (metadata parsed, the rest kept as JSON text);
//! * `S1typed`: a cache read as typed k8s-openapi `Pod`s, the way this project recommends:
//!   the same `Compact<Pod>` store read through a [`TypedLister`], which decodes a `Pod` on
//!   first read and keeps the views of hot objects ([`DEFAULT_VIEW_CAPACITY`]). Its
//!   `bytes_per_object` is taken with the view cache full (that many distinct pods read
//!   first), the most it holds;
//! * `S1openapi`: a store of k8s-openapi's `Pod` itself, what client-go's typed cache and
//!   kube-rs hold (this was `S1typed` before the typed lister).
//!
//! Each also reports a reconcile's read: `get_hot_ns`, a (typed, but for `S1`) `get` of an object
//! read before and unchanged since (1,000,000 gets cycling over 1,000 pods, each through
//! `lister.namespace(ns).get(name)` as a reconcile calls it); `get_cold_us`, a typed `get` of
//! an object never read (2,000 distinct pods); `list_lazy_ms`, one `list_lazy` of all 100,000
//! pods (each decoded only when read); and `list_typed_ms`, one typed `list` of all 100,000
//! (every pod not kept decoded). The gets are also given in CPU time (`get_hot_cpu_ns`,
//! `get_cold_cpu_us`: the process's CPU time over the loop), which a loaded machine inflates
//! less than wall time.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clientgo_apimachinery::labels::Selector;
use clientgo_apimachinery::{Compact, Object, ObjectList};
use clientgo_informer::{
    DEFAULT_VIEW_CAPACITY, Indexer, Indexers, Lister, NAMESPACE_INDEX, TypedLister,
    label_index_func,
};
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

/// Typed gets of hot objects timed.
const HOT_GETS: usize = 1_000_000;
/// Distinct hot objects they cycle over.
const HOT_SET: usize = 1_000;
/// Typed gets of cold objects timed.
const COLD_GETS: usize = 2_000;

/// S1 with the compact form.
pub fn s1() -> Value {
    let (mut figures, store) = s1_with::<Compact<Pod>>("Compact<Pod>", |_| {});
    get_hot(&Lister::new(store)).report(&mut figures, "get_hot");
    figures
}

/// The mean time of a `get` through `lister` cycling over the first `HOT_SET` keys.
fn get_hot<T: Object>(lister: &Lister<T>) -> PerCall {
    let keys = keys(lister.indexer());
    let hot = &keys[..HOT_SET];
    time_per(HOT_GETS, |i| {
        let (namespace, name) = &hot[i % HOT_SET];
        lister.namespace(namespace).get(name).is_some()
    })
}

/// S1 read as typed `Pod`s through a [`TypedLister`] over the compact store.
pub fn s1_typed() -> Value {
    let mut lister = None;
    let (mut figures, store) =
        s1_with::<Compact<Pod>>("Compact<Pod> read through TypedLister<Pod>", |store| {
            // Fill the view cache before memory is read: the most it holds.
            // The pods read are the first of `keys`, so the hot set below is among them.
            let typed = TypedLister::new(store.clone());
            for (namespace, name) in keys(store).iter().take(DEFAULT_VIEW_CAPACITY) {
                assert!(typed.namespace(namespace).get(name).is_some());
            }
            assert_eq!(typed.views_kept().0, DEFAULT_VIEW_CAPACITY);
            lister = Some(typed);
        });
    let lister = lister.expect("the lister was built");
    let keys = keys(&store);
    let hot = &keys[..HOT_SET];
    let get = |(namespace, name): &(String, String)| lister.namespace(namespace).get(name);
    let get_hot = time_per(HOT_GETS, |i| get(&hot[i % HOT_SET]).is_some());
    // Cold: pods never read (the view cache held the first DEFAULT_VIEW_CAPACITY).
    let cold = &keys[keys.len() - COLD_GETS..];
    let get_cold = time_per(COLD_GETS, |i| get(&cold[i]).is_some());
    let timer = Instant::now();
    let lazy = lister.list_lazy(&Selector::everything());
    let list_lazy = timer.elapsed();
    assert_eq!(lazy.len(), S1_PODS);
    drop(lazy);
    let timer = Instant::now();
    let all = lister.list(&Selector::everything());
    let list_typed = timer.elapsed();
    assert_eq!(all.len(), S1_PODS);
    drop(all);
    figures["view_capacity"] = json!(DEFAULT_VIEW_CAPACITY);
    get_hot.report(&mut figures, "get_hot");
    figures["get_cold_us"] = json!(micros(get_cold.wall));
    figures["get_cold_cpu_us"] = json!(get_cold.cpu_ns / 1e3);
    figures["list_lazy_ms"] = json!(micros(list_lazy) / 1e3);
    figures["list_typed_ms"] = json!(micros(list_typed) / 1e3);
    figures
}

/// S1 with k8s-openapi's typed `Pod` in the store (client-go's and kube-rs's typed cache).
pub fn s1_openapi() -> Value {
    let (mut figures, store) = s1_with::<Pod>("k8s-openapi Pod", |_| {});
    let lister = Lister::new(store.clone());
    let get_hot = get_hot(&lister);
    let timer = Instant::now();
    let all = lister.list(&Selector::everything());
    let list_typed = timer.elapsed();
    assert_eq!(all.len(), S1_PODS);
    drop(all);
    get_hot.report(&mut figures, "get_hot");
    figures["list_typed_ms"] = json!(micros(list_typed) / 1e3);
    figures
}

/// `(namespace, name)` of every stored object, sorted, formatted before any timing.
pub fn keys<T: Object>(store: &Indexer<T>) -> Vec<(String, String)> {
    let mut keys: Vec<_> = store
        .list()
        .iter()
        .map(|o| (o.namespace().to_owned(), o.name().to_owned()))
        .collect();
    keys.sort();
    keys
}

/// The mean time of one call, in wall time and in the process's CPU time (this loop is its
/// only work then): on a loaded machine the wall time counts the time the thread waited for
/// a core, the CPU time does not.
struct PerCall {
    wall: Duration,
    cpu_ns: f64,
}

impl PerCall {
    /// Adds `{name}_ns` (wall) and `{name}_cpu_ns` to `figures`.
    fn report(&self, figures: &mut Value, name: &str) {
        figures[format!("{name}_ns")] = json!(self.wall.as_secs_f64() * 1e9);
        figures[format!("{name}_cpu_ns")] = json!(self.cpu_ns);
    }
}

/// The mean time of `n` calls of `f(i)`, each of which must return true.
fn time_per(n: usize, mut f: impl FnMut(usize) -> bool) -> PerCall {
    let cpu = process::cpu_seconds();
    let timer = Instant::now();
    let mut found = 0;
    for i in 0..n {
        found += usize::from(std::hint::black_box(f(i)));
    }
    let elapsed = timer.elapsed();
    let cpu = process::cpu_seconds() - cpu;
    assert_eq!(found, n, "every get finds its object");
    PerCall {
        wall: elapsed / n as u32,
        cpu_ns: cpu * 1e9 / n as f64,
    }
}

/// Runs S1 on a store of `T`; `before_memory` runs on the filled store before its resident
/// memory is read. Returns the figures and the store.
fn s1_with<T>(form: &str, before_memory: impl FnOnce(&Arc<Indexer<T>>)) -> (Value, Arc<Indexer<T>>)
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

    let store: Arc<Indexer<T>> = Arc::new(Indexer::with_indexers(
        Indexers::namespace().with("app", label_index_func::<T>("app")),
    ));
    let timer = Instant::now();
    for object in objects {
        store.add(object);
    }
    let insert = timer.elapsed();
    before_memory(&store);
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

    let figures = json!({
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
    });
    (figures, store)
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}
