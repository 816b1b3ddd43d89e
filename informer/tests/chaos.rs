//! Convergence under chaos: a writer creates, updates and deletes ConfigMaps in apiserver-sim
//! while the server fails list and watch requests with every injected error, cuts list bodies,
//! closes, cuts, stalls and corrupts watches, ends them with `ERROR` events, compacts its
//! history (so re-watches and continue tokens hit 410) and slows every request down. A shared
//! informer watches all of it over HTTP, listing in small pages. Once the writer and the faults
//! stop, the informer's cache must equal the server's state (keys, resourceVersions, content)
//! and every handler must have seen a consistent history of each key.
//!
//! The test checks that its faults happened: every fault kind a seed schedules must have hit
//! a request or a watch (faults still pending when the writer stops are driven to fire by
//! making the informer list and watch again, within a bound), and the informer must have
//! relisted at least once.
//!
//! A seed fixes the writer's operations, the faults and their timing, and the informer's
//! settings (queue aside): `CHAOS_SEEDS` (`7`, `1,5,9`, `1..=50` or `3-8`; `CHAOS_SEED` works
//! too) replaces the default seeds 1..=20 to reproduce or widen a run. Each seed is printed
//! before it runs and named in every failure. Every seed runs on its own runtime with tokio's
//! paused clock, so backoffs, watch timeouts and stalls cost no real time.

mod chaos_faults;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use chaos_faults::FaultLog;
use clientgo_apimachinery::{ApiResource, DynamicObject, Object, ObjectList};
use clientgo_apiserver_sim::faults::{InjectedError, WatchFault};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_informer::{
    BackoffConfig, DeleteEvent, Indexers, ListWatch, ListWatchError, ListerWatcher, QueueKind,
    ReflectorOptions, Registration, ResourceEventHandler, SharedIndexInformer,
    SharedInformerOptions,
};
use clientgo_rest::config::Config;
use clientgo_rest::{DeleteParams, DynamicClient, ListParams, PostParams, RestClient, WatchParams};
use clientgo_watch::Watch;
use parking_lot::Mutex;
use serde_json::json;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Namespaces the ConfigMaps live in.
const NAMESPACES: [&str; 3] = ["chaos-a", "chaos-b", "chaos-c"];
/// Distinct ConfigMaps (spread over the namespaces).
const KEYS: u64 = 50;
/// Writes per seed while faults are injected.
const OPERATIONS: usize = 300;
/// Writes after a last stall of the watches, in the seeds that end with one.
const TAIL_OPERATIONS: usize = 5;
/// How long (virtual time) the informer may take to converge once the faults stop: longer
/// than the longest watch a stall can hold (10 minutes) plus the largest backoff.
const CONVERGE_WITHIN: Duration = Duration::from_secs(30 * 60);
/// How long (virtual time) the faults still pending when the writer stops may take to fire,
/// the informer being made to list and watch again: many backoffs (12 failed lists).
const DRAIN_WITHIN: Duration = Duration::from_secs(30 * 60);

/// A small seeded generator (splitmix64).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// Uniform in `lo..=hi`.
    fn between(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi - lo + 1)
    }

    /// True with probability `percent`%.
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn millis(&mut self, lo: u64, hi: u64) -> Duration {
        Duration::from_millis(self.between(lo, hi))
    }
}

/// The seeds to run: `CHAOS_SEEDS` / `CHAOS_SEED`, or 1..=20.
fn seeds() -> Vec<u64> {
    let Some(spec) = ["CHAOS_SEEDS", "CHAOS_SEED"]
        .iter()
        .find_map(|name| std::env::var(name).ok())
    else {
        return (1..=20).collect();
    };
    let number = |s: &str| -> u64 {
        s.trim()
            .parse()
            .unwrap_or_else(|_| panic!("CHAOS_SEEDS: {s:?} is not a seed"))
    };
    let mut seeds = Vec::new();
    for part in spec.split(',').filter(|p| !p.trim().is_empty()) {
        if let Some((lo, hi)) = part.split_once("..=").or_else(|| part.split_once('-')) {
            seeds.extend(number(lo)..=number(hi));
        } else {
            seeds.push(number(part));
        }
    }
    seeds
}

fn config_maps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}

/// What a handler was told, per key, in order.
#[derive(Debug, Clone)]
enum Seen {
    Add(Arc<DynamicObject>),
    Update {
        old: Arc<DynamicObject>,
        new: Arc<DynamicObject>,
    },
    Delete {
        object: Option<Arc<DynamicObject>>,
        tombstone: bool,
    },
}

