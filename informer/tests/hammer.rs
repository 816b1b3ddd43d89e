//! client-go's `TestHammerController`, as a seeded multi-thread stress test: threads change
//! a fake collection at random (adds, updates, deletes, missed watch events, relists,
//! resyncs, bookmarks) while the process loop applies the queue to a store and readers
//! check it. At the end the store must equal the collection and every handler must have
//! seen a consistent history per key. Run for every queue kind, and through a shared
//! informer. `STRESS_SEED=n` replays one seed; a failure prints its seed.
//!
//! Invariants checked:
//! * per key, a handler's notifications alternate add → update* → delete (an update's `old`
//!   is what it last saw; values never go back: the collection's values only grow);
//! * after the run, each handler's last view of each key equals the collection;
//! * read-your-writes (RealFIFO): once `wait_for_resource_version(rv)` returns, the store
//!   holds the write made at `rv` or something newer, or the key is absent because a later
//!   change deleted it;
//! * concurrent readers never see an index disagree with the objects.

mod cache_support;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use cache_support::{Event, FakeSource, Obj, Recorder, Rng, labeled, ns_obj, with_seeds};
use clientgo_apimachinery::Object;
use clientgo_informer::{
    DeltaFIFO, DeltaFIFOOptions, Indexer, Indexers, NAMESPACE_INDEX, Queue, QueueKind, RealFIFO,
    ReflectorStore, SharedIndexInformer, SharedInformerOptions, label_index_func, process_deltas,
    process_loop,
};
use tokio_util::sync::CancellationToken;

const KEYS: u64 = 40;
const NAMESPACES: [&str; 3] = ["ns-a", "ns-b", "ns-c"];
const PRODUCERS: u64 = 3;
const OPS: u64 = 400;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Atomic,
    NonAtomic,
    Delta,
    Informer,
}

fn indexers() -> Indexers<Obj> {
    Indexers::namespace().with("group", label_index_func("group"))
}

/// Checks one handler's history and returns its final view: key → value.
fn check_history(events: &[Event]) -> Result<BTreeMap<String, i64>, String> {
    let mut view: HashMap<String, i64> = HashMap::new();
    for (i, event) in events.iter().enumerate() {
        match event {
            Event::Add { key, value, .. } => {
                if let Some(last) = view.insert(key.clone(), *value) {
                    return Err(format!(
                        "#{i}: add of {key}={value} while present (last {last})"
                    ));
                }
            }
            Event::Update { key, old, new } => {
                let Some(last) = view.get_mut(key) else {
                    return Err(format!("#{i}: update of {key} while absent"));
                };
                if old != last || new < old {
                    return Err(format!(
                        "#{i}: update of {key} {old}->{new}, last seen {last}"
                    ));
                }
                *last = *new;
            }
            Event::Delete { key, value, .. } => {
                let Some(last) = view.remove(key) else {
                    return Err(format!("#{i}: delete of {key} while absent"));
                };
                if value.is_some_and(|v| v < last) {
                    return Err(format!(
                        "#{i}: delete of {key} with {value:?} older than {last}"
                    ));
                }
            }
        }
    }
    Ok(view.into_iter().collect())
}

fn spawn_loop<Q: Queue<Obj> + 'static>(
    queue: Arc<Q>,
    store: Arc<Indexer<Obj>>,
    recorder: Recorder,
    cancel: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        process_loop(&*queue, &cancel, |deltas, initial| {
            process_deltas(&recorder, &store, deltas, initial)
        })
        .await
    })
}

/// Readers: indexes always agree with the objects.
fn check_indexes(store: &Indexer<Obj>) -> Result<(), String> {
    for ns in NAMESPACES {
        for o in store
            .by_index(NAMESPACE_INDEX, ns)
            .map_err(|e| e.to_string())?
        {
            if o.namespace() != ns {
                return Err(format!("{} in namespace index {ns}", o.key()));
            }
        }
    }
    for group in ["x", "y"] {
        for o in store.by_index("group", group).map_err(|e| e.to_string())? {
            if o.labels().get("group") != Some(group) {
                return Err(format!("{} in group index {group}", o.key()));
            }
        }
    }
    for key in store.list_keys() {
        if let Some(o) = store.get_by_key(&key) {
            if o.key() != key {
                return Err(format!("key {key} holds {}", o.key()));
            }
        }
    }
    Ok(())
}

