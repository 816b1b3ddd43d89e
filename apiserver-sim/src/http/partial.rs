//! `PartialObjectMetadata` output (`Accept: application/json;as=PartialObjectMetadata;
//! g=meta.k8s.io;v=v1`, and `as=PartialObjectMetadataList` for lists), as client-go's metadata
//! client and garbage collector ask.
//!
//! Mirrors `asPartialObjectMetadata` and `asPartialObjectMetadataList` of kube-apiserver's
//! `endpoints/handlers/response.go`: an object becomes `{"kind":"PartialObjectMetadata",
//! "apiVersion":"meta.k8s.io/<v>","metadata":{...}}` with its whole metadata and nothing else;
//! a list becomes a `PartialObjectMetadataList` of those, with the list's resourceVersion,
//! continue token and remaining item count. Asking for a list kind on a single object, or for
//! a single-object kind on a list, is 406 `NotAcceptable` with the real messages and the Go
//! type they name (a custom resource asked as a list: 500 `content is not a list`). A watch
//! asking for `PartialObjectMetadataList` is answered 200 and ends at its first event, where
//! kube-apiserver 1.36.2 fails to convert it and closes the stream (observed on 1.36.2).

use clientgo_apimachinery::{Status, StatusReason};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use crate::errors::ApiError;
use crate::resources::ResourceInfo;

/// An object's `metadata`, the rest of it skipped unread.
#[derive(Deserialize)]
struct Metadata {
    #[serde(default)]
    metadata: Option<Value>,
}

/// The partial object carrying `metadata`.
pub fn reduce(metadata: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": metadata,
    })
}

fn metadata_of(object: &[u8]) -> Value {
    serde_json::from_slice::<Metadata>(object)
        .ok()
        .and_then(|m| m.metadata)
        .unwrap_or_else(|| Value::Object(Map::new()))
}

/// The partial object of a stored object's JSON.
pub fn object(object: &[u8], version: &str) -> Vec<u8> {
    serde_json::to_vec(&reduce(&metadata_of(object), version)).unwrap_or_default()
}

/// A `PartialObjectMetadataList` of `items` (stored objects' JSON) with list metadata `meta`.
pub fn list<'a>(items: impl Iterator<Item = &'a [u8]>, meta: &Value, version: &str) -> Vec<u8> {
    let items: Vec<Value> = items
        .map(|item| reduce(&metadata_of(item), version))
        .collect();
    let list = json!({
        "kind": "PartialObjectMetadataList",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": meta,
        "items": items,
    });
    serde_json::to_vec(&list).unwrap_or_default()
}

/// The Go type kube-apiserver 1.36.2 names in its 406s: the internal type of the served kind
/// (`*core.ConfigMap`, `*apps.DeploymentList`; events.k8s.io Events are `core.Event`s).
fn go_type(info: &ResourceInfo, list: bool) -> String {
    let package = match info.group.as_str() {
        "" | "events.k8s.io" => "core",
        group => group.split('.').next().unwrap_or(group),
    };
    let suffix = if list { "List" } else { "" };
    format!("*{package}.{}{suffix}", info.kind)
}

/// `PartialObjectMetadataList` asked of a single object: 406 naming its type; for a custom
/// resource (unstructured) 500 `content is not a list`, as kube-apiserver 1.36.2 answers.
pub fn not_a_list(info: &ResourceInfo) -> ApiError {
    if !info.strategic_merge {
        return crate::errors::unclassified("content is not a list");
    }
    Status::failure(
        406,
        StatusReason::NotAcceptable,
        format!(
            "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
            go_type(info, false)
        ),
    )
    .into()
}

/// 406 for `PartialObjectMetadata` asked of a list, naming the list's Go type.
pub fn is_a_list(info: &ResourceInfo) -> ApiError {
    let type_ = if info.strategic_merge {
        go_type(info, true)
    } else {
        "*unstructured.UnstructuredList".to_owned()
    };
    Status::failure(
        406,
        StatusReason::NotAcceptable,
        format!(
            "you requested PartialObjectMetadata, but the requested object is a list ({type_})"
        ),
    )
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_keep_only_their_metadata() {
        let stored = br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s","namespace":"ns","labels":{"a":"b"},"resourceVersion":"4"},"data":{"password":"c2VjcmV0"},"type":"Opaque"}"#;
        let partial: Value = serde_json::from_slice(&object(stored, "v1")).unwrap();
        assert_eq!(
            partial,
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": {"name": "s", "namespace": "ns", "labels": {"a": "b"}, "resourceVersion": "4"}})
        );
        let partial: Value = serde_json::from_slice(&object(b"not json", "v1beta1")).unwrap();
        assert_eq!(partial["apiVersion"], "meta.k8s.io/v1beta1");
        assert_eq!(partial["metadata"], json!({}));
    }

    #[test]
    fn lists_keep_their_list_metadata() {
        let a: &[u8] = br#"{"metadata":{"name":"a"},"data":{"k":"v"}}"#;
        let b: &[u8] = br#"{"metadata":{"name":"b"},"spec":{}}"#;
        let meta = json!({"resourceVersion": "9", "continue": "t", "remainingItemCount": 1});
        let reduced: Value =
            serde_json::from_slice(&list([a, b].into_iter(), &meta, "v1")).unwrap();
        assert_eq!(reduced["kind"], "PartialObjectMetadataList");
        assert_eq!(reduced["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(reduced["metadata"], meta);
        assert_eq!(reduced["items"][1]["metadata"]["name"], "b");
        assert_eq!(reduced["items"][1]["kind"], "PartialObjectMetadata");
        assert!(reduced["items"][0].get("data").is_none());
        let empty: Value =
            serde_json::from_slice(&list(std::iter::empty(), &json!({}), "v1")).unwrap();
        assert_eq!(empty["items"], json!([]));
    }
}
