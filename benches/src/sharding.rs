//! X1: a sharded controller (see `clientgo-sharding`) against apiserver-sim in this process.
//!
//! 20,000 ConfigMaps (standing in for Foos: the workload is the controller, not the type)
//! are created in the sim's store, then N replicas start (N = 1, 2, 4), each with a member
//! Lease, a sharder candidate, an informer narrowed to its shard, a `ShardGate` and 10
//! workers whose reconcile waits 20 ms (simulated work) and then writes the object's status.
//! Measured: the time from the replicas' start until every object is reconciled (its status
//! written, seen by polling the sim's store), and the peak cache size of each replica
//! (the approximate JSON size of the objects it caches, sampled every 100 ms, the same
//! estimate the informer's metrics use; per replica, since the replicas share one process).
//! Expected shape: both fall close to 1/N.

use std::sync::Arc;
use std::time::{Duration, Instant};

use clientgo_apimachinery::{ApiResource, DynamicObject};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{
    EnqueueHandler, SharedIndexInformer, SharedInformerFactory, approx_json_size,
};
use clientgo_rest::{Config, PostParams, ResourceClient, RestClient};
use clientgo_sharding::{
    Membership, Partition, Shard, ShardGate, ShardedResource, Sharder, SharderConfig,
};
use clientgo_workqueue::{PriorityQueue, WorkerPool};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const OBJECTS: usize = 20_000;
const WORK: Duration = Duration::from_millis(20);
const WORKERS: usize = 10;
const CONTROLLER: &str = "x1";
const NAMESPACE: &str = "default";

fn config_maps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}

/// X1 with 1, 2 and 4 shards, each in a fresh sim.
pub fn x1() -> Value {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(std::thread::available_parallelism().map_or(2, usize::from))
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut figures = serde_json::Map::new();
    for shards in [1usize, 2, 4] {
        figures.insert(format!("shards_{shards}"), runtime.block_on(run(shards)));
    }
    json!({"id": "X1", "objects": OBJECTS, "work_ms": 20, "workers_per_replica": WORKERS, "figures": figures})
}

async fn run(shards: usize) -> Value {
    let sim = ApiServerSim::start(SimConfig::default())
        .await
        .expect("apiserver-sim");
    for i in 0..OBJECTS {
        let object = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": format!("x1-{i}"), "namespace": NAMESPACE},
            "data": {"spec": "1", "payload": "x".repeat(200)}});
        sim.create("", "v1", "configmaps", NAMESPACE, object)
            .expect("seeding a ConfigMap");
    }
    let mut config = Config::new(sim.url().parse().expect("the sim's URL"));
    config.qps = -1.0;
    let cancel = CancellationToken::new();
    let started = Instant::now();
    let caches: Vec<SharedIndexInformer<DynamicObject>> = (0..shards)
        .map(|i| replica(&config, &format!("replica-{i}"), &cancel))
        .collect();
    let mut peaks = vec![0usize; shards];
    let observer = RestClient::new(&config).expect("a client");
    let reads: ResourceClient<DynamicObject> =
        ResourceClient::from_api_resource(&observer, &config_maps(), Some(NAMESPACE));
    let deadline = started + Duration::from_secs(600);
    let mut poll = 0u32;
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
            let done = list
                .items
                .iter()
                .filter(|o| {
                    let data = o.data.get("data");
                    data.and_then(|d| d.get("status")).is_some()
                })
                .count();
            if done == OBJECTS {
                break started.elapsed();
            }
        }
        if Instant::now() > deadline {
            break started.elapsed();
        }
    };
    cancel.cancel();
    json!({
        "seconds_to_all_reconciled": elapsed.as_secs_f64(),
        "peak_cache_bytes_per_replica": peaks,
    })
}

/// Starts one replica; returns its cache.
fn replica(
    config: &Config,
    id: &str,
    cancel: &CancellationToken,
) -> SharedIndexInformer<DynamicObject> {
    let client = RestClient::new(config).expect("a client");
    let shard = Shard::new(CONTROLLER, id);
    let factory = SharedInformerFactory::builder(&client)
        .namespace(NAMESPACE)
        .tweak_list_options(shard.tweak())
        .build();
    let cache = factory.dynamic_informer(&config_maps());
    let gate = ShardGate::new(shard, &client, &config_maps());
    let queue = PriorityQueue::<Arc<str>>::new(Arc::new(
        clientgo_ratelimit::default_controller_rate_limiter(),
    ));
    cache
        .add_event_handler(gate.handler(EnqueueHandler::new(queue.clone())))
        .expect("a handler");
    let mut sharder = SharderConfig::new(
        CONTROLLER,
        "kube-system",
        id,
        vec![ShardedResource {
            resource: config_maps(),
            partition: Partition::Object,
        }],
    );
    sharder.watch_namespace = Some(NAMESPACE.into());
    let sharder = Sharder::new(&client, sharder);
    let membership = Membership::new(&client, "kube-system", CONTROLLER, id);
    let (cancel, lister) = (cancel.clone(), cache.lister());
    let writes: ResourceClient<DynamicObject> =
        ResourceClient::from_api_resource(&client, &config_maps(), Some(NAMESPACE));
    tokio::spawn(async move {
        factory.start(&cancel);
        let work = |member: CancellationToken| async move {
            let reconcile = |key: Arc<str>| {
                let (gate, lister, writes) = (gate.clone(), lister.clone(), writes.clone());
                async move {
                    gate.reconcile(&key, || async {
                        let name = key.split_once('/').map_or(&*key, |(_, n)| n);
                        let Some(object) = lister.namespace(NAMESPACE).get(name) else {
                            return Ok(());
                        };
                        if object
                            .data
                            .get("data")
                            .and_then(|d| d.get("status"))
                            .is_some()
                        {
                            return Ok(());
                        }
                        tokio::time::sleep(WORK).await;
                        let mut updated = (*object).clone();
                        if let Some(Value::Object(data)) = updated.data.get_mut("data") {
                            data.insert("status".into(), json!("done"));
                        }
                        writes
                            .update(name, &updated, &PostParams::default())
                            .await
                            .map(|_| ())
                    })
                    .await
                }
            };
            tokio::join!(
                gate.run_acks(member.clone()),
                WorkerPool::new(WORKERS).run(&queue, reconcile, member.clone()),
            );
        };
        let _ = tokio::join!(
            sharder.run(cancel.clone()),
            membership.run(cancel.clone(), work)
        );
    });
    cache
}
