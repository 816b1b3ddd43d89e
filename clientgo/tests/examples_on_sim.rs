//! The watch-printer, informer-lister and metadata-informer examples, run against
//! apiserver-sim on a paused clock: what each prints for a scripted series of changes.

#[allow(dead_code)] // its `main` is the example's, not the test's
#[path = "../examples/informer_lister.rs"]
mod informer_lister;
#[allow(dead_code)]
#[path = "../examples/metadata_informer.rs"]
mod metadata_informer;
#[allow(dead_code)]
#[path = "../examples/watch_printer.rs"]
mod watch_printer;

mod support;

use std::collections::BTreeMap;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::rest::{Config, DeleteParams, PostParams, ResourceClient, RestClient};
use clientgo_apiserver_sim::faults::{InjectedError, RequestMatch};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use support::{lines, printing, stop};

fn meta(name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        labels: Some(
            labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..ObjectMeta::default()
    }
}

fn configmap(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: meta(name, labels),
        ..ConfigMap::default()
    }
}

fn pod(name: &str, labels: &[(&str, &str)]) -> Pod {
    Pod {
        metadata: meta(name, labels),
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                image: Some("registry.k8s.io/pause:3.10".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

async fn sim() -> (ApiServerSim, Config, RestClient) {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let config = Config::new(sim.url().parse().unwrap());
    let client = RestClient::new(&config).unwrap();
    (sim, config, client)
}

#[tokio::test(start_paused = true)]
async fn watch_printer_prints_each_change_once_across_disconnects_and_relists_when_expired() {
    let (sim, config, client) = sim().await;
    let api = ResourceClient::<ConfigMap>::namespaced(&client, "default");
    let post = PostParams::default();
    api.create(&configmap("before", &[]), &post).await.unwrap();
    let (mut rx, shutdown, run) =
        printing(|shutdown, print| watch_printer::run(config, "default", shutdown, print));
    assert_eq!(lines(&mut rx, 1).await, ["LISTED before"]);

    let a = api.create(&configmap("a", &[]), &post).await.unwrap();
    let mut changed = a.clone();
    changed.data = Some([("k".into(), "v".into())].into());
    api.update("a", &changed, &post).await.unwrap();
    assert_eq!(lines(&mut rx, 2).await, ["ADDED a", "MODIFIED a"]);

    // The connection ends: the watch resumes where it was, with no gap and no repeat.
    assert!(sim.close_all_watches() > 0, "a watch was open");
    api.create(&configmap("b", &[]), &post).await.unwrap();
    assert_eq!(lines(&mut rx, 1).await, ["ADDED b"]);

    // The resourceVersion has expired: list again.
    sim.faults().fail_next(
        1,
        RequestMatch::new("watch", "configmaps"),
        InjectedError::Expired,
    );
    assert!(sim.close_all_watches() > 0, "a watch was open");
    assert_eq!(
        lines(&mut rx, 4).await,
        [
            "EXPIRED: listing again",
            "LISTED a",
            "LISTED b",
            "LISTED before"
        ]
    );
    api.delete("b", &DeleteParams::default()).await.unwrap();
    assert_eq!(lines(&mut rx, 1).await, ["DELETED b"]);

    stop(shutdown, run).await;
    assert!(rx.try_recv().is_err(), "nothing else printed");
}

#[tokio::test(start_paused = true)]
async fn informer_lister_reports_configmaps_by_app_from_its_index() {
    let (_sim, config, client) = sim().await;
    let api = ResourceClient::<ConfigMap>::namespaced(&client, "default");
    let post = PostParams::default();
    for (name, app) in [("a", "web"), ("b", "web"), ("c", "db")] {
        api.create(&configmap(name, &[("app", app)]), &post)
            .await
            .unwrap();
    }
    api.create(&configmap("unlabelled", &[]), &post)
        .await
        .unwrap();
    let (tx, mut rx) = tokio::sync::watch::channel(informer_lister::Report::default());
    let shutdown = CancellationToken::new();
    let run = tokio::spawn({
        let shutdown = shutdown.clone();
        async move {
            let report = move |r: &informer_lister::Report| {
                tx.send_replace(r.clone());
            };
            informer_lister::run(config, "default", shutdown, report).await
        }
    });
    let mut reports_are = async |total: usize, want: &[(&str, &[&str])]| {
        let by_app: BTreeMap<String, Vec<String>> = want
            .iter()
            .map(|(app, names)| ((*app).into(), names.iter().map(|n| (*n).into()).collect()))
            .collect();
        let want = informer_lister::Report { total, by_app };
        let seen = tokio::time::timeout(Duration::from_secs(60), rx.wait_for(|r| *r == want));
        assert!(
            matches!(seen.await, Ok(Ok(_))),
            "report {want:?} never seen; last {:?}",
            *rx.borrow()
        );
    };
    reports_are(4, &[("db", &["c"]), ("web", &["a", "b"])]).await;

    let mut b = api.get("b", &Default::default()).await.unwrap();
    b.metadata.labels = Some([("app".into(), "db".into())].into());
    api.update("b", &b, &post).await.unwrap();
    api.delete("a", &DeleteParams::default()).await.unwrap();
    api.create(&configmap("e", &[("app", "cache")]), &post)
        .await
        .unwrap();
    reports_are(4, &[("cache", &["e"]), ("db", &["b", "c"])]).await;

    stop(shutdown, run).await;
}

#[tokio::test(start_paused = true)]
async fn metadata_informer_prints_pod_names_and_labels() {
    let (_sim, config, client) = sim().await;
    let api = ResourceClient::<Pod>::namespaced(&client, "default");
    let post = PostParams::default();
    api.create(&pod("web-1", &[("app", "web")]), &post)
        .await
        .unwrap();
    let (mut rx, shutdown, run) =
        printing(|shutdown, print| metadata_informer::run(config, "default", shutdown, print));
    assert_eq!(lines(&mut rx, 1).await, ["ADDED web-1 {app=web}"]);

    api.create(&pod("db-1", &[("app", "db"), ("tier", "data")]), &post)
        .await
        .unwrap();
    assert_eq!(lines(&mut rx, 1).await, ["ADDED db-1 {app=db,tier=data}"]);
    let mut web = api.get("web-1", &Default::default()).await.unwrap();
    web.metadata.labels = Some([("app".into(), "frontend".into())].into());
    api.update("web-1", &web, &post).await.unwrap();
    assert_eq!(lines(&mut rx, 1).await, ["RELABELLED web-1 {app=frontend}"]);
    api.delete("db-1", &DeleteParams::default()).await.unwrap();
    assert_eq!(lines(&mut rx, 1).await, ["DELETED default/db-1"]);

    stop(shutdown, run).await;
    assert!(rx.try_recv().is_err(), "nothing else printed");
}
