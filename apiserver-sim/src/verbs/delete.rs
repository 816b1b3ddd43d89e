//! delete and deletecollection, with finalizers and propagation policies.
//!
//! Mirrors `Store.Delete` / `Store.DeleteCollection` and `rest.BeforeDelete`: preconditions
//! (uid, resourceVersion) give 409; an object with finalizers, or deleted with
//! `propagationPolicy` `Foreground` (finalizer `foregroundDeletion`) or `Orphan` (finalizer
//! `orphan`), is only marked (`deletionTimestamp`, `deletionGracePeriodSeconds: 0`,
//! generation bumped) and removed once its finalizers are gone; a namespace is marked
//! `Terminating` and emptied by the namespace controller ([`crate::gc`]). Everything else is
//! removed at once. `dryRun=All` answers as the delete would and changes nothing. Pods bound
//! to a node are deleted over their grace period, and a CRD is marked and cleaned up
//! ([`graceful`]). The response for an immediate delete is a `Success` Status, but for
//! Pods, which answer their last state.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::errors::{self, ApiResult, FieldError};
use crate::resources::ResourceInfo;
use crate::state::State;
use crate::store::{StoreError, StoredObject, object_key};
use crate::verbs::graceful;
use crate::verbs::update::{Part, guaranteed_update};
use crate::{crd, verbs};

/// Finalizer the garbage collector uses for foreground deletion.
pub const FOREGROUND: &str = "foregroundDeletion";
/// Finalizer the garbage collector uses to orphan dependents.
pub const ORPHAN: &str = "orphan";

/// `metav1.Preconditions`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// Required uid.
    #[serde(default)]
    pub uid: Option<String>,
    /// Required resourceVersion.
    #[serde(default)]
    pub resource_version: Option<String>,
}

/// `metav1.DeleteOptions`, the fields the server honours.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOptions {
    /// `Orphan`, `Background` or `Foreground`.
    #[serde(default)]
    pub propagation_policy: Option<String>,
    /// Deprecated: `true` means `Orphan`.
    #[serde(default)]
    pub orphan_dependents: Option<bool>,
    /// Preconditions.
    #[serde(default)]
    pub preconditions: Option<Preconditions>,
    /// Accepted and ignored (deletion is immediate).
    #[serde(default)]
    pub grace_period_seconds: Option<i64>,
    /// `["All"]`: everything but the write (other values: 422).
    #[serde(default)]
    pub dry_run: Vec<String>,
}

impl DeleteOptions {
    /// Validates the policy; returns the finalizer it asks for.
    pub fn finalizer(&self) -> ApiResult<Option<&'static str>> {
        let values: Vec<&str> = self.dry_run.iter().map(String::as_str).collect();
        // As `ValidateDeleteOptions`: the policy's error, then dryRun's, in one 422.
        let policy = self.policy_finalizer();
        let dry_run = crate::verbs::update::check_dry_run(&values, "DeleteOptions");
        match (policy, dry_run) {
            (Ok(finalizer), Ok(_)) => Ok(finalizer),
            (Err(e), Ok(_)) | (Ok(_), Err(e)) => Err(e),
            (Err(policy), Err(dry_run)) => {
                let causes = |e: &crate::errors::ApiError| {
                    let causes = e.status.details.as_ref().map(|d| d.causes.clone());
                    causes.unwrap_or_default().into_iter().map(|c| FieldError {
                        reason: if c.reason == "FieldValueInvalid" {
                            "FieldValueInvalid"
                        } else {
                            "FieldValueNotSupported"
                        },
                        field: c.field,
                        detail: c.message,
                    })
                };
                let all: Vec<FieldError> = causes(&policy).chain(causes(&dry_run)).collect();
                Err(errors::invalid("meta.k8s.io", "DeleteOptions", "", &all))
            }
        }
    }

    fn policy_finalizer(&self) -> ApiResult<Option<&'static str>> {
        match (self.propagation_policy.as_deref(), self.orphan_dependents) {
            (Some(_), Some(_)) => Err(errors::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                &[FieldError::invalid(
                    "propagationPolicy",
                    self.propagation_policy.as_deref().unwrap_or(""),
                    "orphanDependents and deletionPropagation cannot be both set",
                )],
            )),
            (Some("Orphan"), _) | (None, Some(true)) => Ok(Some(ORPHAN)),
            (Some("Foreground"), _) => Ok(Some(FOREGROUND)),
            (Some("Background"), _) | (None, _) => Ok(None),
            (Some(other), _) => Err(errors::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                &[FieldError::unsupported(
                    "propagationPolicy",
                    other,
                    // kube-apiserver 1.36.2 lists "nil" (no policy) as a value too.
                    &["Foreground", "Background", "Orphan", "nil"],
                )],
            )),
        }
    }
}

