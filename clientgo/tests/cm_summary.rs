//! The cm-summary example, checked as a user would check it: 20 labelled ConfigMaps are
//! counted; relabels, deletes, tampering with the summary and deleting it are repaired; once
//! settled it writes nothing; on cancel it exits cleanly. Against apiserver-sim (paused clock)
//! and against a real kube-apiserver.

#[allow(dead_code)] // its `main` is the example's, not the test's
#[path = "../examples/cm_summary.rs"]
mod cm_summary;
mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::rest::{Config, DeleteParams, PostParams, ResourceClient, RestClient};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use support::eventually;

const AGENT: &str = "cm-summary-under-test";

fn configmap(name: &str, app: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some([("app".to_owned(), app.to_owned())].into()),
            ..ObjectMeta::default()
        },
        ..ConfigMap::default()
    }
}

async fn summary_is(api: &ResourceClient<ConfigMap>, want: &[(&str, usize)]) -> ConfigMap {
    let want: BTreeMap<String, String> = want
        .iter()
        .map(|(app, n)| ((*app).to_owned(), n.to_string()))
        .collect();
    eventually(&format!("cm-summary = {want:?}"), || async {
        let cm = api.get("cm-summary", &Default::default()).await.ok()?;
        (cm.data.clone().unwrap_or_default() == want).then_some(cm)
    })
    .await
}

/// The user's checks, on `config`'s server in `namespace`; returns the settled summary.
async fn the_trial(config: Config, namespace: &str) -> (ConfigMap, ResourceClient<ConfigMap>) {
    let api =
        ResourceClient::<ConfigMap>::namespaced(&RestClient::new(&config).unwrap(), namespace);
    let mut controller_config = config.clone();
    controller_config.user_agent = AGENT.into();
    let shutdown = CancellationToken::new();
    let run = tokio::spawn({
        let (namespace, shutdown) = (namespace.to_owned(), shutdown.clone());
        async move { cm_summary::run(controller_config, &namespace, shutdown).await }
    });

    for i in 0..20 {
        let app = if i < 12 { "web" } else { "db" };
        api.create(&configmap(&format!("cm-{i}"), app), &PostParams::default())
            .await
            .unwrap();
    }
    summary_is(&api, &[("db", 8), ("web", 12)]).await;

    for i in 0..2 {
        let mut cm = api
            .get(&format!("cm-{i}"), &Default::default())
            .await
            .unwrap();
        cm.metadata.labels = Some([("app".to_owned(), "cache".to_owned())].into());
        api.update(&format!("cm-{i}"), &cm, &PostParams::default())
            .await
            .unwrap();
    }
    summary_is(&api, &[("cache", 2), ("db", 8), ("web", 10)]).await;

    for i in 17..20 {
        api.delete(&format!("cm-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    summary_is(&api, &[("cache", 2), ("db", 5), ("web", 10)]).await;

    let mut tampered = api.get("cm-summary", &Default::default()).await.unwrap();
    tampered.data = Some([("web".to_owned(), "999".to_owned())].into());
    api.update("cm-summary", &tampered, &PostParams::default())
        .await
        .unwrap();
    summary_is(&api, &[("cache", 2), ("db", 5), ("web", 10)]).await;

    api.delete("cm-summary", &DeleteParams::default())
        .await
        .unwrap();
    let settled = summary_is(&api, &[("cache", 2), ("db", 5), ("web", 10)]).await;

    shutdown.cancel();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the controller exits after cancel")
        .unwrap()
        .expect("the controller exits cleanly");
    (settled, api)
}

#[tokio::test(start_paused = true)]
async fn the_example_keeps_the_summary_on_apiserver_sim_and_is_idle_once_settled() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let config = Config::new(sim.url().parse().unwrap());
    // Idle once settled: run the trial, then a fresh controller on the settled state writes
    // nothing over a minute (it reconciles once on start and finds nothing to do).
    the_trial(config.clone(), "default").await;
    let mark = sim.requests().mark();
    let mut controller_config = config;
    controller_config.user_agent = AGENT.into();
    let shutdown = CancellationToken::new();
    let run = tokio::spawn({
        let shutdown = shutdown.clone();
        async move { cm_summary::run(controller_config, "default", shutdown).await }
    });
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
    shutdown.cancel();
    run.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_keeps_the_summary_on_a_real_kube_apiserver() {
    let Some(cp) = clientgo_envtest::ControlPlane::shared() else {
        return;
    };
    let namespace = cp.create_namespace("cm-summary").unwrap();
    let config = Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap();
    let (settled, api) = the_trial(config, &namespace).await;
    // Settled: nothing rewrites the summary any more.
    let again = api.get("cm-summary", &Default::default()).await.unwrap();
    assert_eq!(
        again.metadata.resource_version, settled.metadata.resource_version,
        "no write after the controller settled and stopped"
    );
}
