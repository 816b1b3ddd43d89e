//! The informer's cache: a thread-safe store of objects with named indexes. One type,
//! [`Indexer`], plays client-go's `ThreadSafeStore`, `Indexer` and `cache` (`Store`) roles
//! (`tools/cache/thread_safe_store.go`, `index.go`, `store.go`).
//!
//! Objects are keyed by `namespace/name` (cluster-scoped: `name`) and held as `Arc<T>`:
//! readers get shared references, never copies, and must treat them as immutable. Index
//! functions ([`Indexers`]) map an object to index values; [`Indexer::by_index`] returns the
//! objects with a value, the built-in [`NAMESPACE_INDEX`] serves namespace listers.
//!
//! ## Consistency and locking
//!
//! One `parking_lot::RwLock` guards the objects, the key table, every index and the
//! resourceVersion together. A write (add, update, delete, replace, add_indexers) changes all
//! of them in one critical section, so a reader never sees an index that disagrees with the
//! objects: `by_index` returns no object that no longer has the value and misses none that
//! has it. Reads share the lock and run in parallel.
//!
//! Why not `dashmap`: a sharded map makes single-key reads cheaper under contention, but an
//! update touches the object table *and* index sets that span shards; keeping them in
//! agreement would need a lock over all shards anyway. An informer's store has one writer
//! (its process loop) and many readers, which is what a reader-writer lock is for;
//! parking_lot's is small, uncontended-fast and never poisoned.
//!
//! Work is kept outside the lock where it can be: key hashes are computed before locking,
//! replaced objects are dropped after unlocking (freeing a large object can take a while),
//! and [`Indexer::replace`] builds the new content, indexes included, before taking the lock
//! only to swap it in.
//!
//! ## Memory
//!
//! Per object the store adds an 8-byte slot, a 4-byte key hash, a 4-byte key table entry
//! (the key string is not stored: objects are hashed and compared by their own namespace
//! and name) and 4 bytes per index membership, plus hash table slack. Index values are
//! stored once per distinct value, not once per object. Measured with 100,000 Pods (S1 of
//! the workloads, release build, RSS): 20 bytes per object without indexes, 40 with a
//! namespace and a label index. Inserting them runs at 1.3 to 1.8 million per second and a
//! `by_index` returning 1,000 of them takes 18 to 31 µs on our 2-core machine (client-go:
//! 558 k/s and 70 µs). See `data.rs` and `index.rs`.
//!
//! An informer with metrics also keeps each object's estimated size (4 more bytes per
//! object), estimated once as the object comes in, outside the lock, for
//! `informer_cache_bytes` (see the `metrics` module).
//!
//! ## Resource versions (read-your-writes)
//!
//! The store records the resourceVersion it has caught up to: from each object written by
//! [`add`](Indexer::add)/[`update`](Indexer::update)/[`delete`](Indexer::delete), from
//! [`replace`](Indexer::replace) and from [`bookmark`](Indexer::bookmark).
//! [`Indexer::wait_for_resource_version`] waits until it reaches a given one (see `rv.rs`).
//! That is exact when the store is fed in resourceVersion order, as an informer's default
//! [`RealFIFO`](crate::RealFIFO) does; a [`DeltaFIFO`](crate::DeltaFIFO) reorders changes
//! across keys, so a wait can return before an older change to another key is applied.
//!
//! Where it differs from client-go: `add` and `update` return the object they replaced (the
//! informer needs it for `on_update(old, new)`, and Go reads it with a second lookup); keys
//! cannot fail; index functions cannot fail; `index_keys` and `list_index_func_values` are
//! sorted. An index function that panics leaves the store as it was: every write calls all
//! index functions before it changes anything (client-go's store panics half-way; see the
//! `panics` module for what the informer then does).

mod data;
mod index;
mod rv;

use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use clientgo_apimachinery::{Object, object_key};
use parking_lot::RwLock;
use tokio::sync::Notify;

