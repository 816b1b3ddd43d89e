//! The controller: the level-based loop of kubernetes/sample-controller, written out step by
//! step.
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
//! 3. Workers take keys from the queue. The queue never hands one key to two workers, and
//!    many changes to one Foo before a worker gets to it become a single key: the loop is
//!    *level-based*, it reconciles the state, not each event.
//! 4. `reconcile` reads the Foo and its Deployment from the cache (never from the API server),
//!    computes the difference to the desired state and writes only that: create the
//!    Deployment, fix its replicas, update the Foo's status.
//! 5. The writes come back through the watch into the cache, and enqueue the Foo again; that
//!    reconcile finds nothing to do and writes nothing, so the loop settles.
//! 6. A failed reconcile puts the key back with a per-key exponential backoff; a successful one
//!    `forget`s it. A panic in one reconcile is caught, counted and retried the same way; the
//!    other keys keep flowing.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{Object, Resource, Time};
use clientgo_informer::{
    DeleteEvent, InformerError, InformerSynced, Lister, ResourceEventHandlerFuncs,
    SharedIndexInformer, wait_for_cache_sync,
};
use clientgo_ratelimit::default_controller_rate_limiter;
use clientgo_record::{EventRecorder, EventType, ObjectReference};
use clientgo_rest::{PostParams, ResourceClient, RestClient};
use clientgo_workqueue::{QueueConfig, RateLimitingQueue};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::registry::Registry;
use tokio_util::sync::CancellationToken;

use crate::foo::{Condition, Foo, FooStatus};

/// Event reason: a Foo was synced.
pub const SUCCESS_SYNCED: &str = "Synced";
/// Event reason: a Deployment of the wanted name exists and is not ours.
pub const ERR_RESOURCE_EXISTS: &str = "ErrResourceExists";
/// The name this controller writes as (events, field manager).
pub const CONTROLLER_NAME: &str = "sample-controller";

/// Why a reconcile failed; the key is retried with backoff.
#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    /// A request to the API server failed (a conflict included: our cache was stale).
    #[error(transparent)]
    Api(#[from] clientgo_rest::Error),
    /// The Deployment exists but belongs to something else: we refuse to touch it.
    #[error("resource {0:?} already exists and is not managed by Foo")]
    NotOwned(String),
}

/// The controller's own counters, exported on `/metrics` once [registered](Stats::register).
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
}

impl Stats {
    /// Exports the counters in `registry` (`sample_controller_*_total`).
    pub fn register(&self, registry: &mut Registry) {
        for (name, help, counter) in [
            (
                "sample_controller_reconciles_succeeded",
                "Reconciles that succeeded",
                &self.synced,
            ),
            (
                "sample_controller_reconciles_failed",
                "Reconciles that failed and were retried with backoff",
                &self.failed,
            ),
            (
                "sample_controller_reconcile_panics",
                "Reconciles that panicked (also counted as failed)",
                &self.panicked,
            ),
            (
                "sample_controller_api_writes",
                "Writes sent to the API server",
                &self.writes,
            ),
        ] {
            registry.register(name, help, counter.clone());
        }
    }
}

/// The Foo controller.
pub struct Controller {
    client: RestClient,
    foos: Lister<Foo>,
    deployments: Lister<Deployment>,
    foo_informer: SharedIndexInformer<Foo>,
    deployment_informer: SharedIndexInformer<Deployment>,
    queue: RateLimitingQueue<Arc<str>>,
    recorder: EventRecorder,
    stats: Stats,
}

