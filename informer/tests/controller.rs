//! Ports of client-go's `controller_test.go`: how popped deltas reach the store and the
//! handler (`processDeltas`), `TestReplaceEvents`, `TestUpdate`, `TestStoreResourceVersion`,
//! and the process loop.

mod cache_support;

use std::sync::Arc;
use std::time::Duration;

use cache_support::{Event, FakeSource, Obj, Recorder, eventually, obj, rv};
use clientgo_informer::{
    DeleteEvent, DeletedFinalStateUnknown, Delta, DeltaFIFO, DeltaFIFOOptions, Indexer, Queue,
    RealFIFO, ReflectorStore, ResourceEventHandler, ResourceEventHandlerFuncs, process_deltas,
    process_loop,
};
use tokio_util::sync::CancellationToken;

fn add(key: &str, value: i64, initial: bool) -> Event {
    Event::Add {
        key: key.into(),
        value,
        initial,
    }
}
fn update(key: &str, old: i64, new: i64) -> Event {
    Event::Update {
        key: key.into(),
        old,
        new,
    }
}
fn delete(key: &str, value: Option<i64>, tombstone: bool) -> Event {
    Event::Delete {
        key: key.into(),
        value,
        tombstone,
    }
}

#[test]
fn process_deltas_applies_the_store_first_then_notifies() {
    let store = Arc::new(Indexer::<Obj>::new());
    // The handler checks that the store already reflects each notification.
    let seen = Recorder::default();
    let check = {
        let store = store.clone();
        let seen = seen.clone();
        ResourceEventHandlerFuncs::new()
            .add_func({
                let (store, seen) = (store.clone(), seen.clone());
                move |o, initial| {
                    assert_eq!(store.get(o).as_deref(), Some(&**o));
                    seen.on_add(o, initial)
                }
            })
            .update_func({
                let (store, seen) = (store.clone(), seen.clone());
                move |old, new| {
                    assert_eq!(store.get(new).as_deref(), Some(&**new));
                    seen.on_update(old, new)
                }
            })
            .delete_func(move |event| {
                assert!(!store.contains_key(&event.key()));
                seen.on_delete(event)
            })
    };
    let a1 = Arc::new(rv(obj("a", 1), 1));
    process_deltas(&check, &store, vec![Delta::Added(a1.clone())], true);
    process_deltas(
        &check,
        &store,
        vec![Delta::Updated(Arc::new(rv(obj("a", 2), 2)))],
        false,
    );
    process_deltas(
        &check,
        &store,
        vec![Delta::Sync(Arc::new(rv(obj("a", 2), 2)))],
        false,
    );
    process_deltas(
        &check,
        &store,
        vec![Delta::Replaced(Arc::new(rv(obj("b", 3), 1)))],
        true,
    );
    assert_eq!(
        store.last_resource_version(),
        "2",
        "Replaced/Sync do not move the RV"
    );
    process_deltas(
        &check,
        &store,
        vec![Delta::Deleted(DeleteEvent::Object(Arc::new(rv(
            obj("a", 2),
            4,
        ))))],
        false,
    );
    process_deltas(
        &check,
        &store,
        vec![Delta::Bookmark {
            resource_version: "7".into(),
        }],
        false,
    );
    assert_eq!(store.last_resource_version(), "7");
    process_deltas(&check, &store, vec![Delta::SyncAll], false);
    let tomb = DeletedFinalStateUnknown::new("b", None);
    process_deltas(
        &check,
        &store,
        vec![Delta::Deleted(DeleteEvent::Tombstone(tomb))],
        false,
    );
    assert!(store.is_empty());
    assert_eq!(
        seen.take(),
        [
            add("a", 1, true),
            update("a", 1, 2),
            update("a", 2, 2),
            add("b", 3, true),
            delete("a", Some(2), false),
            update("b", 3, 3),
            delete("b", None, true),
        ]
    );
}

