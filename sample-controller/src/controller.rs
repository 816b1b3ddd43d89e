//! The controller: the level-based loop of kubernetes/sample-controller, written out step by
//! step. `docs/walkthrough.md` follows the same loop through the library code.
//!
//! ```text
//!   API server ──watch──▶ informers ──▶ handlers ──keys──▶ work queue ──▶ workers
//!        ▲                  (cache)                                         │
//!        │                     ▲                                             │
//!        └──────── writes ─────┼──────────── reconcile(key) ◀────────────────┘
//!                              └── listers read the cache
//! ```
//!
//! 1. Two informers keep a local cache of Foos and Deployments, fed by a watch.
//! 2. Their event handlers do not act: they only put the *key* (`namespace/name`) of the Foo
//!    concerned on a rate-limited work queue. A Deployment's change enqueues the Foo that
//!    controls it.
//! 3. Workers take keys from the queue (`clientgo::util::workqueue::WorkerPool`, the loop
//!    client-go's controllers write by hand around `processNextWorkItem`). The queue never
//!    hands one key to two workers, and many changes to one Foo before a worker gets to it
//!    become a single key: the loop is *level-based*, it reconciles the state, not each event.
//! 4. `reconcile` reads the Foo and its Deployment from the cache (never from the API server),
//!    computes the difference to the desired state and writes only that, in this order:
//!    1. a Foo being deleted is *finalized*: its record (the state garbage collection cannot
//!       reach, see [`crate::records`]) is removed, then its finalizer, and nothing else;
//!    2. a Foo without the finalizer gets it, before anything that needs cleaning up exists
//!       (see [`crate::finalizer`]);
//!    3. the Deployment is created, or its replicas fixed;
//!    4. the Foo's record names its Deployment;
//!    5. the Foo's status is written, if it changed.
//!
//!    Then it waits until the caches have seen its own writes (read-your-writes), so that the
//!    next reconcile of the Foo does not act on the state from before them.
//! 5. The writes come back through the watch into the cache, and enqueue the Foo again; that
//!    reconcile finds nothing to do and writes nothing, so the loop settles.
//! 6. A failed reconcile puts the key back with a per-key exponential backoff; a successful one
//!    `forget`s it. A panic in one reconcile is caught, counted and retried the same way; the
//!    other keys keep flowing.
//! 7. On shutdown the workers finish the reconciles in hand, for a bounded time (the drain
//!    timeout), and start no new one; what is still running then is cancelled. Keys still
//!    queued are not lost: whoever runs next lists every Foo and reconciles each, as on any
//!    start.
//! 8. On lost leadership nothing is finished: the controller's future is dropped (the fence,
//!    see `clientgo::tools::leaderelection`), and with it the workers: no reconcile in flight is
//!    polled again, so none of them sends another write. The workers are tasks, on every
//!    core, and also stop by themselves at the lease's renew deadline, even if the elector's
//!    task is the one that stalled (see `clientgo::util::workqueue::WorkerPool`'s fence).

use std::sync::Arc;
use std::time::Duration;

use clientgo::CancellationToken;
use clientgo::apimachinery::{Compact, Object, Resource};
use clientgo::rest::{PostParams, ResourceClient, RestClient};
use clientgo::tools::cache::{
    DeleteEvent, InformerError, InformerSynced, Lister, ResourceEventHandlerFuncs,
    SharedIndexInformer, TypedLister, wait_for_cache_sync,
};
use clientgo::tools::leaderelection::Fence;
use clientgo::tools::record::{EventRecorder, EventType, ObjectReference};
use clientgo::util::workqueue::{ObjectKey, Queue, QueueConfig, WorkerPool, WorkerStats};
use k8s_openapi::api::apps::v1::Deployment;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use crate::desired::{controlled_by, desired_status, inherit_labels, new_deployment};
use crate::foo::Foo;
use crate::work_queue;
use crate::{finalizer, records};

