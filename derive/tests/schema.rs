//! `#[derive(CrdSchema)]` shape by shape and attribute by attribute: the exact schema each
//! Rust shape, serde attribute and `#[schema]` item gives.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use clientgo_derive::CrdSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

fn schema<T: CrdSchema + ?Sized>() -> Value {
    T::crd_schema()
}

#[test]
fn std_types() {
    assert_eq!(schema::<bool>(), json!({"type": "boolean"}));
    assert_eq!(
        schema::<i32>(),
        json!({"type": "integer", "format": "int32"})
    );
    assert_eq!(
        schema::<i64>(),
        json!({"type": "integer", "format": "int64"})
    );
    assert_eq!(
        schema::<u16>(),
        json!({"type": "integer", "format": "int32", "minimum": 0})
    );
    assert_eq!(
        schema::<u32>(),
        json!({"type": "integer", "format": "int64", "minimum": 0})
    );
    assert_eq!(
        schema::<f64>(),
        json!({"type": "number", "format": "double"})
    );
    assert_eq!(
        schema::<f32>(),
        json!({"type": "number", "format": "float"})
    );
    assert_eq!(schema::<String>(), json!({"type": "string"}));
    assert_eq!(schema::<Box<str>>(), json!({"type": "string"}));
    assert_eq!(
        schema::<Vec<String>>(),
        json!({"type": "array", "items": {"type": "string"}})
    );
    assert_eq!(
        schema::<[u8; 2]>(),
        json!({"type": "array", "items": {"type": "integer", "format": "int32", "minimum": 0}, "minItems": 2, "maxItems": 2})
    );
    assert_eq!(
        schema::<BTreeSet<String>>(),
        json!({"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"})
    );
    assert_eq!(
        schema::<BTreeMap<String, i64>>(),
        json!({"type": "object", "additionalProperties": {"type": "integer", "format": "int64"}})
    );
    assert_eq!(
        schema::<HashMap<String, Vec<bool>>>(),
        json!({"type": "object", "additionalProperties": {"type": "array", "items": {"type": "boolean"}}})
    );
    assert_eq!(schema::<Option<String>>(), json!({"type": "string"}));
    assert!(<Option<String>>::optional() && !String::optional());
    assert_eq!(
        schema::<Value>(),
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        schema::<clientgo_apimachinery::Time>(),
        json!({"type": "string", "format": "date-time"})
    );
}

#[test]
fn k8s_openapi_types() {
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
    assert_eq!(
        schema::<IntOrString>(),
        json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true})
    );
    let quantity = schema::<Quantity>();
    assert_eq!(quantity["x-kubernetes-int-or-string"], true);
    assert_eq!(quantity["pattern"], clientgo_derive::QUANTITY_PATTERN);
    let condition = schema::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition>();
    assert_eq!(
        condition["required"],
        json!(["lastTransitionTime", "message", "reason", "status", "type"])
    );
}

/// A widget.
///
/// Second paragraph.
#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Shapes {
    /// Required: neither optional nor defaulted.
    plain_name: String,
    /// Optional, written as null when None: nullable.
    maybe: Option<i32>,
    /// Optional, never written as null.
    #[serde(skip_serializing_if = "Option::is_none")]
    omitted: Option<i32>,
    #[serde(default)]
    defaulted: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    skippable: Vec<String>,
    #[serde(rename = "type")]
    type_: String,
    #[serde(skip)]
    _skipped: u8,
    r#loop: bool,
}

#[test]
fn a_struct_with_renames_required_nullable_and_docs() {
    assert_eq!(
        schema::<Shapes>(),
        json!({
            "type": "object",
            "description": "A widget.\n\nSecond paragraph.",
            "properties": {
                "plainName": {"type": "string", "description": "Required: neither optional nor defaulted."},
                "maybe": {"type": "integer", "format": "int32", "nullable": true, "description": "Optional, written as null when None: nullable."},
                "omitted": {"type": "integer", "format": "int32", "description": "Optional, never written as null."},
                "defaulted": {"type": "array", "items": {"type": "string"}},
                "skippable": {"type": "array", "items": {"type": "string"}},
                "type": {"type": "string"},
                "loop": {"type": "boolean"},
            },
            "required": ["plainName", "type", "loop"],
        })
    );
}

