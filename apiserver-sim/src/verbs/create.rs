//! create: `POST` to a collection.
//!
//! Mirrors `Store.Create` + `rest.BeforeCreate`: namespace checks (the object's namespace
//! must match the URL, the namespace must exist and not be terminating, as the
//! NamespaceLifecycle admission plugin enforces), `generateName`, name validation, a set
//! `resourceVersion` refused, server-set `uid`, `creationTimestamp` and `generation`, and
//! per-type create strategies (status reset where status is a subresource, Pod and Namespace
//! initial status), no custom resource created while its CRD is being deleted (403). A
//! create from a request records an `Update` of its manager in
//! `metadata.managedFields` ([`crate::managed_fields`]); `dryRun=All` answers the object as
//! it would be created (uid, creationTimestamp, no resourceVersion) without storing it.
//! Differences: no admission webhooks.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::errors::{self, ApiResult, FieldError};
use crate::managed_fields;
use crate::resources::ResourceInfo;
use crate::state::SimState;
use crate::store::{StoreError, StoredObject, object_key};
use crate::validation::{check_type_and_meta, meta_mut, meta_str, name_errors};
use crate::verbs::update::Write;
use crate::{crd, verbs};

const GENERATE_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

fn random_suffix() -> String {
    let bytes = uuid::Uuid::new_v4().into_bytes();
    bytes[..5]
        .iter()
        .map(|b| GENERATE_ALPHABET[usize::from(*b) % GENERATE_ALPHABET.len()] as char)
        .collect()
}

/// Checks that `namespace` accepts new objects of `info`.
pub fn check_namespace(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
) -> ApiResult<()> {
    match state.namespace_exists(namespace) {
        None => Err(errors::not_found("", "namespaces", namespace)),
        Some(false) => Err(errors::namespace_terminating(
            &info.group,
            &info.plural,
            name,
            namespace,
        )),
        Some(true) => Ok(()),
    }
}

/// Checks that a custom resource's CRD is not being deleted (its `Terminating` condition,
/// set with its deletion mark): while its instances are cleaned up, kube-apiserver 1.36
/// refuses creates with 403 `Forbidden` (older releases answered 405).
fn check_definition(state: &SimState, info: &ResourceInfo, name: &str) -> ApiResult<()> {
    if info.strategic_merge {
        return Ok(());
    }
    let crd = format!("{}.{}", info.plural, info.group);
    // The condition comes with the deletion mark: a CRD not being deleted is not parsed.
    let terminating = state.store.get(crd::CRD_KEYSPACE, &crd).is_some_and(|crd| {
        crd.is_deleting()
            && crd.to_value()["status"]["conditions"]
                .as_array()
                .is_some_and(|c| {
                    c.iter()
                        .any(|c| c["type"] == "Terminating" && c["status"] == "True")
                })
    });
    if terminating {
        return Err(errors::forbidden(
            &info.group,
            &info.plural,
            name,
            "create not allowed while custom resource definition is terminating",
        ));
    }
    Ok(())
}

/// Creates `obj` in `namespace` (`""` for cluster-scoped resources), recording nothing in
/// managedFields (the server's own objects).
pub fn create(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    obj: Map<String, Value>,
) -> ApiResult<Arc<StoredObject>> {
    create_as(state, info, namespace, obj, Write::default())
}

