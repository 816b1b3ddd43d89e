//! One informer per resource, shared by every part of a program: client-go's
//! `informers.SharedInformerFactory` (`NewSharedInformerFactoryWithOptions`), together with
//! `dynamicinformer.DynamicSharedInformerFactory` and `metadatainformer.SharedInformerFactory`.
//!
//! A [`SharedInformerFactory`] builds an informer the first time one is asked for and hands
//! out the same one afterwards: [`informer::<T>()`](SharedInformerFactory::informer) for a
//! typed resource (keyed by `T`), [`dynamic_informer`](SharedInformerFactory::dynamic_informer)
//! for [`DynamicObject`]s and [`metadata_informer`](SharedInformerFactory::metadata_informer)
//! for objects reduced to their metadata by the server (both keyed by group, version and
//! resource). Every informer lists and watches through the factory's REST client, in the
//! factory's namespace (all by default), with its list options tweak, resync period,
//! transform and informer options (see [`SharedInformerFactoryBuilder`]), and has the
//! namespace index.
//!
//! [`start`](SharedInformerFactory::start) runs every informer not started yet, including those
//! asked for after an earlier start, and runs again those a panic stopped (see
//! [`PanicPolicy`](crate::PanicPolicy), set for all with
//! [`on_panic`](SharedInformerFactoryBuilder::on_panic)); [`wait_for_cache_sync`](SharedInformerFactory::wait_for_cache_sync)
//! waits for the started ones; [`shutdown`](SharedInformerFactory::shutdown) waits until every
//! started informer has stopped (cancel the token given to `start` first) and refuses later
//! starts.
//!
//! Where it differs from client-go, and why:
//!
//! * One factory serves typed, dynamic and metadata informers (client-go has three factories
//!   with the same lifecycle); informer names tell them apart: `configmaps.v1`,
//!   `configmaps.v1 (dynamic)`, `configmaps.v1 (metadata)`.
//! * `wait_for_cache_sync` takes a timeout and returns which informers did not sync and why
//!   ([`CacheSyncError`]), instead of a map of booleans after a stop channel closes.
//! * `start` spawns the informers on the current tokio runtime and must be called within one.

mod builder;
mod tweak;

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{
    ApiResource, DynamicObject, GroupVersionResource, Object, PartialObjectMetadata, Resource,
};
use clientgo_rest::{ResourceClient, RestClient};
use parking_lot::Mutex;
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

pub use builder::SharedInformerFactoryBuilder;

use crate::cache_sync::{CacheSyncError, InformerSynced, wait_for_cache_sync};
use crate::list_watch::ListWatch;
use crate::lister::{Lister, NamespaceLister};
use crate::listwatch::ListerWatcher;
use crate::shared_informer::{SharedIndexInformer, SharedInformerOptions};
use crate::store::Indexers;
use crate::transform::TransformFunc;
use tweak::{TweakFn, Tweaked};

/// Builds informers on first request and shares them; see the module documentation.
///
/// ```no_run
/// # async fn example(client: clientgo_rest::RestClient) -> Result<(), Box<dyn std::error::Error>> {
/// use std::time::Duration;
/// use clientgo_apimachinery::{ApiResource, DynamicObject, labels::Selector};
/// use clientgo_informer::SharedInformerFactory;
/// use tokio_util::sync::CancellationToken;
///
/// let factory = SharedInformerFactory::builder(&client)
///     .namespace("prod")
///     .default_resync(Duration::from_secs(600))
///     .tweak_list_options(|o| o.label_selector = Some("app=web".into()))
///     .build();
/// let config_maps = ApiResource {
///     group: String::new(),
///     version: "v1".into(),
///     kind: "ConfigMap".into(),
///     plural: "configmaps".into(),
///     namespaced: true,
/// };
/// let by_metadata = factory.metadata_informer(&config_maps);
/// let cancel = CancellationToken::new();
/// factory.start(&cancel);
/// factory.wait_for_cache_sync(Duration::from_secs(60)).await?;
/// println!("{} ConfigMaps", by_metadata.lister().list(&Selector::everything()).len());
/// cancel.cancel();
/// factory.shutdown().await;
/// # let _: Option<DynamicObject> = None;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedInformerFactory {
    inner: Arc<Inner>,
}

