//! W2, the write path: 10,000 objects of each kind written through a [`RestClient`] by 8
//! concurrent writers, without the client-side throttle, phase after phase:
//!
//! - ConfigMaps (k8s-openapi's `ConfigMap`, `data.k` about 200 bytes): create; update (a PUT
//!   carrying the `resourceVersion` the create returned); JSON merge patch of `data.k`; delete;
//! - the sample-controller's Foos (a custom resource with a status subresource; its CRD is
//!   created first if missing, and the run waits until it is `Established` and served):
//!   create; update (PUT with the create's `resourceVersion`); merge patch of `spec.replicas`;
//!   status update (PUT to `/status` with the patch's `resourceVersion`); delete.
//!
//! Every request's response is decoded into the typed object, as a caller of the typed client
//! gets it; the update and status bodies are typed objects built as a user writes them (name,
//! namespace, `resourceVersion`, the fields the writer sets). Each writer pulls the next index
//! until all 10,000 are written, so 8 requests are in flight at any time. The objects live in
//! a namespace of their own, created for the run and deleted at its end (not waited for).
//!
//! Reported per phase: `<phase>_requests_per_s` (10,000 over the phase's wall time) and
//! `<phase>_cpu_us_per_request` (`getrusage` of this process over the phase, user and system,
//! per request); over all phases `requests_per_s`, `cpu_us_per_request`; the process's peak
//! RSS (`peak_rss_kb`); and `server`, what the client wrote to.
//!
//! The server never runs in this process, so the CPU and memory are the client's alone: with
//! `CLIENTGO_BENCH_KUBECONFIG` set (`bench-report --envtest` sets it to a kube-apiserver it
//! starts) the client writes to that cluster; otherwise a helper process
//! (`bench-report --sim-helper`) serves apiserver-sim over TLS with a bearer token, as a real
//! cluster is reached, and lives until its stdin closes. The client runs on a multi-thread
//! tokio runtime with one worker thread per core.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use clientgo_apimachinery::{DynamicObject, Resource};
use clientgo_rest::{
    Config, DeleteParams, DiscoveryClient, GetParams, ListParams, PatchParams, PatchType,
    PostParams, ResourceClient, RestClient,
};
use clientgo_sample_controller::foo::{self, Condition, Foo, FooStatus};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use parking_lot::Mutex;
use serde_json::{Map, Value, json};

use crate::informer::{KUBECONFIG_ENV, SERVER_ENV, runtime, unthrottled, value};
use crate::process;

/// W2's object count, per kind.
pub const W2_OBJECTS: usize = 10_000;
/// W2's concurrent writers.
pub const W2_WRITERS: usize = 8;
/// How long the CRD may take to be established and served.
const CRD_LIMIT: Duration = Duration::from_secs(60);
/// The Foo CRD's name.
const FOO_CRD: &str = "foos.samplecontroller.k8s.io";
/// The server's name in the report when it is the sim.
const SIM_SERVER: &str = "apiserver-sim (helper process)";

/// W2, run in this process against a helper process's apiserver-sim or the cluster of
/// `CLIENTGO_BENCH_KUBECONFIG`.
pub fn w2() -> Value {
    let helper = match std::env::var_os(KUBECONFIG_ENV) {
        Some(_) => None,
        None => Some(SimHelper::spawn()),
    };
    let kubeconfig = match (&helper, std::env::var_os(KUBECONFIG_ENV)) {
        (Some(helper), _) => helper.kubeconfig.clone(),
        (None, Some(path)) => std::path::PathBuf::from(path),
        (None, None) => unreachable!("a helper when there is no kubeconfig"),
    };
    let config = unthrottled(
        Config::from_kubeconfig_file(&kubeconfig).expect("the benchmark kubeconfig loads"),
    );
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let figures = runtime("w2-client", cores).block_on(measure(config, helper.is_some()));
    drop(helper);
    figures
}

/// One phase's figures.
struct Phase {
    name: &'static str,
    requests: usize,
    wall_s: f64,
    cpu_s: f64,
}

/// Runs `work(i)` for every object with W2's writers, timing the wall clock and this
/// process's CPU.
async fn phase<F, Fut>(name: &'static str, work: F) -> Phase
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let cpu = process::cpu_seconds();
    let start = Instant::now();
    for_each_concurrently(W2_OBJECTS, work).await;
    Phase {
        name,
        requests: W2_OBJECTS,
        wall_s: start.elapsed().as_secs_f64(),
        cpu_s: process::cpu_seconds() - cpu,
    }
}