/// Creates `obj` as `write` says: with managedFields recorded for its writer, or as a
/// dry run.
pub fn create_as(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    mut obj: Map<String, Value>,
    write: Write<'_>,
) -> ApiResult<Arc<StoredObject>> {
    check_type_and_meta(info, &mut obj)?;
    let meta = meta_mut(&mut obj);
    if info.namespaced {
        match meta.get("namespace").and_then(Value::as_str) {
            None | Some("") => {
                meta.insert("namespace".into(), Value::String(namespace.to_owned()));
            }
            Some(ns) if ns == namespace => {}
            Some(_) => {
                return Err(errors::bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request",
                ));
            }
        }
    } else {
        meta.remove("namespace");
    }
    let name = meta_str(&obj, "name").to_owned();
    let generate = meta_str(&obj, "generateName").to_owned();
    check_definition(state, info, &name)?;
    if info.namespaced {
        check_namespace(state, info, namespace, &name)?;
    }
    if name.is_empty() && generate.is_empty() {
        return Err(errors::invalid(
            &info.group,
            &info.kind,
            "",
            &[FieldError::required(
                "metadata.name",
                "name or generateName is required",
            )],
        ));
    }
    if !meta_str(&obj, "resourceVersion").is_empty() {
        return Err(errors::unclassified(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    prepare_for_create(info, &mut obj);
    crd::validate(info, &obj)?;
    // generateName collisions are retried with a new suffix, as the real registry does.
    for attempt in 0..8 {
        let candidate = if name.is_empty() {
            format!("{generate}{}", random_suffix())
        } else {
            name.clone()
        };
        let errs = name_errors("metadata.name", &candidate, info.name_is_label);
        if !errs.is_empty() {
            return Err(errors::invalid(&info.group, &info.kind, &candidate, &errs));
        }
        meta_mut(&mut obj).insert("name".into(), Value::String(candidate.clone()));
        crate::defaults::on_create(info, &mut obj);
        if let Some(writer) = write.record {
            managed_fields::record_update(info, None, &mut obj, writer);
        }
        if write.dry_run {
            let key = object_key(meta_str(&obj, "namespace"), &candidate);
            if state.store.get(&info.keyspace(), &key).is_some() {
                if name.is_empty() && attempt < 7 {
                    continue;
                }
                return Err(verbs::store_error(
                    info,
                    &candidate,
                    StoreError::AlreadyExists,
                ));
            }
            meta_mut(&mut obj).remove("resourceVersion");
            return Ok(StoredObject::from_value(
                &Value::Object(obj),
                0,
                &info.selectable_fields,
            ));
        }
        // Only a generated name may be tried again: a named object is moved, not copied.
        let value = if name.is_empty() {
            obj.clone()
        } else {
            std::mem::take(&mut obj)
        };
        match state.store.create(
            &info.keyspace(),
            Value::Object(value),
            &info.selectable_fields,
        ) {
            Ok(stored) => {
                tracing::debug!(resource = %info.plural, key = stored.key(), rv = stored.rv(), "created");
                crd::after_write(state, info);
                return Ok(stored);
            }
            Err(StoreError::AlreadyExists) if name.is_empty() && attempt < 7 => continue,
            Err(e) => return Err(verbs::store_error(info, &candidate, e)),
        }
    }
    Err(errors::internal("could not generate a unique name"))
}

/// Sets the server-owned fields of a new object.
pub fn prepare_for_create(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    let meta = meta_mut(obj);
    meta.insert(
        "uid".into(),
        Value::String(uuid::Uuid::new_v4().to_string()),
    );
    meta.insert("creationTimestamp".into(), verbs::now());
    meta.remove("deletionTimestamp");
    meta.remove("deletionGracePeriodSeconds");
    meta.remove("selfLink");
    if info.tracks_generation {
        meta.insert("generation".into(), json!(1));
    } else {
        meta.remove("generation");
    }
    if info.status_subresource {
        obj.remove("status");
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("", "pods") => {
            obj.insert(
                "status".into(),
                json!({"phase": "Pending", "qosClass": "BestEffort"}),
            );
        }
        ("", "namespaces") => {
            obj.insert("spec".into(), json!({"finalizers": ["kubernetes"]}));
            obj.insert("status".into(), json!({"phase": "Active"}));
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => {
            let status = crate::crd::initial_status(&Value::Object(obj.clone()));
            obj.insert("status".into(), status);
        }
        _ => {}
    }
}
