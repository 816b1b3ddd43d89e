//! Unknown fields of built-in objects: dropped on every write, reported as `fieldValidation`
//! asks.
//!
//! Mirrors kube-apiserver's decoding of a body into a Go struct (`sigs.k8s.io/json`'s
//! strict decoder, `runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation`
//! for patches): a field the type does not declare is dropped, and with `fieldValidation`
//! unset or `Warn` each one is a `Warning: 299 - "unknown field \"spec.x\""` header; with
//! `Strict` the write is refused (400 `BadRequest` for a create or update body, `<Kind> in
//! version "v1" cannot be handled as a <Kind>: strict decoding error: ...`; 422 for a patch,
//! see `patch`); `Ignore` drops them silently; another value → 422 `<Verb>Options`. A
//! JSON body's unknown and duplicate fields are reported in the order they come in the
//! body (a duplicate's last value wins, as in Go); a YAML body's and a patched object's in
//! the order of their keys, as Go's maps marshal. The fields of each type come from
//! `fields.json`, generated from kube-apiserver 1.36.2's OpenAPI v3 documents by
//! `scripts/builtin_fields.py`.

mod ordered;

use std::collections::HashMap;
use std::sync::OnceLock;

use serde_json::{Map, Value};

use crate::errors::{self, ApiResult, FieldError};
use crate::resources::ResourceInfo;

/// The fields of every built-in type the sim serves: type → field → shape (`""` scalar or
/// free-form, `T` a struct, `[T` a list of, `{T` a map of).
type Fields = HashMap<String, HashMap<String, String>>;

fn fields() -> &'static Fields {
    static FIELDS: OnceLock<Fields> = OnceLock::new();
    FIELDS.get_or_init(|| {
        serde_json::from_str(include_str!("fields.json")).expect("fields.json is valid")
    })
}

/// The type of a built-in resource's objects, `None` for custom resources.
pub fn root_type(info: &ResourceInfo) -> Option<&'static str> {
    if info.schema.is_some() {
        return None;
    }
    Some(match (info.group.as_str(), info.kind.as_str()) {
        ("", "ConfigMap") => "api.core.v1.ConfigMap",
        ("", "Secret") => "api.core.v1.Secret",
        ("", "Pod") => "api.core.v1.Pod",
        ("", "Namespace") => "api.core.v1.Namespace",
        ("", "Event") => "api.core.v1.Event",
        ("apps", "Deployment") => "api.apps.v1.Deployment",
        ("apps", "ReplicaSet") => "api.apps.v1.ReplicaSet",
        ("coordination.k8s.io", "Lease") => "api.coordination.v1.Lease",
        ("events.k8s.io", "Event") => "api.events.v1.Event",
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            "apiextensions.v1.CustomResourceDefinition"
        }
        _ => return None,
    })
}

/// What `fieldValidation` asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldValidation {
    /// Dropped silently.
    Ignore,
    /// Dropped, each with a `Warning` (the default).
    Warn,
    /// The write is refused.
    Strict,
}

impl FieldValidation {
    /// The request's `fieldValidation` (unset or empty: `Warn`), or 422
    /// `<options_kind>.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: ...`.
    pub fn parse(query: &[(String, String)], options_kind: &str) -> ApiResult<FieldValidation> {
        let value = query
            .iter()
            .find(|(k, _)| k == "fieldValidation")
            .map_or("", |(_, v)| v.as_str());
        match value {
            "" | "Warn" => Ok(FieldValidation::Warn),
            "Ignore" => Ok(FieldValidation::Ignore),
            "Strict" => Ok(FieldValidation::Strict),
            other => Err(errors::invalid(
                "meta.k8s.io",
                options_kind,
                "",
                &[FieldError {
                    reason: "FieldValueNotSupported",
                    field: "fieldValidation".into(),
                    detail: format!(
                        "Unsupported value: {}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\"",
                        crate::go_strconv::go_quote(other)
                    ),
                }],
            )),
        }
    }
}

/// The shape of `field` of type `ty`, `None` when the type does not declare it.
fn field_shape(ty: &str, field: &str) -> Option<&'static str> {
    fields().get(ty)?.get(field).map(String::as_str)
}

fn child_path(path: &str, field: &str) -> String {
    if path.is_empty() {
        field.to_owned()
    } else {
        format!("{path}.{field}")
    }
}

/// Drops from `value` (of shape `shape`) the fields its types do not declare, appending
/// `unknown field "<path>"` for each, in key order.
fn prune_shape(shape: &str, value: &mut Value, path: &str, out: &mut Vec<String>) {
    if shape.is_empty() {
        return;
    }
    if let Some(item) = shape.strip_prefix('[') {
        if let Value::Array(items) = value {
            for (i, v) in items.iter_mut().enumerate() {
                prune_shape(item, v, &format!("{path}[{i}]"), out);
            }
        }
        return;
    }
    if let Some(item) = shape.strip_prefix('{') {
        if let Value::Object(map) = value {
            for (k, v) in map.iter_mut() {
                // Go decodes a `null` value of a `map[string]string` as "".
                if item.is_empty() && v.is_null() {
                    *v = Value::from("");
                }
                prune_shape(item, v, &child_path(path, k), out);
            }
        }
        return;
    }
    if let Value::Object(map) = value {
        prune_struct(shape, map, path, out);
    }
}

fn prune_struct(ty: &str, map: &mut Map<String, Value>, path: &str, out: &mut Vec<String>) {
    let mut unknown = Vec::new();
    for (k, v) in map.iter_mut() {
        let child = child_path(path, k);
        match field_shape(ty, k) {
            Some(shape) => prune_shape(shape, v, &child, out),
            None => {
                out.push(format!(
                    "unknown field {}",
                    crate::go_strconv::go_quote(&child)
                ));
                unknown.push(k.clone());
            }
        }
    }
    for k in unknown {
        map.remove(&k);
    }
}

