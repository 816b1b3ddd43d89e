//! Back-pressure between the reflector and a bounded RealFIFO: with a consumer slower than
//! the watch (a slow index function or process loop), the queue stays within its capacity
//! and the reflector waits, instead of the queue growing with the backlog; nothing is lost
//! and the order holds. And between the process loop and a slow handler: its buffer stays
//! within its limit.

mod reflector_support;

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::WatchEvent;
use clientgo_informer::{
    DEFAULT_QUEUE_CAPACITY, Delta, RealFIFO, Reflector, ReflectorOptions, ReflectorStore,
    ResourceEventHandlerFuncs, SharedIndexInformer, SharedInformerOptions,
};
use reflector_support::*;
use tokio_util::sync::CancellationToken;

const CAPACITY: usize = 50;
const EVENTS: usize = 2_000;

#[tokio::test(start_paused = true)]
async fn the_queue_stays_bounded_with_a_slow_consumer() {
    let (watch, feed) = fed();
    let mut watch = Some(watch);
    let lw = FakeLw::new(
        |_, _| Ok(list("1", vec![])),
        move |_, _| Ok(watch.take().unwrap_or_else(|| open_with(vec![]))),
    )
    .without_watch_list();
    let queue = Arc::new(RealFIFO::<Pod>::new().with_capacity(CAPACITY));
    let reflector = Arc::new(Reflector::new(
        lw.clone(),
        queue.clone() as Arc<dyn ReflectorStore<Pod>>,
        ReflectorOptions {
            name: "bounded".into(),
            ..ReflectorOptions::default()
        },
    ));
    let cancel = CancellationToken::new();
    let run = {
        let (reflector, cancel) = (reflector.clone(), cancel.clone());
        tokio::spawn(async move { reflector.run(cancel).await })
    };
    lw.wait_for_watch_calls(1).await;
    // The whole backlog is on the wire at once.
    for i in 0..EVENTS {
        feed.send(WatchEvent::Added(pod(
            &format!("p{i}"),
            &(i + 2).to_string(),
        )));
    }

    let mut longest = 0;
    let mut seen = Vec::new();
    while seen.len() < EVENTS + 1 {
        longest = longest.max(queue.len());
        let popped = queue
            .pop(|deltas, _| match deltas.into_iter().next() {
                Some(Delta::Added(pod)) => Some(pod.metadata.resource_version.clone()),
                _ => None, // the initial (empty) relist
            })
            .await
            .unwrap();
        seen.push(popped);
        // The slow consumer.
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        longest <= CAPACITY,
        "the queue grew to {longest} (capacity {CAPACITY})"
    );
    assert!(
        longest >= CAPACITY / 2,
        "the queue never filled ({longest}): the test did not exercise back-pressure"
    );
    let expected: Vec<Option<String>> = std::iter::once(None)
        .chain((0..EVENTS).map(|i| Some((i + 2).to_string())))
        .collect();
    assert_eq!(seen, expected, "every event, in order");
    cancel.cancel();
    run.await.unwrap();
}

// An informer's queue is bounded by its `queue_capacity` (the default otherwise): the
// reflector would wait once this many changes wait for the process loop.
#[test]
fn an_informer_queue_has_its_capacity() {
    for (capacity, expected) in [(Some(CAPACITY), CAPACITY), (None, DEFAULT_QUEUE_CAPACITY)] {
        let informer = SharedIndexInformer::<Pod>::new_manual(
            Default::default(),
            SharedInformerOptions {
                queue_capacity: capacity,
                ..SharedInformerOptions::default()
            },
        );
        let queue = informer.queue();
        for i in 0..expected {
            assert!(queue.has_room(), "{capacity:?}: full after {i}");
            queue.add(pod(&format!("p{i}"), &(i + 1).to_string()));
        }
        assert!(!queue.has_room(), "{capacity:?}: room after {expected}");
    }
}

/// Polls `condition` every millisecond (real time: a blocked handler holds tokio's paused
/// clock back), at most ten seconds.
async fn within_ten_seconds(what: &str, condition: impl Fn() -> bool) {
    for _ in 0..10_000 {
        if condition() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("not within ten seconds: {what}");
}

// A handler far behind holds the process loop back once its buffer reaches the limit,
// instead of its buffer growing with everything the informer receives.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_handler_bounds_its_buffer() {
    const LIMIT: usize = 20;
    const CHANGES: usize = 200;
    let informer = SharedIndexInformer::<Pod>::new_manual(
        Default::default(),
        SharedInformerOptions {
            handler_buffer_limit: Some(LIMIT),
            ..SharedInformerOptions::default()
        },
    );
    // The handler handles one notification per permit.
    let (permits, gate) = std::sync::mpsc::channel::<()>();
    let gate = std::sync::Mutex::new(gate);
    let registration = informer
        .add_event_handler(
            ResourceEventHandlerFuncs::new().add_func(move |_: &Arc<Pod>, _| {
                gate.lock().unwrap().recv().unwrap();
            }),
        )
        .unwrap();
    let cancel = CancellationToken::new();
    let run = {
        let (informer, cancel) = (informer.clone(), cancel.clone());
        tokio::spawn(async move { informer.run(cancel).await })
    };
    for i in 0..CHANGES {
        informer
            .queue()
            .add(pod(&format!("p{i}"), &(i + 1).to_string()));
    }
    within_ten_seconds("the buffer fills", || registration.pending() == LIMIT).await;
    // The loop waits: nothing more is applied or buffered while the handler is stuck.
    for _ in 0..50 {
        tokio::task::yield_now().await;
    }
    assert_eq!(registration.pending(), LIMIT);
    assert_eq!(informer.indexer().len(), LIMIT);

    for _ in 0..CHANGES {
        permits.send(()).unwrap();
    }
    within_ten_seconds("every change handled", || {
        informer.indexer().len() == CHANGES && registration.pending() == 0
    })
    .await;
    cancel.cancel();
    run.await.unwrap();
}
