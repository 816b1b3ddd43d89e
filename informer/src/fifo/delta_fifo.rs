//! [`DeltaFIFO`]: one queued entry per key, holding that key's deltas in order (client-go's
//! `delta_fifo.go`).
//!
//! A key enters the line when its first delta arrives and keeps its place while more arrive
//! (no line jumping); a pop hands out all of its deltas, oldest first. Compared with the
//! [`RealFIFO`](super::RealFIFO), a consumer sees the history of one object at once, and a
//! key is never in line twice.
//!
//! The rules, as in client-go:
//!
//! * Two consecutive deletions of a key collapse into one, keeping the real object over a
//!   [`DeletedFinalStateUnknown`] tombstone.
//! * A relist ([`ReflectorStore::replace`]) queues `Replaced` (or `Sync`, without
//!   [`DeltaFIFOOptions::emit_delta_type_replaced`]) for each listed object, then a tombstone
//!   deletion for each key that is queued, or known to the store, but not listed; the
//!   tombstone carries the newest queued object, else the known one.
//! * A deletion is dropped when the key is neither queued nor known (it was reported
//!   already, by a relist).
//! * A resync queues `Sync` with the known object for each known key *with nothing queued*:
//!   a queued change is newer than the store, and a resync must not bring back the older
//!   state.
//!
//! Relist, resync and delete read the store (the known objects), so an item is processed
//! under the queue's lock: nothing is decided between an item's pop and its arrival in the
//! store. The initial population is counted down after processing, not before as in
//! client-go, so `has_synced` never runs ahead of the store.
//!
//! **Back-pressure**, which client-go's DeltaFIFO lacks: the reflector waits
//! ([`ReflectorStore::has_room`]) while more than [`capacity`](DeltaFIFO::capacity) deltas of
//! watch events (`Added`, `Updated`, a `Deleted` with its final state) are queued, until the
//! consumer has taken them down to half. A relist's and a resync's deltas are not counted, as
//! the [`RealFIFO`](super::RealFIFO) counts a relist as one item: the reflector must not stop
//! reading its watch behind a relist it has already received.
//!
//! ## Invariants
//!
//! 1. A key is in `queue` iff it has an entry in `items`, and that entry is not empty.
//! 2. No key is in `queue` twice.
//! 3. `events` is the number of deltas in `items` that [`counts`] as watch events.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use clientgo_apimachinery::Object;
use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use super::{
    DEFAULT_QUEUE_CAPACITY, Delta, Deltas, Discard, KeyListerGetter, Population, Queue, SyncedFlag,
    transformed, wrap,
};
use crate::keys::{DeleteEvent, DeletedFinalStateUnknown, meta_namespace_key_func};
use crate::reflector_store::ReflectorStore;
use crate::transform::TransformFunc;

/// Options of a [`DeltaFIFO`] (client-go's `DeltaFIFOOptions`).
pub struct DeltaFIFOOptions<T> {
    /// The store the queue feeds, consulted by relists, resyncs and deletes.
    pub known_objects: Option<Arc<dyn KeyListerGetter<T>>>,
    /// Queue relisted objects as `Replaced` rather than `Sync` (informers do).
    pub emit_delta_type_replaced: bool,
    /// Applied to every object on enqueue.
    pub transform: Option<TransformFunc<T>>,
}

impl<T> Default for DeltaFIFOOptions<T> {
    fn default() -> Self {
        DeltaFIFOOptions {
            known_objects: None,
            emit_delta_type_replaced: false,
            transform: None,
        }
    }
}

/// A queue of per-key delta lists (client-go's `DeltaFIFO`): a key keeps its place in line
/// while its deltas accumulate, two consecutive deletions collapse (the real object wins
/// over a tombstone), a relist queues tombstones for keys queued or known but not listed, a
/// resync skips keys with queued changes, and items are processed under the queue's lock.
///
/// ```
/// use clientgo_apimachinery::DynamicObject;
/// use clientgo_informer::{Delta, DeltaFIFO, DeltaFIFOOptions, Queue, ReflectorStore};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let fifo = DeltaFIFO::<DynamicObject>::new(DeltaFIFOOptions::default());
/// fifo.add(DynamicObject::new("a"));
/// fifo.add(DynamicObject::new("b"));
/// fifo.update(DynamicObject::new("a"));
/// let deltas = fifo.pop(|deltas, _| deltas).await.unwrap();
/// assert!(matches!(deltas.as_slice(), [Delta::Added(_), Delta::Updated(_)]));
/// assert_eq!(fifo.len(), 1, "b is still queued");
/// # });
/// ```
pub struct DeltaFIFO<T> {
    state: Mutex<State<T>>,
    changed: Notify,
    /// The most watch-event deltas queued before the reflector waits.
    capacity: usize,
    /// Woken (all) when the watch-event deltas drop to half the capacity, or on a discard or
    /// a close.
    room: Notify,
    synced: Arc<SyncedFlag>,
    transform: RwLock<Option<TransformFunc<T>>>,
    known_objects: Option<Arc<dyn KeyListerGetter<T>>>,
    emit_delta_type_replaced: bool,
}

