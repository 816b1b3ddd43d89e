//! The informer's queue, between the reflector and the store: client-go's `Delta`,
//! `Deltas`, `Queue`, [`RealFIFO`] (`the_real_fifo.go`) and [`DeltaFIFO`] (`delta_fifo.go`).
//!
//! A reflector writes what it sees into a queue through [`ReflectorStore`]; the informer's
//! process loop pops [`Delta`]s and applies them to its store (see
//! [`process_deltas`](crate::process_deltas)). Two queues, both public and tested:
//!
//! * [`RealFIFO`], the default (client-go made it GA as `InOrderInformers`): every event in
//!   arrival order, never merged. In its default *atomic* mode a relist is one
//!   [`Delta::ReplacedAll`], a resync one [`Delta::SyncAll`], and bookmarks are queued as
//!   [`Delta::Bookmark`] so the store's resourceVersion advances in order with the events.
//! * [`DeltaFIFO`], the classic queue: one entry per key holding that key's deltas in order.
//!
//! Both pop asynchronously ([`Queue::pop`]), stop on [`Queue::close`], and report
//! [`Queue::has_synced`] once every item of the first relist was popped **and processed**.
//! An informer that stops on a panic *discards* its queue (what is queued is dropped, later
//! pushes are ignored, `has_synced` turns false) and *reopens* it for its next run, which
//! starts with a relist.
//!
//! Where it differs from client-go, and why:
//!
//! * A delta is an enum whose variants carry what they need (`Arc<T>`, a [`DeleteEvent`],
//!   the relist's objects), not a `{Type, Object interface{}}` pair to type-assert.
//! * `pop` takes the process callback like Go's `Pop(process)`, but is `async`: waiting for
//!   an item parks the task instead of a thread. The callback itself is synchronous (it
//!   updates the store and hands notifications to buffered listeners), which lets the
//!   queues keep client-go's rule of processing under the queue's lock where correctness
//!   needs it (see each queue's docs).
//! * The transform is applied once per object on enqueue, before the object is wrapped in
//!   its one `Arc`; tombstones and `Sync` deltas carry objects that went through it already.
//! * Misconfigurations Go panics on (an atomic RealFIFO with known objects, a non-atomic one
//!   without) cannot be expressed: the constructors differ.

mod delta_fifo;
mod real_fifo;

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use clientgo_apimachinery::Object;
use tokio::sync::Notify;

use crate::keys::{DeleteEvent, meta_namespace_key_func};
use crate::reflector_store::ReflectorStore;

pub use delta_fifo::{DeltaFIFO, DeltaFIFOOptions};
pub use real_fifo::{DEFAULT_QUEUE_CAPACITY, RealFIFO};

/// The kind of a [`Delta`] (client-go's `DeltaType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeltaType {
    /// An object was created.
    Added,
    /// An object changed.
    Updated,
    /// An object was deleted.
    Deleted,
    /// An object was (re)listed.
    Replaced,
    /// A periodic resync of a known object.
    Sync,
    /// A whole relist, atomically (atomic RealFIFO only).
    ReplacedAll,
    /// A whole resync (atomic RealFIFO only).
    SyncAll,
    /// The collection reached a resourceVersion (atomic RealFIFO only).
    Bookmark,
}

/// One change the queue hands to the process loop (client-go's `Delta`).
pub enum Delta<T> {
    /// An object was created (a watch `ADDED`).
    Added(Arc<T>),
    /// An object changed (a watch `MODIFIED`).
    Updated(Arc<T>),
    /// An object was deleted: its final state, or a tombstone when a relist found it gone.
    Deleted(DeleteEvent<T>),
    /// An object is part of a relist.
    Replaced(Arc<T>),
    /// A periodic resync of a known object.
    Sync(Arc<T>),
    /// A relist, whole: everything not in `objects` is gone.
    ReplacedAll {
        /// The listed objects, in list order.
        objects: Vec<Arc<T>>,
        /// The list's resourceVersion.
        resource_version: String,
    },
    /// A resync of every known object.
    SyncAll,
    /// The collection reached `resource_version` (a watch bookmark).
    Bookmark {
        /// The bookmark's resourceVersion.
        resource_version: String,
    },
}

/// The deltas of one pop: one for a [`RealFIFO`], one key's deltas (oldest first) for a
/// [`DeltaFIFO`] (client-go's `Deltas`).
pub type Deltas<T> = Vec<Delta<T>>;