#[derive(CrdSchema, Serialize, Deserialize, Default)]
#[serde(default, rename_all = "SCREAMING_SNAKE_CASE")]
struct AllDefault {
    first_field: u8,
    second: String,
}

#[test]
fn container_default_makes_nothing_required() {
    let s = schema::<AllDefault>();
    assert!(s.get("required").is_none(), "{s}");
    assert!(s["properties"]["FIRST_FIELD"].is_object());
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Inner {
    inner_a: String,
    #[serde(default)]
    inner_b: i64,
}

#[derive(CrdSchema, Serialize, Deserialize)]
struct Outer {
    own: String,
    #[serde(flatten)]
    inner: Inner,
    #[serde(flatten)]
    more: Option<More>,
}

#[derive(CrdSchema, Serialize, Deserialize)]
struct More {
    extra: String,
}

#[test]
fn flatten_merges_properties_and_required() {
    assert_eq!(
        schema::<Outer>(),
        json!({
            "type": "object",
            "properties": {
                "own": {"type": "string"},
                "innerA": {"type": "string"},
                "innerB": {"type": "integer", "format": "int64"},
                "extra": {"type": "string"},
            },
            "required": ["own", "innerA"],
        })
    );
}

/// A name.
#[derive(CrdSchema, Serialize, Deserialize)]
#[schema(min_length = 1)]
struct Name(String);

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(transparent)]
struct Wrapper {
    value: Vec<u8>,
}

#[test]
fn newtypes_and_transparent_are_their_inner_type() {
    assert_eq!(
        schema::<Name>(),
        json!({"type": "string", "minLength": 1, "description": "A name."})
    );
    assert_eq!(schema::<Wrapper>(), schema::<Vec<u8>>());
}

/// A color.
#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Color {
    Red,
    DarkBlue,
    #[serde(rename = "GREEN")]
    Green,
    #[serde(skip)]
    #[allow(dead_code)]
    Hidden,
}

#[test]
fn unit_enums_are_string_enums() {
    assert_eq!(
        schema::<Color>(),
        json!({"type": "string", "enum": ["red", "darkblue", "GREEN"], "description": "A color."})
    );
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", rename_all_fields = "camelCase")]
enum Source {
    /// From a config map.
    ConfigMap(Name),
    Inline {
        data_text: String,
        #[serde(default)]
        binary: bool,
    },
}

#[test]
fn externally_tagged_enums_are_one_of_required() {
    assert_eq!(
        schema::<Source>(),
        json!({
            "type": "object",
            "properties": {
                "configMap": {"type": "string", "minLength": 1, "description": "From a config map."},
                "inline": {
                    "type": "object",
                    "properties": {"dataText": {"type": "string"}, "binary": {"type": "boolean"}},
                    "required": ["dataText"],
                },
            },
            "oneOf": [{"required": ["configMap"]}, {"required": ["inline"]}],
        })
    );
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(tag = "kind")]
enum Backend {
    Memory,
    Disk {
        path: String,
        #[serde(default)]
        size: u32,
    },
    Remote(Remote),
}

#[derive(CrdSchema, Serialize, Deserialize)]
struct Remote {
    url: String,
}

#[test]
fn internally_tagged_enums_pin_the_tag_per_branch() {
    assert_eq!(
        schema::<Backend>(),
        json!({
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": ["Memory", "Disk", "Remote"]},
                "path": {"type": "string"},
                "size": {"type": "integer", "format": "int64", "minimum": 0},
                "url": {"type": "string"},
            },
            "required": ["kind"],
            "oneOf": [
                {"properties": {"kind": {"enum": ["Memory"]}}},
                {"properties": {"kind": {"enum": ["Disk"]}}, "required": ["path"]},
                {"properties": {"kind": {"enum": ["Remote"]}}, "required": ["url"]},
            ],
        })
    );
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(untagged)]
enum Port {
    Number(i32),
    Name(String),
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(untagged)]
enum Either {
    ByName { name: String },
    ById { id: i64 },
}