struct State<T> {
    items: HashMap<Arc<str>, Deltas<T>>,
    queue: VecDeque<Arc<str>>,
    /// The queued deltas that are watch events (invariant 3).
    events: usize,
    population: Population,
    closed: bool,
    /// Pushes are ignored while an informer stopped by a panic winds down.
    gate: Discard,
}

impl<T> State<T> {
    /// Appends a delta to a key's list, collapsing a repeated deletion; queues a new key.
    /// Returns whether the key entered the line.
    fn queue_action(&mut self, key: &str, delta: Delta<T>) -> bool {
        if counts(&delta) {
            self.events += 1;
        }
        if let Some(deltas) = self.items.get_mut(key) {
            deltas.push(delta);
            if dedup_deletions(deltas).as_ref().is_some_and(counts) {
                self.events -= 1;
            }
            return false;
        }
        let key: Arc<str> = Arc::from(key);
        self.items.insert(key.clone(), vec![delta]);
        self.queue.push_back(key);
        true
    }
}

/// Whether a delta counts against the capacity: a watch event (`Added`, `Updated`, or a
/// `Deleted` with its final state), not a relist's or a resync's.
fn counts<T>(delta: &Delta<T>) -> bool {
    match delta {
        Delta::Added(_) | Delta::Updated(_) => true,
        Delta::Deleted(event) => !event.is_tombstone(),
        _ => false,
    }
}

/// Collapses the last two deltas when both are deletions: keeps the older one, unless it
/// is a tombstone and the newer one is not (client-go's `dedupDeltas`/`isDeletionDup`).
/// Returns the delta dropped.
fn dedup_deletions<T>(deltas: &mut Deltas<T>) -> Option<Delta<T>> {
    let n = deltas.len();
    if n < 2 {
        return None;
    }
    if let (Delta::Deleted(older), Delta::Deleted(_)) = (&deltas[n - 2], &deltas[n - 1]) {
        if older.is_tombstone() {
            return Some(deltas.swap_remove(n - 2)); // the newer one moves into its place
        }
        return deltas.pop();
    }
    None
}

