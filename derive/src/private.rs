//! What the derives' generated code calls: schema assembly for struct fields, flattening,
//! enums, the `#[schema(...)]` attributes, and the recursion guard. Not a stable API.
//!
//! controller-tools does this inside its generator (`crd/schema.go`, `markers/validation.go`);
//! here the derive emits a short list of calls and the logic lives in ordinary, unit-tested
//! Rust, so that the generated code stays small and the rules live in one place.
//!
//! Kubernetes' structural-schema rules decide what is refused: one `type` per node (except
//! `x-kubernetes-int-or-string` and `x-kubernetes-preserve-unknown-fields`), no `type`,
//! `description`, `default` or `nullable` inside `oneOf`/`anyOf`, and every property named
//! inside them also named outside. What the derive cannot see at compile time (the shape
//! behind a newtype variant, two variants giving one property two schemas) is refused here
//! with a panic naming the type, when the CRD is built: in a test or in `crdgen`, never
//! while a controller runs.

use std::cell::RefCell;

use serde_json::{Map, Value, json};

pub use crate::enums::{external_enum, internal_enum, unit_enum, untagged_enum};
pub use clientgo_apimachinery as apimachinery;
pub use serde;
pub use serde_json;

/// One `#[schema(...)]` item, applied to a field's (or a type's) schema.
#[derive(Debug, Clone)]
pub enum Attr {
    /// Sets a key (`minimum`, `pattern`, `default`, `x-kubernetes-list-type`, ...).
    Set(&'static str, Value),
    /// Appends an `x-kubernetes-validations` rule.
    Validation(Value),
    /// Applies to the `items` schema of an array.
    Items(Vec<Attr>),
    /// Applies to the `additionalProperties` schema of a map.
    Values(Vec<Attr>),
    /// `x-kubernetes-int-or-string: true`, with the `anyOf` controller-tools writes.
    IntOrString,
    /// `x-kubernetes-embedded-resource: true`: an object with its own apiVersion, kind and
    /// metadata.
    EmbeddedResource,
}

/// Applies `attrs` to `schema` (in order; later keys win).
pub fn apply(schema: &mut Value, attrs: &[Attr], owner: &str) {
    for attr in attrs {
        match attr {
            Attr::Set(key, value) => {
                schema[*key] = value.clone();
            }
            Attr::Validation(rule) => {
                let rules = schema
                    .as_object_mut()
                    .expect("a schema is an object")
                    .entry("x-kubernetes-validations")
                    .or_insert_with(|| Value::Array(Vec::new()));
                rules.as_array_mut().expect("an array").push(rule.clone());
            }
            Attr::Items(inner) => match schema.get_mut("items") {
                Some(items) => apply(items, inner, owner),
                None => panic!("{owner}: `items(...)` needs an array (a schema with `items`)"),
            },
            Attr::Values(inner) => match schema.get_mut("additionalProperties") {
                Some(values) if values.is_object() => apply(values, inner, owner),
                _ => panic!(
                    "{owner}: `values(...)` needs a map (a schema with `additionalProperties`)"
                ),
            },
            Attr::IntOrString => {
                let map = schema.as_object_mut().expect("a schema is an object");
                map.remove("type");
                map.remove("format");
                map.insert(
                    "anyOf".into(),
                    json!([{"type": "integer"}, {"type": "string"}]),
                );
                map.insert("x-kubernetes-int-or-string".into(), true.into());
            }
            Attr::EmbeddedResource => {
                let map = schema.as_object_mut().expect("a schema is an object");
                map.insert("type".into(), "object".into());
                map.insert("x-kubernetes-embedded-resource".into(), true.into());
                // The metadata of an embedded resource is validated as ObjectMeta by the
                // server; its schema may say nothing but `type: object`.
                if let Some(meta) = map
                    .get_mut("properties")
                    .and_then(|p| p.get_mut("metadata"))
                {
                    *meta = json!({"type": "object"});
                }
            }
        }
    }
}

/// A field of a struct (or of a struct variant), as the derive saw it.
#[derive(Debug, Clone)]
pub struct Field {
    /// The JSON name, after serde's renames.
    pub name: &'static str,
    /// The field type's schema.
    pub schema: Value,
    /// The type is `Option<T>`.
    pub optional: bool,
    /// `#[serde(default)]` on the field or its container: absent is fine.
    pub defaulted: bool,
    /// `#[serde(skip_serializing_if = ...)]`: we may omit it, so it cannot be required.
    pub skippable: bool,
    /// The field's doc comment.
    pub description: Option<&'static str>,
    /// Its `#[schema(...)]` items.
    pub attrs: Vec<Attr>,
    /// `#[schema(required)]` / `#[schema(required = false)]`.
    pub required: Option<bool>,
    /// `#[schema(nullable)]` / `#[schema(nullable = false)]`.
    pub nullable: Option<bool>,
}

/// The schema of a struct being assembled: properties in declaration order, `required`.
#[derive(Debug)]
pub struct Object {
    owner: &'static str,
    properties: Map<String, Value>,
    required: Vec<String>,
    /// `x-kubernetes-validations` of flattened structs.
    rules: Vec<Value>,
}

impl Object {
    /// An empty object schema for the type named `owner` (named in panics).
    pub fn new(owner: &'static str) -> Object {
        Object {
            owner,
            properties: Map::new(),
            required: Vec::new(),
            rules: Vec::new(),
        }
    }

