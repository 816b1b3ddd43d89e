//! I1, the informer end to end: 10,000 ConfigMaps (`data.k` about 200 bytes) in one
//! namespace; a fresh informer lists and watches them until synced; then a second client
//! with 8 concurrent writers sends one JSON merge patch of `data.k` to each, and the time
//! runs until the informer's handler has seen every new value.
//!
//! The informer's process does nothing else: the server and the second client run in a
//! helper process (`bench-report --i1-helper`), so the CPU seconds the report gives
//! (`getrusage` of the informer's process, for the sync and for the update stream) are the
//! informer's own, as the plan asks. A second update round then runs the 8 writers inside the
//! informer's process, as the peers' harnesses do, and reports that CPU beside it
//! (`client_cpu_updates_with_writers_s`). The process's peak RSS is reported after the first
//! round (`peak_rss_kb`: the informer alone, sync and update stream) and after the second
//! (`peak_rss_with_writers_kb`: with the writers in the process, as the peers measure it).
//! The helper starts an in-process apiserver-sim (over TLS with a bearer token, as a real
//! cluster is reached), or, with `CLIENTGO_BENCH_KUBECONFIG` set, talks to that cluster
//! instead (namespace `clientgo-bench-i1`, created if missing and left behind; a later run
//! finds the ConfigMaps there and syncs on a server that has been quiet since, as the peers'
//! harnesses do: each run's values carry a token of their own, so none needs resetting
//! first); `bench-report --envtest` starts a real kube-apiserver for it (see the envtest
//! crate). Both clients run without the
//! client-side throttle (it would measure the throttle). The helper takes commands on
//! its stdin (`setup`, `write`) and answers on its stdout.
//!
//! The informer runs on a tokio runtime of one worker thread (`CLIENTGO_BENCH_I1_RUNTIME`:
//! `one-worker`, the default; `current-thread`, the runtime's own thread and no other;
//! `two-workers`, one per core as `#[tokio::main]` makes it), reported as `runtime`. Its
//! handler (a map update under a lock) declares itself non-blocking, as an `EnqueueHandler`
//! does, so it is called on the informer's task rather than handed to the blocking pool.
//! `client_sys_*` and `context_switches_*` split the CPU of each update round: the kernel's
//! part, and how many times a thread of the process gave up the CPU (each wake-up of an idle
//! runtime thread is one).
//!
//! The informer's lists and watches ask for protobuf, as the library does by default
//! ([`Config::accept_protobuf`]; kube-apiserver answers ConfigMaps in it, apiserver-sim in
//! JSON); `CLIENTGO_BENCH_I1_FORMAT=json` asks for JSON alone. Reported as `watch_format`.
//! The in-process writers' patch answers come in the same format; their patches are JSON.
//!
//! The informer caches [`Compact<ConfigMap>`](clientgo_apimachinery::Compact), the form this
//! project recommends; its handler decodes `data` of every object it is handed, as a
//! controller reading the value would.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clientgo_apimachinery::{Compact, Object};
use clientgo_informer::{
    Indexers, ListWatch, ReflectorOptions, ResourceEventHandlerFuncs, SharedIndexInformer,
    SharedInformerOptions, wait_for_cache_sync,
};
use clientgo_rest::{Config, PatchParams, PatchType, PostParams, ResourceClient, RestClient};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use crate::process;

/// I1's ConfigMap count.
pub const I1_OBJECTS: usize = 10_000;
/// I1's concurrent writers.
pub const I1_WRITERS: usize = 8;
/// The namespace the ConfigMaps live in.
const I1_NAMESPACE: &str = "clientgo-bench-i1";
/// The kubeconfig of a real cluster to run against instead of apiserver-sim.
pub const KUBECONFIG_ENV: &str = "CLIENTGO_BENCH_KUBECONFIG";
/// Names the server I1 ran against in its report line.
pub const SERVER_ENV: &str = "CLIENTGO_BENCH_SERVER";
/// How long any phase may take before the run is declared failed.
const PHASE_LIMIT: Duration = Duration::from_secs(300);

