//! The bounded cache of typed views: at most `capacity` decoded objects, each found by the
//! cached `Compact<K>` it was decoded from.
//!
//! * `slots`: the views, one per slot, each with the `Arc<Compact<K>>` it was decoded from,
//!   the hash of its key and a "read since the clock hand last passed" bit;
//! * `by_object`: a hashbrown `HashTable<u32>` of slot numbers hashed by the address of the
//!   lean object. A lookup is the hot path of a reconcile's `get`: one integer hash and a
//!   pointer comparison, no string hashed or compared, no resourceVersion read. The slot
//!   holds a strong reference to the lean object, so its address cannot be reused by another
//!   object while the view is kept: equal addresses mean the same immutable object;
//! * `by_key`: the same slot numbers hashed by `(namespace, name)`, used on inserts only, so
//!   that the view of an object's new version replaces the old one's.
//!
//! Eviction is CLOCK (second chance): the hand sweeps the slots, clearing the bit of each
//! view read since its last pass and evicting the first view not read since. A view read
//! again and again stays; a view read once is the first to go. A hit takes the read lock
//! only and sets the bit with a relaxed store when it is not set yet, so readers of hot
//! views do not write to shared memory.
//!
//! Invariants (the caller holds the lock): each table holds exactly the numbers of the
//! occupied slots, each once; no two slots hold the same lean object, nor two objects with
//! the same `(namespace, name)`; `slots.len() <= capacity`.

use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clientgo_apimachinery::{Compact, Object};
use hashbrown::HashTable;

/// The hash `by_object` files a lean object under: its address.
fn address_hash<K>(hasher: &foldhash::fast::RandomState, lean: &Arc<Compact<K>>) -> u64 {
    hasher.hash_one(Arc::as_ptr(lean) as usize)
}

/// One cached view.
struct Slot<K> {
    /// The object the view was decoded from, held so that its address stays its own.
    lean: Arc<Compact<K>>,
    view: Arc<K>,
    key_hash: u64,
    referenced: AtomicBool,
}

/// What an insert took out of the cache, to be dropped after the lock is released
/// (freeing a large object can take a while).
pub(super) type Dropped<K> = Option<(Arc<Compact<K>>, Arc<K>)>;

/// The views and their lookup tables. Not synchronized: the lister wraps it in a lock.
pub(super) struct Views<K> {
    slots: Vec<Slot<K>>,
    by_object: HashTable<u32>,
    by_key: HashTable<u32>,
    hasher: foldhash::fast::RandomState,
    hand: usize,
    capacity: usize,
}

impl<K> Views<K> {
    pub(super) fn new(capacity: usize) -> Self {
        Views {
            slots: Vec::new(),
            by_object: HashTable::new(),
            by_key: HashTable::new(),
            hasher: foldhash::fast::RandomState::default(),
            hand: 0,
            capacity,
        }
    }

    fn address_hash(&self, lean: &Arc<Compact<K>>) -> u64 {
        address_hash(&self.hasher, lean)
    }

    fn find(&self, lean: &Arc<Compact<K>>) -> Option<usize> {
        let slots = &self.slots;
        self.by_object
            .find(self.address_hash(lean), |&i| {
                Arc::ptr_eq(&slots[i as usize].lean, lean)
            })
            .map(|&i| i as usize)
    }

    /// The view decoded from `lean`, marked as read.
    pub(super) fn get(&self, lean: &Arc<Compact<K>>) -> Option<Arc<K>> {
        let slot = &self.slots[self.find(lean)?];
        if !slot.referenced.load(Ordering::Relaxed) {
            slot.referenced.store(true, Ordering::Relaxed);
        }
        Some(slot.view.clone())
    }

    /// The view decoded from `lean`, not marked as read (a list's read is no sign of a hot
    /// object).
    pub(super) fn peek(&self, lean: &Arc<Compact<K>>) -> Option<Arc<K>> {
        self.find(lean).map(|i| self.slots[i].view.clone())
    }

    /// Keeps `view`, decoded from `lean` (`key_hash` is the hash of its key), replacing the
    /// view of the same key or, when full, evicting one. Returns the view to hand out (the
    /// one kept already if another reader decoded the same object first) and what it took
    /// out.
    pub(super) fn insert(
        &mut self,
        key_hash: u64,
        lean: Arc<Compact<K>>,
        view: Arc<K>,
    ) -> (Arc<K>, Dropped<K>) {
        if self.capacity == 0 {
            return (view, None);
        }
        if let Some(i) = self.find(&lean) {
            let kept = self.slots[i].view.clone();
            return (kept, Some((lean, view)));
        }
        let address_hash = self.address_hash(&lean);
        let slots = &self.slots;
        let same_key = |&i: &u32| {
            let old = &slots[i as usize].lean;
            old.name() == lean.name() && old.namespace() == lean.namespace()
        };
        if let Some(&i) = self.by_key.find(key_hash, same_key) {
            // A newer version of a kept object: the slot changes object, not key.
            let i = i as usize;
            self.unlink_object(i);
            let slot = &mut self.slots[i];
            slot.referenced = AtomicBool::new(true);
            let old_lean = std::mem::replace(&mut slot.lean, lean);
            let old_view = std::mem::replace(&mut slot.view, view.clone());
            self.link_object(i, address_hash);
            return (view, Some((old_lean, old_view)));
        }
        let new = Slot {
            lean,
            view: view.clone(),
            key_hash,
            referenced: AtomicBool::new(false),
        };
        let (i, dropped) = if self.slots.len() < self.capacity {
            self.slots.push(new);
            (self.slots.len() - 1, None)
        } else {
            let victim = self.victim();
            self.unlink_object(victim);
            let old_key_hash = self.slots[victim].key_hash;
            if let Ok(entry) = self
                .by_key
                .find_entry(old_key_hash, |&i| i as usize == victim)
            {
                entry.remove();
            }
            self.hand = (victim + 1) % self.slots.len();
            let old = std::mem::replace(&mut self.slots[victim], new);
            (victim, Some((old.lean, old.view)))
        };
        self.link_object(i, address_hash);
        let slots = &self.slots;
        self.by_key
            .insert_unique(key_hash, i as u32, |&j| slots[j as usize].key_hash);
        (view, dropped)
    }

    /// Removes slot `i` from `by_object`.
    fn unlink_object(&mut self, i: usize) {
        let hash = self.address_hash(&self.slots[i].lean);
        if let Ok(entry) = self.by_object.find_entry(hash, |&j| j as usize == i) {
            entry.remove();
        }
    }

    /// Adds slot `i`, whose lean object's address hashes to `hash`, to `by_object`.
    fn link_object(&mut self, i: usize, hash: u64) {
        let (slots, hasher) = (&self.slots, &self.hasher);
        self.by_object.insert_unique(hash, i as u32, |&j| {
            address_hash(hasher, &slots[j as usize].lean)
        });
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

    /// Checks the invariants of the module documentation.
    #[cfg(test)]
    pub(super) fn check(&self) {
        assert!(self.slots.len() <= self.capacity);
        assert_eq!(self.by_object.len(), self.slots.len());
        assert_eq!(self.by_key.len(), self.slots.len());
        let mut keys = std::collections::HashSet::new();
        for (i, slot) in self.slots.iter().enumerate() {
            assert_eq!(self.find(&slot.lean), Some(i));
            assert!(
                self.by_key
                    .find(slot.key_hash, |&j| j as usize == i)
                    .is_some()
            );
            let key = (slot.lean.namespace(), slot.lean.name());
            assert!(keys.insert(key), "two views of {key:?}");
        }
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(super) fn capacity(&self) -> usize {
        self.capacity
    }
}
