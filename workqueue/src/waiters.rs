//! The list of tasks parked on a queue, woken one at a time.
//!
//! client-go parks `Get` callers on a `sync.Cond`. Here the same role is played by a FIFO of
//! [`Waker`]s kept under the queue's own lock, so async tasks and plain threads (through a
//! thread-parking waker) wait on one mechanism, and the model checker sees every step of it.
//!
//! A waiter is identified by a number handed out on first registration. Waking one removes it
//! from the list; the woken future knows it was woken because its number is gone. That lets a
//! future that is dropped after being woken pass the wake-up on instead of losing it.
//!
//! **One wake-up in flight.** client-go signals its condition variable on every add; Go's
//! scheduler makes that cheap. Here a wake-up costs a task wake and, when the runtime's
//! threads are asleep, a system call to wake one: on an idle machine, with workers that keep up,
//! that was most of the cost of an add. So [`pop`](Waiters::pop) wakes a waiter only when no
//! waiter woken before is still on its way; the woken one, once it has taken an item, wakes
//! the next if items remain (see `Get::poll`), so the wake-ups chain as long as there is work
//! and every idle worker is reached, one after another. `woken` counts the waiters taken off
//! the list (by `pop` or `drain`) that have not come back yet; a waiter comes back exactly
//! once, when it finds its number gone (in `remove` or `register`).
//!
//! **Wanted.** The getters' list also keeps a flag, readable without the lock, that is true
//! while a waiter is parked and none woken is on its way: the condition under which an add
//! must wake someone. Adders that do not take the lock read it (see `pending.rs`).

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::task::Waker;

use crate::sync::{Arc, AtomicBool};

/// Parked waiters in the order they arrived.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    next_id: u64,
    list: VecDeque<(u64, Waker)>,
    /// Waiters woken (taken off `list`) that have not come back yet.
    woken: usize,
    /// A copy of "a waiter is parked and none woken is on its way", readable without the
    /// queue's lock: kept for the getters, whose adders read it (see `pending.rs`).
    wanted: Option<Arc<AtomicBool>>,
}

impl Waiters {
    /// Waiters that keep `wanted` true while one of them is parked and none woken is on its
    /// way.
    pub(crate) fn mirrored(wanted: Arc<AtomicBool>) -> Self {
        Self {
            wanted: Some(wanted),
            ..Self::default()
        }
    }

    /// Keeps `wanted` (when mirrored) equal to: a waiter is parked and none woken is on its way.
    fn mirror(&self) {
        if let Some(wanted) = &self.wanted {
            let now = self.woken == 0 && !self.list.is_empty();
            // Written only under the queue's lock, so a relaxed read sees the last value; the
            // fence that orders the write before what the getter reads next is the reader's
            // (see `pending.rs`).
            if wanted.load(Ordering::Relaxed) != now {
                wanted.store(now, Ordering::Relaxed);
            }
        }
    }

    /// Parks the waiter `id` (allocating a number on first use), or refreshes its waker.
    pub(crate) fn register(&mut self, id: &mut Option<u64>, waker: &Waker) {
        let known = id.is_some();
        let id = *id.get_or_insert_with(|| {
            self.next_id += 1;
            self.next_id
        });
        match self.list.iter_mut().find(|(parked, _)| *parked == id) {
            Some((_, parked)) => parked.clone_from(waker),
            None => {
                if known {
                    // Woken, and back without having taken anything: parks again.
                    self.came_back();
                }
                self.list.push_back((id, waker.clone()));
            }
        }
        self.mirror();
    }

    /// Removes the waiter `id`; returns false when it was not parked (it was woken already).
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        match self.list.iter().position(|(parked, _)| *parked == id) {
            Some(index) => {
                self.list.remove(index);
                self.mirror();
                true
            }
            None => {
                self.came_back();
                false
            }
        }
    }

    fn came_back(&mut self) {
        debug_assert!(self.woken > 0, "a waiter came back that was not woken");
        self.woken = self.woken.saturating_sub(1);
        self.mirror();
    }

    /// Unparks the longest-waiting waiter and returns its waker, to be woken after unlocking;
    /// `None` when none is parked, or when one woken earlier has not come back yet (it will
    /// pass the wake-up on; see the module docs).
    pub(crate) fn pop(&mut self) -> Option<Waker> {
        if self.woken > 0 {
            return None;
        }
        let (_, waker) = self.list.pop_front()?;
        self.woken += 1;
        self.mirror();
        Some(waker)
    }

    /// Unparks every waiter.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Waker> + '_ {
        self.woken += self.list.len();
        // Every parked waiter now counts as woken, so `wanted` goes false.
        self.mirror();
        self.list.drain(..).map(|(_, waker)| waker)
    }
}

#[cfg(all(test, not(clientgo_loom)))]
mod tests {
    use super::*;

    #[test]
    fn wakes_in_arrival_order_and_tracks_who_was_woken() {
        let mut waiters = Waiters::default();
        let (mut a, mut b) = (None, None);
        waiters.register(&mut a, Waker::noop());
        waiters.register(&mut b, Waker::noop());
        waiters.register(&mut a, Waker::noop());
        assert_eq!(waiters.list.len(), 2, "re-registering does not park twice");
        assert!(waiters.pop().is_some());
        assert!(waiters.pop().is_none(), "one wake-up in flight at a time");
        assert!(!waiters.remove(a.unwrap()), "a was woken first");
        assert!(waiters.pop().is_some(), "a came back: b can be woken");
        waiters.register(&mut b, Waker::noop());
        assert_eq!(waiters.list.len(), 1, "b came back and parked again");
        assert!(waiters.remove(b.unwrap()));
        assert!(waiters.list.is_empty());
        assert_eq!(waiters.woken, 0);
    }

    #[test]
    fn every_drained_waiter_is_counted_back() {
        let mut waiters = Waiters::default();
        let (mut a, mut b) = (None, None);
        waiters.register(&mut a, Waker::noop());
        waiters.register(&mut b, Waker::noop());
        assert_eq!(waiters.drain().count(), 2);
        assert!(waiters.pop().is_none());
        assert!(!waiters.remove(a.unwrap()));
        assert!(!waiters.remove(b.unwrap()));
        assert_eq!(waiters.woken, 0);
    }
}
