//! Tests of the buffer of plain adds (`pending.rs`) through the queue that applies it.

use std::sync::Arc as StdArc;
use std::sync::atomic::Ordering;
use std::task::Waker;

use super::Queue;
use crate::pending::Pending;

/// A waker that counts its wake-ups.
struct Count(std::sync::atomic::AtomicUsize);

impl std::task::Wake for Count {
    fn wake(self: StdArc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (StdArc<Count>, Waker) {
    let count = StdArc::new(Count(std::sync::atomic::AtomicUsize::new(0)));
    (count.clone(), Waker::from(count))
}

fn poll<F: std::future::Future + Unpin>(future: &mut F, waker: &Waker) -> bool {
    let mut cx = std::task::Context::from_waker(waker);
    std::pin::Pin::new(future).poll(&mut cx).is_ready()
}

fn buffered<T>(queue: &Queue<T>) -> usize {
    queue.shared.pending.as_ref().map_or(0, Pending::len)
}

#[test]
fn plain_adds_wait_in_the_buffer_until_a_reader_or_a_full_buffer_applies_them() {
    use crate::pending::CAPACITY;
    let queue: Queue<usize> = Queue::new();
    for i in 0..CAPACITY - 1 {
        queue.add(i);
    }
    assert_eq!(buffered(&queue), CAPACITY - 1);
    assert_eq!(queue.shared.state.lock().waiting_len(), 0);
    queue.add(CAPACITY - 1);
    assert_eq!(
        buffered(&queue),
        0,
        "the add that filled the buffer applied it"
    );
    assert_eq!(queue.shared.state.lock().waiting_len(), CAPACITY);
    for i in 0..3 * CAPACITY {
        queue.add(i);
        assert!(buffered(&queue) < CAPACITY, "the buffer is bounded");
    }
    assert_eq!(queue.len(), 3 * CAPACITY, "len applies the buffer first");
    assert_eq!(buffered(&queue), 0);
    for expected in 0..3 * CAPACITY {
        let item = queue.get_blocking().unwrap();
        assert_eq!(*item, expected, "handed out in the order first added");
        item.done();
    }
}

#[test]
fn queues_with_metrics_or_priority_apply_each_add_at_once() {
    let prioritized: Queue<u8> = Queue::builder().priority().build();
    prioritized.add(1);
    assert_eq!(prioritized.shared.state.lock().waiting_len(), 1);
    assert!(prioritized.shared.pending.is_none());
    let mut registry = prometheus_client::registry::Registry::default();
    let provider = crate::PrometheusMetricsProvider::new(&mut registry);
    let measured: Queue<u8> = Queue::builder()
        .name("measured")
        .metrics_provider(StdArc::new(provider))
        .build();
    measured.add(1);
    assert_eq!(measured.shared.state.lock().waiting_len(), 1);
    assert!(measured.shared.pending.is_none());
}

#[test]
fn a_parked_getter_is_woken_by_a_buffered_add() {
    let queue: Queue<u8> = Queue::new();
    let (count, waker) = counting_waker();
    let mut get = queue.get();
    assert!(!poll(&mut get, &waker), "parked");
    assert!(queue.shared.pending.as_ref().unwrap().is_empty());
    queue.add(1);
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        1,
        "the adder saw it parked and woke it"
    );
    assert!(poll(&mut get, &waker));
}

/// A getter woken for an item someone else took, then dropped, while an add waits in the
/// buffer (the adder saw a wake-up on its way, so it left the add there): the dropped
/// getter applies the add and passes its wake-up on to the other parked getter.
#[test]
fn a_getter_dropped_after_its_wake_up_applies_the_buffer_and_passes_it_on() {
    let queue: Queue<u8> = Queue::new();
    let (first_count, first_waker) = counting_waker();
    let (second_count, second_waker) = counting_waker();
    let mut first = queue.get();
    let mut second = queue.get();
    assert!(!poll(&mut first, &first_waker));
    assert!(!poll(&mut second, &second_waker));
    queue.add(1);
    assert_eq!(
        first_count.0.load(Ordering::SeqCst),
        1,
        "one wake-up, to the first"
    );
    let taken = queue
        .get_blocking()
        .expect("item 1, taken by a third getter");
    queue.add(2);
    assert_eq!(
        buffered(&queue),
        1,
        "a wake-up is on its way: the add waits"
    );
    drop(first);
    assert_eq!(buffered(&queue), 0);
    assert_eq!(
        second_count.0.load(Ordering::SeqCst),
        1,
        "the wake-up was passed on"
    );
    assert!(poll(&mut second, &second_waker));
    taken.done();
}

#[test]
fn adds_before_a_shut_down_are_handed_out_and_adds_after_it_ignored() {
    let queue: Queue<u8> = Queue::new();
    queue.add(1);
    assert_eq!(buffered(&queue), 1);
    queue.shut_down();
    queue.add(2);
    assert_eq!(buffered(&queue), 0, "ignored without being buffered");
    let item = queue
        .get_blocking()
        .expect("the add made before the shut down");
    assert_eq!(*item, 1);
    item.done();
    assert!(queue.get_blocking().is_none());
}
