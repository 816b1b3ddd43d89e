//! A sharded controller of ConfigMaps on apiserver-sim, for the sharding tests: each replica
//! runs the member Lease, a sharder candidate, an informer narrowed to its shard, a
//! [`ShardGate`] and workers; a per-key log of reconcile starts and ends (on one global
//! sequence, so it orders events across replicas) shows whether two replicas ever
//! reconciled one key at once.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, Object};
use clientgo_informer::{EnqueueHandler, SharedIndexInformer};
use clientgo_leaderelection::{Fence, LeaderElectionConfig};
use clientgo_rest::{Config, ListParams, PostParams, ResourceClient, RestClient};
use clientgo_sharding::{
    Partition, ShardGate, ShardedReplica, ShardedResource, SharderConfig, ShardingMetrics,
};
use clientgo_workqueue::{ObjectKey, Queue, WorkerPool};
use parking_lot::Mutex;
use serde_json::json;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

pub const CONTROLLER: &str = "cmctl";
pub const NAMESPACE: &str = "default";
pub const LEASES: &str = "kube-system";

pub fn config_maps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}

pub fn client(url: &str) -> RestClient {
    let mut config = Config::new(url.parse().unwrap());
    config.qps = -1.0; // no client-side throttle: the test measures the protocol, not it
    RestClient::new(&config).unwrap()
}

pub fn objects(client: &RestClient) -> ResourceClient<DynamicObject> {
    ResourceClient::from_api_resource(client, &config_maps(), Some(NAMESPACE))
}

/// One reconcile, as the log saw it.
#[derive(Debug, Clone)]
pub struct Span {
    pub key: String,
    pub replica: String,
    pub start: u64,
    pub end: Option<u64>,
}

/// Every reconcile's start and end, on one sequence.
#[derive(Debug, Default)]
pub struct Log {
    seq: AtomicU64,
    spans: Mutex<Vec<Span>>,
}

/// A reconcile in progress: its end is logged when it returns or is dropped (a killed replica).
pub struct Running {
    log: Arc<Log>,
    at: usize,
}

impl Drop for Running {
    fn drop(&mut self) {
        let end = self.log.seq.fetch_add(1, Ordering::SeqCst);
        self.log.spans.lock()[self.at].end = Some(end);
    }
}

impl Log {
    pub fn start(self: &Arc<Self>, key: &str, replica: &str) -> Running {
        let start = self.seq.fetch_add(1, Ordering::SeqCst);
        let mut spans = self.spans.lock();
        spans.push(Span {
            key: key.to_owned(),
            replica: replica.to_owned(),
            start,
            end: None,
        });
        Running {
            log: self.clone(),
            at: spans.len() - 1,
        }
    }

    pub fn len(&self) -> usize {
        self.spans.lock().len()
    }

    /// Fails the test, listing them, if any two reconciles of one key overlapped.
    pub fn assert_no_overlap(&self) {
        let overlaps = self.overlaps();
        assert!(
            overlaps.is_empty(),
            "reconciles overlapped:\n{}",
            overlaps.join("\n")
        );
    }

    /// Every pair of reconciles of one key that overlapped, described.
    pub fn overlaps(&self) -> Vec<String> {
        let mut by_key: BTreeMap<String, Vec<Span>> = BTreeMap::new();
        for span in self.spans.lock().iter() {
            by_key
                .entry(span.key.clone())
                .or_default()
                .push(span.clone());
        }
        let mut found = Vec::new();
        for (key, mut spans) in by_key {
            spans.sort_by_key(|s| s.start);
            for pair in spans.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                if a.end.is_none_or(|end| end > b.start) {
                    found.push(format!(
                        "{key}: {} [{}, {:?}] overlaps {} [{}, {:?}]",
                        a.replica, a.start, a.end, b.replica, b.start, b.end
                    ));
                }
            }
        }
        found
    }
}

/// What a running replica shows the test.
#[derive(Clone)]
pub struct Replica {
    pub id: String,
    pub cancel: CancellationToken,
    pub task: Arc<Mutex<Option<JoinHandle<()>>>>,
    pub gate: ShardGate,
    pub cache: SharedIndexInformer<DynamicObject>,
    pub sharder: ShardingMetrics,
}

impl Replica {
    /// Kills it: every future dropped at once, nothing released (a crash).
    pub fn kill(&self) {
        self.cancel.cancel(); // not seen: the abort comes first
        if let Some(task) = self.task.lock().take() {
            task.abort();
        }
    }

    /// Stops it cleanly (work drained, Leases released) and waits.
    pub async fn stop(&self) {
        self.cancel.cancel();
        let task = self.task.lock().take();
        if let Some(task) = task {
            let _ = task.await;
        }
    }

    pub fn cached(&self) -> usize {
        self.cache.indexer().len()
    }
}

/// Short timings, so that expiries happen within a test's simulated minutes.
pub fn election() -> LeaderElectionConfig {
    LeaderElectionConfig {
        lease_duration: Duration::from_secs(15),
        renew_deadline: Duration::from_secs(10),
        retry_period: Duration::from_secs(2),
        ..LeaderElectionConfig::default()
    }
}

/// Starts replica `id` of the ConfigMap controller; each reconcile takes `work`.
pub fn start_replica(url: &str, id: &str, log: &Arc<Log>, work: Duration) -> Replica {
    let client = client(url);
    start_replica_with(&client, &client, id, log, work)
}

/// A client of the sim with a client-side throttle of `qps` requests per second (burst twice
/// that), as a controller's is in production.
pub fn throttled_client(url: &str, qps: f32) -> RestClient {
    let mut config = Config::new(url.parse().unwrap());
    config.qps = qps;
    config.burst = (2.0 * qps) as i32;
    RestClient::new(&config).unwrap()
}

