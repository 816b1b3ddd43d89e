//! The state of a queue, kept under its one lock: the item table, the line, the delayed adds.
//!
//! client-go keeps an item's state in several places: the queue's `dirty` and `processing`
//! sets, and the delaying queue's map of waiting entries (behind the timer goroutine). Here one
//! table entry per item holds all of it, so each operation finds the item once:
//!
//! * its **mark**: `Idle` (only a delayed add pending), `Waiting` (in line), `Processing`
//!   (handed out), `ProcessingDirty` (handed out and added again since);
//! * its **ready time**, when a delayed add of it is pending (client-go's delaying queue keeps
//!   at most one per item, the earliest).
//!
//! Delayed adds also sit in a min-heap ordered by ready time, which the delaying queue's timer
//! drains. Moving an item's ready time earlier pushes a second heap entry; the table says which
//! entry is current, and stale ones are dropped when they surface. So that a key debounced
//! over and over (its time moved earlier on every change) cannot grow the heap without bound,
//! the heap is compacted (stale entries dropped) whenever they outnumber the current ones: it
//! never holds more than `2 × waiting + COMPACT_SLACK` entries, and compaction costs amortized
//! O(1) per `add_after`.
//!
//! ## Invariants
//!
//! 1. `line` holds exactly the items marked `Waiting`, each once.
//! 2. `processing` counts the items marked `Processing` or `ProcessingDirty`.
//! 3. An entry exists only while its item is marked other than `Idle` or has a ready time.
//! 4. Every item with a ready time has a heap entry with exactly that time; `delayed` counts
//!    those items. (On shut down the heap is taken out at once, and the ready times are
//!    cleared batch by batch in short critical sections: see `take_delayed`.)
//! 5. After every `add_after` and every timer firing, the heap holds at most
//!    `2 × delayed + COMPACT_SLACK` entries.
//!
//! Hashes are computed by the caller before the lock is taken, and travel with the item (in
//! line, in the heap, in the worker's guard), so no critical section hashes a key.

use clientgo_journey::AddOutcome;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::hash::BuildHasher;
use std::task::Waker;

use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use crate::item::{ItemHasher, QueueItem};
use crate::line::{COMPACT_SLACK, Line, Priority};
use crate::metrics::QueueMetrics;
use crate::pending::Pending;
use crate::waiters::Waiters;

/// Wakers collected under the lock, woken after it is released.
pub(crate) type Wakeups = Vec<Waker>;

/// Where an item stands in line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mark {
    /// Not in line nor handed out: only a delayed add is pending.
    Idle = 0,
    /// In line to be handed out.
    Waiting = 1,
    /// Handed out to a worker.
    Processing = 2,
    /// Handed out, and added again since: goes back in line when the worker is done.
    ProcessingDirty = 3,
}

/// One table entry: the item, its mark and its ready time, packed in one word so that an
/// entry is a key plus eight bytes.
struct Slot<T> {
    item: T,
    /// Bits 62..64: the mark; bits 0..62: the ready time plus one, or zero for none.
    packed: u64,
}

const MARK_SHIFT: u32 = 62;
const READY_MASK: u64 = (1 << MARK_SHIFT) - 1;

/// The latest ready time a slot can hold (about 146 years after the queue's creation); later
/// ones are clamped to it.
pub(crate) const MAX_READY_AT: u64 = READY_MASK - 1;

impl<T> Slot<T> {
    fn new(item: T, mark: Mark) -> Self {
        Self {
            item,
            packed: (mark as u64) << MARK_SHIFT,
        }
    }

    fn mark(&self) -> Mark {
        match self.packed >> MARK_SHIFT {
            0 => Mark::Idle,
            1 => Mark::Waiting,
            2 => Mark::Processing,
            _ => Mark::ProcessingDirty,
        }
    }

    fn set_mark(&mut self, mark: Mark) {
        self.packed = (self.packed & READY_MASK) | ((mark as u64) << MARK_SHIFT);
    }

    fn ready_at(&self) -> Option<u64> {
        (self.packed & READY_MASK).checked_sub(1)
    }

    fn set_ready_at(&mut self, at: Option<u64>) {
        let ready = at.map_or(0, |at| at.min(MAX_READY_AT) + 1);
        self.packed = (self.packed & !READY_MASK) | ready;
    }
}

/// A pending delayed add, ordered by ready time only.
pub(crate) struct Delayed<T> {
    at: u64,
    hash: u64,
    item: T,
}

