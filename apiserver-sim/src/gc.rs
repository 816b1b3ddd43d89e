//! Background controllers: the garbage collector and the namespace controller.
//!
//! Mirrors, in one periodic pass over the store, what kube-controller-manager's garbage
//! collector (`pkg/controller/garbagecollector`) and namespace controller
//! (`pkg/controller/namespace`) do:
//! * an object whose owner references all point to objects that no longer exist is deleted
//!   (background propagation); one with another live owner loses only the dangling
//!   references (`attemptToDeleteItem`'s patch);
//! * an owner being deleted with the `orphan` finalizer has its owner reference removed from
//!   every dependent, then loses the finalizer;
//! * an owner being deleted with the `foregroundDeletion` finalizer has its dependents
//!   deleted, and loses the finalizer once none is left;
//! * a terminating namespace has everything in it deleted, then the namespace is removed;
//! * a CRD being deleted has its custom resources deleted, then loses its
//!   `customresourcecleanup.apiextensions.k8s.io` finalizer (apiextensions-apiserver's
//!   finalizer controller).
//!
//! Differences: owners are matched by uid alone, there is no dependency graph kept between
//! passes (each pass scans the store), and passes run after writes, at most once per
//! configured interval.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::resources::ResourceInfo;
use crate::state::State;
use crate::store::{StoredObject, object_key};
use crate::verbs::delete::{self, DeleteOptions, FOREGROUND, ORPHAN};
use crate::verbs::graceful::{self, CRD_CLEANUP};
use crate::verbs::update::{Part, guaranteed_update};

/// Runs passes after writes until the server shuts down.
pub async fn run(state: State) {
    let mut shutdown = state.shutdown.clone();
    let mut revs = state.store.subscribe();
    let mut checked = 0;
    loop {
        tokio::select! {
            changed = revs.changed() => if changed.is_err() { return },
            () = state.gc_kick.notified() => {}
            _ = shutdown.changed() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(state.config.gc_interval) => {}
            _ = shutdown.changed() => return,
        }
        // Skip the scan when nothing since the last pass can have made work.
        let now = state.store.rev();
        if state.store.gc_relevant_since(checked) {
            pass(&state);
        }
        checked = now;
    }
}

struct Entry {
    info: Arc<ResourceInfo>,
    obj: Arc<StoredObject>,
}

fn remove_finalizer(state: &State, e: &Entry, finalizer: &str) {
    let result = guaranteed_update(
        state,
        &e.info,
        e.obj.namespace(),
        e.obj.name(),
        Part::Internal,
        |old| {
            let mut new = old.clone();
            if let Some(Value::Array(f)) = new
                .get_mut("metadata")
                .and_then(|m| m.get_mut("finalizers"))
            {
                f.retain(|v| v.as_str() != Some(finalizer));
            }
            Ok(new)
        },
    );
    if let Err(e) = result {
        tracing::debug!(error = %e, "gc: removing finalizer failed");
    }
}

fn drop_owner_ref(state: &State, e: &Entry, owner_uid: &str) {
    let result = guaranteed_update(
        state,
        &e.info,
        e.obj.namespace(),
        e.obj.name(),
        Part::Internal,
        |old| {
            let mut new = old.clone();
            if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
                if let Some(Value::Array(refs)) = meta.get_mut("ownerReferences") {
                    refs.retain(|r| r.get("uid").and_then(Value::as_str) != Some(owner_uid));
                    if refs.is_empty() {
                        meta.remove("ownerReferences");
                    }
                }
            }
            Ok(new)
        },
    );
    if let Err(e) = result {
        tracing::debug!(error = %e, "gc: orphaning failed");
    }
}

fn delete_entry(state: &State, e: &Entry) {
    match delete::delete(
        state,
        &e.info,
        e.obj.namespace(),
        e.obj.name(),
        &DeleteOptions::default(),
    ) {
        Ok(_) => tracing::debug!(key = e.obj.key(), resource = %e.info.plural, "gc: deleted"),
        Err(err) if err.code() == 404 => {}
        Err(err) => tracing::debug!(error = %err, "gc: delete failed"),
    }
}