impl<T: Object + Send + Sync + 'static> DeltaFIFO<T> {
    /// A DeltaFIFO with these options (client-go's `NewDeltaFIFOWithOptions`).
    pub fn new(options: DeltaFIFOOptions<T>) -> Self {
        DeltaFIFO {
            state: Mutex::new(State {
                items: HashMap::new(),
                queue: VecDeque::new(),
                events: 0,
                population: Population::default(),
                gate: Discard::default(),
                closed: false,
            }),
            changed: Notify::new(),
            capacity: DEFAULT_QUEUE_CAPACITY,
            room: Notify::new(),
            synced: Arc::new(SyncedFlag::default()),
            transform: RwLock::new(options.transform),
            known_objects: options.known_objects,
            emit_delta_type_replaced: options.emit_delta_type_replaced,
        }
    }

    /// Bounds the watch-event deltas queued to `capacity` before the reflector waits (builder
    /// style; default [`DEFAULT_QUEUE_CAPACITY`]). Other producers are not refused: they may
    /// ask [`has_room`](ReflectorStore::has_room) themselves.
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// The bound given to [`with_capacity`](Self::with_capacity).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// The flag [`has_synced`](Self::has_synced) reads, shared with the informer's handler
    /// registrations.
    pub(crate) fn synced_flag(&self) -> Arc<SyncedFlag> {
        self.synced.clone()
    }

    pub(crate) fn set_transform(&self, transform: Option<TransformFunc<T>>) {
        *self.transform.write() = transform;
    }

    fn transform_func(&self) -> Option<TransformFunc<T>> {
        self.transform.read().clone()
    }

    /// Runs `f` on the state under the lock, then wakes pops if a key entered the line.
    fn with_state(&self, f: impl FnOnce(&mut State<T>, Option<&dyn KeyListerGetter<T>>) -> usize) {
        let added = {
            let mut state = self.state.lock();
            if state.gate.is_on() {
                return;
            }
            let added = f(&mut state, self.known_objects.as_deref());
            if state.population.synced() {
                self.synced.set();
            }
            added
        };
        for _ in 0..added.min(2) {
            self.changed.notify_one();
        }
    }

    fn event(&self, delta: Delta<T>, key: String) {
        self.with_state(|state, _| {
            state.population.touch();
            usize::from(state.queue_action(&key, delta))
        });
    }

    /// A relist of objects already transformed and wrapped.
    fn replace_arcs(&self, objects: Vec<Arc<T>>, _resource_version: String) {
        let objects: Vec<(String, Arc<T>)> = objects
            .into_iter()
            .map(|o| (meta_namespace_key_func(&*o), o))
            .collect();
        let replaced = self.emit_delta_type_replaced;
        self.with_state(|state, known| {
            let mut added = 0;
            let keys: HashSet<String> = objects.iter().map(|(k, _)| k.clone()).collect();
            for (key, object) in objects {
                let delta = if replaced {
                    Delta::Replaced(object)
                } else {
                    Delta::Sync(object)
                };
                added += usize::from(state.queue_action(&key, delta));
            }
            // Queued keys missing from the list: deleted while the watch was down.
            let missing: Vec<(Arc<str>, Option<Arc<T>>)> = state
                .queue
                .iter()
                .filter(|k| !keys.contains(&***k))
                .map(|k| {
                    let newest = state.items.get(k).and_then(|d| d.last());
                    (k.clone(), newest.and_then(Delta::object).cloned())
                })
                .collect();
            let mut deletions = missing.len();
            for (key, object) in missing {
                state.queue_action(&key, tombstone(key.to_string(), object));
            }
            // Known keys missing from the list, with nothing queued.
            if let Some(known) = known {
                for key in known.list_keys() {
                    if keys.contains(&key) || state.items.contains_key(key.as_str()) {
                        continue;
                    }
                    let object = known.get_by_key(&key);
                    if object.is_none() {
                        tracing::warn!(%key, "key vanished from the known objects; queueing a tombstone without object");
                    }
                    deletions += 1;
                    added += usize::from(state.queue_action(&key, tombstone(key.clone(), object)));
                }
            }
            state.population.replaced(keys.len() + deletions);
            added
        });
    }

    /// The deltas queued for `key`, oldest first (a copy; for inspection and tests).
    pub fn get_by_key(&self, key: &str) -> Option<Deltas<T>> {
        self.state.lock().items.get(key).cloned()
    }

    /// The queued keys, in line order.
    pub fn list_keys(&self) -> Vec<String> {
        let state = self.state.lock();
        state.queue.iter().map(|k| k.to_string()).collect()
    }

    /// Waits for the next key and processes its deltas; see [`Queue::pop`].
    pub async fn pop<R>(&self, process: impl FnOnce(Deltas<T>, bool) -> R) -> Option<R> {
        let mut process = Some(process);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.state.lock();
                while let Some(key) = state.queue.pop_front() {
                    let Some(deltas) = state.items.remove(&key) else {
                        continue; // cannot happen (invariant 1)
                    };
                    let was_full = state.events > self.capacity / 2;
                    state.events -= deltas.iter().filter(|d| counts(d)).count();
                    if was_full && state.events <= self.capacity / 2 {
                        self.room.notify_waiters();
                    }
                    let initial = !state.population.synced();
                    let process = process.take()?;
                    // Under the lock: a relist or resync must not run between this pop and
                    // the arrival of these deltas in the store.
                    let result = process(deltas, initial);
                    state.population.processed();
                    if state.population.synced() {
                        self.synced.set();
                    }
                    return Some(result);
                }
                if state.closed {
                    return None;
                }
            }
            changed.await;
        }
    }

    /// Closes the queue: pops drain what is queued, then return `None`.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.changed.notify_waiters();
        self.room.notify_waiters();
    }

    /// Whether the queue was closed.
    pub fn is_closed(&self) -> bool {
        self.state.lock().closed
    }

    /// See [`Discard`](super::Discard): the informer stopped on a panic.
    pub(crate) fn discard(&self) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        state.gate.discard(&mut state.population, &self.synced);
        state.queue.clear();
        state.events = 0;
        let dropped = std::mem::take(&mut state.items);
        drop(guard);
        self.room.notify_waiters();
        drop(dropped); // outside the lock
    }

    pub(crate) fn reopen(&self) {
        let mut guard = self.state.lock();
        let state = &mut *guard;
        state.gate.reopen(&mut state.closed);
    }

    /// Whether the first relist was popped and processed (or an event came first).
    pub fn has_synced(&self) -> bool {
        self.synced.is_set()
    }

    /// Waits until [`has_synced`](Self::has_synced).
    pub async fn wait_synced(&self) {
        self.synced.wait().await
    }

    /// How many keys are queued.
    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T: Object + Send + Sync + 'static> ReflectorStore<T> for DeltaFIFO<T> {
    fn has_room(&self) -> bool {
        let state = self.state.lock();
        state.events < self.capacity || state.closed || state.gate.is_on()
    }

    fn room(&self) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(super::wait_for_room(&self.room, || {
            let state = self.state.lock();
            state.events <= self.capacity / 2 || state.closed || state.gate.is_on()
        }))
    }

    fn add(&self, object: T) {
        let object = wrap(self.transform_func().as_ref(), object);
        let key = meta_namespace_key_func(&*object);
        self.event(Delta::Added(object), key);
    }

    fn update(&self, object: T) {
        let object = wrap(self.transform_func().as_ref(), object);
        let key = meta_namespace_key_func(&*object);
        self.event(Delta::Updated(object), key);
    }

    fn delete(&self, object: T) {
        let object = wrap(self.transform_func().as_ref(), object);
        let key = meta_namespace_key_func(&*object);
        self.with_state(|state, known| {
            state.population.touch();
            let queued = state.items.contains_key(key.as_str());
            let known = known.is_some_and(|k| k.get_by_key(&key).is_some());
            if !queued && !known {
                // Neither queued nor known: a relist reported this deletion already.
                return 0;
            }
            let delta = Delta::Deleted(DeleteEvent::Object(object));
            usize::from(state.queue_action(&key, delta))
        });
    }

    fn transform(&self, object: T) -> T {
        transformed(self.transform_func().as_ref(), object)
    }

    fn replace_transformed(&self, objects: Vec<T>, rv: String) {
        self.replace_arcs(objects.into_iter().map(Arc::new).collect(), rv);
    }

    fn replace(&self, objects: Vec<T>, resource_version: String) {
        let transform = self.transform_func();
        let objects = objects
            .into_iter()
            .map(|o| wrap(transform.as_ref(), o))
            .collect();
        self.replace_arcs(objects, resource_version);
    }

    fn resync(&self) {
        self.with_state(|state, known| {
            let Some(known) = known else {
                return 0;
            };
            let mut added = 0;
            for key in known.list_keys() {
                if state.items.contains_key(key.as_str()) {
                    continue; // a queued change is newer than the store
                }
                match known.get_by_key(&key) {
                    Some(object) => added += usize::from(state.queue_action(&key, Delta::Sync(object))),
                    None => {
                        tracing::warn!(%key, "key vanished from the known objects; not resyncing it")
                    }
                }
            }
            added
        });
    }
}

