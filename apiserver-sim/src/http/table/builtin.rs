//! The Table columns and cells of built-in types.
//!
//! Mirrors kube-apiserver 1.36.2's printers (`pkg/printers/internalversion/printers.go`:
//! `printConfigMap`, `printSecret`, `printPod`, `printNamespace`, `printDeployment`,
//! `printReplicaSet`, `printLease`) and, for the types without one here (CRDs, Events),
//! the generic registry's default convertor (`registry/rest/table.go`: `Name`, `Created At`).
//! The column definitions (`columns.json`) are those kube-apiserver 1.36.2 answers, word for
//! word. Pod rows of a `Succeeded` or `Failed` Pod carry the `Completed` condition.

use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use super::age;

/// The column definitions of each printed kind, as kube-apiserver 1.36.2 answers them:
/// `[name, type, format, priority, description]`.
const COLUMNS: &str = include_str!("columns.json");
/// The kind whose columns are the default convertor's.
const DEFAULT: &str = "CustomResourceDefinition";

fn all_columns() -> &'static Map<String, Value> {
    static PARSED: OnceLock<Map<String, Value>> = OnceLock::new();
    PARSED.get_or_init(|| serde_json::from_str(COLUMNS).unwrap_or_default())
}

/// One column definition.
pub fn column(name: &str, type_: &str, format: &str, priority: i64, description: &str) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description,
        "priority": priority})
}

fn printed(kind: &str) -> &str {
    match kind {
        "ConfigMap" | "Secret" | "Pod" | "Namespace" | "Deployment" | "ReplicaSet" | "Lease" => {
            kind
        }
        _ => DEFAULT,
    }
}

/// The column definitions of `kind`'s Tables.
pub fn columns(kind: &str) -> Vec<Value> {
    let rows = all_columns()[printed(kind)].as_array().cloned();
    rows.unwrap_or_default()
        .iter()
        .map(|c| {
            column(
                c[0].as_str().unwrap_or(""),
                c[1].as_str().unwrap_or(""),
                c[2].as_str().unwrap_or(""),
                c[3].as_i64().unwrap_or(0),
                c[4].as_str().unwrap_or(""),
            )
        })
        .collect()
}

/// The description of the `metadata.creationTimestamp` column (`Age`, `Created At`).
pub fn creation_description() -> &'static str {
    all_columns()[DEFAULT][1][4].as_str().unwrap_or("")
}

/// The description of the `Name` column.
pub fn name_description() -> &'static str {
    all_columns()[DEFAULT][0][4].as_str().unwrap_or("")
}

fn len(v: &Value) -> usize {
    v.as_object().map_or(0, Map::len)
}

fn int(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or("")
}

/// `a,b` of the `field` of each item of `items`.
fn joined(items: &Value, field: &str) -> String {
    let items = items.as_array().map(Vec::as_slice).unwrap_or_default();
    let values: Vec<&str> = items.iter().map(|i| text(&i[field])).collect();
    values.join(",")
}

/// `metav1.FormatLabelSelector`: requirements sorted by key, `<none>` when empty.
fn label_selector(selector: &Value) -> String {
    let mut requirements: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector["matchLabels"].as_object() {
        for (k, v) in labels {
            requirements.push((k.clone(), format!("{k}={}", text(v))));
        }
    }
    for e in selector["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let key = text(&e["key"]);
        let mut values: Vec<&str> = e["values"]
            .as_array()
            .map(|vs| vs.iter().map(text).collect())
            .unwrap_or_default();
        values.sort_unstable();
        let requirement = match text(&e["operator"]) {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            "DoesNotExist" => format!("!{key}"),
            _ => return "<error>".to_owned(),
        };
        requirements.push((key.to_owned(), requirement));
    }
    requirements.sort_by(|a, b| a.0.cmp(&b.0));
    let text: Vec<String> = requirements.into_iter().map(|(_, r)| r).collect();
    if text.is_empty() {
        "<none>".to_owned()
    } else {
        text.join(",")
    }
}

/// The cells of `obj`'s row, and the row's conditions (if any).
pub fn cells(kind: &str, obj: &Value) -> (Vec<Value>, Option<Value>) {
    let name = Value::from(text(&obj["metadata"]["name"]));
    let age = || Value::from(age(obj["metadata"]["creationTimestamp"].as_str()));
    let (spec, status) = (&obj["spec"], &obj["status"]);
    let cells = match printed(kind) {
        "ConfigMap" => vec![
            name,
            json!(len(&obj["data"]) + len(&obj["binaryData"])),
            age(),
        ],
        "Secret" => vec![
            name,
            json!(text(&obj["type"])),
            json!(len(&obj["data"])),
            age(),
        ],
        "Namespace" => vec![name, json!(text(&status["phase"])), age()],
        "Lease" => vec![name, json!(text(&spec["holderIdentity"])), age()],
        "Deployment" => {
            let containers = &spec["template"]["spec"]["containers"];
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    int(&status["readyReplicas"]),
                    int(&spec["replicas"])
                )),
                json!(int(&status["updatedReplicas"])),
                json!(int(&status["availableReplicas"])),
                age(),
                json!(joined(containers, "name")),
                json!(joined(containers, "image")),
                json!(label_selector(&spec["selector"])),
            ]
        }
        "ReplicaSet" => {
            let containers = &spec["template"]["spec"]["containers"];
            vec![
                name,
                json!(int(&spec["replicas"])),
                json!(int(&status["replicas"])),
                json!(int(&status["readyReplicas"])),
                age(),
                json!(joined(containers, "name")),
                json!(joined(containers, "image")),
                json!(label_selector(&spec["selector"])),
            ]
        }
        "Pod" => return super::pod::cells(obj, name, age()),
        _ => {
            // The default convertor: the creation time in RFC 3339, UTC.
            let created = obj["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or("0001-01-01T00:00:00Z");
            vec![name, json!(created)]
        }
    };
    (cells, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_printed_kind_has_its_columns() {
        for kind in [
            "ConfigMap",
            "Secret",
            "Pod",
            "Namespace",
            "Deployment",
            "ReplicaSet",
            "Lease",
            "Event",
        ] {
            let columns = columns(kind);
            assert!(columns.len() >= 2, "{kind}");
            assert_eq!(columns[0]["name"], "Name", "{kind}");
        }
        assert_eq!(columns("Event")[1]["name"], "Created At");
    }

    #[test]
    fn label_selectors_as_go_formats_them() {
        let selector = json!({"matchLabels": {"app": "x"},
            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                {"key": "gone", "operator": "DoesNotExist"}]});
        assert_eq!(label_selector(&selector), "app=x,!gone,tier in (a,b)");
        assert_eq!(label_selector(&Value::Null), "<none>");
    }
}