/// Event reason: a Foo was synced.
pub const SUCCESS_SYNCED: &str = "Synced";
/// Event reason: a Deployment of the wanted name exists and is not ours.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// Event reason: a Foo being deleted was cleaned up and released.
pub const CLEANED_UP: &str = "CleanedUp";
/// The name this controller writes as (events, field manager).
pub const CONTROLLER_NAME: &str = "sample-controller";
/// How long a reconcile waits for the caches to show its own writes.
const CACHE_CATCH_UP: Duration = Duration::from_secs(10);

/// Why a reconcile failed; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// A request to the API server failed (a conflict included: our cache was stale).
    #[error(transparent)]
    Api(#[from] clientgo::rest::Error),
    /// The Deployment exists but belongs to something else: we refuse to touch it.
    #[error("resource {0:?} already exists and is not managed by Foo")]
    NotOwned(String),
}

/// The controller's own metrics, exported on `/metrics` once [registered](Stats::register).
#[derive(Debug, Default)]
pub struct Stats {
    /// Reconciles that succeeded.
    pub synced: Counter,
    /// Reconciles that failed and were retried with backoff.
    pub failed: Counter,
    /// Reconciles that panicked (also counted as failed).
    pub panicked: Counter,
    /// Writes sent to the API server.
    pub writes: Counter,
    /// Reconciles cancelled in flight (a drain that ran out of time, or lost leadership).
    pub cancelled: Counter,
    /// Reconciles running now.
    pub active: Gauge,
}

impl Stats {
    /// The worker pool's counters, sharing their counts with these.
    pub fn workers(&self) -> WorkerStats {
        WorkerStats {
            succeeded: self.synced.clone(),
            failed: self.failed.clone(),
            panicked: self.panicked.clone(),
            cancelled: self.cancelled.clone(),
            active: self.active.clone(),
        }
    }

    /// Exports the metrics in `registry` (`sample_controller_*`).
    pub fn register(&self, registry: &mut Registry) {
        let registry = registry.sub_registry_with_prefix("sample_controller");
        self.workers().register(registry);
        registry.register(
            "api_writes",
            "Writes sent to the API server",
            self.writes.clone(),
        );
    }
}

/// The resourceVersions a reconcile's own writes produced, per cache: what it waits for
/// before it returns (read-your-writes).
#[derive(Debug, Default)]
struct Written {
    foo: Option<String>,
    deployment: Option<String>,
}

/// The Foo controller.
pub struct Controller {
    client: RestClient,
    foos: Lister<Foo>,
    deployments: TypedLister<Deployment>,
    foo_informer: SharedIndexInformer<Foo>,
    deployment_informer: SharedIndexInformer<Compact<Deployment>>,
    queue: Queue<ObjectKey>,
    recorder: EventRecorder,
    stats: Stats,
    inherited_labels: Vec<String>,
}

impl Controller {
    /// Wires the handlers into the informers; fails if an informer has already stopped.
    pub fn new(
        client: RestClient,
        foo_informer: SharedIndexInformer<Foo>,
        deployment_informer: SharedIndexInformer<Compact<Deployment>>,
        recorder: EventRecorder,
        queue_config: QueueConfig,
        priority_queue: bool,
    ) -> Result<Arc<Controller>, InformerError> {
        Self::inheriting(
            client,
            foo_informer,
            deployment_informer,
            recorder,
            queue_config,
            priority_queue,
            Vec::new(),
        )
    }

