//! Ports of client-go's `shared_informer_test.go`, driving manual informers (their queue fed
//! by hand, as a reflector would) on tokio's paused clock. Each test is named after the
//! client-go test it mirrors. Handler behaviour (slow, abused, not synced) is in
//! `shared_informer_handlers.rs`.

mod cache_support;

use std::time::Duration;

use cache_support::informers::*;
use cache_support::{Event, FakeSource, Obj, Recorder, eventually, labeled, obj};
use clientgo_apimachinery::{ManagedFields, Object};
use clientgo_informer::{
    Indexers, InformerError, QueueKind, label_index_func, strip_managed_fields, wait_for_cache_sync,
};
use tokio_util::sync::CancellationToken;

// client-go: TestListenerResyncPeriods.
#[tokio::test(start_paused = true)]
async fn listener_resync_periods() {
    let informer = informer(Duration::from_secs(1));
    let listeners = [
        Recorder::default(),
        Recorder::default(),
        Recorder::default(),
    ];
    for (listener, period) in listeners.iter().zip([0, 2, 3]) {
        informer
            .add_event_handler_with_resync(listener.clone(), Duration::from_secs(period))
            .unwrap();
    }
    let start = tokio::time::Instant::now();
    let (cancel, task) = self::start(&informer);
    informer
        .queue()
        .replace(vec![obj("pod1", 1), obj("pod2", 2)], "1".into());
    for listener in &listeners {
        ok(listener, &["pod1", "pod2"]).await;
        listener.take();
    }

    // At 2 s listener 2 is due.
    tokio::time::sleep_until(start + Duration::from_millis(1990)).await;
    assert!(
        listeners.iter().all(|l| l.len() == 0),
        "nobody resynced yet"
    );
    ok(&listeners[1], &["pod1", "pod2"]).await;
    assert_eq!(
        listeners[0].len() + listeners[2].len(),
        0,
        "only listener 2 resynced"
    );
    listeners[1].take();

    // At 3 s listener 3 is due.
    ok(&listeners[2], &["pod1", "pod2"]).await;
    assert!(tokio::time::Instant::now() < start + Duration::from_millis(3500));
    assert_eq!(
        listeners[0].len() + listeners[1].len(),
        0,
        "only listener 3 resynced"
    );
    assert!(
        listeners[2]
            .take()
            .iter()
            .all(|e| matches!(e, Event::Update { old, new, .. } if old == new)),
        "resyncs are on_update(o, o)"
    );
    stop(cancel, task).await;
}

// client-go: TestResyncCheckPeriod.
#[tokio::test(start_paused = true)]
async fn resync_check_period() {
    let informer = informer(Duration::from_secs(12 * 3600));
    let h1 = informer
        .add_event_handler_with_resync(Recorder::default(), Duration::ZERO)
        .unwrap();
    assert_eq!(
        informer.resync_check_period(),
        Duration::from_secs(12 * 3600)
    );
    assert_eq!(h1.resync_period(), Duration::ZERO);

    let h2 = informer
        .add_event_handler_with_resync(Recorder::default(), Duration::from_secs(60))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(60));
    assert_eq!(
        (h1.resync_period(), h2.resync_period()),
        (Duration::ZERO, Duration::from_secs(60))
    );

    let h3 = informer
        .add_event_handler_with_resync(Recorder::default(), Duration::from_secs(55))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(55));
    let h4 = informer
        .add_event_handler_with_resync(Recorder::default(), Duration::from_secs(5))
        .unwrap();
    assert_eq!(informer.resync_check_period(), Duration::from_secs(5));
    let periods: Vec<u64> = [&h1, &h2, &h3, &h4]
        .iter()
        .map(|h| h.resync_period().as_secs())
        .collect();
    assert_eq!(periods, [0, 60, 55, 5]);

    // Below the 1 s minimum: raised to it (and lowers the check period before the start).
    let h5 = informer
        .add_event_handler_with_resync(Recorder::default(), Duration::from_millis(10))
        .unwrap();
    assert_eq!(h5.resync_period(), Duration::from_secs(1));
    assert_eq!(informer.resync_check_period(), Duration::from_secs(1));
    assert_eq!(
        h4.resync_period(),
        Duration::from_secs(5),
        "others re-derived, unchanged"
    );

    // After the start, a smaller period is raised to the check period instead.
    let informer = self::informer(Duration::from_secs(5));
    let (cancel, task) = start(&informer);
    eventually("started", WAIT, || informer.has_started()).await;
    let late = informer
        .add_event_handler_with_resync(Recorder::default(), Duration::from_secs(2))
        .unwrap();
    assert_eq!(late.resync_period(), Duration::from_secs(5));
    assert_eq!(informer.resync_check_period(), Duration::from_secs(5));
    stop(cancel, task).await;

    // An informer that does not resync gives no handler a period.
    let informer = self::informer(Duration::ZERO);
    let h = informer
        .add_event_handler_with_resync(Recorder::default(), Duration::from_secs(30))
        .unwrap();
    assert_eq!(
        h.resync_period(),
        Duration::ZERO,
        "the informer does not resync"
    );
    assert_eq!(informer.resync_check_period(), Duration::ZERO);
    let informer = self::informer(Duration::ZERO);
    let (cancel, task) = start(&informer);
    eventually("started", WAIT, || informer.has_started()).await;
    let h = informer
        .add_event_handler_with_resync(Recorder::default(), Duration::from_secs(30))
        .unwrap();
    assert_eq!(
        h.resync_period(),
        Duration::ZERO,
        "started without resync: none either"
    );
    stop(cancel, task).await;
}

