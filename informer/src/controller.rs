//! The process loop and how deltas reach the store and the handlers: client-go's low-level
//! `controller` (`tools/cache/controller.go`: `processLoop`, `processDeltas`,
//! `processReplacedAllInfo`).
//!
//! [`process_deltas`] applies what a queue popped to the store **first**, then tells the
//! handler, so a handler (and any worker it wakes) always finds the store at least as new as
//! the notification:
//!
//! | delta | store | handler |
//! |---|---|---|
//! | `Added`, `Updated`, `Replaced`, `Sync` | add, or update if the key is stored | `on_update(old, new)` if it was stored, else `on_add(new, is_in_initial_list)` |
//! | `Deleted` | delete | `on_delete(object or tombstone)` |
//! | `Bookmark` | record the resourceVersion | none |
//! | `SyncAll` | none | `on_update(o, o)` for every stored object |
//! | `ReplacedAll` | swap in the listed objects (one atomic replace) | `on_delete(tombstone)` for each stored key not listed, then `on_update`/`on_add` per listed object, in list order |
//!
//! [`process_loop`] pops a queue until it is closed or the loop is cancelled.
//!
//! Where it differs from client-go: Go's reflector/controller pair is split here. The
//! reflector lives in `reflector/`; [`SharedIndexInformer`](crate::SharedIndexInformer)
//! wires a queue, a reflector and this loop together. The store's resourceVersion advances
//! with `Added`/`Updated`/`Deleted` (watch events, in resourceVersion order), `Bookmark` and
//! `ReplacedAll`, but not with `Replaced`/`Sync` items, which come in list (not version)
//! order: recording them would let a read-your-writes wait return before the relist is
//! applied. (client-go records them, and hides the store's resourceVersion unless its
//! atomic queue is on.)

use std::sync::Arc;

use clientgo_apimachinery::Object;
use tokio_util::sync::CancellationToken;

use crate::fifo::{Delta, Deltas, Queue};
use crate::handler::ResourceEventHandler;
use crate::keys::{DeleteEvent, DeletedFinalStateUnknown, meta_namespace_key_func};
use crate::store::Indexer;

/// Applies `deltas` to `store`, then notifies `handler` of each (client-go's
/// `processDeltas`), so a handler always finds the store at least as new as what it is told:
///
/// * `Added`, `Updated`, `Replaced`, `Sync`: add, or update if the key is stored; then
///   `on_update(old, new)` if it was stored, else `on_add(new, is_in_initial_list)`;
/// * `Deleted`: delete, then `on_delete` (with the object or the tombstone);
/// * `Bookmark`: record the resourceVersion;
/// * `SyncAll`: `on_update(o, o)` for every stored object;
/// * `ReplacedAll`: swap in the listed objects in one atomic replace, then `on_delete` with a
///   tombstone for each stored key not listed, then `on_update`/`on_add` per listed object,
///   in list order.
///
/// The store's resourceVersion follows `Added`/`Updated`/`Deleted` objects, bookmarks and
/// `ReplacedAll`, not `Replaced`/`Sync` items (they come in list order, not version order).
pub fn process_deltas<T, H>(
    handler: &H,
    store: &Indexer<T>,
    deltas: Deltas<T>,
    is_in_initial_list: bool,
) where
    T: Object,
    H: ResourceEventHandler<T> + ?Sized,
{
    for delta in deltas {
        match delta {
            Delta::Added(object) | Delta::Updated(object) => {
                upsert(handler, store, object, is_in_initial_list, true)
            }
            Delta::Replaced(object) | Delta::Sync(object) => {
                upsert(handler, store, object, is_in_initial_list, false)
            }
            Delta::Deleted(event) => {
                match &event {
                    DeleteEvent::Object(object) => drop(store.delete(object)),
                    DeleteEvent::Tombstone(tombstone) => drop(store.delete_key(&tombstone.key)),
                }
                handler.on_delete(event);
            }
            Delta::Bookmark { resource_version } => store.bookmark(&resource_version),
            Delta::SyncAll => {
                for object in store.list() {
                    handler.on_update(&object, &object);
                }
            }
            Delta::ReplacedAll {
                objects,
                resource_version,
            } => replace_all(
                handler,
                store,
                objects,
                &resource_version,
                is_in_initial_list,
            ),
        }
    }
}

fn upsert<T, H>(handler: &H, store: &Indexer<T>, object: Arc<T>, initial: bool, record_rv: bool)
where
    T: Object,
    H: ResourceEventHandler<T> + ?Sized,
{
    let old = if record_rv {
        store.update(object.clone())
    } else {
        store.upsert_untracked(object.clone())
    };
    match old {
        Some(old) => handler.on_update(&old, &object),
        None => handler.on_add(&object, initial),
    }
}

/// A relist applied atomically (client-go's `processReplacedAllInfo`).
fn replace_all<T, H>(
    handler: &H,
    store: &Indexer<T>,
    objects: Vec<Arc<T>>,
    resource_version: &str,
    initial: bool,
) where
    T: Object,
    H: ResourceEventHandler<T> + ?Sized,
{
    let (previous, deleted) = store.replace_with_diff(&objects, resource_version);
    // Deletions first, as the non-atomic relist queues them.
    for object in deleted {
        let key = meta_namespace_key_func(&*object);
        handler.on_delete(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
            key,
            Some(object),
        )));
    }
    for (object, old) in objects.iter().zip(previous) {
        match old {
            Some(old) => handler.on_update(&old, object),
            None => handler.on_add(object, initial),
        }
    }
}

/// Pops `queue` and hands each item to `process` until the queue is closed and drained or
/// `cancel` fires (client-go's `processLoop`). Processing is synchronous: cancellation takes
/// effect between items, never in the middle of one.
pub async fn process_loop<T, Q, F>(queue: &Q, cancel: &CancellationToken, mut process: F)
where
    Q: Queue<T>,
    F: FnMut(Deltas<T>, bool) + Send,
{
    loop {
        tokio::select! {
            biased;
            _ = cancel.cancelled() => return,
            popped = queue.pop(&mut process) => {
                if popped.is_none() {
                    return; // closed and drained
                }
            }
        }
    }
}
