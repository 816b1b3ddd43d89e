//! Event handlers: client-go's `ResourceEventHandler`, `ResourceEventHandlerFuncs` /
//! `ResourceEventHandlerDetailedFuncs` and `FilteringResourceEventHandler`.
//!
//! A handler is told of every change the informer applies to its store, after the store
//! reflects it. The informer calls a handler's methods one at a time, in order, from the
//! handler's own task; handlers must be quick (the typical one computes a key and adds it to
//! a work queue) and must not block: a blocking handler holds a runtime thread.
//!
//! Objects are shared (`Arc`) with the cache and every other handler: treat them as
//! immutable, and clone what you want to change.
//!
//! Where it differs from client-go, and why: `on_delete` receives a [`DeleteEvent`] instead
//! of an `interface{}` that might secretly be a `DeletedFinalStateUnknown`, so forgetting
//! the tombstone case is a compile error, not a controller that misses deletions. There is
//! one closure adapter, which passes `is_in_initial_list` (Go has two).

use std::fmt;
use std::sync::Arc;

use crate::keys::DeleteEvent;

/// Receives notifications of changes (client-go's `ResourceEventHandler`).
pub trait ResourceEventHandler<T>: Send + Sync {
    /// An object appeared: created, listed for the first time, or (for a handler that
    /// joined late) already cached. `is_in_initial_list` is true for objects of the
    /// informer's first list and for the cached objects replayed to a late handler.
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool);

    /// An object changed from `old` to `new`. Also called by resyncs and relists with
    /// `old` and `new` at the same resourceVersion (possibly the same object): not every call
    /// is a change, and several changes may have been folded into one.
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>);

    /// An object was deleted; a [`DeleteEvent::Tombstone`] when the informer noticed only
    /// by relisting, with the last state it knew (possibly stale).
    fn on_delete(&self, event: DeleteEvent<T>);

    /// Whether every call returns quickly without blocking its thread: no I/O, no sleeping,
    /// no waiting on a lock held for long, no `block_on`. Such a handler is called on its
    /// registration's own tokio task, as each notification is taken from its buffer; any
    /// other is called on the runtime's blocking pool, handed a batch at a time, so that a
    /// slow call holds a pool thread instead of an async worker. The hand-off costs two
    /// thread wake-ups per batch, which, when events arrive one at a time, is most of what an
    /// informer spends per event. `false` unless the handler says otherwise;
    /// [`EnqueueHandler`](crate::EnqueueHandler), which only adds keys to a queue, says `true`,
    /// and [`ResourceEventHandlerFuncs::nonblocking`] lets closures say it.
    fn is_nonblocking(&self) -> bool {
        false
    }
}

impl<T, H: ResourceEventHandler<T> + ?Sized> ResourceEventHandler<T> for Arc<H> {
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool) {
        (**self).on_add(object, is_in_initial_list)
    }
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        (**self).on_update(old, new)
    }
    fn on_delete(&self, event: DeleteEvent<T>) {
        (**self).on_delete(event)
    }
    fn is_nonblocking(&self) -> bool {
        (**self).is_nonblocking()
    }
}

impl<T, H: ResourceEventHandler<T> + ?Sized> ResourceEventHandler<T> for Box<H> {
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool) {
        (**self).on_add(object, is_in_initial_list)
    }
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        (**self).on_update(old, new)
    }
    fn on_delete(&self, event: DeleteEvent<T>) {
        (**self).on_delete(event)
    }
    fn is_nonblocking(&self) -> bool {
        (**self).is_nonblocking()
    }
}

type AddFn<T> = Box<dyn Fn(&Arc<T>, bool) + Send + Sync>;
type UpdateFn<T> = Box<dyn Fn(&Arc<T>, &Arc<T>) + Send + Sync>;
type DeleteFn<T> = Box<dyn Fn(DeleteEvent<T>) + Send + Sync>;