// client-go: TestSharedInformerInitializationRace.
#[tokio::test(start_paused = true)]
async fn shared_informer_initialization_race() {
    let informer = informer(Duration::from_secs(1));
    let adder = {
        let informer = informer.clone();
        tokio::spawn(async move { informer.add_event_handler(Recorder::default()) })
    };
    let (cancel, task) = start(&informer);
    cancel.cancel();
    task.await.unwrap();
    let _ = adder.await.unwrap();
}

// client-go: TestSharedInformerWatchDisruption.
#[tokio::test(start_paused = true)]
async fn shared_informer_watch_disruption() {
    let informer = informer(Duration::from_secs(1));
    let no_resync = Recorder::default();
    let resync = Recorder::default();
    informer
        .add_event_handler_with_resync(no_resync.clone(), Duration::ZERO)
        .unwrap();
    informer
        .add_event_handler_with_resync(resync.clone(), Duration::from_secs(1))
        .unwrap();
    let source = FakeSource::new(informer.queue());
    source.add_drop_watch(obj("pod1", 1));
    source.add_drop_watch(obj("pod2", 2));
    let (cancel, task) = start(&informer);
    source.relist();
    ok(&no_resync, &["pod1", "pod2"]).await;
    ok(&resync, &["pod1", "pod2"]).await;

    // pod3 added and pod2 changed while the watch was down: nobody sees it.
    source.add_drop_watch(obj("pod3", 3));
    source.modify_drop_watch(obj("pod2", 4));
    ok(&no_resync, &["pod1", "pod2"]).await;
    no_resync.take();
    resync.take();

    // The resync check at 1 s marks only the resyncing handler due; then the relist.
    tokio::time::sleep(Duration::from_millis(1000)).await;
    source.relist();
    ok(&no_resync, &["pod2", "pod3"]).await;
    ok(&resync, &["pod1", "pod2", "pod3"]).await;
    stop(cancel, task).await;
}

// client-go: TestSharedInformerTransformer.
#[tokio::test(start_paused = true)]
async fn shared_informer_transformer() {
    let informer = informer(Duration::from_secs(1));
    informer
        .set_transform(|mut o: Obj| {
            o.metadata.name = o.metadata.name.to_uppercase();
            o
        })
        .unwrap();
    let listener = Recorder::default();
    informer.add_event_handler(listener.clone()).unwrap();
    let (cancel, task) = start(&informer);
    informer
        .queue()
        .replace(vec![obj("pod1", 1), obj("pod2", 2)], "1".into());
    ok(&listener, &["POD1", "POD2"]).await;
    assert!(informer.indexer().get_by_key("POD1").is_some());
    assert!(matches!(
        informer.set_transform(|o| o),
        Err(InformerError::AlreadyStarted { .. })
    ));
    assert!(informer.set_watch_error_handler(|_| {}).is_err());
    stop(cancel, task).await;
}

