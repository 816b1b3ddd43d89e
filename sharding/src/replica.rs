//! A replica's side of sharding: watch only its own objects, and let go of one when asked.
//!
//! Mirrors the shard side of the reference design (timebertt's kubernetes-controller-sharding:
//! a label selector on the manager's cache, and a wrapper around the reconciler that honours
//! the drain label). Two pieces:
//!
//! * [`Shard`]: the label selector `shard.clientgo-rs.io/<controller>=<replica>`, as a tweak
//!   for [`SharedInformerFactoryBuilder::tweak_list_options`](clientgo_informer::SharedInformerFactoryBuilder::tweak_list_options),
//!   so the caches and watches of the replica hold only its share (memory and watch load
//!   divide by the number of replicas); and the label for the dependents a reconcile creates,
//!   so they are in the cache from the start.
//! * [`ShardGate`]: what the controller's handlers and workers go through. Its
//!   [`handler`](ShardGate::handler) wraps the primary resource's handler and tracks which keys
//!   this replica owns. When the sharder marks an object with the drain label, the gate stops
//!   handing its key to reconciles ([`reconcile`](ShardGate::reconcile) skips it), waits
//!   until the reconcile in hand (if any) has finished, since the work queue never hands one
//!   key to two workers that is at most one, and then acknowledges: it removes the shard and
//!   drain labels with a JSON patch that first *tests* that the shard label still names this
//!   replica, so a late acknowledgement can never unassign another shard's object.
//!
//! Where it differs from the reference: there, the drain is honoured inside the reconciler
//! by the next reconcile of the key; here the acknowledgement waits only for the reconcile in
//! hand, not for the key's turn in the queue, so a handover does not wait behind a backlog.
//! A key this replica does not own (never assigned, drained, or deleted) is skipped: cleanup
//! on deletion must go through finalizers (the object stays, and stays assigned, until then).

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, Object, PartialObjectMetadata};
use clientgo_informer::{DeleteEvent, ResourceEventHandler, meta_namespace_key_func};
use clientgo_rest::{ListParams, PatchParams, PatchType, ResourceClient, RestClient};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

use crate::{drain_label, pointer_segment, shard_label};

/// One replica's shard of a controller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    controller: String,
    replica: String,
}

impl Shard {
    /// `replica`'s shard of `controller`.
    pub fn new(controller: impl Into<String>, replica: impl Into<String>) -> Self {
        Shard {
            controller: controller.into(),
            replica: replica.into(),
        }
    }

    /// The controller's name.
    pub fn controller(&self) -> &str {
        &self.controller
    }

    /// The replica's identity (the shard label's value).
    pub fn replica(&self) -> &str {
        &self.replica
    }

    /// `shard.clientgo-rs.io/<controller>=<replica>`: the objects assigned to this shard.
    pub fn label_selector(&self) -> String {
        format!("{}={}", shard_label(&self.controller), self.replica)
    }

    /// The shard label and its value, to put on the dependents a reconcile creates (the
    /// sharder would label them too, but only after they were missing from this cache).
    pub fn label(&self) -> (String, String) {
        (shard_label(&self.controller), self.replica.clone())
    }

    /// A tweak for the informer factory: adds this shard's selector to every list and watch
    /// (after any selector already set).
    pub fn tweak(&self) -> impl Fn(&mut ListParams) + Send + Sync + 'static {
        let selector = self.label_selector();
        move |options: &mut ListParams| {
            options.label_selector = Some(match options.label_selector.take() {
                Some(existing) if !existing.is_empty() => format!("{existing},{selector}"),
                _ => selector.clone(),
            });
        }
    }
}

/// Drain acknowledgements sent at once, at most.
pub const MAX_ACKS_IN_FLIGHT: usize = 16;

/// What the gate knows of one key.
#[derive(Debug, Default, Clone, Copy)]
struct KeyState {
    /// Assigned to this shard, as the informer last said.
    owned: bool,
    /// The sharder asked for it back: no reconcile starts.
    draining: bool,
    /// A reconcile of it runs now.
    in_flight: bool,
}