/// What a delete did.
#[derive(Debug, Clone)]
pub enum Deleted {
    /// The object is gone; its last state.
    Removed(Arc<StoredObject>),
    /// The object is marked for deletion and waits for its finalizers (or grace period).
    Pending(Arc<StoredObject>),
    /// The object is gone, and the answer is its last state rather than a Status (Pods:
    /// the registry's `ReturnDeletedObject`).
    Gone(Arc<StoredObject>),
}

fn check_preconditions(
    info: &ResourceInfo,
    name: &str,
    obj: &StoredObject,
    p: &Preconditions,
) -> ApiResult<()> {
    if let Some(uid) = p.uid.as_deref().filter(|u| !u.is_empty()) {
        if uid != obj.uid() {
            return Err(errors::conflict(
                &info.group,
                &info.kind,
                name,
                &format!(
                    "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                    obj.uid()
                ),
            ));
        }
    }
    if let Some(rv) = p.resource_version.as_deref().filter(|r| !r.is_empty()) {
        if rv != obj.rv().to_string() {
            return Err(errors::conflict(
                &info.group,
                &info.kind,
                name,
                &format!(
                    "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                    obj.rv()
                ),
            ));
        }
    }
    Ok(())
}

/// Deletes one object.
pub fn delete(
    state: &State,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    opts: &DeleteOptions,
) -> ApiResult<Deleted> {
    let added_finalizer = opts.finalizer()?;
    let ks = info.keyspace();
    let key = object_key(namespace, name);
    let is_namespace = info.group.is_empty() && info.plural == "namespaces";
    for _ in 0..64 {
        let Some(current) = state.store.get(&ks, &key) else {
            return Err(errors::not_found(&info.group, &info.plural, name));
        };
        if let Some(p) = &opts.preconditions {
            check_preconditions(info, name, &current, p)?;
        }
        let pod_grace = graceful::is_pod(info)
            .then(|| graceful::pod_grace(&current, opts.grace_period_seconds))
            .filter(|_| opts.dry_run.is_empty());
        if current.is_deleting() {
            // A shorter grace period (a Pod deleted again) brings the removal forward.
            let shorter = pod_grace.filter(|g| *g < current.deletion_grace_seconds().unwrap_or(0));
            match shorter {
                Some(0) if current.finalizers().is_empty() => {}
                Some(g) => return shorten_grace(state, info, &current, g),
                None => return Ok(Deleted::Pending(current)),
            }
        }
        if graceful::is_crd(info) && opts.dry_run.is_empty() && !current.is_deleting() {
            let updated = guaranteed_update(state, info, namespace, name, Part::Internal, |old| {
                let mut new = old.clone();
                graceful::mark_crd_deleting(&mut new);
                Ok(new)
            })?;
            state.gc_kick.notify_one();
            return Ok(Deleted::Pending(updated.object));
        }
        let pod_graceful = pod_grace.filter(|g| *g > 0);
        let graceful = !current.is_deleting()
            && (is_namespace
                || !current.finalizers().is_empty()
                || added_finalizer.is_some()
                || pod_graceful.is_some());
        if !opts.dry_run.is_empty() {
            // dryRun=All: the answer the delete would give, nothing written.
            if !graceful {
                return Ok(Deleted::Removed(current));
            }
            let Value::Object(mut marked) = current.to_value() else {
                return Err(errors::internal("stored object is not a JSON object"));
            };
            mark_deleting(info, &mut marked, added_finalizer, current.rv())?;
            let object = Value::Object(marked);
            return Ok(Deleted::Pending(StoredObject::from_value(
                &object,
                current.rv(),
                &info.selectable_fields,
            )));
        }
        if graceful {
            let expected = current.rv();
            let result = guaranteed_update(state, info, namespace, name, Part::Internal, |old| {
                let mut new = old.clone();
                mark_deleting(info, &mut new, added_finalizer, expected)?;
                if let Some(g) = pod_graceful {
                    graceful::mark_graceful(info, &mut new, g);
                }
                Ok(new)
            });
            return match result {
                Ok(updated) => {
                    state.gc_kick.notify_one();
                    if let (Some(g), false) = (pod_graceful, updated.removed) {
                        graceful::remove_when_grace_ends(state, info, &updated.object, g);
                    }
                    if updated.removed {
                        Ok(Deleted::Removed(updated.object))
                    } else {
                        Ok(Deleted::Pending(updated.object))
                    }
                }
                Err(e) if e.code() == 409 && opts.preconditions.is_none() => continue,
                Err(e) => Err(e),
            };
        }
        match state
            .store
            .delete(&ks, &key, Some(current.rv()), &info.selectable_fields)
        {
            Ok(gone) => {
                tracing::debug!(resource = %info.plural, key, "deleted");
                crd::after_write(state, info);
                state.gc_kick.notify_one();
                if graceful::is_pod(info) {
                    return Ok(Deleted::Gone(deleted_now(info, &gone)));
                }
                return Ok(Deleted::Removed(gone));
            }
            Err(StoreError::Conflict { .. }) => continue,
            Err(e) => return Err(verbs::store_error(info, name, e)),
        }
    }
    Err(errors::conflict(
        &info.group,
        &info.plural,
        name,
        "too many concurrent updates; please try again",
    ))
}

