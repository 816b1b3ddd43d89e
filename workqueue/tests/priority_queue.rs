//! The priority queue's own rules: order, coalescing, aging, retries and metrics.
//!
//! The guarantees it shares with the plain queue are checked in `queue.rs` (its shared tests
//! run against a priority queue too). Every test here runs on tokio's paused clock.

use std::sync::Arc;
use std::time::Duration;

use clientgo_ratelimit::ItemExponentialFailureRateLimiter;
use clientgo_workqueue::{
    AddOptions, PRIORITY_LOW, PRIORITY_NORMAL, PrometheusMetricsProvider, Queue,
};
use prometheus_client::registry::Registry;

const MS: Duration = Duration::from_millis(1);

fn queue() -> Queue<&'static str> {
    Queue::builder()
        .rate_limiter(Arc::new(ItemExponentialFailureRateLimiter::new(
            5 * MS,
            Duration::from_secs(1000),
        )))
        .priority()
        .build()
}

/// Takes the next item and ends its hold with `done`.
async fn next(queue: &Queue<&'static str>) -> &'static str {
    let held = queue.get().await.expect("not shut down");
    let item = *held;
    held.done();
    item
}

/// Takes every item in line, in order.
async fn all_in_line(queue: &Queue<&'static str>) -> Vec<&'static str> {
    let mut out = Vec::new();
    while !queue.is_empty() {
        out.push(next(queue).await);
    }
    out
}

/// Lets the timer task run after the clock moved.
async fn settle() {
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
}

#[tokio::test(start_paused = true)]
async fn highest_priority_first_and_fifo_within_a_priority() {
    let queue = queue();
    queue.add_with("low-1", AddOptions::low());
    queue.add("normal-1");
    queue.add_with("high-1", AddOptions::priority(10));
    queue.add_with("low-2", AddOptions::low());
    queue.add("normal-2");
    queue.add_with("high-2", AddOptions::priority(10));
    assert_eq!(
        all_in_line(&queue).await,
        ["high-1", "high-2", "normal-1", "normal-2", "low-1", "low-2"]
    );
}

#[tokio::test(start_paused = true)]
async fn an_add_of_a_waiting_item_keeps_the_higher_priority() {
    let queue = queue();
    queue.add_with("a", AddOptions::low());
    queue.add_with("b", AddOptions::low());
    queue.add("c");
    queue.add("b"); // raised to normal: it joins the normal items, behind c
    queue.add_with("c", AddOptions::low()); // a lower add does not lower c
    assert_eq!(queue.len(), 3, "adds coalesce");
    assert_eq!(all_in_line(&queue).await, ["c", "b", "a"]);
}

#[tokio::test(start_paused = true)]
async fn an_add_while_processing_goes_back_in_line_with_its_priority() {
    let queue = queue();
    queue.add("k");
    let held = queue.get().await.unwrap();
    queue.add_with("low", AddOptions::low());
    queue.add_with("k", AddOptions::low());
    queue.add_with("k", AddOptions::priority(5)); // the higher of the two wins
    assert_eq!(queue.len(), 1, "k waits for its worker, out of line");
    held.done();
    assert_eq!(all_in_line(&queue).await, ["k", "low"]);
}

#[tokio::test(start_paused = true)]
async fn delayed_adds_keep_the_earlier_time_and_the_higher_priority() {
    let queue = queue();
    let later = |priority, after| AddOptions {
        priority,
        after: Some(after),
        rate_limited: false,
    };
    queue.add_with("a", later(PRIORITY_LOW, 20 * MS));
    queue.add_with("a", later(10, 50 * MS)); // later: the time stays, the priority rises
    queue.add_with("b", later(PRIORITY_NORMAL, 10 * MS));
    assert_eq!(queue.delayed_len(), 2);
    tokio::time::advance(10 * MS).await;
    settle().await;
    assert_eq!(queue.len(), 1, "b came due");
    tokio::time::advance(10 * MS).await;
    settle().await;
    assert_eq!(
        all_in_line(&queue).await,
        ["a", "b"],
        "a came due at 20 ms, at 10"
    );
    tokio::time::advance(Duration::from_secs(1)).await;
    settle().await;
    assert!(queue.is_empty(), "the superseded time fires nothing");
}

#[tokio::test(start_paused = true)]
async fn a_rate_limited_add_takes_the_shorter_delay() {
    let queue = queue();
    let start = tokio::time::Instant::now();
    queue.add_with(
        "a",
        AddOptions {
            priority: PRIORITY_NORMAL,
            after: Some(Duration::from_secs(60)),
            rate_limited: true,
        },
    );
    assert_eq!(queue.num_requeues(&"a"), 1);
    assert_eq!(next(&queue).await, "a");
    assert_eq!(start.elapsed(), 5 * MS, "the limiter's 5 ms, not 60 s");
}

#[tokio::test(start_paused = true)]
async fn a_retried_item_keeps_its_priority() {
    let queue = queue();
    queue.add_with("low", AddOptions::low());
    queue.get().await.unwrap().retry();
    tokio::time::advance(5 * MS).await;
    settle().await;
    assert_eq!(queue.len(), 1, "the retry came due");
    queue.add("normal");
    queue.add_with("low-later", AddOptions::low());
    assert_eq!(
        all_in_line(&queue).await,
        ["normal", "low", "low-later"],
        "the retry came back at low priority: behind a later normal add"
    );
}

/// The aging bound under a steady load above it: one worker takes 1 ms per item while
/// normal-priority items arrive at two per millisecond, for ever. A low item, 100 levels
/// below, is handed out before every normal item added more than 100 × aging = 1 s after it,
/// so its wait is bounded by the time to serve the items added before then.
#[tokio::test(start_paused = true)]
async fn aging_bounds_the_wait_under_a_steady_high_priority_load() {
    const AGING: Duration = Duration::from_millis(10);
    let queue: Queue<u64> = Queue::builder().default_rate_limiter().aging(AGING).build();
    let start = tokio::time::Instant::now();
    let producer = {
        let queue = queue.clone();
        tokio::spawn(async move {
            // Item i is added at i × 0.5 ms: its add time is known from its number.
            for i in 1.. {
                queue.add(i);
                tokio::time::sleep(Duration::from_micros(500)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_millis(100)).await; // a backlog builds up
    const LOW: u64 = 0;
    let low_added = start.elapsed();
    queue.add_with(LOW, AddOptions::low());
    let bound = low_added + AGING * (PRIORITY_NORMAL - PRIORITY_LOW) as u32;
    let mut served_before = 0u64;
    let waited = loop {
        let held = queue.get().await.unwrap();
        let item = *held;
        tokio::time::sleep(MS).await; // the reconcile
        held.done();
        if item == LOW {
            break start.elapsed() - low_added;
        }
        assert!(served_before < 10_000, "the low item starved");
        let added = Duration::from_micros(500) * (item as u32 - 1);
        assert!(
            added <= bound,
            "item {item} added at {added:?} passed the low item (bound {bound:?})"
        );
        served_before += 1;
    };
    producer.abort();
    let added_within_bound = bound.as_micros() as u64 / 500 + 1;
    assert!(
        served_before <= added_within_bound,
        "{served_before} items passed it, {added_within_bound} were added within the bound"
    );
    assert!(
        waited <= MS * (added_within_bound as u32 + 1),
        "the low item waited {waited:?}"
    );
    assert!(served_before > 1000, "the load was steady: it did wait");
}

#[tokio::test(start_paused = true)]
async fn metrics_report_the_depth_per_priority() {
    let mut registry = Registry::default();
    let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
    let queue: Queue<&str> = Queue::builder()
        .name("foos")
        .metrics_provider(provider)
        .default_rate_limiter()
        .priority()
        .build();
    queue.add_with("a", AddOptions::low());
    queue.add_with("b", AddOptions::low());
    queue.add_with("c", AddOptions::low());
    queue.add("b"); // raised: moves from low to normal
    let held = queue.get().await.unwrap(); // b
    assert_eq!(*held, "b");
    queue.add_with("b", AddOptions::low()); // dirty while held: counted, at low
    let encoded = || {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        text
    };
    let text = encoded();
    for line in [
        r#"workqueue_depth{name="foos"} 3"#,
        r#"workqueue_depth_by_priority{name="foos",priority="-100"} 3"#,
        r#"workqueue_depth_by_priority{name="foos",priority="0"} 0"#,
        r#"workqueue_adds_total{name="foos"} 4"#,
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
    held.done();
    while !queue.is_empty() {
        queue.get().await.unwrap().done();
    }
    let text = encoded();
    for line in [
        r#"workqueue_depth{name="foos"} 0"#,
        r#"workqueue_depth_by_priority{name="foos",priority="-100"} 0"#,
    ] {
        assert!(text.contains(line), "missing {line:?} in:\n{text}");
    }
}
