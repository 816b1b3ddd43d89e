//! What the integration tests share: an apiserver-sim with the Foo CRD installed, a
//! controller running against it under its own user agent (so the sim's request log tells
//! its requests from the test's), and a bounded wait on paused time.

#![allow(dead_code)] // each test file uses its own part of it

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apiserver_sim::requests::RecordedRequest;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_rest::config::Config;
use clientgo_rest::{PostParams, ResourceClient, RestClient};
use clientgo_sample_controller::app::{self, Options, RunError};
use clientgo_sample_controller::controller::Controller;
use clientgo_sample_controller::foo::Foo;
use clientgo_sample_controller::records;
use k8s_openapi::api::apps::v1::{Deployment, DeploymentStatus};
use prometheus_client::registry::Registry;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// The user agent of the controller under test (the test's own client keeps the default).
pub const CONTROLLER_AGENT: &str = "sample-controller-under-test";

/// A sim with the CRD installed, and a client for the test itself.
pub struct Cluster {
    pub sim: ApiServerSim,
    pub client: RestClient,
    pub foos: ResourceClient<Foo>,
    pub deployments: ResourceClient<Deployment>,
}

/// A controller started by [`Cluster::launch`].
pub struct Running {
    pub controller: Arc<Controller>,
    pub cancel: CancellationToken,
    pub run: JoinHandle<Result<Arc<Controller>, RunError>>,
    ready: Box<dyn Fn() -> bool + Send + Sync>,
}

/// The options every test starts from: the `default` namespace, a 10 s resync.
pub fn options() -> Options {
    Options {
        namespace: Some("default".into()),
        resync: Duration::from_secs(10),
        ..Options::default()
    }
}

impl Cluster {
    pub async fn start() -> Cluster {
        let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
        let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
        clientgo_sample_controller::foo::install_crd(&client)
            .await
            .unwrap();
        Cluster {
            foos: ResourceClient::namespaced(&client, "default"),
            deployments: ResourceClient::namespaced(&client, "default"),
            sim,
            client,
        }
    }

    /// A configuration for the sim that identifies its clients as `user_agent`.
    pub fn config_as(&self, user_agent: &str) -> Config {
        let mut config = Config::new(self.sim.url().parse().unwrap());
        config.user_agent = user_agent.to_owned();
        config
    }

    /// A client that identifies itself as `user_agent`.
    pub fn client_as(&self, user_agent: &str) -> RestClient {
        RestClient::new(&self.config_as(user_agent)).unwrap()
    }

    /// Builds a controller with `options`, sending as `user_agent` (and its metrics to
    /// `registry`), and runs it.
    pub fn launch(
        &self,
        user_agent: &str,
        options: Options,
        registry: Option<&mut Registry>,
    ) -> Running {
        let built = app::build(self.client_as(user_agent), options, registry).unwrap();
        let controller = built.controller();
        let ready = Box::new(built.ready());
        let cancel = CancellationToken::new();
        let run = tokio::spawn(built.run(cancel.clone()));
        Running {
            controller,
            cancel,
            run,
            ready,
        }
    }

    /// Creates a Foo directly in the sim's store: no HTTP request, so no added latency and no
    /// client-side throttle.
    pub fn seed_foo(&self, name: &str) {
        let foo = serde_json::to_value(Foo::new("default", name, name, 1)).unwrap();
        self.sim
            .create(
                "samplecontroller.k8s.io",
                "v1alpha1",
                "foos",
                "default",
                foo,
            )
            .unwrap();
    }

    pub async fn create_foo(&self, name: &str, deployment: &str, replicas: i32) -> Foo {
        self.foos
            .create(
                &Foo::new("default", name, deployment, replicas),
                &PostParams::default(),
            )
            .await
            .unwrap()
    }

    /// What kube-controller-manager would do: mark the Deployment's replicas available.
    pub async fn make_available(&self, name: &str) {
        let mut deployment = self
            .deployments
            .get(name, &Default::default())
            .await
            .unwrap();
        let wanted = deployment.spec.replicas.unwrap_or(1);
        deployment.status = Some(DeploymentStatus {
            available_replicas: Some(wanted),
            replicas: Some(wanted),
            ..DeploymentStatus::default()
        });
        self.deployments
            .update_status(name, &deployment, &PostParams::default())
            .await
            .unwrap();
    }

    /// The Foo's entry in the records ConfigMap.
    pub async fn record(&self, foo: &str) -> Option<String> {
        records::entry(&self.client, "default", foo).await.unwrap()
    }

    /// The Foo, or `None` once it is gone.
    pub async fn foo(&self, name: &str) -> Option<Foo> {
        match self.foos.get(name, &Default::default()).await {
            Ok(foo) => Some(foo),
            Err(e) if e.is_not_found() => None,
            Err(e) => panic!("reading foo {name}: {e}"),
        }
    }

