//! The fields a create's `Update` entry owns, written as `FieldsV1` in one walk of the new
//! object.
//!
//! A create owns every node the object sets, less the nodes of the type's zero value, the
//! identity fields no manager owns and the subtrees the write never owns (status where it
//! is a subresource, ...). [`super::record_update`] computes that for any write with field
//! sets (the comparison of the old and new objects, then set differences, then the
//! encoding); for a create, the most common write by far, that is several tries built and
//! copied per object. This module gives the same `FieldsV1` straight from the object, the
//! sets it leaves out consulted as the walk goes (they are a few shallow paths), so that
//! creates cost little more than their JSON.
//!
//! Mirrors the same structured-merge-diff semantics as [`super::walk::compare_maps`] with
//! no old object (`typed.TypedValue.Compare` of an added object); the tests check the two
//! agree.

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, PathElement};
use super::schema::{Shape, field_shape};
use super::walk::{effective, items, present};

/// Where the walk is in the sets of nodes left out: `excluded` nodes are no member
/// themselves (their children may be), `ignored` nodes are left out with all below them.
#[derive(Clone, Copy)]
struct Cursor<'a> {
    excluded: [Option<&'a FieldSet>; 2],
    ignored: Option<&'a FieldSet>,
}

impl<'a> Cursor<'a> {
    fn step(&self, element: &PathElement) -> Cursor<'a> {
        Cursor {
            excluded: self.excluded.map(|s| s.and_then(|s| s.child(element))),
            ignored: self.ignored.and_then(|s| s.child(element)),
        }
    }

    fn step_field(&self, name: &str) -> Cursor<'a> {
        if self.excluded.iter().all(Option::is_none) && self.ignored.is_none() {
            return *self;
        }
        self.step(&PathElement::Field(name.to_owned()))
    }
}

/// The `FieldsV1` of the fields a create of `obj` owns: every node it sets but those of
/// `zero` and `stripped` (not members themselves) and those under `ignored`.
pub fn fields_v1(
    builtin: bool,
    obj: &Map<String, Value>,
    zero: &FieldSet,
    stripped: &FieldSet,
    ignored: &FieldSet,
) -> Map<String, Value> {
    let cursor = Cursor {
        excluded: [Some(zero), Some(stripped)],
        ignored: Some(ignored),
    };
    entries(builtin, &mut Vec::new(), Shape::Struct, obj, cursor)
}

/// The encoded children of an object of `kind` (a struct or a map).
fn entries<'v>(
    builtin: bool,
    names: &mut Vec<&'v str>,
    kind: Shape,
    map: &'v Map<String, Value>,
    cursor: Cursor<'_>,
) -> Map<String, Value> {
    let mut out = Map::new();
    for (key, child) in map {
        if key == "managedFields" && names.as_slice() == ["metadata"] {
            continue;
        }
        let below = cursor.step_field(key);
        if below.ignored.is_some_and(|s| s.contains(&[])) {
            continue;
        }
        let shape = if kind == Shape::Map {
            Shape::Atomic
        } else {
            field_shape(builtin, names, key)
        };
        names.push(key);
        let node = node(builtin, names, shape, child, below);
        names.pop();
        if let Some(node) = node {
            out.insert(format!("f:{key}"), node);
        }
    }
    out
}

/// The encoded node of `value` (of `shape`), or `None` when it owns nothing.
fn node<'v>(
    builtin: bool,
    names: &mut Vec<&'v str>,
    shape: Shape,
    value: &'v Value,
    cursor: Cursor<'_>,
) -> Option<Value> {
    let value = present(builtin, shape, Some(value))?;
    let mut children = match effective(shape, value) {
        kind @ (Shape::Struct | Shape::Map) => match value {
            Value::Object(map) => entries(builtin, names, kind, map, cursor),
            _ => Map::new(),
        },
        list @ (Shape::Keyed(_) | Shape::Set) => {
            let item_shape = if list == Shape::Set {
                Shape::Atomic
            } else {
                Shape::Struct
            };
            let mut out = Map::new();
            for (element, item) in items(list, Some(value)).unwrap_or_default() {
                let below = cursor.step(&element);
                let encoded = element.encode();
                // A repeated key or value is one node: the first item's.
                if out.contains_key(&encoded) || below.ignored.is_some_and(|s| s.contains(&[])) {
                    continue;
                }
                if let Some(n) = node(builtin, names, item_shape, item, below) {
                    out.insert(encoded, n);
                }
            }
            out
        }
        Shape::Atomic => Map::new(),
    };
    let member = !cursor.excluded.iter().flatten().any(|s| s.contains(&[]));
    if member && !children.is_empty() {
        children.insert(".".into(), Value::Object(Map::new()));
    }
    (member || !children.is_empty()).then_some(Value::Object(children))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::managed_fields::walk::compare_maps;
    use serde_json::json;

    /// What `record_update` computes with sets for a create.
    fn by_sets(
        builtin: bool,
        obj: &Map<String, Value>,
        zero: &FieldSet,
        ignored: &FieldSet,
    ) -> Value {
        let mut c = compare_maps(builtin, None, obj);
        c.added = c.added.difference(zero);
        c.filter(ignored);
        c.added
            .difference(crate::managed_fields::managers::stripped())
            .to_fields_v1()
    }

    #[test]
    fn one_walk_gives_what_the_sets_give() {
        let f = |s: &str| PathElement::Field(s.to_owned());
        let mut zero = FieldSet::new();
        zero.insert(&[f("spec"), f("template"), f("metadata")]);
        zero.insert(&[f("spec"), f("strategy")]);
        zero.insert(&[f("status")]);
        let mut ignored = FieldSet::new();
        ignored.insert(&[f("status")]);
        let objects = [
            json!({"apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "d", "namespace": "n", "labels": {"a": "b"}, "annotations": {},
                    "finalizers": ["x/y", "x/y", "z"], "uid": "u",
                    "ownerReferences": [{"uid": "1", "name": "o"}, {"name": "no-uid"}],
                    "managedFields": [{"manager": "m"}]},
                "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                    "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%"}},
                    "template": {"metadata": {"labels": {"app": "d"}},
                        "spec": {"containers": [
                            {"name": "c", "image": "i", "ports": [{"containerPort": 80},
                                {"containerPort": 80, "protocol": "UDP"}],
                             "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
                             "resources": {}, "args": ["a", "b"]},
                            {"image": "no-name"}],
                          "securityContext": {}, "nodeSelector": {}, "tolerations": [{"key": "k"}]}}},
                "status": {"replicas": 0}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"},
                "data": {"k": "v", "n": null}, "binaryData": {}}),
            json!({"metadata": {"name": "e", "labels": null}, "spec": {"x": [], "y": {}, "z": null}}),
        ];
        for obj in &objects {
            let obj = obj.as_object().unwrap();
            for builtin in [true, false] {
                assert_eq!(
                    Value::Object(fields_v1(
                        builtin,
                        obj,
                        &zero,
                        crate::managed_fields::managers::stripped(),
                        &ignored
                    )),
                    by_sets(builtin, obj, &zero, &ignored),
                    "builtin {builtin}: {}",
                    Value::Object(obj.clone())
                );
            }
        }
    }
}
