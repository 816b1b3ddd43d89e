//! The rate-limited queue, ported from client-go's `util/workqueue/rate_limiting_queue_test.go`.

use std::sync::Arc;
use std::time::Duration;

use clientgo_ratelimit::{ItemExponentialBackoffRateLimiter, ItemExponentialFailureRateLimiter};
use clientgo_workqueue::RateLimitingQueue;

const MS: Duration = Duration::from_millis(1);

async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn requeues_back_off_per_item_and_forget_resets() {
    let limiter = ItemExponentialFailureRateLimiter::new(MS, Duration::from_secs(1));
    let queue = RateLimitingQueue::new(Arc::new(limiter));

    queue.add_rate_limited("one");
    queue.add_rate_limited("one");
    assert_eq!(
        queue.waiting_len(),
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
    drop(queue.get().await.unwrap());
    drop(queue.get().await.unwrap());
    queue.add_rate_limited("one");
    tokio::time::advance(MS).await;
    settle().await;
    assert_eq!(queue.len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_failing_worker_loop_backs_off_exponentially() {
    let limiter = ItemExponentialFailureRateLimiter::new(5 * MS, Duration::from_secs(1000));
    let queue = RateLimitingQueue::new(Arc::new(limiter));
    queue.add("foo");
    let start = tokio::time::Instant::now();
    let mut handed_out_at = Vec::new();
    while handed_out_at.len() < 5 {
        let item = queue.get().await.unwrap();
        handed_out_at.push(start.elapsed());
        queue.add_rate_limited(*item.item());
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
    let per_call = RateLimitingQueue::new(Arc::new(ItemExponentialFailureRateLimiter::new(
        5 * MS,
        Duration::from_secs(1000),
    )));
    let over_time = RateLimitingQueue::new(Arc::new(ItemExponentialBackoffRateLimiter::new(
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
