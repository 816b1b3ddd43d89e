//! Patches: JSON patch, JSON merge patch, strategic merge patch and server-side apply.
//!
//! Mirrors `apiserver/pkg/endpoints/handlers/patch.go`: the patch type comes from the
//! request's `Content-Type`; strategic merge patch is for built-in types only (415 for
//! custom resources, with the real message listing the accepted types); `force` is for
//! apply only (422 otherwise). Server-side apply (`application/apply-patch+yaml`, a YAML or
//! JSON body) requires `fieldManager` as the real server does, creates the object when
//! missing and otherwise merges the applied configuration, then settles ownership with
//! [`crate::managed_fields::record_apply`] (409 on conflicts unless `force`, fields no
//! longer applied removed). Other patches record an `Update` of their manager. The patched
//! object's unknown fields are dropped as `fieldValidation` asks ([`crate::pruning`]; under
//! `Strict` 422 quoting the patch), and an applied configuration's answer 500 as
//! structured-merge-diff's typed conversion does.
//! Difference: the configuration is merged by strategic merge (built-ins) or JSON merge
//! (custom resources), not structured-merge-diff's merge, so list items keep the order the
//! strategic merge gives them.

pub mod json_patch;
pub mod merge;
pub mod strategic;
mod strategic_list;

use std::sync::Arc;

use serde_json::Value;

use crate::errors::{self, ApiError, ApiResult, FieldError};
use crate::go_text;
use crate::managed_fields;
use crate::pruning;
use crate::resources::ResourceInfo;
use crate::state::SimState;
use crate::store::{StoredObject, object_key};
use crate::validation::{meta_mut, meta_str};
use crate::verbs::create;
use crate::verbs::update::{self, Part, Write, WriteOptions};
pub use json_patch::PatchError;

/// A patch type, from the `Content-Type` header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json`.
    Json,
    /// `application/merge-patch+json`.
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

const JSON: &str = "application/json-patch+json";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const APPLY: &str = "application/apply-patch+yaml";

/// The patch type of a `Content-Type`, or 415 listing the types `info` accepts.
pub fn patch_type(info: &ResourceInfo, content_type: &str) -> ApiResult<PatchType> {
    let media = content_type.split(';').next().unwrap_or("").trim();
    let accepted: &[&str] = if info.strategic_merge {
        &[JSON, MERGE, APPLY, STRATEGIC]
    } else {
        &[JSON, MERGE, APPLY]
    };
    let t = match media {
        JSON => PatchType::Json,
        MERGE => PatchType::Merge,
        STRATEGIC if info.strategic_merge => PatchType::Strategic,
        APPLY => PatchType::Apply,
        _ if info.strategic_merge => return Err(errors::unsupported_patch_type()),
        _ => return Err(errors::unsupported_media_type(accepted)),
    };
    Ok(t)
}

fn to_api(e: PatchError) -> ApiError {
    match e {
        PatchError::Malformed(m) => errors::bad_request(m),
        PatchError::TooLarge(m) => clientgo_apimachinery::Status::failure(
            413,
            clientgo_apimachinery::StatusReason::RequestEntityTooLarge,
            m,
        )
        .into(),
        PatchError::Unclassified(m) => errors::unclassified(m),
        // A JSON patch that cannot be applied: kube-apiserver answers
        // `NewGenericServerResponse(422, ...)`, whose message says nothing of the operation.
        PatchError::Failed(_) => {
            let mut status = clientgo_apimachinery::Status::failure(
                422,
                clientgo_apimachinery::StatusReason::Invalid,
                "the server rejected our request due to an error in our request",
            );
            status.details = Some(clientgo_apimachinery::StatusDetails::default());
            status.into()
        }
    }
}

/// Parses the body of a patch of type `t` (not apply) as kube-apiserver's patch handler
/// does, with its 400 messages: Go's syntax error (`error decoding patch: ` first, but for a
/// strategic merge patch), a JSON patch that is no array of operations or whose `op`,
/// `path` or `from` is no string, a merge or strategic patch that is no object (a `null`
/// merge patch is `Invalid JSON Patch`, a `null` strategic or JSON patch changes nothing).
pub fn parse_body(t: PatchType, body: &[u8]) -> ApiResult<Value> {
    let prefix = if t == PatchType::Strategic {
        ""
    } else {
        "error decoding patch: "
    };
    let fail = |why: String| errors::bad_request(format!("{prefix}{why}"));
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| fail(go_text::json_syntax_error(body).unwrap_or_else(|| e.to_string())))?;
    let cannot = |v: &Value, into: &str| {
        let t = go_text::json_type_name(v).unwrap_or("value");
        fail(format!("json: cannot unmarshal {t} into Go {into}"))
    };
    match (t, &value) {
        (PatchType::Json, Value::Null) => return Ok(Value::Array(Vec::new())),
        (PatchType::Json, Value::Array(ops)) => {
            for op in ops {
                match op {
                    Value::Object(fields) => {
                        for name in ["op", "path", "from"] {
                            if let Some(v) =
                                fields.get(name).filter(|v| !v.is_null() && !v.is_string())
                            {
                                return Err(cannot(
                                    v,
                                    &format!("struct field jsonPatchOp.{name} of type string"),
                                ));
                            }
                        }
                    }
                    Value::Null => {}
                    other => return Err(cannot(other, "value of type handlers.jsonPatchOp")),
                }
            }
        }
        (PatchType::Json, other) => {
            return Err(cannot(other, "value of type []handlers.jsonPatchOp"));
        }
        (PatchType::Merge, Value::Null) => return Err(errors::bad_request("Invalid JSON Patch")),
        (PatchType::Strategic, Value::Null) => return Ok(Value::Object(Default::default())),
        (_, Value::Object(_)) => {}
        (_, other) => return Err(cannot(other, "value of type map[string]interface {}")),
    }
    Ok(value)
}

