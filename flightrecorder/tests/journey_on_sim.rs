//! A controller's loop on apiserver-sim (paused clock), recorded end to end through the
//! library's own journey events: a ConfigMap present at startup, whose journey starts at the
//! informer's initial list; a ConfigMap's journey from its watch event to the reconcile
//! that wrote it, the write coming back through the watch and a reconcile that writes
//! nothing; changes that coalesce while the only worker is busy; the request's span fields.

use std::collections::BTreeSet;

use clientgo_flightrecorder::vocabulary::{AddOutcome, DoneOutcome, ReconcileOutcome, Stage};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clientgo_apimachinery::Object;
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_flightrecorder::{Recorder, StepKind, Timeline};
use clientgo_informer::{EnqueueHandler, SharedInformerFactory, wait_for_cache_sync};
use clientgo_ratelimit::default_controller_rate_limiter;
use clientgo_rest::{Config, PostParams, RestClient};
use clientgo_workqueue::{ObjectKey, Queue, QueueConfig, run_workers};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tracing_subscriber::layer::SubscriberExt;

/// The process's recorder: handlers run on blocking threads, so the subscriber is global.
fn recorder() -> &'static Recorder {
    static RECORDER: OnceLock<Recorder> = OnceLock::new();
    RECORDER.get_or_init(|| {
        let recorder = Recorder::new(100_000);
        let subscriber = tracing_subscriber::registry().with(recorder.layer());
        tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
        recorder
    })
}

fn configmap(name: &str, seen: bool) -> ConfigMap {
    let annotations = seen.then(|| [("seen".to_owned(), "yes".to_owned())].into());
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            annotations,
            ..ObjectMeta::default()
        },
        data: Some([("v".to_owned(), "0".to_owned())].into()),
        ..ConfigMap::default()
    }
}

