//! [`RealFIFO`]: every notification, in arrival order (client-go's `the_real_fifo.go`).
//!
//! Unlike the [`DeltaFIFO`](super::DeltaFIFO), nothing is merged: each add, update and
//! delete is one queued [`Delta`], delivered in the order the reflector saw it, including
//! deletes of objects the informer never knew. It is the informer's default queue.
//!
//! Two modes, as in client-go:
//!
//! * **Atomic** ([`RealFIFO::new`], the default, client-go's `AtomicFIFO`): a relist is one
//!   [`Delta::ReplacedAll`] with every listed object, a resync one [`Delta::SyncAll`], and a
//!   bookmark one [`Delta::Bookmark`]. The process loop applies a relist to the store in one
//!   swap, so readers never see half a relist. The queue needs no view of the store, so it
//!   releases its lock while an item is processed (client-go's `UnlockWhileProcessingFIFO`):
//!   a long relist being applied never blocks the reflector's next event.
//! * **Non-atomic** ([`RealFIFO::with_known_objects`]): a relist becomes a tombstone
//!   [`Delta::Deleted`] for every key queued or known (to the store) but absent from the
//!   list, *then* one [`Delta::Replaced`] per listed object; a resync one [`Delta::Sync`] per
//!   known key with nothing queued. Those decisions read the store, so an item is processed
//!   under the queue's lock, as in client-go: a relist or resync never runs between an
//!   item's pop and its arrival in the store.
//!
//! ## Invariants
//!
//! 1. One item is processed at a time (`processing`), and items are processed in queue
//!    order: a pop that finds another item in processing waits.
//! 2. The initial population counter is decremented after the item's processing returned, so
//!    `has_synced` never runs ahead of the store (client-go's DeltaFIFO decremented before).
//! 3. Every push of an item wakes one waiting pop; `close` wakes them all. A pop registers
//!    for the wake-up before it looks at the queue, so none is lost.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use clientgo_apimachinery::Object;
use parking_lot::{Mutex, RwLock};
use tokio::sync::Notify;

use super::{
    Delta, Deltas, Discard, KeyListerGetter, Population, Queue, SyncedFlag, transformed, wrap,
};
use crate::keys::{DeleteEvent, DeletedFinalStateUnknown, meta_namespace_key_func};
use crate::reflector_store::ReflectorStore;
use crate::transform::TransformFunc;

/// How many items a [`RealFIFO`] holds before the reflector feeding it waits, by default:
/// enough for bursts of watch events, small enough that a stalled process loop holds at most
/// this many objects (a relist counts as one item).
pub const DEFAULT_QUEUE_CAPACITY: usize = 1000;

/// A queue of every change in arrival order, never merged (client-go's `RealFIFO`). Atomic
/// mode ([`RealFIFO::new`], what informers use) queues a relist as one
/// [`Delta::ReplacedAll`], a resync as one [`Delta::SyncAll`] and bookmarks as
/// [`Delta::Bookmark`]; non-atomic mode ([`RealFIFO::with_known_objects`]) queues a relist as
/// tombstones for vanished keys followed by one `Replaced` per object.
///
/// ```
/// use clientgo_apimachinery::DynamicObject;
/// use clientgo_informer::{Delta, Queue, RealFIFO, ReflectorStore};
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let fifo = RealFIFO::<DynamicObject>::new();
/// fifo.replace(vec![DynamicObject::new("a")], "10".into());
/// fifo.update(DynamicObject::new("a"));
/// let first = fifo.pop(|deltas, initial| (deltas, initial)).await.unwrap();
/// assert!(matches!(&first.0[0], Delta::ReplacedAll { objects, .. } if objects.len() == 1));
/// assert!(first.1, "part of the initial list");
/// assert!(fifo.has_synced());
/// let second = fifo.pop(|deltas, initial| (deltas, initial)).await.unwrap();
/// assert!(matches!(&second.0[0], Delta::Updated(_)) && !second.1);
/// # });
/// ```
pub struct RealFIFO<T> {
    state: Mutex<State<T>>,
    /// Woken on every push (one pop), at the end of a processing (one pop), on close (all).
    changed: Notify,
    /// The most items the reflector queues before it waits (see [`has_room`]).
    ///
    /// [`has_room`]: ReflectorStore::has_room
    capacity: usize,
    /// Woken (all) when the queue drains to half its capacity, is discarded or closed.
    room: Notify,
    synced: Arc<SyncedFlag>,
    transform: RwLock<Option<TransformFunc<T>>>,
    /// `None`: atomic mode.
    known_objects: Option<Arc<dyn KeyListerGetter<T>>>,
}

