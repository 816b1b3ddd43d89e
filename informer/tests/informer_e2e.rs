//! The shared informer end to end, through the reflector and a fake server (client-go's
//! informer tests that run over `FakeControllerSource`): the initial list, watch events,
//! resourceVersions, and why a cache does not sync (`TestSharedInformerErrorHandling`).

mod cache_support;

use std::sync::Arc;
use std::time::Duration;

use cache_support::{Event, FakeListerWatcher, Obj, Recorder, eventually, obj};
use clientgo_apimachinery::{Status, StatusReason};
use clientgo_informer::{
    Indexers, NotSyncedReason, SharedIndexInformer, SharedInformerOptions, wait_for_cache_sync,
};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

const WAIT: Duration = Duration::from_secs(10);

fn informer(server: &FakeListerWatcher) -> SharedIndexInformer<Obj> {
    SharedIndexInformer::new(
        server.clone(),
        Indexers::namespace(),
        SharedInformerOptions {
            name: "objs".into(),
            ..SharedInformerOptions::default()
        },
    )
}

#[tokio::test(start_paused = true)]
async fn list_then_watch_through_the_reflector() {
    let server = FakeListerWatcher::default();
    server.add(obj("a", 0));
    server.add(obj("b", 0));
    let informer = informer(&server);
    let recorder = Recorder::default();
    let registration = informer.add_event_handler(recorder.clone()).unwrap();
    let cancel = CancellationToken::new();
    let task = {
        let (informer, cancel) = (informer.clone(), cancel.clone());
        tokio::spawn(async move { informer.run(cancel).await })
    };
    wait_for_cache_sync(&[&informer, &registration], WAIT)
        .await
        .unwrap();
    assert_eq!(informer.indexer().len(), 2);
    assert_eq!(informer.last_sync_resource_version(), "2");
    assert_eq!(
        recorder.take(),
        [
            Event::Add {
                key: "a".into(),
                value: 1,
                initial: true
            },
            Event::Add {
                key: "b".into(),
                value: 2,
                initial: true
            },
        ]
    );

    // Watch events reach the cache, then the handler; read-your-writes on the store.
    let c = server.add(obj("c", 0));
    informer
        .indexer()
        .wait_for_resource_version(c.metadata.resource_version.as_str(), WAIT)
        .await
        .unwrap();
    assert!(informer.indexer().contains_key("c"));
    server.modify(obj("a", 0));
    server.delete(obj("b", 0));
    eventually("the watch events", WAIT, || recorder.len() == 3).await;
    assert_eq!(
        recorder.take(),
        [
            Event::Add {
                key: "c".into(),
                value: 3,
                initial: false
            },
            Event::Update {
                key: "a".into(),
                old: 1,
                new: 4
            },
            Event::Delete {
                key: "b".into(),
                value: Some(5),
                tombstone: false
            },
        ]
    );
    eventually("the last resourceVersion", WAIT, || {
        informer.last_sync_resource_version() == "5"
    })
    .await;
    assert_eq!(server.lists(), 1, "one list, then the watch");
    cancel.cancel();
    task.await.unwrap();
    assert!(informer.is_stopped());
}

// client-go: TestSharedInformerErrorHandling, and wait_for_cache_sync's reason.
#[tokio::test(start_paused = true)]
async fn shared_informer_error_handling() {
    let server = FakeListerWatcher::default();
    server.add(obj("a", 0));
    server.set_list_error(Some(Status::failure(
        403,
        StatusReason::Forbidden,
        "Access Denied",
    )));
    let informer = informer(&server);
    let errors = Arc::new(Mutex::new(Vec::new()));
    {
        let errors = errors.clone();
        informer
            .set_watch_error_handler(move |error| errors.lock().push(error.to_string()))
            .unwrap();
    }
    let cancel = CancellationToken::new();
    let task = {
        let (informer, cancel) = (informer.clone(), cancel.clone());
        tokio::spawn(async move { informer.run(cancel).await })
    };
    let error = wait_for_cache_sync(&[&informer], Duration::from_secs(5))
        .await
        .unwrap_err();
    assert!(
        errors.lock().iter().any(|e| e.contains("Access Denied")),
        "{:?}",
        errors.lock()
    );
    let (name, reason) = &error.not_synced[0];
    assert_eq!(name, "objs");
    let NotSyncedReason::Failing(message) = reason else {
        panic!("expected the reflector's error, got {reason:?}");
    };
    assert!(
        message.contains("forbidden") && message.contains("Access Denied"),
        "{message}"
    );
    assert!(
        error.to_string().contains("objs: list failed (forbidden)"),
        "{error}"
    );

    // Once the server lets us list, the cache syncs (after the reflector's backoff).
    server.set_list_error(None);
    wait_for_cache_sync(&[&informer], Duration::from_secs(120))
        .await
        .unwrap();
    assert!(informer.last_error().is_none());
    cancel.cancel();
    task.await.unwrap();
}
