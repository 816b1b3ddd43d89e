//! A panic in code given to an informer ends in a defined, visible state: under
//! `PanicPolicy::Stop` the informer stops as a whole and says so (`failure`, `has_synced`,
//! `wait_for_cache_sync`, metrics), and a new `run` rebuilds from a relist whose
//! notifications reach every handler; under `PanicPolicy::Abort` (the default) the process
//! aborts.

mod cache_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cache_support::{Event, FakeListerWatcher, Obj, Recorder, eventually, obj, rv};
use clientgo_informer::{
    IndexValues, Indexers, InformerFailure, InformerMetrics, NotSyncedReason, PanicPolicy,
    PanicSource, ReflectorOptions, ResourceEventHandler, ResourceEventHandlerFuncs,
    SharedIndexInformer, SharedInformerOptions, wait_for_cache_sync,
};
use prometheus_client::registry::Registry;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

fn stop_on_panic() -> SharedInformerOptions {
    SharedInformerOptions {
        name: "pods".into(),
        on_panic: PanicPolicy::Stop,
        ..SharedInformerOptions::default()
    }
}

fn start(informer: &SharedIndexInformer<Obj>, cancel: &CancellationToken) -> JoinHandle<()> {
    let (informer, cancel) = (informer.clone(), cancel.clone());
    tokio::spawn(async move { informer.run(cancel).await })
}

/// Waits for a run to end on its own (a panic), within [`WAIT`].
async fn ended(run: JoinHandle<()>) {
    tokio::time::timeout(WAIT, run)
        .await
        .expect("the run did not end after the panic")
        .unwrap();
}

/// Checks the stopped state every reporter shows, for a failure from `source`.
async fn assert_stopped(informer: &SharedIndexInformer<Obj>, source: PanicSource, message: &str) {
    let failure = informer.failure().expect("a failure is recorded");
    assert_eq!(failure.source, source);
    assert!(failure.message.contains(message), "{failure}");
    assert!(!informer.has_synced());
    assert!(!informer.has_started() && !informer.is_stopped());
    let err = wait_for_cache_sync(&[informer], Duration::from_secs(1))
        .await
        .unwrap_err();
    assert_eq!(
        err.not_synced,
        [("pods".to_owned(), NotSyncedReason::Failed(failure.clone()))]
    );
    assert!(
        err.to_string().contains("the informer stopped because"),
        "{err}"
    );
}

/// The updates a recorder saw, as `key old→new`.
fn updates(recorder: &Recorder) -> Vec<String> {
    recorder
        .snapshot()
        .iter()
        .filter_map(|e| match e {
            Event::Update { key, old, new } => Some(format!("{key} {old}->{new}")),
            _ => None,
        })
        .collect()
}

// The transform runs on the reflector's task: its panic ends the run instead of leaving a
// dead reflector behind a cache that says it is synced.
#[tokio::test(start_paused = true)]
async fn a_transform_panic_stops_the_informer_until_it_runs_again() {
    static BROKEN: AtomicBool = AtomicBool::new(true);
    let server = FakeListerWatcher::default();
    server.add(obj("a", 0));
    server.add(obj("b", 0));
    let informer = SharedIndexInformer::new(
        server.clone(),
        Indexers::namespace(),
        SharedInformerOptions {
            reflector: ReflectorOptions {
                use_watch_list: false,
                ..ReflectorOptions::default()
            },
            ..stop_on_panic()
        },
    );
    informer
        .set_transform(|o: Obj| {
            assert!(
                !(o.metadata.name == "bad" && BROKEN.load(Ordering::Relaxed)),
                "transform bug"
            );
            o
        })
        .unwrap();
    let seen = Recorder::default();
    let registration = informer.add_event_handler(seen.clone()).unwrap();
    let cancel = CancellationToken::new();
    let run = start(&informer, &cancel);
    tokio::time::timeout(WAIT, registration.wait_synced())
        .await
        .unwrap();

    server.add(obj("bad", 0));
    ended(run).await;
    assert_stopped(&informer, PanicSource::Transform, "transform bug").await;
    assert!(!registration.has_synced());
    assert_eq!(server.lists(), 1);

    // Fixed: the next run relists, and every handler hears of every object again.
    BROKEN.store(false, Ordering::Relaxed);
    seen.take();
    let run = start(&informer, &cancel);
    tokio::time::timeout(WAIT, registration.wait_synced())
        .await
        .unwrap();
    assert!(informer.failure().is_none() && informer.has_synced());
    assert_eq!(server.lists(), 2);
    assert!(informer.indexer().get_by_key("bad").is_some());
    eventually("the relist reaches the handler", WAIT, || seen.len() == 3).await;
    assert_eq!(
        updates(&seen),
        ["a 1->1", "b 2->2"],
        "unchanged, yet delivered"
    );
    cancel.cancel();
    run.await.unwrap();
}

