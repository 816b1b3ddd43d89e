//! Custom resource schemas: each served version's `openAPIV3Schema` prunes, defaults and
//! validates the custom resources written to it.
//!
//! Mirrors what apiextensions-apiserver's custom resource handler does with a structural
//! schema: the request body is pruned of fields the schema does not specify and defaulted
//! when it is decoded ([`on_decode`], [`structural`]), and the object about to be stored is
//! validated against the schema ([`fn@validate`], [`mod@validate`]): a violation is a 422
//! `Invalid` naming the kind as `<Kind>.<group>`, with one cause per field and
//! kube-apiserver's messages. See the submodules for what is not covered.

pub mod structural;
pub mod validate;

use serde_json::{Map, Value};

use crate::errors::{self, ApiResult};
use crate::resources::ResourceInfo;

/// Prunes and defaults a decoded custom resource by its schema (nothing for built-ins or
/// versions without a schema).
pub fn on_decode(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    let Some(schema) = info.schema.as_deref() else {
        return;
    };
    let mut value = Value::Object(std::mem::take(obj));
    structural::prune(schema, &mut value, true);
    structural::default(schema, &mut value);
    structural::whole_numbers(&mut value);
    if let Value::Object(pruned) = value {
        *obj = pruned;
    }
}

/// Validates the status written through a custom resource's `/status` subresource against
/// the schema's `status`: causes name `status.<field>`, their messages the field below
/// `status`, as kube-apiserver's status validator words them.
pub fn validate_status(info: &ResourceInfo, obj: &Map<String, Value>) -> ApiResult<()> {
    let (Some(schema), Some(status)) = (info.schema.as_deref(), obj.get("status")) else {
        return Ok(());
    };
    let Some(status_schema) = schema.get("properties").and_then(|p| p.get("status")) else {
        return Ok(());
    };
    let mut causes = Vec::new();
    validate::validate(status_schema, status, "", &mut causes);
    if causes.is_empty() {
        return Ok(());
    }
    for cause in &mut causes {
        cause.field = if cause.field.is_empty() {
            "status".to_owned()
        } else {
            format!("status.{}", cause.field)
        };
    }
    let name = crate::validation::meta_str(obj, "name");
    Err(errors::invalid(&info.group, &info.kind, name, &causes))
}

/// Validates a custom resource about to be stored against its schema: 422 `Invalid` with
/// one cause per violation.
pub fn validate(info: &ResourceInfo, obj: &Map<String, Value>) -> ApiResult<()> {
    let Some(schema) = info.schema.as_deref() else {
        return Ok(());
    };
    let mut causes = Vec::new();
    let value = Value::Object(obj.clone());
    validate::validate(schema, &value, "", &mut causes);
    if causes.is_empty() {
        return Ok(());
    }
    validate::rules_not_checked(schema, &mut causes);
    let name = crate::validation::meta_str(obj, "name");
    Err(errors::invalid(&info.group, &info.kind, name, &causes))
}