use crate::fifo::KeyListerGetter;
use crate::metrics::ObjectSizeFn;
use crate::reflector_store::ReflectorStore;
use crate::transform::TransformFunc;
use data::{Data, KeyHasher, key_hash, split_for_lookup};

pub use index::{
    IndexError, IndexFunc, IndexValues, Indexers, NAMESPACE_INDEX, label_index_func,
    meta_namespace_index_func,
};
pub use rv::{InvalidResourceVersion, WaitForResourceVersionError};

/// A thread-safe store of objects with named indexes (client-go's `Indexer`, `Store` and
/// `ThreadSafeStore`), keyed by `namespace/name` and holding `Arc<T>`s.
///
/// One lock guards objects, indexes and the resourceVersion together: a reader never sees
/// an index that disagrees with the objects. Objects are shared, never copied; treat them as
/// immutable. The store records the resourceVersion it has caught up to, and
/// [`wait_for_resource_version`](Indexer::wait_for_resource_version) waits for it.
///
/// ```
/// use std::sync::Arc;
/// use clientgo_apimachinery::{DynamicObject, Object};
/// use clientgo_informer::{Indexer, Indexers, NAMESPACE_INDEX};
///
/// let store = Indexer::with_indexers(Indexers::namespace());
/// store.add(Arc::new(DynamicObject::new("a").within("prod")));
/// store.add(Arc::new(DynamicObject::new("b").within("dev")));
/// let prod = store.by_index(NAMESPACE_INDEX, "prod")?;
/// assert_eq!(prod[0].key(), "prod/a");
/// assert!(store.get_by_key("dev/b").is_some());
/// # Ok::<(), clientgo_informer::IndexError>(())
/// ```
pub struct Indexer<T> {
    locked: RwLock<Locked<T>>,
    hasher: KeyHasher,
    transform: Option<TransformFunc<T>>,
    /// Set once the store keeps object sizes (see [`keep_sizes`](Indexer::keep_sizes)).
    sizer: OnceLock<ObjectSizeFn<T>>,
    /// Woken when the resourceVersion changes while someone waits for one.
    rv_changed: Notify,
    /// How many `wait_for_resource_version` calls are waiting. A waiter counts itself before
    /// its first check (made under the lock) and a writer reads the count under the write
    /// lock, so a writer that sees 0 knows every waiter will see its change when it checks.
    rv_waiters: AtomicUsize,
}

struct Locked<T> {
    data: Data<T>,
    rv: rv::RvState,
    /// Bumped by `add_indexers`, so a `replace` built outside the lock notices new indexes.
    indexers_version: u64,
}

impl<T: Object> Default for Indexer<T> {
    fn default() -> Self {
        Indexer::new()
    }
}

impl<T: Object> Indexer<T> {
    /// A store without indexes (client-go's `NewStore`).
    pub fn new() -> Self {
        Indexer::with_indexers(Indexers::new())
    }

    /// A store with these indexes (client-go's `NewIndexer`).
    pub fn with_indexers(indexers: Indexers<T>) -> Self {
        Indexer {
            locked: RwLock::new(Locked {
                data: Data::new(&indexers.into_funcs()),
                rv: rv::RvState::default(),
                indexers_version: 0,
            }),
            hasher: KeyHasher::default(),
            transform: None,
            sizer: OnceLock::new(),
            rv_changed: Notify::new(),
            rv_waiters: AtomicUsize::new(0),
        }
    }

    /// Applies `transform` to objects written through [`ReflectorStore`] (client-go's
    /// `WithTransformer`), for a store fed directly by a reflector.
    pub fn with_transform(mut self, transform: impl Fn(T) -> T + Send + Sync + 'static) -> Self {
        self.transform = Some(Arc::new(transform));
        self
    }

    fn hash(&self, namespace: &str, name: &str) -> u32 {
        key_hash(&self.hasher, namespace, name)
    }