/// [`start_replica`] with the controller's and the sharder's requests through `client`, and
/// the Leases' (member and sharder elections, the sharder's holds) through `election_client`.
pub fn start_replica_with(
    client: &RestClient,
    election_client: &RestClient,
    id: &str,
    log: &Arc<Log>,
    work: Duration,
) -> Replica {
    let client = client.clone();
    let mut config = SharderConfig::new(
        CONTROLLER,
        LEASES,
        id,
        vec![ShardedResource {
            resource: config_maps(),
            partition: Partition::Object,
        }],
    );
    config.watch_namespace = Some(NAMESPACE.into());
    config.election = election();
    let sharded = ShardedReplica::new(&client, election_client, config).unwrap();
    let factory = sharded.informer_factory(&client).build();
    let cache = factory.dynamic_informer(&config_maps());
    let gate = sharded.gate().clone();
    let queue = Queue::<ObjectKey>::builder()
        .default_rate_limiter()
        .priority()
        .build();
    cache
        .add_event_handler(gate.handler(EnqueueHandler::new(queue.clone())))
        .unwrap();
    let cancel = CancellationToken::new();
    let replica = Replica {
        id: id.to_owned(),
        cancel: cancel.clone(),
        task: Arc::default(),
        gate: gate.clone(),
        cache: cache.clone(),
        sharder: sharded.sharder().metrics().clone(),
    };
    let (log, id) = (log.clone(), id.to_owned());
    let task = tokio::spawn(async move {
        factory.start(&cancel);
        let lister = cache.lister();
        let writes = objects(&client);
        let reconcile = move |key: ObjectKey| {
            let (gate, lister, writes, log, id) = (
                gate.clone(),
                lister.clone(),
                writes.clone(),
                log.clone(),
                id.clone(),
            );
            async move {
                gate.reconcile(&key, || async {
                    let _running = log.start(key.as_str(), &id);
                    let name = key.name();
                    reconcile_one(&lister.namespace(NAMESPACE), &writes, name, work).await
                })
                .await
            }
        };
        let workers = |member: CancellationToken, fence: Fence| {
            WorkerPool::new(4)
                .drain_timeout(Duration::from_secs(5))
                .fence(fence.deadline())
                .run(&queue, reconcile, member)
        };
        let _ = sharded.run(cancel.clone(), workers).await;
        // Stopped, or its membership lost (it would start over as a new process): the
        // informers stop too.
        cancel.cancel();
        factory.shutdown().await;
    });
    *replica.task.lock() = Some(task);
    replica
}

/// The controller: copy `data.spec` to `data.status`, after `work`.
async fn reconcile_one(
    lister: &clientgo_informer::NamespaceLister<DynamicObject>,
    writes: &ResourceClient<DynamicObject>,
    name: &str,
    work: Duration,
) -> Result<(), clientgo_rest::Error> {
    let Some(object) = lister.get(name) else {
        return Ok(());
    };
    let data = object.data.get("data");
    let spec = data.and_then(|d| d.get("spec")).cloned();
    if spec.is_none() || data.and_then(|d| d.get("status")) == spec.as_ref() {
        return Ok(());
    }
    tokio::time::sleep(work).await;
    let mut updated = (*object).clone();
    updated
        .data
        .insert("data".into(), json!({"spec": spec, "status": spec}));
    writes
        .update(name, &updated, &PostParams::default())
        .await
        .map(|_| ())
}

/// Creates `count` ConfigMaps `cm-<from>..` with `spec`.
pub async fn create(client: &RestClient, from: usize, count: usize, spec: &str) {
    let writes = objects(client);
    for i in from..from + count {
        let object = DynamicObject::for_resource(&config_maps(), format!("cm-{i}"))
            .within(NAMESPACE)
            .with_field("data", json!({"spec": spec}));
        writes
            .create(&object, &PostParams::default())
            .await
            .unwrap();
    }
}

/// The server's ConfigMaps of the test, by name.
pub async fn server_state(client: &RestClient) -> Option<BTreeMap<String, DynamicObject>> {
    let list = objects(client).list(&ListParams::default()).await.ok()?;
    Some(
        list.items
            .into_iter()
            .filter(|o| o.name().starts_with("cm-"))
            .map(|o| (o.name().to_owned(), o))
            .collect(),
    )
}

pub fn label_of<'a>(object: &'a DynamicObject, key: &str) -> Option<&'a str> {
    object.labels().get(key)
}

/// The assignment of every object, if all are reconciled at `spec` (their `status` equals
/// their `spec`, and that is `spec`), each assigned to one of `members`, none draining.
pub async fn assignment(
    client: &RestClient,
    members: &std::collections::BTreeSet<String>,
    spec: &str,
) -> Option<BTreeMap<String, String>> {
    let (shard, drain) = (
        clientgo_sharding::shard_label(CONTROLLER),
        clientgo_sharding::drain_label(CONTROLLER),
    );
    let mut assigned = BTreeMap::new();
    for (name, object) in server_state(client).await? {
        let data = object.data.get("data")?;
        let reconciled =
            data.get("spec") == Some(&json!(spec)) && data.get("status") == data.get("spec");
        let owner = label_of(&object, &shard).filter(|o| members.contains(*o))?;
        if !reconciled || label_of(&object, &drain).is_some() {
            return None;
        }
        assigned.insert(name, owner.to_owned());
    }
    Some(assigned).filter(|a| !a.is_empty())
}
