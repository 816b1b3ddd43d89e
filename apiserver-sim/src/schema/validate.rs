//! Validation of a custom resource against its structural schema, with kube-apiserver's
//! causes and messages.
//!
//! Mirrors kube-openapi's schema validator as apiextensions-apiserver runs it
//! (`apiextensions-apiserver/pkg/apiserver/validation`): per node the type (with
//! `nullable` and `x-kubernetes-int-or-string`), then for strings `maxLength`, `minLength`,
//! `pattern` (the first that fails only, as kube-openapi stops there), for numbers
//! `multipleOf`, `maximum`, `minimum` (all of them, with the OpenAPI v3.0 boolean
//! `exclusiveMaximum`/`exclusiveMinimum`), `enum`, for arrays the items then `minItems`,
//! `maxItems` and the duplicates of an `x-kubernetes-list-type: set`, for objects `required`,
//! the properties (or `additionalProperties`), `minProperties`, `maxProperties`. Messages
//! and reasons are those kube-apiserver 1.36.2 answers, word for word.
//!
//! Differences: `format`, `allOf`/`anyOf`/`oneOf`/`not`, `x-kubernetes-validations` (CEL)
//! and `uniqueItems` are not checked (where CEL rules exist and an error would have blocked
//! them, the cause kube-apiserver adds to say so is added: see [`rules_not_checked`]);
//! causes come in the schema's (alphabetical) property order, where kube-apiserver's order
//! follows Go's map iteration and varies between requests.

use serde_json::{Map, Value};

use crate::errors::FieldError;

/// The JSON type name kube-openapi reports for a value.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        // Go decodes `2.0` as a float64 that kube-openapi takes for an integer.
        Value::Number(n) if n.as_f64().is_some_and(|f| f.fract() == 0.0) => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value as Go's `%v` prints it in `Invalid value: ...` (strings quoted).
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn err(reason: &'static str, field: &str, detail: String) -> FieldError {
    FieldError {
        reason,
        field: field.to_owned(),
        detail,
    }
}

fn invalid(field: &str, value: &Value, why: &str) -> FieldError {
    err(
        "FieldValueInvalid",
        field,
        format!("Invalid value: {}: {field} in body {why}", shown(value)),
    )
}

fn items_word(n: u64) -> &'static str {
    if n == 1 { "item" } else { "items" }
}

/// Whether `schema` has CEL rules (`x-kubernetes-validations`) anywhere.
pub fn has_rules(schema: &Value) -> bool {
    match schema {
        Value::Object(s) => s.contains_key("x-kubernetes-validations") || s.values().any(has_rules),
        Value::Array(items) => items.iter().any(has_rules),
        _ => false,
    }
}

/// kube-apiserver evaluates a custom resource's CEL rules only when the schema found no
/// error that makes them meaningless (a required field missing, a value not among the
/// enum, too long, too many, of the wrong type: apiextensions-apiserver's `hasBlockingErr`);
/// otherwise it skips them and says so in one last cause. The sim evaluates no CEL, but adds
/// that cause where kube-apiserver 1.36.2 does.
pub fn rules_not_checked(schema: &Value, causes: &mut Vec<FieldError>) {
    const BLOCKING: [&str; 5] = [
        "FieldValueRequired",
        "FieldValueNotSupported",
        "FieldValueTooLong",
        "FieldValueTooMany",
        "FieldValueTypeInvalid",
    ];
    if causes.iter().any(|c| BLOCKING.contains(&c.reason)) && has_rules(schema) {
        causes.push(err(
            "FieldValueInvalid",
            "<nil>",
            "Invalid value: null: some validation rules were not checked because the object \
             was invalid; correct the existing errors to complete validation"
                .to_owned(),
        ));
    }
}

