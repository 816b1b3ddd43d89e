//! update and patch: replace an object, or compute its new version from the current one.
//!
//! Mirrors `Store.Update` / `GuaranteedUpdate` and `rest.BeforeUpdate`: the new object
//! keeps the immutable metadata (`uid`, `creationTimestamp`, deletion fields); a
//! `resourceVersion` in it is a precondition (409 Conflict with the real message when
//! stale), and without one the update is retried on conflicts; with a `status` subresource
//! a main-resource write keeps the old status and a `/status` write changes only status;
//! `metadata.generation` is bumped when anything but metadata (and a subresource status)
//! changed; no new finalizers may be added to an object being deleted; and once an object
//! being deleted has no finalizers left it is removed instead (watchers see one DELETED event
//! carrying the last stored state, as kube-apiserver's delete-during-update sends).
//! Writes from requests record `metadata.managedFields` ([`crate::managed_fields`]);
//! `dryRun=All` runs every step but the write and answers the object as it would be, with
//! the resourceVersion it has now.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::errors::{self, ApiResult, FieldError};
use crate::managed_fields::{self, Writer};
use crate::resources::ResourceInfo;
use crate::state::SimState;
use crate::store::{StoreError, StoredObject, object_key};
use crate::validation::{check_type_and_meta, meta_mut, meta_str};
use crate::{crd, verbs};

/// Which part of the object a write may change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The main resource (status kept when it is a subresource).
    Main,
    /// The `status` subresource.
    Status,
    /// A write by the server itself (deletion marks, controllers): taken as given.
    Internal,
}

/// The result of an update.
#[derive(Debug, Clone)]
pub struct Updated {
    /// The object as written (or as it was, when nothing changed).
    pub object: Arc<StoredObject>,
    /// Whether the write removed the object (last finalizer gone).
    pub removed: bool,
}

/// The options of a write request that the verbs honour: who writes, `dryRun`, `force`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriteOptions {
    /// The manager recorded in managedFields.
    pub writer: Writer,
    /// `dryRun=All`: everything but the write.
    pub dry_run: bool,
    /// `force` (apply only), when given.
    pub force: Option<bool>,
    /// Whether `fieldManager` was given.
    pub field_manager_given: bool,
    /// `fieldValidation` (unknown fields of built-ins).
    pub field_validation: crate::pruning::FieldValidation,
}

impl WriteOptions {
    /// Reads `fieldManager`, `dryRun` and `force` from a request's query; `options_kind` is
    /// `CreateOptions`, `UpdateOptions` or `PatchOptions` (named in 422 answers).
    pub fn parse(
        query: &[(String, String)],
        user_agent: &str,
        status: bool,
        options_kind: &str,
    ) -> ApiResult<WriteOptions> {
        let param = |key: &str| {
            query
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        let dry: Vec<&str> = query
            .iter()
            .filter(|(k, v)| k == "dryRun" && !v.is_empty())
            .map(|(_, v)| v.as_str())
            .collect();
        let dry_run = check_dry_run(&dry, options_kind)?;
        let field_validation = crate::pruning::FieldValidation::parse(query, options_kind)?;
        let force = match param("force") {
            None => None,
            Some("true" | "1" | "t" | "T" | "TRUE" | "True") => Some(true),
            Some("false" | "0" | "f" | "F" | "FALSE" | "False") => Some(false),
            Some(other) => {
                return Err(errors::bad_request(format!(
                    "invalid value for force: {other:?}"
                )));
            }
        };
        let field_manager = param("fieldManager").filter(|m| !m.is_empty());
        Ok(WriteOptions {
            writer: Writer::from_request(field_manager, user_agent, status),
            dry_run,
            force,
            field_manager_given: field_manager.is_some(),
            field_validation,
        })
    }
}

/// Validates `dryRun` values (only `All`): whether the request is a dry run, or 422
/// `<options_kind>.meta.k8s.io "" is invalid: dryRun: Unsupported value: ["x"]: ...` as
/// kube-apiserver answers.
pub fn check_dry_run(values: &[&str], options_kind: &str) -> ApiResult<bool> {
    if values.iter().all(|v| *v == "All") {
        return Ok(!values.is_empty());
    }
    let quoted: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
    Err(errors::invalid(
        "meta.k8s.io",
        options_kind,
        "",
        &[FieldError {
            reason: "FieldValueNotSupported",
            field: "dryRun".into(),
            detail: format!(
                "Unsupported value: [{}]: supported values: \"All\"",
                quoted.join(" ")
            ),
        }],
    ))
}

/// How a write is carried out beyond its content.
#[derive(Debug, Clone, Copy, Default)]
pub struct Write<'a> {
    /// Record an `Update` of this writer in managedFields (`None`: the new object's
    /// managedFields are already right, or the write is the server's own).
    pub record: Option<&'a Writer>,
    /// Compute, check and answer, but do not store.
    pub dry_run: bool,
}

