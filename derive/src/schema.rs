//! [`CrdSchema`]: the structural OpenAPI v3 schema of a Rust type, and its impls for the
//! standard library's types, `serde_json::Value` and clientgo-apimachinery's `ObjectMeta`,
//! `Time` and `MicroTime`.
//!
//! Mirrors controller-tools' `crd/schema.go` type walk (Go types to `JSONSchemaProps`) and
//! its `known_types.go`. Where it differs, and why: a trait implemented per type instead of a
//! walk over the Go AST, because Rust has no reflection (the derive writes the walk for user
//! types); a schema is a `serde_json::Value`, not a typed `JSONSchemaProps`, so that users need
//! no k8s-openapi version and a schema can carry any extension the API server knows.
//!
//! Shapes: integers are `type: integer` with `format: int32` (8, 16 and 32 bit signed, 8 and
//! 16 bit unsigned) or `int64` (the rest), unsigned ones with `minimum: 0` (serde refuses
//! negatives, so the server should too); floats `number` with `float`/`double`; sequences and
//! sets `array` with `items` (sets of scalars also `x-kubernetes-list-type: set`); string-keyed
//! maps `object` with `additionalProperties`; `Option<T>` is `T`'s schema, marked
//! [`optional`](CrdSchema::optional) so a field of it is not `required`; smart pointers are
//! their target; `serde_json::Value` is `x-kubernetes-preserve-unknown-fields: true`.
//! Tuples have no impl: a structural schema has one `items` schema, so `(A, B)` cannot be
//! written down.

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, LinkedList, VecDeque};
use std::rc::Rc;
use std::sync::Arc;

use serde_json::{Map, Value, json};

/// The structural OpenAPI v3 schema of a type, as used in a CustomResourceDefinition.
///
/// Derive it with `#[derive(CrdSchema)]` (see the crate documentation for the attributes),
/// or implement it by hand for a type whose serialized shape the derive cannot see (one with
/// a hand-written `Serialize`). A hand-written schema must be structural: one `type` per
/// node (or `x-kubernetes-int-or-string` / `x-kubernetes-preserve-unknown-fields`), no
/// `$ref`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no CRD schema (no `CrdSchema` impl)",
    note = "derive it with `#[derive(CrdSchema)]`, or implement `CrdSchema` by hand for a type with a hand-written `Serialize`",
    note = "tuples have no schema: a structural schema has a single `items` schema per array"
)]
pub trait CrdSchema {
    /// The schema, a JSON object such as `{"type": "string"}`.
    fn crd_schema() -> Value;

    /// Whether a field of this type may be absent: `true` for `Option<T>` only. Such a field
    /// is not `required`.
    fn optional() -> bool {
        false
    }
}

/// Types whose schema is an object with `properties`, which `#[serde(flatten)]` can merge
/// into the enclosing struct's schema.
///
/// Implemented by `#[derive(CrdSchema)]` for structs with named fields, and for `Option` of
/// such types (whose flattened fields are then all optional). Maps are not: a structural
/// schema cannot have `properties` and `additionalProperties` side by side.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be flattened into a CRD schema",
    note = "only structs with named fields (deriving `CrdSchema`) flatten: Kubernetes structural schemas cannot have both `properties` and `additionalProperties`, so a flattened map has no schema"
)]
pub trait CrdFlatten: CrdSchema {}

impl<T: CrdFlatten> CrdFlatten for Option<T> {}

macro_rules! scalar {
    ($schema:expr => $($ty:ty),+) => {
        $(impl CrdSchema for $ty {
            fn crd_schema() -> Value {
                $schema
            }
        })+
    };
}

scalar!(json!({"type": "boolean"}) => bool);
scalar!(json!({"type": "integer", "format": "int32"}) => i8, i16, i32);
scalar!(json!({"type": "integer", "format": "int32", "minimum": 0}) => u8, u16);
scalar!(json!({"type": "integer", "format": "int64"}) => i64, i128, isize);
scalar!(json!({"type": "integer", "format": "int64", "minimum": 0}) => u32, u64, u128, usize);
scalar!(json!({"type": "number", "format": "float"}) => f32);
scalar!(json!({"type": "number", "format": "double"}) => f64);
scalar!(json!({"type": "string"}) => String, str);
scalar!(json!({"type": "string", "minLength": 1, "maxLength": 1}) => char);
scalar!(json!({"x-kubernetes-preserve-unknown-fields": true}) => Value);
scalar!(json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true}) => Map<String, Value>);
scalar!(json!({"type": "string", "format": "date-time"}) => clientgo_apimachinery::Time, clientgo_apimachinery::MicroTime);
scalar!(object_meta() => clientgo_apimachinery::ObjectMeta);