impl<T> PartialEq for Delayed<T> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at
    }
}
impl<T> Eq for Delayed<T> {}
impl<T> PartialOrd for Delayed<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Delayed<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.at.cmp(&other.at)
    }
}

/// What the timer should do after [`State::fire_due`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fired {
    /// Sleep until this ready time.
    NextAt(u64),
    /// Nothing is pending: sleep until woken.
    Empty,
    /// The batch limit was reached with more items due: yield, then fire again.
    More,
}

/// The delayed adds a shut down took out of the state, released outside the lock.
pub(crate) type TakenDelayed<T> = Vec<Reverse<Delayed<T>>>;

/// Everything a queue guards with its lock.
pub(crate) struct State<T> {
    table: HashTable<Slot<T>>,
    /// Waiting items with their hashes, in the order they are handed out.
    pub(crate) line: Line<T>,
    pub(crate) processing: usize,
    heap: BinaryHeap<Reverse<Delayed<T>>>,
    delayed: usize,
    pub(crate) getters: Waiters,
    pub(crate) drainers: Waiters,
    pub(crate) shutting_down: bool,
    pub(crate) drain: bool,
    pub(crate) metrics: Option<QueueMetrics<T>>,
    /// The buffer of pending adds last applied, empty, kept for its capacity.
    batch: Vec<(u64, T)>,
}

/// The move of an item into the "needs processing" state, shared by `add` and a fired delay.
fn make_dirty<T: QueueItem>(
    slot: &mut Slot<T>,
    hash: u64,
    item: T,
    priority: Priority,
    line: &mut Line<T>,
    getters: &mut Waiters,
    metrics: &mut Option<QueueMetrics<T>>,
) -> Option<Waker> {
    let next = match slot.mark() {
        mark @ (Mark::Waiting | Mark::ProcessingDirty) => {
            line.coalesce(hash, &slot.item, priority, mark == Mark::Waiting);
            return None;
        }
        Mark::Processing => Mark::ProcessingDirty,
        Mark::Idle => Mark::Waiting,
    };
    slot.set_mark(next);
    if let Some(metrics) = metrics {
        metrics.add(&slot.item);
    }
    if next != Mark::Waiting {
        line.mark_dirty(hash, &slot.item, priority);
        return None;
    }
    line.push(hash, item, priority);
    getters.pop()
}

impl<T: QueueItem> State<T> {
    pub(crate) fn new(metrics: Option<QueueMetrics<T>>, line: Line<T>, getters: Waiters) -> Self {
        Self {
            table: HashTable::new(),
            line,
            processing: 0,
            heap: BinaryHeap::new(),
            delayed: 0,
            getters,
            drainers: Waiters::default(),
            shutting_down: false,
            drain: false,
            metrics,
            batch: Vec::new(),
        }
    }

    /// Marks `item` as needing processing: puts it in line unless it is waiting already, or
    /// flags it to go back in line if it is being processed. Returns the getter to wake.
    #[cfg(test)]
    pub(crate) fn add(&mut self, hasher: &ItemHasher, hash: u64, item: T) -> Option<Waker> {
        self.add_with(hasher, hash, item, crate::line::PRIORITY_NORMAL)
    }

    /// [`add`](State::add) with a priority (which only a priority line uses).
    pub(crate) fn add_with(
        &mut self,
        hasher: &ItemHasher,
        hash: u64,
        item: T,
        priority: Priority,
    ) -> Option<Waker> {
        let entry = self.table.entry(
            hash,
            |slot| slot.item == item,
            |slot| hasher.hash_one(&slot.item),
        );
        let mut entry = match entry {
            Entry::Occupied(entry) => entry,
            Entry::Vacant(entry) => entry.insert(Slot::new(item.clone(), Mark::Idle)),
        };
        make_dirty(
            entry.get_mut(),
            hash,
            item,
            priority,
            &mut self.line,
            &mut self.getters,
            &mut self.metrics,
        )
    }

    /// Applies the plain adds buffered in `pending`, in the order they were made. After shut
    /// down it does nothing: an add that raced the shut down into the buffer is ignored, as
    /// client-go ignores adds after `ShutDown`, and dropped with the queue (not under its lock).
    pub(crate) fn apply(
        &mut self,
        pending: &Pending<T>,
        hasher: &ItemHasher,
        wakeups: &mut Wakeups,
    ) {
        if self.shutting_down || pending.is_empty() {
            return;
        }
        let mut batch = std::mem::take(&mut self.batch);
        pending.take(&mut batch);
        for (hash, item) in batch.drain(..) {
            wakeups.extend(self.add_with(hasher, hash, item, crate::line::PRIORITY_NORMAL));
        }
        self.batch = batch;
    }