/// Parses an applied configuration: YAML, of which JSON is a part (400 when it is neither).
pub fn parse_apply_body(body: &[u8]) -> ApiResult<Value> {
    if let Ok(v) = serde_json::from_slice(body) {
        return Ok(v);
    }
    serde_norway::from_slice::<Value>(body)
        .map_err(|e| errors::bad_request(format!("error decoding YAML: {e}")))
}

/// The result of a PATCH.
#[derive(Debug, Clone)]
pub struct Patched {
    /// The object as written (or as it would be, on a dry run).
    pub object: Arc<StoredObject>,
    /// Whether an apply created it (201).
    pub created: bool,
    /// The `Warning`s of the answer (unknown fields dropped).
    pub warnings: Vec<String>,
}

/// Patches (or applies) the object `name` with `body` of `content_type`, as the PATCH
/// handler does: the patch type, `force` only for apply, `fieldManager` required for apply,
/// apply creating a missing object, managedFields recorded, `dryRun`.
#[allow(clippy::too_many_arguments)]
pub fn patch(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    part: Part,
    content_type: &str,
    body: &[u8],
    opts: &WriteOptions,
) -> ApiResult<Patched> {
    let kind = patch_type(info, content_type)?;
    if kind != PatchType::Apply && opts.force.is_some() {
        return Err(errors::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            &[FieldError::forbidden(
                "force",
                "may not be specified for non-apply patch",
            )],
        ));
    }
    let validation = opts.field_validation;
    if kind == PatchType::Apply {
        return apply_patch(state, info, namespace, name, part, body, opts);
    }
    let patch_doc = parse_body(kind, body)?;
    let write = Write {
        record: Some(&opts.writer),
        dry_run: opts.dry_run,
    };
    let mut warnings = Vec::new();
    let updated = update::guaranteed_update_as(state, info, namespace, name, part, write, |old| {
        let mut doc = Value::Object(old.clone());
        apply(info, kind, &mut doc, &patch_doc)?;
        let Value::Object(mut new) = doc else {
            return Err(errors::bad_request(
                "the patched object is not a JSON object",
            ));
        };
        warnings = prune_patched(info, kind, &patch_doc, &mut new, validation)?;
        Ok(unconditional(old, new))
    })?;
    Ok(Patched {
        object: updated.object,
        created: false,
        warnings,
    })
}

/// Drops the unknown fields of a patched built-in object: the warnings to answer, or under
/// `Strict` kube-apiserver's 422 ` "" is invalid: patch: Invalid value: "<patch>": strict
/// decoding error: ...`, which quotes a strategic merge patch as a Go map and the patched
/// object (JSON) of the other types.
fn prune_patched(
    info: &ResourceInfo,
    kind: PatchType,
    patch_doc: &Value,
    new: &mut serde_json::Map<String, Value>,
    validation: pruning::FieldValidation,
) -> ApiResult<Vec<String>> {
    let before = (validation == pruning::FieldValidation::Strict).then(|| new.clone());
    let problems = match pruning::root_type(info) {
        Some(ty) => pruning::prune(ty, new),
        None => pruning::custom_problems(info, new),
    };
    match (validation, before) {
        (_, _) if problems.is_empty() => Ok(Vec::new()),
        (pruning::FieldValidation::Strict, Some(before)) => {
            let quoted = match kind {
                PatchType::Strategic => go_text::go_value(patch_doc),
                _ => Value::Object(before).to_string(),
            };
            let detail = format!(
                "Invalid value: {}: strict decoding error: {}",
                crate::go_strconv::go_quote(&quoted),
                problems.join(", ")
            );
            Err(errors::invalid(
                "",
                "",
                "",
                &[FieldError {
                    reason: "FieldValueInvalid",
                    field: "patch".into(),
                    detail,
                }],
            ))
        }
        (pruning::FieldValidation::Warn, _) => Ok(problems),
        _ => Ok(Vec::new()),
    }
}

