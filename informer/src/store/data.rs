//! The store's content: objects in slots, a key table, and the indexes.
//!
//! * `slots`: every stored object, an `Option<Arc<T>>` (8 bytes) per slot; freed slots are
//!   reused (`free`).
//! * `table`: a hashbrown `HashTable<u32>` of slot numbers, hashed by the object's
//!   `(namespace, name)` and compared against the object itself. The key string
//!   `namespace/name` is never stored: an object already holds both parts. A lookup by key
//!   splits the key at its first `/` instead.
//! * `hashes`: each slot's 32-bit key hash (4 bytes per object), so that growing the table
//!   rehashes from this array instead of reading every (cold) object again; that took a
//!   third of the insert time of 100,000 Pods.
//! * `indices`: per index function, value → slot set (see `index.rs`).
//! * `sizes`: only when the store keeps object sizes (for `informer_cache_bytes`): each
//!   slot's estimated size (4 bytes per object) and their total, so that a replaced or
//!   removed object is subtracted without estimating it again.
//!
//! ## Invariants (kept by every method here; the caller holds the store's lock)
//!
//! 1. `table` holds exactly the numbers of the occupied slots, each once, and no two occupied
//!    slots hold objects with the same `(namespace, name)`.
//! 2. `free` holds exactly the numbers of the empty slots below `slots.len()`.
//! 3. For each index, slot `s` is in the set of value `v` iff slot `s` is occupied and the
//!    index function returns `v` for its object; no value maps to an empty set.
//! 4. With `sizes`, `per_slot` is as long as `slots`, and `total` is the sum of `per_slot`
//!    over the occupied slots.
//!
//! Index functions are the user's code and may panic: every method calls all of them before
//! it changes anything, so a panic unwinds out of a method that changed nothing.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use clientgo_apimachinery::Object;
use hashbrown::HashTable;
use hashbrown::hash_table::Entry;

use super::index::{Index, IndexFunc, SlotSet};

/// The hasher of the key table.
pub(crate) type KeyHasher = foldhash::fast::RandomState;

/// The 32-bit hash of the key `(namespace, name)`.
pub(crate) fn key_hash(hasher: &KeyHasher, namespace: &str, name: &str) -> u32 {
    let mut h = hasher.build_hasher();
    h.write(namespace.as_bytes());
    h.write_u8(0xff);
    h.write(name.as_bytes());
    let h = h.finish();
    (h ^ (h >> 32)) as u32
}

