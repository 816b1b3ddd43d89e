//! X1: the sample-controller's Foos reconciled by a sharded controller (see
//! `clientgo-sharding`) against apiserver-sim in this process.
//!
//! 20,000 Foos (the sample-controller's custom resource, its CRD installed in the sim) are
//! created in the sim's store, then N replicas start (N = 1, 2, 4), each a
//! [`ShardedReplica`]: a member Lease, a sharder candidate, a Foo informer narrowed to its
//! shard, the `ShardGate` and 10 workers whose reconcile waits 20 ms (simulated work) and then
//! writes the Foo's status. Measured: the time from the replicas' start until every Foo is
//! reconciled (its status written, seen by polling the sim's store), and the peak cache size
//! of each replica (the approximate JSON size of the Foos it caches, sampled every 100 ms, the
//! same estimate the informer's metrics use; per replica, since the replicas share one
//! process). Expected shape: both fall close to 1/N. A run that has not reconciled every Foo
//! after 600 s fails (the child process panics saying how far it got): it is no time.
//!
//! The figures are flat (`shards_N_seconds`, `shards_N_peak_cache_mb_mean`,
//! `shards_N_peak_cache_mb_max`), so that `bench-report --runs R` reports each one's median.

use std::time::{Duration, Instant};

use clientgo_apimachinery::{ApiResource, Resource};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{EnqueueHandler, SharedIndexInformer, approx_json_size};
use clientgo_rest::{Config, PostParams, ResourceClient, RestClient};
use clientgo_sample_controller::foo::{self, Foo};
use clientgo_sharding::{Partition, ShardedReplica, ShardedResource, SharderConfig};
use clientgo_workqueue::{ObjectKey, Queue, WorkerPool};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 20_000;
const WORK: Duration = Duration::from_millis(20);
const WORKERS: usize = 10;
const CONTROLLER: &str = "x1";
const NAMESPACE: &str = "default";

/// X1 with 1, 2 and 4 shards, each in a fresh sim.
pub fn x1() -> Value {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, usize::from))
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut figures = serde_json::Map::new();
    figures.insert("id".into(), json!("X1"));
    figures.insert("objects".into(), json!(OBJECTS));
    figures.insert("work_ms".into(), json!(WORK.as_millis() as u64));
    figures.insert("workers_per_replica".into(), json!(WORKERS));
    for shards in [1usize, 2, 4] {
        let (seconds, peaks) = runtime.block_on(run(shards));
        let mb: Vec<f64> = peaks.iter().map(|&b| b as f64 / 1e6).collect();
        let mean = mb.iter().sum::<f64>() / mb.len() as f64;
        let max = mb.iter().copied().fold(0.0, f64::max);
        figures.insert(format!("shards_{shards}_seconds"), json!(seconds));
        figures.insert(format!("shards_{shards}_peak_cache_mb_mean"), json!(mean));
        figures.insert(format!("shards_{shards}_peak_cache_mb_max"), json!(max));
    }
    Value::Object(figures)
}

/// One run with `shards` replicas: the seconds until every Foo is reconciled, and each
/// replica's peak cache bytes.
async fn run(shards: usize) -> (f64, Vec<usize>) {
    let sim = ApiServerSim::start(SimConfig::default())
        .await
        .expect("apiserver-sim");
    let mut config = Config::new(sim.url().parse().expect("the sim's URL"));
    config.qps = -1.0;
    let observer = RestClient::new(&config).expect("a client");
    foo::install_crd(&observer).await.expect("the Foo CRD");
    for i in 0..OBJECTS {
        let name = format!("x1-{i}");
        let object = serde_json::to_value(Foo::new(NAMESPACE, &name, &name, 1)).expect("a Foo");
        sim.create(Foo::GROUP, Foo::VERSION, Foo::PLURAL, NAMESPACE, object)
            .expect("seeding a Foo");
    }
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let caches: Vec<SharedIndexInformer<Foo>> = (0..shards)
        .map(|i| replica(&config, &format!("replica-{i}"), &cancel))
        .collect();
    let mut peaks = vec![0usize; shards];
    let reads: ResourceClient<Foo> = ResourceClient::namespaced(&observer, NAMESPACE);
    let deadline = started + Duration::from_secs(600);
    let mut poll = 0u32;
    let mut done = 0;
    let elapsed = loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        for (peak, cache) in peaks.iter_mut().zip(&caches) {
            let bytes: usize = cache
                .indexer()
                .list()
                .iter()
                .map(|o| approx_json_size(o.as_ref()))
                .sum();
            *peak = (*peak).max(bytes);
        }
        poll += 1;
        if poll % 5 != 0 {
            continue;
        }
        if let Ok(list) = reads.list(&Default::default()).await {
            done = list.items.iter().filter(|f| reconciled(f)).count();
            if done == OBJECTS {
                break started.elapsed();
            }
        }
        // A run that does not finish is a failure, not a time: the child process fails, and
        // bench-report reports the workload as failed rather than a median of its runs.
        assert!(
            Instant::now() <= deadline,
            "X1 with {shards} shards timed out: {done} of {OBJECTS} Foos reconciled in {:?}",
            started.elapsed()
        );
    };
    cancel.cancel();
    (elapsed.as_secs_f64(), peaks)
}

/// Whether the reconcile wrote the Foo's status.
fn reconciled(object: &Foo) -> bool {
    object.status.available_replicas == 1
}

/// Starts one replica; returns its cache.
fn replica(config: &Config, id: &str, cancel: &CancellationToken) -> SharedIndexInformer<Foo> {
    let client = RestClient::new(config).expect("a client");
    let mut sharder = SharderConfig::new(
        CONTROLLER,
        "kube-system",
        id,
        vec![ShardedResource {
            resource: ApiResource::of::<Foo>(),
            partition: Partition::Object,
        }],
    );
    sharder.watch_namespace = Some(NAMESPACE.into());
    let sharded = ShardedReplica::new(&client, &client, sharder).expect("a primary resource");
    let factory = sharded.informer_factory(&client).build();
    let cache = factory.informer::<Foo>();
    let gate = sharded.gate().clone();
    let queue = Queue::<ObjectKey>::builder()
        .default_rate_limiter()
        .priority()
        .build();
    cache
        .add_event_handler(gate.handler(EnqueueHandler::new(queue.clone())))
        .expect("a handler");
    let (cancel, lister) = (cancel.clone(), cache.lister());
    let writes: ResourceClient<Foo> = ResourceClient::namespaced(&client, NAMESPACE);
    tokio::spawn(async move {
        factory.start(&cancel);
        let reconcile = move |key: ObjectKey| {
            let (gate, lister, writes) = (gate.clone(), lister.clone(), writes.clone());
            async move {
                gate.reconcile(&key, || async {
                    let name = key.name();
                    let Some(object) = lister.namespace(NAMESPACE).get(name) else {
                        return Ok(());
                    };
                    if reconciled(&object) {
                        return Ok(());
                    }
                    tokio::time::sleep(WORK).await;
                    let mut updated = (*object).clone();
                    updated.status.available_replicas = 1;
                    writes
                        .update_status(name, &updated, &PostParams::default())
                        .await
                        .map(|_| ())
                })
                .await
            }
        };
        let workers = |member, fence: clientgo_sharding::Fence| {
            WorkerPool::new(WORKERS)
                .fence(fence.deadline())
                .run(&queue, reconcile, member)
        };
        let _ = sharded.run(cancel.clone(), workers).await;
    });
    cache
}