/// The schema of an `ObjectMeta` nested below the root (the root's `metadata` is the API
/// server's own, `type: object` only): the fields a client sets, so that pruning keeps them.
pub(crate) fn object_meta() -> Value {
    let strings = json!({"type": "object", "additionalProperties": {"type": "string"}});
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "generateName": {"type": "string"},
            "namespace": {"type": "string"},
            "labels": strings,
            "annotations": strings,
        },
    })
}

impl<T: CrdSchema> CrdSchema for Option<T> {
    fn crd_schema() -> Value {
        T::crd_schema()
    }
    fn optional() -> bool {
        true
    }
}

macro_rules! pointer {
    ($($ty:ty),+) => {
        $(impl<T: CrdSchema + ?Sized> CrdSchema for $ty {
            fn crd_schema() -> Value {
                T::crd_schema()
            }
            fn optional() -> bool {
                T::optional()
            }
        })+
    };
}

pointer!(Box<T>, Rc<T>, Arc<T>, &T, &mut T, RefCell<T>);

impl<T: CrdSchema + ToOwned + ?Sized> CrdSchema for Cow<'_, T> {
    fn crd_schema() -> Value {
        T::crd_schema()
    }
    fn optional() -> bool {
        T::optional()
    }
}

/// `{"type": "array", "items": ...}`.
fn array_of<T: CrdSchema + ?Sized>() -> Value {
    json!({"type": "array", "items": T::crd_schema()})
}

/// An array of unique items: `x-kubernetes-list-type: set` when the items are scalars (the
/// API server allows sets of scalars only).
fn set_of<T: CrdSchema + ?Sized>() -> Value {
    let mut schema = array_of::<T>();
    let scalar = !matches!(
        schema["items"].get("type").and_then(Value::as_str),
        Some("object" | "array") | None
    );
    if scalar {
        schema["x-kubernetes-list-type"] = "set".into();
    }
    schema
}

macro_rules! sequence {
    ($($ty:ty),+) => {
        $(impl<T: CrdSchema> CrdSchema for $ty {
            fn crd_schema() -> Value {
                array_of::<T>()
            }
        })+
    };
}

sequence!(Vec<T>, VecDeque<T>, LinkedList<T>);

impl<T: CrdSchema> CrdSchema for [T] {
    fn crd_schema() -> Value {
        array_of::<T>()
    }
}

impl<T: CrdSchema, const N: usize> CrdSchema for [T; N] {
    fn crd_schema() -> Value {
        let mut schema = array_of::<T>();
        schema["minItems"] = N.into();
        schema["maxItems"] = N.into();
        schema
    }
}

impl<T: CrdSchema> CrdSchema for BTreeSet<T> {
    fn crd_schema() -> Value {
        set_of::<T>()
    }
}

impl<T: CrdSchema, S> CrdSchema for HashSet<T, S> {
    fn crd_schema() -> Value {
        set_of::<T>()
    }
}

/// Keys a map may have in a schema: they serialize as JSON object keys (strings).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be the key of a map in a CRD schema",
    note = "JSON object keys are strings: use `String` (or an integer, which serde writes as a string)"
)]
pub trait CrdMapKey {}

macro_rules! map_key {
    ($($ty:ty),+) => { $(impl CrdMapKey for $ty {})+ };
}

map_key!(
    String,
    str,
    Cow<'_, str>,
    Box<str>,
    Rc<str>,
    Arc<str>,
    char,
    bool
);
map_key!(
    i8, i16, i32, i64, i128, isize, u8, u16, u32, u64, u128, usize
);
impl<K: CrdMapKey + ?Sized> CrdMapKey for &K {}

/// `{"type": "object", "additionalProperties": ...}`.
fn map_of<V: CrdSchema + ?Sized>() -> Value {
    json!({"type": "object", "additionalProperties": V::crd_schema()})
}

impl<K: CrdMapKey, V: CrdSchema> CrdSchema for BTreeMap<K, V> {
    fn crd_schema() -> Value {
        map_of::<V>()
    }
}

impl<K: CrdMapKey, V: CrdSchema, S> CrdSchema for HashMap<K, V, S> {
    fn crd_schema() -> Value {
        map_of::<V>()
    }
}
