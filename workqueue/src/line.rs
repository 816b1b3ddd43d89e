//! The line of waiting items: first in, first out, or by priority with aging.
//!
//! The queue's state (see `state.rs`) decides *whether* an item waits; the line decides in
//! which order waiting items are handed out. client-go's queue has one order, FIFO; a
//! priority [`Queue`](crate::Queue) hands out the highest priority first, FIFO within a
//! priority, with **aging**: every waiting item is ranked by
//!
//! ```text
//! rank = time it was added − priority × aging
//! ```
//!
//! and the lowest rank goes first (ties: the earlier add). Within one priority that is FIFO;
//! across priorities, waiting `aging` is worth one priority level. So an item of priority `p`
//! is handed out before every item of a higher priority `q` added more than `(q − p) × aging`
//! after it, whatever keeps arriving: no item starves. controller-runtime's priority queue
//! (which client-go lacks) orders by priority alone, and a steady stream of high-priority
//! items there holds a low one back for ever.
//!
//! Coalescing: an add of an item that already waits keeps the higher of the two priorities and
//! the better (lower) of the two ranks; so does an add of an item being processed (it goes back
//! in line with that rank when done), and a delayed add keeps the highest priority of the
//! delayed adds it stands for (the state keeps the earliest ready time).
//!
//! The priority line keeps, per item it knows, one table entry (the item's rank, priority, the
//! sequence number of its current heap entry, and the priority of a pending delayed add), and
//! a min-heap of `(rank, sequence)` entries. Raising a waiting item's rank pushes a new heap
//! entry; the old one is stale (its sequence number is not the item's), skipped when it
//! surfaces and dropped by a compaction once stale entries outnumber current ones.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::hash::BuildHasher;
use std::sync::Arc;
use std::time::Duration;

use hashbrown::HashTable;
use tokio::time::Instant;

use crate::item::{ItemHasher, QueueItem};
use crate::metrics::{GaugeMetric, MetricsProvider};

/// How many stale heap entries are tolerated beyond the current ones before a compaction, so
/// that a small heap is not compacted on every push (the line's heap and the state's delayed
/// heap alike).
pub(crate) const COMPACT_SLACK: usize = 1024;

/// The priority of an item in a priority [`Queue`](crate::Queue): higher goes first.
pub type Priority = i32;

/// The priority of ordinary adds (and of every add to the other queues).
pub const PRIORITY_NORMAL: Priority = 0;

/// The priority an informer adapter gives to adds that most likely need no work: objects of
/// the initial list, resyncs of unchanged objects (controller-runtime's `LowPriority`).
pub const PRIORITY_LOW: Priority = -100;

/// The line of a queue.
pub(crate) enum Line<T> {
    /// client-go's order: first added, first handed out.
    Fifo(VecDeque<(u64, T)>),
    /// Highest priority first, with aging.
    Priority(Box<PriorityLine<T>>),
}

impl<T: QueueItem> Line<T> {
    /// How many items wait in line.
    pub(crate) fn len(&self) -> usize {
        match self {
            Line::Fifo(line) => line.len(),
            Line::Priority(line) => line.waiting,
        }
    }

    /// Whether no item waits in line.
    pub(crate) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `item`, not in line, goes in line with `priority`.
    pub(crate) fn push(&mut self, hash: u64, item: T, priority: Priority) {
        match self {
            Line::Fifo(line) => line.push_back((hash, item)),
            Line::Priority(line) => line.push(hash, item, priority),
        }
    }

    /// An add of `item` with `priority` coalesces with the item waiting in line (`waiting`)
    /// or flagged to go back in line when done.
    pub(crate) fn coalesce(&mut self, hash: u64, item: &T, priority: Priority, waiting: bool) {
        if let Line::Priority(line) = self {
            line.coalesce(hash, item, priority, waiting);
        }
    }

    /// `item`, being processed, was added with `priority`: it goes back in line when done.
    pub(crate) fn mark_dirty(&mut self, hash: u64, item: &T, priority: Priority) {
        if let Line::Priority(line) = self {
            line.mark_dirty(hash, item, priority);
        }
    }

    /// `item`, added while processed, goes back in line now that it is done.
    pub(crate) fn push_dirty(&mut self, hash: u64, item: T) {
        match self {
            Line::Fifo(line) => line.push_back((hash, item)),
            Line::Priority(line) => line.push_dirty(hash, item),
        }
    }

