//! The worker pool: success forgets, errors and panics retry after the backoff, the other keys
//! keep flowing, and cancel drains within its bound with nothing new started. Paused clock.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use clientgo_ratelimit::ItemExponentialFailureRateLimiter;
use clientgo_workqueue::{Queue, Reconciled, WorkerPool, WorkerStats, run_workers};
use parking_lot::Mutex;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

type Log = Arc<Mutex<Vec<String>>>;

/// A rate-limited queue (5 ms doubling to 10 s) holding `keys`.
fn queue_of(keys: &[&str]) -> Queue<Arc<str>> {
    let limiter =
        ItemExponentialFailureRateLimiter::new(Duration::from_millis(5), Duration::from_secs(10));
    let queue = Queue::rate_limiting(Arc::new(limiter));
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
    queue: &Queue<Arc<str>>,
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
                move |key: Arc<str>| {
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
                move |key: Arc<str>| {
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
    let mut started = started.lock().clone();
    started.sort(); // the two workers are tasks: either may start first
    assert_eq!(
        started,
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

/// Two CPU-bound reconciles that never yield: each spins until the other has arrived. With
/// workers as futures of one task (or tasks that tokio never moves to an idle thread) the
/// second starts only after the first gave up; as tasks that run in parallel, both run at
/// once. Bounded: each spins at most 60 s of wall time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_run_in_parallel_on_the_runtimes_threads() {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let queue = queue_of(&[]);
    let arrived = Arc::new(AtomicUsize::new(0));
    let running = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let done: Log = Arc::default();
    let cancel = CancellationToken::new();
    let run = spawn_pool(
        WorkerPool::new(2),
        &queue,
        {
            let counts = (arrived.clone(), running.clone(), most.clone(), done.clone());
            move |key: Arc<str>| {
                let (arrived, running, most, done) = counts.clone();
                async move {
                    arrived.fetch_add(1, Ordering::SeqCst);
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    let bound = std::time::Instant::now() + Duration::from_secs(60);
                    // No await in here: this worker holds its thread until the other arrives.
                    while arrived.load(Ordering::SeqCst) < 2 && std::time::Instant::now() < bound {
                        std::hint::spin_loop();
                    }
                    running.fetch_sub(1, Ordering::SeqCst);
                    done.lock().push(key.to_string());
                    Ok(())
                }
            }
        },
        cancel.clone(),
    );
    // The keys come once the workers wait in `get`: the first woken hands the second key on
    // from inside its own poll, the path where tokio would keep the second worker in the
    // first one's thread (its LIFO slot) unless the worker yields before reconciling.
    tokio::time::sleep(Duration::from_millis(100)).await;
    queue.add(Arc::from("a"));
    queue.add(Arc::from("b"));
    for _ in 0..13_000 {
        if done.lock().len() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    cancel.cancel();
    run.await.unwrap();
    assert_eq!(done.lock().len(), 2, "both reconciles finished");
    assert_eq!(
        most.load(Ordering::SeqCst),
        2,
        "the two reconciles ran at the same time, on two threads"
    );
}

/// The fence across threads: a reconcile that keeps yielding (polled again and again on the
/// runtime's threads) is never polled again once the future of `run` has been dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_reconcile_is_polled_after_the_pool_is_dropped() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let queue = queue_of(&["busy-1", "busy-2"]);
    let polls = Arc::new(AtomicU64::new(0));
    let stats = WorkerStats::default();
    let run = spawn_pool(
        WorkerPool::new(2).stats(stats.clone()),
        &queue,
        {
            let polls = polls.clone();
            move |_key: Arc<str>| {
                let polls = polls.clone();
                async move {
                    loop {
                        polls.fetch_add(1, Ordering::SeqCst);
                        tokio::task::yield_now().await;
                    }
                }
            }
        },
        CancellationToken::new(),
    );
    for _ in 0..6000 {
        if polls.load(Ordering::SeqCst) > 1000 && stats.active.get() == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(stats.active.get(), 2, "both reconciles are running");
    run.abort();
    assert!(run.await.unwrap_err().is_cancelled());
    let at_fence = polls.load(Ordering::SeqCst);
    for _ in 0..2000 {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        polls.load(Ordering::SeqCst),
        at_fence,
        "a reconcile was polled after the pool's future was dropped"
    );
    assert_eq!((stats.active.get(), stats.cancelled.get()), (0, 2));
    assert!(queue.shutting_down());
}

/// With a lease deadline: a reconcile still in hand when the deadline passes is dropped
/// unfinished (its key retried), nothing starts while the deadline is past, and a renewal
/// lets the workers go on. Then the clock jumps past the deadline at once, as for a process
/// frozen and resumed: the reconcile whose timer fired in the same jump is dropped unpolled.
#[tokio::test(start_paused = true)]
async fn past_the_lease_deadline_nothing_starts_and_nothing_in_hand_goes_on() {
    use tokio::time::Instant;
    let queue = queue_of(&["work-3600"]);
    let started: Log = Arc::default();
    let finished: Log = Arc::default();
    let stats = WorkerStats::default();
    let (renew, valid_until) =
        tokio::sync::watch::channel(Instant::now() + Duration::from_secs(10));
    let cancel = CancellationToken::new();
    // Each key works for the seconds its name ends in.
    let work = {
        let (started, finished) = (started.clone(), finished.clone());
        move |key: Arc<str>| {
            let (started, finished) = (started.clone(), finished.clone());
            async move {
                started.lock().push(key.to_string());
                let seconds = key.rsplit('-').next().unwrap().parse().unwrap();
                tokio::time::sleep(Duration::from_secs(seconds)).await;
                finished.lock().push(key.to_string());
                Ok(())
            }
        }
    };
    let run = spawn_pool(
        WorkerPool::new(2).stats(stats.clone()).fence(valid_until),
        &queue,
        work,
        cancel.clone(),
    );
    wait_for(&started, 1).await;
    // The 10 s deadline passes while "work-3600" is in hand.
    tokio::time::sleep(Duration::from_secs(11)).await;
    assert_eq!((stats.active.get(), stats.cancelled.get()), (0, 1));
    queue.add(Arc::from("work-2"));
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(
        *started.lock(),
        vec!["work-3600".to_owned()],
        "nothing starts past the deadline"
    );
    // A renewal: the workers go on with "work-2" and the retried "work-3600".
    renew.send_replace(Instant::now() + Duration::from_secs(10));
    wait_for(&started, 3).await;
    wait_for(&finished, 1).await;
    assert_eq!(*finished.lock(), vec!["work-2".to_owned()]);
    assert_eq!(stats.succeeded.get(), 1);
    // Frozen: a 15 s reconcile starts, then the clock jumps 20 s at once. Its timer and the
    // deadline both passed; the deadline is checked first, so it never finishes.
    queue.add(Arc::from("work-15"));
    wait_for(&started, 4).await;
    tokio::time::advance(Duration::from_secs(20)).await;
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(*finished.lock(), vec!["work-2".to_owned()]);
    assert_eq!(stats.cancelled.get(), 3, "work-3600 twice, work-15 once");
    cancel.cancel();
    run.await.unwrap();
}

/// `Reconciled::RequeueAfter`: the key comes back once its delay has passed, its failure
/// history forgotten (controller-runtime's `RequeueAfter`); an error still backs off.
#[tokio::test(start_paused = true)]
async fn a_requeue_after_brings_the_key_back_after_its_delay_with_its_failures_forgotten() {
    let queue = queue_of(&["poll"]);
    let start = tokio::time::Instant::now();
    let runs: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let cancel = CancellationToken::new();
    let task = {
        let (queue, runs) = (queue.clone(), runs.clone());
        let reconcile = move |_key: Arc<str>| {
            let runs = runs.clone();
            async move {
                let run = {
                    let mut runs = runs.lock();
                    runs.push(start.elapsed());
                    runs.len()
                };
                match run {
                    1 => Err("not yet".to_owned()),
                    _ => Ok(Reconciled::RequeueAfter(Duration::from_secs(30))),
                }
            }
        };
        let cancel = cancel.clone();
        tokio::spawn(async move { WorkerPool::new(2).run(&queue, reconcile, cancel).await })
    };
    for _ in 0..2000 {
        if runs.lock().len() >= 4 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let runs = runs.lock().clone();
    assert!(runs.len() >= 4, "{runs:?}");
    // The error: back after its 5 ms backoff. Each success: back 30 s later.
    assert!(runs[1] - runs[0] < Duration::from_secs(1), "{runs:?}");
    for pair in runs[1..4].windows(2) {
        let gap = pair[1] - pair[0];
        assert!(
            gap >= Duration::from_secs(30) && gap < Duration::from_secs(31),
            "{runs:?}"
        );
    }
    assert_eq!(queue.num_requeues(&Arc::from("poll")), 0, "forgotten");
    cancel.cancel();
    task.await.unwrap();
}

/// Every queue can delay: on one without a rate limiter a requeue after a delay comes back
/// once the delay has passed, and not before.
#[tokio::test(start_paused = true)]
async fn a_requeue_after_on_a_queue_without_a_rate_limiter_comes_back_after_the_delay() {
    let queue: Queue<Arc<str>> = Queue::new();
    queue.add(Arc::from("poll"));
    let log: Log = Arc::default();
    let cancel = CancellationToken::new();
    let start = tokio::time::Instant::now();
    let task = {
        let (queue, log, cancel) = (queue.clone(), log.clone(), cancel.clone());
        let reconcile = move |key: Arc<str>| {
            let log = log.clone();
            async move {
                log.lock().push(key.to_string());
                Ok::<_, String>(Reconciled::RequeueAfter(Duration::from_secs(10)))
            }
        };
        tokio::spawn(async move { WorkerPool::new(1).run(&queue, reconcile, cancel).await })
    };
    wait_for(&log, 1).await;
    tokio::time::sleep(Duration::from_secs(9)).await;
    assert_eq!(log.lock().len(), 1, "not before the delay");
    wait_for(&log, 2).await;
    assert!(start.elapsed() >= Duration::from_secs(10));
    cancel.cancel();
    task.await.unwrap();
}
