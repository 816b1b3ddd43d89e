//! The delaying queue, ported from client-go's `util/workqueue/delaying_queue_test.go`.
//!
//! Every test runs on tokio's paused clock: time moves only when the test advances it.

use std::time::Duration;

use clientgo_workqueue::DelayingQueue;

const MS: Duration = Duration::from_millis(1);

/// Lets the timer task run after the clock moved, then returns what is in line.
async fn settle<T>(queue: &DelayingQueue<T>) -> usize
where
    T: std::hash::Hash + Eq + Clone + Send + 'static,
{
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    queue.len()
}

async fn drain_in_order<T>(queue: &DelayingQueue<T>) -> Vec<T>
where
    T: std::hash::Hash + Eq + Clone + Send + 'static,
{
    let mut out = Vec::new();
    while !queue.is_empty() {
        let item = queue.get().await.expect("not shut down");
        out.push(item.item().clone());
    }
    out
}

#[tokio::test(start_paused = true)]
async fn item_waits_for_its_delay() {
    let queue = DelayingQueue::new();
    queue.add_after("foo", 50 * MS);
    assert_eq!(settle(&queue).await, 0, "not in line before 50 ms");
    assert_eq!(queue.waiting_len(), 1);

    tokio::time::advance(49 * MS).await;
    assert_eq!(settle(&queue).await, 0, "not in line at 49 ms");

    tokio::time::advance(11 * MS).await;
    assert_eq!(settle(&queue).await, 1, "in line once 50 ms passed");
    assert_eq!(queue.waiting_len(), 0);
    assert_eq!(*queue.get().await.unwrap(), "foo");

    tokio::time::advance(Duration::from_secs(20)).await;
    assert_eq!(settle(&queue).await, 0, "nothing comes back later");
}

#[tokio::test(start_paused = true)]
async fn waiting_item_keeps_the_earlier_ready_time() {
    let queue = DelayingQueue::new();
    queue.add_after("foo", 50 * MS);
    queue.add_after("foo", 70 * MS);
    assert_eq!(queue.waiting_len(), 1, "one entry per item");
    tokio::time::advance(60 * MS).await;
    assert_eq!(settle(&queue).await, 1, "the earlier time won");
    drop(queue.get().await.unwrap());

    queue.add_after("foo", 70 * MS);
    queue.add_after("foo", 50 * MS);
    tokio::time::advance(60 * MS).await;
    assert_eq!(settle(&queue).await, 1, "a later add moved it earlier");
    drop(queue.get().await.unwrap());

    tokio::time::advance(20 * MS).await;
    assert_eq!(
        settle(&queue).await,
        0,
        "the superseded ready time fires nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn earlier_ready_time_fires_first() {
    let queue = DelayingQueue::new();
    queue.add_after("foo", Duration::from_secs(1));
    queue.add_after("bar", 50 * MS);
    tokio::time::advance(60 * MS).await;
    assert_eq!(settle(&queue).await, 1);
    assert_eq!(*queue.get().await.unwrap(), "bar");

    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(settle(&queue).await, 1);
    assert_eq!(*queue.get().await.unwrap(), "foo");
}

#[tokio::test(start_paused = true)]
async fn items_due_together_come_out_in_ready_order() {
    let queue = DelayingQueue::new();
    queue.add_after("foo", Duration::from_secs(1));
    queue.add_after("bar", 500 * MS);
    queue.add_after("zed", 2 * Duration::from_secs(1));
    tokio::time::advance(Duration::from_secs(3)).await;
    assert_eq!(settle(&queue).await, 3);
    assert_eq!(drain_in_order(&queue).await, ["bar", "foo", "zed"]);
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    let queue = DelayingQueue::new();
    queue.add_after("foo", Duration::ZERO);
    assert_eq!(queue.len(), 1, "in line without the timer running");
    assert_eq!(queue.waiting_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn get_waits_for_a_delayed_item() {
    let queue = DelayingQueue::new();
    let start = tokio::time::Instant::now();
    queue.add_after("foo", 250 * MS);
    let item = queue.get().await.unwrap();
    assert_eq!(*item, "foo");
    let waited = start.elapsed();
    assert!(
        waited >= 250 * MS && waited <= 252 * MS,
        "waited {waited:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn shut_down_drops_waiting_items_and_stops_the_timer() {
    let alive = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let before = alive();
    let queue = DelayingQueue::new();
    assert_eq!(alive(), before + 1, "one timer task per queue");
    queue.add_after("foo", 10 * MS);
    queue.add_after("bar", 20 * MS);
    queue.shut_down();
    assert_eq!(queue.waiting_len(), 0);
    queue.add_after("zed", 10 * MS);
    assert_eq!(queue.waiting_len(), 0, "adds after shut down are ignored");
    tokio::time::advance(30 * MS).await;
    assert_eq!(settle(&queue).await, 0);
    assert!(queue.get().await.is_none());
    assert_eq!(alive(), before, "the timer task ended");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_last_handle_ends_the_timer() {
    let alive = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let before = alive();
    let queue = DelayingQueue::new();
    queue.add_after(1, Duration::from_secs(3600));
    let clone = queue.clone();
    drop(queue);
    settle(&clone).await;
    assert_eq!(alive(), before + 1, "a handle is still alive");
    drop(clone);
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(alive(), before);
}

#[tokio::test(start_paused = true)]
async fn holds_a_million_waiting_items() {
    const N: u64 = 1_000_000;
    let queue = DelayingQueue::new();
    for i in 0..N {
        queue.add_after(i, Duration::from_micros(1 + i % 100_000));
    }
    assert_eq!(queue.waiting_len(), N as usize);
    tokio::time::advance(Duration::from_millis(101)).await;
    // The timer moves due items in batches, yielding between them: let it run (bounded).
    for _ in 0..N {
        if queue.waiting_len() == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(queue.waiting_len(), 0);
    assert_eq!(queue.len(), N as usize, "every waiting item came due");
}

#[tokio::test(start_paused = true)]
async fn a_delay_past_the_end_of_time_never_comes_due() {
    let queue = DelayingQueue::new();
    queue.add_after("never", Duration::MAX);
    queue.add_after("soon", MS);
    assert_eq!(queue.waiting_len(), 2);
    tokio::time::advance(Duration::from_secs(365 * 24 * 3600)).await;
    assert_eq!(settle(&queue).await, 1);
    assert_eq!(*queue.get().await.unwrap(), "soon");
    assert_eq!(queue.waiting_len(), 1);
}