    /// As [`new`](Controller::new), and the Deployments it creates carry their Foo's values
    /// of the labels `inherited_labels` from their creation on (see
    /// [`inherit_labels`]): `--sharded` passes the shard label, so that a new Deployment is
    /// in its shard's cache at once, not only after the sharder labelled it.
    pub fn inheriting(
        client: RestClient,
        foo_informer: SharedIndexInformer<Foo>,
        deployment_informer: SharedIndexInformer<Compact<Deployment>>,
        recorder: EventRecorder,
        queue_config: QueueConfig,
        priority_queue: bool,
        inherited_labels: Vec<String>,
    ) -> Result<Arc<Controller>, InformerError> {
        let queue = work_queue::new(priority_queue, queue_config);
        let controller = Arc::new(Controller {
            client,
            foos: foo_informer.lister(),
            deployments: TypedLister::new(deployment_informer.indexer().clone()),
            foo_informer: foo_informer.clone(),
            deployment_informer: deployment_informer.clone(),
            queue,
            recorder,
            stats: Stats::default(),
            inherited_labels,
        });

        // Step 2: handlers only enqueue keys. A Foo's add or update enqueues the Foo. Adds
        // from the initial list and updates that changed nothing (resyncs) are routine: the
        // priority queue, if used, serves them after real changes.
        let (on_add, on_update) = (controller.clone(), controller.clone());
        foo_informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |foo: &Arc<Foo>, initial| on_add.enqueue(foo.as_ref(), initial))
                .update_func(move |old: &Arc<Foo>, foo: &Arc<Foo>| {
                    let unchanged = old.resource_version() == foo.resource_version();
                    on_update.enqueue(foo.as_ref(), unchanged)
                }),
        )?;
        // A Deployment's change enqueues the Foo that controls it, if any.
        let (on_add, on_update, on_delete) =
            (controller.clone(), controller.clone(), controller.clone());
        deployment_informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |d: &Arc<Compact<Deployment>>, initial| {
                    on_add.handle_deployment(d.as_ref(), initial)
                })
                .update_func(move |old: &Arc<_>, new: &Arc<Compact<Deployment>>| {
                    // A periodic resync re-delivers unchanged objects: nothing to do.
                    if old.resource_version() != new.resource_version() {
                        on_update.handle_deployment(new.as_ref(), false);
                    }
                })
                .delete_func(move |event: DeleteEvent<Compact<Deployment>>| {
                    // A tombstone carries the last known state, which still names the owner.
                    if let Some(d) = event.object() {
                        on_delete.handle_deployment(d.as_ref(), false);
                    }
                }),
        )?;
        Ok(controller)
    }

    /// The counters.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// The work queue (for tests and metrics).
    pub fn queue(&self) -> &Queue<ObjectKey> {
        &self.queue
    }

    /// Enqueues the Foo's key; `routine` for a notification that most likely needs no work.
    fn enqueue(&self, foo: &Foo, routine: bool) {
        self.queue
            .add_with(ObjectKey::of(foo), work_queue::add_options(routine));
    }

    /// Enqueues the Foo controlling `deployment`; ignores Deployments no Foo controls.
    fn handle_deployment(&self, deployment: &Compact<Deployment>, routine: bool) {
        let Some(owner) = deployment.controller_ref() else {
            return;
        };
        if owner.kind != Foo::KIND {
            return;
        }
        // Only a Foo we know of (the owner reference could be stale or forged).
        if let Some(foo) = self.foos.namespace(deployment.namespace()).get(owner.name) {
            if foo.uid() == owner.uid {
                self.enqueue(&foo, routine);
            }
        }
    }

    /// Runs `workers` workers until `cancel`, after the caches have synced; then stops taking
    /// new keys, lets the workers finish what they hold for at most `drain`, cancels what is
    /// left, and returns. Dropping the returned future stops everything at once: no
    /// reconcile outlives it. With a leader election's `fence`, no reconcile starts, and none
    /// in hand is polled again, once the lease's renew deadline has passed, even before the
    /// elector drops this future.
    pub async fn run(
        self: Arc<Self>,
        workers: usize,
        drain: Duration,
        cancel: CancellationToken,
        fence: Option<Fence>,
    ) -> Result<(), String> {
        tracing::info!("waiting for informer caches to sync");
        let caches: [&dyn InformerSynced; 2] = [&self.foo_informer, &self.deployment_informer];
        let synced = wait_for_cache_sync(&caches, Duration::from_secs(60));
        tokio::select! {
            result = synced => result.map_err(|e| e.to_string())?,
            () = cancel.cancelled() => return Ok(()),
        }
        tracing::info!(workers, "caches synced; starting workers");
        // Step 3: the workers take keys one at a time, reconcile each under panic isolation,
        // forget the key's failures on success and retry it after its backoff (5 ms doubling
        // to 1000 s) on an error or a panic; a retry reads the cache afresh, so a conflict is
        // not retried blindly. Step 7: on cancel they start nothing new and drain for at most
        // `drain`. They are tasks, on every core; dropping this future (a lost lease) fences
        // them: no reconcile in flight is polled again, so none sends another write.
        let this = self.clone();
        let mut pool = WorkerPool::new(workers)
            .drain_timeout(drain)
            .stats(self.stats.workers());
        if let Some(fence) = fence {
            pool = pool.fence(fence.deadline());
        }
        pool.run(
            &self.queue,
            move |key: ObjectKey| {
                let this = this.clone();
                async move { this.reconcile(&key).await }
            },
            cancel,
        )
        .await;
        Ok(())
    }

    /// Step 4: brings the world in line with the Foo named by `key`.
    pub async fn reconcile(&self, key: &ObjectKey) -> Result<(), ReconcileError> {
        let mut written = Written::default();
        let result = self.sync(key, &mut written).await;
        // Even after a failure: the writes that did succeed must show in the cache the retry
        // reads, or it would redo them against stale state.
        self.wait_for_own_writes(&written).await;
        result
    }

    async fn sync(&self, key: &ObjectKey, written: &mut Written) -> Result<(), ReconcileError> {
        let (namespace, name) = (key.namespace(), key.name());
        // Read from the cache, not the API server.
        let Some(foo) = self.foos.namespace(namespace).get(name) else {
            // Gone: it was finalized (or deleted before we ever acted on it). Garbage
            // collection removes its Deployment.
            tracing::info!(%key, "foo no longer exists");
            return Ok(());
        };

        // 4.1: deletion was requested. Clean up, release, and do nothing else.
        if foo.is_being_deleted() {
            return self.finalize(&foo, written).await;
        }
        if foo.spec.deployment_name.is_empty() {
            tracing::error!(%key, "spec.deploymentName must be specified");
            return Ok(()); // nothing to do until the user fixes the spec
        }

        let post = PostParams {
            field_manager: Some(CONTROLLER_NAME.to_owned()),
            ..PostParams::default()
        };
        let mut wrote = false;

        // 4.2: the finalizer goes on before anything exists that would need cleaning up.
        // From here on we work with the Foo as written: its resourceVersion is current.
        let reconciled_before = finalizer::has(&foo);
        let foo = if finalizer::has(&foo) {
            foo
        } else {
            let added = finalizer::add(&self.client, &foo).await?;
            self.stats.writes.inc();
            wrote = true;
            written.foo = Some(added.resource_version().to_owned());
            Arc::new(added)
        };

        // 4.3: the Deployment.
        let deployment_name = &foo.spec.deployment_name;
        let deployments = ResourceClient::<Deployment>::namespaced(&self.client, namespace);
        let cached = self.deployments.namespace(namespace).get(deployment_name);
        let existing = match cached {
            Some(cached) => Some(cached),
            // A Foo reconciled before whose Deployment the cache lacks: the Deployment was
            // deleted, or the cache has not caught up with it (with --sharded, a Foo moved to
            // this shard can arrive before its Deployment, on a watch of its own). The server
            // tells which, at the cost of one read, instead of a create meeting AlreadyExists
            // and a retry after backoff.
            None if reconciled_before => {
                match deployments.get(deployment_name, &Default::default()).await {
                    Ok(found) => Some(Arc::new(found)),
                    Err(error) if error.is_not_found() => None,
                    Err(error) => return Err(error.into()),
                }
            }
            None => None,
        };
        let deployment = match existing {
            Some(existing) => existing,
            None => {
                let mut deployment = new_deployment(&foo);
                inherit_labels(&mut deployment, &foo, &self.inherited_labels);
                let created = deployments.create(&deployment, &post).await?;
                self.stats.writes.inc();
                wrote = true;
                written.deployment = Some(created.resource_version().to_owned());
                Arc::new(created)
            }
        };

        // Never adopt or change a Deployment this Foo does not control.
        if !controlled_by(&deployment, &foo) {
            let message =
                format!("Resource {deployment_name:?} already exists and is not managed by Foo");
            self.recorder.event(
                &ObjectReference::from_object(foo.as_ref()),
                EventType::Warning,
                ERR_RESOURCE_EXISTS,
                &message,
            );
            return Err(ReconcileError::NotOwned(deployment_name.clone()));
        }

        // Fix the replica count if it drifted from the spec.
        let wanted = foo.spec.replicas.unwrap_or(1);
        let current = deployment.spec.replicas.unwrap_or(1);
        let deployment = if current != wanted {
            tracing::info!(%key, current, wanted, "updating deployment replicas");
            let mut updated = (*deployment).clone();
            updated.spec.replicas = Some(wanted);
            let updated = deployments.update(deployment_name, &updated, &post).await?;
            self.stats.writes.inc();
            wrote = true;
            written.deployment = Some(updated.resource_version().to_owned());
            Arc::new(updated)
        } else {
            deployment
        };

        // 4.4: the record, outside the ownerReference tree (the finalizer guards it).
        if records::ensure(&self.client, namespace, name, deployment_name).await? {
            self.stats.writes.inc();
            wrote = true;
        }

        // 4.5: report. Write the status only when it changes, or every write would trigger
        // another reconcile through the watch. The write carries the resourceVersion the
        // status was computed from: if the Foo changed since, it fails with a conflict and
        // the retry computes it again from the newer Foo.
        if let Some(status) = desired_status(&foo, &deployment) {
            let mut updated = (*foo).clone();
            updated.status = status;
            let updated = ResourceClient::<Foo>::namespaced(&self.client, namespace)
                .update_status(name, &updated, &post)
                .await?;
            self.stats.writes.inc();
            wrote = true;
            written.foo = Some(updated.resource_version().to_owned());
        }
        if wrote {
            self.recorder.event(
                &ObjectReference::from_object(foo.as_ref()),
                EventType::Normal,
                SUCCESS_SYNCED,
                "Foo synced successfully",
            );
        }
        Ok(())
    }

    /// 4.1: cleans up after a Foo being deleted, then removes the finalizer, in that order:
    /// if the cleanup fails, the finalizer stays and the key is retried with backoff.
    async fn finalize(&self, foo: &Foo, written: &mut Written) -> Result<(), ReconcileError> {
        if !finalizer::has(foo) {
            // Already released: the Foo waits only for other finalizers, not ours.
            return Ok(());
        }
        // Idempotent: after a crash between this line and the next, the retry removes an
        // entry that is already gone, which succeeds.
        records::remove(&self.client, foo.namespace(), foo.name()).await?;
        self.stats.writes.inc();
        let released = finalizer::remove(&self.client, foo).await?;
        self.stats.writes.inc();
        written.foo = Some(released.resource_version().to_owned());
        self.recorder.event(
            &ObjectReference::from_object(foo),
            EventType::Normal,
            CLEANED_UP,
            &format!("Removed the record of Foo {:?}", foo.name()),
        );
        tracing::info!(key = %foo.key(), "cleaned up; finalizer removed");
        Ok(())
    }

    /// Read-your-writes: waits until the informer caches have caught up with the
    /// resourceVersions this reconcile wrote. The next reconcile of the key (the watch events
    /// of those very writes enqueue it) then reads them, instead of the state from before,
    /// which would make it write again and fail with a conflict.
    async fn wait_for_own_writes(&self, written: &Written) {
        if let Some(rv) = &written.foo {
            let caught_up = self
                .foo_informer
                .indexer()
                .wait_for_resource_version(rv, CACHE_CATCH_UP);
            if let Err(error) = caught_up.await {
                // The write itself succeeded; its event enqueues the Foo once it arrives.
                tracing::warn!(%error, "the Foo cache is behind this controller's own write");
            }
        }
        if let Some(rv) = &written.deployment {
            let caught_up = self
                .deployment_informer
                .indexer()
                .wait_for_resource_version(rv, CACHE_CATCH_UP);
            if let Err(error) = caught_up.await {
                tracing::warn!(%error, "the Deployment cache is behind this controller's own write");
            }
        }
    }
}
