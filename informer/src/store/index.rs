//! Index functions and the index structures they feed: client-go's `IndexFunc`, `Indexers`,
//! `Indices` and `Index` (`tools/cache/index.go`).
//!
//! An index function maps an object to the values it is indexed under (its namespace, the
//! value of a label, the uids of its owners, ...). An index maps each value to the set of
//! objects that have it.
//!
//! Where it differs from client-go, and why:
//!
//! * An index function returns [`IndexValues`], which may *borrow* from the object
//!   (`Cow<str>`, with no allocation for the common one-value case) instead of a fresh
//!   `[]string`: the store calls index functions on every insert, update and delete, and on
//!   both the old and the new object of an update, so this keeps allocation off the write
//!   path. Index functions cannot fail (Go's store panics when one does).
//! * An index maps a value to a set of *slot numbers* (see `data.rs`), not of key strings: a
//!   member costs 4 bytes instead of a string header, and `by_index` reaches each object by
//!   array indexing instead of a second hash lookup. A value held by one object (a uid index)
//!   is stored inline, without a set allocation.

use std::borrow::Cow;
use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use clientgo_apimachinery::Object;
use hashbrown::hash_map::EntryRef;
use hashbrown::{HashMap, HashSet};

/// The name of the built-in namespace index (client-go's `NamespaceIndex`).
pub const NAMESPACE_INDEX: &str = "namespace";

/// The values one object is indexed under: zero, one or several strings, usually borrowed
/// from the object.
///
/// Build one with `into()` from a `&str`, a `String`, an `Option` of either, a `Vec`, or by
/// collecting an iterator:
///
/// ```
/// use clientgo_informer::IndexValues;
///
/// let one: IndexValues<'_> = "prod".into();
/// let none: IndexValues<'_> = None::<&str>.into();
/// let many: IndexValues<'_> = "a,b".split(',').collect();
/// assert_eq!((one.len(), none.len(), many.len()), (1, 0, 2));
/// assert_eq!(many.iter().collect::<Vec<_>>(), ["a", "b"]);
/// ```
#[derive(Clone, Default)]
pub struct IndexValues<'a>(Values<'a>);

#[derive(Clone, Default)]
enum Values<'a> {
    #[default]
    Empty,
    One(Cow<'a, str>),
    Many(Vec<Cow<'a, str>>),
}

impl<'a> IndexValues<'a> {
    /// No values: the object is not in the index.
    pub fn new() -> Self {
        IndexValues(Values::Empty)
    }

    /// Adds a value.
    pub fn push(&mut self, value: impl Into<Cow<'a, str>>) {
        let value = value.into();
        self.0 = match std::mem::take(&mut self.0) {
            Values::Empty => Values::One(value),
            Values::One(first) => Values::Many(vec![first, value]),
            Values::Many(mut all) => {
                all.push(value);
                Values::Many(all)
            }
        };
    }

    /// The values, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        let (one, many) = match &self.0 {
            Values::Empty => (None, &[][..]),
            Values::One(value) => (Some(value.as_ref()), &[][..]),
            Values::Many(all) => (None, all.as_slice()),
        };
        one.into_iter().chain(many.iter().map(Cow::as_ref))
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        match &self.0 {
            Values::Empty => 0,
            Values::One(_) => 1,
            Values::Many(all) => all.len(),
        }
    }

    /// Whether there is no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl PartialEq for IndexValues<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().eq(other.iter())
    }
}

impl Eq for IndexValues<'_> {}

impl fmt::Debug for IndexValues<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> From<&'a str> for IndexValues<'a> {
    fn from(value: &'a str) -> Self {
        IndexValues(Values::One(Cow::Borrowed(value)))
    }
}

impl<'a> From<&'a String> for IndexValues<'a> {
    fn from(value: &'a String) -> Self {
        IndexValues(Values::One(Cow::Borrowed(value)))
    }
}

impl From<String> for IndexValues<'_> {
    fn from(value: String) -> Self {
        IndexValues(Values::One(Cow::Owned(value)))
    }
}

impl<'a> From<Cow<'a, str>> for IndexValues<'a> {
    fn from(value: Cow<'a, str>) -> Self {
        IndexValues(Values::One(value))
    }
}

impl<'a, V: Into<Cow<'a, str>>> From<Option<V>> for IndexValues<'a> {
    fn from(value: Option<V>) -> Self {
        value.into_iter().collect()
    }
}

impl From<Vec<String>> for IndexValues<'_> {
    fn from(values: Vec<String>) -> Self {
        values.into_iter().collect()
    }
}

impl<'a> From<Vec<&'a str>> for IndexValues<'a> {
    fn from(values: Vec<&'a str>) -> Self {
        values.into_iter().collect()
    }
}

impl<'a, V: Into<Cow<'a, str>>> FromIterator<V> for IndexValues<'a> {
    fn from_iter<I: IntoIterator<Item = V>>(iter: I) -> Self {
        let mut values = IndexValues::new();
        for value in iter {
            values.push(value);
        }
        values
    }
}

/// An index function (client-go's `IndexFunc`): the values an object is indexed under.
pub type IndexFunc<T> = Arc<dyn for<'a> Fn(&'a T) -> IndexValues<'a> + Send + Sync>;

/// Named index functions (client-go's `Indexers`).
///
/// ```
/// use clientgo_apimachinery::{DynamicObject, Object};
/// use clientgo_informer::{Indexers, IndexValues};
///
/// let indexers = Indexers::<DynamicObject>::namespace()
///     .with("by-app", |o: &DynamicObject| o.labels().get("app").into());
/// assert_eq!(indexers.names().collect::<Vec<_>>(), ["namespace", "by-app"]);
/// ```
pub struct Indexers<T> {
    funcs: Vec<(String, IndexFunc<T>)>,
}

