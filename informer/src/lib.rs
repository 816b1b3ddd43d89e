//! Kubernetes informers: client-go's `tools/cache`, in Rust.
//!
//! A reflector lists and watches a collection and writes what it sees into a queue; the
//! informer pops the queue, updates its thread-safe indexed store, and tells event handlers
//! what changed; listers read the store.

#![deny(missing_docs)]

mod list_watch;
mod listwatch;
mod pager;
mod reflector;
mod reflector_store;
// The cache, the queues, the process loop, handlers, the shared informer and listers.
mod cache_sync;
mod controller;
mod enqueue;
mod factory;
mod fifo;
mod handler;
mod keys;
mod lister;
mod metrics;
mod panics;
mod processor;
mod shared_informer;
mod store;
mod transform;

pub use list_watch::ListWatch;
pub use listwatch::{
    CAUSE_RESOURCE_VERSION_TOO_LARGE, ListOptions, ListWatchError, ListerWatcher,
    RESOURCE_VERSION_MATCH_EXACT, RESOURCE_VERSION_MATCH_NOT_OLDER_THAN, WatchOptions,
};
pub use pager::{DEFAULT_PAGE_SIZE, ListPager, PagedList};
pub use reflector::{
    BackoffConfig, DEFAULT_INITIAL_EVENTS_TIMEOUT, DEFAULT_MIN_WATCH_TIMEOUT, FailureKind,
    Reflector, ReflectorFailure, ReflectorOperation, ReflectorOptions, ShouldResync,
};
pub use reflector_store::ReflectorStore;

pub use cache_sync::{CacheSyncError, InformerSynced, NotSyncedReason, wait_for_cache_sync};
pub use controller::{process_deltas, process_loop};
pub use enqueue::EnqueueHandler;
pub use factory::{SharedInformerFactory, SharedInformerFactoryBuilder};
pub use fifo::{
    DEFAULT_QUEUE_CAPACITY, Delta, DeltaFIFO, DeltaFIFOOptions, DeltaType, Deltas, KeyListerGetter,
    Queue, RealFIFO,
};
pub use handler::{FilteringResourceEventHandler, ResourceEventHandler, ResourceEventHandlerFuncs};
pub use keys::{
    DeleteEvent, DeletedFinalStateUnknown, deletion_handling_meta_namespace_key_func,
    meta_namespace_key_func, split_meta_namespace_key,
};
pub use lister::{Lister, NamespaceLister};
pub use metrics::{InformerMetrics, ObjectSizeFn, approx_json_size};
pub use panics::{InformerFailure, PanicPolicy, PanicSource};
pub use processor::Registration;
pub use shared_informer::{
    HandlerOptions, InformerError, MINIMUM_RESYNC_PERIOD, QueueKind, SharedIndexInformer,
    SharedInformerOptions,
};
pub use store::{
    IndexError, IndexFunc, IndexValues, Indexer, Indexers, InvalidResourceVersion, NAMESPACE_INDEX,
    WaitForResourceVersionError, label_index_func, meta_namespace_index_func,
};
pub use transform::{TransformFunc, strip_managed_fields};
