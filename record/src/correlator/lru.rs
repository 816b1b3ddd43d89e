//! A small least-recently-used map with string keys: the `lru.Cache` (groupcache's, later
//! `k8s.io/utils/lru`) that each stage of client-go's correlator keeps its records in.
//!
//! Same behaviour: a lookup or an insert makes the entry the most recently used; inserting
//! past capacity evicts the least recently used one. Differences: a capacity of zero holds one
//! entry (Go's zero means "unbounded", but the correlator never asks for that: its options
//! turn zero into the default of 4096), and there is no eviction callback.
//!
//! Recency is a counter stamped on each use, with a `BTreeMap` from stamp to key giving the
//! oldest entry in `O(log n)`; at the correlator's 4096 entries that is a dozen comparisons,
//! and the code stays free of linked-list bookkeeping.

use std::collections::{BTreeMap, HashMap};

/// A bounded map that forgets its least recently used entry first.
#[derive(Debug)]
pub(crate) struct LruCache<V> {
    entries: HashMap<String, Entry<V>>,
    /// Use stamp -> key, oldest first.
    order: BTreeMap<u64, String>,
    next_stamp: u64,
    capacity: usize,
}

#[derive(Debug)]
struct Entry<V> {
    value: V,
    stamp: u64,
}

impl<V> LruCache<V> {
    /// A cache holding at most `capacity` entries (at least one).
    pub(crate) fn new(capacity: usize) -> LruCache<V> {
        LruCache {
            entries: HashMap::new(),
            order: BTreeMap::new(),
            next_stamp: 0,
            capacity: capacity.max(1),
        }
    }

    /// The value for `key`, marked as just used.
    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        let entry = self.entries.get_mut(key)?;
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        if let Some(k) = self.order.remove(&entry.stamp) {
            self.order.insert(stamp, k);
        }
        entry.stamp = stamp;
        Some(&mut entry.value)
    }

    /// The value for `key`, inserting `make()` first if there is none; marked as just used.
    pub(crate) fn get_or_insert_with(&mut self, key: &str, make: impl FnOnce() -> V) -> &mut V {
        let stamp = self.touch(key);
        let entry = self.entries.entry(key.to_owned()).or_insert_with(|| Entry {
            value: make(),
            stamp,
        });
        entry.stamp = stamp;
        &mut entry.value
    }

    /// Inserts or replaces the value for `key`, marked as just used; evicts the least
    /// recently used entry when that makes one too many.
    pub(crate) fn put(&mut self, key: String, value: V) {
        let stamp = self.touch(&key);
        self.entries.insert(key, Entry { value, stamp });
    }

    /// Records a use of `key` in the recency order and returns its new stamp. When `key` is
    /// new, first evicts the oldest entries so that it fits (the caller then inserts it).
    fn touch(&mut self, key: &str) -> u64 {
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        match self.entries.get(key) {
            Some(entry) => {
                self.order.remove(&entry.stamp);
            }
            None => {
                while self.entries.len() >= self.capacity {
                    let Some((_, oldest)) = self.order.pop_first() else {
                        break;
                    };
                    self.entries.remove(&oldest);
                }
            }
        }
        self.order.insert(stamp, key.to_owned());
        stamp
    }

    /// How many entries it holds.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether `key` is present (without marking it used).
    #[cfg(test)]
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.entries.contains_key(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evicts_the_least_recently_used() {
        let mut cache = LruCache::new(2);
        cache.put("a".into(), 1);
        cache.put("b".into(), 2);
        assert_eq!(cache.get_mut("a"), Some(&mut 1)); // "b" is now the oldest
        cache.put("c".into(), 3);
        assert!(cache.contains("a") && cache.contains("c") && !cache.contains("b"));
        assert_eq!(cache.len(), 2);
    }

    #[test]
    fn replacing_refreshes_and_keeps_size() {
        let mut cache = LruCache::new(2);
        cache.put("a".into(), 1);
        cache.put("b".into(), 2);
        cache.put("a".into(), 10); // "b" is now the oldest
        cache.put("c".into(), 3);
        assert_eq!(cache.get_mut("a"), Some(&mut 10));
        assert!(!cache.contains("b"));
        assert_eq!(cache.order.len(), cache.len());
    }

    #[test]
    fn get_or_insert_with_inserts_once() {
        let mut cache = LruCache::new(0); // holds one
        *cache.get_or_insert_with("a", || 1) += 1;
        assert_eq!(*cache.get_or_insert_with("a", || 100), 2);
        assert_eq!(*cache.get_or_insert_with("b", || 7), 7);
        assert_eq!(cache.len(), 1);
        assert!(cache.get_mut("a").is_none());
    }

    #[test]
    fn stays_bounded_under_many_keys() {
        let mut cache = LruCache::new(4096);
        for i in 0..10_000 {
            cache.put(format!("key-{i}"), i);
        }
        assert_eq!(cache.len(), 4096);
        assert_eq!(cache.order.len(), 4096);
        assert!(cache.contains("key-9999") && !cache.contains("key-5903"));
        assert!(cache.contains("key-5904"));
    }
}