// An index function's panic leaves the store as it was and stops the informer, instead of
// ending the process loop while the reflector keeps filling a queue nobody drains.
#[tokio::test(start_paused = true)]
async fn an_index_function_panic_stops_the_informer_with_the_store_whole() {
    let indexers = Indexers::namespace().with("by-value", |o: &Obj| {
        assert_ne!(o.value, 13, "index function bug");
        IndexValues::from(o.value.to_string())
    });
    let informer = SharedIndexInformer::new_manual(indexers, stop_on_panic());
    let seen = Recorder::default();
    let registration = informer.add_event_handler(seen.clone()).unwrap();
    let cancel = CancellationToken::new();
    let run = start(&informer, &cancel);
    let queue = informer.queue();
    queue.replace(vec![rv(obj("a", 1), 1), rv(obj("b", 2), 2)], "2".into());
    tokio::time::timeout(WAIT, registration.wait_synced())
        .await
        .unwrap();

    queue.update(rv(obj("a", 13), 3)); // the index function panics on it
    ended(run).await;
    assert_stopped(&informer, PanicSource::Indexer, "index function bug").await;
    let store = informer.indexer();
    assert_eq!(
        store.get_by_key("a").unwrap().value,
        1,
        "the update is not applied"
    );
    assert_eq!(store.index_keys("by-value", "1").unwrap(), ["a"]);
    assert!(store.index_keys("by-value", "13").unwrap().is_empty());
    assert_eq!(store.last_resource_version(), "2");
    let run = start(&informer, &cancel);
    queue.replace(vec![rv(obj("a", 14), 5), rv(obj("b", 2), 2)], "5".into());
    tokio::time::timeout(WAIT, registration.wait_synced())
        .await
        .unwrap();
    assert_eq!(informer.indexer().get_by_key("a").unwrap().value, 14);
    eventually("the relist reaches the handler", WAIT, || {
        updates(&seen).len() == 2
    })
    .await;
    assert_eq!(updates(&seen), ["a 1->14", "b 2->2"]);
    cancel.cancel();
    run.await.unwrap();
}

/// A handler that panics on the object with `value` 13, and records the rest.
fn fragile(seen: Recorder) -> impl ResourceEventHandler<Obj> {
    ResourceEventHandlerFuncs::new()
        .add_func({
            let seen = seen.clone();
            move |o: &Arc<Obj>, initial| {
                assert_ne!(o.value, 13, "handler bug");
                seen.on_add(o, initial);
            }
        })
        .update_func(move |old: &Arc<Obj>, new: &Arc<Obj>| seen.on_update(old, new))
}

