//! What a queue holds: the bounds of an item (client-go's `T comparable` of its typed queues)
//! and how items are hashed for the queue's tables.
//!
//! Its own module so that the queue, its state and its line all depend on it and not on one
//! another for it. Where it differs from client-go: items are hashed once, before the queue's
//! lock is taken, by a per-queue random hasher (foldhash), and the hash travels with the item.

use std::hash::Hash;

/// The bounds every queue item satisfies: a cheap-to-clone key such as
/// [`ObjectKey`](clientgo_apimachinery::ObjectKey) or `Arc<str>`.
pub trait QueueItem: Hash + Eq + Clone + Send + 'static {}
impl<T: Hash + Eq + Clone + Send + 'static> QueueItem for T {}

/// The hasher of a queue's table.
pub(crate) type ItemHasher = foldhash::fast::RandomState;