/// Validates `value` at `path` against `schema`, appending the causes to `out`.
pub fn validate(schema: &Value, value: &Value, path: &str, out: &mut Vec<FieldError>) {
    let Some(s) = schema.as_object() else {
        return;
    };
    if !type_ok(s, value, path, out) {
        return;
    }
    match value {
        Value::String(text) => string(s, value, text, path, out),
        Value::Number(n) => number(s, value, n.as_f64().unwrap_or(0.0), path, out),
        _ => {}
    }
    if let Some(allowed) = s.get("enum").and_then(Value::as_array)
        && !allowed.iter().any(|a| a == value)
    {
        let list: Vec<String> = allowed
            .iter()
            .map(|a| match a {
                Value::String(s) => format!("{s:?}"),
                other => format!("\"{other}\""),
            })
            .collect();
        out.push(err(
            "FieldValueNotSupported",
            path,
            format!(
                "Unsupported value: {}: supported values: {}",
                shown(value),
                list.join(", ")
            ),
        ));
    }
    match value {
        Value::Array(items) => array(s, items, path, out),
        Value::Object(fields) => object(s, fields, path, out),
        _ => {}
    }
}

fn type_ok(s: &Map<String, Value>, value: &Value, path: &str, out: &mut Vec<FieldError>) -> bool {
    let actual = type_name(value);
    if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
        if matches!(actual, "integer" | "string") {
            return true;
        }
        out.push(type_error(path, actual, "integer,string"));
        return false;
    }
    if value.is_null() && s.get("nullable") == Some(&Value::Bool(true)) {
        return true;
    }
    let Some(expected) = s.get("type").and_then(Value::as_str) else {
        return true;
    };
    let ok = actual == expected || (expected == "number" && actual == "integer");
    if !ok {
        out.push(type_error(path, actual, expected));
    }
    ok
}

fn type_error(path: &str, actual: &str, expected: &str) -> FieldError {
    err(
        "FieldValueTypeInvalid",
        path,
        format!(
            "Invalid value: \"{actual}\": {path} in body must be of type {expected}: \"{actual}\""
        ),
    )
}

fn string(
    s: &Map<String, Value>,
    value: &Value,
    text: &str,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let chars = text.chars().count() as u64;
    if let Some(max) = s.get("maxLength").and_then(Value::as_u64)
        && chars > max
    {
        out.push(err(
            "FieldValueTooLong",
            path,
            format!("Too long: may not be more than {max} bytes"),
        ));
        return;
    }
    if let Some(min) = s.get("minLength").and_then(Value::as_u64)
        && chars < min
    {
        out.push(invalid(
            path,
            value,
            &format!("should be at least {min} chars long"),
        ));
        return;
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
        && regex::Regex::new(pattern).is_ok_and(|re| !re.is_match(text))
    {
        out.push(invalid(path, value, &format!("should match '{pattern}'")));
    }
}

/// A bound's keyword, its exclusive flag, its words, and whether a number is beyond it.
type Bound = (
    &'static str,
    &'static str,
    &'static str,
    fn(f64, f64) -> bool,
);

fn number(s: &Map<String, Value>, value: &Value, n: f64, path: &str, out: &mut Vec<FieldError>) {
    let flag = |key: &str| s.get(key).and_then(Value::as_bool) == Some(true);
    if let Some(m) = s.get("multipleOf").and_then(Value::as_f64)
        && m > 0.0
        && (n / m).fract() != 0.0
    {
        out.push(invalid(
            path,
            value,
            &format!("should be a multiple of {}", s["multipleOf"]),
        ));
    }
    let bounds: [Bound; 2] = [
        ("maximum", "exclusiveMaximum", "less than", |n, b| n > b),
        ("minimum", "exclusiveMinimum", "greater than", |n, b| n < b),
    ];
    for (key, exclusive_key, words, beyond) in bounds {
        let Some(bound) = s.get(key).and_then(Value::as_f64) else {
            continue;
        };
        let exclusive = flag(exclusive_key);
        #[allow(clippy::float_cmp)]
        let at_bound = n == bound;
        if beyond(n, bound) || (exclusive && at_bound) {
            let how = if exclusive {
                words.to_owned()
            } else {
                format!("{words} or equal to")
            };
            out.push(invalid(path, value, &format!("should be {how} {}", s[key])));
        }
    }
}

/// `minItems`/`maxItems` or `minProperties`/`maxProperties` against `count`; `at_least`
/// words the minimum.
fn count_limits(
    s: &Map<String, Value>,
    (min_key, max_key): (&str, &str),
    count: u64,
    path: &str,
    out: &mut Vec<FieldError>,
    at_least: fn(u64) -> String,
) {
    if let Some(min) = s.get(min_key).and_then(Value::as_u64)
        && count < min
    {
        let why = format!("should have at least {}", at_least(min));
        out.push(invalid(path, &Value::from(count), &why));
    }
    if let Some(max) = s.get(max_key).and_then(Value::as_u64)
        && count > max
    {
        out.push(err(
            "FieldValueTooMany",
            path,
            format!(
                "Too many: {count}: must have at most {max} {}",
                items_word(max)
            ),
        ));
    }
}

fn array(s: &Map<String, Value>, items: &[Value], path: &str, out: &mut Vec<FieldError>) {
    if let Some(item_schema) = s.get("items") {
        for (i, item) in items.iter().enumerate() {
            validate(item_schema, item, &format!("{path}[{i}]"), out);
        }
    }
    let len = items.len() as u64;
    count_limits(s, ("minItems", "maxItems"), len, path, out, |min| {
        format!("{min} {}", items_word(min))
    });
    match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("set") => {
            for (i, item) in items.iter().enumerate() {
                if items[..i].contains(item) {
                    out.push(err(
                        "FieldValueDuplicate",
                        &format!("{path}[{i}]"),
                        format!("Duplicate value: {}", shown(item)),
                    ));
                }
            }
        }
        Some("map") => map_list_duplicates(s, items, path, out),
        _ => {}
    }
}

