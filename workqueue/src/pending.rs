//! Plain adds made off the queue's lock, applied in order by whoever takes the lock next.
//!
//! client-go takes the queue's one lock for every `Add`. When a producer adds faster than its
//! workers take, that lock, the item table and the line move between the producer's core and
//! the workers' on every add, and the queue runs at the speed of those hand-overs rather than
//! of its own work. Here a plain [`add`](crate::Queue::add) on a queue that allows it appends
//! `(hash, item)` to a short buffer with a lock of its own, which stays in the producer's cache
//! while it adds. The buffer is applied to the queue's state, in the order of the adds, at the
//! start of every critical section that hands items out or reads the line (`get`, `len`, the
//! timer, a requeue, shut down), so an add is seen by everything that comes after it, exactly
//! as if it had taken the lock. Applied in a batch, a run of adds costs one trip of the table
//! and the line between cores instead of one per add, and adds of keys already waiting
//! coalesce where the workers are.
//!
//! Used on FIFO queues without metrics, while journey events are off. A priority queue
//! applies each add at once (an add can raise a waiting item's priority, and the next `get`
//! must see it); metrics count each add and the depth as client-go does, at the add; journey
//! events record each add's outcome under the lock.
//!
//! ## Why no add is lost or left waiting
//!
//! 1. **Bounded.** The adder whose push fills the buffer to [`CAPACITY`] applies it, so it
//!    holds at most `CAPACITY` adds plus one per adder racing the one that applies.
//! 2. **Parked getters are woken.** `wanted` is true while a getter is parked and no getter
//!    woken earlier is on its way (the waiters keep it, under the queue's lock: see
//!    `waiters.rs`). An adder reads it after its push and, if it is set, applies the buffer
//!    itself, which wakes a getter. A getter that sets it (by parking, or by coming back from a
//!    wake-up) looks at the buffer afterwards, still under the queue's lock, and applies it if
//!    it is not empty. The buffer's `filled` flag is what the getter reads: the adder sets it,
//!    then reads `wanted`; the getter sets `wanted`, then reads `filled`; each puts a
//!    sequentially consistent fence between its write and its read, so one of them sees the
//!    other's write: either the getter finds the add, or the adder finds the getter.
//! 3. **A woken getter applies.** While a woken getter is on its way `wanted` is false and adds
//!    stay in the buffer: the getter applies it when it runs, or, if it is dropped first, when
//!    it passes its wake-up on.
//! 4. **Shut down.** `shut_down` applies the buffer before it marks the queue shut down, so an
//!    add made before it is handed out like any other; an add that lands in the buffer after
//!    it is dropped at the next application, as client-go ignores adds after a shut down.

use std::sync::atomic::Ordering;

use crate::sync::{Arc, AtomicBool, Mutex, fence};

/// How many adds the buffer holds before the adder applies them itself: large enough that a
/// batch pays for its trip between cores, small enough that the state it stands for is never
/// far behind.
pub(crate) const CAPACITY: usize = 64;

/// The buffer of plain adds, with the flag that says a parked getter needs waking.
pub(crate) struct Pending<T> {
    adds: Mutex<Vec<(u64, T)>>,
    /// Whether `adds` is not empty, set and cleared under its lock, so that the critical
    /// sections that find the buffer empty (every one, on a queue fed by other kinds of add)
    /// need not take that lock.
    filled: AtomicBool,
    wanted: Arc<AtomicBool>,
}

impl<T> Pending<T> {
    /// An empty buffer reading `wanted`, which the queue's getters keep.
    pub(crate) fn new(wanted: Arc<AtomicBool>) -> Self {
        Self {
            adds: Mutex::new(Vec::new()),
            filled: AtomicBool::new(false),
            wanted,
        }
    }

    /// Appends an add; returns whether the adder must apply the buffer now (it is full, or a
    /// parked getter needs waking).
    pub(crate) fn push(&self, hash: u64, item: T) -> bool {
        let full = {
            let mut adds = self.adds.lock();
            adds.push((hash, item));
            if adds.len() == 1 {
                self.filled.store(true, Ordering::Relaxed);
            }
            adds.len() >= CAPACITY
        };
        // Pairs with the fence of a getter that set `wanted` (`is_empty_after_wanted`): of two
        // threads that each write their flag, fence, then read the other's, one sees the other.
        fence(Ordering::SeqCst);
        full || self.wanted.load(Ordering::Relaxed)
    }

    /// Whether no add is buffered. Under the queue's lock it sees every add that happened
    /// before (only a holder of that lock empties the buffer).
    pub(crate) fn is_empty(&self) -> bool {
        !self.filled.load(Ordering::Acquire)
    }

    /// [`is_empty`](Pending::is_empty) for a getter that may just have set `wanted` (it parked,
    /// or came back from a wake-up), under the queue's lock: an add it does not see is one whose
    /// adder sees `wanted` and applies the buffer itself (see the module documentation).
    pub(crate) fn is_empty_after_wanted(&self) -> bool {
        fence(Ordering::SeqCst);
        !self.filled.load(Ordering::Relaxed)
    }

    /// Swaps the buffered adds into `batch` (which must be empty; the buffer takes its
    /// capacity in return, so that neither side allocates in the steady state).
    pub(crate) fn take(&self, batch: &mut Vec<(u64, T)>) {
        debug_assert!(batch.is_empty(), "a batch left unapplied");
        let mut adds = self.adds.lock();
        std::mem::swap(&mut *adds, batch);
        self.filled.store(false, Ordering::Relaxed);
    }

    /// How many adds are buffered (for tests).
    #[cfg(all(test, not(clientgo_loom)))]
    pub(crate) fn len(&self) -> usize {
        self.adds.lock().len()
    }
}
