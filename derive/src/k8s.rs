//! [`CrdSchema`] for the k8s-openapi types a custom resource commonly embeds (the
//! `k8s-openapi` feature): `IntOrString`, `Quantity`, `Time`, `MicroTime`, `Condition`,
//! `LabelSelector`, `ObjectMeta`.
//!
//! Mirrors controller-tools' `known_types.go` and the schemas it writes for
//! `metav1.Condition` and `metav1.LabelSelector` (their `+kubebuilder` markers). Other
//! k8s-openapi types (a `PodSpec`, say) have no impl: their schemas are the API server's
//! OpenAPI documents, not something to restate here; embed them as a `serde_json::Value`
//! field with `#[schema(preserve_unknown_fields)]` (what controller-tools users often do
//! with `+kubebuilder:pruning:PreserveUnknownFields` too).

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    Condition, LabelSelector, MicroTime, ObjectMeta, Time,
};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{Value, json};

use crate::schema::{CrdSchema, object_meta};

/// The pattern controller-tools puts on `resource.Quantity`.
pub const QUANTITY_PATTERN: &str = r"^(\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\+|-)?(([0-9]+(\.[0-9]*)?)|(\.[0-9]+))))?$";

impl CrdSchema for IntOrString {
    fn crd_schema() -> Value {
        json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true,
        })
    }
}

impl CrdSchema for Quantity {
    fn crd_schema() -> Value {
        json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "pattern": QUANTITY_PATTERN,
            "x-kubernetes-int-or-string": true,
        })
    }
}

impl CrdSchema for Time {
    fn crd_schema() -> Value {
        json!({"type": "string", "format": "date-time"})
    }
}

impl CrdSchema for MicroTime {
    fn crd_schema() -> Value {
        json!({"type": "string", "format": "date-time"})
    }
}

impl CrdSchema for ObjectMeta {
    fn crd_schema() -> Value {
        object_meta()
    }
}

impl CrdSchema for Condition {
    fn crd_schema() -> Value {
        json!({
            "type": "object",
            "description": "A status condition (metav1.Condition).",
            "properties": {
                "lastTransitionTime": {"type": "string", "format": "date-time"},
                "message": {"type": "string", "maxLength": 32768},
                "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0},
                "reason": {
                    "type": "string", "minLength": 1, "maxLength": 1024,
                    "pattern": "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
                },
                "status": {"type": "string", "enum": ["True", "False", "Unknown"]},
                "type": {
                    "type": "string", "maxLength": 316,
                    "pattern": r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
                },
            },
            "required": ["lastTransitionTime", "message", "reason", "status", "type"],
        })
    }
}

impl CrdSchema for LabelSelector {
    fn crd_schema() -> Value {
        let strings = json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "atomic"});
        json!({
            "type": "object",
            "description": "A label query over a set of resources (metav1.LabelSelector).",
            "properties": {
                "matchExpressions": {
                    "type": "array",
                    "x-kubernetes-list-type": "atomic",
                    "items": {
                        "type": "object",
                        "properties": {
                            "key": {"type": "string"},
                            "operator": {"type": "string"},
                            "values": strings,
                        },
                        "required": ["key", "operator"],
                    },
                },
                "matchLabels": {"type": "object", "additionalProperties": {"type": "string"}},
            },
            "x-kubernetes-map-type": "atomic",
        })
    }
}