/// The value of ConfigMap `i`'s `data.k` in round `round` (round 0: as created): about
/// 200 bytes, different in each round and in each run ([`run_token`]).
pub fn value(round: u32, i: usize) -> String {
    format!(
        "round-{round}-{}-object-{i:05}-{}",
        run_token(),
        "x".repeat(161)
    )
}

/// Names the run in its values, so that the ConfigMaps an earlier run left on a real server
/// need no reset before this run's rounds change them (each value differs from every earlier
/// one). The helper is given the informer's (`CLIENTGO_BENCH_I1_RUN`).
pub fn run_token() -> &'static str {
    static TOKEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TOKEN.get_or_init(|| {
        std::env::var(RUN_ENV).unwrap_or_else(|_| {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            format!("{:08x}", nanos ^ std::process::id().rotate_left(16))
        })
    })
}

/// Hands the informer's run token to its helper.
const RUN_ENV: &str = "CLIENTGO_BENCH_I1_RUN";

/// A multi-thread runtime of `workers` threads named `name`.
pub fn runtime(name: &str, workers: usize) -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(name)
        .enable_all()
        .build()
        .expect("a tokio runtime")
}

/// I1, run in this process against a helper process; the informer syncs through a streaming
/// list where the server offers one.
pub fn i1() -> Value {
    i1_with(true)
}

/// I1 with streaming lists off: the informer syncs with LIST, then WATCH (as against servers
/// before Kubernetes 1.32, and as the peers' figures were taken).
pub fn i1_list() -> Value {
    i1_with(false)
}

/// I1's sync alone, through a streaming list: for profiling the sync (under callgrind, say)
/// without the update rounds.
pub fn i1_sync() -> Value {
    SYNC_ONLY.set(true);
    i1_with(true)
}

/// I1list's sync alone (LIST, then WATCH).
pub fn i1_list_sync() -> Value {
    SYNC_ONLY.set(true);
    i1_with(false)
}

/// Chooses the informer's runtime; see the module documentation.
const RUNTIME_ENV: &str = "CLIENTGO_BENCH_I1_RUNTIME";

/// Chooses what the informer's lists and watches ask for: `protobuf` (the library's default,
/// JSON where the server has no protobuf) or `json`.
const FORMAT_ENV: &str = "CLIENTGO_BENCH_I1_FORMAT";