/// Runs `work(i)` for every `i < n`, `W2_WRITERS` tasks each pulling the next index.
async fn for_each_concurrently<F, Fut>(n: usize, work: F)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let next = Arc::new(AtomicUsize::new(0));
    let work = Arc::new(work);
    let mut writers = tokio::task::JoinSet::new();
    for _ in 0..W2_WRITERS {
        let (next, work) = (Arc::clone(&next), Arc::clone(&work));
        writers.spawn(async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    break;
                }
                work(i).await;
            }
        });
    }
    while let Some(done) = writers.join_next().await {
        if let Err(err) = done {
            // A writer's panic says which request failed: pass it on as it was.
            std::panic::resume_unwind(err.into_panic());
        }
    }
}

/// The `resourceVersion` (and `generation`) each object's last write returned, for the next
/// phase's PUT.
type Versions = Arc<Vec<Mutex<(String, i64)>>>;

fn versions() -> Versions {
    Arc::new((0..W2_OBJECTS).map(|_| Mutex::default()).collect())
}

async fn measure(config: Config, sim: bool) -> Value {
    let client = RestClient::new(&config).expect("a REST client");
    let server = if sim {
        SIM_SERVER.to_owned()
    } else {
        server_name(&client).await
    };
    let namespace: Arc<str> = Arc::from(format!(
        "clientgo-bench-w2-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() % 1_000_000)
    ));
    let namespaces = ResourceClient::<Namespace>::all(&client);
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some(namespace.to_string()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    namespaces
        .create(&ns, &PostParams::default())
        .await
        .expect("W2: the namespace is created");
    install_foo_crd(&client, &namespace).await;

    let mut phases = Vec::new();
    phases.extend(configmap_phases(&client, &namespace).await);
    phases.extend(foo_phases(&client, &namespace).await);
    let peak_rss = process::peak_rss_kib().unwrap_or(0);
    // Not waited for: a real server without a namespace controller (envtest) never finishes.
    let _ = namespaces
        .delete(&namespace, &DeleteParams::default())
        .await;

    let mut figures = Map::new();
    figures.insert("objects".into(), json!(W2_OBJECTS));
    figures.insert("writers".into(), json!(W2_WRITERS));
    figures.insert("server".into(), json!(server));
    let (mut requests, mut wall_s, mut cpu_s) = (0, 0.0, 0.0);
    for phase in &phases {
        figures.insert(
            format!("{}_requests_per_s", phase.name),
            json!(phase.requests as f64 / phase.wall_s),
        );
        figures.insert(
            format!("{}_cpu_us_per_request", phase.name),
            json!(phase.cpu_s * 1e6 / phase.requests as f64),
        );
        requests += phase.requests;
        wall_s += phase.wall_s;
        cpu_s += phase.cpu_s;
    }
    figures.insert("requests".into(), json!(requests));
    figures.insert("requests_per_s".into(), json!(requests as f64 / wall_s));
    figures.insert(
        "cpu_us_per_request".into(),
        json!(cpu_s * 1e6 / requests as f64),
    );
    figures.insert("peak_rss_kb".into(), json!(peak_rss));
    Value::Object(figures)
}

/// The name of object `i` (ConfigMap or Foo).
fn name(i: usize) -> String {
    format!("w2-{i:05}")
}

/// ConfigMap `i` as a user writes it, with `data.k` at round `round`'s value.
fn configmap(namespace: &str, i: usize, round: u32, resource_version: Option<String>) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name(i)),
            namespace: Some(namespace.to_owned()),
            labels: Some(BTreeMap::from([("bench".to_owned(), "w2".to_owned())])),
            resource_version,
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("k".to_owned(), value(round, i))])),
        ..ConfigMap::default()
    }
}