impl<T> Delta<T> {
    /// The delta's kind.
    pub fn delta_type(&self) -> DeltaType {
        match self {
            Delta::Added(_) => DeltaType::Added,
            Delta::Updated(_) => DeltaType::Updated,
            Delta::Deleted(_) => DeltaType::Deleted,
            Delta::Replaced(_) => DeltaType::Replaced,
            Delta::Sync(_) => DeltaType::Sync,
            Delta::ReplacedAll { .. } => DeltaType::ReplacedAll,
            Delta::SyncAll => DeltaType::SyncAll,
            Delta::Bookmark { .. } => DeltaType::Bookmark,
        }
    }

    /// The object of a single-object delta (for a deletion: its last known state).
    pub fn object(&self) -> Option<&Arc<T>> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => Some(o),
            Delta::Deleted(event) => event.object(),
            Delta::ReplacedAll { .. } | Delta::SyncAll | Delta::Bookmark { .. } => None,
        }
    }
}

impl<T: Object> Delta<T> {
    /// The key of a single-object delta (a tombstone's key for a tombstone).
    pub fn key(&self) -> Option<String> {
        match self {
            Delta::Added(o) | Delta::Updated(o) | Delta::Replaced(o) | Delta::Sync(o) => {
                Some(meta_namespace_key_func(&**o))
            }
            Delta::Deleted(event) => Some(event.key()),
            Delta::ReplacedAll { .. } | Delta::SyncAll | Delta::Bookmark { .. } => None,
        }
    }
}

impl<T> Clone for Delta<T> {
    fn clone(&self) -> Self {
        match self {
            Delta::Added(o) => Delta::Added(o.clone()),
            Delta::Updated(o) => Delta::Updated(o.clone()),
            Delta::Deleted(e) => Delta::Deleted(e.clone()),
            Delta::Replaced(o) => Delta::Replaced(o.clone()),
            Delta::Sync(o) => Delta::Sync(o.clone()),
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => Delta::ReplacedAll {
                objects: objects.clone(),
                resource_version: resource_version.clone(),
            },
            Delta::SyncAll => Delta::SyncAll,
            Delta::Bookmark { resource_version } => Delta::Bookmark {
                resource_version: resource_version.clone(),
            },
        }
    }
}

impl<T: PartialEq> PartialEq for Delta<T> {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Delta::Added(a), Delta::Added(b))
            | (Delta::Updated(a), Delta::Updated(b))
            | (Delta::Replaced(a), Delta::Replaced(b))
            | (Delta::Sync(a), Delta::Sync(b)) => a == b,
            (Delta::Deleted(a), Delta::Deleted(b)) => a == b,
            (
                Delta::ReplacedAll {
                    objects: a,
                    resource_version: ra,
                },
                Delta::ReplacedAll {
                    objects: b,
                    resource_version: rb,
                },
            ) => a == b && ra == rb,
            (Delta::SyncAll, Delta::SyncAll) => true,
            (
                Delta::Bookmark {
                    resource_version: a,
                },
                Delta::Bookmark {
                    resource_version: b,
                },
            ) => a == b,
            _ => false,
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Delta<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Delta::Added(o) => f.debug_tuple("Added").field(o).finish(),
            Delta::Updated(o) => f.debug_tuple("Updated").field(o).finish(),
            Delta::Deleted(e) => f.debug_tuple("Deleted").field(e).finish(),
            Delta::Replaced(o) => f.debug_tuple("Replaced").field(o).finish(),
            Delta::Sync(o) => f.debug_tuple("Sync").field(o).finish(),
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => f
                .debug_struct("ReplacedAll")
                .field("objects", objects)
                .field("resource_version", resource_version)
                .finish(),
            Delta::SyncAll => f.write_str("SyncAll"),
            Delta::Bookmark { resource_version } => f
                .debug_struct("Bookmark")
                .field("resource_version", resource_version)
                .finish(),
        }
    }
}

/// What a queue knows about the store's content, for relists and resyncs (client-go's
/// `KeyListerGetter`; normally the informer's [`Indexer`](crate::Indexer)).
pub trait KeyListerGetter<T>: Send + Sync {
    /// Every known key.
    fn list_keys(&self) -> Vec<String>;
    /// The known object with this key.
    fn get_by_key(&self, key: &str) -> Option<Arc<T>>;
}