#[tokio::test(start_paused = true)]
async fn strip_managed_fields_transform() {
    let informer = informer(Duration::ZERO);
    informer.set_transform(strip_managed_fields).unwrap();
    let (cancel, task) = start(&informer);
    let mut o = obj("pod1", 1);
    o.metadata.managed_fields =
        Some(ManagedFields::from_json(r#"[{"manager":"kubectl"}]"#).unwrap());
    informer.queue().add(o);
    let indexer = informer.indexer().clone();
    eventually("the object cached", WAIT, || indexer.contains_key("pod1")).await;
    assert!(
        indexer
            .get_by_key("pod1")
            .unwrap()
            .metadata
            .managed_fields
            .is_none()
    );
    stop(cancel, task).await;
}

// client-go: TestSharedInformerRemoveHandler and TestRemovingRemovedSharedInformer.
#[test]
fn shared_informer_remove_handler() {
    let informer = informer(Duration::from_secs(1));
    let h1 = informer.add_event_handler(Recorder::default()).unwrap();
    let h2 = informer.add_event_handler(Recorder::default()).unwrap();
    assert_eq!(informer.handler_count(), 2);
    informer.remove_event_handler(&h2);
    assert_eq!(informer.handler_count(), 1);
    informer.remove_event_handler(&h1);
    assert_eq!(informer.handler_count(), 0);
    informer.remove_event_handler(&h1); // removing a removed handler is fine
    assert!(!informer.is_registered(&h1));
    assert!(
        h1.is_stopped(),
        "a handler removed before the start has no task to wait for"
    );
}

// client-go: TestSharedInformerRemoveForeignHandler.
#[test]
fn shared_informer_remove_foreign_handler() {
    let informer = informer(Duration::from_secs(1));
    let informer2 = self::informer(Duration::from_secs(1));
    let h1 = informer.add_event_handler(Recorder::default()).unwrap();
    let h2 = informer.add_event_handler(Recorder::default()).unwrap();
    assert!(!informer2.is_registered(&h1) && !informer2.is_registered(&h2));
    informer2.remove_event_handler(&h1);
    assert_eq!(
        (informer.handler_count(), informer2.handler_count()),
        (2, 0)
    );
    assert!(informer.is_registered(&h1) && informer.is_registered(&h2));
    informer.remove_event_handler(&h2);
    informer.remove_event_handler(&h1);
    assert_eq!(informer.handler_count(), 0);
}

// client-go: TestSharedInformerMultipleRegistration.
#[test]
fn shared_informer_multiple_registration() {
    let informer = informer(Duration::from_secs(1));
    let handler = Recorder::default();
    let reg1 = informer.add_event_handler(handler.clone()).unwrap();
    let reg2 = informer.add_event_handler(handler).unwrap();
    assert_eq!(informer.handler_count(), 2);
    informer.remove_event_handler(&reg1);
    assert!(!informer.is_registered(&reg1) && informer.is_registered(&reg2));
    informer.remove_event_handler(&reg2);
    assert_eq!(informer.handler_count(), 0);
}

// client-go: TestStateSharedInformer, TestAddOnStoppedSharedInformer,
// TestRemoveOnStoppedSharedInformer.
#[tokio::test(start_paused = true)]
async fn state_shared_informer() {
    let informer = informer(Duration::from_secs(1));
    let listener = Recorder::default();
    let handle = informer.add_event_handler(listener.clone()).unwrap();
    assert!(!informer.has_started() && !informer.is_stopped());
    let (cancel, task) = start(&informer);
    informer.queue().replace(vec![obj("pod1", 1)], "1".into());
    ok(&listener, &["pod1"]).await;
    assert!(informer.has_started() && !informer.is_stopped());
    stop(cancel, task).await;
    assert!(informer.has_started() && informer.is_stopped());
    assert!(handle.is_stopped());

    let err = informer.add_event_handler(Recorder::default()).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("was not added to shared informer pods because it has stopped already"),
        "{err}"
    );
    informer.remove_event_handler(&handle); // fine on a stopped informer
    assert!(informer.add_indexers(Indexers::new()).is_err());
    // A second run returns at once.
    informer.run(CancellationToken::new()).await;
}

// client-go: TestRemoveWhileActive.
#[tokio::test(start_paused = true)]
async fn remove_while_active() {
    let informer = informer(Duration::ZERO);
    let listener = Recorder::default();
    let handle = informer.add_event_handler(listener.clone()).unwrap();
    let (cancel, task) = start(&informer);
    informer.queue().add(obj("pod1", 1));
    ok(&listener, &["pod1"]).await;
    informer.remove_event_handler(&handle);
    assert!(!informer.is_registered(&handle));
    handle.wait_stopped().await;
    informer.queue().add(obj("pod2", 2));
    ok(&listener, &["pod1"]).await;
    stop(cancel, task).await;
}

// client-go: TestAddWhileActive: a late handler gets the cache as initial adds, and its
// registration syncs only once it handled them.
#[tokio::test(start_paused = true)]
async fn add_while_active() {
    let informer = informer(Duration::ZERO);
    let l1 = Recorder::default();
    let h1 = informer.add_event_handler(l1.clone()).unwrap();
    assert!(!h1.has_synced(), "synced before run");
    let (cancel, task) = start(&informer);
    informer.queue().replace(vec![], "1".into());
    informer.queue().add(obj("pod1", 1));
    ok(&l1, &["pod1"]).await;
    assert!(h1.has_synced());

    let l2 = Recorder::default();
    let h2 = informer.add_event_handler(l2.clone()).unwrap();
    // The listener's task has not run yet: its initial adds are pending.
    assert!(!h2.has_synced(), "synced before processing anything");
    informer.queue().add(obj("pod2", 2));
    ok(&l2, &["pod1", "pod2"]).await;
    assert!(h2.has_synced());
    assert_eq!(
        l2.snapshot(),
        [
            Event::Add {
                key: "pod1".into(),
                value: 1,
                initial: true
            },
            Event::Add {
                key: "pod2".into(),
                value: 2,
                initial: false
            },
        ]
    );
    ok(&l1, &["pod1", "pod2"]).await;
    assert!(informer.is_registered(&h1) && informer.is_registered(&h2));
    stop(cancel, task).await;
}

// The per-registration sync: a registration reports synced only once its handler handled
// every object of the initial list.
#[tokio::test(start_paused = true)]
async fn registration_has_synced_after_its_initial_adds() {
    for queue in [QueueKind::RealFifo, QueueKind::DeltaFifo] {
        let informer = informer_with(Duration::ZERO, queue);
        let listener = Recorder::default();
        let reg = informer.add_event_handler(listener.clone()).unwrap();
        let (cancel, task) = start(&informer);
        informer.queue().replace(
            (0..50).map(|i| obj(&format!("p{i}"), i)).collect(),
            "9".into(),
        );
        let mut polls = 0;
        while !reg.has_synced() {
            polls += 1;
            assert!(polls < 100_000, "{queue:?}: never synced");
            tokio::task::yield_now().await;
        }
        assert_eq!(
            listener.len(),
            50,
            "{queue:?}: synced ⇒ every initial add handled"
        );
        assert!(informer.has_synced());
        wait_for_cache_sync(&[&informer, &reg], Duration::ZERO)
            .await
            .unwrap();
        stop(cancel, task).await;
    }
}

// client-go: TestIndexer: indexes added before and after the start.
#[tokio::test(start_paused = true)]
async fn indexer() {
    let informer = informer(Duration::from_secs(1));
    informer
        .add_indexers(Indexers::new().with("labels", |o: &Obj| o.labels().keys().collect()))
        .unwrap();
    let (cancel, task) = start(&informer);
    let pod1 = labeled(obj("pod1", 1), &[("a", "a-val"), ("b", "b-val1")]);
    let pod2 = labeled(obj("pod2", 2), &[("b", "b-val2")]);
    informer.queue().replace(vec![pod1, pod2], "2".into());
    informer.wait_synced().await;
    let indexer = informer.indexer();
    assert_eq!(indexer.index_keys("labels", "a").unwrap(), ["pod1"]);
    informer
        .queue()
        .add(labeled(obj("pod3", 3), &[("a", "a-val2")]));
    eventually("pod3 indexed", WAIT, || {
        indexer.index_keys("labels", "a").unwrap().len() == 2
    })
    .await;
    informer
        .add_indexers(Indexers::new().with("labels-again", |o: &Obj| o.labels().keys().collect()))
        .unwrap();
    assert_eq!(
        indexer.index_keys("labels-again", "a").unwrap(),
        ["pod1", "pod3"]
    );
    assert_eq!(indexer.list_index_func_values("labels"), ["a", "b"]);
    assert!(
        informer
            .add_indexers(Indexers::new().with("labels", label_index_func("x")))
            .is_err()
    );
    stop(cancel, task).await;
}