struct Inner {
    client: RestClient,
    namespace: Option<String>,
    default_resync: Duration,
    custom_resync: HashMap<GroupVersionResource, Duration>,
    tweak: Option<TweakFn>,
    options: SharedInformerOptions,
    transforms: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    state: Mutex<State>,
    /// How many started informers are still running.
    running: Arc<watch::Sender<usize>>,
}

#[derive(Default)]
struct State {
    informers: Vec<Entry>,
    index: HashMap<InformerKey, usize>,
    shutting_down: bool,
}

struct Entry {
    informer: Arc<dyn FactoryInformer>,
    started: bool,
}

/// What an informer is shared by.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum InformerKey {
    Typed(TypeId),
    Dynamic(GroupVersionResource),
    Metadata(GroupVersionResource),
}

/// An informer of any object type, as the factory runs and waits for it.
trait FactoryInformer: Send + Sync {
    fn run(&self, cancel: CancellationToken) -> Pin<Box<dyn Future<Output = ()> + Send>>;
    /// Stopped by a panic and no longer running: `start` runs it again.
    fn failed(&self) -> bool;
    fn synced(&self) -> &dyn InformerSynced;
    fn as_any(&self) -> &dyn Any;
}

impl<T: Object + Send + Sync + 'static> FactoryInformer for SharedIndexInformer<T> {
    fn run(&self, cancel: CancellationToken) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let informer = self.clone();
        Box::pin(async move { informer.run(cancel).await })
    }

    fn failed(&self) -> bool {
        !self.has_started() && self.failure().is_some()
    }

    fn synced(&self) -> &dyn InformerSynced {
        self
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Counts a started informer until its task ends, however it ends.
struct Running(Arc<watch::Sender<usize>>);

impl Drop for Running {
    fn drop(&mut self) {
        self.0.send_modify(|n| *n = n.saturating_sub(1));
    }
}

/// `configmaps.v1`, `deployments.v1.apps`: the resource as kubectl names it in full.
fn resource_name(gvr: &GroupVersionResource) -> String {
    if gvr.group.is_empty() {
        format!("{}.{}", gvr.resource, gvr.version)
    } else {
        format!("{}.{}.{}", gvr.resource, gvr.version, gvr.group)
    }
}

impl SharedInformerFactory {
    /// A factory over `client` for all namespaces, with `default_resync` (client-go's
    /// `NewSharedInformerFactory`).
    pub fn new(client: &RestClient, default_resync: Duration) -> Self {
        Self::builder(client).default_resync(default_resync).build()
    }

    /// A factory with options (client-go's `NewSharedInformerFactoryWithOptions`).
    pub fn builder(client: &RestClient) -> SharedInformerFactoryBuilder {
        SharedInformerFactoryBuilder::new(client)
    }

    fn from_builder(builder: SharedInformerFactoryBuilder) -> Self {
        SharedInformerFactory {
            inner: Arc::new(Inner {
                client: builder.client,
                namespace: builder.namespace,
                default_resync: builder.default_resync,
                custom_resync: builder.custom_resync,
                tweak: builder.tweak,
                options: builder.options,
                transforms: builder.transforms,
                state: Mutex::new(State::default()),
                running: Arc::new(watch::Sender::new(0)),
            }),
        }
    }

    /// The namespace the informers watch; `None` for all.
    pub fn namespace(&self) -> Option<&str> {
        self.inner.namespace.as_deref()
    }

    /// The resync period of informers without a custom one.
    pub fn default_resync(&self) -> Duration {
        self.inner.default_resync
    }

    /// The informer of `T` (client-go's `factory.Core().V1().Pods().Informer()`), built on the
    /// first call, the same one afterwards.
    pub fn informer<T>(&self) -> SharedIndexInformer<T>
    where
        T: Resource + Object + DeserializeOwned + Send + Sync + 'static,
    {
        self.get_or_build(InformerKey::Typed(TypeId::of::<T>()), || {
            let client = match &self.inner.namespace {
                Some(namespace) => ResourceClient::<T>::namespaced(&self.inner.client, namespace),
                None => ResourceClient::<T>::all(&self.inner.client),
            };
            let gvr = T::gvr();
            self.build(ListWatch::new(client), &gvr, resource_name(&gvr))
        })
    }

    /// A lister over the cache of [`informer::<T>()`](Self::informer) (client-go's
    /// `factory.Core().V1().Pods().Lister()`).
    pub fn lister<T>(&self) -> Lister<T>
    where
        T: Resource + Object + DeserializeOwned + Send + Sync + 'static,
    {
        self.informer::<T>().lister()
    }

    /// The lister of [`informer::<T>()`](Self::informer) in the factory's namespace, for a
    /// factory built for one namespace (`None` for a factory of all namespaces): the namespace
    /// is said once, to the factory, not again at every read.
    pub fn namespaced_lister<T>(&self) -> Option<NamespaceLister<T>>
    where
        T: Resource + Object + DeserializeOwned + Send + Sync + 'static,
    {
        let namespace = self.inner.namespace.as_deref()?;
        Some(self.lister::<T>().namespace(namespace))
    }

    /// A client for `T` in the factory's namespace (all namespaces for a factory of all
    /// namespaces), over the factory's REST client: for the writes of a reconcile.
    pub fn client<T>(&self) -> ResourceClient<T>
    where
        T: Resource,
    {
        match &self.inner.namespace {
            Some(namespace) => ResourceClient::namespaced(&self.inner.client, namespace),
            None => ResourceClient::all(&self.inner.client),
        }
    }

    /// The informer of `resource`'s objects as [`DynamicObject`]s (client-go's
    /// `dynamicinformer` `ForResource(gvr).Informer()`), built on the first call for its
    /// group, version and resource, the same one afterwards.
    pub fn dynamic_informer(&self, resource: &ApiResource) -> SharedIndexInformer<DynamicObject> {
        let gvr = resource.gvr();
        self.get_or_build(InformerKey::Dynamic(gvr.clone()), || {
            let client = ResourceClient::from_api_resource(
                &self.inner.client,
                resource,
                self.inner.namespace.as_deref(),
            );
            let name = format!("{} (dynamic)", resource_name(&gvr));
            self.build(ListWatch::new(client), &gvr, name)
        })
    }

    /// The informer of `resource`'s objects reduced to their metadata by the server
    /// (client-go's `metadatainformer` `ForResource(gvr).Informer()`), built on the first call
    /// for its group, version and resource, the same one afterwards. Its cache holds names,
    /// labels, owners and finalizers of any resource without the cost of its data.
    pub fn metadata_informer(
        &self,
        resource: &ApiResource,
    ) -> SharedIndexInformer<PartialObjectMetadata> {
        let gvr = resource.gvr();
        self.get_or_build(InformerKey::Metadata(gvr.clone()), || {
            let client = ResourceClient::metadata(
                &self.inner.client,
                resource,
                self.inner.namespace.as_deref(),
            );
            let name = format!("{} (metadata)", resource_name(&gvr));
            self.build(ListWatch::new(client), &gvr, name)
        })
    }

    fn get_or_build<T: Object + Send + Sync + 'static>(
        &self,
        key: InformerKey,
        build: impl FnOnce() -> SharedIndexInformer<T>,
    ) -> SharedIndexInformer<T> {
        let mut state = self.inner.state.lock();
        let existing = state.index.get(&key).and_then(|&at| {
            let entry = &state.informers[at];
            entry
                .informer
                .as_any()
                .downcast_ref::<SharedIndexInformer<T>>()
        });
        // A key names its object type, so the downcast finds the informer whenever the key
        // is there.
        if let Some(informer) = existing {
            return informer.clone();
        }
        let informer = build();
        tracing::debug!(informer = %informer.name(), "informer created");
        let at = state.informers.len();
        state.informers.push(Entry {
            informer: Arc::new(informer.clone()),
            started: false,
        });
        state.index.insert(key, at);
        informer
    }

    fn build<T, L>(
        &self,
        lister_watcher: L,
        gvr: &GroupVersionResource,
        name: String,
    ) -> SharedIndexInformer<T>
    where
        T: Object + DeserializeOwned + Send + Sync + 'static,
        L: ListerWatcher<T>,
    {
        let inner = &*self.inner;
        let mut options = inner.options.clone();
        options.name = name;
        options.resync_period = inner
            .custom_resync
            .get(gvr)
            .copied()
            .unwrap_or(inner.default_resync);
        let lister_watcher = Tweaked::new(lister_watcher, inner.tweak.clone());
        let informer = SharedIndexInformer::new(lister_watcher, Indexers::namespace(), options);
        let transform = inner
            .transforms
            .get(&TypeId::of::<T>())
            .and_then(|t| t.downcast_ref::<TransformFunc<T>>())
            .cloned();
        if let Some(transform) = transform {
            // A new informer has not started: setting its transform cannot be refused.
            if let Err(error) = informer.set_transform(move |object| transform(object)) {
                tracing::warn!(%error, "the factory's transform was not set");
            }
        }
        informer
    }

    /// Runs every informer not started yet until `cancel` fires (client-go's `Start`): those
    /// asked for since an earlier call too, and those a panic stopped
    /// ([`PanicPolicy::Stop`](crate::PanicPolicy::Stop)), which start over with a relist.
    /// Does nothing after [`shutdown`](Self::shutdown). Spawns on the current tokio runtime:
    /// call it within one.
    pub fn start(&self, cancel: &CancellationToken) {
        let mut state = self.inner.state.lock();
        if state.shutting_down {
            tracing::debug!("informer factory is shutting down: start ignored");
            return;
        }
        for entry in state
            .informers
            .iter_mut()
            .filter(|e| !e.started || e.informer.failed())
        {
            entry.started = true;
            let run = entry.informer.run(cancel.clone());
            self.inner.running.send_modify(|n| *n += 1);
            let running = Running(self.inner.running.clone());
            tracing::debug!(informer = %entry.informer.synced().name(), "informer started");
            tokio::spawn(async move {
                let _running = running;
                run.await;
            });
        }
    }

    /// Waits at most `timeout` until every started informer has synced (client-go's
    /// `WaitForCacheSync`); the error names each one that has not, and why (the reflector's
    /// last error: the resource is not served, access is forbidden, ...). Informers asked for
    /// but not started are not waited for.
    pub async fn wait_for_cache_sync(&self, timeout: Duration) -> Result<(), CacheSyncError> {
        let started: Vec<Arc<dyn FactoryInformer>> = {
            let state = self.inner.state.lock();
            state
                .informers
                .iter()
                .filter(|e| e.started)
                .map(|e| e.informer.clone())
                .collect()
        };
        let caches: Vec<&dyn InformerSynced> = started.iter().map(|i| i.synced()).collect();
        wait_for_cache_sync(&caches, timeout).await
    }

    /// Refuses later starts and waits until every started informer has stopped (client-go's
    /// `Shutdown`). Informers stop when the token given to [`start`](Self::start) is
    /// cancelled: cancel it before, or while, waiting here. Returns at once if nothing runs.
    pub async fn shutdown(&self) {
        self.inner.state.lock().shutting_down = true;
        let mut running = self.inner.running.subscribe();
        // The sender lives as long as `self`: the wait ends only at zero.
        let _ = running.wait_for(|n| *n == 0).await;
    }
}

impl fmt::Debug for SharedInformerFactory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = self.inner.state.lock();
        let informers: Vec<(String, bool)> = state
            .informers
            .iter()
            .map(|e| (e.informer.synced().name(), e.started))
            .collect();
        f.debug_struct("SharedInformerFactory")
            .field("namespace", &self.inner.namespace)
            .field("default_resync", &self.inner.default_resync)
            .field("informers", &informers)
            .field("shutting_down", &state.shutting_down)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_names() {
        let core = GroupVersionResource::new("", "v1", "configmaps");
        assert_eq!(resource_name(&core), "configmaps.v1");
        let apps = GroupVersionResource::new("apps", "v1", "deployments");
        assert_eq!(resource_name(&apps), "deployments.v1.apps");
    }
}
