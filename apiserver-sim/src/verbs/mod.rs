//! The verbs, independent of HTTP: create, update, patch, delete, get, list, watch.
//!
//! Mirrors kube-apiserver's generic registry (`apiserver/pkg/registry/generic/registry/
//! store.go`) with the per-type strategies folded in as data from
//! [`ResourceInfo`]: system fields on create, status
//! subresource rules, generation tracking, finalizers and graceful deletion, optimistic
//! concurrency with retries when the client gave no resourceVersion. The HTTP handlers and
//! the background controllers (garbage collector, namespace and CRD cleanup) all go through
//! these functions, so every write follows the same rules.

pub mod bookmark;
pub mod continue_token;
pub mod create;
pub mod delete;
pub mod graceful;
pub mod list;
pub mod selector_text;
pub mod update;
pub mod watch;

use clientgo_apimachinery::Time;
use serde_json::{Map, Value};

use crate::errors::{self, ApiError};
use crate::resources::ResourceInfo;
use crate::store::StoreError;

/// Turns a store error on `name` into the API error the real server answers.
pub fn store_error(info: &ResourceInfo, name: &str, e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound => errors::not_found(&info.group, &info.plural, name),
        StoreError::AlreadyExists => errors::already_exists(&info.group, &info.plural, name),
        StoreError::Conflict { .. } => errors::conflict_modified(&info.group, &info.plural, name),
        StoreError::Compacted { .. } => errors::list_too_old(),
        StoreError::TooLarge { current } => errors::too_large_resource_version(0, current),
    }
}

/// The current time as the server writes timestamps.
pub fn now() -> Value {
    Value::String(Time::now().to_rfc3339())
}

/// Everything but `metadata` (and `status` when it is a subresource): what a generation
/// bump compares.
pub fn spec_view(obj: &Map<String, Value>, status_is_subresource: bool) -> Map<String, Value> {
    obj.iter()
        .filter(|(k, _)| {
            k.as_str() != "metadata"
                && !(status_is_subresource && k.as_str() == "status")
                && k.as_str() != "apiVersion"
                && k.as_str() != "kind"
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Parses the resourceVersion of an object sent for an update (`""` is `None`): as
/// kube-apiserver 1.36.2's `APIObjectVersioner.ObjectResourceVersion`, a value
/// `strconv.ParseUint` refuses is a plain Go error, 500 with its message and no reason.
pub fn parse_rv(rv: &str) -> Result<Option<u64>, ApiError> {
    if rv.is_empty() {
        return Ok(None);
    }
    crate::go_strconv::parse_uint(rv)
        .map(Some)
        .map_err(errors::unclassified)
}
