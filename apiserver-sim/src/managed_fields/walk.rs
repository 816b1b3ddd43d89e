//! Walking objects along their shapes: the set of fields an object sets, the fields that
//! differ between two versions of an object, and removing fields from an object.
//!
//! Mirrors structured-merge-diff's `typed.TypedValue.ToFieldSet` (what an applied
//! configuration owns: scalars, atomic values, map keys, list items, empty objects),
//! `typed.TypedValue.Compare` (added, modified and removed paths, every node of an added or
//! removed subtree included, atomic values compared whole) and `RemoveItems`.
//! Differences: a JSON `null` counts as absent, and for built-in types an empty map counts
//! as absent too (Go drops it when it encodes the object).

use serde_json::{Map, Value};

use super::fieldset::{FieldSet, Path, PathElement};
use super::schema::{Shape, field_shape};

/// Added, modified and removed paths between two versions of an object.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Paths only in the new version.
    pub added: FieldSet,
    /// Leaves (and atomic values) whose value changed.
    pub modified: FieldSet,
    /// Paths only in the old version.
    pub removed: FieldSet,
}

impl Comparison {
    /// Drops every path under the members of `ignored`.
    pub fn filter(&mut self, ignored: &FieldSet) {
        if ignored.is_empty() {
            return;
        }
        for set in [&mut self.added, &mut self.modified, &mut self.removed] {
            *set = set.without_subtrees(ignored);
        }
    }

    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.modified.is_empty() && self.removed.is_empty()
    }
}

struct Walker<'a> {
    builtin: bool,
    names: Vec<&'a str>,
    path: Path,
}

pub(super) fn present(builtin: bool, shape: Shape, v: Option<&Value>) -> Option<&Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::Object(m)) if builtin && shape == Shape::Map && m.is_empty() => None,
        Some(v) => Some(v),
    }
}

/// What a value of `shape` is, given the JSON it holds.
pub(super) fn effective(shape: Shape, v: &Value) -> Shape {
    match (shape, v) {
        (Shape::Struct | Shape::Map, Value::Object(_)) => shape,
        (Shape::Keyed(_) | Shape::Set, Value::Array(_)) => shape,
        _ => Shape::Atomic,
    }
}

/// The path element of a list item, or `None` when it cannot have one (the list is then
/// taken as atomic).
fn item_element(shape: Shape, item: &Value) -> Option<PathElement> {
    match shape {
        Shape::Set => match item {
            Value::Object(_) | Value::Array(_) | Value::Null => None,
            v => Some(PathElement::Value(v.to_string())),
        },
        Shape::Keyed(keys) => {
            let obj = item.as_object()?;
            let mut key = Map::new();
            for (name, default) in keys {
                match (obj.get(*name), default) {
                    (Some(v), _) if !v.is_null() => key.insert((*name).into(), v.clone()),
                    (_, Some(d)) => key.insert((*name).into(), Value::String((*d).into())),
                    _ => return None,
                };
            }
            Some(PathElement::Key(Value::Object(key).to_string()))
        }
        _ => None,
    }
}

pub(super) fn items(shape: Shape, v: Option<&Value>) -> Option<Vec<(PathElement, &Value)>> {
    let Some(Value::Array(list)) = v else {
        return Some(Vec::new());
    };
    list.iter()
        .map(|item| item_element(shape, item).map(|e| (e, item)))
        .collect()
}

impl<'a> Walker<'a> {
    fn child_shape(&self, key: &str) -> Shape {
        field_shape(self.builtin, &self.names, key)
    }

    fn collect_set(&mut self, shape: Shape, v: &'a Value, out: &mut FieldSet) {
        match effective(shape, v) {
            Shape::Struct | Shape::Map => {
                let Value::Object(map) = v else { return };
                for (key, child) in map {
                    let child_shape = if shape == Shape::Map {
                        Shape::Atomic
                    } else {
                        self.child_shape(key)
                    };
                    if present(self.builtin, child_shape, Some(child)).is_none() {
                        if child.is_null() || child.as_object().is_some_and(Map::is_empty) {
                            self.path.push(PathElement::Field(key.clone()));
                            out.insert(&self.path);
                            self.path.pop();
                        }
                        continue;
                    }
                    self.path.push(PathElement::Field(key.clone()));
                    self.names.push(key);
                    self.collect_set(child_shape, child, out);
                    let empty = child.as_object().is_some_and(Map::is_empty);
                    if shape == Shape::Map || empty {
                        out.insert(&self.path);
                    }
                    self.names.pop();
                    self.path.pop();
                }
            }
            list @ (Shape::Keyed(_) | Shape::Set) => match items(list, Some(v)) {
                Some(items) => {
                    for (element, item) in items {
                        self.path.push(element);
                        self.collect_set(Shape::Struct, item, out);
                        out.insert(&self.path);
                        self.path.pop();
                    }
                }
                None => out.insert(&self.path),
            },
            Shape::Atomic => out.insert(&self.path),
        }
    }

