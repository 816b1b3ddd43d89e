//! The per-item state table shared by the per-item limiters.
//!
//! client-go guards a plain `map[T]int` with one mutex per limiter. The workers of a queue call
//! `when`, `forget` and `num_requeues` concurrently for different items, so here the table is a
//! sharded [`DashMap`] with a fast hasher instead: updates of one item are atomic (its shard is
//! write-locked for the update), and updates of items in different shards do not contend.

use std::hash::Hash;

use dashmap::DashMap;
use foldhash::fast::RandomState;

/// Per-item state, keyed by item.
pub(crate) struct ItemMap<T, V> {
    map: DashMap<T, V, RandomState>,
}

impl<T: Hash + Eq, V> ItemMap<T, V> {
    pub(crate) fn new() -> Self {
        Self {
            map: DashMap::with_hasher(RandomState::default()),
        }
    }

    /// Runs `f` on the item's state, created with `V::default()` if absent, atomically with
    /// respect to every other access to that item.
    ///
    /// The item is only cloned when its entry has to be created.
    pub(crate) fn update<R>(&self, item: &T, f: impl FnOnce(&mut V) -> R) -> R
    where
        T: Clone,
        V: Default,
    {
        if let Some(mut state) = self.map.get_mut(item) {
            return f(&mut state);
        }
        // Another thread may create the entry between the two lookups; `entry` sees it then.
        let mut state = self.map.entry(item.clone()).or_default();
        f(&mut state)
    }

    /// Reads the item's state, if any.
    pub(crate) fn read<R>(&self, item: &T, f: impl FnOnce(&V) -> R) -> Option<R> {
        self.map.get(item).map(|state| f(&state))
    }

    /// Drops the item's state.
    pub(crate) fn remove(&self, item: &T) {
        self.map.remove(item);
    }

    /// How many items have state.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }
}
