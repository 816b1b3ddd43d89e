//! What a reflector writes into: client-go's `cache.Store` as the reflector uses it.
//!
//! The reflector turns a LIST into [`replace`](ReflectorStore::replace) and each watch event
//! into [`add`](ReflectorStore::add), [`update`](ReflectorStore::update) or
//! [`delete`](ReflectorStore::delete); bookmarks and the resync timer become
//! [`bookmark`](ReflectorStore::bookmark) and [`resync`](ReflectorStore::resync). The informer
//! queues (`RealFIFO`, `DeltaFIFO`) implement it, and so can a plain store for a reflector that
//! feeds a cache directly.
//!
//! Objects are passed by value: the receiver applies its transform and wraps each object in
//! an `Arc` once, so an object is never copied on its way into the cache.
//!
//! Back-pressure: a receiver that is processed at its own pace (the informer's
//! [`RealFIFO`](crate::RealFIFO)) says when it is full ([`has_room`](ReflectorStore::has_room));
//! the reflector then waits ([`room`](ReflectorStore::room)) before it reads the next watch
//! event, so a slow consumer slows the watch down instead of growing the queue without bound
//! (the server keeps the events, or closes a watcher that falls too far behind, which ends in
//! a relist).

use std::future::Future;
use std::pin::Pin;

/// The receiving end of a reflector.
pub trait ReflectorStore<T>: Send + Sync {
    /// Whether the store takes another change now without going past its bound; the
    /// reflector checks it before each change and, when it is false, waits for
    /// [`room`](Self::room). Unbounded stores keep the default, `true`.
    fn has_room(&self) -> bool {
        true
    }
    /// Waits until [`has_room`](Self::has_room) may be true again (the queue drained to its
    /// low-water mark, or was closed).
    fn room(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(std::future::ready(()))
    }
    /// An object was created (a watch `ADDED`).
    fn add(&self, object: T);
    /// An object changed (a watch `MODIFIED`).
    fn update(&self, object: T);
    /// An object was deleted (a watch `DELETED`); `object` is its last state.
    fn delete(&self, object: T);
    /// The complete state of the collection at `resource_version` (a LIST, or the end of a
    /// streaming list): everything not in `objects` is gone.
    fn replace(&self, objects: Vec<T>, resource_version: String);
    /// The periodic resync: re-deliver what is known (see the queues for the exact rules).
    fn resync(&self);
    /// Applies the store's transform to `object` now: a streaming list transforms each
    /// initial object as it arrives (client-go builds its temporary store with the
    /// transformer), so that it holds only transformed objects until
    /// [`replace_transformed`](Self::replace_transformed). The default has no transform; a
    /// store that overrides this must override `replace_transformed` too.
    fn transform(&self, object: T) -> T {
        object
    }
    /// [`replace`](Self::replace) with objects that went through
    /// [`transform`](Self::transform) already (they are not transformed again).
    fn replace_transformed(&self, objects: Vec<T>, resource_version: String) {
        self.replace(objects, resource_version)
    }
    /// The collection has reached `resource_version` (a watch `BOOKMARK`).
    fn bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }
}
