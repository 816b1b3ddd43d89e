//! Model checks of the queue's concurrency with loom: every interleaving of the threads below
//! (up to loom's preemption bound) is explored.
//!
//! Run with:
//! `RUSTFLAGS="--cfg clientgo_loom" cargo test -p clientgo-workqueue --test loom --release`
#![cfg(clientgo_loom)]

use clientgo_workqueue::Queue;
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

fn model(test: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(3);
    builder.check(test);
}

/// Two workers race for an item added twice (the adds made by `add`, given the round): never
/// two holders, and the second add (made after the change it stands for) is always followed
/// by a hand-out that sees that change.
fn two_workers_one_holder_no_lost_add(queue: Queue<u8>, add: fn(&Queue<u8>, usize)) {
    let holders = Arc::new(AtomicUsize::new(0));
    let version = Arc::new(AtomicUsize::new(0));
    let seen = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..2)
        .map(|_| {
            let (queue, holders, version, seen) = (
                queue.clone(),
                holders.clone(),
                version.clone(),
                seen.clone(),
            );
            thread::spawn(move || {
                while let Some(item) = queue.get_blocking() {
                    assert_eq!(holders.fetch_add(1, SeqCst), 0, "two holders");
                    seen.fetch_max(version.load(SeqCst), SeqCst);
                    holders.fetch_sub(1, SeqCst);
                    item.done();
                }
            })
        })
        .collect();
    for round in 0..2 {
        version.fetch_add(1, SeqCst);
        add(&queue, round);
    }
    queue.shut_down();
    for worker in workers {
        worker.join().unwrap();
    }
    assert_eq!(seen.load(SeqCst), 2, "the last change was never handed out");
    assert!(queue.is_empty());
}

#[test]
fn one_holder_at_a_time_and_no_lost_add() {
    model(|| two_workers_one_holder_no_lost_add(Queue::new(), |queue, _| queue.add(7)));
}

/// A parked getter is always woken by an add from another thread, with no shut down to rescue
/// it (a lost wake-up leaves both threads waiting for ever, which loom reports).
#[test]
fn parked_getter_is_woken_by_add() {
    model(|| {
        let queue: Queue<u8> = Queue::new();
        let got = Arc::new(AtomicUsize::new(0));
        let worker = {
            let (queue, got) = (queue.clone(), got.clone());
            thread::spawn(move || {
                let item = queue.get_blocking().map(|held| {
                    let item = *held;
                    held.done();
                    item
                });
                got.store(1, SeqCst);
                item
            })
        };
        queue.add(1);
        while got.load(SeqCst) == 0 {
            thread::yield_now();
        }
        queue.shut_down();
        assert_eq!(worker.join().unwrap(), Some(1));
    });
}

/// Two parked getters, two items added back to back: the add wakes one getter only (one
/// wake-up in flight), and that getter, taking the first item, wakes the other for the
/// second. Each worker takes one item and stops, so a broken chain leaves the second item
/// and its getter waiting for ever, with no shut down to rescue them.
#[test]
fn back_to_back_adds_reach_both_parked_getters() {
    model(|| {
        let queue: Queue<u8> = Queue::new();
        let got = Arc::new(AtomicUsize::new(0));
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (queue, got) = (queue.clone(), got.clone());
                thread::spawn(move || {
                    let held = queue.get_blocking().expect("an item before the shut down");
                    held.done();
                    got.fetch_add(1, SeqCst);
                })
            })
            .collect();
        queue.add(1);
        queue.add(2);
        while got.load(SeqCst) < 2 {
            thread::yield_now();
        }
        queue.shut_down();
        for worker in workers {
            worker.join().unwrap();
        }
    });
}

/// `shut_down_with_drain` returns only once the held item is done.
#[test]
fn drain_waits_for_the_held_item() {
    model(|| {
        let queue: Queue<u8> = Queue::new();
        let held = Arc::new(AtomicUsize::new(0));
        queue.add(1);
        let worker = {
            let (queue, held) = (queue.clone(), held.clone());
            thread::spawn(move || {
                while let Some(item) = queue.get_blocking() {
                    held.store(1, SeqCst);
                    thread::yield_now();
                    held.store(0, SeqCst);
                    item.done();
                }
            })
        };
        while held.load(SeqCst) == 0 && !queue.is_empty() {
            thread::yield_now();
        }
        queue.shut_down_with_drain_blocking();
        assert_eq!(
            held.load(SeqCst),
            0,
            "drain returned while the item was held"
        );
        worker.join().unwrap();
    });
}

/// A worker that drops its guard without an outcome (a panic, an aborted task) puts the item
/// back in line: the other worker gets it, never while the first still holds it, and no
/// wake-up is lost (a lost one leaves the second worker parked for ever, which loom reports).
#[test]
fn an_abandoned_item_is_handed_out_again() {
    model(|| {
        let queue: Queue<u8> = Queue::new();
        let holders = Arc::new(AtomicUsize::new(0));
        let handed_out = Arc::new(AtomicUsize::new(0));
        queue.add(1);
        let workers: Vec<_> = (0..2)
            .map(|_| {
                let (queue, holders, handed_out) =
                    (queue.clone(), holders.clone(), handed_out.clone());
                thread::spawn(move || {
                    let item = queue.get_blocking().expect("not shut down");
                    assert_eq!(holders.fetch_add(1, SeqCst), 0, "two holders");
                    let first = handed_out.fetch_add(1, SeqCst) == 0;
                    holders.fetch_sub(1, SeqCst);
                    if first {
                        drop(item); // no outcome: back in line
                    } else {
                        item.done();
                    }
                })
            })
            .collect();
        for worker in workers {
            worker.join().unwrap();
        }
        assert_eq!(handed_out.load(SeqCst), 2);
        assert!(queue.is_empty());
    });
}

/// The priority line's state machine, in the same race: the item is added at low priority,
/// then at normal priority (raised while it waits, or flagged while it is held).
#[test]
fn priority_line_one_holder_at_a_time_and_no_lost_add() {
    model(|| {
        let queue = Queue::loom_priority(std::time::Duration::from_millis(10));
        two_workers_one_holder_no_lost_add(queue, |queue, round| {
            queue.loom_add_with(7, if round == 0 { -100 } else { 0 })
        });
    });
}

/// A higher-priority add racing a worker: when the add is complete before the worker asks,
/// both items wait together and the worker takes the higher one first.
#[test]
fn priority_line_hands_out_the_higher_priority_first() {
    model(|| {
        let queue: Queue<u8> = Queue::loom_priority(std::time::Duration::from_secs(3600));
        let added = Arc::new(AtomicUsize::new(0));
        queue.loom_add_with(1, -100);
        let adder = {
            let (queue, added) = (queue.clone(), added.clone());
            thread::spawn(move || {
                queue.loom_add_with(2, 0);
                added.store(1, SeqCst);
            })
        };
        let both_waiting = added.load(SeqCst) == 1;
        let first = queue.get_blocking().expect("not shut down");
        let first_item = *first;
        first.done();
        if both_waiting {
            assert_eq!(first_item, 2, "the low item went first");
        }
        adder.join().unwrap();
        let second = queue.get_blocking().expect("not shut down");
        assert_ne!(*second, first_item);
        second.done();
        assert!(queue.is_empty());
    });
}