    /// What an add of `item` would be, for its journey event: `new`, `coalesced` (already
    /// in line) or `deferred` (being processed: back in line when done).
    pub(crate) fn add_outcome(&self, hash: u64, item: &T) -> AddOutcome {
        match self
            .table
            .find(hash, |slot| slot.item == *item)
            .map(Slot::mark)
        {
            None | Some(Mark::Idle) => AddOutcome::New,
            Some(Mark::Waiting | Mark::ProcessingDirty) => AddOutcome::Coalesced,
            Some(Mark::Processing) => AddOutcome::Deferred,
        }
    }

    /// How many items wait in line.
    pub(crate) fn waiting_len(&self) -> usize {
        self.line.len()
    }

    /// Takes the first waiting item and marks it as processing; with the priority it waited at.
    pub(crate) fn take_next(&mut self) -> Option<(u64, T, Priority)> {
        let (hash, item, priority) = self.line.pop()?;
        if let Some(slot) = self.table.find_mut(hash, |slot| slot.item == item) {
            slot.set_mark(Mark::Processing);
        }
        self.processing += 1;
        if let Some(metrics) = &mut self.metrics {
            metrics.get(&item);
        }
        Some((hash, item, priority))
    }

    /// Marks a handed-out item done; an item added while it was processed goes back in line.
    /// Does nothing for an item that is not being processed.
    pub(crate) fn done(&mut self, hash: u64, item: &T, wakeups: &mut Wakeups) {
        let Ok(entry) = self.table.find_entry(hash, |slot| slot.item == *item) else {
            return;
        };
        match entry.get().mark() {
            Mark::Idle | Mark::Waiting => return,
            Mark::Processing if entry.get().ready_at().is_none() => {
                entry.remove();
            }
            Mark::Processing => entry.into_mut().set_mark(Mark::Idle),
            Mark::ProcessingDirty => {
                let slot = entry.into_mut();
                slot.set_mark(Mark::Waiting);
                self.line.push_dirty(hash, slot.item.clone());
                wakeups.extend(self.getters.pop());
            }
        }
        if let Some(metrics) = &mut self.metrics {
            metrics.done(item);
        }
        self.processing -= 1;
        if self.processing == 0 {
            wakeups.extend(self.drainers.drain());
        }
    }

    /// Puts a handed-out item back in line and marks it done, in one step: the outcome of a
    /// guard dropped without one. After shut down the item is only marked done.
    pub(crate) fn requeue(
        &mut self,
        hasher: &ItemHasher,
        (hash, item, priority): (u64, &T, Priority),
        wakeups: &mut Wakeups,
    ) {
        if !self.shutting_down {
            wakeups.extend(self.add_with(hasher, hash, item.clone(), priority));
        }
        self.done(hash, item, wakeups);
    }

    /// Schedules an add of `item` at ready time `at`, unless one at the same time or earlier
    /// is pending. Returns whether `at` is now the earliest ready time (the timer must re-arm).
    #[cfg(test)]
    pub(crate) fn add_after(&mut self, hasher: &ItemHasher, hash: u64, item: T, at: u64) -> bool {
        self.add_after_with(hasher, hash, item, at, crate::line::PRIORITY_NORMAL)
    }

    /// [`add_after`](State::add_after) with a priority; a pending delayed add keeps the higher
    /// of the two priorities (and the earlier ready time).
    pub(crate) fn add_after_with(
        &mut self,
        hasher: &ItemHasher,
        hash: u64,
        item: T,
        at: u64,
        priority: Priority,
    ) -> bool {
        let at = at.min(MAX_READY_AT);
        self.line.note_delayed(hash, &item, priority);
        let entry = self.table.entry(
            hash,
            |slot| slot.item == item,
            |slot| hasher.hash_one(&slot.item),
        );
        let slot = match entry {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => entry.insert(Slot::new(item.clone(), Mark::Idle)).into_mut(),
        };
        match slot.ready_at() {
            Some(pending) if pending <= at => return false,
            Some(_) => {}
            None => self.delayed += 1,
        }
        slot.set_ready_at(Some(at));
        let earliest = self.heap.peek().is_none_or(|Reverse(head)| at < head.at);
        self.heap.push(Reverse(Delayed { at, hash, item }));
        self.bound_heap();
        earliest
    }