async fn configmap_phases(client: &RestClient, namespace: &Arc<str>) -> Vec<Phase> {
    let configmaps = ResourceClient::<ConfigMap>::namespaced(client, namespace);
    let versions = versions();
    let mut phases = Vec::new();

    phases.push(
        phase("configmap_create", {
            let (configmaps, versions, namespace) =
                (configmaps.clone(), versions.clone(), namespace.clone());
            move |i| {
                let (configmaps, versions, namespace) =
                    (configmaps.clone(), versions.clone(), namespace.clone());
                async move {
                    let created = configmaps
                        .create(&configmap(&namespace, i, 0, None), &PostParams::default())
                        .await
                        .expect("W2: a ConfigMap is created");
                    versions[i].lock().0 = created.metadata.resource_version.unwrap_or_default();
                }
            }
        })
        .await,
    );

    phases.push(
        phase("configmap_update", {
            let (configmaps, versions, namespace) =
                (configmaps.clone(), versions.clone(), namespace.clone());
            move |i| {
                let (configmaps, versions, namespace) =
                    (configmaps.clone(), versions.clone(), namespace.clone());
                async move {
                    let resource_version = std::mem::take(&mut versions[i].lock().0);
                    let object = configmap(&namespace, i, 1, Some(resource_version));
                    configmaps
                        .update(&name(i), &object, &PostParams::default())
                        .await
                        .expect("W2: a ConfigMap is updated");
                }
            }
        })
        .await,
    );

    phases.push(
        phase("configmap_patch", {
            let configmaps = configmaps.clone();
            move |i| {
                let configmaps = configmaps.clone();
                async move {
                    let patch = json!({"data": {"k": value(2, i)}});
                    configmaps
                        .patch(&name(i), PatchType::Merge, &patch, &PatchParams::default())
                        .await
                        .expect("W2: a ConfigMap is patched");
                }
            }
        })
        .await,
    );

    phases.push(
        phase("configmap_delete", {
            let configmaps = configmaps.clone();
            move |i| {
                let configmaps = configmaps.clone();
                async move {
                    configmaps
                        .delete(&name(i), &DeleteParams::default())
                        .await
                        .expect("W2: a ConfigMap is deleted");
                }
            }
        })
        .await,
    );
    phases
}

/// Foo `i` as a user writes it, asking for `replicas` replicas.
fn foo(namespace: &str, i: usize, replicas: i32, resource_version: String) -> Foo {
    let mut object = Foo::new(namespace, &name(i), &format!("deployment-{i:05}"), replicas);
    object.metadata.resource_version = resource_version;
    object
}

async fn foo_phases(client: &RestClient, namespace: &Arc<str>) -> Vec<Phase> {
    let foos = ResourceClient::<Foo>::namespaced(client, namespace);
    let versions = versions();
    let mut phases = Vec::new();

    phases.push(
        phase("foo_create", {
            let (foos, versions, namespace) = (foos.clone(), versions.clone(), namespace.clone());
            move |i| {
                let (foos, versions, namespace) =
                    (foos.clone(), versions.clone(), namespace.clone());
                async move {
                    let created = foos
                        .create(
                            &foo(&namespace, i, 1, String::new()),
                            &PostParams::default(),
                        )
                        .await
                        .expect("W2: a Foo is created");
                    versions[i].lock().0 = created.metadata.resource_version;
                }
            }
        })
        .await,
    );

    phases.push(
        phase("foo_update", {
            let (foos, versions, namespace) = (foos.clone(), versions.clone(), namespace.clone());
            move |i| {
                let (foos, versions, namespace) =
                    (foos.clone(), versions.clone(), namespace.clone());
                async move {
                    let resource_version = std::mem::take(&mut versions[i].lock().0);
                    foos.update(
                        &name(i),
                        &foo(&namespace, i, 2, resource_version),
                        &PostParams::default(),
                    )
                    .await
                    .expect("W2: a Foo is updated");
                }
            }
        })
        .await,
    );

    phases.push(
        phase("foo_patch", {
            let (foos, versions) = (foos.clone(), versions.clone());
            move |i| {
                let (foos, versions) = (foos.clone(), versions.clone());
                async move {
                    let patch = json!({"spec": {"replicas": 3}});
                    let patched = foos
                        .patch(&name(i), PatchType::Merge, &patch, &PatchParams::default())
                        .await
                        .expect("W2: a Foo is patched");
                    *versions[i].lock() = (
                        patched.metadata.resource_version,
                        patched.metadata.generation,
                    );
                }
            }
        })
        .await,
    );

    phases.push(
        phase("foo_status", {
            let (foos, versions, namespace) = (foos.clone(), versions.clone(), namespace.clone());
            move |i| {
                let (foos, versions, namespace) =
                    (foos.clone(), versions.clone(), namespace.clone());
                async move {
                    let (resource_version, generation) = std::mem::take(&mut *versions[i].lock());
                    let mut object = foo(&namespace, i, 3, resource_version);
                    object.status = FooStatus {
                        available_replicas: 3,
                        observed_generation: generation,
                        conditions: vec![Condition {
                            type_: "Ready".to_owned(),
                            status: "True".to_owned(),
                            reason: "DeploymentAvailable".to_owned(),
                            observed_generation: generation,
                            ..Condition::default()
                        }],
                    };
                    foos.update_status(&name(i), &object, &PostParams::default())
                        .await
                        .expect("W2: a Foo's status is updated");
                }
            }
        })
        .await,
    );

    phases.push(
        phase("foo_delete", {
            let foos = foos.clone();
            move |i| {
                let foos = foos.clone();
                async move {
                    foos.delete(&name(i), &DeleteParams::default())
                        .await
                        .expect("W2: a Foo is deleted");
                }
            }
        })
        .await,
    );
    phases
}