#[test]
fn untagged_enums_int_or_string_and_objects() {
    assert_eq!(
        schema::<Port>(),
        json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true})
    );
    assert_eq!(
        schema::<Either>(),
        json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "id": {"type": "integer", "format": "int64"}},
            "anyOf": [{"required": ["name"]}, {"required": ["id"]}],
        })
    );
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(untagged)]
enum Mixed {
    Flag(bool),
    Name(String),
}

#[test]
#[should_panic(expected = "different types")]
fn untagged_enums_of_other_mixed_types_are_refused() {
    schema::<Mixed>();
}

const MAX: i32 = 10;

fn custom_schema() -> Value {
    json!({"type": "string", "format": "byte"})
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[schema(validation(rule = "self.low <= self.high", message = "low must not exceed high"))]
#[schema(max_properties = 20)]
struct Validated {
    #[schema(minimum = 0, maximum = MAX, exclusive_maximum, multiple_of = 2)]
    low: i32,
    #[schema(minimum = -5, default = 4)]
    #[serde(default)]
    high: i32,
    #[schema(
        pattern = "^[a-z]+$",
        min_length = 1,
        max_length = 8,
        format = "hostname"
    )]
    host: String,
    #[schema(enum_values = ["a", "b"], default = "a")]
    letter: String,
    #[schema(min_items = 1, max_items = 3, list_type = "map", list_map_keys = ["name"])]
    ports: Vec<Named>,
    #[schema(list_type = "atomic", items(pattern = "^x"))]
    xs: Vec<String>,
    #[schema(min_properties = 1, values(max_length = 3))]
    labels: BTreeMap<String, String>,
    #[schema(map_type = "atomic")]
    selector: Named,
    #[schema(preserve_unknown_fields)]
    free: Named,
    raw: Value,
    #[schema(embedded_resource)]
    template: Value,
    #[schema(int_or_string)]
    amount: String,
    #[schema(
        validation = "self != 'x'",
        validation(
            rule = "self.size() < 5",
            message_expression = "'too long: ' + self",
            reason = "FieldValueForbidden",
            field_path = ".x"
        )
    )]
    ruled: String,
    #[schema(default = json!({"name": "d"}), description = "Overrides the doc.", nullable = false)]
    /// A doc.
    #[serde(default)]
    with_default: Option<Named>,
    #[schema(required)]
    #[serde(default)]
    forced: String,
    #[schema(required = false, nullable)]
    relaxed: String,
    #[schema(schema_with = custom_schema)]
    #[serde(with = "custom_bytes")]
    bytes: Vec<u8>,
}

mod custom_bytes {
    pub fn serialize<S: serde::Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:?}"))
    }
    pub fn deserialize<'de, D: serde::Deserializer<'de>>(_: D) -> Result<Vec<u8>, D::Error> {
        Ok(Vec::new())
    }
}

#[derive(CrdSchema, Serialize, Deserialize)]
struct Named {
    name: String,
}