/// A handler made of closures, any of which may be left out (client-go's
/// `ResourceEventHandlerDetailedFuncs`).
///
/// ```
/// use std::sync::Arc;
/// use clientgo_apimachinery::{DynamicObject, Object};
/// use clientgo_informer::{ResourceEventHandler, ResourceEventHandlerFuncs};
///
/// let handler = ResourceEventHandlerFuncs::<DynamicObject>::new()
///     .add_func(|obj, _initial| println!("added {}", obj.key()))
///     .delete_func(|event| println!("deleted {}", event.key()));
/// handler.on_update(&Arc::new(DynamicObject::new("a")), &Arc::new(DynamicObject::new("a")));
/// ```
pub struct ResourceEventHandlerFuncs<T> {
    add: Option<AddFn<T>>,
    update: Option<UpdateFn<T>>,
    delete: Option<DeleteFn<T>>,
    nonblocking: bool,
}

impl<T> ResourceEventHandlerFuncs<T> {
    /// A handler that ignores everything.
    pub fn new() -> Self {
        ResourceEventHandlerFuncs {
            add: None,
            update: None,
            delete: None,
            nonblocking: false,
        }
    }

    /// Declares that the closures return quickly and never block (see
    /// [`ResourceEventHandler::is_nonblocking`]): they are then called on the registration's
    /// own task instead of the blocking pool.
    pub fn nonblocking(mut self) -> Self {
        self.nonblocking = true;
        self
    }

    /// Calls `f(object, is_in_initial_list)` on adds (client-go's `AddFunc`).
    pub fn add_func(mut self, f: impl Fn(&Arc<T>, bool) + Send + Sync + 'static) -> Self {
        self.add = Some(Box::new(f));
        self
    }

    /// Calls `f(old, new)` on updates (client-go's `UpdateFunc`).
    pub fn update_func(mut self, f: impl Fn(&Arc<T>, &Arc<T>) + Send + Sync + 'static) -> Self {
        self.update = Some(Box::new(f));
        self
    }

    /// Calls `f(event)` on deletes (client-go's `DeleteFunc`).
    pub fn delete_func(mut self, f: impl Fn(DeleteEvent<T>) + Send + Sync + 'static) -> Self {
        self.delete = Some(Box::new(f));
        self
    }
}

impl<T> Default for ResourceEventHandlerFuncs<T> {
    fn default() -> Self {
        ResourceEventHandlerFuncs::new()
    }
}

impl<T> fmt::Debug for ResourceEventHandlerFuncs<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceEventHandlerFuncs")
            .field("add", &self.add.is_some())
            .field("update", &self.update.is_some())
            .field("delete", &self.delete.is_some())
            .field("nonblocking", &self.nonblocking)
            .finish()
    }
}

impl<T> ResourceEventHandler<T> for ResourceEventHandlerFuncs<T> {
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool) {
        if let Some(f) = &self.add {
            f(object, is_in_initial_list)
        }
    }
    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        if let Some(f) = &self.update {
            f(old, new)
        }
    }
    fn on_delete(&self, event: DeleteEvent<T>) {
        if let Some(f) = &self.delete {
            f(event)
        }
    }
    fn is_nonblocking(&self) -> bool {
        self.nonblocking
    }
}

/// Passes on only the objects a filter accepts (client-go's
/// `FilteringResourceEventHandler`).
///
/// An update is passed on as an update when both states pass, as an add when only the new
/// state passes (the object entered the handler's view), and as a delete of the old state
/// when only the old one passes (it left). A tombstone without an object is passed on, since
/// the filter cannot judge it: a spurious delete is safer than a missed one.
pub struct FilteringResourceEventHandler<F, H> {
    filter: F,
    handler: H,
}

impl<F, H> FilteringResourceEventHandler<F, H> {
    /// Wraps `handler` behind `filter`.
    pub fn new(filter: F, handler: H) -> Self {
        FilteringResourceEventHandler { filter, handler }
    }
}

impl<F, H> fmt::Debug for FilteringResourceEventHandler<F, H> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FilteringResourceEventHandler")
            .finish_non_exhaustive()
    }
}

