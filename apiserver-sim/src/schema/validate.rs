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
//! Differences: `format` is checked for `date-time`, `date` and the integer formats only;
//! `allOf`/`anyOf`/`oneOf`/`not`, `x-kubernetes-validations` (CEL) and `uniqueItems` are not
//! checked (where CEL rules exist and an error would have blocked
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
        // A fraction in an integer field with a format: go-openapi's type validator names the
        // format and Go's float64, and its format validator adds a cause of its own.
        if let ("integer", "number", Some(format @ ("int32" | "int64"))) =
            (expected, actual, s.get("format").and_then(Value::as_str))
        {
            out.push(type_error(path, "float64", format));
            out.push(err(
                "FieldValueInvalid",
                "<nil>",
                format!(
                    "Invalid value: \"\": Checked value must be of type integer with format \
                     {format} in {path}"
                ),
            ));
            return false;
        }
        out.push(type_error(path, actual, expected));
    }
    ok
}

/// Whether `text` is a string of `format`, as go-openapi's strfmt registry reads the formats
/// it knows (`date-time`: RFC 3339, the time zone optional as in its ISO 8601 local layout;
/// `date`: `YYYY-MM-DD`); other formats are not checked.
fn format_ok(format: &str, text: &str) -> bool {
    fn digits(s: &str) -> bool {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
    }
    fn date(d: &str) -> bool {
        let parts: Vec<&str> = d.split('-').collect();
        matches!(parts.as_slice(), [y, m, day] if y.len() == 4 && m.len() == 2 && day.len() == 2
            && digits(y) && digits(m) && digits(day)
            && (1..=12).contains(&m.parse::<u8>().unwrap_or(0))
            && (1..=31).contains(&day.parse::<u8>().unwrap_or(0)))
    }
    fn time(t: &str) -> bool {
        let (clock, zone) = match t.find(['Z', 'z', '+', '-']) {
            Some(i) => t.split_at(i),
            None => (t, ""),
        };
        let zone_ok = match zone {
            "" | "Z" | "z" => true,
            z => {
                let z = &z[1..];
                matches!(z.split_once(':'), Some((h, m)) if h.len() == 2 && m.len() == 2
                    && digits(h) && digits(m))
            }
        };
        let (hms, frac) = clock.split_once('.').unwrap_or((clock, "0"));
        let parts: Vec<&str> = hms.split(':').collect();
        zone_ok
            && digits(frac)
            && matches!(parts.as_slice(), [h, m, s] if h.len() == 2 && m.len() == 2
                && s.len() == 2 && digits(h) && digits(m) && digits(s)
                && h.parse::<u8>().unwrap_or(99) < 24 && m.parse::<u8>().unwrap_or(99) < 60
                && s.parse::<u8>().unwrap_or(99) < 61)
    }
    match format {
        "date-time" => text
            .split_once(['T', 't'])
            .is_some_and(|(d, t)| date(d) && time(t)),
        "date" => date(text),
        _ => true,
    }
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
    if let Some(format) = s.get("format").and_then(Value::as_str)
        && !format_ok(format, text)
    {
        out.push(err(
            "FieldValueTypeInvalid",
            path,
            format!(
                "Invalid value: {}: {path} in body must be of type {format}: {}",
                shown(value),
                shown(value)
            ),
        ));
    }
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
#[path = "validate_tests.rs"]
mod tests;