/// Records every notification per key.
#[derive(Default)]
struct Recorder {
    seen: Mutex<HashMap<String, Vec<Seen>>>,
}

impl Recorder {
    fn push(&self, key: String, seen: Seen) {
        self.seen.lock().entry(key).or_default().push(seen);
    }

    fn histories(&self) -> HashMap<String, Vec<Seen>> {
        self.seen.lock().clone()
    }
}

impl ResourceEventHandler<DynamicObject> for Recorder {
    fn on_add(&self, object: &Arc<DynamicObject>, _initial: bool) {
        self.push(object.key(), Seen::Add(object.clone()));
    }

    fn on_update(&self, old: &Arc<DynamicObject>, new: &Arc<DynamicObject>) {
        self.push(
            new.key(),
            Seen::Update {
                old: old.clone(),
                new: new.clone(),
            },
        );
    }

    fn on_delete(&self, event: DeleteEvent<DynamicObject>) {
        let key = event.key();
        let tombstone = event.is_tombstone();
        let object = event.object().cloned();
        self.push(key, Seen::Delete { object, tombstone });
    }
}

fn rv_of(object: &DynamicObject) -> u64 {
    object.resource_version().parse().unwrap_or_else(|_| {
        panic!(
            "{}: resourceVersion {:?} is not an integer",
            object.key(),
            object.resource_version()
        )
    })
}

/// Replays one key's history; returns what the handler believes exists at the end, or why
/// the history is inconsistent.
fn replay(key: &str, history: &[Seen]) -> Result<Option<Arc<DynamicObject>>, String> {
    let mut present: Option<Arc<DynamicObject>> = None;
    let mut last_rv = 0u64;
    for (i, seen) in history.iter().enumerate() {
        let fail = |why: String| Err(format!("{key}: event {i} ({seen:?}): {why}"));
        let rv = match seen {
            Seen::Add(object) => {
                if let Some(p) = &present {
                    return fail(format!("added while present at {}", p.resource_version()));
                }
                present = Some(object.clone());
                rv_of(object)
            }
            Seen::Update { old, new } => {
                let Some(p) = &present else {
                    return fail("update of an absent key (after a delete, without an add)".into());
                };
                if **old != **p {
                    return fail(format!(
                        "old state is not the last one notified ({})",
                        p.resource_version()
                    ));
                }
                if rv_of(new) < rv_of(old) {
                    return fail("new state older than the old one".into());
                }
                present = Some(new.clone());
                rv_of(new)
            }
            Seen::Delete { object, tombstone } => {
                let Some(p) = present.take() else {
                    return fail("delete of an absent key".into());
                };
                match object {
                    Some(o) if *tombstone && **o != *p => {
                        return fail(format!(
                            "tombstone state is not the last one notified ({})",
                            p.resource_version()
                        ));
                    }
                    Some(o) => rv_of(o),
                    None => rv_of(&p),
                }
            }
        };
        if rv < last_rv {
            return fail(format!("resourceVersion went back from {last_rv} to {rv}"));
        }
        last_rv = rv;
    }
    Ok(present)
}

/// Checks a handler's histories: `Err` when one is inconsistent (for good: histories only
/// grow), `Ok(Some(_))` while one does not end at the server's state yet.
fn check_handler(
    name: &str,
    recorder: &Recorder,
    server: &BTreeMap<String, DynamicObject>,
) -> Result<Option<String>, String> {
    let histories = recorder.histories();
    let mut pending = None;
    for (key, history) in &histories {
        let believed = replay(key, history).map_err(|e| format!("handler {name}: {e}"))?;
        match (believed, server.get(key)) {
            (None, None) => {}
            (Some(b), Some(s)) if *b == *s => {}
            (b, s) => {
                pending = Some(format!(
                    "handler {name}: {key} ends at {:?}, the server has {:?}",
                    b.map(|o| o.resource_version().to_owned()),
                    s.map(|o| o.resource_version().to_owned())
                ));
            }
        }
    }
    if let Some(key) = server.keys().find(|k| !histories.contains_key(*k)) {
        pending = Some(format!("handler {name}: never told of {key}"));
    }
    Ok(pending)
}