impl<T, F, H> ResourceEventHandler<T> for FilteringResourceEventHandler<F, H>
where
    F: Fn(&T) -> bool + Send + Sync,
    H: ResourceEventHandler<T>,
{
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool) {
        if (self.filter)(object) {
            self.handler.on_add(object, is_in_initial_list)
        }
    }

    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        match ((self.filter)(old), (self.filter)(new)) {
            (true, true) => self.handler.on_update(old, new),
            (false, true) => self.handler.on_add(new, false),
            (true, false) => self.handler.on_delete(DeleteEvent::Object(old.clone())),
            (false, false) => {}
        }
    }

    fn on_delete(&self, event: DeleteEvent<T>) {
        if event.object().is_none_or(|o| (self.filter)(o)) {
            self.handler.on_delete(event)
        }
    }

    /// The wrapped handler's answer: the filter is expected to be as quick as it.
    fn is_nonblocking(&self) -> bool {
        self.handler.is_nonblocking()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::DeletedFinalStateUnknown;
    use clientgo_apimachinery::{ObjectMeta, impl_object};
    use parking_lot::Mutex;

    #[derive(Debug, PartialEq)]
    struct Pod {
        metadata: ObjectMeta,
        ready: bool,
    }
    impl_object!(Pod);

    fn pod(name: &str, ready: bool) -> Arc<Pod> {
        Arc::new(Pod {
            metadata: ObjectMeta::named(name),
            ready,
        })
    }

    fn recorder() -> (ResourceEventHandlerFuncs<Pod>, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (a, u, d) = (seen.clone(), seen.clone(), seen.clone());
        let funcs = ResourceEventHandlerFuncs::new()
            .add_func(move |o: &Arc<Pod>, initial| {
                a.lock().push(format!("add {} {initial}", o.metadata.name))
            })
            .update_func(move |_, n: &Arc<Pod>| {
                u.lock().push(format!("update {}", n.metadata.name))
            })
            .delete_func(move |e: DeleteEvent<Pod>| {
                d.lock()
                    .push(format!("delete {} {}", e.key(), e.is_tombstone()))
            });
        (funcs, seen)
    }

    // client-go: FilteringResourceEventHandler: an update that makes an object pass is an
    // add, one that makes it fail is a delete of the old state.
    #[test]
    fn filtering_handler_turns_filter_flips_into_adds_and_deletes() {
        let (funcs, seen) = recorder();
        let handler = FilteringResourceEventHandler::new(|p: &Pod| p.ready, funcs);
        handler.on_add(&pod("a", false), true);
        handler.on_add(&pod("b", true), true);
        handler.on_update(&pod("a", false), &pod("a", true));
        handler.on_update(&pod("a", true), &pod("a", true));
        handler.on_update(&pod("b", true), &pod("b", false));
        handler.on_update(&pod("b", false), &pod("b", false));
        handler.on_delete(DeleteEvent::Object(pod("b", false)));
        handler.on_delete(DeleteEvent::Object(pod("a", true)));
        handler.on_delete(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
            "c", None,
        )));
        assert_eq!(
            *seen.lock(),
            [
                "add b true",
                "add a false",
                "update a",
                "delete b false",
                "delete a false",
                "delete c true",
            ]
        );
    }

    #[test]
    fn empty_funcs_and_shared_handlers() {
        let nothing = ResourceEventHandlerFuncs::<Pod>::default();
        nothing.on_add(&pod("a", true), false);
        nothing.on_update(&pod("a", true), &pod("a", true));
        nothing.on_delete(DeleteEvent::Object(pod("a", true)));
        let (funcs, seen) = recorder();
        let shared: Arc<dyn ResourceEventHandler<Pod>> = Arc::new(funcs);
        shared.on_add(&pod("x", false), false);
        Box::new(shared).on_update(&pod("x", false), &pod("x", true));
        assert_eq!(*seen.lock(), ["add x false", "update x"]);
    }
}
