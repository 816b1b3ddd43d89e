//! The delaying queue, ported from client-go's `util/workqueue/delaying_queue_test.go`.
//!
//! Every test runs on tokio's paused clock: time moves only when the test advances it.

use std::time::Duration;

use clientgo_workqueue::{Queue, QueueItem};

const MS: Duration = Duration::from_millis(1);

/// Lets the timer task run after the clock moved, then returns what is in line.
async fn settle<T>(queue: &Queue<T>) -> usize
where
    T: std::hash::Hash + Eq + Clone + Send + 'static,
{
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    queue.len()
}

/// Takes the next item and ends its hold with `done`.
async fn next<T: QueueItem>(queue: &Queue<T>) -> T {
    let held = queue.get().await.expect("not shut down");
    let item = held.item().clone();
    held.done();
    item
}

async fn drain_in_order<T: QueueItem>(queue: &Queue<T>) -> Vec<T> {
    let mut out = Vec::new();
    while !queue.is_empty() {
        out.push(next(queue).await);
    }
    out
}

#[tokio::test(start_paused = true)]
async fn item_waits_for_its_delay() {
    let queue = Queue::new();
    queue.add_after("foo", 50 * MS);
    assert_eq!(settle(&queue).await, 0, "not in line before 50 ms");
    assert_eq!(queue.delayed_len(), 1);

    tokio::time::advance(49 * MS).await;
    assert_eq!(settle(&queue).await, 0, "not in line at 49 ms");

    tokio::time::advance(11 * MS).await;
    assert_eq!(settle(&queue).await, 1, "in line once 50 ms passed");
    assert_eq!(queue.delayed_len(), 0);
    assert_eq!(next(&queue).await, "foo");

    tokio::time::advance(Duration::from_secs(20)).await;
    assert_eq!(settle(&queue).await, 0, "nothing comes back later");
}

