//! Criterion benches of I1, the informer end to end, in one process against an in-process
//! apiserver-sim over plain HTTP (no client-side throttle):
//! - `sync`: I1's sync phase. The sim holds 10,000 ConfigMaps (`data.k` about 200 bytes) in one
//!   namespace; each iteration starts a fresh `SharedIndexInformer<Compact<ConfigMap>>` (a
//!   namespaced `ListWatch`, a handler registered) and the time runs until
//!   `wait_for_cache_sync` returns. Stopping the informer is outside the timing.
//! - `update`: I1's update phase with 1,000 ConfigMaps in a second namespace: one running,
//!   synced informer; each iteration sends a JSON merge patch of `data.k` to every ConfigMap
//!   (8 concurrent writers) and the time runs until the informer's handler has seen every new
//!   value. Like I1's events/s, it includes the writers and the sim's write path.
//!
//! The informer runs on a tokio runtime of one worker thread, as in I1; the sim and the
//! writers on another. Unlike `bench-report I1`, the server shares the process and there is
//! no TLS, so these figures track the client's changes rather than give the plan's figures.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clientgo_apimachinery::Compact;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_benches::informer::{Seen, patches, runtime, seed_sim, unthrottled, write_round};
use clientgo_informer::{
    Indexers, ListWatch, ResourceEventHandlerFuncs, SharedIndexInformer, SharedInformerOptions,
    wait_for_cache_sync,
};
use clientgo_rest::{Config, ResourceClient, RestClient};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::ConfigMap;
use tokio_util::sync::CancellationToken;

/// I1's ConfigMap count (the sync bench).
const SYNC_OBJECTS: usize = 10_000;
const SYNC_NAMESPACE: &str = "bench-i1-sync";
/// The update bench's ConfigMap count.
const UPDATE_OBJECTS: usize = 1_000;
const UPDATE_NAMESPACE: &str = "bench-i1-update";
/// How long a sync or an update round may take before the bench fails.
const LIMIT: Duration = Duration::from_secs(120);

type Cm = Compact<ConfigMap>;

fn informer(client: &RestClient, namespace: &str) -> SharedIndexInformer<Cm> {
    SharedIndexInformer::new(
        ListWatch::new(ResourceClient::<Cm>::namespaced(client, namespace)),
        Indexers::namespace(),
        SharedInformerOptions {
            name: format!("{namespace}-configmaps"),
            ..SharedInformerOptions::default()
        },
    )
}

/// A REST client made inside `rt`, so that its connections live on that runtime.
fn client(rt: &tokio::runtime::Runtime, config: &Config) -> RestClient {
    rt.block_on(async { RestClient::new(config) })
        .expect("a REST client")
}

fn sync(c: &mut Criterion, config: &Config) {
    let informer_rt = runtime("bench-informer", 1);
    let client = &client(&informer_rt, config);
    let mut group = c.benchmark_group("i1_informer");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Elements(SYNC_OBJECTS as u64));
    group.bench_function("sync_10000", |b| {
        b.iter_custom(|iters| {
            informer_rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let informer = informer(client, SYNC_NAMESPACE);
                    let added = Arc::new(AtomicUsize::new(0));
                    let handler = {
                        let added = Arc::clone(&added);
                        ResourceEventHandlerFuncs::new().add_func(move |_: &Arc<Cm>, _| {
                            added.fetch_add(1, Ordering::Relaxed);
                        })
                    };
                    informer
                        .add_event_handler(handler)
                        .expect("the handler registers");
                    let cancel = CancellationToken::new();
                    let start = Instant::now();
                    let task = {
                        let (informer, cancel) = (informer.clone(), cancel.clone());
                        tokio::spawn(async move { informer.run(cancel).await })
                    };
                    wait_for_cache_sync(&[&informer], LIMIT)
                        .await
                        .expect("the informer syncs");
                    total += start.elapsed();
                    assert_eq!(informer.indexer().len(), SYNC_OBJECTS, "objects cached");
                    cancel.cancel();
                    task.await.expect("the informer stops");
                }
                total
            })
        });
    });
    group.finish();
}

fn update(c: &mut Criterion, config: &Config, server_rt: &tokio::runtime::Runtime) {
    let informer_rt = runtime("bench-informer", 1);
    let informer = informer(&client(&informer_rt, config), UPDATE_NAMESPACE);
    let writer = &client(server_rt, config);
    let seen = Arc::new(Seen::new(UPDATE_OBJECTS));
    let handler = {
        let seen = Arc::clone(&seen);
        ResourceEventHandlerFuncs::new().update_func(move |_, cm: &Arc<Cm>| seen.observe(cm))
    };
    informer
        .add_event_handler(handler)
        .expect("the handler registers");
    let cancel = CancellationToken::new();
    let task = {
        let (informer, cancel) = (informer.clone(), cancel.clone());
        informer_rt.spawn(async move { informer.run(cancel).await })
    };
    informer_rt
        .block_on(wait_for_cache_sync(&[&informer], LIMIT))
        .expect("the informer syncs");

    let mut round = 0;
    let mut group = c.benchmark_group("i1_informer");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(15));
    group.throughput(Throughput::Elements(UPDATE_OBJECTS as u64));
    group.bench_function("update_1000", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                round += 1;
                seen.expect_round(round);
                let patches = patches(UPDATE_OBJECTS, round);
                let start = Instant::now();
                server_rt.block_on(async {
                    write_round(writer, UPDATE_NAMESPACE, patches).await;
                    tokio::time::timeout(LIMIT, seen.all_seen())
                        .await
                        .expect("every update seen");
                });
                total += start.elapsed();
            }
            total
        });
    });
    group.finish();
    cancel.cancel();
    informer_rt.block_on(task).expect("the informer stops");
}

fn informer_benches(c: &mut Criterion) {
    let server_rt = runtime("bench-sim", 1);
    let sim = server_rt
        .block_on(ApiServerSim::start(SimConfig::default()))
        .expect("apiserver-sim starts");
    seed_sim(&sim, SYNC_NAMESPACE, SYNC_OBJECTS);
    seed_sim(&sim, UPDATE_NAMESPACE, UPDATE_OBJECTS);
    let config = unthrottled(Config::new(sim.url().parse().expect("the sim's URL")));
    sync(c, &config);
    update(c, &config, &server_rt);
    drop(sim);
}

criterion_group!(benches, informer_benches);
criterion_main!(benches);