    /// Compacts the heap once its stale entries outnumber the current ones (plus the slack):
    /// each compaction costs less than twice the stale entries it drops, so amortized O(1) per
    /// `add_after` that made one.
    fn bound_heap(&mut self) {
        if self.heap.len() > 2 * self.delayed + COMPACT_SLACK {
            self.compact_heap();
        } else {
            self.fit_heap();
        }
    }

    /// Whether `entry` is its item's current heap entry (its time is the item's ready time).
    fn is_current(table: &HashTable<Slot<T>>, entry: &Delayed<T>) -> bool {
        table
            .find(entry.hash, |slot| slot.item == entry.item)
            .is_some_and(|slot| slot.ready_at() == Some(entry.at))
    }

    /// Drops the stale heap entries, leaving one entry per waiting item.
    fn compact_heap(&mut self) {
        let table = &self.table;
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.retain(|Reverse(entry)| Self::is_current(table, entry));
        if entries.len() > self.delayed {
            // An item whose time went back to one it had before (it fired in between) can have
            // two entries that both look current; keep one. Rare, so sorting is fine here.
            entries.sort_unstable_by_key(|Reverse(entry)| (entry.at, entry.hash));
            entries.dedup_by(|Reverse(a), Reverse(b)| {
                a.at == b.at && a.hash == b.hash && a.item == b.item
            });
        }
        self.heap = BinaryHeap::from(entries);
        self.fit_heap();
    }

    /// Gives back the heap's memory once it holds less than a quarter of its capacity (after a
    /// burst of delayed adds came due, or a compaction).
    fn fit_heap(&mut self) {
        let len = self.heap.len().max(COMPACT_SLACK);
        if self.heap.capacity() > 4 * len {
            self.heap.shrink_to(2 * len);
        }
    }

    /// Adds every item whose ready time is at or before `now`, at most `limit` of them.
    /// `trace`: the queue's name when its journey events are wanted (an `add` with outcome
    /// `delayed` per item that came due).
    pub(crate) fn fire_due(
        &mut self,
        now: u64,
        limit: usize,
        wakeups: &mut Wakeups,
        trace: Option<&str>,
    ) -> Fired {
        let mut fired = 0;
        loop {
            let Some(Reverse(head)) = self.heap.peek() else {
                self.fit_heap();
                return Fired::Empty;
            };
            if head.at > now {
                let next = head.at;
                self.bound_heap();
                return Fired::NextAt(next);
            }
            if fired == limit {
                return Fired::More;
            }
            let Some(Reverse(due)) = self.heap.pop() else {
                return Fired::Empty;
            };
            let current = self
                .table
                .find_mut(due.hash, |slot| slot.item == due.item)
                .filter(|slot| slot.ready_at() == Some(due.at));
            // A stale entry (its item's time moved earlier, or it already fired) is dropped.
            let Some(slot) = current else { continue };
            slot.set_ready_at(None);
            self.delayed -= 1;
            fired += 1;
            let priority = self.line.take_delayed(due.hash, &due.item, true);
            let traced = trace.map(|queue| {
                let outcome = match slot.mark() {
                    Mark::Idle => AddOutcome::Delayed,
                    Mark::Processing => AddOutcome::Deferred,
                    Mark::Waiting | Mark::ProcessingDirty => AddOutcome::Coalesced,
                };
                (queue, due.item.clone(), outcome)
            });
            wakeups.extend(make_dirty(
                slot,
                due.hash,
                due.item,
                priority,
                &mut self.line,
                &mut self.getters,
                &mut self.metrics,
            ));
            if let Some((queue, item, outcome)) = traced {
                crate::queue::journey::add(queue, &item, due.hash, outcome, self.line.len());
            }
        }
    }

    /// Takes every pending delayed add out of the state (on shut down), in O(1) so that the lock
    /// is not held over a large heap. The items' table entries keep their ready times until
    /// [`release_delayed`](State::release_delayed) is given the taken entries, batch by batch;
    /// meanwhile they are inert (nothing fires after shut down).
    pub(crate) fn take_delayed(&mut self) -> TakenDelayed<T> {
        self.delayed = 0;
        std::mem::take(&mut self.heap).into_vec()
    }