    fn insert(&mut self, name: &str, schema: Value) {
        if self.properties.insert(name.to_owned(), schema).is_some() {
            panic!(
                "{}: two fields are written as `{name}` (a rename or a flattened struct): a schema has one property per name",
                self.owner
            );
        }
    }

    /// Adds a field: its schema with its description and attributes; required unless
    /// optional, defaulted or skippable (or as `#[schema(required)]` says); nullable when it
    /// is an `Option` serde writes as `null` (no `skip_serializing_if`).
    pub fn field(&mut self, field: Field) {
        let mut schema = field.schema;
        if let Some(description) = field.description {
            schema["description"] = description.into();
        }
        apply(&mut schema, &field.attrs, self.owner);
        let nullable = field.nullable.unwrap_or(field.optional && !field.skippable);
        if nullable {
            schema["nullable"] = true.into();
        }
        let required = field
            .required
            .unwrap_or(!(field.optional || field.defaulted || field.skippable));
        if required {
            self.required.push(field.name.to_owned());
        }
        self.insert(field.name, schema);
    }

    /// Merges a `#[serde(flatten)]`ed struct's schema: its properties, and its `required`
    /// unless the field is an `Option`. Its validation rules move up too (they see the same
    /// object).
    pub fn flatten(&mut self, schema: Value, optional: bool) {
        let Value::Object(mut inner) = schema else {
            panic!(
                "{}: a flattened field's schema is not an object",
                self.owner
            )
        };
        let Some(Value::Object(properties)) = inner.remove("properties") else {
            if inner.get("type") == Some(&"object".into())
                && !inner.contains_key("additionalProperties")
            {
                return;
            }
            panic!(
                "{}: a flattened field must be a struct with named fields: Kubernetes structural schemas cannot have both `properties` and `additionalProperties`",
                self.owner
            )
        };
        for (name, property) in properties {
            self.insert(&name, property);
        }
        if !optional {
            if let Some(Value::Array(required)) = inner.remove("required") {
                self.required.extend(
                    required
                        .into_iter()
                        .filter_map(|r| r.as_str().map(str::to_owned)),
                );
            }
        }
        if let Some(Value::Array(rules)) = inner.remove("x-kubernetes-validations") {
            if optional {
                panic!(
                    "{}: a flattened `Option` of a struct with validation rules: the rules would see its fields absent; put them on the enclosing struct",
                    self.owner
                );
            }
            self.rules.extend(rules);
        }
    }

    /// The finished `type: object` schema, with the type's description and attributes.
    pub fn finish(self, description: Option<&str>, attrs: &[Attr]) -> Value {
        let mut map = Map::new();
        map.insert("type".into(), "object".into());
        if let Some(description) = description {
            map.insert("description".into(), description.into());
        }
        if !self.properties.is_empty() {
            map.insert("properties".into(), Value::Object(self.properties));
        }
        if !self.required.is_empty() {
            map.insert("required".into(), self.required.into());
        }
        if !self.rules.is_empty() {
            map.insert("x-kubernetes-validations".into(), self.rules.into());
        }
        let mut schema = Value::Object(map);
        apply(&mut schema, attrs, self.owner);
        schema
    }
}

thread_local! {
    /// The types whose schema is being built on this thread, outermost first.
    static BUILDING: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

/// Pops the innermost type, also when building it panicked.
struct Pop;

impl Drop for Pop {
    fn drop(&mut self) {
        BUILDING.with(|b| b.borrow_mut().pop());
    }
}

/// Builds `T`'s schema with `build`, refusing recursion: a structural schema is a tree
/// without references (`$ref` is forbidden), so a type that contains itself has none.
pub fn guard<T: ?Sized>(build: impl FnOnce() -> Value) -> Value {
    let name = std::any::type_name::<T>();
    BUILDING.with(|b| {
        let mut building = b.borrow_mut();
        if building.contains(&name) {
            let path = building.join(" -> ");
            panic!(
                "`{name}` contains itself ({path} -> {name}): a CRD schema is a tree without references, so a recursive type cannot be written down; make the recursive field a `serde_json::Value` (x-kubernetes-preserve-unknown-fields) or give it `#[schema(schema_with = ...)]`"
            );
        }
        building.push(name);
    });
    let _pop = Pop;
    build()
}

/// `serde_json::to_value` for `default = <expr>`, panicking with the owner's name.
pub fn to_value<T: serde::Serialize + ?Sized>(value: &T, owner: &str) -> Value {
    serde_json::to_value(value)
        .unwrap_or_else(|e| panic!("{owner}: a `#[schema]` value does not serialize: {e}"))
}

/// A type's schema finished: its description (doc comment) and `#[schema(...)]` attributes.
pub fn finish(mut schema: Value, description: Option<&str>, attrs: &[Attr], owner: &str) -> Value {
    if let Some(description) = description {
        schema["description"] = description.into();
    }
    apply(&mut schema, attrs, owner);
    schema
}