#[tokio::test(start_paused = true)]
async fn waiting_item_keeps_the_earlier_ready_time() {
    let queue = Queue::new();
    queue.add_after("foo", 50 * MS);
    queue.add_after("foo", 70 * MS);
    assert_eq!(queue.delayed_len(), 1, "one entry per item");
    tokio::time::advance(60 * MS).await;
    assert_eq!(settle(&queue).await, 1, "the earlier time won");
    next(&queue).await;

    queue.add_after("foo", 70 * MS);
    queue.add_after("foo", 50 * MS);
    tokio::time::advance(60 * MS).await;
    assert_eq!(settle(&queue).await, 1, "a later add moved it earlier");
    next(&queue).await;

    tokio::time::advance(20 * MS).await;
    assert_eq!(
        settle(&queue).await,
        0,
        "the superseded ready time fires nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn earlier_ready_time_fires_first() {
    let queue = Queue::new();
    queue.add_after("foo", Duration::from_secs(1));
    queue.add_after("bar", 50 * MS);
    tokio::time::advance(60 * MS).await;
    assert_eq!(settle(&queue).await, 1);
    assert_eq!(next(&queue).await, "bar");

    tokio::time::advance(Duration::from_secs(1)).await;
    assert_eq!(settle(&queue).await, 1);
    assert_eq!(next(&queue).await, "foo");
}

#[tokio::test(start_paused = true)]
async fn items_due_together_come_out_in_ready_order() {
    let queue = Queue::new();
    queue.add_after("foo", Duration::from_secs(1));
    queue.add_after("bar", 500 * MS);
    queue.add_after("zed", 2 * Duration::from_secs(1));
    tokio::time::advance(Duration::from_secs(3)).await;
    assert_eq!(settle(&queue).await, 3);
    assert_eq!(drain_in_order(&queue).await, ["bar", "foo", "zed"]);
}

#[tokio::test(start_paused = true)]
async fn zero_delay_adds_at_once() {
    let queue = Queue::new();
    queue.add_after("foo", Duration::ZERO);
    assert_eq!(queue.len(), 1, "in line without the timer running");
    assert_eq!(queue.delayed_len(), 0);
}

#[tokio::test(start_paused = true)]
async fn get_waits_for_a_delayed_item() {
    let queue = Queue::new();
    let start = tokio::time::Instant::now();
    queue.add_after("foo", 250 * MS);
    assert_eq!(next(&queue).await, "foo");
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
    let queue = Queue::new();
    assert_eq!(
        alive(),
        before,
        "no timer task before the first delayed add"
    );
    queue.add_after("foo", 10 * MS);
    assert_eq!(alive(), before + 1, "one timer task per queue");
    queue.add_after("bar", 20 * MS);
    assert_eq!(alive(), before + 1, "one timer task per queue");
    queue.shut_down();
    assert_eq!(queue.delayed_len(), 0);
    queue.add_after("zed", 10 * MS);
    assert_eq!(queue.delayed_len(), 0, "adds after shut down are ignored");
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
    let queue = Queue::new();
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
    let queue = Queue::new();
    for i in 0..N {
        queue.add_after(i, Duration::from_micros(1 + i % 100_000));
    }
    assert_eq!(queue.delayed_len(), N as usize);
    tokio::time::advance(Duration::from_millis(101)).await;
    // The timer moves due items in batches, yielding between them: let it run (bounded).
    for _ in 0..N {
        if queue.delayed_len() == 0 {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert_eq!(queue.delayed_len(), 0);
    assert_eq!(queue.len(), N as usize, "every waiting item came due");
}

#[tokio::test(start_paused = true)]
async fn a_delay_past_the_end_of_time_never_comes_due() {
    let queue = Queue::new();
    queue.add_after("never", Duration::MAX);
    queue.add_after("soon", MS);
    assert_eq!(queue.delayed_len(), 2);
    tokio::time::advance(Duration::from_secs(365 * 24 * 3600)).await;
    assert_eq!(settle(&queue).await, 1);
    assert_eq!(next(&queue).await, "soon");
    assert_eq!(queue.delayed_len(), 1);
}

#[tokio::test(start_paused = true)]
async fn shut_down_with_drain_shuts_down_when_called_not_when_polled() {
    let queue = Queue::new();
    queue.add("held");
    queue.add_after("waiting", 10 * MS);
    let held = queue.get().await.unwrap();
    let drain = queue.shut_down_with_drain();
    assert!(
        queue.shutting_down(),
        "shut down before the drain is polled"
    );
    assert_eq!(queue.delayed_len(), 0, "the waiting item was dropped");
    queue.add("late");
    assert!(queue.is_empty(), "adds are ignored from the call on");
    held.done();
    drain.await;
    assert!(queue.get().await.is_none());
}

#[tokio::test(start_paused = true)]
async fn a_guard_dropped_without_an_outcome_is_added_again_at_once() {
    // Without a rate limiter there is no backoff to wait for.
    let queue = Queue::new();
    queue.add("foo");
    drop(queue.get().await.unwrap());
    assert_eq!(queue.len(), 1);
    assert_eq!(queue.delayed_len(), 0);
    assert_eq!(next(&queue).await, "foo");
}

#[tokio::test(start_paused = true)]
async fn a_debounced_key_moved_earlier_a_million_times_is_one_waiting_item() {
    let queue = Queue::new();
    for i in 0..1_000_000u64 {
        // Every add moves the key's time earlier, the case that leaves a stale entry behind.
        queue.add_after(i % 10, Duration::from_secs(3600) - Duration::from_micros(i));
    }
    assert_eq!(queue.delayed_len(), 10);
    tokio::time::advance(Duration::from_secs(3600)).await;
    assert_eq!(settle(&queue).await, 10, "each key comes due once");
    let mut keys = drain_in_order(&queue).await;
    keys.sort_unstable();
    assert_eq!(keys, (0..10).collect::<Vec<_>>());
}

/// A queue of plain threads, built outside any runtime, still delays: its timer runs on a
/// thread of its own, which ends with the queue.
#[test]
fn a_queue_built_outside_a_runtime_delays_on_its_own_timer_thread() {
    let queue: Queue<&str> = Queue::new();
    let start = std::time::Instant::now();
    queue.add_after("later", 20 * MS);
    queue.add("now");
    let first = queue.get_blocking().expect("not shut down");
    assert_eq!(*first, "now");
    first.done();
    let second = queue.get_blocking().expect("not shut down");
    assert_eq!(*second, "later");
    second.done();
    assert!(start.elapsed() >= 20 * MS, "came before its delay");
    queue.shut_down();
    assert!(queue.get_blocking().is_none());
}

/// A plain add made before a delayed item comes due is handed out before it, though the timer
/// moves the delayed one in line on its own task: the timer sees every add made before it.
#[tokio::test(start_paused = true)]
async fn an_add_made_before_a_delay_ends_comes_out_first() {
    let queue = Queue::new();
    queue.add_after("delayed", 10 * MS);
    let timer_started = settle(&queue).await;
    assert_eq!(timer_started, 0);
    tokio::time::advance(5 * MS).await;
    queue.add("plain");
    tokio::time::advance(5 * MS).await;
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(drain_in_order(&queue).await, ["plain", "delayed"]);
}