    /// Runs a write; wakes resourceVersion waiters after unlocking if the version changed.
    fn write<R>(&self, f: impl FnOnce(&mut Locked<T>) -> (R, bool)) -> R {
        let (result, wake) = {
            let mut locked = self.locked.write();
            let (result, rv_changed) = f(&mut locked);
            (
                result,
                rv_changed && self.rv_waiters.load(Ordering::Relaxed) > 0,
            )
        };
        if wake {
            self.rv_changed.notify_waiters();
        }
        result
    }

    /// Starts keeping an estimate of each object's size, made by `estimate` as objects come
    /// in; the objects already stored are measured now. Only the first call has an effect.
    pub(crate) fn keep_sizes(&self, estimate: ObjectSizeFn<T>) {
        if self.sizer.set(estimate).is_err() {
            return;
        }
        self.write(|locked| {
            locked.data.keep_sizes(&|object| self.object_size(object));
            ((), false)
        });
    }

    /// How many objects are stored and, if sizes are kept, their estimated total size.
    pub(crate) fn size_stats(&self) -> (usize, Option<u64>) {
        let locked = self.locked.read();
        (locked.data.len(), locked.data.total_size())
    }

    /// `object`'s estimated size (0 when sizes are not kept), clamped to 4 GiB.
    fn object_size(&self, object: &T) -> u32 {
        self.sizer.get().map_or(0, |estimate| {
            u32::try_from(estimate(object)).unwrap_or(u32::MAX)
        })
    }

    fn upsert(&self, object: Arc<T>, record_rv: bool) -> Option<Arc<T>> {
        let hash = self.hash(object.namespace(), object.name());
        let size = self.object_size(&object);
        self.write(|locked| {
            // The resourceVersion after the change: an index function that panics leaves
            // both as they were.
            let rv = record_rv.then(|| object.clone());
            let old = locked.data.upsert(hash, object, size);
            let changed = rv.is_some_and(|o| locked.rv.set(o.resource_version()));
            (old, changed)
        })
    }

    /// Adds `object`, replacing the object with its key if there is one; returns the
    /// replaced object. Records the object's resourceVersion.
    pub fn add(&self, object: Arc<T>) -> Option<Arc<T>> {
        self.upsert(object, true)
    }

    /// Same as [`add`](Self::add) (client-go's `Update`).
    pub fn update(&self, object: Arc<T>) -> Option<Arc<T>> {
        self.upsert(object, true)
    }

    /// Like [`add`](Self::add), without recording the resourceVersion: for objects that do
    /// not arrive in resourceVersion order (the items of a non-atomic relist, resyncs).
    pub(crate) fn upsert_untracked(&self, object: Arc<T>) -> Option<Arc<T>> {
        self.upsert(object, false)
    }

    /// Removes the object with `object`'s key; returns the removed one. Records `object`'s
    /// resourceVersion (that of the deletion).
    pub fn delete(&self, object: &T) -> Option<Arc<T>> {
        let hash = self.hash(object.namespace(), object.name());
        self.write(|locked| {
            let removed = locked.data.remove(hash, object.namespace(), object.name());
            let changed = locked.rv.set(object.resource_version());
            (removed, changed)
        })
    }

    /// Removes the object with this key; returns it.
    pub fn delete_key(&self, key: &str) -> Option<Arc<T>> {
        let (namespace, name) = split_for_lookup(key);
        let hash = self.hash(namespace, name);
        self.write(|locked| (locked.data.remove(hash, namespace, name), false))
    }

    /// The stored object with `object`'s key.
    pub fn get(&self, object: &T) -> Option<Arc<T>> {
        let hash = self.hash(object.namespace(), object.name());
        self.locked
            .read()
            .data
            .get(hash, object.namespace(), object.name())
            .cloned()
    }