// client-go: processReplacedAllInfo: tombstones for the missing keys, one atomic replace,
// then updates/adds in list order.
#[test]
fn process_deltas_replaced_all() {
    let store = Indexer::<Obj>::new();
    let recorder = Recorder::default();
    store.add(Arc::new(obj("gone", 1)));
    store.add(Arc::new(obj("kept", 2)));
    let objects = vec![Arc::new(obj("new", 3)), Arc::new(obj("kept", 4))];
    process_deltas(
        &recorder,
        &store,
        vec![Delta::ReplacedAll {
            objects,
            resource_version: "50".into(),
        }],
        false,
    );
    assert_eq!(
        recorder.take(),
        [
            delete("gone", Some(1), true),
            add("new", 3, false),
            update("kept", 2, 4),
        ]
    );
    assert_eq!(store.len(), 2);
    assert_eq!(store.last_resource_version(), "50");
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Atomic,
    NonAtomic,
    Delta,
}

/// A store fed through a queue of `kind` by a process loop; returns the queue's writing end.
fn pipeline(
    kind: Kind,
    store: Arc<Indexer<Obj>>,
    handler: Recorder,
    cancel: CancellationToken,
) -> (Arc<dyn ReflectorStore<Obj>>, tokio::task::JoinHandle<()>) {
    fn spawn<Q: Queue<Obj> + 'static>(
        queue: Arc<Q>,
        store: Arc<Indexer<Obj>>,
        handler: Recorder,
        cancel: CancellationToken,
    ) -> tokio::task::JoinHandle<()> {
        tokio::spawn(async move {
            process_loop(&*queue, &cancel, |deltas, initial| {
                process_deltas(&handler, &store, deltas, initial)
            })
            .await
        })
    }
    match kind {
        Kind::Atomic => {
            let q = Arc::new(RealFIFO::new());
            (q.clone(), spawn(q, store, handler, cancel))
        }
        Kind::NonAtomic => {
            let q = Arc::new(RealFIFO::with_known_objects(store.clone()));
            (q.clone(), spawn(q, store, handler, cancel))
        }
        Kind::Delta => {
            let q = Arc::new(DeltaFIFO::new(DeltaFIFOOptions {
                known_objects: Some(store.clone()),
                emit_delta_type_replaced: true,
                transform: None,
            }));
            (q.clone(), spawn(q, store, handler, cancel))
        }
    }
}

// client-go: TestReplaceEvents: an atomic and a non-atomic relist give the same handler
// calls and the same store.
#[tokio::test(start_paused = true)]
async fn replace_events() {
    let mut results = Vec::new();
    for kind in [Kind::Atomic, Kind::NonAtomic, Kind::Delta] {
        let store = Arc::new(Indexer::new());
        let recorder = Recorder::default();
        let cancel = CancellationToken::new();
        let (queue, task) = pipeline(kind, store.clone(), recorder.clone(), cancel.clone());
        queue.replace(
            vec![rv(obj("a", 1), 1), rv(obj("b", 1), 2), rv(obj("c", 1), 3)],
            "3".into(),
        );
        eventually("the first list", Duration::from_secs(5), || {
            recorder.len() == 3
        })
        .await;
        // b is gone, c changed, d is new, a is unchanged.
        queue.replace(
            vec![rv(obj("a", 1), 1), rv(obj("c", 2), 5), rv(obj("d", 1), 6)],
            "6".into(),
        );
        eventually("the relist", Duration::from_secs(5), || recorder.len() == 7).await;
        cancel.cancel();
        task.await.unwrap();
        let mut stored: Vec<(String, i64)> = store
            .list()
            .iter()
            .map(|o| (o.metadata.name.clone(), o.value))
            .collect();
        stored.sort();
        results.push((kind, recorder.take(), stored));
    }
    let expected_events = vec![
        add("a", 1, true),
        add("b", 1, true),
        add("c", 1, true),
        delete("b", Some(1), true),
        update("a", 1, 1),
        update("c", 1, 2),
        add("d", 1, false),
    ];
    for (kind, mut events, stored) in results {
        if let Kind::Delta = kind {
            // A DeltaFIFO queues a relist's deletions after its listed keys: same events,
            // another order.
            let position = |e: &Event| expected_events.iter().position(|x| x == e);
            events.sort_by_key(position);
        }
        assert_eq!(events, expected_events, "{kind:?}");
        assert_eq!(
            stored,
            [("a".into(), 1), ("c".into(), 2), ("d".into(), 1)],
            "{kind:?}"
        );
    }
}