struct State<T> {
    items: VecDeque<Delta<T>>,
    population: Population,
    closed: bool,
    /// Pushes are ignored while an informer stopped by a panic winds down.
    gate: Discard,
    /// An item was popped and is being processed with the lock released (atomic mode).
    processing: bool,
}

impl<T: Object + Send + Sync + 'static> Default for RealFIFO<T> {
    fn default() -> Self {
        RealFIFO::new()
    }
}

impl<T: Object + Send + Sync + 'static> RealFIFO<T> {
    fn with_mode(known_objects: Option<Arc<dyn KeyListerGetter<T>>>) -> Self {
        RealFIFO {
            state: Mutex::new(State {
                items: VecDeque::new(),
                population: Population::default(),
                closed: false,
                gate: Discard::default(),
                processing: false,
            }),
            changed: Notify::new(),
            capacity: DEFAULT_QUEUE_CAPACITY,
            room: Notify::new(),
            synced: Arc::new(SyncedFlag::default()),
            transform: RwLock::new(None),
            known_objects,
        }
    }

    /// An atomic RealFIFO: relists, resyncs and bookmarks are single deltas (what informers
    /// use).
    pub fn new() -> Self {
        RealFIFO::with_mode(None)
    }

    /// A non-atomic RealFIFO: relists and resyncs become per-object deltas, computed against
    /// `known_objects` (the store the queue feeds).
    pub fn with_known_objects(known_objects: Arc<dyn KeyListerGetter<T>>) -> Self {
        RealFIFO::with_mode(Some(known_objects))
    }

    /// Bounds what the reflector queues to `capacity` items (builder style; default
    /// [`DEFAULT_QUEUE_CAPACITY`], at least 1). A reflector feeding a full queue waits until
    /// the process loop has drained it to half, so a slow process loop (a slow index
    /// function) slows the watch down instead of growing the queue. Pushes by other callers
    /// are not refused: they may ask [`has_room`](ReflectorStore::has_room) themselves.
    pub fn with_capacity(mut self, capacity: usize) -> Self {
        self.capacity = capacity.max(1);
        self
    }

    /// The bound given to [`with_capacity`](Self::with_capacity).
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Applies `transform` to every object on enqueue (builder style).
    pub fn with_transform(self, transform: impl Fn(T) -> T + Send + Sync + 'static) -> Self {
        *self.transform.write() = Some(Arc::new(transform));
        self
    }

    /// The flag [`has_synced`](Self::has_synced) reads, shared with the informer's handler
    /// registrations.
    pub(crate) fn synced_flag(&self) -> Arc<SyncedFlag> {
        self.synced.clone()
    }

    pub(crate) fn set_transform(&self, transform: Option<TransformFunc<T>>) {
        *self.transform.write() = transform;
    }

    /// Whether relists and resyncs are queued as single deltas.
    pub fn is_atomic(&self) -> bool {
        self.known_objects.is_none()
    }

    fn transform_func(&self) -> Option<TransformFunc<T>> {
        self.transform.read().clone()
    }

    /// Queues `deltas` under the lock, then `settle`s the population, and wakes pops after
    /// unlocking.
    fn push(
        &self,
        deltas: impl FnOnce(&State<T>) -> Vec<Delta<T>>,
        settle: impl FnOnce(&mut Population, usize),
    ) {
        let pushed = {
            let mut state = self.state.lock();
            if state.gate.is_on() {
                return;
            }
            let deltas = deltas(&state);
            let pushed = deltas.len();
            state.items.extend(deltas);
            let len = state.items.len();
            settle(&mut state.population, len);
            if state.population.synced() {
                self.synced.set();
            }
            pushed
        };
        // One wake-up per item, two at most: there is one consumer, and a second pop only
        // matters when several race (they re-check the queue before sleeping again).
        for _ in 0..pushed.min(2) {
            self.changed.notify_one();
        }
    }

    fn push_event(&self, delta: Delta<T>) {
        self.push(|_| vec![delta], |population, _| population.touch());
    }

    /// A relist of objects already transformed and wrapped.
    fn replace_arcs(&self, objects: Vec<Arc<T>>, resource_version: String) {
        match &self.known_objects {
            None => self.push(
                |_| {
                    vec![Delta::ReplacedAll {
                        objects,
                        resource_version,
                    }]
                },
                |population, len| population.replaced(len),
            ),
            Some(known) => self.replace_per_object(&**known, objects),
        }
    }

    /// The non-atomic relist: tombstones first, then one `Replaced` per object.
    fn replace_per_object(&self, known: &dyn KeyListerGetter<T>, objects: Vec<Arc<T>>) {
        let new_keys: HashSet<String> = objects
            .iter()
            .map(|o| meta_namespace_key_func(&**o))
            .collect();
        let deltas = |state: &State<T>| {
            // The last queued delta of each key, keys in first-queued order.
            let mut last: HashMap<String, usize> = HashMap::new();
            let mut order = Vec::new();
            for (i, delta) in state.items.iter().enumerate() {
                if let Some(key) = delta.key() {
                    if last.insert(key.clone(), i).is_none() {
                        order.push(key);
                    }
                }
            }
            let mut deltas = Vec::new();
            for key in order {
                if new_keys.contains(&key) {
                    continue;
                }
                let last_delta = &state.items[last[&key]];
                if let Delta::Deleted(_) = last_delta {
                    continue; // deleted already: no second deletion
                }
                let object = last_delta.object().cloned();
                deltas.push(tombstone(key, object));
            }
            for key in known.list_keys() {
                if new_keys.contains(&key) || last.contains_key(&key) {
                    continue;
                }
                let object = known.get_by_key(&key);
                if object.is_none() {
                    tracing::warn!(%key, "key vanished from the known objects; queueing a tombstone without object");
                }
                deltas.push(tombstone(key, object));
            }
            deltas.extend(objects.into_iter().map(Delta::Replaced));
            deltas
        };
        self.push(deltas, |population, len| population.replaced(len));
    }

    /// Waits for the next item and processes it; see [`Queue::pop`].
    pub async fn pop<R>(&self, process: impl FnOnce(Deltas<T>, bool) -> R) -> Option<R> {
        let mut process = Some(process);
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            {
                let mut state = self.state.lock();
                if !state.processing {
                    if let Some(delta) = state.items.pop_front() {
                        if state.items.len() == self.capacity / 2 {
                            self.room.notify_waiters();
                        }
                        let initial = !state.population.synced();
                        let process = process.take()?;
                        if self.is_atomic() {
                            state.processing = true;
                            drop(state);
                            let _done = Processed(self);
                            return Some(process(vec![delta], initial));
                        }
                        let result = process(vec![delta], initial);
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

    /// How many deltas are queued.
    pub fn len(&self) -> usize {
        self.state.lock().items.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Ends the processing of an atomic-mode item, also on unwind: counts it, wakes a pop.
struct Processed<'a, T>(&'a RealFIFO<T>);

impl<T> Drop for Processed<'_, T> {
    fn drop(&mut self) {
        {
            let mut state = self.0.state.lock();
            state.processing = false;
            state.population.processed();
            if state.population.synced() {
                self.0.synced.set();
            }
        }
        self.0.changed.notify_one();
    }
}

impl<T: Object + Send + Sync + 'static> ReflectorStore<T> for RealFIFO<T> {
    fn has_room(&self) -> bool {
        let state = self.state.lock();
        state.items.len() < self.capacity || state.closed || state.gate.is_on()
    }

    fn room(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(super::wait_for_room(&self.room, || {
            let state = self.state.lock();
            state.items.len() <= self.capacity / 2 || state.closed || state.gate.is_on()
        }))
    }

    fn transform(&self, object: T) -> T {
        transformed(self.transform_func().as_ref(), object)
    }

    fn replace_transformed(&self, objects: Vec<T>, rv: String) {
        self.replace_arcs(objects.into_iter().map(Arc::new).collect(), rv);
    }

    fn add(&self, object: T) {
        self.push_event(Delta::Added(wrap(self.transform_func().as_ref(), object)));
    }

    fn update(&self, object: T) {
        self.push_event(Delta::Updated(wrap(self.transform_func().as_ref(), object)));
    }

    fn delete(&self, object: T) {
        let object = wrap(self.transform_func().as_ref(), object);
        self.push_event(Delta::Deleted(DeleteEvent::Object(object)));
    }

    fn replace(&self, objects: Vec<T>, resource_version: String) {
        let transform = self.transform_func();
        let objects: Vec<Arc<T>> = objects
            .into_iter()
            .map(|o| wrap(transform.as_ref(), o))
            .collect();
        self.replace_arcs(objects, resource_version);
    }

    fn resync(&self) {
        let Some(known) = &self.known_objects else {
            // One queued resync is enough: a stalled process loop does not collect them.
            let queued = |state: &State<T>| state.items.iter().any(|d| matches!(d, Delta::SyncAll));
            self.push(
                |state| match queued(state) {
                    true => Vec::new(),
                    false => vec![Delta::SyncAll],
                },
                |_, _| {},
            );
            return;
        };
        let deltas = |state: &State<T>| {
            let queued: HashSet<String> = state.items.iter().filter_map(Delta::key).collect();
            let mut deltas = Vec::new();
            for key in known.list_keys() {
                // An object with a queued change is skipped: its resync would carry the
                // older state from the store (client-go: TestDeltaFIFO_UpdateResyncRace).
                if queued.contains(&key) {
                    continue;
                }
                match known.get_by_key(&key) {
                    Some(object) => deltas.push(Delta::Sync(object)),
                    None => {
                        tracing::warn!(%key, "key vanished from the known objects; not resyncing it")
                    }
                }
            }
            deltas
        };
        self.push(deltas, |_, _| {});
    }

    fn bookmark(&self, resource_version: &str) {
        if self.is_atomic() {
            let resource_version = resource_version.to_owned();
            self.push(|_| vec![Delta::Bookmark { resource_version }], |_, _| {});
        }
    }
}

impl<T: Object + Send + Sync + 'static> Queue<T> for RealFIFO<T> {
    fn pop<R, F>(&self, process: F) -> impl Future<Output = Option<R>> + Send
    where
        F: FnOnce(Deltas<T>, bool) -> R + Send,
        R: Send,
    {
        RealFIFO::pop(self, process)
    }

    fn close(&self) {
        RealFIFO::close(self)
    }

    fn is_closed(&self) -> bool {
        RealFIFO::is_closed(self)
    }

    fn has_synced(&self) -> bool {
        RealFIFO::has_synced(self)
    }

    fn wait_synced(&self) -> impl Future<Output = ()> + Send {
        RealFIFO::wait_synced(self)
    }

    fn len(&self) -> usize {
        RealFIFO::len(self)
    }
}

fn tombstone<T>(key: String, object: Option<Arc<T>>) -> Delta<T> {
    Delta::Deleted(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
        key, object,
    )))
}

impl<T> fmt::Debug for RealFIFO<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.state.lock();
        f.debug_struct("RealFIFO")
            .field("atomic", &self.known_objects.is_none())
            .field("queued", &state.items.len())
            .field("population", &state.population)
            .field("closed", &state.closed)
            .finish()
    }
}