    /// Takes the next item, with the priority it waited at.
    pub(crate) fn pop(&mut self) -> Option<(u64, T, Priority)> {
        match self {
            Line::Fifo(line) => line
                .pop_front()
                .map(|(hash, item)| (hash, item, PRIORITY_NORMAL)),
            Line::Priority(line) => line.pop(),
        }
    }

    /// A delayed add of `item` with `priority` is pending (or coalesced with a pending one).
    pub(crate) fn note_delayed(&mut self, hash: u64, item: &T, priority: Priority) {
        if let Line::Priority(line) = self {
            line.note_delayed(hash, item, priority);
        }
    }

    /// The delayed add of `item` came due (`fired`: it goes in line next, with the priority
    /// returned), or was dropped on shut down.
    pub(crate) fn take_delayed(&mut self, hash: u64, item: &T, fired: bool) -> Priority {
        match self {
            Line::Fifo(_) => PRIORITY_NORMAL,
            Line::Priority(line) => line.take_delayed(hash, item, fired),
        }
    }
}

/// What the priority line knows of one item.
struct Info<T> {
    item: T,
    /// The sequence number of the item's current heap entry; 0 when it is not in line.
    seq: u64,
    /// The item's rank in line, or the rank it goes back in line with when done.
    rank: i64,
    /// The item's priority while it waits or is flagged to go back in line.
    priority: Option<Priority>,
    /// The highest priority of the pending delayed add of the item, if any.
    delayed: Option<Priority>,
}

impl<T> Info<T> {
    fn is_empty(&self) -> bool {
        self.seq == 0 && self.priority.is_none() && self.delayed.is_none()
    }
}

/// One heap entry, ordered by rank, then by sequence number (the order of the adds).
struct Entry<T> {
    rank: i64,
    seq: u64,
    hash: u64,
    item: T,
}