/// Reads the current object, computes its new version with `mutate`, and writes it.
/// Without a resourceVersion in the new object, conflicts are retried with a fresh read.
pub fn guaranteed_update(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    part: Part,
    mutate: impl FnMut(&Map<String, Value>) -> ApiResult<Map<String, Value>>,
) -> ApiResult<Updated> {
    guaranteed_update_as(state, info, namespace, name, part, Write::default(), mutate)
}

/// [`guaranteed_update`] with managedFields recorded for a writer, or as a dry run.
pub fn guaranteed_update_as(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    part: Part,
    write: Write<'_>,
    mut mutate: impl FnMut(&Map<String, Value>) -> ApiResult<Map<String, Value>>,
) -> ApiResult<Updated> {
    let ks = info.keyspace();
    let key = object_key(namespace, name);
    for _ in 0..64 {
        let Some(current) = state.store.get(&ks, &key) else {
            return Err(errors::not_found(&info.group, &info.plural, name));
        };
        let Value::Object(old) = current.to_value() else {
            return Err(errors::internal("stored object is not a JSON object"));
        };
        let mut new = mutate(&old)?;
        let precondition = verbs::parse_rv(meta_str(&new, "resourceVersion"))?;
        if let Some(rv) = precondition {
            if rv != current.rv() {
                return Err(errors::conflict_modified(&info.group, &info.plural, name));
            }
        }
        prepare_for_update(info, &old, &mut new, part, namespace, name)?;
        if let Some(writer) = write.record {
            managed_fields::record_update(info, Some(&old), &mut new, writer);
        }
        if write.dry_run {
            meta_mut(&mut new).insert("resourceVersion".into(), json!(current.rv().to_string()));
            return Ok(Updated {
                object: StoredObject::from_value(
                    &Value::Object(new),
                    current.rv(),
                    &info.selectable_fields,
                ),
                removed: false,
            });
        }
        if deletes_during_update(info, &current, &new) {
            // Store.Update's delete-during-update: the stored object is deleted as it is, so
            // watchers see one DELETED event still listing the finalizer just removed; the
            // answer is the object as written, at the deleted version.
            meta_mut(&mut new).insert("resourceVersion".into(), json!(current.rv().to_string()));
            match state
                .store
                .delete(&ks, &key, Some(current.rv()), &info.selectable_fields)
            {
                Ok(_) => {
                    crd::after_write(state, info);
                    state.gc_kick.notify_one();
                    let object = StoredObject::from_value(
                        &Value::Object(new),
                        current.rv(),
                        &info.selectable_fields,
                    );
                    return Ok(Updated {
                        object,
                        removed: true,
                    });
                }
                Err(StoreError::Conflict { .. }) if precondition.is_none() => continue,
                Err(e) => return Err(verbs::store_error(info, name, e)),
            }
        }
        match state.store.update(
            &ks,
            Value::Object(new),
            current.rv(),
            &info.selectable_fields,
        ) {
            Ok(object) => {
                crd::after_write(state, info);
                return Ok(Updated {
                    object,
                    removed: false,
                });
            }
            Err(StoreError::Conflict { .. }) if precondition.is_none() => continue,
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

/// kube-apiserver's `ShouldDeleteDuringUpdate`: a write that leaves no finalizer on an object
/// being deleted with no grace period left deletes it (namespaces excepted: the namespace
/// controller removes them once empty).
fn deletes_during_update(
    info: &ResourceInfo,
    current: &StoredObject,
    new: &Map<String, Value>,
) -> bool {
    let meta = new.get("metadata");
    let finalizers_left = meta
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty());
    let is_namespace = info.group.is_empty() && info.plural == "namespaces";
    current.is_deleting() && !finalizers_left && !is_namespace && current.grace_period_over()
}

/// Replaces the object with `body` (a `PUT`), recording nothing in managedFields.
pub fn update(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    part: Part,
    body: Map<String, Value>,
) -> ApiResult<Updated> {
    update_as(state, info, namespace, name, part, Write::default(), body)
}

/// Replaces the object with `body` (a `PUT`) as `write` says.
pub fn update_as(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    part: Part,
    write: Write<'_>,
    body: Map<String, Value>,
) -> ApiResult<Updated> {
    let body_name = body
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    if body_name != name {
        return Err(errors::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    guaranteed_update_as(state, info, namespace, name, part, write, |_| {
        Ok(body.clone())
    })
}

fn finalizer_set(obj: &Map<String, Value>) -> Vec<String> {
    obj.get("metadata")
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Applies the update rules to `new`, given the stored `old`.
pub fn prepare_for_update(
    info: &ResourceInfo,
    old: &Map<String, Value>,
    new: &mut Map<String, Value>,
    part: Part,
    namespace: &str,
    name: &str,
) -> ApiResult<()> {
    check_type_and_meta(info, new)?;
    if part == Part::Internal {
        return Ok(());
    }
    let new_ns = meta_str(new, "namespace");
    if info.namespaced && !new_ns.is_empty() && new_ns != namespace {
        return Err(errors::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    if meta_str(new, "name") != name {
        return Err(errors::bad_request(format!(
            "the name of the object ({}) does not match the name on the URL ({name})",
            meta_str(new, "name")
        )));
    }
    let new_uid = meta_str(new, "uid");
    let old_uid = meta_str(old, "uid");
    if !new_uid.is_empty() && new_uid != old_uid {
        return Err(errors::conflict(
            &info.group,
            &info.plural,
            name,
            // etcd3's GuaranteedUpdate wraps the precondition's error in a StorageError.
            &format!(
                "StorageError: invalid object, Code: 4, Key: {}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {new_uid}, UID in object meta: {old_uid}",
                info.etcd_key(namespace, name)
            ),
        ));
    }
    if part == Part::Status {
        // A status write changes status only: spec and metadata stay as stored (an apply's
        // managedFields, already computed, are kept).
        let status = new.remove("status");
        let rv = meta_str(new, "resourceVersion").to_owned();
        let managed = meta_mut(new).remove("managedFields");
        *new = old.clone();
        match status {
            Some(s) => new.insert("status".into(), s),
            None => new.remove("status"),
        };
        meta_mut(new).insert("resourceVersion".into(), Value::String(rv));
        if let Some(m) = managed {
            meta_mut(new).insert("managedFields".into(), m);
        }
        return crate::schema::validate_status(info, new);
    }
    if info.status_subresource {
        match old.get("status") {
            Some(s) => new.insert("status".into(), s.clone()),
            None => new.remove("status"),
        };
    }
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let deleting = old_meta
        .get("deletionTimestamp")
        .is_some_and(|v| !v.is_null());
    if deleting {
        let before = finalizer_set(old);
        // Go's `sets.List`: sorted, each once.
        let added: std::collections::BTreeSet<String> = finalizer_set(new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            let list: Vec<String> = added.iter().map(|f| format!("\"{f}\"")).collect();
            let error = FieldError::forbidden(
                "metadata.finalizers",
                &format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    list.join(", ")
                ),
            );
            // kube-apiserver 1.36.2 checks the finalizers twice (ValidateObjectMetaUpdate and
            // the generic update strategy) and lists both causes; its message says it once.
            return Err(errors::invalid(
                &info.group,
                &info.kind,
                name,
                &[error.clone(), error],
            ));
        }
    }
    let meta = meta_mut(new);
    for field in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "namespace",
    ] {
        match old_meta.get(field) {
            Some(v) => meta.insert(field.into(), v.clone()),
            None => meta.remove(field),
        };
    }
    meta.remove("selfLink");
    let old_generation = old_meta
        .get("generation")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if info.tracks_generation {
        let changed = verbs::spec_view(old, info.status_subresource)
            != verbs::spec_view(new, info.status_subresource);
        let generation = if changed {
            old_generation + 1
        } else {
            old_generation.max(1)
        };
        meta_mut(new).insert("generation".into(), json!(generation));
    } else {
        meta_mut(new).remove("generation");
    }
    crate::crd::validate(info, new)
}