fn tombstone<T>(key: String, object: Option<Arc<T>>) -> Delta<T> {
    Delta::Deleted(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
        key, object,
    )))
}

impl<T: Object + Send + Sync + 'static> Queue<T> for DeltaFIFO<T> {
    fn pop<R, F>(&self, process: F) -> impl Future<Output = Option<R>> + Send
    where
        F: FnOnce(Deltas<T>, bool) -> R + Send,
        R: Send,
    {
        DeltaFIFO::pop(self, process)
    }

    fn close(&self) {
        DeltaFIFO::close(self)
    }

    fn is_closed(&self) -> bool {
        DeltaFIFO::is_closed(self)
    }

    fn has_synced(&self) -> bool {
        DeltaFIFO::has_synced(self)
    }

    fn wait_synced(&self) -> impl Future<Output = ()> + Send {
        DeltaFIFO::wait_synced(self)
    }

    fn len(&self) -> usize {
        DeltaFIFO::len(self)
    }
}

impl<T> fmt::Debug for DeltaFIFO<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("DeltaFIFO")
            .field("queued", &state.queue.len())
            .field("population", &state.population)
            .field("closed", &state.closed)
            .finish()
    }
}

#[cfg(test)]
#[path = "delta_fifo_tests.rs"]
mod tests;
