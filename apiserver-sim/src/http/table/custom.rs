//! The Table columns and cells of custom resources.
//!
//! Mirrors the apiextensions-apiserver of kube-apiserver 1.36.2
//! (`registry/customresource/tableconvertor`): a `Name` column, then the version's
//! `additionalPrinterColumns` (their `description`, else `Custom resource definition column
//! (in JSONPath format): <jsonPath>`), or `Age` (type `date`) when the version declares
//! none. A cell is the value at the column's JSONPath: for `string` columns printed as
//! kubectl's JSONPath printer prints it (maps and lists as JSON, numbers as Go's `%v`),
//! `integer` and `number` as numbers (a fraction truncated for `integer`), `boolean` as a
//! boolean, `date` as the age of an RFC 3339 time (`<invalid>` if it is none); `null` when
//! the value is missing or of another type. JSONPaths are the simple ones CRDs use
//! (`.a.b`, `.a[0]`, `.a['b.c']`).

use serde_json::{Number, Value, json};

use super::builtin::{column, creation_description, name_description};
use crate::go_strconv::format_float_g;
use crate::resources::ResourceInfo;

/// The version's printer columns (`additionalPrinterColumns`), or the default `Age`.
fn printer_columns(info: &ResourceInfo) -> Vec<Value> {
    let declared = info
        .printer_columns
        .as_deref()
        .and_then(Value::as_array)
        .filter(|c| !c.is_empty());
    match declared {
        Some(columns) => columns.clone(),
        None => vec![json!({"name": "Age", "type": "date",
            "jsonPath": ".metadata.creationTimestamp",
            "description": creation_description()})],
    }
}

pub fn columns(info: &ResourceInfo) -> Vec<Value> {
    let mut out = vec![column("Name", "string", "name", 0, name_description())];
    for c in printer_columns(info) {
        let path = c["jsonPath"].as_str().unwrap_or("");
        let description = match c["description"].as_str() {
            Some(d) if !d.is_empty() => d.to_owned(),
            _ => format!("Custom resource definition column (in JSONPath format): {path}"),
        };
        out.push(column(
            c["name"].as_str().unwrap_or(""),
            c["type"].as_str().unwrap_or(""),
            c["format"].as_str().unwrap_or(""),
            c["priority"].as_i64().unwrap_or(0),
            &description,
        ));
    }
    out
}

enum Segment {
    Field(String),
    Index(usize),
}

/// The segments of a simple JSONPath; `None` for one it cannot follow.
fn parse_path(path: &str) -> Option<Vec<Segment>> {
    let path = path.trim();
    let path = path
        .strip_prefix('{')
        .and_then(|p| p.strip_suffix('}'))
        .unwrap_or(path);
    let mut rest = path.strip_prefix('$').unwrap_or(path);
    let mut out = Vec::new();
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            if end > 0 {
                out.push(Segment::Field(after[..end].to_owned()));
            }
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let end = after.find(']')?;
            let inside = after[..end].trim();
            let quoted = inside
                .strip_prefix('\'')
                .and_then(|s| s.strip_suffix('\''))
                .or_else(|| inside.strip_prefix('"').and_then(|s| s.strip_suffix('"')));
            match quoted {
                Some(key) => out.push(Segment::Field(key.to_owned())),
                None => out.push(Segment::Index(inside.parse().ok()?)),
            }
            rest = &after[end + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

fn find<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut at = obj;
    for segment in parse_path(path)? {
        at = match segment {
            Segment::Field(f) => at.as_object()?.get(&f)?,
            Segment::Index(i) => at.as_array()?.get(i)?,
        };
    }
    Some(at)
}

/// A `string` column's text of `value` (kubectl's JSONPath printer).
fn printed(value: &Value) -> Value {
    match value {
        Value::Null => Value::Null,
        Value::String(s) => Value::from(s.as_str()),
        Value::Bool(b) => Value::from(b.to_string()),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Value::from(i.to_string()),
            None => Value::from(format_float_g(n.as_f64().unwrap_or(0.0))),
        },
        other => Value::from(serde_json::to_string(other).unwrap_or_default()),
    }
}

fn cell(type_: &str, value: &Value) -> Value {
    match (type_, value) {
        ("string", v) => printed(v),
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => Value::from(n.as_f64().unwrap_or(0.0).trunc() as i64),
        },
        // float64 in Go: an integer value is written without a fraction.
        ("number", Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::from(i),
            None => n
                .as_f64()
                .and_then(Number::from_f64)
                .map_or(Value::Null, Value::Number),
        },
        ("boolean", Value::Bool(b)) => Value::from(*b),
        ("date", Value::String(s)) => match clientgo_apimachinery::Time::parse(s) {
            Ok(_) => Value::from(super::age(Some(s))),
            Err(_) => Value::from("<invalid>"),
        },
        _ => Value::Null,
    }
}

pub fn cells(info: &ResourceInfo, obj: &Value) -> Vec<Value> {
    let mut out = vec![Value::from(obj["metadata"]["name"].as_str().unwrap_or(""))];
    for c in printer_columns(info) {
        let type_ = c["type"].as_str().unwrap_or("");
        let value = find(obj, c["jsonPath"].as_str().unwrap_or(""));
        out.push(value.map_or(Value::Null, |v| cell(type_, v)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_and_cells() {
        let obj = json!({"spec": {"size": 3, "tags": ["a", "b"], "x.y": {"z": 1.5}}});
        assert_eq!(find(&obj, ".spec.size"), Some(&json!(3)));
        assert_eq!(find(&obj, ".spec.tags[1]"), Some(&json!("b")));
        assert_eq!(find(&obj, ".spec['x.y'].z"), Some(&json!(1.5)));
        assert_eq!(find(&obj, ".spec.missing"), None);
        assert_eq!(cell("string", &json!(["a", "b"])), json!("[\"a\",\"b\"]"));
        assert_eq!(cell("string", &json!(3)), json!("3"));
        assert_eq!(cell("integer", &json!(2.7)), json!(2));
        assert_eq!(cell("integer", &json!("big")), Value::Null);
        assert_eq!(cell("number", &json!(2)), json!(2));
        assert_eq!(cell("date", &json!("soon")), json!("<invalid>"));
    }
}