    /// Waits until Foo `name` reports Ready with the given status, for its current generation.
    pub async fn wait_ready(&self, name: &str, ready: &str) -> Foo {
        eventually(&format!("Foo {name} Ready={ready}"), || async {
            let foo = self.foo(name).await?;
            (foo.condition("Ready")?.status == ready
                && foo.status.observed_generation == foo.metadata.generation)
                .then_some(foo)
        })
        .await
    }

    /// The write requests the controller sent (as `user_agent`) since `mark`.
    pub fn writes_since(&self, user_agent: &str, mark: u64) -> Vec<RecordedRequest> {
        self.sim
            .requests()
            .since(mark)
            .into_iter()
            .filter(|r| r.is_write() && r.user_agent == user_agent)
            .collect()
    }
}

impl Running {
    /// Whether the controller's caches have synced.
    pub fn ready(&self) -> bool {
        (self.ready)()
    }

    /// Cancels and waits (bounded) for the controller to return.
    pub async fn stop(self) -> Arc<Controller> {
        self.cancel.cancel();
        tokio::time::timeout(Duration::from_secs(120), self.run)
            .await
            .expect("the controller stops")
            .unwrap()
            .unwrap()
    }
}

/// Checks `condition` every 100 ms of (paused) time, for at most 120 s.
pub async fn eventually<T, F, Fut>(what: &str, condition: F) -> T
where
    F: Fn() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    for _ in 0..1200 {
        if let Some(value) = condition().await {
            return value;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("timed out waiting for {what}");
}

/// The value of `sample` (a metric name with its labels) in `registry`'s text exposition.
pub fn metric(registry: &Registry, sample: &str) -> Option<f64> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
    self::sample(&text, sample)
}

/// A plain HTTP/1.1 GET of `path` from the server at `addr`: the status code and the body;
/// `None` if the connection or the answer failed.
pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> Option<(u16, String)> {
    http_get_with_head(addr, path)
        .await
        .map(|(status, _, body)| (status, body))
}

/// [`http_get`] with the response's head (status line and headers, lowercased) beside them.
pub async fn http_get_with_head(
    addr: std::net::SocketAddr,
    path: &str,
) -> Option<(u16, String, String)> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr).await.ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).await.ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    Some((status, head.to_ascii_lowercase(), body.to_owned()))
}

/// The value of `sample` (a metric name with its labels) in a text exposition.
pub fn sample(text: &str, sample: &str) -> Option<f64> {
    text.lines()
        .find_map(|line| line.strip_prefix(sample)?.strip_prefix(' '))
        .and_then(|value| value.trim().parse().ok())
}

/// A port on 127.0.0.1 that is free now, for a binary's endpoints.
pub fn free_addr() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

/// The sum of the sample `name` over the `/metrics` of the endpoints at `addrs`; `None` while
/// one of them does not answer 200.
pub async fn metrics_total(
    addrs: impl IntoIterator<Item = std::net::SocketAddr>,
    name: &str,
) -> Option<f64> {
    let mut sum = 0.0;
    for addr in addrs {
        let (status, text) = http_get(addr, "/metrics").await?;
        if status != 200 {
            return None;
        }
        sum += sample(&text, name).unwrap_or(0.0);
    }
    Some(sum)
}

/// Foo name → its shard, once all `count` Foos are converged on shards `is_member` accepts:
/// each carries such a shard label, its Deployment exists with the same label and the Foo's
/// replicas, and its status describes its current generation.
pub async fn converged_on_shards(
    foos: &ResourceClient<Foo>,
    deployments: &ResourceClient<Deployment>,
    count: usize,
    is_member: impl Fn(&str) -> bool,
) -> std::collections::BTreeMap<String, String> {
    use clientgo_apimachinery::Object;
    use std::collections::BTreeMap;
    let label = clientgo_sharding::shard_label("sample-controller");
    eventually("every Foo converged on a live shard", || async {
        let foos = foos.list(&Default::default()).await.ok()?;
        let deployments = deployments.list(&Default::default()).await.ok()?;
        let deployments: BTreeMap<&str, &Deployment> =
            deployments.items.iter().map(|d| (d.name(), d)).collect();
        let mut placed = BTreeMap::new();
        for foo in &foos.items {
            let shard = foo.labels().get(&label)?;
            let deployment = deployments.get(foo.spec.deployment_name.as_str())?;
            let status_current = foo.condition("Ready").is_some()
                && foo.status.observed_generation == foo.metadata.generation;
            if !is_member(shard)
                || deployment.labels().get(&label) != Some(shard)
                || deployment.spec.replicas != Some(foo.spec.replicas.unwrap_or(1))
                || !status_current
            {
                return None;
            }
            placed.insert(foo.name().to_owned(), shard.to_owned());
        }
        (placed.len() == count).then_some(placed)
    })
    .await
}
