//! Enum schemas: unit-only enums, externally, internally and un-tagged enums, as far as a
//! structural schema can express them.
//!
//! controller-tools has no enums to map (Go has none; it writes `enum:` for string types
//! with `+kubebuilder:validation:Enum`); kube-derive goes through schemars and then hoists
//! `oneOf` branches into a structural shape. Here each serde representation has one rule:
//!
//! * unit variants only, externally tagged: `type: string` with `enum:` of the names;
//! * externally tagged, data variants only: an object with one property per variant and a
//!   `oneOf` of `required: [variant]`, so exactly one is set;
//! * internally tagged (`#[serde(tag = "...")]`): one object with every variant's properties,
//!   the tag a required string `enum`, and a `oneOf` branch per variant pinning the tag and
//!   the variant's required fields;
//! * untagged: variants of one object shape merge as above with an `anyOf` of their
//!   `required`; one integer and one string variant are `x-kubernetes-int-or-string`.
//!
//! Refused (compile errors in the derive, or panics here when only the schemas show it):
//! unit and data variants mixed in an externally tagged enum (a value is a string or an
//! object: one `type` only), two variants giving one property two schemas, variants of
//! different types other than integer-or-string.

use serde_json::{Map, Value, json};

/// The schema without its description, for comparing two variants' properties.
fn without_descriptions(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, _)| k.as_str() != "description")
                .map(|(k, v)| (k.clone(), without_descriptions(v)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_descriptions).collect()),
        other => other.clone(),
    }
}

/// Adds `from`'s properties to `into`; one name with two schemas is refused.
fn merge_properties(owner: &str, into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (name, schema) in from {
        match into.get(&name) {
            Some(seen) if without_descriptions(seen) != without_descriptions(&schema) => panic!(
                "{owner}: two variants give the property `{name}` different schemas: a structural schema has one schema per property"
            ),
            Some(_) => {}
            None => {
                into.insert(name, schema);
            }
        }
    }
}

/// The object parts of a variant's schema: its properties and required names.
fn object_parts(owner: &str, variant: &str, schema: Value) -> (Map<String, Value>, Vec<Value>) {
    let Value::Object(mut map) = schema else {
        panic!("{owner}: the schema of variant `{variant}` is not an object")
    };
    if map.get("type") != Some(&"object".into()) || map.contains_key("additionalProperties") {
        panic!(
            "{owner}: variant `{variant}` is not a struct: only variants whose schema is an object with properties can share one object schema"
        );
    }
    if map.contains_key("x-kubernetes-validations") {
        panic!(
            "{owner}: variant `{variant}` has validation rules: rules cannot be put in a `oneOf` branch; put them on the enum"
        );
    }
    let properties = match map.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let required = match map.remove("required") {
        Some(Value::Array(r)) => r,
        _ => Vec::new(),
    };
    (properties, required)
}

/// A unit-only enum: `type: string` with the variants' names as `enum`.
pub fn unit_enum(names: &[&str]) -> Value {
    json!({"type": "string", "enum": names})
}

/// An externally tagged enum of data variants: `{"Variant": {...}}`.
pub fn external_enum(owner: &str, variants: Vec<(&'static str, Value)>) -> Value {
    let _ = owner;
    let mut properties = Map::new();
    let mut one_of = Vec::new();
    for (name, schema) in variants {
        properties.insert(name.to_owned(), schema);
        one_of.push(json!({"required": [name]}));
    }
    json!({"type": "object", "properties": properties, "oneOf": one_of})
}

/// An internally tagged enum: `{"<tag>": "Variant", ...the variant's fields}`.
pub fn internal_enum(
    owner: &str,
    tag: &'static str,
    variants: Vec<(&'static str, Value)>,
) -> Value {
    let mut properties = Map::new();
    let mut names = Vec::new();
    let mut one_of = Vec::new();
    for (name, schema) in variants {
        let (variant_properties, required) = object_parts(owner, name, schema);
        if variant_properties.contains_key(tag) {
            panic!("{owner}: variant `{name}` has a field named like the tag `{tag}`");
        }
        merge_properties(owner, &mut properties, variant_properties);
        let mut branch = json!({"properties": {tag: {"enum": [name]}}});
        if !required.is_empty() {
            branch["required"] = required.into();
        }
        one_of.push(branch);
        names.push(name);
    }
    let mut all = Map::new();
    all.insert(tag.to_owned(), json!({"type": "string", "enum": names}));
    all.extend(properties);
    json!({"type": "object", "properties": all, "required": [tag], "oneOf": one_of})
}

/// An untagged enum: the variants' own shapes, which must agree on one type (objects merge;
/// an integer and a string make int-or-string).
pub fn untagged_enum(owner: &str, variants: Vec<(&'static str, Value)>) -> Value {
    let Some((_, first)) = variants.first() else {
        panic!("{owner}: an untagged enum without variants has no schema")
    };
    let first = first.clone();
    if variants
        .iter()
        .all(|(_, s)| without_descriptions(s) == without_descriptions(&first))
    {
        return first;
    }
    let types: Vec<Option<&str>> = variants
        .iter()
        .map(|(_, s)| s.get("type").and_then(Value::as_str))
        .collect();
    let is = |t: &str| types.iter().filter(|x| **x == Some(t)).count();
    if variants.len() == 2 && is("integer") == 1 && is("string") == 1 {
        return json!({
            "anyOf": [{"type": "integer"}, {"type": "string"}],
            "x-kubernetes-int-or-string": true,
        });
    }
    if is("object") == variants.len() {
        let mut properties = Map::new();
        let mut any_of = Vec::new();
        for (name, schema) in variants {
            let (variant_properties, required) = object_parts(owner, name, schema);
            merge_properties(owner, &mut properties, variant_properties);
            any_of.push(required);
        }
        let mut schema = json!({"type": "object", "properties": properties});
        // Only when every variant requires something does `anyOf` tell them apart from `{}`.
        if any_of.iter().all(|r| !r.is_empty()) {
            schema["anyOf"] = any_of.into_iter().map(|r| json!({"required": r})).collect();
        }
        return schema;
    }
    panic!(
        "{owner}: the variants of an untagged enum have different types ({types:?}): a structural schema has one type per value, except integer-or-string"
    )
}
