//! A sim with TLS and a token, a client for it, and config map helpers.

use std::future::Future;
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_rest::{Auth, Config, DynamicClient, PostParams, RestClient};
use serde_json::json;

/// How long any single wait may take.
pub const LIMIT: Duration = Duration::from_secs(10);

pub struct Sim {
    pub sim: ApiServerSim,
    pub config: Config,
    pub client: RestClient,
}

/// A sim serving TLS and requiring a token, and a client trusting its CA with that token.
pub async fn start(config: SimConfig) -> Sim {
    let sim = ApiServerSim::start(config.with_tls().with_token("watch-token"))
        .await
        .expect("the sim starts");
    let mut config = Config::new(sim.url().parse().expect("the sim's URL"));
    config.tls.ca_pem = Some(sim.ca_pem().expect("a CA").as_bytes().to_vec());
    config.auth = Auth::Bearer(sim.token().expect("a token").into());
    config.qps = -1.0;
    let client = RestClient::new(&config).expect("a client");
    Sim {
        sim,
        config,
        client,
    }
}

/// ConfigMaps in `namespace`, as dynamic objects.
pub fn config_maps(client: &RestClient, namespace: &str) -> DynamicClient {
    let resource = ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    DynamicClient::from_api_resource(client, &resource, Some(namespace))
}

/// Creates ConfigMap `name` with label `app=<app>`; returns its resourceVersion.
pub async fn create(api: &DynamicClient, name: &str, app: &str) -> String {
    let cm: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"app": app}}, "data": {"k": "v"}
    }))
    .expect("a ConfigMap");
    let created = api
        .create(&cm, &PostParams::default())
        .await
        .expect("the ConfigMap is created");
    created.metadata.resource_version
}

/// Bounds a future: panics with `what` after [`LIMIT`].
pub async fn within<T>(what: &str, future: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, future)
        .await
        .unwrap_or_else(|_| panic!("timed out after {LIMIT:?}: {what}"))
}
