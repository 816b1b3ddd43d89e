//! Pruning and defaulting of a custom resource by its structural schema.
//!
//! Mirrors `apiextensions-apiserver/pkg/apiserver/schema/pruning` and `.../defaulting`:
//! fields the schema does not specify are dropped, unless the node says
//! `x-kubernetes-preserve-unknown-fields: true` (then they are kept, untouched); `apiVersion`,
//! `kind` and `metadata` are kept at the root and in `x-kubernetes-embedded-resource` nodes.
//! A property that is absent, or `null` without `nullable: true`, gets its `default` (and the
//! defaults inside it); a `null` without a default is dropped unless nullable. Whole numbers
//! written as floats (`2.0`) come back as integers, as Go's encoder writes them.

use serde_json::{Map, Value};

fn flag(s: &Map<String, Value>, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

/// Drops the fields of `value` that `schema` does not specify.
pub fn prune(schema: &Value, value: &mut Value, root: bool) {
    let Some(s) = schema.as_object() else {
        return;
    };
    match value {
        Value::Object(fields) => {
            let preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
            let keep_meta = root || flag(s, "x-kubernetes-embedded-resource");
            let properties = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            fields.retain(|key, v| {
                if keep_meta && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    return true;
                }
                match properties.and_then(|p| p.get(key)).or(additional) {
                    Some(child) => {
                        prune(child, v, false);
                        true
                    }
                    None => preserve,
                }
            });
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    prune(item_schema, item, false);
                }
            }
        }
        _ => {}
    }
}

/// The paths (`spec.items[0].b`) of the fields [`prune`] drops from `value`, unsorted.
pub fn unknown_paths(schema: &Value, value: &Value, root: bool, path: &str, out: &mut Vec<String>) {
    let Some(s) = schema.as_object() else {
        return;
    };
    match value {
        Value::Object(fields) => {
            let preserve = flag(s, "x-kubernetes-preserve-unknown-fields");
            let keep_meta = root || flag(s, "x-kubernetes-embedded-resource");
            let properties = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            for (key, v) in fields {
                if keep_meta && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match properties.and_then(|p| p.get(key)).or(additional) {
                    Some(schema) => unknown_paths(schema, v, false, &child, out),
                    None if preserve => {}
                    None => out.push(child),
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for (i, item) in items.iter().enumerate() {
                    unknown_paths(item_schema, item, false, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// Applies the schema's defaults to `value`, and drops non-nullable nulls.
pub fn default(schema: &Value, value: &mut Value) {
    let Some(s) = schema.as_object() else {
        return;
    };
    match value {
        Value::Object(fields) => {
            if let Some(properties) = s.get("properties").and_then(Value::as_object) {
                for (key, child) in properties {
                    let Some(d) = child.get("default") else {
                        continue;
                    };
                    let nullable = child.get("nullable").and_then(Value::as_bool) == Some(true);
                    match fields.get(key) {
                        None => {
                            fields.insert(key.clone(), d.clone());
                        }
                        Some(Value::Null) if !nullable => {
                            fields.insert(key.clone(), d.clone());
                        }
                        Some(_) => {}
                    }
                }
            }
            let properties = s.get("properties").and_then(Value::as_object);
            let additional = s.get("additionalProperties").filter(|a| a.is_object());
            fields.retain(|key, v| {
                let Some(child) = properties.and_then(|p| p.get(key)).or(additional) else {
                    return true;
                };
                if v.is_null() {
                    return child.get("nullable").and_then(Value::as_bool) == Some(true);
                }
                default(child, v);
                true
            });
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.get("items") {
                for item in items {
                    default(item_schema, item);
                }
            }
        }
        _ => {}
    }
}

/// Writes whole floats (`2.0`) as integers, everywhere in `value`.
pub fn whole_numbers(value: &mut Value) {
    match value {
        Value::Number(n) if !n.is_i64() && !n.is_u64() => {
            if let Some(f) = n.as_f64()
                && f.fract() == 0.0
                && f.abs() < 9_007_199_254_740_992.0
            {
                #[allow(clippy::cast_possible_truncation)]
                let whole = f as i64;
                *value = Value::from(whole);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(whole_numbers),
        Value::Object(fields) => fields.values_mut().for_each(whole_numbers),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {
                "size": {"type": "integer", "default": 3},
                "mode": {"type": "string", "default": "a"},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "nested": {"type": "object", "default": {}, "properties": {
                    "x": {"type": "integer", "default": 7}}},
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "k": {"type": "string"}}}},
                "flag": {"type": "boolean"},
                "n": {"type": "string", "nullable": true},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}}},
            "status": {"type": "object", "properties": {"ok": {"type": "boolean"}}}}})
    }

    #[test]
    fn prunes_then_defaults_as_kube_apiserver_1_36() {
        // Observed on kube-apiserver 1.36.2 for the same schema and body.
        let mut v = json!({"apiVersion": "ex.com/v1", "kind": "Thing", "metadata": {"name": "t"},
            "spec": {"extra": 1, "free": {"u": {"deep": 1}}, "nested": {"y": 2},
                "items": [{"k": "1", "j": 2}], "flag": null, "n": null, "mode": null,
                "labels": {"a": "b"}, "size": 2.0},
            "extra2": "x"});
        prune(&schema(), &mut v, true);
        default(&schema(), &mut v);
        whole_numbers(&mut v);
        assert_eq!(
            v,
            json!({"apiVersion": "ex.com/v1", "kind": "Thing", "metadata": {"name": "t"},
                "spec": {"free": {"u": {"deep": 1}}, "nested": {"x": 7}, "items": [{"k": "1"}],
                    "n": null, "mode": "a", "labels": {"a": "b"}, "size": 2}})
        );
    }

    #[test]
    fn preserving_the_root_keeps_unknown_fields_there_only() {
        let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "integer"}}}}});
        let mut v = json!({"top": {"x": 1}, "spec": {"a": 1, "e": 1}});
        prune(&s, &mut v, true);
        assert_eq!(v, json!({"top": {"x": 1}, "spec": {"a": 1}}));
    }
}
