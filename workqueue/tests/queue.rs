//! The queue's guarantees, ported from client-go's `util/workqueue/queue_test.go`.
//!
//! The shared tests run twice: against [`Queue`] and against a priority [`Queue`] whose adds
//! all have one priority (the priority queue keeps every guarantee of the plain queue).

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use clientgo_workqueue::{Processing, Queue, QueueItem};

/// Ends a hold with `done` and returns the item.
fn done<T: QueueItem>(held: Processing<'_, T>) -> T {
    let item = held.item().clone();
    held.done();
    item
}

/// Polls a future once without a runtime: `Some` if it completed.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Option<F::Output> {
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// A priority queue with a rate limiter, as controllers make them.
fn priority_queue<T: QueueItem + Sync>() -> Queue<T> {
    Queue::builder().default_rate_limiter().priority().build()
}

/// The tests every queue passes; `new_queue` makes the queue under test.
macro_rules! shared_tests {
    () => {
        async fn basic(drain: bool) {
            const PRODUCERS: usize = 50;
            const CONSUMERS: usize = 10;
            let queue = new_queue::<usize>();
            let producers: Vec<_> = (0..PRODUCERS)
                .map(|producer| {
                    let queue = queue.clone();
                    tokio::spawn(async move {
                        for i in 0..50 {
                            queue.add(producer * 100 + i);
                            tokio::task::yield_now().await;
                        }
                    })
                })
                .collect();
            let consumers: Vec<_> = (0..CONSUMERS)
                .map(|_| {
                    let queue = queue.clone();
                    tokio::spawn(async move {
                        let mut handled = 0;
                        while let Some(item) = queue.get().await {
                            assert!(*item < PRODUCERS * 100, "only produced items come out");
                            handled += 1;
                            tokio::task::yield_now().await;
                            item.done();
                        }
                        handled
                    })
                })
                .collect();
            for producer in producers {
                producer.await.unwrap();
            }
            if drain {
                queue.shut_down_with_drain().await;
            } else {
                queue.shut_down();
            }
            queue.add(usize::MAX);
            let mut handled = 0;
            for consumer in consumers {
                handled += consumer.await.unwrap();
            }
            assert!(
                handled >= 50,
                "every distinct item is handed out at least once"
            );
            assert!(handled <= PRODUCERS * 50);
            assert_eq!(
                queue.len(),
                0,
                "nothing is left and the late add was ignored"
            );
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn basic_with_shut_down() {
            basic(false).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn basic_with_shut_down_with_drain() {
            basic(true).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn add_while_processing_is_handed_out_again() {
            let queue = new_queue::<usize>();
            for i in 0..50 {
                queue.add(i);
            }
            let seen = Arc::new(parking_lot::Mutex::new(std::collections::HashMap::new()));
            let workers: Vec<_> = (0..10)
                .map(|_| {
                    let (queue, seen) = (queue.clone(), seen.clone());
                    tokio::spawn(async move {
                        while let Some(item) = queue.get().await {
                            let first_time = {
                                let mut seen = seen.lock();
                                let count = seen.entry(*item).or_insert(0);
                                *count += 1;
                                *count == 1
                            };
                            if first_time {
                                queue.add(*item);
                            }
                            item.done();
                        }
                    })
                })
                .collect();
            tokio::time::timeout(std::time::Duration::from_secs(10), async {
                while seen.lock().values().filter(|&&n| n == 2).count() < 50 {
                    tokio::task::yield_now().await;
                }
            })
            .await
            .expect("every item re-added while processing comes out a second time");
            queue.shut_down();
            for worker in workers {
                worker.await.unwrap();
            }
            assert!(seen.lock().values().all(|&n| n == 2));
        }

        #[test]
        fn len_does_not_count_duplicates() {
            let queue = new_queue();
            queue.add("foo");
            assert_eq!(queue.len(), 1);
            queue.add("bar");
            assert_eq!(queue.len(), 2);
            queue.add("foo");
            assert_eq!(queue.len(), 2);
        }

        #[test]
        fn reinsert_during_processing() {
            let queue = new_queue();
            queue.add("foo");
            let item = poll_once(pin!(queue.get())).flatten().unwrap();
            assert_eq!(*item, "foo");
            queue.add("foo");
            assert_eq!(queue.len(), 0, "an item being processed is not in line");
            item.done();
            assert_eq!(queue.len(), 1, "it went back in line when done");
            let item = poll_once(pin!(queue.get())).flatten().unwrap();
            assert_eq!(*item, "foo");
            item.done();
            assert_eq!(queue.len(), 0);
        }

        #[test]
        fn duplicate_adds_collapse() {
            let queue = new_queue();
            queue.add("bar");
            queue.add("bar");
            assert_eq!(queue.len(), 1);
            let item = queue.get_blocking().unwrap();
            assert_eq!(*item, "bar");
            assert!(queue.is_empty());
            item.done();
        }

        #[test]
        fn adds_while_processing_collapse_and_wait_for_done() {
            let queue = new_queue();
            queue.add("bar");
            let first = queue.get_blocking().unwrap();
            queue.add("bar");
            queue.add("bar");
            let mut second = pin!(queue.get());
            assert!(
                poll_once(second.as_mut()).is_none(),
                "no second worker may get an item being processed"
            );
            first.done();
            let again = poll_once(second.as_mut()).flatten().unwrap();
            assert_eq!(*again, "bar");
            again.done();
            assert!(queue.is_empty(), "the two adds made one more hand-out");
        }

        #[test]
        fn distinct_items_come_out_in_fifo_order() {
            let queue = new_queue();
            for item in [3, 1, 2, 1, 3, 4] {
                queue.add(item);
            }
            let order: Vec<_> = std::iter::from_fn(|| {
                let mut get = pin!(queue.get());
                poll_once(get.as_mut()).flatten().map(done)
            })
            .collect();
            assert_eq!(order, [3, 1, 2, 4]);
        }

        #[tokio::test]
        async fn shut_down_with_drain_waits_for_items_handed_out() {
            let queue = new_queue();
            queue.add("foo");
            queue.add("bar");
            let foo = queue.get().await.unwrap();
            let bar = queue.get().await.unwrap();
            let mut drain = pin!(queue.shut_down_with_drain());
            assert!(poll_once(drain.as_mut()).is_none());
            assert!(queue.shutting_down());
            foo.done();
            assert!(poll_once(drain.as_mut()).is_none(), "bar is still held");
            bar.done();
            assert!(poll_once(drain.as_mut()).is_some());
        }

        #[tokio::test]
        async fn shut_down_does_not_wait_for_workers() {
            let queue = new_queue();
            queue.add("foo");
            let _held = queue.get().await.unwrap();
            queue.shut_down();
            assert!(queue.shutting_down());
            assert!(queue.get().await.is_none());
        }

        #[test]
        fn shut_down_ends_a_pending_drain() {
            let queue = new_queue();
            queue.add("foo");
            let _held = queue.get_blocking().unwrap();
            let mut drain = pin!(queue.shut_down_with_drain());
            assert!(poll_once(drain.as_mut()).is_none());
            queue.shut_down();
            assert!(poll_once(drain.as_mut()).is_some());
        }

        #[test]
        fn drain_hands_out_an_item_made_dirty_while_held() {
            let queue = new_queue();
            queue.add("foo");
            let held = queue.get_blocking().unwrap();
            queue.add("foo");
            let mut drain = pin!(queue.shut_down_with_drain());
            assert!(poll_once(drain.as_mut()).is_none());
            held.done();
            // Dirty while held (and added before shut down): it comes out again.
            let again = queue
                .get_blocking()
                .expect("the dirty item is handed out again");
            assert_eq!(*again, "foo");
            again.done();
            assert!(
                queue.get_blocking().is_none(),
                "then the queue reports shut down"
            );
            assert!(poll_once(drain.as_mut()).is_some());
        }

        #[test]
        fn items_in_line_are_still_handed_out_after_shut_down() {
            let queue = new_queue();
            queue.add(1);
            queue.add(2);
            queue.shut_down();
            queue.add(3);
            assert_eq!(queue.get_blocking().map(done), Some(1));
            assert_eq!(queue.get_blocking().map(done), Some(2));
            assert!(queue.get_blocking().is_none());
        }

        #[test]
        fn items_are_released_once_done() {
            let queue = new_queue();
            let item = Arc::new(42);
            let weak = Arc::downgrade(&item);
            queue.add(item);
            let held = queue.get_blocking().unwrap();
            assert!(weak.upgrade().is_some());
            held.done();
            assert!(
                weak.upgrade().is_none(),
                "the queue keeps no copy of a done item"
            );
        }

        /// The sequence that a public `done(item)` allowed: worker A ends its hold on k, B takes k,
        /// then a second `done` from A released B's hold and C took k while B was still working. Only
        /// the guard ends a hold, and it is consumed by doing so: A has nothing left to release B's
        /// hold with, and C waits until B is done.
        #[test]
        fn an_ended_hold_never_releases_the_next_holder() {
            let queue = new_queue();
            queue.add("k");
            let a = queue.get_blocking().unwrap();
            queue.add("k"); // k changes while A works
            a.done(); // A's outcome; the guard is gone
            let b = queue.get_blocking().unwrap();
            assert_eq!(*b, "k");
            queue.add("k"); // k changes while B works
            let mut c = pin!(queue.get());
            assert!(
                poll_once(c.as_mut()).is_none(),
                "C must not take k while B holds it"
            );
            assert!(queue.is_empty(), "k waits for B, out of line");
            b.done();
            let c = poll_once(c.as_mut())
                .flatten()
                .expect("C gets k once B is done");
            assert_eq!(done(c), "k");
            assert!(queue.is_empty());
        }

        #[test]
        fn a_woken_getter_that_goes_away_passes_the_wake_up_on() {
            let queue = new_queue();
            let mut first = Box::pin(queue.get());
            let mut second = pin!(queue.get());
            assert!(poll_once(first.as_mut()).is_none());
            assert!(poll_once(second.as_mut()).is_none());
            // The add wakes `first`, which is then dropped without taking the item.
            queue.add("foo");
            drop(first);
            let item = poll_once(second.as_mut()).flatten();
            assert_eq!(item.as_deref(), Some(&"foo"));
        }

        #[test]
        fn blocking_get_wakes_on_add_from_another_thread() {
            let queue = new_queue();
            let worker = {
                let queue = queue.clone();
                std::thread::spawn(move || {
                    let item = queue.get_blocking().map(done);
                    let end = queue.get_blocking().map(done);
                    (item, end)
                })
            };
            queue.add(7);
            // Shut down only after the worker holds the item, so it sees it first.
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !queue.is_empty() {
                assert!(
                    std::time::Instant::now() < deadline,
                    "the worker never took the item"
                );
                std::thread::yield_now();
            }
            queue.shut_down();
            assert_eq!(worker.join().unwrap(), (Some(7), None));
        }
    };
}

mod fifo {
    use super::*;

    fn new_queue<T: QueueItem>() -> Queue<T> {
        Queue::new()
    }

    shared_tests!();
}

mod priority {
    use super::*;

    fn new_queue<T: QueueItem + Sync>() -> Queue<T> {
        priority_queue()
    }

    shared_tests!();
}

#[test]
fn a_guard_dropped_without_an_outcome_puts_the_item_back() {
    let queue = Queue::new();
    queue.add("foo");
    queue.add("bar");
    let held = queue.get_blocking().unwrap();
    assert_eq!(*held, "foo");
    drop(held);
    assert_eq!(queue.len(), 2, "foo is back in line, behind bar");
    assert_eq!(queue.get_blocking().map(done), Some("bar"));
    assert_eq!(queue.get_blocking().map(done), Some("foo"));
    assert!(queue.is_empty());
}

#[test]
fn a_worker_that_panics_does_not_lose_its_item() {
    let queue: Queue<u32> = Queue::new();
    queue.add(7);
    let worker = {
        let queue = queue.clone();
        std::thread::spawn(move || {
            let _held = queue.get_blocking().unwrap();
            panic!("the reconcile panicked");
        })
    };
    assert!(worker.join().is_err(), "the worker panicked");
    assert_eq!(
        queue.get_blocking().map(done),
        Some(7),
        "7 is handed out again"
    );
}

#[test]
fn after_shut_down_a_dropped_guard_is_only_done() {
    let queue = Queue::new();
    queue.add("foo");
    let held = queue.get_blocking().unwrap();
    let mut drain = pin!(queue.shut_down_with_drain());
    assert!(poll_once(drain.as_mut()).is_none());
    drop(held);
    assert!(poll_once(drain.as_mut()).is_some(), "the hold ended");
    assert!(queue.get_blocking().is_none(), "and nothing was re-added");
}
