//! The object of a BOOKMARK event, byte for byte as kube-apiserver 1.36 writes it.
//!
//! Mirrors the cacher's bookmark (`storage/cacher`: `newFunc()`, an empty object of the
//! watched type, carrying only the cache's resourceVersion and, on the bookmark that ends the
//! initial events, the annotation `k8s.io/initial-events-end: "true"`), encoded as the
//! served version: `kind`, `apiVersion`, `metadata` with `resourceVersion` (and
//! `annotations`), then the fields Go's encoder writes for a zero value of the type (structs
//! that are never omitted, `null` slices and pointers without `omitempty`, the zeros that
//! the internal-to-v1 conversion makes explicit). `creationTimestamp` is omitted, as
//! kube-apiserver 1.36 omits a zero one. A custom resource's bookmark (unstructured) has
//! nothing after `metadata`.
//!
//! The fields after `metadata` were taken from kube-apiserver 1.36.2's bookmarks of each
//! served built-in type.

use clientgo_apimachinery::INITIAL_EVENTS_END_ANNOTATION;

use crate::resources::ResourceInfo;

/// The zero-value fields kube-apiserver 1.36.2 writes after `metadata` in a bookmark of
/// `info`'s type (JSON members, without the leading comma), `""` for none.
fn zero_fields(info: &ResourceInfo) -> &'static str {
    if !info.strategic_merge {
        return ""; // custom resources: unstructured, nothing but what is set
    }
    match (info.group.as_str(), info.kind.as_str()) {
        ("", "Namespace") => r#""spec":{},"status":{}"#,
        ("", "Pod") => r#""spec":{"containers":null},"status":{}"#,
        ("", "Event") => {
            r#""involvedObject":{},"source":{},"firstTimestamp":null,"lastTimestamp":null,"eventTime":null,"reportingComponent":"","reportingInstance":"""#
        }
        ("apps", "Deployment") => {
            r#""spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}},"strategy":{}},"status":{}"#
        }
        ("apps", "ReplicaSet") => {
            r#""spec":{"replicas":0,"selector":null,"template":{"metadata":{},"spec":{"containers":null}}},"status":{"replicas":0}"#
        }
        ("coordination.k8s.io", "Lease") => r#""spec":{}"#,
        ("events.k8s.io", "Event") => {
            r#""eventTime":null,"regarding":{},"deprecatedSource":{},"deprecatedFirstTimestamp":null,"deprecatedLastTimestamp":null"#
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            r#""spec":{"group":"","names":{"plural":"","kind":""},"scope":"","versions":null},"status":{"conditions":null,"acceptedNames":{"plural":"","kind":""},"storedVersions":null}"#
        }
        _ => "", // ConfigMap, Secret
    }
}

/// A bookmark's object: the watched type's zero value carrying only `rv` and, when
/// `initial_end`, the initial-events-end annotation.
pub fn object(info: &ResourceInfo, rv: u64, initial_end: bool) -> Vec<u8> {
    let quoted = |s: &str| serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_owned());
    let mut out = format!(
        r#"{{"kind":{},"apiVersion":{},"metadata":{{"resourceVersion":"{rv}""#,
        quoted(&info.kind),
        quoted(&info.api_version())
    );
    if initial_end {
        out.push_str(&format!(
            r#","annotations":{{"{INITIAL_EVENTS_END_ANNOTATION}":"true"}}"#
        ));
    }
    out.push('}');
    let fields = zero_fields(info);
    if !fields.is_empty() {
        out.push(',');
        out.push_str(fields);
    }
    out.push('}');
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn builtin(kind: &str) -> ResourceInfo {
        crate::resources::builtins()
            .into_iter()
            .find(|r| r.kind == kind)
            .expect("a built-in")
    }

    #[test]
    fn the_zero_value_of_the_type_without_a_creation_timestamp() {
        let cm = object(&builtin("ConfigMap"), 7, false);
        assert_eq!(
            std::str::from_utf8(&cm).unwrap(),
            r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7"}}"#
        );
        let end: Value = serde_json::from_slice(&object(&builtin("Pod"), 9, true)).unwrap();
        assert_eq!(
            end,
            json!({"kind": "Pod", "apiVersion": "v1",
                "metadata": {"resourceVersion": "9",
                    "annotations": {"k8s.io/initial-events-end": "true"}},
                "spec": {"containers": null}, "status": {}})
        );
        for info in crate::resources::builtins() {
            let v: Value = serde_json::from_slice(&object(&info, 1, true)).unwrap();
            assert_eq!(v["kind"], info.kind.as_str());
            assert!(v["metadata"].get("creationTimestamp").is_none());
        }
        let mut widget = builtin("ConfigMap");
        widget.strategic_merge = false;
        widget.group = "example.com".into();
        widget.kind = "Widget".into();
        let v: Value = serde_json::from_slice(&object(&widget, 3, false)).unwrap();
        assert_eq!(
            v,
            json!({"kind": "Widget", "apiVersion": "example.com/v1",
                "metadata": {"resourceVersion": "3"}})
        );
    }
}