    fn compare_entries(
        &mut self,
        kind: Shape,
        om: Option<&'a Map<String, Value>>,
        nm: Option<&'a Map<String, Value>>,
        c: &mut Comparison,
    ) {
        let mut keys: Vec<&'a String> = om.into_iter().flat_map(Map::keys).collect();
        keys.extend(
            nm.into_iter()
                .flat_map(Map::keys)
                .filter(|k| !om.is_some_and(|m| m.contains_key(*k))),
        );
        for key in keys {
            if key == "managedFields" && self.names.as_slice() == ["metadata"] {
                continue;
            }
            let child_shape = if kind == Shape::Map {
                Shape::Atomic
            } else {
                self.child_shape(key)
            };
            self.path.push(PathElement::Field(key.clone()));
            self.names.push(key);
            let oc = om.and_then(|m| m.get(key.as_str()));
            let nc = nm.and_then(|m| m.get(key.as_str()));
            self.compare(child_shape, oc, nc, c);
            self.names.pop();
            self.path.pop();
        }
    }

    fn compare(
        &mut self,
        shape: Shape,
        old: Option<&'a Value>,
        new: Option<&'a Value>,
        c: &mut Comparison,
    ) {
        let (o, n) = (
            present(self.builtin, shape, old),
            present(self.builtin, shape, new),
        );
        let shape_o = o.map(|v| effective(shape, v));
        let shape_n = n.map(|v| effective(shape, v));
        let kind = match (shape_o, shape_n) {
            (Some(a), Some(b)) if a != b => Shape::Atomic,
            (Some(a), _) | (None, Some(a)) => a,
            (None, None) => return,
        };
        match kind {
            Shape::Struct | Shape::Map => {
                self.compare_entries(
                    kind,
                    o.and_then(Value::as_object),
                    n.and_then(Value::as_object),
                    c,
                );
            }
            list @ (Shape::Keyed(_) | Shape::Set) => match (items(list, o), items(list, n)) {
                (Some(oi), Some(ni)) => {
                    let mut elements: Vec<&PathElement> = oi.iter().map(|(e, _)| e).collect();
                    elements.extend(
                        ni.iter()
                            .map(|(e, _)| e)
                            .filter(|e| !oi.iter().any(|(o, _)| o == *e)),
                    );
                    for element in elements {
                        let oc = oi.iter().find(|(e, _)| e == element).map(|(_, v)| *v);
                        let nc = ni.iter().find(|(e, _)| e == element).map(|(_, v)| *v);
                        self.path.push(element.clone());
                        let item_shape = if list == Shape::Set {
                            Shape::Atomic
                        } else {
                            Shape::Struct
                        };
                        self.compare(item_shape, oc, nc, c);
                        self.path.pop();
                    }
                }
                _ => {
                    if o.is_some() && n.is_some() && o != n {
                        c.modified.insert(&self.path);
                    }
                }
            },
            Shape::Atomic => {
                if o.is_some() && n.is_some() && o != n {
                    c.modified.insert(&self.path);
                }
            }
        }
        match (o, n) {
            (None, Some(_)) => c.added.insert(&self.path),
            (Some(_), None) => c.removed.insert(&self.path),
            _ => {}
        }
    }
}

/// The fields `obj` sets, as an applied configuration owns them.
pub fn to_field_set(builtin: bool, obj: &Value) -> FieldSet {
    let mut out = FieldSet::new();
    let mut w = Walker {
        builtin,
        names: Vec::new(),
        path: Vec::new(),
    };
    w.collect_set(Shape::Struct, obj, &mut out);
    out
}

/// What changed from `old` to `new` (`None`: no object yet); `metadata.managedFields` is
/// never compared.
pub fn compare_maps(
    builtin: bool,
    old: Option<&Map<String, Value>>,
    new: &Map<String, Value>,
) -> Comparison {
    let mut c = Comparison::default();
    let mut w = Walker {
        builtin,
        names: Vec::new(),
        path: Vec::new(),
    };
    w.compare_entries(Shape::Struct, old, Some(new), &mut c);
    c
}

#[cfg(test)]
fn compare(builtin: bool, old: Option<&Value>, new: &Value) -> Comparison {
    let empty = Map::new();
    compare_maps(
        builtin,
        old.and_then(Value::as_object),
        new.as_object().unwrap_or(&empty),
    )
}

/// Removes the members of `set` from `obj` (list items by key or value, fields by name).
pub fn remove(builtin: bool, obj: &mut Value, set: &FieldSet) {
    for path in set.paths().iter().rev() {
        remove_path(obj, path);
    }
    if let (true, Value::Object(map)) = (builtin, obj) {
        drop_empty_maps(map);
    }
}

/// Drops the empty maps (labels, annotations, data, ...) of a built-in object, as Go's
/// encoder omits them.
pub fn drop_empty_maps(obj: &mut Map<String, Value>) {
    drop_empty(obj, &mut Vec::new());
}