    /// Clears the ready times of the items of `taken` and removes the entries that have nothing
    /// else pending, moving their items to `released` to be dropped after the lock is released.
    pub(crate) fn release_delayed(&mut self, taken: &[Reverse<Delayed<T>>], released: &mut Vec<T>) {
        for Reverse(entry) in taken {
            let Ok(found) = self
                .table
                .find_entry(entry.hash, |slot| slot.item == entry.item)
            else {
                continue;
            };
            if found.get().ready_at().is_none() {
                continue;
            }
            self.line.take_delayed(entry.hash, &entry.item, false);
            if found.get().mark() == Mark::Idle {
                released.push(found.remove().0.item);
            } else {
                found.into_mut().set_ready_at(None);
            }
        }
    }

    /// How many items have a delayed add pending.
    pub(crate) fn delayed_len(&self) -> usize {
        self.delayed
    }
}

#[cfg(all(test, not(clientgo_loom)))]
mod tests {
    use super::*;
    use crate::line::PRIORITY_NORMAL;
    use std::collections::VecDeque;

    /// The items in a FIFO line, in order.
    fn in_line<T: Clone>(state: &State<T>) -> Vec<T> {
        match &state.line {
            Line::Fifo(line) => line.iter().map(|(_, item)| item.clone()).collect(),
            Line::Priority(_) => unreachable!("these tests use FIFO lines"),
        }
    }

    #[test]
    fn a_slot_packs_mark_and_ready_time_in_one_word() {
        assert_eq!(std::mem::size_of::<Slot<std::sync::Arc<str>>>(), 24);
        let mut slot = Slot::new("k", Mark::Processing);
        assert_eq!((slot.mark(), slot.ready_at()), (Mark::Processing, None));
        slot.set_ready_at(Some(0));
        assert_eq!((slot.mark(), slot.ready_at()), (Mark::Processing, Some(0)));
        slot.set_mark(Mark::ProcessingDirty);
        slot.set_ready_at(Some(u64::MAX));
        assert_eq!(
            (slot.mark(), slot.ready_at()),
            (Mark::ProcessingDirty, Some(MAX_READY_AT))
        );
        slot.set_ready_at(None);
        slot.set_mark(Mark::Idle);
        assert_eq!((slot.mark(), slot.ready_at()), (Mark::Idle, None));
    }

    #[test]
    fn a_delayed_add_of_a_processing_item_requeues_it_after_done() {
        let hasher = ItemHasher::default();
        let mut state: State<&str> =
            State::new(None, Line::Fifo(VecDeque::new()), Default::default());
        let mut wakeups = Wakeups::new();
        let hash = hasher.hash_one("k");
        state.add(&hasher, hash, "k");
        assert_eq!(state.take_next(), Some((hash, "k", PRIORITY_NORMAL)));
        assert!(state.add_after(&hasher, hash, "k", 10));
        assert!(
            !state.add_after(&hasher, hash, "k", 20),
            "the earlier time stays"
        );
        assert_eq!(
            state.fire_due(5, 100, &mut wakeups, None),
            Fired::NextAt(10)
        );
        assert_eq!(state.fire_due(10, 100, &mut wakeups, None), Fired::Empty);
        assert!(state.line.is_empty(), "still processing: marked dirty only");
        state.done(hash, &"k", &mut wakeups);
        assert_eq!(state.line.len(), 1);
        assert_eq!(state.delayed_len(), 0);
    }

    #[test]
    fn entries_go_once_nothing_is_pending() {
        let hasher = ItemHasher::default();
        let mut state: State<&str> =
            State::new(None, Line::Fifo(VecDeque::new()), Default::default());
        let mut wakeups = Wakeups::new();
        let hash = hasher.hash_one("k");
        state.add_after(&hasher, hash, "k", 10);
        state.add_after(&hasher, hash, "k", 5);
        assert_eq!(state.table.len(), 1);
        assert_eq!(
            state.fire_due(5, 100, &mut wakeups, None),
            Fired::NextAt(10)
        );
        assert_eq!(
            state.fire_due(10, 100, &mut wakeups, None),
            Fired::Empty,
            "stale entry"
        );
        assert_eq!(state.take_next(), Some((hash, "k", PRIORITY_NORMAL)));
        state.done(hash, &"k", &mut wakeups);
        assert_eq!(state.table.len(), 0);
    }

    /// Adds `key` at `at`, checking the heap's bound after the add.
    fn add_at(state: &mut State<u64>, hasher: &ItemHasher, key: u64, at: u64) {
        state.add_after(hasher, hasher.hash_one(key), key, at);
        assert!(
            state.heap.len() <= 2 * state.delayed + COMPACT_SLACK,
            "heap of {} entries for {} waiting items",
            state.heap.len(),
            state.delayed
        );
    }