#[test]
fn validation_attributes() {
    let s = schema::<Validated>();
    let p = &s["properties"];
    assert_eq!(
        s["x-kubernetes-validations"],
        json!([{"rule": "self.low <= self.high", "message": "low must not exceed high"}])
    );
    assert_eq!(s["maxProperties"], 20);
    assert_eq!(
        p["low"],
        json!({"type": "integer", "format": "int32", "minimum": 0, "maximum": 10, "exclusiveMaximum": true, "multipleOf": 2})
    );
    assert_eq!(
        p["high"],
        json!({"type": "integer", "format": "int32", "minimum": -5, "default": 4})
    );
    assert_eq!(
        p["host"],
        json!({"type": "string", "pattern": "^[a-z]+$", "minLength": 1, "maxLength": 8, "format": "hostname"})
    );
    assert_eq!(
        p["letter"],
        json!({"type": "string", "enum": ["a", "b"], "default": "a"})
    );
    assert_eq!(p["ports"]["x-kubernetes-list-type"], "map");
    assert_eq!(p["ports"]["x-kubernetes-list-map-keys"], json!(["name"]));
    assert_eq!(
        (&p["ports"]["minItems"], &p["ports"]["maxItems"]),
        (&json!(1), &json!(3))
    );
    assert_eq!(
        p["xs"],
        json!({"type": "array", "items": {"type": "string", "pattern": "^x"}, "x-kubernetes-list-type": "atomic"})
    );
    assert_eq!(
        p["labels"],
        json!({"type": "object", "minProperties": 1, "additionalProperties": {"type": "string", "maxLength": 3}})
    );
    assert_eq!(p["selector"]["x-kubernetes-map-type"], "atomic");
    assert_eq!(p["free"]["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(
        p["raw"],
        json!({"x-kubernetes-preserve-unknown-fields": true})
    );
    assert_eq!(
        p["template"],
        json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-embedded-resource": true})
    );
    assert_eq!(
        p["amount"],
        json!({"anyOf": [{"type": "integer"}, {"type": "string"}], "x-kubernetes-int-or-string": true})
    );
    assert_eq!(
        p["ruled"]["x-kubernetes-validations"],
        json!([
            {"rule": "self != 'x'"},
            {"rule": "self.size() < 5", "messageExpression": "'too long: ' + self", "reason": "FieldValueForbidden", "fieldPath": ".x"},
        ])
    );
    assert_eq!(p["withDefault"]["default"], json!({"name": "d"}));
    assert_eq!(p["withDefault"]["description"], "Overrides the doc.");
    assert!(p["withDefault"].get("nullable").is_none());
    assert_eq!(p["relaxed"]["nullable"], true);
    assert_eq!(p["bytes"], json!({"type": "string", "format": "byte"}));
    assert_eq!(
        s["required"],
        json!([
            "low", "host", "letter", "ports", "xs", "labels", "selector", "free", "raw",
            "template", "amount", "ruled", "forced", "bytes"
        ])
    );
}

#[derive(CrdSchema, Serialize, Deserialize)]
struct Generic<T> {
    value: T,
    values: Vec<T>,
}

#[test]
fn generic_types_take_their_parameters_schemas() {
    assert_eq!(
        schema::<Generic<bool>>()["properties"]["values"]["items"],
        json!({"type": "boolean"})
    );
}

#[derive(CrdSchema, Serialize, Deserialize)]
struct Tree {
    children: Vec<Tree>,
}

#[test]
#[should_panic(expected = "contains itself")]
fn recursive_types_are_refused() {
    schema::<Tree>();
}

#[derive(CrdSchema, Serialize, Deserialize)]
struct Clash {
    name: String,
    #[serde(flatten)]
    named: Named,
}

#[test]
#[should_panic(expected = "two fields are written as `name`")]
fn two_fields_of_one_name_are_refused() {
    schema::<Clash>();
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(tag = "kind")]
enum Conflicting {
    A { size: i32 },
    B { size: String },
}

#[test]
#[should_panic(expected = "two variants give the property `size` different schemas")]
fn internally_tagged_variants_must_agree_on_shared_properties() {
    schema::<Conflicting>();
}

#[derive(CrdSchema, Serialize, Deserialize)]
struct ItemsOnAScalar {
    #[schema(items(min_length = 1))]
    name: String,
}

#[test]
#[should_panic(expected = "`items(...)` needs an array")]
fn items_attributes_need_an_array() {
    schema::<ItemsOnAScalar>();
}

#[derive(CrdSchema, Serialize, Deserialize)]
#[serde(tag = "type")]
enum NewtypeScalar {
    Name(String),
}

#[test]
#[should_panic(expected = "variant `Name` is not a struct")]
fn internally_tagged_newtype_variants_must_be_structs() {
    schema::<NewtypeScalar>();
}