impl Controller {
    /// Wires the handlers into the informers; fails if an informer has already stopped.
    pub fn new(
        client: RestClient,
        foo_informer: SharedIndexInformer<Foo>,
        deployment_informer: SharedIndexInformer<Deployment>,
        recorder: EventRecorder,
        queue_config: QueueConfig,
    ) -> Result<Arc<Controller>, InformerError> {
        let queue = RateLimitingQueue::with_config(
            Arc::new(default_controller_rate_limiter()),
            queue_config,
        );
        let controller = Arc::new(Controller {
            client,
            foos: foo_informer.lister(),
            deployments: deployment_informer.lister(),
            foo_informer: foo_informer.clone(),
            deployment_informer: deployment_informer.clone(),
            queue,
            recorder,
            stats: Stats::default(),
        });

        // Step 2: handlers only enqueue keys. A Foo's add or update enqueues the Foo.
        let (on_add, on_update) = (controller.clone(), controller.clone());
        foo_informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |foo: &Arc<Foo>, _| on_add.enqueue(foo.as_ref()))
                .update_func(move |_, foo: &Arc<Foo>| on_update.enqueue(foo.as_ref())),
        )?;
        // A Deployment's change enqueues the Foo that controls it, if any.
        let (on_add, on_update, on_delete) =
            (controller.clone(), controller.clone(), controller.clone());
        deployment_informer.add_event_handler(
            ResourceEventHandlerFuncs::new()
                .add_func(move |d: &Arc<Deployment>, _| on_add.handle_deployment(d.as_ref()))
                .update_func(move |old: &Arc<Deployment>, new: &Arc<Deployment>| {
                    // A periodic resync re-delivers unchanged objects: nothing to do.
                    if old.resource_version() != new.resource_version() {
                        on_update.handle_deployment(new.as_ref());
                    }
                })
                .delete_func(move |event: DeleteEvent<Deployment>| {
                    // A tombstone carries the last known state, which still names the owner.
                    if let Some(d) = event.object() {
                        on_delete.handle_deployment(d.as_ref());
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
    pub fn queue(&self) -> &RateLimitingQueue<Arc<str>> {
        &self.queue
    }

    fn enqueue(&self, foo: &Foo) {
        self.queue.add(Arc::from(foo.key()));
    }

    /// Enqueues the Foo controlling `deployment`; ignores Deployments no Foo controls.
    fn handle_deployment(&self, deployment: &Deployment) {
        let Some(owner) = deployment.controller_ref() else {
            return;
        };
        if owner.kind != Foo::KIND {
            return;
        }
        // Only a Foo we know of (the owner reference could be stale or forged).
        if let Some(foo) = self.foos.namespace(deployment.namespace()).get(owner.name) {
            if foo.uid() == owner.uid {
                self.enqueue(&foo);
            }
        }
    }

    /// Runs `workers` workers until `cancel`, after the caches have synced; then stops taking
    /// new keys, lets the workers finish what they hold, and returns.
    pub async fn run(
        self: Arc<Self>,
        workers: usize,
        cancel: CancellationToken,
    ) -> Result<(), String> {
        tracing::info!("waiting for informer caches to sync");
        let caches: [&dyn InformerSynced; 2] = [&self.foo_informer, &self.deployment_informer];
        let synced = wait_for_cache_sync(&caches, Duration::from_secs(60));
        tokio::select! {
            result = synced => result.map_err(|e| e.to_string())?,
            () = cancel.cancelled() => return Ok(()),
        }
        tracing::info!(workers, "caches synced; starting workers");
        let handles: Vec<_> = (0..workers.max(1))
            .map(|_| tokio::spawn(self.clone().run_worker()))
            .collect();
        cancel.cancelled().await;
        tracing::info!("shutting down: draining in-flight work");
        self.queue.shut_down_with_drain().await;
        for handle in handles {
            let _ = handle.await;
        }
        Ok(())
    }

    /// Step 3: a worker takes keys one at a time until the queue shuts down.
    async fn run_worker(self: Arc<Self>) {
        while let Some(key) = self.queue.get().await {
            let this = self.clone();
            let name = key.item().clone();
            match isolated(async move { this.reconcile(&name).await }).await {
                Ok(()) => {
                    self.stats.synced.inc();
                    // Success: drop the key's failure history, so its next backoff starts low.
                    self.queue.forget(&key);
                }
                Err(failure) => {
                    self.stats.failed.inc();
                    if matches!(failure, Failure::Panicked(_)) {
                        self.stats.panicked.inc();
                    }
                    tracing::warn!(key = %*key, %failure, "reconcile failed, retrying with backoff");
                    // Failure: try again later, later each time (5 ms doubling to 1000 s).
                    self.queue.add_rate_limited(key.item().clone());
                }
            }
            // Dropping `key` marks it done: it may be handed out again.
        }
    }

    /// Step 4: brings the world in line with the Foo named by `key`.
    pub async fn reconcile(&self, key: &str) -> Result<(), ReconcileError> {
        let Some((namespace, name)) = key.split_once('/') else {
            tracing::error!(key, "invalid resource key");
            return Ok(()); // retrying cannot fix a malformed key
        };
        // Read from the cache, not the API server.
        let Some(foo) = self.foos.namespace(namespace).get(name) else {
            // Deleted since it was enqueued: garbage collection removes its Deployment.
            tracing::info!(key, "foo no longer exists");
            return Ok(());
        };
        let deployment_name = &foo.spec.deployment_name;
        if deployment_name.is_empty() {
            tracing::error!(key, "spec.deploymentName must be specified");
            return Ok(()); // nothing to do until the user fixes the spec
        }

        let deployments = ResourceClient::<Deployment>::namespaced(&self.client, namespace);
        let post = PostParams {
            field_manager: Some(CONTROLLER_NAME.to_owned()),
            ..PostParams::default()
        };
        let mut wrote = false;
        let deployment = match self.deployments.namespace(namespace).get(deployment_name) {
            Some(existing) => existing,
            None => {
                let created = deployments.create(&new_deployment(&foo), &post).await?;
                self.stats.writes.inc();
                wrote = true;
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
            tracing::info!(key, current, wanted, "updating deployment replicas");
            let mut updated = (*deployment).clone();
            updated.spec.replicas = Some(wanted);
            let updated = deployments.update(deployment_name, &updated, &post).await?;
            self.stats.writes.inc();
            wrote = true;
            Arc::new(updated)
        } else {
            deployment
        };

        // Report: write the status only when it changes, or every write would trigger
        // another reconcile through the watch.
        if let Some(status) = desired_status(&foo, &deployment) {
            let mut updated = (*foo).clone();
            updated.status = status;
            ResourceClient::<Foo>::namespaced(&self.client, namespace)
                .update_status(name, &updated, &post)
                .await?;
            self.stats.writes.inc();
            wrote = true;
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
}

/// How a reconcile failed.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    /// It returned an error.
    #[error(transparent)]
    Error(#[from] ReconcileError),
    /// It panicked; the panic was caught and the worker went on.
    #[error("reconcile panicked: {0}")]
    Panicked(String),
}

/// Runs one reconcile in a task of its own, so that a panic is caught and reported like an
/// error instead of taking the worker (and its held key) down with it.
pub async fn isolated<F>(reconcile: F) -> Result<(), Failure>
where
    F: std::future::Future<Output = Result<(), ReconcileError>> + Send + 'static,
{
    match tokio::spawn(reconcile).await {
        Ok(result) => result.map_err(Failure::Error),
        Err(join) => Err(Failure::Panicked(join.to_string())),
    }
}

/// Whether `foo` is the controller owner of `deployment` (by uid, not just by name).
fn controlled_by(deployment: &Deployment, foo: &Foo) -> bool {
    deployment
        .controller_ref()
        .is_some_and(|owner| owner.kind == Foo::KIND && owner.uid == foo.uid())
}

/// The Deployment a Foo asks for: nginx pods, owned by the Foo so that deleting the Foo
/// deletes it (garbage collection) and its changes enqueue the Foo.
pub fn new_deployment(foo: &Foo) -> Deployment {
    let labels = [
        ("app".to_owned(), "nginx".to_owned()),
        ("controller".to_owned(), foo.metadata.name.clone()),
    ]
    .into_iter()
    .collect::<std::collections::BTreeMap<_, _>>();
    Deployment {
        metadata: meta::ObjectMeta {
            name: Some(foo.spec.deployment_name.clone()),
            namespace: Some(foo.metadata.namespace.clone()),
            owner_references: Some(vec![meta::OwnerReference {
                api_version: Foo::api_version().into_owned(),
                kind: Foo::KIND.to_owned(),
                name: foo.metadata.name.clone(),
                uid: foo.metadata.uid.clone(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..meta::ObjectMeta::default()
        },
        spec: DeploymentSpec {
            replicas: Some(foo.spec.replicas.unwrap_or(1)),
            selector: meta::LabelSelector {
                match_labels: Some(labels.clone()),
                ..meta::LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: Some(labels),
                    ..meta::ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".to_owned(),
                        image: Some("nginx:latest".to_owned()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        },
        status: None,
    }
}

/// The status `foo` should have given `deployment`, or `None` when it already has it.
///
/// `Ready` is `True` once every wanted replica is available. Its `lastTransitionTime` moves
/// only when its status changes, as API conventions require.
pub fn desired_status(foo: &Foo, deployment: &Deployment) -> Option<FooStatus> {
    let wanted = foo.spec.replicas.unwrap_or(1);
    let available = deployment
        .status
        .as_ref()
        .and_then(|s| s.available_replicas)
        .unwrap_or(0);
    let (ready, reason, message) = if available >= wanted {
        (
            "True",
            "DeploymentAvailable",
            format!("{available} of {wanted} replicas available"),
        )
    } else {
        (
            "False",
            "DeploymentProgressing",
            format!("{available} of {wanted} replicas available"),
        )
    };
    let generation = foo.metadata.generation;
    let previous = foo.condition("Ready");
    let last_transition_time = match previous {
        Some(previous) if previous.status == ready => previous.last_transition_time,
        _ => Some(Time::now()),
    };
    let status = FooStatus {
        available_replicas: available,
        observed_generation: generation,
        conditions: vec![Condition {
            type_: "Ready".to_owned(),
            status: ready.to_owned(),
            reason: reason.to_owned(),
            message,
            last_transition_time,
            observed_generation: generation,
        }],
    };
    (status != foo.status).then_some(status)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_panicking_reconcile_is_a_failure_not_a_crash() {
        let outcome = isolated(async { panic!("bug in reconcile") }).await;
        assert!(matches!(outcome, Err(Failure::Panicked(_))), "{outcome:?}");
        let outcome = isolated(async { Err(ReconcileError::NotOwned("d".into())) }).await;
        assert!(matches!(
            outcome,
            Err(Failure::Error(ReconcileError::NotOwned(_)))
        ));
        assert!(isolated(async { Ok(()) }).await.is_ok());
    }

    fn foo_with(replicas: i32, generation: i64, status: FooStatus) -> Foo {
        let mut foo = Foo::new("ns", "f", "d", replicas);
        foo.metadata.generation = generation;
        foo.status = status;
        foo
    }

    fn deployment_with(available: i32) -> Deployment {
        let mut d = new_deployment(&Foo::new("ns", "f", "d", 1));
        d.status = Some(k8s_openapi::api::apps::v1::DeploymentStatus {
            available_replicas: Some(available),
            ..Default::default()
        });
        d
    }

    #[test]
    fn status_is_written_only_when_it_changes() {
        let foo = foo_with(2, 1, FooStatus::default());
        let status = desired_status(&foo, &deployment_with(1)).expect("a first status");
        assert_eq!(status.available_replicas, 1);
        assert_eq!(status.conditions[0].status, "False");
        let foo = foo_with(2, 1, status);
        assert_eq!(
            desired_status(&foo, &deployment_with(1)),
            None,
            "nothing changed"
        );
    }

    #[test]
    fn the_transition_time_moves_only_when_ready_flips() {
        let foo = foo_with(2, 1, FooStatus::default());
        let not_ready = desired_status(&foo, &deployment_with(1)).unwrap();
        let since = not_ready.conditions[0].last_transition_time;
        // Still not ready, with another count: same transition time.
        let foo = foo_with(3, 2, not_ready);
        let still = desired_status(&foo, &deployment_with(2)).unwrap();
        assert_eq!(still.conditions[0].status, "False");
        assert_eq!(still.conditions[0].last_transition_time, since);
        assert_eq!(still.observed_generation, 2);
    }

    #[test]
    fn the_new_deployment_is_controlled_by_its_foo() {
        let mut foo = Foo::new("ns", "f", "d", 3);
        foo.metadata.uid = "uid-1".into();
        let deployment = new_deployment(&foo);
        assert!(controlled_by(&deployment, &foo));
        let mut other = foo.clone();
        other.metadata.uid = "uid-2".into();
        assert!(
            !controlled_by(&deployment, &other),
            "same name, another Foo"
        );
        assert_eq!(deployment.spec.replicas, Some(3));
    }
}