/// The items of an `x-kubernetes-list-type: map` whose keys (`x-kubernetes-list-map-keys`)
/// an earlier item has: `Duplicate value: {"name":"a"}`, the keys shown as a JSON object.
fn map_list_duplicates(
    s: &Map<String, Value>,
    items: &[Value],
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let keys: Vec<&str> = s
        .get("x-kubernetes-list-map-keys")
        .and_then(Value::as_array)
        .map(|keys| keys.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if keys.is_empty() {
        return;
    }
    let key_of = |item: &Value| -> Option<Map<String, Value>> {
        let item = item.as_object()?;
        Some(
            keys.iter()
                .filter_map(|k| Some(((*k).to_owned(), item.get(*k)?.clone())))
                .collect(),
        )
    };
    let seen: Vec<Option<Map<String, Value>>> = items.iter().map(key_of).collect();
    for (i, key) in seen.iter().enumerate() {
        let Some(key) = key else { continue };
        if seen[..i]
            .iter()
            .any(|earlier| earlier.as_ref() == Some(key))
        {
            out.push(err(
                "FieldValueDuplicate",
                &format!("{path}[{i}]"),
                format!("Duplicate value: {}", Value::Object(key.clone())),
            ));
        }
    }
}

fn object(
    s: &Map<String, Value>,
    fields: &Map<String, Value>,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let child = |key: &str| {
        if path.is_empty() {
            key.to_owned()
        } else {
            format!("{path}.{key}")
        }
    };
    if let Some(required) = s.get("required").and_then(Value::as_array) {
        for key in required.iter().filter_map(Value::as_str) {
            if !fields.contains_key(key) {
                out.push(err(
                    "FieldValueRequired",
                    &child(key),
                    "Required value".into(),
                ));
            }
        }
    }
    let properties = s.get("properties").and_then(Value::as_object);
    let additional = s.get("additionalProperties").filter(|a| a.is_object());
    for (key, v) in fields {
        if path.is_empty() && matches!(key.as_str(), "apiVersion" | "kind" | "metadata") {
            continue;
        }
        if let Some(schema) = properties.and_then(|p| p.get(key)).or(additional) {
            validate(schema, v, &child(key), out);
        }
    }
    let count = fields.len() as u64;
    count_limits(
        s,
        ("minProperties", "maxProperties"),
        count,
        path,
        out,
        |min| format!("{min} properties"),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn causes(schema: Value, value: Value) -> Vec<(String, String, String)> {
        let mut out = Vec::new();
        validate(&schema, &value, "", &mut out);
        out.into_iter()
            .map(|e| (e.reason.to_owned(), e.field, e.detail))
            .collect()
    }

    fn one(reason: &str, field: &str, detail: &str) -> Vec<(String, String, String)> {
        vec![(reason.to_owned(), field.to_owned(), detail.to_owned())]
    }

    #[test]
    fn messages_are_kube_apiserver_1_36s() {
        let spec = |props: Value| json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}});
        // Each observed on kube-apiserver 1.36.2.
        assert_eq!(
            causes(
                spec(json!({"size": {"type": "integer"}})),
                json!({"spec": {"size": "big"}})
            ),
            one(
                "FieldValueTypeInvalid",
                "spec.size",
                "Invalid value: \"string\": spec.size in body must be of type integer: \"string\""
            )
        );
        assert_eq!(
            causes(
                spec(json!({"n": {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"}})),
                json!({"spec": {"n": "ABCDEFG"}})
            ),
            one(
                "FieldValueTooLong",
                "spec.n",
                "Too long: may not be more than 5 bytes"
            )
        );
        assert_eq!(
            causes(
                spec(json!({"n": {"type": "string", "pattern": "^[a-z]+$"}})),
                json!({"spec": {"n": "AB"}})
            ),
            one(
                "FieldValueInvalid",
                "spec.n",
                "Invalid value: \"AB\": spec.n in body should match '^[a-z]+$'"
            )
        );
        assert_eq!(
            causes(
                spec(
                    json!({"a": {"type": "integer", "maximum": 5, "exclusiveMaximum": true,
                    "multipleOf": 2, "enum": [2, 4]}})
                ),
                json!({"spec": {"a": 5}})
            ),
            vec![
                (
                    "FieldValueInvalid".into(),
                    "spec.a".into(),
                    "Invalid value: 5: spec.a in body should be a multiple of 2".into()
                ),
                (
                    "FieldValueInvalid".into(),
                    "spec.a".into(),
                    "Invalid value: 5: spec.a in body should be less than 5".into()
                ),
                (
                    "FieldValueNotSupported".into(),
                    "spec.a".into(),
                    "Unsupported value: 5: supported values: \"2\", \"4\"".into()
                ),
            ]
        );
        assert_eq!(
            causes(
                spec(json!({"c": {"type": "object", "maxProperties": 1,
                "additionalProperties": {"type": "integer"}}})),
                json!({"spec": {"c": {"p": 1, "q": 2}}})
            ),
            one(
                "FieldValueTooMany",
                "spec.c",
                "Too many: 2: must have at most 1 item"
            )
        );
        assert_eq!(
            causes(
                spec(
                    json!({"t": {"type": "array", "x-kubernetes-list-type": "set",
                "items": {"type": "string"}}})
                ),
                json!({"spec": {"t": ["a", "a"]}})
            ),
            one("FieldValueDuplicate", "spec.t[1]", "Duplicate value: \"a\"")
        );
        assert_eq!(
            causes(json!({"type": "object", "required": ["spec"]}), json!({})),
            one("FieldValueRequired", "spec", "Required value")
        );
        assert_eq!(
            causes(
                spec(json!({"i": {"x-kubernetes-int-or-string": true}})),
                json!({"spec": {"i": 1.5}})
            ),
            one(
                "FieldValueTypeInvalid",
                "spec.i",
                "Invalid value: \"number\": spec.i in body must be of type integer,string: \"number\""
            )
        );
    }
}