/// Waits, with a bound, until the recorded timeline satisfies `done`.
async fn until(what: &str, done: impl Fn(&Timeline) -> bool) -> Timeline {
    for _ in 0..600 {
        let timeline = recorder().snapshot().timeline();
        if done(&timeline) {
            return timeline;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("timed out waiting for {what}");
}

fn names(timeline: &Timeline, key: &str) -> Vec<&'static str> {
    timeline
        .journey(key)
        .map(|j| {
            j.steps
                .iter()
                .map(|s| s.kind.name())
                .filter(|n| *n != "done")
                .collect()
        })
        .unwrap_or_default()
}

/// Waits for `key`'s journey after `first` (how the informer learnt of it): added, taken,
/// reconciled with one write, whose watch event adds it again for a reconcile that writes
/// nothing.
async fn first_write_and_its_echo(key: &str, first: &str) -> Timeline {
    let timeline = until(&format!("{key} reconciled twice"), |t| {
        reconciles(t, key) == 2
    })
    .await;
    assert_eq!(
        names(&timeline, key),
        [
            first,
            "add",
            "get",
            "reconcile",
            "request",
            "watch",
            "add",
            "get",
            "reconcile"
        ],
        "{:#?}",
        timeline.journey(key)
    );
    timeline
}

fn reconciles(timeline: &Timeline, key: &str) -> usize {
    names(timeline, key)
        .iter()
        .filter(|n| **n == "reconcile")
        .count()
}

#[tokio::test(start_paused = true)]
async fn a_key_journeys_from_its_watch_event_to_its_reconciles() {
    recorder();
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    // There before the informer starts: no watch event will tell of it, its list will.
    let early = clientgo_rest::ResourceClient::<ConfigMap>::namespaced(&client, "default")
        .create(&configmap("early", false), &PostParams::default())
        .await
        .unwrap();
    let shutdown = CancellationToken::new();
    let factory = SharedInformerFactory::builder(&client)
        .namespace("default".to_owned())
        .build();
    let informer = factory.informer::<ConfigMap>();
    let queue = Queue::<ObjectKey>::rate_limiting_with_config(
        Arc::new(default_controller_rate_limiter()),
        QueueConfig::named("journey"),
    );
    informer
        .add_event_handler(EnqueueHandler::new(queue.clone()))
        .unwrap();
    factory.start(&shutdown);
    wait_for_cache_sync(&[&informer], Duration::from_secs(30))
        .await
        .unwrap();
    let lister = Arc::new(factory.namespaced_lister::<ConfigMap>().unwrap());
    let api = factory.client::<ConfigMap>();
    // The reconcile: marks a ConfigMap seen (a write), once; `default/hold` waits for the gate.
    let gate = Arc::new(Semaphore::new(0));
    let workers = {
        let (queue, api, gate, shutdown) =
            (queue.clone(), api.clone(), gate.clone(), shutdown.clone());
        tokio::spawn(async move {
            let reconcile = move |key: ObjectKey| {
                let (lister, api, gate) = (lister.clone(), api.clone(), gate.clone());
                async move {
                    let name = key.name();
                    if name == "hold" {
                        drop(gate.acquire().await);
                    }
                    let Some(current) = lister.get(name) else {
                        return Ok(());
                    };
                    if current.annotations().get("seen").is_some() {
                        return Ok(()); // nothing to do: no write
                    }
                    let mut seen = (*current).clone();
                    seen.metadata.annotations =
                        Some([("seen".to_owned(), "yes".to_owned())].into());
                    api.update(name, &seen, &PostParams::default())
                        .await
                        .map(drop)
                }
            };
            run_workers(&queue, 1, reconcile, shutdown).await;
        })
    };

    // The key from the initial list: listed, then the same loop as a watched one.
    let timeline = first_write_and_its_echo("default/early", "listed").await;
    let early_journey = timeline.journey("default/early").unwrap();
    let StepKind::Listed {
        resource, via, rv, ..
    } = &early_journey.steps[0].kind
    else {
        unreachable!("checked above")
    };
    assert_eq!(resource, "ConfigMap");
    assert_eq!(rv, early.metadata.resource_version.as_deref().unwrap());
    // The informer's default: a streaming list (its initial events).
    assert_eq!(via, "watch-list");
    // The listed object flows into the first reconcile, as a watch event would.
    let early_index = timeline
        .journeys
        .iter()
        .position(|j| j.key == "default/early")
        .unwrap();
    let first_flow = timeline
        .flows
        .iter()
        .find(|f| f.journey == early_index)
        .unwrap();
    assert_eq!(first_flow.from_entry, early_journey.steps[0].entry);

    // One key, end to end.
    api.create(&configmap("web", false), &PostParams::default())
        .await
        .unwrap();
    let timeline = first_write_and_its_echo("default/web", "watch").await;
    let web = timeline.journey("default/web").unwrap();
    assert_eq!(web.queue, "journey");
    let kinds: Vec<&StepKind> = web.steps.iter().map(|s| &s.kind).collect();
    assert!(
        matches!(kinds[0], StepKind::Watch { event_type, resource, .. } if event_type == "ADDED" && resource == "ConfigMap")
    );
    assert!(web.steps.iter().any(
        |s| matches!(&s.kind, StepKind::Watch { event_type, .. } if event_type == "MODIFIED")
    ));
    let write = web
        .steps
        .iter()
        .find_map(|s| match &s.kind {
            StepKind::Request {
                method,
                resource,
                target,
                status,
            } => Some((method, resource, target, *status)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        write,
        (
            &"PUT".to_owned(),
            &"configmaps".to_owned(),
            &"default/web".to_owned(),
            200
        )
    );
    // Each of the two watch events flows into the reconcile it caused.
    let web_index = timeline
        .journeys
        .iter()
        .position(|j| j.key == "default/web")
        .unwrap();
    let reconcile_starts: Vec<Duration> = web
        .steps
        .iter()
        .filter(|s| s.kind.name() == "reconcile")
        .map(|s| s.at)
        .collect();
    let flows: Vec<Duration> = timeline
        .flows
        .iter()
        .filter(|f| f.journey == web_index)
        .map(|f| f.to)
        .collect();
    assert_eq!(flows, reconcile_starts);

    // The request span speaks OpenTelemetry's names, and carries no query.
    let snapshot = recorder().snapshot();
    let put = snapshot
        .entries
        .iter()
        .find(|e| {
            &*e.stage == "http"
                && e.fields.str("http.request.method") == Some("PUT")
                && e.fields.str("k8s.name") == Some("web")
        })
        .unwrap();
    assert_eq!(
        put.fields.str("url.path"),
        Some("/api/v1/namespaces/default/configmaps/web")
    );
    assert_eq!(put.fields.u64("http.response.status_code"), Some(200));
    assert_eq!(put.fields.str("k8s.verb"), Some("update"));
    assert!(
        put.fields
            .str("server.address")
            .is_some_and(|a| !a.is_empty())
    );
    assert!(
        snapshot
            .entries
            .iter()
            .filter_map(|e| e.fields.str("url.path"))
            .all(|p| !p.contains('?'))
    );

    // Every stage and outcome recorded is a word of the vocabulary the timeline reads, and the
    // run met every stage of the loop.
    let stages: BTreeSet<&str> = snapshot.entries.iter().map(|e| &*e.stage).collect();
    for stage in &stages {
        assert!(Stage::from_name(stage).is_some(), "unknown stage {stage}");
    }
    for stage in [
        Stage::Watch,
        Stage::Listed,
        Stage::Applied,
        Stage::Handler,
        Stage::Add,
        Stage::Get,
        Stage::Done,
        Stage::Reconcile,
        Stage::Http,
    ] {
        assert!(stages.contains(stage.name()), "no {stage} in {stages:?}");
    }
    for entry in &snapshot.entries {
        let outcome = entry.fields.str("outcome");
        let known = match (Stage::from_name(&entry.stage), outcome) {
            (_, None) => true,
            (Some(Stage::Add), Some(o)) => AddOutcome::from_name(o).is_some(),
            (Some(Stage::Done), Some(o)) => DoneOutcome::from_name(o).is_some(),
            (Some(Stage::Reconcile), Some(o)) => ReconcileOutcome::from_name(o).is_some(),
            (_, Some(_)) => false,
        };
        assert!(known, "{} outcome {outcome:?}", entry.stage);
    }

    // Coalescing: while the only worker holds `hold`, three changes of `many` wait as one key.
    api.create(&configmap("many", true), &PostParams::default())
        .await
        .unwrap();
    until("many reconciled", |t| reconciles(t, "default/many") == 1).await;
    api.create(&configmap("hold", true), &PostParams::default())
        .await
        .unwrap();
    // (A span is recorded when it closes: the held reconcile shows as its get.)
    until("hold taken", |t| names(t, "default/hold").contains(&"get")).await;
    for v in 1..=3 {
        let mut many = configmap("many", true);
        many.data = Some([("v".to_owned(), v.to_string())].into());
        let current = api.get("many", &Default::default()).await.unwrap();
        many.metadata.resource_version = current.metadata.resource_version;
        api.update("many", &many, &PostParams::default())
            .await
            .unwrap();
    }
    until("three adds of many", |t| {
        t.journey("default/many")
            .is_some_and(|j| j.steps.iter().filter(|s| s.kind.name() == "add").count() == 4)
    })
    .await;
    gate.add_permits(1);
    let timeline = until("many reconciled again", |t| {
        reconciles(t, "default/many") == 2
    })
    .await;
    let many = timeline.journey("default/many").unwrap();
    let after_first: Vec<&str> = names(&timeline, "default/many")
        .into_iter()
        .skip_while(|n| *n != "reconcile")
        .skip(1)
        .collect();
    // Three watch events and their three adds (the reflector may run ahead of the handler),
    // then one get and one reconcile.
    let (before_get, rest) = after_first.split_at(after_first.len().saturating_sub(2));
    let mut before_get = before_get.to_vec();
    before_get.sort_unstable();
    assert_eq!(
        before_get,
        ["add", "add", "add", "watch", "watch", "watch"],
        "{many:#?}"
    );
    assert_eq!(rest, ["get", "reconcile"], "{many:#?}");
    assert_eq!(many.coalesced, 2);

    shutdown.cancel();
    workers.await.unwrap();
    factory.shutdown().await;
}