/// The table's 64-bit hash of a key hash: an odd multiplier spreads it over the bucket bits
/// (low, a bijection) and the tag bits hashbrown takes from the top.
fn table_hash(hash: u32) -> u64 {
    u64::from(hash).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

/// Splits a cache key for a lookup: `namespace/name`, or a bare cluster-scoped `name`.
///
/// Names cannot contain `/`, so the first `/` separates the parts; an object whose name
/// breaks that rule is stored and found by object, but not by key string.
pub(crate) fn split_for_lookup(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

fn same_key<T: Object>(slot: &Option<Arc<T>>, namespace: &str, name: &str) -> bool {
    slot.as_deref()
        .is_some_and(|o| o.name() == name && o.namespace() == namespace)
}

/// One named index.
pub(crate) struct IndexSlot<T> {
    pub(crate) name: String,
    pub(crate) func: IndexFunc<T>,
    pub(crate) index: Index,
}

/// The estimated sizes of the stored objects.
struct Sizes {
    /// Each slot's object's size (stale for an empty slot).
    per_slot: Vec<u32>,
    total: u64,
}

/// The store's content.
pub(crate) struct Data<T> {
    slots: Vec<Option<Arc<T>>>,
    /// The key hash of each slot's object (stale for an empty slot).
    hashes: Vec<u32>,
    free: Vec<u32>,
    table: HashTable<u32>,
    pub(crate) indices: Vec<IndexSlot<T>>,
    /// `None` unless the store keeps object sizes.
    sizes: Option<Sizes>,
}

impl<T: Object> Data<T> {
    pub(crate) fn new(funcs: &[(String, IndexFunc<T>)]) -> Self {
        Data {
            slots: Vec::new(),
            hashes: Vec::new(),
            free: Vec::new(),
            table: HashTable::new(),
            indices: funcs
                .iter()
                .map(|(name, func)| IndexSlot {
                    name: name.clone(),
                    func: func.clone(),
                    index: Index::default(),
                })
                .collect(),
            sizes: None,
        }
    }

    /// A store holding `objects` (a later object replaces an earlier one with its key),
    /// keeping their sizes if `size` is given.
    pub(crate) fn build(
        hasher: &KeyHasher,
        funcs: &[(String, IndexFunc<T>)],
        objects: impl Iterator<Item = Arc<T>>,
        len: usize,
        size: Option<&dyn Fn(&T) -> u32>,
    ) -> Self {
        let mut data = Data::new(funcs);
        data.slots.reserve_exact(len);
        data.hashes.reserve_exact(len);
        data.table.reserve(len, |_| 0);
        if size.is_some() {
            data.sizes = Some(Sizes {
                per_slot: Vec::with_capacity(len),
                total: 0,
            });
        }
        for object in objects {
            let hash = key_hash(hasher, object.namespace(), object.name());
            let object_size = size.map_or(0, |size| size(&object));
            // The previous object with the same key (a duplicate in the list) is dropped.
            drop(data.upsert(hash, object, object_size));
        }
        data
    }

    /// Starts keeping sizes (if not kept yet), measuring the stored objects with `size`.
    pub(crate) fn keep_sizes(&mut self, size: &dyn Fn(&T) -> u32) {
        if self.sizes.is_some() {
            return;
        }
        let mut sizes = Sizes {
            per_slot: vec![0; self.slots.len()],
            total: 0,
        };
        for (slot, object) in self.slots.iter().enumerate() {
            if let Some(object) = object {
                let object_size = size(object);
                sizes.per_slot[slot] = object_size;
                sizes.total += u64::from(object_size);
            }
        }
        self.sizes = Some(sizes);
    }

    /// The total size of the stored objects, if sizes are kept.
    pub(crate) fn total_size(&self) -> Option<u64> {
        self.sizes.as_ref().map(|s| s.total)
    }

    pub(crate) fn len(&self) -> usize {
        self.table.len()
    }

    pub(crate) fn find(&self, hash: u32, namespace: &str, name: &str) -> Option<u32> {
        let slots = &self.slots;
        self.table
            .find(table_hash(hash), |&slot| {
                same_key(&slots[slot as usize], namespace, name)
            })
            .copied()
    }

    pub(crate) fn object(&self, slot: u32) -> Option<&Arc<T>> {
        self.slots.get(slot as usize).and_then(Option::as_ref)
    }

    pub(crate) fn get(&self, hash: u32, namespace: &str, name: &str) -> Option<&Arc<T>> {
        self.find(hash, namespace, name)
            .and_then(|slot| self.object(slot))
    }

    /// Stores `object` (whose key hashes to `hash` and whose size is `size`, ignored unless
    /// sizes are kept), replacing the object with its key; returns the replaced one.
    ///
    /// Every index function runs before anything changes: one that panics leaves the
    /// content as it was.
    pub(crate) fn upsert(&mut self, hash: u32, object: Arc<T>, size: u32) -> Option<Arc<T>> {
        let Data {
            slots,
            hashes,
            free,
            table,
            indices,
            sizes,
        } = self;
        let entry = table.entry(
            table_hash(hash),
            |&slot| same_key(&slots[slot as usize], object.namespace(), object.name()),
            |&slot| table_hash(hashes[slot as usize]),
        );
        match entry {
            Entry::Occupied(entry) => {
                let slot = *entry.get();
                let old = match indices.is_empty() {
                    true => None,
                    false => slots[slot as usize].clone(),
                };
                if let Some(old) = old {
                    let changes: Vec<_> = indices
                        .iter()
                        .map(|IndexSlot { func, .. }| {
                            let (old_values, new_values) = (func(&old), func(&object));
                            (old_values != new_values).then_some((old_values, new_values))
                        })
                        .collect();
                    for (IndexSlot { index, .. }, change) in indices.iter_mut().zip(changes) {
                        let Some((old_values, new_values)) = change else {
                            continue;
                        };
                        for value in old_values.iter() {
                            index.remove(value, slot);
                        }
                        for value in new_values.iter() {
                            index.add(value, slot);
                        }
                    }
                }
                if let Some(sizes) = sizes {
                    let old = std::mem::replace(&mut sizes.per_slot[slot as usize], size);
                    sizes.total = sizes.total.saturating_sub(u64::from(old)) + u64::from(size);
                }
                slots[slot as usize].replace(object)
            }
            Entry::Vacant(entry) => {
                let values: Vec<_> = indices.iter().map(|i| (i.func)(&object)).collect();
                let slot = match free.pop() {
                    Some(slot) => slot,
                    None => {
                        let Ok(slot) = u32::try_from(slots.len()) else {
                            tracing::error!(
                                "store is full ({} objects): dropping {}/{}",
                                slots.len(),
                                object.namespace(),
                                object.name()
                            );
                            return None;
                        };
                        slots.push(None);
                        hashes.push(0);
                        if let Some(sizes) = sizes.as_mut() {
                            sizes.per_slot.push(0);
                        }
                        slot
                    }
                };
                hashes[slot as usize] = hash;
                if let Some(sizes) = sizes {
                    sizes.per_slot[slot as usize] = size;
                    sizes.total += u64::from(size);
                }
                entry.insert(slot);
                for (IndexSlot { index, .. }, values) in indices.iter_mut().zip(values) {
                    for value in values.iter() {
                        index.add(value, slot);
                    }
                }
                slots[slot as usize] = Some(object);
                None
            }
        }
    }

    /// Removes the object with this key; returns it. Every index function runs before
    /// anything changes, as in [`upsert`](Self::upsert).
    pub(crate) fn remove(&mut self, hash: u32, namespace: &str, name: &str) -> Option<Arc<T>> {
        let Data {
            slots,
            free,
            table,
            indices,
            sizes,
            ..
        } = self;
        let Ok(entry) = table.find_entry(table_hash(hash), |&slot| {
            same_key(&slots[slot as usize], namespace, name)
        }) else {
            return None;
        };
        let slot = *entry.get();
        let old = slots[slot as usize].clone()?;
        let values: Vec<_> = indices.iter().map(|i| (i.func)(&old)).collect();
        entry.remove();
        slots[slot as usize] = None;
        free.push(slot);
        if let Some(sizes) = sizes {
            sizes.total = sizes
                .total
                .saturating_sub(u64::from(sizes.per_slot[slot as usize]));
        }
        for (IndexSlot { index, .. }, values) in indices.iter_mut().zip(values) {
            for value in values.iter() {
                index.remove(value, slot);
            }
        }
        Some(old)
    }

    /// Every stored object.
    pub(crate) fn objects(&self) -> impl Iterator<Item = &Arc<T>> {
        self.slots.iter().flatten()
    }

    pub(crate) fn index(&self, name: &str) -> Option<&Index> {
        self.indices
            .iter()
            .find(|i| i.name == name)
            .map(|i| &i.index)
    }

    pub(crate) fn index_slot(&self, name: &str) -> Option<&IndexSlot<T>> {
        self.indices.iter().find(|i| i.name == name)
    }

    /// The objects of a slot set.
    pub(crate) fn objects_in<'a>(&'a self, set: &'a SlotSet) -> impl Iterator<Item = &'a Arc<T>> {
        set.iter().filter_map(|slot| self.object(slot))
    }

    /// An index of the stored objects by `func`.
    pub(crate) fn build_index(&self, func: &IndexFunc<T>) -> Index {
        let mut index = Index::default();
        for (slot, object) in self.slots.iter().enumerate() {
            if let Some(object) = object {
                for value in func(object).iter() {
                    // `slot` fits in u32: slots are only created with u32 numbers.
                    index.add(value, slot as u32);
                }
            }
        }
        index
    }

    /// Adds an index and fills it from the stored objects.
    pub(crate) fn add_index(&mut self, name: String, func: IndexFunc<T>) {
        let index = self.build_index(&func);
        self.indices.push(IndexSlot { name, func, index });
    }

    /// Adds a filled index.
    pub(crate) fn push_index(&mut self, name: String, func: IndexFunc<T>, index: Index) {
        self.indices.push(IndexSlot { name, func, index });
    }

    /// The index functions, for building a store with the same indexes.
    pub(crate) fn funcs(&self) -> Vec<(String, IndexFunc<T>)> {
        self.indices
            .iter()
            .map(|i| (i.name.clone(), i.func.clone()))
            .collect()
    }

    /// Rebuilds every index with `funcs`, e.g. after indexes were added while this content
    /// was being built.
    pub(crate) fn reindex(&mut self, funcs: Vec<(String, IndexFunc<T>)>) {
        self.indices.clear();
        for (name, func) in funcs {
            self.add_index(name, func);
        }
    }

    /// Takes the object stored under each key of `objects`, if any, marking the slots taken;
    /// returns `(previous object per input, objects of unmarked slots)`. Consumes `self`:
    /// used on the content a `replace` swapped out.
    pub(crate) fn diff(
        self,
        hasher: &KeyHasher,
        objects: &[Arc<T>],
    ) -> (Vec<Option<Arc<T>>>, Vec<Arc<T>>) {
        let mut matched = vec![false; self.slots.len()];
        let previous = objects
            .iter()
            .map(|o| {
                let hash = key_hash(hasher, o.namespace(), o.name());
                let slot = self.find(hash, o.namespace(), o.name())?;
                matched[slot as usize] = true;
                self.object(slot).cloned()
            })
            .collect();
        let deleted = self
            .slots
            .into_iter()
            .zip(matched)
            .filter_map(|(object, matched)| if matched { None } else { object })
            .collect();
        (previous, deleted)
    }
}
