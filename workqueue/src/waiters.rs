//! The list of tasks parked on a queue, woken one at a time.
//!
//! client-go parks `Get` callers on a `sync.Cond`. Here the same role is played by a FIFO of
//! [`Waker`]s kept under the queue's own lock, so async tasks and plain threads (through a
//! thread-parking waker) wait on one mechanism, and the model checker sees every step of it.
//!
//! A waiter is identified by a number handed out on first registration. Waking one removes it
//! from the list; the woken future knows it was woken because its number is gone. That lets a
//! future that is dropped after being woken pass the wake-up on instead of losing it.

use std::collections::VecDeque;
use std::task::Waker;

/// Parked waiters in the order they arrived.
#[derive(Debug, Default)]
pub(crate) struct Waiters {
    next_id: u64,
    list: VecDeque<(u64, Waker)>,
}

impl Waiters {
    /// Parks the waiter `id` (allocating a number on first use), or refreshes its waker.
    pub(crate) fn register(&mut self, id: &mut Option<u64>, waker: &Waker) {
        let id = *id.get_or_insert_with(|| {
            self.next_id += 1;
            self.next_id
        });
        match self.list.iter_mut().find(|(parked, _)| *parked == id) {
            Some((_, parked)) => parked.clone_from(waker),
            None => self.list.push_back((id, waker.clone())),
        }
    }

    /// Removes the waiter `id`; returns false when it was not parked (it was woken already).
    pub(crate) fn remove(&mut self, id: u64) -> bool {
        match self.list.iter().position(|(parked, _)| *parked == id) {
            Some(index) => {
                self.list.remove(index);
                true
            }
            None => false,
        }
    }

    /// Unparks the longest-waiting waiter and returns its waker, to be woken after unlocking.
    pub(crate) fn pop(&mut self) -> Option<Waker> {
        self.list.pop_front().map(|(_, waker)| waker)
    }

    /// Unparks every waiter.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Waker> + '_ {
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
        assert!(!waiters.remove(a.unwrap()), "a was woken first");
        assert!(waiters.remove(b.unwrap()));
        assert!(waiters.list.is_empty());
    }
}