// A handler's panic is not swallowed: the informer stops (the notification is lost for that
// handler, and says so), the others still get what was buffered for them, metrics count it,
// and the next run's relist tells every handler everything again.
#[tokio::test(start_paused = true)]
async fn a_handler_panic_stops_the_informer_and_the_next_run_tells_everyone() {
    let mut registry = Registry::default();
    let metrics = InformerMetrics::register(&mut registry);
    let informer = SharedIndexInformer::new_manual(
        Indexers::namespace(),
        SharedInformerOptions {
            metrics: Some(metrics),
            ..stop_on_panic()
        },
    );
    let (steady, broken) = (Recorder::default(), Recorder::default());
    let steady_registration = informer.add_event_handler(steady.clone()).unwrap();
    let broken_registration = informer
        .add_event_handler_with_options(
            fragile(broken.clone()),
            clientgo_informer::HandlerOptions {
                name: Some("fragile".into()),
                ..Default::default()
            },
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = start(&informer, &cancel);
    let queue = informer.queue();
    queue.replace(vec![rv(obj("a", 1), 1)], "1".into());
    tokio::time::timeout(WAIT, broken_registration.wait_synced())
        .await
        .unwrap();

    queue.add(rv(obj("b", 13), 2));
    ended(run).await;
    assert_stopped(
        &informer,
        PanicSource::Handler("fragile".into()),
        "handler bug",
    )
    .await;
    assert_eq!(
        wait_for_cache_sync(&[&broken_registration], Duration::from_secs(1))
            .await
            .unwrap_err()
            .not_synced[0]
            .1,
        NotSyncedReason::Failed(InformerFailure {
            source: PanicSource::Handler("fragile".into()),
            message: informer.failure().unwrap().message,
        })
    );
    eventually("the steady handler gets b", WAIT, || steady.len() == 2).await;
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for line in [
        r#"informer_failed{name="pods"} 1"#,
        r#"informer_panics_total{name="pods",source="handler"} 1"#,
        r#"informer_panics_total{name="pods",source="indexer"} 0"#,
    ] {
        assert!(text.contains(line), "{line} missing from\n{text}");
    }

    // b no longer panics: the next run's relist reaches both handlers, b included.
    let run = start(&informer, &cancel);
    queue.replace(vec![rv(obj("a", 1), 1), rv(obj("b", 14), 3)], "3".into());
    tokio::time::timeout(WAIT, steady_registration.wait_synced())
        .await
        .unwrap();
    eventually("both handlers hear of a and b", WAIT, || {
        updates(&broken).len() == 2 && updates(&steady).len() == 2
    })
    .await;
    assert_eq!(updates(&broken), ["a 1->1", "b 13->14"]);
    assert_eq!(updates(&steady), ["a 1->1", "b 13->14"]);
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(text.contains(r#"informer_failed{name="pods"} 0"#), "{text}");
    cancel.cancel();
    run.await.unwrap();
}

/// Set in the child process of [`the_default_policy_aborts_the_process`].
const ABORT_CHILD: &str = "CLIENTGO_INFORMER_ABORT_CHILD";

// client-go's default, and ours: a panic aborts the process. The test runs a child process
// (this test binary, filtered to the helper below) and checks how it died.
#[test]
fn the_default_policy_aborts_the_process() {
    assert_eq!(
        SharedInformerOptions::default().on_panic,
        PanicPolicy::Abort
    );
    let output = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--ignored",
            "--exact",
            "aborting_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ABORT_CHILD, "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "the child survived: {stderr}");
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(output.status.signal(), Some(6), "not SIGABRT: {stderr}");
    }
    assert!(
        stderr.contains(r#"informer pods: event handler "0" panicked"#)
            && stderr.contains("aborting (PanicPolicy::Abort)"),
        "{stderr}"
    );
}

#[tokio::test(start_paused = true)]
#[ignore = "run in a child process by the_default_policy_aborts_the_process"]
async fn aborting_child() {
    assert!(
        std::env::var_os(ABORT_CHILD).is_some(),
        "only the_default_policy_aborts_the_process runs this"
    );
    let informer = SharedIndexInformer::new_manual(
        Indexers::namespace(),
        SharedInformerOptions {
            name: "pods".into(),
            ..SharedInformerOptions::default()
        },
    );
    informer
        .add_event_handler(fragile(Recorder::default()))
        .unwrap();
    let run = start(&informer, &CancellationToken::new());
    informer.queue().add(rv(obj("b", 13), 1));
    // The process aborts while this waits.
    let ended = tokio::time::timeout(WAIT, run).await;
    panic!("the handler's panic did not abort the process: {ended:?}");
}
