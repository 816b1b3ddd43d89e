//! The informer's parts behind small interfaces: the reflector behind a type-erased handle,
//! the queue of either kind, the handler that feeds the processor, and the resync timer of
//! a manual informer.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::Object;
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::fifo::{DeltaFIFO, RealFIFO, SyncedFlag};
use crate::handler::ResourceEventHandler;
use crate::keys::DeleteEvent;
use crate::listwatch::{ListWatchError, ListerWatcher};
use crate::processor::{Notification, SharedProcessor};
use crate::reflector::{Reflector, ReflectorOptions};
use crate::reflector_store::ReflectorStore;
use crate::transform::TransformFunc;

pub(super) type ErrorHandler = Arc<dyn Fn(&ListWatchError) + Send + Sync>;
pub(super) type BoxFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A reflector behind a type-erased handle (the informer is generic over `T` only).
pub(super) trait RunReflector: Send + Sync {
    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture;
    fn last_sync_resource_version(&self) -> String;
    fn last_error(&self) -> Option<String>;
    fn set_watch_error_handler(&self, handler: ErrorHandler);
}

impl<T, L> RunReflector for Reflector<T, L>
where
    T: Object + DeserializeOwned + Send + Sync + 'static,
    L: ListerWatcher<T>,
{
    fn run(self: Arc<Self>, cancel: CancellationToken) -> BoxFuture {
        Box::pin(async move { Reflector::run(&self, cancel).await })
    }
    fn last_sync_resource_version(&self) -> String {
        Reflector::last_sync_resource_version(self)
    }
    fn last_error(&self) -> Option<String> {
        Reflector::last_error(self)
    }
    fn set_watch_error_handler(&self, handler: ErrorHandler) {
        Reflector::set_watch_error_handler(self, move |error| handler(error))
    }
}

pub(super) type ReflectorFactory<T> =
    Box<dyn FnOnce(Arc<dyn ReflectorStore<T>>, ReflectorOptions) -> Arc<dyn RunReflector> + Send>;

pub(super) enum InformerQueue<T> {
    Real(Arc<RealFIFO<T>>),
    Delta(Arc<DeltaFIFO<T>>),
}

impl<T> Clone for InformerQueue<T> {
    fn clone(&self) -> Self {
        match self {
            InformerQueue::Real(q) => InformerQueue::Real(q.clone()),
            InformerQueue::Delta(q) => InformerQueue::Delta(q.clone()),
        }
    }
}

impl<T: Object + Send + Sync + 'static> InformerQueue<T> {
    pub(super) fn store(&self) -> Arc<dyn ReflectorStore<T>> {
        match self {
            InformerQueue::Real(q) => q.clone(),
            InformerQueue::Delta(q) => q.clone(),
        }
    }
    pub(super) fn synced_flag(&self) -> Arc<SyncedFlag> {
        match self {
            InformerQueue::Real(q) => q.synced_flag(),
            InformerQueue::Delta(q) => q.synced_flag(),
        }
    }
    pub(super) fn set_transform(&self, transform: Option<TransformFunc<T>>) {
        match self {
            InformerQueue::Real(q) => q.set_transform(transform),
            InformerQueue::Delta(q) => q.set_transform(transform),
        }
    }
    pub(super) fn close(&self) {
        match self {
            InformerQueue::Real(q) => q.close(),
            InformerQueue::Delta(q) => q.close(),
        }
    }
    /// The informer stopped on a panic: drop what is queued, ignore pushes, unset synced.
    pub(super) fn discard(&self) {
        match self {
            InformerQueue::Real(q) => q.discard(),
            InformerQueue::Delta(q) => q.discard(),
        }
    }
    pub(super) fn reopen(&self) {
        match self {
            InformerQueue::Real(q) => q.reopen(),
            InformerQueue::Delta(q) => q.reopen(),
        }
    }
}

/// The informer's own handler: hands every notification to the processor.
pub(super) struct Distributor<'a, T> {
    pub(super) processor: &'a SharedProcessor<T>,
    /// The item belongs to the run's first relist: its updates go to every handler, even
    /// those of unchanged objects (a run after a panic tells every handler everything
    /// again).
    pub(super) initial: bool,
}

impl<T: Object + Send + Sync + 'static> ResourceEventHandler<T> for Distributor<'_, T> {
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool) {
        super::journey::applied("add", &**object);
        let notification = Notification::Add {
            object: object.clone(),
            initial: is_in_initial_list,
        };
        self.processor.distribute(notification, false);
    }

    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        // Same resourceVersion: a resync (or an unchanged relisted object), only for the
        // handlers whose resync is due.
        let is_sync = !self.initial && old.resource_version() == new.resource_version();
        super::journey::applied("update", &**new);
        let notification = Notification::Update {
            old: old.clone(),
            new: new.clone(),
        };
        self.processor.distribute(notification, is_sync);
    }

    fn on_delete(&self, event: DeleteEvent<T>) {
        if let Some(object) = event.object() {
            super::journey::applied("delete", &**object);
        }
        self.processor
            .distribute(Notification::Delete(event), false);
    }
}

/// The resync timer of a manual informer (a reflector runs its own).
pub(super) async fn resync_loop<T: Send + Sync + 'static>(
    queue: Arc<dyn ReflectorStore<T>>,
    processor: Arc<SharedProcessor<T>>,
    period: Duration,
    cancel: CancellationToken,
) {
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = tokio::time::sleep(period) => {
                if processor.should_resync(Instant::now()) {
                    queue.resync();
                }
            }
        }
    }
}