    #[test]
    fn the_heap_stays_bounded_by_the_waiting_items() {
        let hasher = ItemHasher::default();
        let mut state: State<u64> =
            State::new(None, Line::Fifo(VecDeque::new()), Default::default());
        let mut wakeups = Wakeups::new();
        const KEYS: u64 = 1_000;
        // Debounced keys: every add moves the key's time earlier, leaving a stale entry.
        for i in 0..200_000u64 {
            add_at(&mut state, &hasher, i % KEYS, 10_000_000 - i);
        }
        assert_eq!(state.delayed_len(), KEYS as usize);
        assert!(state.heap.capacity() <= 4 * (2 * KEYS as usize + COMPACT_SLACK));
        // Each key fires once, at its latest (earliest) time, in time order.
        assert_eq!(
            state.fire_due(10_000_000, usize::MAX, &mut wakeups, None),
            Fired::Empty
        );
        let fired = in_line(&state);
        let expected: Vec<u64> = (200_000 - KEYS..200_000).rev().map(|i| i % KEYS).collect();
        assert_eq!(fired, expected);
        assert!(state.heap.is_empty());
    }

    #[test]
    fn compaction_keeps_one_entry_per_item_when_a_time_comes_back() {
        let hasher = ItemHasher::default();
        let mut state: State<u64> =
            State::new(None, Line::Fifo(VecDeque::new()), Default::default());
        let mut wakeups = Wakeups::new();
        // Key 0 waits for time 1,000,000 again and again: each round its time moves earlier
        // (a stale entry at 1,000,000), it fires, then goes back to 1,000,000 exactly. Every
        // stale entry then looks current; compaction must still keep only one.
        for round in 0..5_000u64 {
            add_at(&mut state, &hasher, 0, 1_000_000);
            add_at(&mut state, &hasher, 0, round);
            state.fire_due(round, usize::MAX, &mut wakeups, None);
            let (hash, key, _) = state.take_next().expect("key 0 fired");
            state.done(hash, &key, &mut wakeups);
        }
        add_at(&mut state, &hasher, 0, 1_000_000);
        assert_eq!(state.delayed_len(), 1);
        assert!(state.heap.len() <= 2 + COMPACT_SLACK);
        assert_eq!(
            state.fire_due(1_000_000, usize::MAX, &mut wakeups, None),
            Fired::Empty
        );
        assert_eq!(state.line.len(), 1, "fired once");
    }

    #[test]
    fn shut_down_releases_the_delayed_adds_in_batches() {
        let hasher = ItemHasher::default();
        let mut state: State<u64> =
            State::new(None, Line::Fifo(VecDeque::new()), Default::default());
        let mut wakeups = Wakeups::new();
        for key in 0..10u64 {
            add_at(&mut state, &hasher, key, 100 + key);
        }
        // Key 0 is handed out with a delayed add pending; key 1 waits in line as well.
        for key in [0, 1] {
            state.add(&hasher, hasher.hash_one(key), key);
        }
        let (hash, held, _) = state.take_next().unwrap();
        assert_eq!(held, 0);
        let taken = state.take_delayed();
        assert_eq!(state.delayed_len(), 0);
        let mut released = Vec::new();
        for batch in taken.chunks(3) {
            state.release_delayed(batch, &mut released);
        }
        released.sort_unstable();
        assert_eq!(
            released,
            (2..10).collect::<Vec<_>>(),
            "idle items leave the table"
        );
        assert_eq!(state.table.len(), 2, "the held and the waiting item stay");
        state.done(hash, &held, &mut wakeups);
        assert_eq!(state.table.len(), 1, "no ready time keeps the done item");
    }

    #[test]
    fn firing_stops_at_the_batch_limit() {
        let hasher = ItemHasher::default();
        let mut state: State<u32> =
            State::new(None, Line::Fifo(VecDeque::new()), Default::default());
        let mut wakeups = Wakeups::new();
        for i in 0..5 {
            state.add_after(&hasher, hasher.hash_one(i), i, u64::from(i));
        }
        assert_eq!(state.fire_due(10, 3, &mut wakeups, None), Fired::More);
        assert_eq!(state.fire_due(10, 3, &mut wakeups, None), Fired::Empty);
        let order = in_line(&state);
        assert_eq!(order, [0, 1, 2, 3, 4]);
    }
}