thread_local! {
    /// Whether the run ends once synced.
    static SYNC_ONLY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

fn i1_with(watch_list: bool) -> Value {
    let mut helper = Helper::spawn();
    // The helper answers the kubeconfig to use: the sim's, or the one it was given.
    let kubeconfig = helper.ask("setup");
    let config = Config::from_kubeconfig_file(&kubeconfig).expect("the benchmark kubeconfig loads");
    // One worker thread: an informer is I/O bound, and on this 2-core machine a second
    // worker costs more in cross-thread wake-ups than it gives (measured: about 40 % more
    // CPU for the sync, the same for the update stream).
    let flavor = std::env::var(RUNTIME_ENV).unwrap_or_else(|_| "one-worker".to_owned());
    let rt = match flavor.as_str() {
        "one-worker" => runtime("i1-informer", 1),
        "two-workers" => runtime("i1-informer", 2),
        "current-thread" => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime"),
        other => panic!("{RUNTIME_ENV}={other}: one-worker, two-workers or current-thread"),
    };
    let mut config = unthrottled(config);
    let format = std::env::var(FORMAT_ENV).unwrap_or_else(|_| "protobuf".to_owned());
    config.accept_protobuf = match format.as_str() {
        "protobuf" => true,
        "json" => false,
        other => panic!("{FORMAT_ENV}={other}: protobuf or json"),
    };
    let mut figures = rt.block_on(measure(config, helper, watch_list));
    figures["runtime"] = json!(flavor);
    figures["watch_format"] = json!(format);
    figures
}

/// `config` without the client-side throttle (a benchmark would measure the throttle).
pub fn unthrottled(mut config: Config) -> Config {
    config.qps = -1.0;
    config
}

async fn measure(config: Config, mut helper: Helper, watch_list: bool) -> Value {
    let client = RestClient::new(&config).expect("a REST client");
    let configmaps = ResourceClient::<Compact<ConfigMap>>::namespaced(&client, I1_NAMESPACE);
    let informer = SharedIndexInformer::new(
        ListWatch::new(configmaps),
        Indexers::namespace(),
        SharedInformerOptions {
            name: "i1-configmaps".into(),
            reflector: ReflectorOptions {
                use_watch_list: watch_list,
                ..ReflectorOptions::default()
            },
            ..SharedInformerOptions::default()
        },
    );
    let seen = Arc::new(Seen::new(I1_OBJECTS));
    let handler = {
        let (on_add, on_update) = (Arc::clone(&seen), Arc::clone(&seen));
        ResourceEventHandlerFuncs::new()
            .add_func(move |cm: &Arc<Compact<ConfigMap>>, _| on_add.observe(cm))
            .update_func(move |_, cm: &Arc<Compact<ConfigMap>>| on_update.observe(cm))
            .nonblocking()
    };
    informer
        .add_event_handler(handler)
        .expect("the handler registers");

    let cancel = CancellationToken::new();
    let usage_start = process::usage();
    let start = Instant::now();
    let task = {
        let (informer, cancel) = (informer.clone(), cancel.clone());
        tokio::spawn(async move { informer.run(cancel).await })
    };
    wait_for_cache_sync(&[&informer], PHASE_LIMIT)
        .await
        .expect("I1: the informer syncs");
    let synced = start.elapsed();
    let usage_synced = process::usage();
    let cpu_sync_s = (usage_synced - usage_start).cpu_s();
    assert_eq!(informer.indexer().len(), I1_OBJECTS, "I1: objects cached");
    if SYNC_ONLY.get() {
        cancel.cancel();
        let _ = task.await;
        return json!({
            "objects": I1_OBJECTS,
            "sync": if watch_list { "streaming list (or LIST + WATCH if not served)" } else { "LIST + WATCH" },
            "server": server_name(),
            "synced_s": synced.as_secs_f64(),
            "client_cpu_sync_s": cpu_sync_s,
            "peak_rss_kb": process::peak_rss_kib().unwrap_or(0),
        });
    }

    seen.expect_round(1);
    let start = Instant::now();
    // Waiting for the helper's answer blocks a thread: not the runtime's, which must keep
    // the informer going (on a current-thread runtime it is the only one).
    // Held to the end: without a cluster, the helper is the server of the second round too.
    let (answer, _helper) = tokio::task::spawn_blocking(move || (helper.ask("write"), helper))
        .await
        .expect("I1: the helper's writers are awaited");
    let writer_s: f64 = answer.parse().expect("the helper reports its time");
    tokio::time::timeout(PHASE_LIMIT, seen.all_seen())
        .await
        .expect("I1: every update seen");
    let updates = start.elapsed();
    let usage_updated = process::usage();
    // The process's high-water mark so far: the informer alone (the writers were the helper).
    let peak_rss = process::peak_rss_kib().unwrap_or(0);

    // Round 2: the same patches, sent from this process, as the peers' harnesses send them.
    seen.expect_round(2);
    let writer = RestClient::new(&config).expect("a REST client for the writers");
    let round_two = patches(I1_OBJECTS, 2);
    let start = Instant::now();
    let writes = tokio::spawn(async move { write_round(&writer, I1_NAMESPACE, round_two).await });
    tokio::time::timeout(PHASE_LIMIT, seen.all_seen())
        .await
        .expect("I1: every in-process update seen");
    writes.await.expect("I1: the in-process writers finish");
    let updates_in_process = start.elapsed();
    let usage_in_process = process::usage() - usage_updated;
    let usage_updated = usage_updated - usage_synced;
    cancel.cancel();
    let _ = task.await;

    json!({
        "objects": I1_OBJECTS,
        "sync": if watch_list { "streaming list (or LIST + WATCH if not served)" } else { "LIST + WATCH" },
        "server": server_name(),
        "synced_s": synced.as_secs_f64(),
        "events_per_s": I1_OBJECTS as f64 / updates.as_secs_f64(),
        "updates_s": updates.as_secs_f64(),
        "writer_s": writer_s,
        "client_cpu_sync_s": cpu_sync_s,
        "client_cpu_updates_s": usage_updated.cpu_s(),
        "updates_with_writers_s": updates_in_process.as_secs_f64(),
        "events_per_s_with_writers": I1_OBJECTS as f64 / updates_in_process.as_secs_f64(),
        "client_cpu_updates_with_writers_s": usage_in_process.cpu_s(),
        "client_sys_updates_s": usage_updated.system_s,
        "client_sys_updates_with_writers_s": usage_in_process.system_s,
        "context_switches_updates": usage_updated.context_switches,
        "context_switches_updates_with_writers": usage_in_process.context_switches,
        "peak_rss_kb": peak_rss,
        "peak_rss_with_writers_kb": process::peak_rss_kib().unwrap_or(0),
    })
}

/// What I1 ran against: `CLIENTGO_BENCH_SERVER` (set by `bench-report --envtest`), else a
/// cluster from a kubeconfig, else apiserver-sim.
fn server_name() -> String {
    match (std::env::var(SERVER_ENV), std::env::var_os(KUBECONFIG_ENV)) {
        (Ok(name), _) => name,
        (Err(_), Some(_)) => "kubeconfig".to_owned(),
        (Err(_), None) => "apiserver-sim".to_owned(),
    }
}

/// Which ConfigMaps a handler has seen with the value of the round awaited: feed it the
/// objects a handler is given ([`observe`](Seen::observe)) and wait for all of them
/// ([`all_seen`](Seen::all_seen)).
pub struct Seen {
    objects: usize,
    state: Mutex<SeenState>,
    done: Notify,
}

#[derive(Default)]
struct SeenState {
    prefix: Option<String>,
    names: std::collections::HashSet<String>,
}

impl Seen {
    /// Waits for `objects` ConfigMaps in each round.
    pub fn new(objects: usize) -> Seen {
        Seen {
            objects,
            state: Mutex::default(),
            done: Notify::new(),
        }
    }

    /// Starts awaiting round `round`'s values.
    pub fn expect_round(&self, round: u32) {
        let mut state = self.state.lock();
        state.prefix = Some(format!("round-{round}-{}-", run_token()));
        state.names.clear();
    }

    /// Records `cm` if its `data.k` has the awaited round's value.
    pub fn observe(&self, cm: &Compact<ConfigMap>) {
        if self.state.lock().prefix.is_none() {
            // Nothing awaited yet (the initial sync): the handler only counts.
            return;
        }
        let data: Option<BTreeMap<String, String>> = cm.field("data").unwrap_or_default();
        let Some(k) = data.as_ref().and_then(|d| d.get("k")) else {
            return;
        };
        let mut state = self.state.lock();
        if state.prefix.as_deref().is_some_and(|p| k.starts_with(p)) {
            state.names.insert(cm.name().to_owned());
            if state.names.len() == self.objects {
                self.done.notify_one();
            }
        }
    }

    /// Returns once every ConfigMap was seen with the awaited round's value.
    pub async fn all_seen(&self) {
        loop {
            let notified = self.done.notified();
            if self.state.lock().names.len() == self.objects {
                return;
            }
            notified.await;
        }
    }
}

/// The helper process, driven through its stdin and stdout.
struct Helper {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Helper {
    fn spawn() -> Helper {
        let exe = std::env::current_exe().expect("bench-report finds itself");
        let mut child = Command::new(exe)
            .arg("--i1-helper")
            .env(RUN_ENV, run_token())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the I1 helper starts");
        let stdin = child.stdin.take().expect("the helper's stdin");
        let stdout = BufReader::new(child.stdout.take().expect("the helper's stdout"));
        Helper {
            child,
            stdin,
            stdout,
        }
    }

    fn ask(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").expect("the helper takes a command");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .expect("the helper answers");
        assert!(!line.is_empty(), "I1: the helper exited during {command}");
        line.trim().to_owned()
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The helper's side (`bench-report --i1-helper`): serves apiserver-sim (or uses the
/// cluster of `CLIENTGO_BENCH_KUBECONFIG`), creates the ConfigMaps on `setup` and answers
/// the server's URL, patches every ConfigMap with 8 writers on `write` and answers the
/// seconds it took.
pub fn helper() {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    runtime("i1-helper", cores).block_on(async {
        let (kubeconfig, sim) = match std::env::var_os(KUBECONFIG_ENV) {
            Some(path) => (std::path::PathBuf::from(path), None),
            None => {
                // TLS and a bearer token, as every real cluster has them.
                let sim = clientgo_apiserver_sim::ApiServerSim::start(
                    clientgo_apiserver_sim::SimConfig::default()
                        .with_tls()
                        .with_token("clientgo-bench-i1"),
                )
                .await
                .expect("apiserver-sim starts");
                let path = std::env::temp_dir().join(format!(
                    "clientgo-bench-i1-{}.kubeconfig",
                    std::process::id()
                ));
                std::fs::write(&path, sim.kubeconfig()).expect("the sim's kubeconfig is written");
                (path, Some(sim))
            }
        };
        let config = unthrottled(
            Config::from_kubeconfig_file(&kubeconfig).expect("the benchmark kubeconfig loads"),
        );
        let client = RestClient::new(&config).expect("a REST client");
        let mut lines = tokio::io::BufReader::new(tokio::io::stdin());
        let mut line = String::new();
        loop {
            line.clear();
            let read = tokio::io::AsyncBufReadExt::read_line(&mut lines, &mut line).await;
            if !matches!(read, Ok(n) if n > 0) {
                break;
            }
            let answer = match line.trim() {
                "setup" => {
                    setup(&client, sim.as_ref()).await;
                    kubeconfig.display().to_string()
                }
                "write" => {
                    let patches = patches(I1_OBJECTS, 1);
                    let start = Instant::now();
                    write_round(&client, I1_NAMESPACE, patches).await;
                    start.elapsed().as_secs_f64().to_string()
                }
                other => panic!("I1 helper: unknown command {other:?}"),
            };
            println!("{answer}");
        }
        if sim.is_some() {
            let _ = std::fs::remove_file(&kubeconfig);
        }
    });
}

async fn setup(client: &RestClient, sim: Option<&clientgo_apiserver_sim::ApiServerSim>) {
    if let Some(sim) = sim {
        seed_sim(sim, I1_NAMESPACE, I1_OBJECTS);
        return;
    }
    let namespaces = ResourceClient::<Namespace>::all(client);
    let namespace =
        serde_json::from_value(json!({"metadata": {"name": I1_NAMESPACE}})).expect("a namespace");
    if let Err(err) = namespaces.create(&namespace, &PostParams::default()).await {
        assert!(
            err.is_already_exists(),
            "I1: cannot create the namespace: {err}"
        );
    }
    let configmaps = ResourceClient::<ConfigMap>::namespaced(client, I1_NAMESPACE);
    // An earlier run's ConfigMaps serve as they are: this run's values differ from theirs.
    // The last one is created last: if it is there, so are the others.
    let last = name(I1_OBJECTS - 1);
    match configmaps.get(&last, &Default::default()).await {
        Ok(_) => return,
        Err(err) if err.is_not_found() => {}
        Err(err) => panic!("I1: cannot read a ConfigMap: {err}"),
    }
    for_each_concurrently(I1_OBJECTS - 1, {
        let configmaps = configmaps.clone();
        move |i| {
            let configmaps = configmaps.clone();
            async move { create_configmap(&configmaps, i).await }
        }
    })
    .await;
    create_configmap(&configmaps, I1_OBJECTS - 1).await;
}

/// Creates ConfigMap `i`, unless it exists.
async fn create_configmap(configmaps: &ResourceClient<ConfigMap>, i: usize) {
    let cm: ConfigMap = serde_json::from_value(configmap(I1_NAMESPACE, i)).expect("a ConfigMap");
    match configmaps.create(&cm, &PostParams::default()).await {
        Ok(_) => {}
        Err(err) if err.is_already_exists() => {}
        Err(err) => panic!("I1: cannot create a ConfigMap: {err}"),
    }
}

/// Stores `objects` ConfigMaps (and their namespace) directly in `sim`.
pub fn seed_sim(sim: &clientgo_apiserver_sim::ApiServerSim, namespace: &str, objects: usize) {
    // The namespace may exist already.
    let _ = sim.create(
        "",
        "v1",
        "namespaces",
        "",
        json!({"metadata": {"name": namespace}}),
    );
    for i in 0..objects {
        sim.create("", "v1", "configmaps", namespace, configmap(namespace, i))
            .expect("the sim stores a ConfigMap");
    }
}

/// The name of ConfigMap `i`.
pub fn name(i: usize) -> String {
    format!("cm-{i:05}")
}

/// ConfigMap `i` of `namespace` as created (round 0).
pub fn configmap(namespace: &str, i: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name(i), "namespace": namespace, "labels": {"bench": "i1"}},
        "data": {"k": value(0, i)},
    })
}

/// The merge patches of one write round: each ConfigMap's name and the body setting its
/// `data.k` to the round's value, made before a timer starts (input data is prepared before
/// timing, as the plan asks and the peers' harnesses do).
pub struct Patches {
    names: Vec<String>,
    /// Serialized: 10,000 `Value` trees would add about 15 MB to the process's peak RSS.
    bodies: Vec<Box<serde_json::value::RawValue>>,
}

/// The patches of round `round` for ConfigMaps `0..objects`.
pub fn patches(objects: usize, round: u32) -> Arc<Patches> {
    Arc::new(Patches {
        names: (0..objects).map(name).collect(),
        bodies: (0..objects)
            .map(|i| {
                serde_json::value::to_raw_value(&json!({"data": {"k": value(round, i)}}))
                    .expect("a patch serializes")
            })
            .collect(),
    })
}

/// Sends `patches` to the ConfigMaps of `namespace` (JSON merge patches, typed `ConfigMap`
/// answers), with I1's 8 concurrent writers.
pub async fn write_round(client: &RestClient, namespace: &str, patches: Arc<Patches>) {
    let configmaps = ResourceClient::<ConfigMap>::namespaced(client, namespace);
    let objects = patches.names.len();
    for_each_concurrently(objects, move |i| {
        let (configmaps, patches) = (configmaps.clone(), Arc::clone(&patches));
        async move {
            configmaps
                .patch(
                    &patches.names[i],
                    PatchType::Merge,
                    &*patches.bodies[i],
                    &PatchParams::default(),
                )
                .await
                .expect("I1: a patch is accepted");
        }
    })
    .await;
}

/// Runs `work(i)` for every `i < n`, `I1_WRITERS` tasks at a time.
async fn for_each_concurrently<F, Fut>(n: usize, work: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let work = Arc::new(work);
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..I1_WRITERS {
        let (next, work) = (Arc::clone(&next), Arc::clone(&work));
        writers.spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    break;
                }
                work(i).await;
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        done.expect("I1: a writer panicked");
    }
}