    /// The object with this key (`namespace/name`, or `name` when cluster-scoped).
    pub fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        let (namespace, name) = split_for_lookup(key);
        let hash = self.hash(namespace, name);
        self.locked.read().data.get(hash, namespace, name).cloned()
    }

    /// The object `name` of `namespace` (`""` when cluster-scoped), its key not built.
    pub(crate) fn get_in(&self, namespace: &str, name: &str) -> Option<Arc<T>> {
        let hash = self.hash(namespace, name);
        self.locked.read().data.get(hash, namespace, name).cloned()
    }

    /// Whether an object with this key is stored.
    pub fn contains_key(&self, key: &str) -> bool {
        let (namespace, name) = split_for_lookup(key);
        let hash = self.hash(namespace, name);
        self.locked
            .read()
            .data
            .find(hash, namespace, name)
            .is_some()
    }

    /// Every stored object, in no particular order.
    pub fn list(&self) -> Vec<Arc<T>> {
        let locked = self.locked.read();
        let mut objects = Vec::with_capacity(locked.data.len());
        objects.extend(locked.data.objects().cloned());
        objects
    }

    /// The objects for which `keep` is true, tested under the read lock.
    pub(crate) fn list_matching(&self, mut keep: impl FnMut(&T) -> bool) -> Vec<Arc<T>> {
        let locked = self.locked.read();
        locked.data.objects().filter(|o| keep(o)).cloned().collect()
    }

    /// Every stored key, in no particular order.
    pub fn list_keys(&self) -> Vec<String> {
        let locked = self.locked.read();
        locked
            .data
            .objects()
            .map(|o| object_key(o.namespace(), o.name()))
            .collect()
    }

    /// How many objects are stored.
    pub fn len(&self) -> usize {
        self.locked.read().data.len()
    }

    /// Whether the store is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Replaces the whole content with `objects` (a later object wins over an earlier one
    /// with the same key) and records `resource_version`, atomically: readers see the old
    /// content or the new one, indexes included.
    pub fn replace(&self, objects: Vec<Arc<T>>, resource_version: &str) {
        let len = objects.len();
        let old = self.swap(objects.into_iter(), len, resource_version);
        drop(old); // outside the lock: freeing the old objects takes time
    }

    /// [`replace`](Self::replace), also returning, for each input object, the object that
    /// had its key before, and the objects whose keys are not in `objects` (to tell handlers
    /// what the replace changed).
    pub(crate) fn replace_with_diff(
        &self,
        objects: &[Arc<T>],
        resource_version: &str,
    ) -> (Vec<Option<Arc<T>>>, Vec<Arc<T>>) {
        let old = self.swap(objects.iter().cloned(), objects.len(), resource_version);
        old.diff(&self.hasher, objects)
    }

    fn swap(
        &self,
        objects: impl Iterator<Item = Arc<T>>,
        len: usize,
        resource_version: &str,
    ) -> Data<T> {
        let (funcs, version) = {
            let locked = self.locked.read();
            (locked.data.funcs(), locked.indexers_version)
        };
        let object_size = |object: &T| self.object_size(object);
        let size: Option<&dyn Fn(&T) -> u32> = match self.sizer.get() {
            Some(_) => Some(&object_size),
            None => None,
        };
        let mut data = Data::build(&self.hasher, &funcs, objects, len, size);
        self.write(|locked| {
            if locked.indexers_version != version {
                data.reindex(locked.data.funcs());
            }
            if self.sizer.get().is_some() {
                // Sizes were switched on while this content was being built.
                data.keep_sizes(&object_size);
            }
            let changed = locked.rv.set(resource_version);
            (std::mem::replace(&mut locked.data, data), changed)
        })
    }

    /// Records that the collection reached `resource_version` (a watch bookmark).
    pub fn bookmark(&self, resource_version: &str) {
        self.write(|locked| ((), locked.rv.set(resource_version)));
    }

    /// The resourceVersion the store has caught up to; `""` before anything was recorded
    /// (client-go's `LastStoreSyncResourceVersion`).
    pub fn last_resource_version(&self) -> String {
        self.locked.read().rv.last().to_owned()
    }

    /// Waits until the store has caught up to `resource_version`, at most `timeout`: the
    /// read-your-writes barrier for a reconciler that just wrote an object and wants to read
    /// the cache only once it reflects that write.
    ///
    /// Versions are compared as apimachinery's `CompareResourceVersion` does; one it refuses
    /// (empty, `"0"`, a leading zero, anything but digits) fails at once with
    /// [`WaitForResourceVersionError::Invalid`]. Compare only versions of the store's own
    /// resource: a version written to another resource says nothing about this store.
    ///
    /// The store reaches a version through the events of its informer, and through
    /// bookmarks. An informer whose selector filters out the written object never sees the
    /// write itself: the wait ends with the next bookmark at or past it, or times out.
    pub async fn wait_for_resource_version(
        &self,
        resource_version: &str,
        timeout: Duration,
    ) -> Result<(), WaitForResourceVersionError> {
        let target = resource_version;
        rv::validate(target).map_err(|reason| WaitForResourceVersionError::Invalid {
            resource_version: target.to_owned(),
            reason,
        })?;
        let deadline = tokio::time::Instant::now() + timeout;
        let _waiting = WaiterGuard::register(&self.rv_waiters);
        loop {
            // Created before the check, so a change made after the check wakes it.
            let changed = self.rv_changed.notified();
            if self.locked.read().rv.reached(target) {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(WaitForResourceVersionError::Timeout {
                    wanted: resource_version.to_owned(),
                    reached: self.last_resource_version(),
                    waited: timeout,
                });
            }
        }
    }

    /// The objects whose values for `index_name` intersect those of `object` (client-go's
    /// `Index`).
    pub fn index(&self, index_name: &str, object: &T) -> Result<Vec<Arc<T>>, IndexError> {
        let locked = self.locked.read();
        let slot = locked
            .data
            .index_slot(index_name)
            .ok_or_else(|| IndexError::NoSuchIndex(index_name.to_owned()))?;
        let values = (slot.func)(object);
        let mut slots: Vec<u32> = values
            .iter()
            .filter_map(|value| slot.index.get(value))
            .flat_map(|set| set.iter())
            .collect();
        if values.len() > 1 {
            slots.sort_unstable();
            slots.dedup();
        }
        Ok(slots
            .into_iter()
            .filter_map(|s| locked.data.object(s).cloned())
            .collect())
    }

    /// The keys of the objects with `value` in the index `index_name`, sorted (client-go's
    /// `IndexKeys`).
    pub fn index_keys(&self, index_name: &str, value: &str) -> Result<Vec<String>, IndexError> {
        let locked = self.locked.read();
        let index = locked
            .data
            .index(index_name)
            .ok_or_else(|| IndexError::NoSuchIndex(index_name.to_owned()))?;
        let mut keys: Vec<String> = index
            .get(value)
            .map(|set| {
                locked
                    .data
                    .objects_in(set)
                    .map(|o| object_key(o.namespace(), o.name()))
                    .collect()
            })
            .unwrap_or_default();
        keys.sort_unstable();
        Ok(keys)
    }

    /// The objects with `value` in the index `index_name` (client-go's `ByIndex`).
    pub fn by_index(&self, index_name: &str, value: &str) -> Result<Vec<Arc<T>>, IndexError> {
        self.by_index_matching(index_name, value, |_| true)
    }

    /// The objects with `value` in the index for which `keep` is true, tested under the
    /// read lock.
    pub(crate) fn by_index_matching(
        &self,
        index_name: &str,
        value: &str,
        mut keep: impl FnMut(&T) -> bool,
    ) -> Result<Vec<Arc<T>>, IndexError> {
        let locked = self.locked.read();
        let index = locked
            .data
            .index(index_name)
            .ok_or_else(|| IndexError::NoSuchIndex(index_name.to_owned()))?;
        let Some(set) = index.get(value) else {
            return Ok(Vec::new());
        };
        let mut objects = Vec::with_capacity(set.len());
        objects.extend(locked.data.objects_in(set).filter(|o| keep(o)).cloned());
        Ok(objects)
    }

    /// The values present in the index `index_name`, sorted; empty for an unknown index
    /// (client-go's `ListIndexFuncValues`).
    pub fn list_index_func_values(&self, index_name: &str) -> Vec<String> {
        let locked = self.locked.read();
        let mut values: Vec<String> = locked
            .data
            .index(index_name)
            .map(|index| index.values().map(str::to_owned).collect())
            .unwrap_or_default();
        values.sort_unstable();
        values
    }

    /// Whether an index with this name exists.
    pub fn has_index(&self, index_name: &str) -> bool {
        self.locked.read().data.index(index_name).is_some()
    }

    /// The names of the indexes (client-go's `GetIndexers`).
    pub fn index_names(&self) -> Vec<String> {
        let locked = self.locked.read();
        locked.data.indices.iter().map(|i| i.name.clone()).collect()
    }

    /// Adds indexes, filling them from the objects already stored (client-go's
    /// `AddIndexers`). Fails, adding none, if any name is taken.
    pub fn add_indexers(&self, indexers: Indexers<T>) -> Result<(), IndexError> {
        let funcs = indexers.into_funcs();
        self.write(|locked| {
            let mut conflicts: Vec<String> = funcs
                .iter()
                .filter(|(name, _)| locked.data.index(name).is_some())
                .map(|(name, _)| name.clone())
                .collect();
            if !conflicts.is_empty() {
                conflicts.sort_unstable();
                return (Err(IndexError::Conflict(conflicts)), false);
            }
            // Every index is built before any is added: an index function that panics adds
            // none.
            let built: Vec<_> = funcs
                .into_iter()
                .map(|(name, func)| {
                    let index = locked.data.build_index(&func);
                    (name, func, index)
                })
                .collect();
            for (name, func, index) in built {
                locked.data.push_index(name, func, index);
            }
            locked.indexers_version += 1;
            (Ok(()), false)
        })
    }

    fn transformed(&self, object: T) -> T {
        match &self.transform {
            Some(transform) => transform(object),
            None => object,
        }
    }
}

