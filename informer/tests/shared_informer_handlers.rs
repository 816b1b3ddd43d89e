//! Shared informer handlers under stress: a slow handler next to a fast one, handlers added
//! and removed from many threads (client-go's `TestSharedInformerHandlerAbuse`), and why a
//! cache has not synced. A panicking handler is in `panics.rs`.

mod cache_support;

use std::sync::Arc;
use std::time::Duration;

use cache_support::informers::*;
use cache_support::{Event, FakeSource, Obj, Recorder, eventually, ns_obj, obj, rv};
use clientgo_informer::{
    InformerError, NotSyncedReason, Registration, ResourceEventHandlerFuncs, wait_for_cache_sync,
};

// A slow handler never blocks a fast one, nor the cache.
#[tokio::test(flavor = "multi_thread", worker_threads = 3)]
async fn slow_handler_does_not_block_a_fast_one() {
    let informer = informer(Duration::ZERO);
    // The slow handler takes 1 ms per notification until the gate opens.
    let gate_open = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let slow = Recorder::default();
    let slow_handler = {
        let (gate_open, slow) = (gate_open.clone(), slow.clone());
        ResourceEventHandlerFuncs::new().add_func(move |o, initial| {
            while !gate_open.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(1)); // the handler's own slowness
            }
            clientgo_informer::ResourceEventHandler::on_add(&slow, o, initial);
        })
    };
    let fast = Recorder::default();
    let slow_reg = informer.add_event_handler(slow_handler).unwrap();
    informer.add_event_handler(fast.clone()).unwrap();
    let (cancel, task) = start(&informer);
    for i in 0..200 {
        informer.queue().add(ns_obj("ns", &format!("p{i}"), i));
    }
    eventually("the fast handler saw everything", WAIT, || {
        fast.len() == 200
    })
    .await;
    assert_eq!(
        informer.indexer().len(),
        200,
        "the cache is not held back either"
    );
    assert_eq!(slow.len(), 0);
    assert_eq!(
        slow_reg.pending(),
        200,
        "the slow handler's backlog is buffered"
    );
    gate_open.store(true, std::sync::atomic::Ordering::Relaxed);
    eventually("the slow handler caught up", WAIT, || slow.len() == 200).await;
    let values: Vec<i64> = slow
        .snapshot()
        .iter()
        .map(|e| match e {
            Event::Add { value, .. } => *value,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(values, (0..200).collect::<Vec<_>>(), "in order");
    stop(cancel, task).await;
}

// Where a handler runs: a non-blocking one on its registration's task (here the test's
// one thread), any other on the blocking pool; a long backlog for a non-blocking handler
// still lets the other tasks of the thread run (tokio's cooperative budget).
#[tokio::test(flavor = "current_thread")]
async fn a_nonblocking_handler_runs_on_the_task_and_yields() {
    let informer = informer(Duration::ZERO);
    let here = std::thread::current().id();
    let ticks = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let on_task = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let on_pool = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let nonblocking = {
        let (ticks, on_task) = (ticks.clone(), on_task.clone());
        ResourceEventHandlerFuncs::new()
            .add_func(move |_: &Arc<Obj>, _| {
                let tick = ticks.load(std::sync::atomic::Ordering::Relaxed);
                on_task.lock().push((std::thread::current().id(), tick));
            })
            .nonblocking()
    };
    let blocking = {
        let on_pool = on_pool.clone();
        ResourceEventHandlerFuncs::new()
            .add_func(move |_: &Arc<Obj>, _| on_pool.lock().push(std::thread::current().id()))
    };
    assert!(clientgo_informer::ResourceEventHandler::is_nonblocking(
        &nonblocking
    ));
    assert!(!clientgo_informer::ResourceEventHandler::is_nonblocking(
        &blocking
    ));
    informer.add_event_handler(nonblocking).unwrap();
    informer.add_event_handler(blocking).unwrap();
    let ticker = {
        let ticks = ticks.clone();
        tokio::spawn(async move {
            loop {
                ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                tokio::task::yield_now().await;
            }
        })
    };
    const N: usize = 2_000;
    for i in 0..N {
        informer
            .queue()
            .add(ns_obj("ns", &format!("p{i}"), i as i64));
    }
    let (cancel, task) = start(&informer);
    eventually("both handlers saw everything", WAIT, || {
        on_task.lock().len() == N && on_pool.lock().len() == N
    })
    .await;
    ticker.abort();
    let calls = on_task.lock().clone();
    assert!(
        calls.iter().all(|(thread, _)| *thread == here),
        "the non-blocking handler ran on the runtime's thread"
    );
    assert!(
        on_pool.lock().iter().all(|thread| *thread != here),
        "the other handler ran on the blocking pool"
    );
    // The longest run of calls with no tick of the other task between them: a couple of
    // tokio's budgets of 128 polls (the ticker's `yield_now` waits for the scheduler's next
    // round); without the yield point all 2,000 ran in a row.
    let longest = calls
        .chunk_by(|a, b| a.1 == b.1)
        .map(|run| run.len())
        .max()
        .unwrap();
    assert!(
        longest <= 512,
        "the other task ran while the backlog was handled: {longest} calls in a row"
    );
    stop(cancel, task).await;
}

#[tokio::test(start_paused = true)]
async fn wait_for_cache_sync_says_why() {
    let informer = informer(Duration::ZERO);
    let reg: Registration<Obj> = informer.add_event_handler(Recorder::default()).unwrap();
    let err = wait_for_cache_sync(&[&informer, &reg], Duration::from_secs(2))
        .await
        .unwrap_err();
    assert_eq!(err.waited, Duration::from_secs(2));
    assert_eq!(
        err.not_synced[0],
        ("pods".to_owned(), NotSyncedReason::NotStarted)
    );
    assert_eq!(err.not_synced[1].1, NotSyncedReason::NoList);
    assert!(
        err.to_string()
            .starts_with("caches not synced after 2s: pods: the informer was not started"),
        "{err}"
    );

    let (cancel, task) = start(&informer);
    let err = wait_for_cache_sync(&[&informer], Duration::from_secs(2))
        .await
        .unwrap_err();
    assert_eq!(
        err.not_synced[0].1,
        NotSyncedReason::NoList,
        "a manual informer, not fed"
    );
    informer
        .queue()
        .replace(vec![rv(obj("a", 1), 3)], "3".into());
    wait_for_cache_sync(&[&informer, &reg], Duration::from_secs(2))
        .await
        .unwrap();
    assert_eq!(informer.last_sync_resource_version(), "", "no reflector");
    assert_eq!(informer.indexer().last_resource_version(), "3");
    stop(cancel, task).await;
    let err = wait_for_cache_sync(&[&self::informer(Duration::ZERO)], Duration::ZERO).await;
    assert!(err.is_err());
}

// client-go: TestSharedInformerHandlerAbuse: handlers added and removed from many threads
// while events flow, then the informer stops under them. Seeded; prints its seed on failure.
#[test]
fn shared_informer_handler_abuse() {
    cache_support::with_seeds(3, |seed| {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(handler_abuse(seed));
    });
}

async fn handler_abuse(seed: u64) {
    let informer = informer(Duration::from_secs(1));
    let (cancel, task) = start(&informer);
    let workers: Vec<_> = (0..8)
        .map(|w| {
            let informer = informer.clone();
            std::thread::spawn(move || {
                let mut rng = cache_support::Rng(seed * 100 + w);
                let mut handles = Vec::new();
                loop {
                    if rng.below(2) == 0 {
                        match informer.add_event_handler_with_resync(
                            Recorder::default(),
                            Duration::from_secs(1),
                        ) {
                            Ok(handle) => handles.push(handle),
                            Err(InformerError::Stopped { .. }) => return,
                            Err(other) => panic!("{other}"),
                        }
                    } else if !handles.is_empty() {
                        let i = rng.below(handles.len() as u64) as usize;
                        informer.remove_event_handler(&handles.swap_remove(i));
                    }
                    std::thread::yield_now();
                }
            })
        })
        .collect();
    let source = FakeSource::new(informer.queue());
    let mut rng = cache_support::Rng(seed);
    for i in 0..2000 {
        match rng.below(3) {
            0 => drop(source.add(obj(&format!("pod{}", rng.below(50)), i))),
            1 => drop(source.modify(obj(&format!("pod{}", rng.below(50)), i))),
            _ => drop(source.delete(&format!("pod{}", rng.below(50)))),
        }
        if i % 100 == 0 {
            tokio::task::yield_now().await;
        }
    }
    stop(cancel, task).await;
    for w in workers {
        w.join().unwrap();
    }
    assert!(informer.is_stopped());
}