struct GateInner {
    shard: Shard,
    shard_label: String,
    drain_label: String,
    resource: ApiResource,
    client: RestClient,
    keys: Mutex<HashMap<String, KeyState>>,
    finished: Notify,
    acks_tx: mpsc::UnboundedSender<String>,
    acks_rx: Mutex<Option<mpsc::UnboundedReceiver<String>>>,
    acked: AtomicU64,
    skipped: AtomicU64,
}

/// Tracks the keys a replica owns and honours drains; see the module docs. Clones share it.
#[derive(Clone)]
pub struct ShardGate {
    inner: Arc<GateInner>,
}

impl std::fmt::Debug for ShardGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardGate")
            .field("shard", &self.inner.shard)
            .field("keys", &self.inner.keys.lock().len())
            .finish_non_exhaustive()
    }
}

/// A reconcile of a key in progress; the gate's acknowledgement of a drain waits for it.
#[derive(Debug)]
pub struct InFlight {
    gate: ShardGate,
    key: String,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        let mut keys = self.gate.inner.keys.lock();
        if let Some(state) = keys.get_mut(&self.key) {
            state.in_flight = false;
            if !state.owned && !state.draining {
                keys.remove(&self.key);
            }
        }
        drop(keys);
        self.gate.inner.finished.notify_waiters();
    }
}

impl ShardGate {
    /// The gate of `shard` for the primary `resource` (the one whose keys the workers
    /// reconcile), acknowledging drains through `client`.
    pub fn new(shard: Shard, client: &RestClient, resource: &ApiResource) -> Self {
        let (acks_tx, acks_rx) = mpsc::unbounded_channel();
        ShardGate {
            inner: Arc::new(GateInner {
                shard_label: shard_label(shard.controller()),
                drain_label: drain_label(shard.controller()),
                shard,
                resource: resource.clone(),
                client: client.clone(),
                keys: Mutex::new(HashMap::new()),
                finished: Notify::new(),
                acks_tx,
                acks_rx: Mutex::new(Some(acks_rx)),
                acked: AtomicU64::new(0),
                skipped: AtomicU64::new(0),
            }),
        }
    }

    /// The shard.
    pub fn shard(&self) -> &Shard {
        &self.inner.shard
    }

    /// Drains acknowledged so far.
    pub fn acknowledged(&self) -> u64 {
        self.inner.acked.load(Ordering::Relaxed)
    }

    /// Reconciles skipped so far because the key was not owned or was draining.
    pub fn skipped(&self) -> u64 {
        self.inner.skipped.load(Ordering::Relaxed)
    }

    /// Whether a reconcile of `key` may start now: owned and not draining.
    pub fn owns(&self, key: &str) -> bool {
        self.inner
            .keys
            .lock()
            .get(key)
            .is_some_and(|s| s.owned && !s.draining)
    }

    /// Wraps the primary resource's handler: the gate learns each object's assignment, and
    /// `inner` is told only of objects this shard owns and is not draining (deletes always).
    pub fn handler<T, H>(&self, inner: H) -> GatedHandler<H>
    where
        T: Object + Send + Sync,
        H: ResourceEventHandler<T>,
    {
        GatedHandler {
            gate: self.clone(),
            inner,
        }
    }

    /// Learns `object`'s assignment; true if it is owned and not draining.
    fn observe<T: Object>(&self, object: &T) -> bool {
        let key = meta_namespace_key_func(object);
        let labels = object.labels();
        let ours = labels.get(&self.inner.shard_label) == Some(self.inner.shard.replica());
        let drain = labels.contains_key(&self.inner.drain_label);
        let mut keys = self.inner.keys.lock();
        let state = keys.entry(key.clone()).or_default();
        state.owned = ours;
        if ours && drain {
            if !state.draining {
                state.draining = true;
                tracing::debug!(%key, shard = %self.inner.shard.replica(), "drain asked");
                // The receiver lives as long as the gate; a send fails only after `run_acks`
                // was dropped, when nothing acknowledges anyway.
                let _ = self.inner.acks_tx.send(key);
            }
            false
        } else {
            state.draining = false;
            ours
        }
    }