/// Creates the Foo CRD unless it exists, and waits until it is `Established` and Foos of
/// `namespace` can be listed.
async fn install_foo_crd(client: &RestClient, namespace: &str) {
    let crds = foo::crd_client(client);
    let crd: DynamicObject = serde_json::from_value(foo::crd()).expect("the Foo CRD");
    match crds.create(&crd, &PostParams::default()).await {
        Ok(_) => {}
        Err(err) if err.is_already_exists() => {}
        Err(err) => panic!("W2: cannot create the Foo CRD: {err}"),
    }
    let deadline = Instant::now() + CRD_LIMIT;
    loop {
        let crd = crds
            .get(FOO_CRD, &GetParams::default())
            .await
            .expect("W2: the Foo CRD reads back");
        let established = crd
            .data
            .get("status")
            .and_then(|s| s.get("conditions"))
            .and_then(Value::as_array)
            .is_some_and(|conditions| {
                conditions
                    .iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            });
        if established {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "W2: the Foo CRD is not established"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Established, the server may still take a moment to serve the resource.
    let foos = ResourceClient::<Foo>::namespaced(client, namespace);
    loop {
        match foos.list(&ListParams::default()).await {
            Ok(_) => break,
            Err(err) if err.is_not_found() && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => panic!("W2: Foos ({}) are not served: {err}", Foo::PLURAL),
        }
    }
}

/// The real server's name: its version, as `/version` reports it.
async fn server_name(client: &RestClient) -> String {
    let version = DiscoveryClient::new(client)
        .server_version()
        .await
        .expect("W2: the server answers /version")
        .git_version;
    let envtest = std::env::var(SERVER_ENV).is_ok_and(|s| s.contains("envtest"));
    format!(
        "kube-apiserver {version}{}",
        if envtest { " (envtest)" } else { "" }
    )
}

/// The helper process serving apiserver-sim (`bench-report --sim-helper`); it exits when
/// this side closes its stdin (on drop).
struct SimHelper {
    child: Child,
    stdin: Option<ChildStdin>,
    kubeconfig: std::path::PathBuf,
}

impl SimHelper {
    fn spawn() -> SimHelper {
        let exe = std::env::current_exe().expect("bench-report finds itself");
        let mut child = Command::new(exe)
            .arg("--sim-helper")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("the sim helper starts");
        let stdin = child.stdin.take();
        let mut stdout = BufReader::new(child.stdout.take().expect("the helper's stdout"));
        let mut line = String::new();
        stdout.read_line(&mut line).expect("the sim helper answers");
        assert!(
            !line.trim().is_empty(),
            "the sim helper exited before it served"
        );
        SimHelper {
            child,
            stdin,
            kubeconfig: line.trim().into(),
        }
    }
}

impl Drop for SimHelper {
    fn drop(&mut self) {
        // Closing its stdin tells the helper to remove its kubeconfig and exit.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// The helper's side (`bench-report --sim-helper`): serves apiserver-sim over TLS with a
/// bearer token, prints the path of its kubeconfig, and serves until its stdin closes.
pub fn sim_helper() {
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    runtime("sim-helper", cores).block_on(async {
        let sim = clientgo_apiserver_sim::ApiServerSim::start(
            clientgo_apiserver_sim::SimConfig::default()
                .with_tls()
                .with_token("clientgo-bench-sim"),
        )
        .await
        .expect("apiserver-sim starts");
        let path = std::env::temp_dir().join(format!(
            "clientgo-bench-sim-{}.kubeconfig",
            std::process::id()
        ));
        std::fs::write(&path, sim.kubeconfig()).expect("the sim's kubeconfig is written");
        println!("{}", path.display());
        let _ = tokio::task::spawn_blocking(|| {
            std::io::copy(&mut std::io::stdin().lock(), &mut std::io::sink())
        })
        .await;
        let _ = std::fs::remove_file(&path);
        sim.shutdown();
    });
}
