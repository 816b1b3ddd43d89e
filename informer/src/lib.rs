//! Kubernetes informers: client-go's `tools/cache`, in Rust.
//!
//! A reflector lists and watches a collection and writes what it sees into a queue; the
//! informer pops the queue, updates its thread-safe indexed store, and tells event handlers
//! what changed; listers read the store.
//!
//! | what | client-go | here |
//! |---|---|---|
//! | one informer per resource, shared by the program | `informers.SharedInformerFactory` | [`SharedInformerFactory`]: typed, dynamic and metadata-only informers |
//! | the informer and its cache | `SharedIndexInformer`, `Indexer` | [`SharedIndexInformer`], [`Indexer`], custom indexes with [`Indexers`] |
//! | reading the cache | the generated listers | [`Lister`], [`NamespaceLister`]; [`TypedLister`]: typed objects over a lean `Compact<K>` cache |
//! | being told of changes | `ResourceEventHandlerFuncs` | [`ResourceEventHandlerFuncs`]; [`EnqueueHandler`] puts keys on a work queue |
//! | waiting for the first list | `cache.WaitForCacheSync` | [`wait_for_cache_sync`], with a timeout and the reason a cache is not synced |
//! | list and watch | `Reflector`, `ListWatch`, `RealFIFO` | [`Reflector`], [`ListWatch`], [`RealFIFO`], [`DeltaFIFO`] |
//! | list and watch options | `metav1.ListOptions` | the REST client's [`ListParams`] and [`WatchParams`], also what [`ResourceClient::list`] and [`ResourceClient::watch`] take |
//!
//! # The controller loop
//!
//! The informer feeds the cache and, through a handler, a work queue of keys; workers
//! (`clientgo_workqueue::run_workers`) take each key and reconcile it from the lister, never
//! from the server; on error the key comes back after a backoff. Here with `ConfigMap` from
//! k8s-openapi (the `k8s-openapi` feature of `clientgo-apimachinery`, or of `clientgo`):
//!
//! ```no_run
//! use std::time::Duration;
//! use clientgo_informer::{EnqueueHandler, SharedInformerFactory};
//! use clientgo_rest::{Config, RestClient};
//! use clientgo_workqueue::{ObjectKey, Queue, run_workers};
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use tokio_util::sync::CancellationToken;
//! # mod k8s_openapi { pub mod api { pub mod core { pub mod v1 {
//! #     #[derive(Debug, Clone, Default, serde::Deserialize)]
//! #     pub struct ConfigMap { pub metadata: clientgo_apimachinery::ObjectMeta }
//! #     clientgo_apimachinery::impl_object!(ConfigMap);
//! #     impl clientgo_apimachinery::Resource for ConfigMap {
//! #         const GROUP: &'static str = "";
//! #         const VERSION: &'static str = "v1";
//! #         const KIND: &'static str = "ConfigMap";
//! #         const PLURAL: &'static str = "configmaps";
//! #         const NAMESPACED: bool = true;
//! #     }
//! # } } } }
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let client = RestClient::new(&Config::infer()?)?;
//! let factory = SharedInformerFactory::builder(&client).namespace("default").build();
//! let configmaps = factory.informer::<ConfigMap>(); // list + watch -> cache
//! let queue = Queue::builder().default_rate_limiter().priority().build();
//! configmaps.add_event_handler(EnqueueHandler::new(queue.clone()))?; // change -> key
//!
//! let shutdown = CancellationToken::new(); // clientgo::signals::shutdown_on_signal()
//! factory.start(&shutdown);
//! factory.wait_for_cache_sync(Duration::from_secs(60)).await?;
//! let lister = configmaps.lister();
//! let reconcile = move |key: ObjectKey| {
//!     let cached = lister.namespace(key.namespace()).get(key.name()); // the cache, not the server
//!     async move {
//!         // Compare with the world, write only the difference; Err retries after a backoff.
//!         println!("{key}: {}", if cached.is_some() { "exists" } else { "deleted" });
//!         Ok::<(), clientgo_rest::Error>(())
//!     }
//! };
//! run_workers(&queue, 2, reconcile, shutdown.clone()).await; // until shutdown, then drains
//! factory.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Complete programs, each runnable against the cluster of a kubeconfig, are the examples of
//! the `clientgo` crate (`clientgo/examples/`): `cm_summary` (a one-key controller),
//! `per_object_controller` (owner and owned objects: the sample-controller's loop, small),
//! `informer_lister` (a custom index), `metadata_informer`, `leader_elected` and
//! `watch_printer`.

#![deny(missing_docs)]

#[cfg(doc)]
use clientgo_rest::{ListParams, ResourceClient, WatchParams};

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
mod typed_lister;

pub use list_watch::ListWatch;
pub use listwatch::{
    CAUSE_RESOURCE_VERSION_TOO_LARGE, ListWatchError, ListerWatcher, RESOURCE_VERSION_MATCH_EXACT,
    RESOURCE_VERSION_MATCH_NOT_OLDER_THAN,
};
pub use pager::{DEFAULT_MAX_ITEMS, DEFAULT_MAX_PAGES, DEFAULT_PAGE_SIZE, ListPager, PagedList};
pub use reflector::{
    BackoffConfig, DEFAULT_INITIAL_EVENTS_TIMEOUT, DEFAULT_MIN_WATCH_TIMEOUT, FailureKind,
    Reflector, ReflectorFailure, ReflectorOperation, ReflectorOptions, ShouldResync,
};
pub use reflector_store::ReflectorStore;

pub use cache_sync::{CacheSyncError, InformerSynced, NotSyncedReason, wait_for_cache_sync};
pub use controller::{process_deltas, process_loop};
pub use enqueue::{EnqueueHandler, controller_key};
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
pub use processor::{DEFAULT_HANDLER_BUFFER_LIMIT, Registration};
pub use shared_informer::{
    HandlerOptions, InformerError, MINIMUM_RESYNC_PERIOD, QueueKind, SharedIndexInformer,
    SharedInformerOptions,
};
pub use store::{
    IndexError, IndexFunc, IndexValues, Indexer, Indexers, InvalidResourceVersion, NAMESPACE_INDEX,
    WaitForResourceVersionError, label_index_func, meta_namespace_index_func,
};
pub use transform::{TransformFunc, strip_managed_fields};
pub use typed_lister::{
    DEFAULT_VIEW_CAPACITY, Listed, TypedLister, TypedNamespaceLister, ViewError,
};
