//! The per-object-controller example: a labelled ConfigMap gets its Secret, owned through a
//! controller reference; the Secret follows the ConfigMap's changes; a tampered or deleted
//! Secret is repaired; a Secret someone else owns is left alone; an unlabelled ConfigMap gets
//! nothing; once settled it writes nothing; deleting the ConfigMap deletes the Secret (the
//! garbage collector); on cancel it exits cleanly. Against apiserver-sim (paused clock) and
//! a real kube-apiserver with kube-controller-manager.

#[allow(dead_code)] // its `main` is the example's, not the test's
#[path = "../examples/per_object_controller.rs"]
mod per_object_controller;

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::Object;
use clientgo::rest::{Config, DeleteParams, PostParams, ResourceClient, RestClient};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use per_object_controller::MIRROR;
use support::eventually;

const AGENT: &str = "per-object-controller-under-test";

fn configmap(name: &str, mirror: bool, data: &[(&str, &str)]) -> ConfigMap {
    let labels = mirror.then(|| [(MIRROR.to_owned(), "true".to_owned())].into());
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels,
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

fn bytes(data: &[(&str, &str)]) -> BTreeMap<String, ByteString> {
    data.iter()
        .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
        .collect()
}

/// Waits until the Secret `name` holds `data` and is controlled by the ConfigMap `owner`.
async fn secret_is(
    secrets: &ResourceClient<Secret>,
    name: &str,
    owner: &ConfigMap,
    data: &[(&str, &str)],
) -> Secret {
    let want = bytes(data);
    eventually(&format!("Secret {name} = {data:?}"), || async {
        let secret = secrets.get(name, &Default::default()).await.ok()?;
        let owned = secret.controller_ref().is_some_and(|o| {
            o.kind == "ConfigMap" && o.name == owner.name() && o.uid == owner.uid()
        });
        (owned && secret.data.as_ref() == Some(&want)).then_some(secret)
    })
    .await
}

/// Starts the example with its own user agent.
fn start(config: &Config, namespace: &str) -> (CancellationToken, tokio::task::JoinHandle<()>) {
    let mut config = config.clone();
    config.user_agent = AGENT.into();
    let shutdown = CancellationToken::new();
    let run = tokio::spawn({
        let (namespace, shutdown) = (namespace.to_owned(), shutdown.clone());
        async move {
            per_object_controller::run(config, &namespace, shutdown)
                .await
                .expect("the controller exits cleanly")
        }
    });
    (shutdown, run)
}

async fn stop((shutdown, run): (CancellationToken, tokio::task::JoinHandle<()>)) {
    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the controller exits after cancel")
        .unwrap();
}

/// The checks on `config`'s server in `namespace`, up to a settled state; the controller is
/// stopped at the end.
async fn the_trial(config: &Config, namespace: &str) {
    let client = RestClient::new(config).unwrap();
    let configmaps = ResourceClient::<ConfigMap>::namespaced(&client, namespace);
    let secrets = ResourceClient::<Secret>::namespaced(&client, namespace);
    let post = PostParams::default();
    // Someone else's Secret, and a ConfigMap of the same name asking to be mirrored.
    let foreign = Secret {
        metadata: ObjectMeta {
            name: Some("foreign".into()),
            ..ObjectMeta::default()
        },
        data: Some(bytes(&[("mine", "yes")])),
        ..Secret::default()
    };
    let foreign = secrets.create(&foreign, &post).await.unwrap();
    configmaps
        .create(&configmap("foreign", true, &[("k", "v")]), &post)
        .await
        .unwrap();
    configmaps
        .create(&configmap("plain", false, &[("k", "v")]), &post)
        .await
        .unwrap();

    let controller = start(config, namespace);
    let x = configmaps
        .create(&configmap("x", true, &[("a", "1")]), &post)
        .await
        .unwrap();
    secret_is(&secrets, "x", &x, &[("a", "1")]).await;

    // The ConfigMap changes: the Secret follows.
    let mut changed = x.clone();
    changed.data = Some([("a".into(), "2".into()), ("b".into(), "3".into())].into());
    let x = configmaps.update("x", &changed, &post).await.unwrap();
    secret_is(&secrets, "x", &x, &[("a", "2"), ("b", "3")]).await;

    // Tampered: repaired.
    let mut tampered = secrets.get("x", &Default::default()).await.unwrap();
    tampered.data = Some(bytes(&[("a", "999")]));
    secrets.update("x", &tampered, &post).await.unwrap();
    secret_is(&secrets, "x", &x, &[("a", "2"), ("b", "3")]).await;

    // Deleted: recreated.
    secrets.delete("x", &DeleteParams::default()).await.unwrap();
    secret_is(&secrets, "x", &x, &[("a", "2"), ("b", "3")]).await;
    stop(controller).await;

    let untouched = secrets.get("foreign", &Default::default()).await.unwrap();
    assert_eq!(
        untouched.metadata.resource_version, foreign.metadata.resource_version,
        "a Secret the ConfigMap does not control is never taken over"
    );
    let plain = secrets.get("plain", &Default::default()).await;
    assert!(
        plain.is_err_and(|e| e.is_not_found()),
        "an unlabelled ConfigMap gets no Secret"
    );
}

/// Deleting the owner deletes the Secret: the garbage collector follows the ownerReference.
async fn the_owner_takes_its_secret_along(config: &Config, namespace: &str) {
    let client = RestClient::new(config).unwrap();
    let configmaps = ResourceClient::<ConfigMap>::namespaced(&client, namespace);
    let secrets = ResourceClient::<Secret>::namespaced(&client, namespace);
    configmaps
        .delete("x", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Secret of a deleted ConfigMap is gone", || async {
        let gone = secrets.get("x", &Default::default()).await;
        gone.is_err_and(|e| e.is_not_found()).then_some(())
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn the_example_mirrors_configmaps_on_apiserver_sim_and_is_idle_once_settled() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let config = Config::new(sim.url().parse().unwrap());
    the_trial(&config, "default").await;

    // Idle once settled: a fresh controller on the settled state writes nothing in a minute.
    let mark = sim.requests().mark();
    let controller = start(&config, "default");
    tokio::time::sleep(Duration::from_secs(60)).await;
    let requests = sim.requests().since(mark);
    assert!(
        requests.iter().any(|r| r.user_agent == AGENT),
        "the second controller ran (it listed and watched)"
    );
    let writes: Vec<_> = requests
        .iter()
        .filter(|r| r.is_write() && r.user_agent == AGENT)
        .collect();
    assert!(writes.is_empty(), "no write once settled: {writes:?}");
    stop(controller).await;

    the_owner_takes_its_secret_along(&config, "default").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_mirrors_configmaps_on_a_real_kube_apiserver() {
    let options = clientgo_envtest::ControlPlaneOptions {
        controller_manager: true,
        ..Default::default()
    };
    let Some(cp) = clientgo_envtest::ControlPlane::shared_with(options) else {
        return;
    };
    let namespace = cp.create_namespace("per-object").unwrap();
    let config = Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap();
    the_trial(&config, &namespace).await;
    the_owner_takes_its_secret_along(&config, &namespace).await;
}