impl<T> Indexers<T> {
    /// No index.
    pub fn new() -> Self {
        Indexers { funcs: Vec::new() }
    }

    /// Adds (or replaces) the index `name` (builder style).
    pub fn with<F>(mut self, name: impl Into<String>, func: F) -> Self
    where
        F: for<'a> Fn(&'a T) -> IndexValues<'a> + Send + Sync + 'static,
    {
        self.insert(name, Arc::new(func));
        self
    }

    /// Adds (or replaces) the index `name`.
    pub fn insert(&mut self, name: impl Into<String>, func: IndexFunc<T>) {
        let name = name.into();
        match self.funcs.iter_mut().find(|(n, _)| *n == name) {
            Some((_, existing)) => *existing = func,
            None => self.funcs.push((name, func)),
        }
    }

    /// The index names, in the order they were added.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.funcs.iter().map(|(name, _)| name.as_str())
    }

    /// How many indexes there are.
    pub fn len(&self) -> usize {
        self.funcs.len()
    }

    /// Whether there is no index.
    pub fn is_empty(&self) -> bool {
        self.funcs.is_empty()
    }

    pub(crate) fn into_funcs(self) -> Vec<(String, IndexFunc<T>)> {
        self.funcs
    }
}

impl<T: Object + 'static> Indexers<T> {
    /// Just the built-in namespace index, [`NAMESPACE_INDEX`].
    pub fn namespace() -> Self {
        Indexers::new().with(NAMESPACE_INDEX, meta_namespace_index_func::<T>)
    }
}

impl<T> Default for Indexers<T> {
    fn default() -> Self {
        Indexers::new()
    }
}

impl<T> Clone for Indexers<T> {
    fn clone(&self) -> Self {
        Indexers {
            funcs: self.funcs.clone(),
        }
    }
}

impl<T> fmt::Debug for Indexers<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// Indexes an object by its namespace (client-go's `MetaNamespaceIndexFunc`); cluster-scoped
/// objects are indexed under `""`.
pub fn meta_namespace_index_func<T: Object>(object: &T) -> IndexValues<'_> {
    object.namespace().into()
}

/// An index function indexing objects by the value of one label; objects without the label
/// are not indexed.
pub fn label_index_func<T: Object>(
    label: impl Into<String>,
) -> impl for<'a> Fn(&'a T) -> IndexValues<'a> + Send + Sync + 'static {
    let label = label.into();
    move |object: &T| object.labels().get(&label).into()
}

/// Why an index query or [`add_indexers`](crate::Indexer::add_indexers) failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IndexError {
    /// No index has this name.
    #[error("index with name {0} does not exist")]
    NoSuchIndex(String),
    /// Indexes with these names exist already.
    #[error("indexer conflict: {0:?} already exist")]
    Conflict(Vec<String>),
}

/// A hasher for slot numbers: they are ours (not attacker-chosen) and dense, so one
/// multiplication spreads them over the buckets (odd factor: a bijection on the low bits)
/// and mixes the high bits hashbrown uses as tags.
#[derive(Clone, Copy, Default)]
pub(crate) struct SlotHasher(u64);

impl Hasher for SlotHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    fn write_u32(&mut self, n: u32) {
        self.0 = u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

impl BuildHasher for SlotHasher {
    type Hasher = SlotHasher;
    fn build_hasher(&self) -> SlotHasher {
        SlotHasher(0)
    }
}

/// The objects (slot numbers) holding one index value.
pub(crate) enum SlotSet {
    One(u32),
    Many(HashSet<u32, SlotHasher>),
}

impl SlotSet {
    fn insert(&mut self, slot: u32) {
        match self {
            SlotSet::One(existing) if *existing == slot => {}
            SlotSet::One(existing) => {
                let mut set = HashSet::with_capacity_and_hasher(2, SlotHasher::default());
                set.insert(*existing);
                set.insert(slot);
                *self = SlotSet::Many(set);
            }
            SlotSet::Many(set) => {
                set.insert(slot);
            }
        }
    }

    /// Removes `slot`; returns whether the set is now empty.
    fn remove(&mut self, slot: u32) -> bool {
        match self {
            SlotSet::One(existing) => *existing == slot,
            SlotSet::Many(set) => {
                set.remove(&slot);
                set.is_empty()
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            SlotSet::One(_) => 1,
            SlotSet::Many(set) => set.len(),
        }
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        let (one, many) = match self {
            SlotSet::One(slot) => (Some(*slot), None),
            SlotSet::Many(set) => (None, Some(set.iter().copied())),
        };
        one.into_iter().chain(many.into_iter().flatten())
    }
}

/// One index: value → the slots holding it. Invariant: no value maps to an empty set
/// (client-go: `TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex`).
#[derive(Default)]
pub(crate) struct Index {
    values: HashMap<Box<str>, SlotSet, foldhash::fast::RandomState>,
}

impl Index {
    pub(crate) fn add(&mut self, value: &str, slot: u32) {
        match self.values.entry_ref(value) {
            EntryRef::Occupied(mut entry) => entry.get_mut().insert(slot),
            EntryRef::Vacant(entry) => {
                entry.insert(SlotSet::One(slot));
            }
        }
    }

    pub(crate) fn remove(&mut self, value: &str, slot: u32) {
        if let EntryRef::Occupied(mut entry) = self.values.entry_ref(value) {
            if entry.get_mut().remove(slot) {
                entry.remove();
            }
        }
    }

    pub(crate) fn get(&self, value: &str) -> Option<&SlotSet> {
        self.values.get(value)
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &str> {
        self.values.keys().map(|value| &**value)
    }
}
