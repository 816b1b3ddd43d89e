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

/// The receiving end of a reflector.
pub trait ReflectorStore<T>: Send + Sync {
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
    /// The collection has reached `resource_version` (a watch `BOOKMARK`).
    fn bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }
}
