//! The bounded cache of typed views: at most `capacity` decoded objects, found by their
//! `(namespace, name)` and valid for one resourceVersion.
//!
//! * `slots`: the views, one per slot, each with its key hash and a "read since the clock
//!   hand last passed" bit;
//! * `table`: a hashbrown `HashTable<u32>` of slot numbers, hashed by `(namespace, name)` and
//!   compared against the view itself, so no key string is stored (as in the store's own
//!   table).
//!
//! Eviction is CLOCK (second chance): the hand sweeps the slots, clearing the bit of each
//! view read since its last pass and evicting the first view not read since. A view read
//! again and again stays; a view read once is the first to go. A hit takes the read lock
//! only and sets the bit with a relaxed store when it is not set yet, so readers of hot
//! views do not write to shared memory.
//!
//! Invariants (the caller holds the lock): `table` holds exactly the numbers of the
//! occupied slots, each once; no two slots hold views with the same `(namespace, name)`;
//! `slots.len() <= capacity`.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clientgo_apimachinery::Object;
use hashbrown::HashTable;

/// One cached view.
struct Slot<K> {
    hash: u64,
    view: Arc<K>,
    referenced: AtomicBool,
}

/// The views and their lookup table. Not synchronized: the lister wraps it in a lock.
pub(super) struct Views<K> {
    slots: Vec<Slot<K>>,
    table: HashTable<u32>,
    hand: usize,
    capacity: usize,
}

impl<K: Object> Views<K> {
    pub(super) fn new(capacity: usize) -> Self {
        Views {
            slots: Vec::new(),
            table: HashTable::new(),
            hand: 0,
            capacity,
        }
    }

    fn find(&self, hash: u64, namespace: &str, name: &str) -> Option<&Slot<K>> {
        let slots = &self.slots;
        self.table
            .find(hash, |&i| {
                let view = &slots[i as usize].view;
                view.name() == name && view.namespace() == namespace
            })
            .map(|&i| &slots[i as usize])
    }

    /// The view of `(namespace, name)` at `resource_version`, marked as read.
    pub(super) fn get(
        &self,
        hash: u64,
        namespace: &str,
        name: &str,
        resource_version: &str,
    ) -> Option<Arc<K>> {
        let slot = self.find(hash, namespace, name)?;
        if slot.view.resource_version() != resource_version {
            return None;
        }
        if !slot.referenced.load(Ordering::Relaxed) {
            slot.referenced.store(true, Ordering::Relaxed);
        }
        Some(slot.view.clone())
    }

    /// Keeps `view` (`hash` is the hash of its key), replacing the view of the
    /// same key or, when full, evicting one. Returns the view it dropped, to be freed after
    /// the lock is released.
    pub(super) fn insert(&mut self, hash: u64, view: Arc<K>) -> Option<Arc<K>> {
        if self.capacity == 0 {
            return Some(view);
        }
        let slots = &self.slots;
        let same = |&i: &u32| {
            let old = &slots[i as usize].view;
            old.name() == view.name() && old.namespace() == view.namespace()
        };
        if let Some(&i) = self.table.find(hash, same) {
            let slot = &mut self.slots[i as usize];
            slot.referenced = AtomicBool::new(true);
            return Some(std::mem::replace(&mut slot.view, view));
        }
        let new = Slot {
            hash,
            view,
            referenced: AtomicBool::new(false),
        };
        let (i, old) = if self.slots.len() < self.capacity {
            self.slots.push(new);
            (self.slots.len() - 1, None)
        } else {
            let victim = self.victim();
            // Unlink the evicted view: its table entry is the one holding its slot number.
            let old_hash = self.slots[victim].hash;
            if let Ok(entry) = self.table.find_entry(old_hash, |&i| i as usize == victim) {
                entry.remove();
            }
            self.hand = (victim + 1) % self.slots.len();
            let old = std::mem::replace(&mut self.slots[victim], new);
            (victim, Some(old.view))
        };
        let slots = &self.slots;
        self.table
            .insert_unique(hash, i as u32, |&j| slots[j as usize].hash);
        old
    }

    /// The slot the clock hand stops at: the first one not read since the hand last passed
    /// it, clearing the bits it passes. Ends within two sweeps.
    fn victim(&mut self) -> usize {
        loop {
            let slot = &self.slots[self.hand];
            if !slot.referenced.swap(false, Ordering::Relaxed) {
                return self.hand;
            }
            self.hand = (self.hand + 1) % self.slots.len();
        }
    }
}

impl<K> Views<K> {
    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }
}
