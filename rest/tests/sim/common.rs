//! Starting a sim and a client for it, and bounded waits.

use std::future::Future;
use std::time::Duration;

use clientgo_apimachinery::ApiResource;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_rest::{Config, DynamicClient, RestClient};
use tempfile::TempDir;

/// A running sim and a client configured for it.
pub struct Sim {
    pub sim: ApiServerSim,
    pub config: Config,
    pub client: RestClient,
    _dir: Option<TempDir>,
}

/// A sim with TLS and a token, the client loaded from the kubeconfig it writes (CA and token
/// inlined), throttling off so that suites run quickly.
pub async fn secure() -> Sim {
    secure_with(SimConfig::default()).await
}

/// [`secure`] with a sim configuration.
pub async fn secure_with(config: SimConfig) -> Sim {
    let sim = ApiServerSim::start(config.with_tls().with_token("s3cr3t-token"))
        .await
        .expect("the sim starts");
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("kubeconfig");
    std::fs::write(&path, sim.kubeconfig()).expect("the kubeconfig is written");
    let mut config = Config::from_kubeconfig_file(&path).expect("the sim's kubeconfig loads");
    assert!(config.is_tls());
    config.qps = -1.0;
    let client = RestClient::new(&config).expect("a client");
    Sim {
        sim,
        config,
        client,
        _dir: Some(dir),
    }
}

/// A plain-HTTP sim without authentication, and a client with `configure` applied.
pub async fn plain_with(sim_config: SimConfig, configure: impl FnOnce(&mut Config)) -> Sim {
    let sim = ApiServerSim::start(sim_config)
        .await
        .expect("the sim starts");
    let mut config = Config::new(sim.url().parse().expect("the sim's URL"));
    config.qps = -1.0;
    configure(&mut config);
    let client = RestClient::new(&config).expect("a client");
    Sim {
        sim,
        config,
        client,
        _dir: None,
    }
}

/// Polls `condition` every 10 ms until it holds; panics after `limit` with `what`.
pub async fn eventually<F, Fut>(limit: Duration, what: &str, mut condition: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if condition().await {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Bounds a future: panics with `what` after `limit`.
pub async fn within<T>(limit: Duration, what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(limit, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {limit:?}: {what}"))
}

/// Creates namespace `name` in the sim (directly, as a seed).
pub fn namespace(sim: &ApiServerSim, name: &str) {
    sim.create(
        "",
        "v1",
        "namespaces",
        "",
        serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
    )
    .expect("the namespace is created");
}

/// The namespaced resource `plural` (kind `kind`) of `group`, version `v1`.
pub fn namespaced_v1(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

/// The core ConfigMap resource.
pub fn config_map_resource() -> ApiResource {
    namespaced_v1("", "ConfigMap", "configmaps")
}

/// A dynamic client of ConfigMaps in `namespace`.
pub fn config_maps(client: &RestClient, namespace: &str) -> DynamicClient {
    DynamicClient::from_api_resource(client, &config_map_resource(), Some(namespace))
}
