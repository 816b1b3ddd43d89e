//! The rate-limited queue, ported from client-go's `util/workqueue/rate_limiting_queue_test.go`.

use std::sync::Arc;
use std::time::Duration;

use clientgo_ratelimit::{ItemExponentialBackoffRateLimiter, ItemExponentialFailureRateLimiter};
use clientgo_workqueue::Queue;

const MS: Duration = Duration::from_millis(1);

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn requeues_back_off_per_item_and_forget_resets() {
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    let queue = Queue::rate_limiting(Arc::new(limiter));

    queue.add_rate_limited("one");
    queue.add_rate_limited("one");
    assert_eq!(
        queue.delayed_len(),
        1,
        "the second add keeps the earlier (1 ms) time"
    );
    queue.add_rate_limited("two");
    queue.add_rate_limited("two");
    assert_eq!(queue.num_requeues(&"one"), 2);
    assert_eq!(queue.num_requeues(&"two"), 2);

    tokio::time::advance(MS).await;
    settle().await;
    assert_eq!(queue.len(), 2, "both come due after 1 ms");

    queue.forget(&"one");
    assert_eq!(queue.num_requeues(&"one"), 0);
    assert_eq!(queue.num_requeues(&"two"), 2);

    // After forget the backoff starts over at 1 ms.
    queue.get().await.unwrap().done();
    queue.get().await.unwrap().done();
    queue.add_rate_limited("one");
    tokio::time::advance(MS).await;
    settle().await;
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failing_worker_loop_backs_off_exponentially() {
    let limiter = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
    let queue = Queue::rate_limiting(Arc::new(limiter));
    queue.add("foo");
    let start = tokio::time::Instant::now();
    let mut handed_out_at = Vec::new();
    while handed_out_at.len() < 5 {
        let item = queue.get().await.unwrap();
        handed_out_at.push(start.elapsed());
        item.retry();
    }
    let gaps: Vec<u128> = handed_out_at
        .windows(2)
        .map(|pair| (pair[1] - pair[0]).as_millis())
        .collect();
    assert_eq!(gaps, [5, 10, 20, 40], "each failure doubles the wait");
}

/// Plain adds that re-trigger a failing item make client-go's limiter count a failure per
/// trigger (kubernetes/kubernetes#132805); the time-based limiter counts one per backoff window.
#[tokio::test(start_paused = true)]
async fn re_triggers_inside_the_backoff_window_do_not_escalate_with_time_based_limiter() {
    let per_call = Queue::rate_limiting(Arc::new(ItemExponentialFailureRateLimiter::new(
        5 * MS,
        Duration::from_secs(1000),
    )));
    let over_time = Queue::rate_limiting(Arc::new(ItemExponentialBackoffRateLimiter::new(
        5 * MS,
        Duration::from_secs(1000),
    )));
    for queue in [&per_call, &over_time] {
        // Three reconciles fail within the first backoff window (re-triggered by plain adds).
        for _ in 0..3 {
            queue.add_rate_limited("foo");
        }
    }
    assert_eq!(per_call.num_requeues(&"foo"), 3);
    assert_eq!(over_time.num_requeues(&"foo"), 1);
}

fn exponential(base: Duration) -> Queue<&'static str> {
    Queue::rate_limiting(Arc::new(ItemExponentialFailureRateLimiter::new(
        base,
        Duration::from_secs(1000),
    )))
}

/// How long after `start` the next item comes out.
async fn next_after(queue: &Queue<&'static str>, start: tokio::time::Instant) -> Duration {
    queue.get().await.unwrap().done();
    start.elapsed()
}

#[tokio::test(start_paused = true)]
async fn forget_ends_the_hold_and_resets_the_backoff() {
    let queue = exponential(5 * MS);
    queue.add("foo");
    queue.get().await.unwrap().retry();
    queue.get().await.unwrap().retry();
    assert_eq!(queue.num_requeues(&"foo"), 2);
    queue.get().await.unwrap().forget();
    assert_eq!(queue.num_requeues(&"foo"), 0);
    assert!(
        queue.is_empty() && queue.delayed_len() == 0,
        "forget re-adds nothing"
    );
    queue.add("foo");
    assert_eq!(queue.len(), 1, "the hold ended: a new add goes in line");
}

#[tokio::test(start_paused = true)]
async fn a_guard_dropped_without_an_outcome_is_retried_after_its_backoff() {
    let queue = exponential(5 * MS);
    queue.add("foo");
    let start = tokio::time::Instant::now();
    drop(queue.get().await.unwrap());
    assert_eq!(queue.num_requeues(&"foo"), 1, "counted as a failure");
    assert_eq!(queue.delayed_len(), 1);
    assert_eq!(next_after(&queue, start).await, 5 * MS);
}

#[tokio::test(start_paused = true)]
async fn a_panicking_worker_task_does_not_lose_its_item() {
    let queue = exponential(5 * MS);
    queue.add("foo");
    let start = tokio::time::Instant::now();
    let worker = {
        let queue = queue.clone();
        tokio::spawn(async move {
            let _held = queue.get().await.unwrap();
            panic!("the reconcile panicked");
        })
    };
    assert!(worker.await.unwrap_err().is_panic());
    assert_eq!(queue.num_requeues(&"foo"), 1);
    assert_eq!(
        next_after(&queue, start).await,
        5 * MS,
        "retried after its backoff"
    );
}

#[tokio::test(start_paused = true)]
async fn an_aborted_worker_task_does_not_lose_its_item() {
    let queue = exponential(5 * MS);
    queue.add("foo");
    let start = tokio::time::Instant::now();
    let (taken_tx, taken_rx) = tokio::sync::oneshot::channel();
    let worker = {
        let queue = queue.clone();
        tokio::spawn(async move {
            let held = queue.get().await.unwrap();
            let _ = taken_tx.send(());
            std::future::pending::<()>().await; // a reconcile stuck forever
            held.done();
        })
    };
    taken_rx.await.unwrap();
    worker.abort();
    assert!(worker.await.unwrap_err().is_cancelled());
    assert_eq!(
        next_after(&queue, start).await,
        5 * MS,
        "retried after its backoff"
    );
}

#[tokio::test(start_paused = true)]
async fn after_shut_down_a_dropped_guard_records_no_failure() {
    let queue = exponential(5 * MS);
    queue.add("foo");
    let held = queue.get().await.unwrap();
    let drain = queue.shut_down_with_drain();
    drop(held);
    drain.await;
    assert_eq!(queue.num_requeues(&"foo"), 0);
    assert_eq!(queue.delayed_len(), 0);
    assert!(queue.get().await.is_none());
}