/// Counts a waiter for as long as it waits; registered before its first check.
struct WaiterGuard<'a>(&'a AtomicUsize);

impl<'a> WaiterGuard<'a> {
    fn register(count: &'a AtomicUsize) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        WaiterGuard(count)
    }
}

impl Drop for WaiterGuard<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<T: Object + Send + Sync> ReflectorStore<T> for Indexer<T> {
    fn add(&self, object: T) {
        Indexer::add(self, Arc::new(self.transformed(object)));
    }

    fn update(&self, object: T) {
        Indexer::update(self, Arc::new(self.transformed(object)));
    }

    fn delete(&self, object: T) {
        Indexer::delete(self, &object);
    }

    fn replace(&self, objects: Vec<T>, resource_version: String) {
        let objects = objects
            .into_iter()
            .map(|o| Arc::new(self.transformed(o)))
            .collect();
        Indexer::replace(self, objects, &resource_version);
    }

    fn transform(&self, object: T) -> T {
        self.transformed(object)
    }

    fn replace_transformed(&self, objects: Vec<T>, resource_version: String) {
        let objects = objects.into_iter().map(Arc::new).collect();
        Indexer::replace(self, objects, &resource_version);
    }

    fn resync(&self) {}

    fn bookmark(&self, resource_version: &str) {
        Indexer::bookmark(self, resource_version);
    }
}

impl<T: Object + Send + Sync> KeyListerGetter<T> for Indexer<T> {
    fn list_keys(&self) -> Vec<String> {
        Indexer::list_keys(self)
    }

    fn get_by_key(&self, key: &str) -> Option<Arc<T>> {
        Indexer::get_by_key(self, key)
    }
}

impl<T: Object> fmt::Debug for Indexer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let locked = self.locked.read();
        f.debug_struct("Indexer")
            .field("len", &locked.data.len())
            .field(
                "indexes",
                &locked
                    .data
                    .indices
                    .iter()
                    .map(|i| i.name.as_str())
                    .collect::<Vec<_>>(),
            )
            .field("resource_version", &locked.rv.last())
            .finish()
    }
}

#[cfg(test)]
mod tests;
