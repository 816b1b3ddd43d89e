//! Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`), as kubectl asks;
//! the header is read by [`super::accept`].
//!
//! Mirrors the default table convertor of the generic registry
//! (`registry/rest/table.go`): columns `Name` and `Age` (kubectl's CRD printing adds
//! `Created At`; the sim keeps to the two), rows carrying the object as
//! `PartialObjectMetadata` by default or whole with `includeObject=Object`. Age is written
//! as kubectl's `duration.HumanDuration` does (`5s`, `3m`, `2d`). Differences: no
//! per-type columns (a Pod table has no Ready/Status columns).

use std::time::Duration;

use clientgo_apimachinery::Time;
use serde_json::{Value, json};

/// `includeObject`: `None`, `Metadata` (default) or `Object`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// No object in rows.
    None,
    /// `PartialObjectMetadata`.
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

/// kubectl's human-readable duration.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..120 => format!("{s}s"),
        120..600 => {
            let rem = s % 60;
            if rem == 0 {
                format!("{}m", s / 60)
            } else {
                format!("{}m{rem}s", s / 60)
            }
        }
        600..10_800 => format!("{}m", s / 60),
        10_800..28_800 => {
            let m = (s / 60) % 60;
            if m == 0 {
                format!("{}h", s / 3600)
            } else {
                format!("{}h{m}m", s / 3600)
            }
        }
        28_800..172_800 => format!("{}h", s / 3600),
        172_800..691_200 => {
            let h = (s / 3600) % 24;
            if h == 0 {
                format!("{}d", s / 86_400)
            } else {
                format!("{}d{h}h", s / 86_400)
            }
        }
        691_200..63_072_000 => format!("{}d", s / 86_400),
        _ => format!("{}y", s / 31_536_000),
    }
}

fn row(obj: &Value, include: IncludeObject, version: &str) -> Value {
    let name = obj["metadata"]["name"].as_str().unwrap_or("");
    let age = obj["metadata"]["creationTimestamp"]
        .as_str()
        .and_then(|t| Time::parse(t).ok())
        .and_then(|t| Time::now().duration_since(t))
        .map_or_else(|| "<unknown>".to_owned(), human_duration);
    let object = match include {
        IncludeObject::None => Value::Null,
        IncludeObject::Metadata => super::partial::reduce(&obj["metadata"], version),
        IncludeObject::Object => obj.clone(),
    };
    let mut r = json!({"cells": [name, age]});
    if !object.is_null() {
        r["object"] = object;
    }
    r
}

/// A Table of `objects` (each an object's JSON).
pub fn table(
    objects: &[&[u8]],
    resource_version: &str,
    include: IncludeObject,
    version: &str,
    columns: bool,
) -> Vec<u8> {
    let rows: Vec<Value> = objects
        .iter()
        .map(|b| {
            row(
                &serde_json::from_slice(b).unwrap_or(Value::Null),
                include,
                version,
            )
        })
        .collect();
    let mut t = json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": {"resourceVersion": resource_version},
        "rows": rows,
    });
    if columns {
        t["columnDefinitions"] = json!([
            {"name": "Name", "type": "string", "format": "name", "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "description": "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata", "priority": 0}
        ]);
    }
    serde_json::to_vec(&t).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables() {
        assert_eq!(human_duration(Duration::from_secs(5)), "5s");
        assert_eq!(human_duration(Duration::from_secs(150)), "2m30s");
        assert_eq!(human_duration(Duration::from_secs(3 * 86_400)), "3d");
        let obj = br#"{"metadata":{"name":"a","creationTimestamp":"2020-01-01T00:00:00Z"}}"#;
        let t: Value =
            serde_json::from_slice(&table(&[obj], "7", IncludeObject::Metadata, "v1", true))
                .unwrap();
        assert_eq!(t["rows"][0]["cells"][0], "a");
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["columnDefinitions"][1]["name"], "Age");
        assert_eq!(t["metadata"]["resourceVersion"], "7");
    }
}