fn remove_path(obj: &mut Value, path: &[PathElement]) {
    let Some((last, parent)) = path.split_last() else {
        return;
    };
    let mut node = obj;
    for element in parent {
        let next = match (element, node) {
            (PathElement::Field(name), Value::Object(map)) => map.get_mut(name),
            (PathElement::Index(i), Value::Array(list)) => list.get_mut(*i),
            (e @ (PathElement::Key(_) | PathElement::Value(_)), Value::Array(list)) => {
                list.iter_mut().find(|item| matches_element(e, item))
            }
            _ => None,
        };
        match next {
            Some(n) => node = n,
            None => return,
        }
    }
    match (last, node) {
        (PathElement::Field(name), Value::Object(map)) => {
            map.remove(name);
        }
        (PathElement::Index(i), Value::Array(list)) if *i < list.len() => {
            list.remove(*i);
        }
        (e @ (PathElement::Key(_) | PathElement::Value(_)), Value::Array(list)) => {
            list.retain(|item| !matches_element(e, item));
        }
        _ => {}
    }
}

fn matches_element(e: &PathElement, item: &Value) -> bool {
    match e {
        PathElement::Value(v) => serde_json::from_str::<Value>(v).is_ok_and(|want| want == *item),
        PathElement::Key(k) => serde_json::from_str::<Map<String, Value>>(k).is_ok_and(|key| {
            key.iter().all(|(name, want)| match item.get(name) {
                Some(have) => have == want,
                // A key field left to its default.
                None => want.is_string(),
            })
        }),
        _ => false,
    }
}

fn drop_empty(map: &mut Map<String, Value>, names: &mut Vec<String>) {
    let parent: Vec<&str> = names.iter().map(String::as_str).collect();
    map.retain(|k, child| {
        !(field_shape(true, &parent, k) == Shape::Map
            && child.as_object().is_some_and(Map::is_empty))
    });
    for (k, child) in map.iter_mut() {
        if let Value::Object(inner) = child {
            names.push(k.clone());
            drop_empty(inner, names);
            names.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn created_by_update_owns_every_new_node() {
        // Observed on kube-apiserver 1.36.2 (a ConfigMap created by curl).
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c1", "labels": {"a": "b"}, "finalizers": ["x/y"]},
            "data": {"k": "v"}});
        let c = compare(true, None, &cm);
        let fields = c.added.union(&c.modified);
        assert_eq!(fields.to_fields_v1()["f:data"], json!({".": {}, "f:k": {}}));
        assert_eq!(
            fields.to_fields_v1()["f:metadata"]["f:finalizers"],
            json!({".": {}, "v:\"x/y\"": {}})
        );
    }

    #[test]
    fn an_applied_configuration_owns_its_leaves() {
        let cfg = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"},
            "data": {"a": "1"}});
        assert_eq!(
            to_field_set(true, &cfg).to_fields_v1(),
            json!({"f:apiVersion": {}, "f:data": {"f:a": {}}, "f:kind": {},
                "f:metadata": {"f:name": {}}})
        );
        let deploy = json!({"spec": {"selector": {"matchLabels": {"a": "b"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "i",
                "ports": [{"containerPort": 80}]}]}}}});
        assert_eq!(
            to_field_set(true, &deploy).to_fields_v1(),
            json!({"f:spec": {"f:selector": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"c\"}": {".": {}, "f:image": {}, "f:name": {}, "f:ports": {
                    "k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}}}}}})
        );
    }

    #[test]
    fn compare_finds_changes_and_removals() {
        let old = json!({"data": {"a": "1", "b": "2"}, "metadata": {"labels": {"x": "y"}}});
        let new = json!({"data": {"a": "3", "c": "4"}, "metadata": {}});
        let c = compare(true, Some(&old), &new);
        assert_eq!(c.modified.to_fields_v1(), json!({"f:data": {"f:a": {}}}));
        assert_eq!(c.added.to_fields_v1(), json!({"f:data": {"f:c": {}}}));
        assert_eq!(
            c.removed.to_fields_v1(),
            json!({"f:data": {"f:b": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}})
        );
    }

    #[test]
    fn remove_takes_fields_and_items_out() {
        let mut obj = json!({"data": {"a": "1", "b": "2"}, "metadata": {"finalizers": ["x", "y"]}});
        let mut set = FieldSet::new();
        set.insert(&[
            PathElement::Field("data".into()),
            PathElement::Field("a".into()),
        ]);
        set.insert(&[
            PathElement::Field("data".into()),
            PathElement::Field("b".into()),
        ]);
        set.insert(&[
            PathElement::Field("metadata".into()),
            PathElement::Field("finalizers".into()),
            PathElement::Value("\"x\"".into()),
        ]);
        remove(true, &mut obj, &set);
        assert_eq!(obj, json!({"metadata": {"finalizers": ["y"]}}));
    }
}