/// Samples the reflector's and (with the in-order RealFIFO) the cache's resourceVersion until
/// cancelled; returns the first time either went back.
async fn watch_versions(
    informer: SharedIndexInformer<DynamicObject>,
    in_order: bool,
    stop: CancellationToken,
) -> Option<String> {
    let number = |rv: String| rv.parse::<u64>().ok();
    let (mut reflector, mut cache) = (0, 0);
    while !stop.is_cancelled() {
        if let Some(rv) = number(informer.last_sync_resource_version()) {
            if rv < reflector {
                return Some(format!("the reflector went back from {reflector} to {rv}"));
            }
            reflector = rv;
        }
        if let Some(rv) = number(informer.indexer().last_resource_version()) {
            if in_order && rv < cache {
                return Some(format!("the cache went back from {cache} to {rv}"));
            }
            cache = rv;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    None
}

/// The server's ConfigMaps, read from its store.
fn server_state(sim: &ApiServerSim) -> BTreeMap<String, DynamicObject> {
    sim.state()
        .store
        .all(&format!("/{}", config_maps().plural))
        .iter()
        .map(|stored| {
            let object: DynamicObject = serde_json::from_slice(stored.json()).unwrap();
            (object.key(), object)
        })
        .collect()
}

/// How the cache differs from the server, or `None` when it is identical.
fn cache_diff(
    informer: &SharedIndexInformer<DynamicObject>,
    server: &BTreeMap<String, DynamicObject>,
) -> Option<String> {
    let cached: BTreeMap<String, Arc<DynamicObject>> = informer
        .indexer()
        .list()
        .into_iter()
        .map(|o| (o.key(), o))
        .collect();
    let mut diff = Vec::new();
    for (key, object) in server {
        match cached.get(key) {
            None => diff.push(format!("missing {key}@{}", object.resource_version())),
            Some(c) if **c != *object => diff.push(format!(
                "stale {key}: cached @{}, served @{}",
                c.resource_version(),
                object.resource_version()
            )),
            Some(_) => {}
        }
    }
    for (key, object) in &cached {
        if !server.contains_key(key) {
            diff.push(format!("extra {key}@{}", object.resource_version()));
        }
    }
    (!diff.is_empty()).then(|| diff.join(", "))
}

/// How one seed runs, chosen from the seed.
#[derive(Debug, Clone, Copy)]
struct Plan {
    seed: u64,
    queue: QueueKind,
    watch_list: bool,
    page_size: u32,
    history: usize,
    resync: Option<Duration>,
    /// client-go's backoff, or a short one so that more rounds meet more faults.
    short_backoff: bool,
    /// Whether the watches are stalled at the end, with a few more writes behind the stall.
    final_stall: bool,
}

impl Plan {
    fn new(seed: u64, queue: QueueKind, rng: &mut SplitMix64) -> Plan {
        Plan {
            seed,
            queue,
            // Mostly LIST+WATCH, so that paging and expired continue tokens are exercised.
            watch_list: seed % 4 == 0,
            page_size: rng.between(2, 9) as u32,
            history: rng.between(60, 400) as usize,
            resync: rng.chance(30).then(|| rng.millis(1_000, 5_000)),
            short_backoff: rng.chance(50),
            final_stall: rng.chance(50),
        }
    }
}

/// Creates, updates and deletes ConfigMaps, one random operation at a time.
struct Writer {
    seed: u64,
    apis: Vec<DynamicClient>,
    /// What exists, as the server last returned it.
    live: HashMap<u64, DynamicObject>,
    done: usize,
}

impl Writer {
    fn new(seed: u64, client: &RestClient) -> Writer {
        let apis = NAMESPACES
            .iter()
            .map(|ns| DynamicClient::from_api_resource(client, &config_maps(), Some(ns)))
            .collect();
        Writer {
            seed,
            apis,
            live: HashMap::new(),
            done: 0,
        }
    }

    /// Creates an absent ConfigMap; updates (mostly) or deletes a present one.
    async fn step(&mut self, rng: &mut SplitMix64) {
        let seed = self.seed;
        let op = self.done;
        self.done += 1;
        let id = rng.below(KEYS);
        let ns = (id % NAMESPACES.len() as u64) as usize;
        let api = &self.apis[ns];
        let name = format!("cm-{id}");
        match self.live.remove(&id) {
            None => {
                let object = DynamicObject::for_resource(&config_maps(), &name)
                    .within(NAMESPACES[ns])
                    .with_field("data", json!({"op": op.to_string()}));
                let created = api
                    .create(&object, &PostParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("seed {seed}: create {name}: {e}"));
                self.live.insert(id, created);
            }
            Some(mut object) if rng.chance(70) => {
                object.data.insert(
                    "data".into(),
                    json!({"op": op.to_string(), "n": rng.below(1_000).to_string()}),
                );
                let updated = api
                    .update(&name, &object, &PostParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("seed {seed}: update {name}: {e}"));
                self.live.insert(id, updated);
            }
            Some(_) => {
                api.delete(&name, &DeleteParams::default())
                    .await
                    .unwrap_or_else(|e| panic!("seed {seed}: delete {name}: {e}"));
            }
        }
    }

    /// `n` operations, mostly paced, sometimes in bursts.
    async fn run(&mut self, n: usize, rng: &mut SplitMix64) {
        for _ in 0..n {
            if !rng.chance(20) {
                tokio::time::sleep(rng.millis(1, 100)).await;
            }
            self.step(rng).await;
        }
    }
}

/// What the informer asked the server and how it went: a [`ListerWatcher`] around the real
/// one.
struct Observed<L> {
    inner: L,
    stats: Arc<Mutex<BTreeMap<String, usize>>>,
    /// Lists (first pages) and streaming lists the server answered: more than one means
    /// the informer relisted.
    list_starts: Arc<AtomicUsize>,
}

impl<L> Observed<L> {
    /// Counts one request of `kind`, and its failure if it failed.
    fn count<T>(&self, kind: &str, result: &Result<T, ListWatchError>) {
        let mut stats = self.stats.lock();
        *stats.entry(kind.to_owned()).or_default() += 1;
        let failure = match result {
            Ok(_) => return,
            Err(ListWatchError::Status(status)) => status.code.to_string(),
            Err(ListWatchError::Transport(_)) => "transport".to_owned(),
            Err(ListWatchError::Decode(_)) => "decode".to_owned(),
            Err(ListWatchError::TooLarge(_)) => "too large".to_owned(),
        };
        *stats.entry(format!("{kind}: {failure}")).or_default() += 1;
    }
}

impl<L: ListerWatcher<DynamicObject>> ListerWatcher<DynamicObject> for Observed<L> {
    async fn list(
        &self,
        options: &ListParams,
    ) -> Result<ObjectList<DynamicObject>, ListWatchError> {
        let kind = match (&options.continue_token, options.resource_version.as_deref()) {
            (Some(_), _) => "list continue",
            (None, Some("0")) => "list rv=0",
            (None, Some(_)) if options.limit.is_some() => "list rv=N paged",
            (None, Some(_)) => "list rv=N",
            (None, None) => "list rv=\"\"",
        };
        let result = self.inner.list(options).await;
        self.count(kind, &result);
        if result.is_ok() && options.continue_token.is_none() {
            self.list_starts.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    async fn watch(&self, options: &WatchParams) -> Result<Watch<DynamicObject>, ListWatchError> {
        let kind = if options.send_initial_events == Some(true) {
            "watch initial-events"
        } else {
            "watch"
        };
        let result = self.inner.watch(options).await;
        self.count(kind, &result);
        if result.is_ok() && options.send_initial_events == Some(true) {
            self.list_starts.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn supports_watch_list(&self) -> bool {
        self.inner.supports_watch_list()
    }
}

/// A random injected error.
fn injected(rng: &mut SplitMix64) -> InjectedError {
    let retry_after = rng.between(0, 2) as u32;
    match rng.below(6) {
        0 => InjectedError::TooManyRequests { retry_after },
        1 => InjectedError::InternalError,
        2 => InjectedError::ServiceUnavailable { retry_after },
        3 => InjectedError::GatewayTimeout { retry_after },
        4 => InjectedError::Expired,
        _ => InjectedError::CutBody,
    }
}

/// Injects faults at random until `done`, then drives the pending ones until they fire
/// (bounded) and clears them. Adds `late` as a handler at a random moment.
async fn inject(
    sim: &ApiServerSim,
    done: &AtomicBool,
    watch_list: bool,
    mut rng: SplitMix64,
    informer: &SharedIndexInformer<DynamicObject>,
    late: Arc<Recorder>,
) -> (Registration<DynamicObject>, FaultLog) {
    let faults = sim.faults();
    let mut log = FaultLog::new(sim);
    let mut late = Some(late);
    let mut registration = None;
    let join_after = rng.between(2, 40);
    let mut step = 0u64;
    while !done.load(Ordering::Relaxed) {
        tokio::time::sleep(rng.millis(20, 400)).await;
        step += 1;
        if step == join_after {
            if let Some(handler) = late.take() {
                registration = Some(informer.add_event_handler(handler).unwrap());
            }
        }
        log.update(sim);
        log.retry_watch_faults(sim);
        // A streaming list is a watch: LIST requests come only after a fallback there.
        let verb = if rng.chance(50) && !watch_list {
            "list"
        } else {
            "watch"
        };
        match rng.below(12) {
            0 | 1 => {
                // Mostly absorbed by the REST client's own retries; more than ten reach the
                // reflector.
                let count = if rng.chance(25) {
                    rng.between(11, 12)
                } else {
                    rng.between(1, 3)
                } as usize;
                let error = injected(&mut rng);
                log.fail_next(sim, verb, count, error);
            }
            2 => log.watch_fault(sim, WatchFault::Close),
            3 => log.watch_fault(sim, WatchFault::CutMidFrame),
            4 => log.watch_fault(sim, WatchFault::MalformedFrame),
            5 => log.watch_fault(sim, WatchFault::Error(injected(&mut rng))),
            6 => log.watch_fault(sim, WatchFault::Stall),
            7 => {
                sim.compact();
                log.immediate("compact");
            }
            8 => {
                // Watches fall behind, the history they need is dropped, then they end: the
                // re-watch from their last resourceVersion is answered 410.
                log.watch_fault(sim, WatchFault::Stall);
                tokio::time::sleep(rng.millis(20, 200)).await;
                sim.compact();
                log.immediate("compact");
                log.watch_fault(sim, WatchFault::Close);
            }
            9 => {
                faults.set_latency(rng.millis(1, 25));
                log.immediate("latency");
            }
            10 => faults.set_latency(Duration::ZERO),
            _ => {}
        }
    }
    // What is still pending fires once the informer lists and watches again: make it.
    let drain_by = Instant::now() + DRAIN_WITHIN;
    log.update(sim);
    while log.pending() && Instant::now() < drain_by {
        if !log.requests["list"].1.is_empty() {
            sim.compact(); // the re-watch is answered 410: a relist
        }
        sim.close_all_watches();
        tokio::time::sleep(Duration::from_secs(1)).await;
        log.update(sim);
        log.retry_watch_faults(sim);
    }
    faults.clear();
    let registration = match registration {
        Some(r) => r,
        None => informer.add_event_handler(late.take().unwrap()).unwrap(),
    };
    (registration, log)
}

/// One seed: writer and faults, then convergence and the handlers' histories.
async fn chaos(plan: Plan, mut rng: SplitMix64) {
    let seed = plan.seed;
    let sim = ApiServerSim::start(
        SimConfig::default()
            .with_history_size(plan.history)
            .with_bookmark_interval(rng.millis(500, 5_000)),
    )
    .await
    .unwrap();
    for ns in NAMESPACES {
        let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        sim.create("", "v1", "namespaces", "", namespace).unwrap();
    }
    let mut config = Config::new(sim.url().parse().unwrap());
    let informer_client = RestClient::new(&config).unwrap();
    config.qps = -1.0;
    let writer_client = RestClient::new(&config).unwrap();

    let stats = Arc::new(Mutex::new(BTreeMap::new()));
    let list_starts = Arc::new(AtomicUsize::new(0));
    let lister_watcher = Observed {
        inner: ListWatch::new(DynamicClient::from_api_resource(
            &informer_client,
            &config_maps(),
            None,
        )),
        stats: stats.clone(),
        list_starts: list_starts.clone(),
    };
    let backoff = if plan.short_backoff {
        BackoffConfig {
            initial: Duration::from_millis(50),
            cap: Duration::from_secs(1),
            reset_interval: Duration::from_secs(10),
            ..BackoffConfig::default()
        }
    } else {
        BackoffConfig::default()
    };
    let informer = SharedIndexInformer::new(
        lister_watcher,
        Indexers::namespace(),
        SharedInformerOptions {
            name: "chaos".into(),
            resync_period: plan.resync.unwrap_or_default(),
            queue: plan.queue,
            reflector: ReflectorOptions {
                page_size: Some(plan.page_size),
                use_watch_list: plan.watch_list,
                backoff,
                ..ReflectorOptions::default()
            },
            ..SharedInformerOptions::default()
        },
    );
    let early = Arc::new(Recorder::default());
    let late = Arc::new(Recorder::default());
    let _early_registration = informer.add_event_handler(early.clone()).unwrap();
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });

    let stop_monitor = CancellationToken::new();
    let monitor = tokio::spawn(watch_versions(
        informer.clone(),
        plan.queue == QueueKind::RealFifo,
        stop_monitor.clone(),
    ));

    let done = AtomicBool::new(false);
    let mut writer_rng = SplitMix64(rng.next_u64());
    let fault_rng = SplitMix64(rng.next_u64());
    let mut writer = Writer::new(seed, &writer_client);
    let writing = async {
        writer.run(OPERATIONS, &mut writer_rng).await;
        done.store(true, Ordering::Relaxed);
    };
    let ((), (_late_registration, fault_log)) = tokio::join!(
        writing,
        inject(
            &sim,
            &done,
            plan.watch_list,
            fault_rng,
            &informer,
            late.clone()
        )
    );
    // A fault that never fired proves nothing: every kind scheduled must have.
    let never_fired = fault_log.never_fired();
    assert!(
        never_fired.is_empty(),
        "seed {seed} ({plan:?}): faults scheduled but never fired: {never_fired:?}; \
         scheduled {:?}, fired {:?}",
        fault_log.scheduled,
        fault_log.fired,
    );
    if plan.final_stall {
        // Only the watch's timeout ends this stall; wait for the reflector to have one open.
        let stall_by = Instant::now() + Duration::from_secs(5 * 60);
        while sim.faults().watches(WatchFault::Stall) == 0 {
            assert!(Instant::now() < stall_by, "seed {seed}: no watch to stall");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        writer.run(TAIL_OPERATIONS, &mut writer_rng).await;
    }
    let writes_done = Instant::now();

    let server = server_state(&sim);
    let deadline = writes_done + CONVERGE_WITHIN;
    loop {
        // The handlers hear of a change after the cache has it.
        let mut pending = cache_diff(&informer, &server);
        for (name, recorder) in [("early", &early), ("late", &late)] {
            if pending.is_none() {
                pending = check_handler(name, recorder, &server)
                    .unwrap_or_else(|e| panic!("seed {seed} ({plan:?}): {e}"));
            }
        }
        let Some(pending) = pending else {
            break;
        };
        if Instant::now() >= deadline {
            panic!(
                "seed {seed} ({plan:?}): not converged after {CONVERGE_WITHIN:?}: {pending}; \
                 informer at resourceVersion {:?}, server at {}, last error {:?}; requests {:?}",
                informer.last_sync_resource_version(),
                sim.resource_version(),
                informer.last_error(),
                stats.lock(),
            );
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    stop_monitor.cancel();
    if let Some(went_back) = monitor.await.unwrap() {
        panic!("seed {seed} ({plan:?}): {went_back}");
    }
    assert_eq!(
        server,
        server_state(&sim),
        "seed {seed}: the server changed after the writer stopped"
    );
    let lists = list_starts.load(Ordering::Relaxed);
    assert!(
        lists >= 2,
        "seed {seed} ({plan:?}): the informer never relisted ({lists} list); requests {:?}",
        stats.lock()
    );
    eprintln!(
        "chaos seed {seed}: converged at resourceVersion {} with {} ConfigMaps, {:?} after the \
         last write; {lists} lists; faults fired {:?}; requests {:?}",
        sim.resource_version(),
        server.len(),
        writes_done.elapsed(),
        fault_log.fired,
        stats.lock(),
    );
    cancel.cancel();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .unwrap_or_else(|_| panic!("seed {seed}: the informer did not stop"))
        .unwrap();
}

fn run_seeds(queue: QueueKind, seeds: &[u64]) {
    for &seed in seeds {
        let mut rng = SplitMix64(seed);
        let plan = Plan::new(seed, queue, &mut rng);
        eprintln!("chaos seed {seed}: {plan:?}; CHAOS_SEEDS={seed} runs it again");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        runtime.block_on(chaos(plan, rng));
    }
}

#[test]
fn real_fifo_informer_converges_under_chaos() {
    run_seeds(QueueKind::RealFifo, &seeds());
}

#[test]
fn delta_fifo_informer_converges_under_chaos() {
    // A third of the seeds by default; all of them when seeds are given.
    let seeds = seeds();
    let seeds: Vec<u64> =
        if std::env::var_os("CHAOS_SEEDS").is_some() || std::env::var_os("CHAOS_SEED").is_some() {
            seeds
        } else {
            seeds.into_iter().filter(|s| s % 3 == 1).collect()
        };
    run_seeds(QueueKind::DeltaFifo, &seeds);
}