/// `new` without the resourceVersion it kept from `old`: an unchanged resourceVersion is no
/// precondition, so conflicts are retried.
fn unconditional(
    old: &serde_json::Map<String, Value>,
    mut new: serde_json::Map<String, Value>,
) -> serde_json::Map<String, Value> {
    let old_rv = old.get("metadata").and_then(|m| m.get("resourceVersion"));
    let meta = meta_mut(&mut new);
    if meta.get("resourceVersion") == old_rv {
        meta.remove("resourceVersion");
    }
    new
}

fn apply_patch(
    state: &SimState,
    info: &ResourceInfo,
    namespace: &str,
    name: &str,
    part: Part,
    body: &[u8],
    opts: &WriteOptions,
) -> ApiResult<Patched> {
    if !opts.field_manager_given {
        return Err(errors::invalid(
            "meta.k8s.io",
            "PatchOptions",
            "",
            &[FieldError::required(
                "fieldManager",
                "is required for apply patch",
            )],
        ));
    }
    let config = parse_apply_body(body)?;
    let Value::Object(config_map) = &config else {
        return Err(errors::bad_request(
            "an applied configuration must be a JSON object",
        ));
    };
    if let Some(e) = pruning::apply_error(info, config_map) {
        return Err(e);
    }
    let mut config = config.clone();
    if let (Some(ty), Value::Object(map)) = (pruning::root_type(info), &mut config) {
        pruning::prune(ty, map);
    }
    let config_map = config.as_object().cloned().unwrap_or_default();
    let config_map = &config_map;
    let warnings = Vec::new();
    let force = opts.force.unwrap_or(false);
    let write = Write {
        record: None,
        dry_run: opts.dry_run,
    };
    let key = object_key(namespace, name);
    if state.store.get(&info.keyspace(), &key).is_none() && part == Part::Main {
        if meta_str(config_map, "name") != name {
            return Err(errors::bad_request(format!(
                "the name of the object ({}) does not match the name on the URL ({name})",
                meta_str(config_map, "name"),
            )));
        }
        let mut obj = config_map.clone();
        managed_fields::record_apply(info, None, &mut obj, &config, &opts.writer, force)?;
        let object = create::create_as(state, info, namespace, obj, write)?;
        return Ok(Patched {
            object,
            created: true,
            warnings,
        });
    }
    let updated = update::guaranteed_update_as(state, info, namespace, name, part, write, |old| {
        let mut doc = Value::Object(old.clone());
        apply(info, PatchType::Apply, &mut doc, &config)?;
        let Value::Object(mut new) = doc else {
            return Err(errors::bad_request(
                "the patched object is not a JSON object",
            ));
        };
        managed_fields::record_apply(info, Some(old), &mut new, &config, &opts.writer, force)?;
        Ok(unconditional(old, new))
    })?;
    Ok(Patched {
        object: updated.object,
        created: false,
        warnings,
    })
}

/// Applies a parsed patch of type `t` to `doc`.
pub fn apply(info: &ResourceInfo, t: PatchType, doc: &mut Value, patch: &Value) -> ApiResult<()> {
    match t {
        PatchType::Json => json_patch::apply(doc, patch).map_err(to_api),
        PatchType::Merge => {
            if !patch.is_object() {
                return Err(errors::bad_request("a merge patch must be a JSON object"));
            }
            merge::apply(doc, patch);
            Ok(())
        }
        PatchType::Strategic => strategic::apply(doc, patch).map_err(to_api),
        PatchType::Apply => {
            if info.strategic_merge {
                strategic::apply(doc, patch).map_err(to_api)
            } else if patch.is_object() {
                merge::apply(doc, patch);
                Ok(())
            } else {
                Err(errors::bad_request(
                    "an applied configuration must be a JSON object",
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategic_merge_is_refused_for_custom_resources() {
        let mut cr = crate::resources::builtins().remove(1);
        assert_eq!(patch_type(&cr, STRATEGIC).unwrap(), PatchType::Strategic);
        cr.strategic_merge = false;
        let e = patch_type(&cr, STRATEGIC).unwrap_err();
        assert_eq!(e.code(), 415);
        assert_eq!(
            e.status.message,
            "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
        );
        assert_eq!(
            patch_type(&cr, "application/merge-patch+json; charset=utf-8").unwrap(),
            PatchType::Merge
        );
        assert_eq!(patch_type(&cr, "text/plain").unwrap_err().code(), 415);
    }

    #[test]
    fn other_types_are_refused_tersely_for_built_ins() {
        // Observed on kube-apiserver 1.36.2: go-restful refuses the content type before
        // the patch handler runs.
        let builtin = crate::resources::builtins().remove(1);
        let e = patch_type(&builtin, "text/plain").unwrap_err();
        assert_eq!(e.code(), 415);
        assert_eq!(e.status.message, "415: Unsupported Media Type");
        assert_eq!(
            serde_json::to_value(&*e.status).unwrap()["details"],
            serde_json::json!({})
        );
    }
}