    fn deleted(&self, key: &str) {
        let mut keys = self.inner.keys.lock();
        if let Some(state) = keys.get_mut(key) {
            state.owned = false;
            if !state.in_flight {
                keys.remove(key);
            }
        }
    }

    /// Starts a reconcile of `key` if this shard owns it and is not draining it.
    pub fn begin(&self, key: &str) -> Option<InFlight> {
        let mut keys = self.inner.keys.lock();
        let state = keys.get_mut(key)?;
        if !state.owned || state.draining || state.in_flight {
            return None;
        }
        state.in_flight = true;
        Some(InFlight {
            gate: self.clone(),
            key: key.to_owned(),
        })
    }

    /// Runs `reconcile` for `key` (an `ObjectKey`, or its text) if this shard owns it and is
    /// not draining it; a skipped key is `Ok` (its work belongs to another shard now).
    pub async fn reconcile<K, F, Fut, E>(&self, key: &K, reconcile: F) -> Result<(), E>
    where
        K: AsRef<str> + ?Sized,
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(), E>>,
    {
        let key = key.as_ref();
        let Some(_in_flight) = self.begin(key) else {
            self.inner.skipped.fetch_add(1, Ordering::Relaxed);
            tracing::trace!(%key, "not this shard's key now: skipped");
            return Ok(());
        };
        reconcile().await
    }

    /// Acknowledges drains until `cancel` (or until dropped: run it beside the workers, under
    /// the membership's fence). Each acknowledgement waits for the key's reconcile in hand,
    /// then removes the labels; failed writes are retried with backoff.
    pub async fn run_acks(&self, cancel: CancellationToken) {
        let Some(mut acks) = self.inner.acks_rx.lock().take() else {
            tracing::warn!("run_acks is already running for this gate");
            return;
        };
        let mut pending = tokio::task::JoinSet::new();
        loop {
            tokio::select! {
                () = cancel.cancelled() => break,
                // Bounded: a join that drains hundreds of objects queues its keys in the
                // channel, not as hundreds of tasks waiting on the throttle at once.
                key = acks.recv(), if pending.len() < MAX_ACKS_IN_FLIGHT => match key {
                    Some(key) => {
                        let gate = self.clone();
                        let cancel = cancel.clone();
                        pending.spawn(async move { gate.acknowledge(&key, &cancel).await });
                    }
                    None => break,
                },
                Some(_) = pending.join_next(), if !pending.is_empty() => {}
            }
        }
        // Dropping `pending` aborts what is still running: nothing is written after this.
        *self.inner.acks_rx.lock() = Some(acks);
    }

    async fn acknowledge(&self, key: &str, cancel: &CancellationToken) {
        // Wait until no reconcile of the key runs (none starts any more: it is draining).
        loop {
            let finished = self.inner.finished.notified();
            let busy = self.inner.keys.lock().get(key).is_some_and(|s| s.in_flight);
            if !busy {
                break;
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = finished => {}
            }
        }
        let (namespace, name) = match key.split_once('/') {
            Some((namespace, name)) => (Some(namespace), name),
            None => (None, key),
        };
        let client = ResourceClient::<PartialObjectMetadata>::metadata(
            &self.inner.client,
            &self.inner.resource,
            namespace,
        );
        let shard = format!(
            "/metadata/labels/{}",
            pointer_segment(&self.inner.shard_label)
        );
        let drain = format!(
            "/metadata/labels/{}",
            pointer_segment(&self.inner.drain_label)
        );
        let patch = json!([
            {"op": "test", "path": shard, "value": self.inner.shard.replica()},
            {"op": "remove", "path": drain},
            {"op": "remove", "path": shard},
        ]);
        let params = PatchParams::default();
        let mut backoff = Duration::from_millis(50);
        loop {
            let sent = client.patch(name, PatchType::Json, &patch, &params);
            let outcome = tokio::select! {
                () = cancel.cancelled() => return,
                outcome = sent => outcome,
            };
            match outcome {
                Ok(_) => {
                    self.inner.acked.fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%key, shard = %self.inner.shard.replica(), "drain acknowledged");
                    return;
                }
                // The test failed or the labels are gone: no longer this shard's to give back.
                Err(error) if error.is_invalid() || error.is_not_found() => {
                    tracing::debug!(%key, "drain no longer applies");
                    return;
                }
                Err(error) => {
                    tracing::warn!(%key, %error, "acknowledging a drain failed; retrying");
                }
            }
            tokio::select! {
                () = cancel.cancelled() => return,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(Duration::from_secs(5));
        }
    }
}