/// The CRD finalizer controller's work on a CRD being deleted: delete its custom resources,
/// then, once none is left, remove the cleanup finalizer (which removes the CRD).
fn clean_up_crd(state: &State, e: &Entry) {
    let crd = e.obj.to_value();
    let group = crd["spec"]["group"].as_str().unwrap_or("");
    let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or("");
    let instances = state.store.all(&format!("{group}/{plural}"));
    if instances.is_empty() {
        remove_finalizer(state, e, CRD_CLEANUP);
        return;
    }
    let Some(info) = state
        .registry
        .all()
        .into_iter()
        .find(|r| r.group == group && r.plural == plural && !r.strategic_merge)
    else {
        return;
    };
    for obj in instances.iter().filter(|o| !o.is_deleting()) {
        delete_entry(
            state,
            &Entry {
                info: info.clone(),
                obj: obj.clone(),
            },
        );
    }
}

/// One pass of the garbage collector and the namespace controller.
pub fn pass(state: &State) {
    let mut seen = HashSet::new();
    let mut entries = Vec::new();
    for info in state.registry.all() {
        if !seen.insert(info.keyspace()) {
            continue;
        }
        for obj in state.store.all(&info.keyspace()) {
            entries.push(Entry {
                info: info.clone(),
                obj,
            });
        }
    }
    let mut dependents: HashMap<&str, Vec<&Entry>> = HashMap::new();
    for e in &entries {
        for o in e.obj.owners() {
            dependents.entry(&o.uid).or_default().push(e);
        }
    }
    let terminating: HashSet<&str> = entries
        .iter()
        .filter(|e| e.info.group.is_empty() && e.info.plural == "namespaces" && e.obj.is_deleting())
        .map(|e| e.obj.name())
        .collect();
    let mut namespace_busy: HashSet<&str> = HashSet::new();
    for e in &entries {
        if !e.obj.owners().is_empty() && !e.obj.is_deleting() {
            // Re-read: an earlier step of this pass may have orphaned the object.
            let current = state.store.get(&e.info.keyspace(), e.obj.key());
            if let Some(c) = current.filter(|c| !c.owners().is_empty()) {
                let missing: Vec<&str> = c
                    .owners()
                    .iter()
                    .filter(|o| state.store.find_uid(&o.uid).is_none())
                    .map(|o| &*o.uid)
                    .collect();
                if missing.len() == c.owners().len() {
                    delete_entry(state, e);
                } else {
                    // Another owner lives: only the dangling references go.
                    for uid in missing {
                        drop_owner_ref(state, e, uid);
                    }
                }
            }
        }
        if e.info.namespaced && terminating.contains(e.obj.namespace()) {
            namespace_busy.insert(e.obj.namespace());
            if !e.obj.is_deleting() {
                delete_entry(state, e);
            }
        }
        if !e.obj.is_deleting() {
            continue;
        }
        if graceful::is_crd(&e.info) && e.obj.finalizers().iter().any(|f| &**f == CRD_CLEANUP) {
            clean_up_crd(state, e);
            continue;
        }
        let deps = dependents
            .get(e.obj.uid())
            .map(Vec::as_slice)
            .unwrap_or_default();
        if e.obj.finalizers().iter().any(|f| &**f == ORPHAN) {
            for d in deps {
                drop_owner_ref(state, d, e.obj.uid());
            }
            remove_finalizer(state, e, ORPHAN);
        } else if e.obj.finalizers().iter().any(|f| &**f == FOREGROUND) {
            let live: Vec<&&Entry> = deps
                .iter()
                .filter(|d| state.store.get(&d.info.keyspace(), d.obj.key()).is_some())
                .collect();
            if live.is_empty() {
                remove_finalizer(state, e, FOREGROUND);
            } else {
                for d in live {
                    if !d.obj.is_deleting() {
                        delete_entry(state, d);
                    }
                }
            }
        }
    }
    for ns in terminating {
        if namespace_busy.contains(ns) {
            continue;
        }
        let key = object_key("", ns);
        let fields = state
            .registry
            .get("", "v1", "namespaces")
            .map(|i| i.selectable_fields.clone())
            .unwrap_or_default();
        if let Some(obj) = state.store.get("/namespaces", &key) {
            if obj.finalizers().is_empty()
                && state
                    .store
                    .delete("/namespaces", &key, Some(obj.rv()), &fields)
                    .is_ok()
            {
                tracing::debug!(namespace = ns, "namespace removed");
            }
        }
    }
}