/// A Pod deleted again with a shorter grace period: marked with it, removed when it ends.
fn shorten_grace(
    state: &State,
    info: &ResourceInfo,
    current: &StoredObject,
    grace: i64,
) -> ApiResult<Deleted> {
    let expected = current.rv();
    let updated = guaranteed_update(
        state,
        info,
        current.namespace(),
        current.name(),
        Part::Internal,
        |old| {
            let mut new = old.clone();
            crate::validation::meta_mut(&mut new)
                .insert("resourceVersion".into(), json!(expected.to_string()));
            graceful::mark_graceful(info, &mut new, grace);
            Ok(new)
        },
    )?;
    if updated.removed {
        return Ok(Deleted::Gone(updated.object));
    }
    graceful::remove_when_grace_ends(state, info, &updated.object, grace);
    Ok(Deleted::Pending(updated.object))
}

/// A Pod's answer to an immediate delete: its last state, marked as deleted now with no
/// grace period (what `rest.BeforeDelete` wrote before the store removed it).
fn deleted_now(info: &ResourceInfo, gone: &StoredObject) -> Arc<StoredObject> {
    let Value::Object(mut last) = gone.to_value() else {
        return Arc::new(gone.clone());
    };
    graceful::mark_graceful(info, &mut last, 0);
    StoredObject::from_value(&Value::Object(last), gone.rv(), &info.selectable_fields)
}

fn mark_deleting(
    info: &ResourceInfo,
    obj: &mut Map<String, Value>,
    finalizer: Option<&str>,
    expected_rv: u64,
) -> ApiResult<()> {
    let meta = crate::validation::meta_mut(obj);
    meta.insert(
        "resourceVersion".into(),
        Value::String(expected_rv.to_string()),
    );
    meta.insert("deletionTimestamp".into(), verbs::now());
    meta.insert("deletionGracePeriodSeconds".into(), json!(0));
    if let Some(f) = finalizer {
        let list = meta
            .entry("finalizers")
            .or_insert_with(|| Value::Array(Vec::new()));
        if !list.is_array() {
            *list = Value::Array(Vec::new());
        }
        if let Value::Array(items) = list {
            if !items.iter().any(|v| v.as_str() == Some(f)) {
                items.push(Value::String(f.to_owned()));
            }
        }
    }
    if let Some(g) = meta.get("generation").and_then(Value::as_i64) {
        if info.tracks_generation && g > 0 {
            meta.insert("generation".into(), json!(g + 1));
        }
    }
    if info.group.is_empty() && info.plural == "namespaces" {
        obj.insert("status".into(), json!({"phase": "Terminating"}));
    }
    Ok(())
}

/// Deletes every object of `info` in `namespace` (`""`: all) that `filter` selects.
pub fn delete_collection(
    state: &State,
    info: &ResourceInfo,
    namespace: &str,
    opts: &DeleteOptions,
    filter: &dyn Fn(&StoredObject) -> bool,
) -> ApiResult<Vec<Arc<StoredObject>>> {
    opts.finalizer()?;
    let mut out = Vec::new();
    for obj in state.store.all(&info.keyspace()) {
        if (!namespace.is_empty() && obj.namespace() != namespace) || !filter(&obj) {
            continue;
        }
        match delete(state, info, obj.namespace(), obj.name(), opts) {
            Ok(Deleted::Removed(o) | Deleted::Pending(o) | Deleted::Gone(o)) => out.push(o),
            Err(e) if e.code() == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policies_map_to_finalizers() {
        let o = |p: &str| DeleteOptions {
            propagation_policy: Some(p.into()),
            ..Default::default()
        };
        assert_eq!(o("Orphan").finalizer().unwrap(), Some(ORPHAN));
        assert_eq!(o("Foreground").finalizer().unwrap(), Some(FOREGROUND));
        assert_eq!(o("Background").finalizer().unwrap(), None);
        let e = o("Sideways").finalizer().unwrap_err();
        assert_eq!(e.code(), 422);
        assert!(e.status.message.contains("Unsupported value: \"Sideways\""));
    }
}