/// The primary resource's handler behind a [`ShardGate`]; see [`ShardGate::handler`].
pub struct GatedHandler<H> {
    gate: ShardGate,
    inner: H,
}

impl<H> std::fmt::Debug for GatedHandler<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatedHandler")
            .field("gate", &self.gate)
            .finish_non_exhaustive()
    }
}

impl<T, H> ResourceEventHandler<T> for GatedHandler<H>
where
    T: Object + Send + Sync,
    H: ResourceEventHandler<T>,
{
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool) {
        if self.gate.observe(object.as_ref()) {
            self.inner.on_add(object, is_in_initial_list);
        }
    }

    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        if self.gate.observe(new.as_ref()) {
            self.inner.on_update(old, new);
        }
    }

    fn on_delete(&self, event: DeleteEvent<T>) {
        self.gate.deleted(&event.key());
        self.inner.on_delete(event);
    }

    /// The gate's check is a map lookup: as quick as the wrapped handler.
    fn is_nonblocking(&self) -> bool {
        self.inner.is_nonblocking()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::{DynamicObject, ObjectMut};
    use clientgo_rest::Config;

    fn gate() -> ShardGate {
        let client = RestClient::new(&Config::new("http://127.0.0.1:1".parse().unwrap())).unwrap();
        let resource = ApiResource {
            group: String::new(),
            version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true,
        };
        ShardGate::new(Shard::new("foo", "a"), &client, &resource)
    }

    fn object(shard: Option<&str>, drain: bool) -> DynamicObject {
        let mut object = DynamicObject::new("x");
        object.set_namespace("ns".into());
        if let Some(shard) = shard {
            object.labels_mut().insert(shard_label("foo"), shard.into());
        }
        if drain {
            object
                .labels_mut()
                .insert(drain_label("foo"), "true".into());
        }
        object
    }

    #[test]
    fn the_tweak_adds_the_selector() {
        let tweak = Shard::new("foo", "a").tweak();
        let mut options = ListParams::default();
        tweak(&mut options);
        assert_eq!(
            options.label_selector.as_deref(),
            Some("shard.clientgo-rs.io/foo=a")
        );
        options.label_selector = Some("app=web".into());
        tweak(&mut options);
        assert_eq!(
            options.label_selector.as_deref(),
            Some("app=web,shard.clientgo-rs.io/foo=a")
        );
    }

    #[tokio::test]
    async fn only_owned_undrained_keys_start_and_never_twice() {
        let gate = gate();
        assert!(gate.begin("ns/x").is_none(), "unknown");
        assert!(!gate.observe(&object(Some("b"), false)), "another shard's");
        assert!(gate.begin("ns/x").is_none());
        assert!(gate.observe(&object(Some("a"), false)));
        let held = gate.begin("ns/x").expect("owned");
        assert!(gate.begin("ns/x").is_none(), "in flight");
        assert!(!gate.observe(&object(Some("a"), true)), "drain asked");
        drop(held);
        assert!(gate.begin("ns/x").is_none(), "draining");
        gate.deleted("ns/x");
        assert!(gate.begin("ns/x").is_none(), "left the shard");
        assert!(gate.observe(&object(Some("a"), false)), "assigned again");
        assert!(gate.begin("ns/x").is_some());
    }

    #[tokio::test]
    async fn a_skipped_reconcile_is_ok_and_counted() {
        let gate = gate();
        let ran = gate
            .reconcile("ns/x", || async { Err::<(), &str>("must not run") })
            .await;
        assert_eq!(ran, Ok(()));
        assert_eq!(gate.skipped(), 1);
    }
}