// client-go: TestUpdate: objects go from "from" to "to", and the handler deletes each once
// it sees it reach "to"; only from→to, to→to and from→from updates may be observed, and
// every object ends deleted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn update_transitions() {
    const FROM: i64 = 1;
    const TO: i64 = 2;
    for kind in [Kind::Atomic, Kind::NonAtomic, Kind::Delta] {
        let store = Arc::new(Indexer::new());
        let recorder = Recorder::default();
        let cancel = CancellationToken::new();
        let (queue, task) = pipeline(kind, store.clone(), recorder.clone(), cancel.clone());
        let source = Arc::new(FakeSource::new(queue));
        source.relist();
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let source = source.clone();
                std::thread::spawn(move || {
                    for j in 0..20 {
                        let name = format!("a-{i}-{j}");
                        source.add(obj(&name, FROM));
                        source.modify(obj(&name, TO));
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        // The "handler deletes at TO" part: delete what reached TO, as the handler would.
        let mut deleted = 0;
        while deleted < 60 {
            tokio::time::sleep(Duration::from_millis(1)).await;
            for event in recorder.take() {
                match event {
                    Event::Update { key, old, new } => {
                        assert!(
                            matches!((old, new), (FROM, TO) | (TO, TO) | (FROM, FROM)),
                            "{kind:?}: observed transition {old} -> {new} for {key}"
                        );
                        if new == TO {
                            source.delete(&key);
                        }
                    }
                    Event::Delete { .. } => deleted += 1,
                    Event::Add { .. } => {}
                }
            }
        }
        assert!(store.is_empty(), "{kind:?}");
        cancel.cancel();
        task.await.unwrap();
    }
}

// client-go: TestStoreResourceVersion: the store follows events and bookmarks in order.
#[tokio::test(start_paused = true)]
async fn store_resource_version() {
    let store = Arc::new(Indexer::new());
    let recorder = Recorder::default();
    let cancel = CancellationToken::new();
    let (queue, task) = pipeline(
        Kind::Atomic,
        store.clone(),
        recorder.clone(),
        cancel.clone(),
    );
    let source = FakeSource::new(queue);
    source.add(obj("a", 1));
    source.relist();
    source.modify(obj("a", 2));
    source.add(obj("b", 1));
    source.bookmark();
    let target = source.resource_version().to_string();
    store
        .wait_for_resource_version(&target, Duration::from_secs(5))
        .await
        .unwrap();
    assert_eq!(store.last_resource_version(), target);
    source.delete("a");
    let target = source.resource_version().to_string();
    store
        .wait_for_resource_version(&target, Duration::from_secs(5))
        .await
        .unwrap();
    assert!(
        store.get_by_key("a").is_none(),
        "read-your-writes: the delete is visible"
    );
    cancel.cancel();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn process_loop_ends_on_close_after_draining() {
    let queue = RealFIFO::<Obj>::new();
    let store = Indexer::new();
    let recorder = Recorder::default();
    queue.add(obj("a", 1));
    queue.add(obj("b", 1));
    queue.close();
    let cancel = CancellationToken::new();
    process_loop(&queue, &cancel, |deltas, initial| {
        process_deltas(&recorder, &store, deltas, initial)
    })
    .await;
    assert_eq!(recorder.len(), 2, "drained before returning");
}

#[tokio::test(start_paused = true)]
async fn process_loop_ends_on_cancel() {
    let queue = RealFIFO::<Obj>::new();
    let cancel = CancellationToken::new();
    let stopper = {
        let cancel = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(1)).await;
            cancel.cancel();
        })
    };
    process_loop(&queue, &cancel, |_, _| panic!("nothing queued")).await;
    stopper.await.unwrap();
}
