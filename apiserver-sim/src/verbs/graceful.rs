//! Graceful deletion of Pods and the deletion mark of CustomResourceDefinitions.
//!
//! Mirrors the Pod strategy's `CheckGracefulDelete` with `rest.BeforeDelete`, and the CRD
//! registry's `Delete` (apiextensions-apiserver `registry/customresourcedefinition/etcd.go`):
//! * a Pod bound to a node (`spec.nodeName`) and not terminated is deleted gracefully: its
//!   grace period is the request's `gracePeriodSeconds`, else the Pod's
//!   `terminationGracePeriodSeconds`, else 30; it gets `deletionTimestamp` (now plus the
//!   period) and `deletionGracePeriodSeconds`, stays readable, and is removed when the
//!   period ends (the kubelet's part, played here by a tokio timer, so paused clocks drive
//!   it) or on a later delete with a shorter period, `0` removing it at once. Other Pods go
//!   at once. A Pod's DELETE answers the Pod (the Pod registry's `ReturnDeletedObject`);
//! * deleting a CRD marks it (`deletionTimestamp`, the
//!   `customresourcecleanup.apiextensions.k8s.io` finalizer, condition `Terminating`) and
//!   answers it; the garbage collector ([`crate::gc`]) then deletes its custom resources and
//!   removes the finalizer, which removes the CRD.
//!
//! Differences: the timer stands for a kubelet that stops every container at once; a Pod
//! still holding finalizers when its period ends keeps them and goes once they are gone.

use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::Time;
use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;
use crate::state::State;
use crate::store::StoredObject;
use crate::verbs::update::{Part, guaranteed_update};

/// The finalizer of a CRD being deleted, removed once its custom resources are gone.
pub const CRD_CLEANUP: &str = "customresourcecleanup.apiextensions.k8s.io";

/// The Pods' default `terminationGracePeriodSeconds`.
const DEFAULT_GRACE: i64 = 30;

/// Whether `info` is core Pods.
pub fn is_pod(info: &ResourceInfo) -> bool {
    info.group.is_empty() && info.plural == "pods"
}

/// Whether `info` is CustomResourceDefinitions.
pub fn is_crd(info: &ResourceInfo) -> bool {
    info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions"
}

/// The grace period a delete gives `pod` (`CheckGracefulDelete`): the request's, else the
/// Pod's own, else 30; 0 for a Pod bound to no node or already terminated.
pub fn pod_grace(pod: &StoredObject, requested: Option<i64>) -> i64 {
    let value = pod.to_value();
    let bound = value["spec"]["nodeName"]
        .as_str()
        .is_some_and(|n| !n.is_empty());
    let terminated = matches!(
        value["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    );
    if !bound || terminated {
        return 0;
    }
    let period = requested
        .or_else(|| value["spec"]["terminationGracePeriodSeconds"].as_i64())
        .unwrap_or(DEFAULT_GRACE);
    // A negative period is taken as the shortest one (as the Pod strategy does).
    if period < 0 { 1 } else { period }
}

/// Marks `obj` as deleted gracefully over `grace` seconds (`rest.BeforeDelete`).
pub fn mark_graceful(info: &ResourceInfo, obj: &mut Map<String, Value>, grace: i64) {
    let at = Time::now()
        .checked_add(Duration::from_secs(grace.unsigned_abs()))
        .unwrap_or_else(Time::now);
    let meta = crate::validation::meta_mut(obj);
    let first = meta.get("deletionTimestamp").is_none_or(Value::is_null);
    meta.insert("deletionTimestamp".into(), json!(at.to_rfc3339()));
    meta.insert("deletionGracePeriodSeconds".into(), json!(grace));
    if let Some(g) = meta.get("generation").and_then(Value::as_i64)
        && first
        && info.tracks_generation
        && g > 0
    {
        meta.insert("generation".into(), json!(g + 1));
    }
}

/// The deletion mark of the CRD registry's `Delete`: a deletion timestamp, the cleanup
/// finalizer and the `Terminating` condition.
pub fn mark_crd_deleting(obj: &mut Map<String, Value>) {
    let meta = crate::validation::meta_mut(obj);
    meta.insert("deletionTimestamp".into(), crate::verbs::now());
    let finalizers = meta.entry("finalizers").or_insert_with(|| json!([]));
    if let Value::Array(items) = finalizers
        && !items.iter().any(|f| f == CRD_CLEANUP)
    {
        items.push(json!(CRD_CLEANUP));
    }
    let condition = json!({"type": "Terminating", "status": "True",
        "lastTransitionTime": crate::verbs::now(), "reason": "InstanceDeletionPending",
        "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon"});
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if let Some(conditions) = status
        .as_object_mut()
        .map(|s| s.entry("conditions").or_insert_with(|| json!([])))
        && let Value::Array(items) = conditions
    {
        items.retain(|c| c["type"] != "Terminating");
        items.push(condition);
    }
}

/// Removes the Pod `namespace/name` (if it is still the one with `uid`, being deleted) when
/// `grace` seconds have passed, as its kubelet would once its containers stopped.
pub fn remove_when_grace_ends(state: &State, info: &ResourceInfo, pod: &StoredObject, grace: i64) {
    let (state, info) = (state.clone(), Arc::new(info.clone()));
    let (namespace, name, uid) = (
        pod.namespace().to_owned(),
        pod.name().to_owned(),
        pod.uid().to_owned(),
    );
    let mut shutdown = state.shutdown.clone();
    tokio::spawn(async move {
        tokio::select! {
            () = tokio::time::sleep(Duration::from_secs(grace.unsigned_abs())) => {}
            _ = shutdown.changed() => return,
        }
        let key = crate::store::object_key(&namespace, &name);
        let Some(current) = state.store.get(&info.keyspace(), &key) else {
            return;
        };
        if current.uid() != uid || !current.is_deleting() {
            return;
        }
        // The kubelet's final delete: no grace left; finalizers, if any, still hold it.
        let result = guaranteed_update(&state, &info, &namespace, &name, Part::Internal, |old| {
            let mut new = old.clone();
            crate::validation::meta_mut(&mut new)
                .insert("deletionGracePeriodSeconds".into(), json!(0));
            Ok(new)
        });
        let gone = match result {
            Ok(updated) if updated.removed => true,
            Ok(updated) if updated.object.finalizers().is_empty() => state
                .store
                .delete(
                    &info.keyspace(),
                    &key,
                    Some(updated.object.rv()),
                    &info.selectable_fields,
                )
                .is_ok(),
            Ok(_) => false,
            Err(e) => {
                tracing::debug!(error = %e, "pod grace period: final delete failed");
                false
            }
        };
        if gone {
            tracing::debug!(key, "pod removed after its grace period");
            state.gc_kick.notify_one();
        }
    });
}
