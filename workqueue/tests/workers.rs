//! The worker pool: success forgets, errors and panics retry after the backoff, the other keys
//! keep flowing, and cancel drains within its bound with nothing new started. Paused clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use clientgo_ratelimit::ItemExponentialFailureRateLimiter;
use clientgo_workqueue::{RateLimitingQueue, WorkerPool, WorkerStats, run_workers};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

type Log = Arc<Mutex<Vec<String>>>;

/// A rate-limited queue (5 ms doubling to 10 s) holding `keys`.
fn queue_of(keys: &[&str]) -> RateLimitingQueue<Arc<str>> {
    let limiter =
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10));
    let queue = RateLimitingQueue::new(Arc::new(limiter));
    for key in keys {
        queue.add(Arc::from(*key));
    }
    queue
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

/// Runs `pool` over `queue` in a task of its own.
fn spawn_pool<F, Fut>(
    pool: WorkerPool,
    queue: &RateLimitingQueue<Arc<str>>,
    reconcile: F,
    cancel: CancellationToken,
) -> JoinHandle<()>
where
    F: Fn(Arc<str>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    let queue = queue.clone();
    tokio::spawn(async move { pool.run(&queue, reconcile, cancel).await })
}

/// A reconcile's future.
type Work = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;

/// A reconcile that logs each key in `started`, works 2 s (3600 s for "stuck"), then logs it
/// in `finished`.
fn timed_work(started: &Log, finished: &Log) -> impl Fn(Arc<str>) -> Work + Send + Sync + 'static {
    let (started, finished) = (started.clone(), finished.clone());
    move |key: Arc<str>| {
        let (started, finished) = (started.clone(), finished.clone());
        Box::pin(async move {
            started.lock().push(key.to_string());
            let work = if &*key == "stuck" { 3600 } else { 2 };
            tokio::time::sleep(Duration::from_secs(work)).await;
            finished.lock().push(key.to_string());
            Ok(())
        })
    }
}

fn count(log: &Log, key: &str) -> usize {
    log.lock().iter().filter(|k| *k == key).count()
}

#[tokio::test(start_paused = true)]
async fn success_forgets_and_an_error_retries_after_the_backoff() {
    let queue = queue_of(&["a", "b", "flaky"]);
    let log: Log = Arc::default();
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
    let queue = queue_of(&["boom", "x", "y"]);
    let log: Log = Arc::default();
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
    let queue = queue_of(&["slow", "stuck", "later-1", "later-2"]);
    let started: Log = Arc::default();
    let finished: Log = Arc::default();
    let cancel = CancellationToken::new();
    let run = spawn_pool(
        WorkerPool::new(2).drain_timeout(Duration::from_secs(5)),
        &queue,
        timed_work(&started, &finished),
        cancel.clone(),
    );
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

#[tokio::test(start_paused = true)]
async fn the_stats_count_each_outcome() {
    let queue = queue_of(&["ok", "err", "boom"]);
    let log: Log = Arc::default();
    let stats = WorkerStats::default();
    let cancel = CancellationToken::new();
    let run = spawn_pool(
        WorkerPool::new(2).stats(stats.clone()),
        &queue,
        {
            let log = log.clone();
            move |key: Arc<str>| {
                let log = log.clone();
                async move {
                    log.lock().push(key.to_string());
                    let first = count(&log, &key) == 1;
                    match &*key {
                        "err" if first => Err("failed once".to_owned()),
                        "boom" if first => panic!("reconcile bug"),
                        _ => Ok(()),
                    }
                }
            }
        },
        cancel.clone(),
    );
    wait_for(&log, 5).await;
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(stats.succeeded.get(), 3, "{:?}", log.lock());
    assert_eq!((stats.failed.get(), stats.panicked.get()), (2, 1));
    assert_eq!((stats.cancelled.get(), stats.active.get()), (0, 0));
}

#[tokio::test(start_paused = true)]
async fn dropping_run_cancels_the_reconciles_in_hand_and_shuts_the_queue_down() {
    let queue = queue_of(&["stuck"]);
    let started: Log = Arc::default();
    let finished: Log = Arc::default();
    let stats = WorkerStats::default();
    let run = spawn_pool(
        WorkerPool::new(1).stats(stats.clone()),
        &queue,
        timed_work(&started, &finished),
        CancellationToken::new(),
    );
    wait_for(&started, 1).await;
    assert_eq!(stats.active.get(), 1);
    // As an elector does when the lease is lost: the future is dropped, not cancelled.
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    assert!(queue.shutting_down(), "the queue was shut down");
    assert_eq!((stats.active.get(), stats.cancelled.get()), (0, 1));
    assert!(finished.lock().is_empty(), "the reconcile never ran on");
    // The held key ended as done before the queue could re-queue it: nothing is waiting.
    assert_eq!(queue.len(), 0);
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(queue.len(), 0);
}