/// An informer queue (client-go's `Queue`): filled through [`ReflectorStore`], drained by
/// [`pop`](Queue::pop).
pub trait Queue<T>: ReflectorStore<T> {
    /// Waits for the next item and calls `process` with it and whether it belongs to the
    /// first relist (`is_in_initial_list`). Returns `process`'s result, or `None` once the
    /// queue is closed and empty.
    ///
    /// Items count as processed when `process` returns: that is when
    /// [`has_synced`](Queue::has_synced) may become true.
    fn pop<R, F>(&self, process: F) -> impl Future<Output = Option<R>> + Send
    where
        F: FnOnce(Deltas<T>, bool) -> R + Send,
        R: Send;
    /// Closes the queue: pops drain what is queued, then return `None`.
    fn close(&self);
    /// Whether [`close`](Queue::close) was called.
    fn is_closed(&self) -> bool;
    /// Whether the first relist was fully popped and processed, or an add/update/delete
    /// came before any relist.
    fn has_synced(&self) -> bool;
    /// Waits until [`has_synced`](Queue::has_synced).
    fn wait_synced(&self) -> impl Future<Output = ()> + Send;
    /// How many items are queued (keys, for a [`DeltaFIFO`]).
    fn len(&self) -> usize;
    /// Whether nothing is queued.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The "first relist processed" bookkeeping both queues share.
#[derive(Debug, Default)]
pub(crate) struct Population {
    /// A relist or an add/update/delete happened.
    populated: bool,
    /// Items of the first relist not yet processed.
    initial: usize,
}

impl Population {
    /// An add, update or delete: without a relist before it, the queue counts as synced.
    pub(crate) fn touch(&mut self) {
        self.populated = true;
    }

    /// A relist that queued `count` items: the first one sets the initial population.
    pub(crate) fn replaced(&mut self, count: usize) {
        if !self.populated {
            self.populated = true;
            self.initial = count;
        }
    }

    pub(crate) fn synced(&self) -> bool {
        self.populated && self.initial == 0
    }

    /// One popped item was processed.
    pub(crate) fn processed(&mut self) {
        self.initial = self.initial.saturating_sub(1);
    }
}

/// Whether a queue takes pushes. An informer that stops on a panic *discards* its queue:
/// what is queued is dropped (the next run starts with a relist), pushes are ignored (the
/// dying reflector's last events must not mark the queue synced again), and `has_synced`
/// turns false. It *reopens* it once the reflector's task has ended.
#[derive(Debug, Default)]
pub(crate) struct Discard {
    discarding: bool,
}

impl Discard {
    /// Whether pushes are ignored.
    pub(crate) fn is_on(&self) -> bool {
        self.discarding
    }

    /// Starts ignoring pushes; forgets the initial population and unsets `synced`.
    pub(crate) fn discard(&mut self, population: &mut Population, synced: &SyncedFlag) {
        self.discarding = true;
        *population = Population::default();
        synced.clear();
    }

    /// Takes pushes again, into an open queue.
    pub(crate) fn reopen(&mut self, closed: &mut bool) {
        self.discarding = false;
        *closed = false;
    }
}

/// A flag set once, with a wait for it.
#[derive(Debug, Default)]
pub(crate) struct SyncedFlag {
    set: AtomicBool,
    notify: Notify,
}

impl SyncedFlag {
    pub(crate) fn set(&self) {
        if !self.set.swap(true, Ordering::SeqCst) {
            self.notify.notify_waiters();
        }
    }

    /// Unsets the flag: waits wait again (an informer that stopped on a panic).
    pub(crate) fn clear(&self) {
        self.set.store(false, Ordering::SeqCst);
    }

    pub(crate) fn is_set(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    pub(crate) async fn wait(&self) {
        loop {
            // Created before the check, so a `set` after the check wakes it.
            let notified = self.notify.notified();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

/// Applies an optional transform.
pub(crate) fn transformed<T>(transform: Option<&crate::TransformFunc<T>>, object: T) -> T {
    match transform {
        Some(transform) => transform(object),
        None => object,
    }
}

/// Applies an optional transform and wraps the object in its one `Arc`.
pub(crate) fn wrap<T>(transform: Option<&crate::TransformFunc<T>>, object: T) -> Arc<T> {
    Arc::new(transformed(transform, object))
}

/// Waits until `ready` holds: the reflector's wait for room in a bounded queue, woken by
/// `drained` (which the queue notifies when it drains to its low-water mark, is discarded or
/// is closed). The waker is registered before each check, so a drain after it wakes this.
pub(crate) async fn wait_for_room(drained: &Notify, ready: impl Fn() -> bool) {
    loop {
        let notified = drained.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if ready() {
            return;
        }
        notified.await;
    }
}