impl<T> Entry<T> {
    fn key(&self) -> (i64, u64) {
        (self.rank, self.seq)
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<T> Ord for Entry<T> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

/// The depth gauges of a priority queue, one per priority seen.
pub(crate) struct DepthByPriority {
    provider: Arc<dyn MetricsProvider>,
    name: String,
    gauges: HashMap<Priority, Box<dyn GaugeMetric>>,
}

impl DepthByPriority {
    pub(crate) fn new(provider: Arc<dyn MetricsProvider>, name: &str) -> Self {
        Self {
            provider,
            name: name.to_owned(),
            gauges: HashMap::new(),
        }
    }

    fn gauge(&mut self, priority: Priority) -> &dyn GaugeMetric {
        let Self {
            provider,
            name,
            gauges,
        } = self;
        &**gauges
            .entry(priority)
            .or_insert_with(|| provider.new_depth_by_priority_metric(name, priority))
    }
}

/// The priority line: see the module docs.
pub(crate) struct PriorityLine<T> {
    heap: BinaryHeap<Reverse<Entry<T>>>,
    table: HashTable<Info<T>>,
    /// The queue's hasher (hashes travel with the items; this one rehashes on growth).
    hasher: ItemHasher,
    /// Items in line (current heap entries).
    waiting: usize,
    next_seq: u64,
    epoch: Instant,
    /// Nanoseconds of waiting worth one priority level.
    aging: i64,
    depth: Option<DepthByPriority>,
}

impl<T: QueueItem> PriorityLine<T> {
    pub(crate) fn new(hasher: ItemHasher, aging: Duration, depth: Option<DepthByPriority>) -> Self {
        Self {
            heap: BinaryHeap::new(),
            table: HashTable::new(),
            hasher,
            waiting: 0,
            next_seq: 1,
            epoch: Instant::now(),
            aging: i64::try_from(aging.as_nanos()).unwrap_or(i64::MAX),
            depth,
        }
    }

    /// The rank of an add of `priority` now.
    fn rank_now(&self, priority: Priority) -> i64 {
        let now = i64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(i64::MAX);
        let credit = i128::from(priority) * i128::from(self.aging);
        let rank = i128::from(now) - credit;
        rank.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
    }

    fn depth_moves(&mut self, from: Option<Priority>, to: Option<Priority>) {
        if from == to {
            return;
        }
        if let Some(depth) = &mut self.depth {
            if let Some(from) = from {
                depth.gauge(from).dec();
            }
            if let Some(to) = to {
                depth.gauge(to).inc();
            }
        }
    }

    /// The item's entry, made if missing.
    fn info(&mut self, hash: u64, item: &T) -> &mut Info<T> {
        let hasher = &self.hasher;
        self.table
            .entry(
                hash,
                |info| info.item == *item,
                |info| hasher.hash_one(&info.item),
            )
            .or_insert_with(|| Info {
                item: item.clone(),
                seq: 0,
                rank: 0,
                priority: None,
                delayed: None,
            })
            .into_mut()
    }

    fn find(&mut self, hash: u64, item: &T) -> Option<&mut Info<T>> {
        self.table.find_mut(hash, |info| info.item == *item)
    }

    /// Removes the entry of `item` if it no longer holds anything.
    fn prune(&mut self, hash: u64, item: &T) {
        if let Ok(entry) = self.table.find_entry(hash, |info| info.item == *item) {
            if entry.get().is_empty() {
                entry.remove();
            }
        }
    }

    /// The sequence number of the next heap entry.
    fn next_seq(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }

    /// Puts the heap entry `seq` for `item` at `rank` (the caller made `seq` the item's
    /// current entry).
    fn enqueue(&mut self, hash: u64, item: T, rank: i64, seq: u64) {
        self.heap.push(Reverse(Entry {
            rank,
            seq,
            hash,
            item,
        }));
        if self.heap.len() > 2 * self.waiting + COMPACT_SLACK {
            self.compact();
        }
    }

    fn push(&mut self, hash: u64, item: T, priority: Priority) {
        let rank = self.rank_now(priority);
        let seq = self.next_seq();
        let info = self.info(hash, &item);
        info.rank = rank;
        info.priority = Some(priority);
        info.seq = seq;
        self.waiting += 1;
        self.depth_moves(None, Some(priority));
        self.enqueue(hash, item, rank, seq);
    }

    fn coalesce(&mut self, hash: u64, item: &T, priority: Priority, waiting: bool) {
        let rank = self.rank_now(priority);
        let seq = self.next_seq;
        let Some(info) = self.find(hash, item) else {
            return;
        };
        let old = info.priority;
        let raised = old.map_or(priority, |old| old.max(priority));
        info.priority = Some(raised);
        // A waiting item whose rank improves gets a new heap entry; the old one goes stale.
        let requeue = waiting && rank < info.rank;
        info.rank = info.rank.min(rank);
        if requeue {
            info.seq = seq;
        }
        self.depth_moves(old, Some(raised));
        if requeue {
            self.next_seq += 1;
            self.enqueue(hash, item.clone(), rank, seq);
        }
    }

    fn mark_dirty(&mut self, hash: u64, item: &T, priority: Priority) {
        let rank = self.rank_now(priority);
        let info = self.info(hash, item);
        info.rank = rank;
        info.priority = Some(priority);
        self.depth_moves(None, Some(priority));
    }

    fn push_dirty(&mut self, hash: u64, item: T) {
        let seq = self.next_seq();
        let Some(info) = self.find(hash, &item) else {
            return;
        };
        info.seq = seq;
        let rank = info.rank;
        self.waiting += 1;
        self.enqueue(hash, item, rank, seq);
    }

    fn pop(&mut self) -> Option<(u64, T, Priority)> {
        while let Some(Reverse(entry)) = self.heap.pop() {
            let Ok(mut found) = self
                .table
                .find_entry(entry.hash, |info| info.item == entry.item)
            else {
                continue;
            };
            let info = found.get_mut();
            if info.seq != entry.seq {
                continue; // stale: the item was raised since
            }
            info.seq = 0;
            let priority = info.priority.take().unwrap_or(PRIORITY_NORMAL);
            if info.is_empty() {
                found.remove();
            }
            self.waiting -= 1;
            self.depth_moves(Some(priority), None);
            return Some((entry.hash, entry.item, priority));
        }
        None
    }

    fn note_delayed(&mut self, hash: u64, item: &T, priority: Priority) {
        let info = self.info(hash, item);
        info.delayed = Some(info.delayed.map_or(priority, |old| old.max(priority)));
    }

    fn take_delayed(&mut self, hash: u64, item: &T, fired: bool) -> Priority {
        let priority = self
            .find(hash, item)
            .and_then(|info| info.delayed.take())
            .unwrap_or(PRIORITY_NORMAL);
        // A fired item's entry is about to be used again (in line, or flagged dirty).
        if !fired {
            self.prune(hash, item);
        }
        priority
    }

    /// Drops the stale heap entries.
    fn compact(&mut self) {
        let table = &self.table;
        let mut entries = std::mem::take(&mut self.heap).into_vec();
        entries.retain(|Reverse(entry)| {
            table
                .find(entry.hash, |info| info.item == entry.item)
                .is_some_and(|info| info.seq == entry.seq)
        });
        self.heap = BinaryHeap::from(entries);
    }
}