/// The unknown fields of a custom resource (`unknown field "<path>"`), its schema's and its
/// metadata's (dropped here; the schema's are pruned when it is decoded), sorted by path as
/// apiextensions-apiserver sorts them. Empty for built-ins and versions without a schema.
pub fn custom_problems(info: &ResourceInfo, object: &mut Map<String, Value>) -> Vec<String> {
    let Some(schema) = info.schema.as_deref() else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    crate::schema::structural::unknown_paths(
        schema,
        &Value::Object(object.clone()),
        true,
        "",
        &mut paths,
    );
    if let Some(Value::Object(meta)) = object.get_mut("metadata") {
        let mut dropped = Vec::new();
        prune_struct(OBJECT_META, meta, "metadata", &mut dropped);
        let unknown = |p: &String| Some(p.strip_prefix("unknown field ")?.to_owned());
        paths.extend(
            dropped
                .iter()
                .filter_map(unknown)
                .map(|q| serde_json::from_str::<String>(&q).unwrap_or(q)),
        );
    }
    paths.sort();
    paths
        .iter()
        .map(|p| format!("unknown field {}", crate::go_strconv::go_quote(p)))
        .collect()
}

const OBJECT_META: &str = "apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// Drops the unknown fields of a built-in object of type `ty`; returns them (`unknown field
/// "<path>"`) in key order.
pub fn prune(ty: &str, object: &mut Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    prune_struct(ty, object, "", &mut out);
    out
}

/// The unknown and duplicate fields of a JSON body of type `ty`, in the body's order (`None`
/// when it does not parse: the caller has answered its error already).
pub fn body_problems(ty: &str, body: &[u8]) -> Option<Vec<String>> {
    let tree: ordered::Node = serde_json::from_slice(body).ok()?;
    let mut out = Vec::new();
    ordered::walk(&tree, ty, "", &mut out);
    Some(out)
}

/// 400 for a create or update body with unknown fields under `Strict`.
pub fn strict_body_error(info: &ResourceInfo, problems: &[String]) -> errors::ApiError {
    let kind = &info.kind;
    errors::bad_request(format!(
        "{kind} in version {:?} cannot be handled as a {kind}: strict decoding error: {}",
        info.version,
        problems.join(", ")
    ))
}

/// A `Warning` header's value for `text`, as kube-apiserver writes it.
pub fn warning_header(text: &str) -> String {
    format!("299 - {}", crate::go_strconv::go_quote(text))
}

/// The unknown fields of an applied configuration of type `ty`, as structured-merge-diff
/// names them (`.spec.containers[name="c"].foo`), in key order.
fn smd_unknown(
    shape: &str,
    value: &Value,
    path: &str,
    parents: &mut Vec<String>,
    out: &mut Vec<String>,
) {
    use crate::managed_fields::schema::{Shape, field_shape as list_shape};
    if shape.is_empty() {
        return;
    }
    if let Some(item) = shape.strip_prefix('[') {
        let Value::Array(items) = value else { return };
        let field = parents.last().cloned().unwrap_or_default();
        let parent_refs: Vec<&str> = parents[..parents.len().saturating_sub(1)]
            .iter()
            .map(String::as_str)
            .collect();
        let keys = match list_shape(true, &parent_refs, &field) {
            Shape::Keyed(keys) => Some(keys),
            _ => None,
        };
        for (i, v) in items.iter().enumerate() {
            let element = match (keys, v) {
                (Some(keys), Value::Object(m)) => {
                    let parts: Vec<String> = keys
                        .iter()
                        .filter_map(|(k, default)| {
                            let value = m.get(*k).cloned().or(default.map(Value::from))?;
                            Some(format!("{k}={value}"))
                        })
                        .collect();
                    format!("[{}]", parts.join(","))
                }
                _ => format!("[{i}]"),
            };
            smd_unknown(item, v, &format!("{path}{element}"), parents, out);
        }
        return;
    }
    let Value::Object(map) = value else { return };
    for (k, v) in map {
        let child = format!("{path}.{k}");
        let field = match shape.strip_prefix('{') {
            Some(item) => Some(item),
            None => field_shape(shape, k),
        };
        match field {
            None => out.push(format!("{child}: field not declared in schema")),
            Some(field) => {
                parents.push(k.clone());
                smd_unknown(field, v, &child, parents, out);
                parents.pop();
            }
        }
    }
}

/// The 500 kube-apiserver answers to an apply whose configuration has fields its type does
/// not declare, whatever `fieldValidation` says: `failed to create typed patch object
/// (<ns>/<name>; <group/version>, Kind=<Kind>): ...` (kube-apiserver 1.36.2 leaves out
/// `metadata`'s now and then; the sim always names them).
pub fn apply_error(info: &ResourceInfo, config: &Map<String, Value>) -> Option<errors::ApiError> {
    let ty = root_type(info)?;
    let mut problems = Vec::new();
    smd_unknown(
        ty,
        &Value::Object(config.clone()),
        "",
        &mut Vec::new(),
        &mut problems,
    );
    if problems.is_empty() {
        return None;
    }
    let text = if problems.len() == 1 {
        problems.remove(0)
    } else {
        format!("errors:\n  {}", problems.join("\n  "))
    };
    let meta = |k: &str| config["metadata"][k].as_str().unwrap_or("").to_owned();
    let group_version = if info.group.is_empty() {
        format!("/{}", info.version)
    } else {
        format!("{}/{}", info.group, info.version)
    };
    Some(errors::unclassified(format!(
        "failed to create typed patch object ({}/{}; {group_version}, Kind={}): {text}",
        meta("namespace"),
        meta("name"),
        info.kind
    )))
}