async fn hammer(seed: u64, kind: Kind) {
    let cancel = CancellationToken::new();
    let recorders = [Recorder::default(), Recorder::default()];
    let (store, queue, task, informer) = match kind {
        Kind::Informer => {
            let informer = SharedIndexInformer::new_manual(
                indexers(),
                SharedInformerOptions {
                    name: "hammer".into(),
                    resync_period: Duration::from_millis(50),
                    queue: QueueKind::RealFifo,
                    ..SharedInformerOptions::default()
                },
            );
            for r in &recorders {
                informer.add_event_handler(r.clone()).unwrap();
            }
            let task = {
                let (informer, cancel) = (informer.clone(), cancel.clone());
                tokio::spawn(async move { informer.run(cancel).await })
            };
            (
                informer.indexer().clone(),
                informer.queue(),
                task,
                Some(informer),
            )
        }
        _ => {
            let store = Arc::new(Indexer::with_indexers(indexers()));
            let r = recorders[0].clone();
            let c = cancel.clone();
            let (queue, task): (Arc<dyn ReflectorStore<Obj>>, _) = match kind {
                Kind::Atomic => {
                    let q = Arc::new(RealFIFO::new());
                    (q.clone(), spawn_loop(q, store.clone(), r, c))
                }
                Kind::NonAtomic => {
                    let q = Arc::new(RealFIFO::with_known_objects(store.clone()));
                    (q.clone(), spawn_loop(q, store.clone(), r, c))
                }
                _ => {
                    let q = Arc::new(DeltaFIFO::new(DeltaFIFOOptions {
                        known_objects: Some(store.clone()),
                        emit_delta_type_replaced: true,
                        transform: None,
                    }));
                    (q.clone(), spawn_loop(q, store.clone(), r, c))
                }
            };
            (store, queue, task, None)
        }
    };
    let source = Arc::new(FakeSource::with_value_stamps(queue));
    source.relist();
    let values = Arc::new(AtomicI64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let runtime = tokio::runtime::Handle::current();
    let read_your_writes = matches!(kind, Kind::Atomic | Kind::NonAtomic | Kind::Informer);

    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (store, done) = (store.clone(), done.clone());
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    check_indexes(&store)?;
                }
                check_indexes(&store)
            })
        })
        .collect();
    let producers: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let (source, store, values, runtime) = (
                source.clone(),
                store.clone(),
                values.clone(),
                runtime.clone(),
            );
            std::thread::spawn(move || -> Result<(), String> {
                let mut rng = Rng(seed.wrapping_mul(1000).wrapping_add(p));
                for _ in 0..OPS {
                    let i = rng.below(KEYS);
                    let ns = NAMESPACES[(i % 3) as usize];
                    let name = format!("o{i}");
                    let key = format!("{ns}/{name}");
                    let value = values.fetch_add(1, Ordering::Relaxed); // replaced by the RV
                    let group = if rng.below(2) == 0 { "x" } else { "y" };
                    let o = labeled(ns_obj(ns, &name, value), &[("group", group)]);
                    let written = match rng.below(100) {
                        0..=39 => Some((source.add(o), false)),
                        40..=69 if source.get(&key).is_some() => Some((source.modify(o), false)),
                        70..=84 => source.delete(&key).map(|tombstone| (tombstone, true)),
                        85..=89 => {
                            if source.get(&key).is_some() {
                                source.modify_drop_watch(o); // a missed event
                            }
                            None
                        }
                        90..=92 => {
                            source.delete_drop_watch(&key);
                            None
                        }
                        93..=95 => {
                            source.relist();
                            None
                        }
                        96..=97 => {
                            source.resync();
                            None
                        }
                        _ => {
                            source.bookmark();
                            None
                        }
                    };
                    // Read-your-writes: wait for our write, then read it (or something newer).
                    if let Some((w, deleted)) =
                        written.filter(|_| read_your_writes && rng.below(10) == 0)
                    {
                        let rv = w.resource_version().to_owned();
                        runtime
                            .block_on(store.wait_for_resource_version(&rv, Duration::from_secs(10)))
                            .map_err(|e| e.to_string())?;
                        match store.get_by_key(&w.key()) {
                            // Present: our write, or something newer (for a deletion, only
                            // something newer: a later add).
                            Some(now)
                                if now.value < w.value || (deleted && now.value == w.value) =>
                            {
                                return Err(format!(
                                    "{} at {} after waiting for {rv}: older",
                                    w.key(),
                                    now.value
                                ));
                            }
                            Some(_) => {}
                            None if deleted => {}
                            // Absent after a write: only a later deletion may explain it.
                            None if source.deleted_after(&w.key(), w.value as u64) => {}
                            None => {
                                return Err(format!(
                                    "{} absent after waiting for {rv} (store at {}), and not \
                                     deleted since",
                                    w.key(),
                                    store.last_resource_version()
                                ));
                            }
                        }
                    }
                }
                Ok(())
            })
        })
        .collect();
    for p in producers {
        p.join()
            .unwrap()
            .unwrap_or_else(|e| panic!("{kind:?}: {e}"));
    }
    // A last relist repairs the missed events, as a reconnect would.
    source.relist();
    let expected: BTreeMap<String, i64> = source
        .snapshot()
        .into_iter()
        .map(|(k, o)| (k, o.value))
        .collect();
    let converged = || {
        let mut now: BTreeMap<String, i64> = BTreeMap::new();
        for o in store.list() {
            now.insert(o.key(), o.value);
        }
        now == expected
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !converged() {
        assert!(
            std::time::Instant::now() < deadline,
            "{kind:?}: the store never converged"
        );
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    // Handlers see what the store saw; wait for their buffers to drain.
    if let Some(informer) = &informer {
        let regs_done = || {
            recorders
                .iter()
                .all(|r| check_history(&r.snapshot()).ok() == Some(expected.clone()))
        };
        while !regs_done() {
            assert!(
                std::time::Instant::now() < deadline,
                "{kind:?}: handlers never caught up"
            );
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        assert!(informer.has_synced());
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        r.join()
            .unwrap()
            .unwrap_or_else(|e| panic!("{kind:?}: reader: {e}"));
    }
    cancel.cancel();
    task.await.unwrap();
    let handlers = if kind == Kind::Informer {
        &recorders[..]
    } else {
        &recorders[..1]
    };
    for (h, recorder) in handlers.iter().enumerate() {
        let view = check_history(&recorder.snapshot())
            .unwrap_or_else(|e| panic!("{kind:?} handler {h}: {e}"));
        assert_eq!(view, expected, "{kind:?} handler {h}: final view");
    }
}

// client-go: TestHammerController.
#[test]
fn hammer_controller() {
    with_seeds(6, |seed| {
        for kind in [Kind::Atomic, Kind::NonAtomic, Kind::Delta, Kind::Informer] {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .unwrap();
            runtime.block_on(hammer(seed, kind));
        }
    });
}
