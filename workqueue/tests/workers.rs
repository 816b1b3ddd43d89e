//! The worker pool: success forgets, errors and panics retry after the backoff, the other keys
//! keep flowing, and cancel drains within its bound with nothing new started. Paused clock.

use std::sync::Arc;
use std::time::Duration;

use clientgo_ratelimit::ItemExponentialFailureRateLimiter;
use clientgo_workqueue::{RateLimitingQueue, WorkerPool, run_workers};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

type Log = Arc<Mutex<Vec<String>>>;

fn queue() -> RateLimitingQueue<Arc<str>> {
    let limiter =
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10));
    RateLimitingQueue::new(Arc::new(limiter))
}

/// Waits (on the paused clock, at most 60 s of it) until `log` holds `n` entries.
async fn wait_for(log: &Log, n: usize) {
    for _ in 0..600 {
        if log.lock().len() >= n {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("only {:?} after 60 s, wanted {n} entries", log.lock());
}

fn count(log: &Log, key: &str) -> usize {
    log.lock().iter().filter(|k| *k == key).count()
}

#[tokio::test(start_paused = true)]
async fn success_forgets_and_an_error_retries_after_the_backoff() {
    let queue = queue();
    let log: Log = Arc::default();
    for key in ["a", "b", "flaky"] {
        queue.add(Arc::from(key));
    }
    let cancel = CancellationToken::new();
    let run = {
        let (queue, log, cancel) = (queue.clone(), log.clone(), cancel.clone());
        tokio::spawn(async move {
            run_workers(
                &queue,
                2,
                |key: Arc<str>| {
                    let log = log.clone();
                    async move {
                        log.lock().push(key.to_string());
                        if &*key == "flaky" && count(&log, "flaky") == 1 {
                            return Err("the first attempt fails");
                        }
                        Ok(())
                    }
                },
                cancel,
            )
            .await
        })
    };
    wait_for(&log, 4).await;
    assert_eq!(count(&log, "flaky"), 2, "retried once: {:?}", log.lock());
    assert_eq!(
        queue.num_requeues(&Arc::from("flaky")),
        0,
        "forgotten after success"
    );
    assert_eq!(queue.num_requeues(&Arc::from("a")), 0);
    cancel.cancel();
    run.await.unwrap();
    assert!(queue.shutting_down());
}

#[tokio::test(start_paused = true)]
async fn a_panicking_reconcile_fails_only_its_key_and_is_retried() {
    let queue = queue();
    let log: Log = Arc::default();
    for key in ["boom", "x", "y"] {
        queue.add(Arc::from(key));
    }
    let cancel = CancellationToken::new();
    let run = {
        let (queue, log, cancel) = (queue.clone(), log.clone(), cancel.clone());
        tokio::spawn(async move {
            // One worker: the panic must not end it, or "x" and "y" would never run.
            run_workers(
                &queue,
                1,
                |key: Arc<str>| {
                    let log = log.clone();
                    async move {
                        log.lock().push(key.to_string());
                        tokio::task::yield_now().await;
                        if &*key == "boom" && count(&log, "boom") == 1 {
                            panic!("reconcile bug");
                        }
                        Ok::<(), String>(())
                    }
                },
                cancel,
            )
            .await
        })
    };
    wait_for(&log, 4).await;
    assert_eq!(count(&log, "boom"), 2, "{:?}", log.lock());
    assert_eq!((count(&log, "x"), count(&log, "y")), (1, 1));
    cancel.cancel();
    run.await.expect("the pool itself never panics");
}

#[tokio::test(start_paused = true)]
async fn cancel_starts_nothing_new_and_drops_what_outlives_the_drain() {
    let queue = queue();
    let started: Log = Arc::default();
    let finished: Log = Arc::default();
    for key in ["slow", "stuck", "later-1", "later-2"] {
        queue.add(Arc::from(key));
    }
    let cancel = CancellationToken::new();
    let run = {
        let (queue, started, finished, cancel) = (
            queue.clone(),
            started.clone(),
            finished.clone(),
            cancel.clone(),
        );
        tokio::spawn(async move {
            WorkerPool::new(2)
                .drain_timeout(Duration::from_secs(5))
                .run(
                    &queue,
                    |key: Arc<str>| {
                        let (started, finished) = (started.clone(), finished.clone());
                        async move {
                            started.lock().push(key.to_string());
                            let work = if &*key == "stuck" { 3600 } else { 2 };
                            tokio::time::sleep(Duration::from_secs(work)).await;
                            finished.lock().push(key.to_string());
                            Ok::<(), String>(())
                        }
                    },
                    cancel,
                )
                .await
        })
    };
    wait_for(&started, 2).await;
    cancel.cancel();
    let began = tokio::time::Instant::now();
    run.await.unwrap();
    // "slow" (2 s) finished within the drain; "stuck" was dropped at the 5 s bound.
    let drained = began.elapsed();
    assert!(
        drained >= Duration::from_secs(5) && drained < Duration::from_secs(6),
        "{drained:?}"
    );
    assert_eq!(*finished.lock(), vec!["slow".to_owned()]);
    assert_eq!(
        *started.lock(),
        vec!["slow".to_owned(), "stuck".to_owned()],
        "nothing new started after cancel"
    );
}
