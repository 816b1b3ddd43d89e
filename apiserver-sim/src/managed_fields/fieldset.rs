//! Field sets: the sets of field paths a manager owns, and their `FieldsV1` encoding.
//!
//! Mirrors structured-merge-diff's `fieldpath.Set` and its JSON serialization
//! (`fieldpath/serialize.go`): a trie of path elements, each node a member of the set or
//! only on the way to members. In `FieldsV1` a child is written `f:<name>` (a field),
//! `k:<json object>` (a list item by its merge key), `v:<json>` (an item of a set) or `i:<n>`
//! (a list item by index); `".": {}` marks a node that is itself a member and has children;
//! a member without children is `{}`. Paths print as in conflict messages: `.data.a`,
//! `.spec.containers[name="c"].image`, `.metadata.finalizers[="x"]`.
//!
//! Differences: children are kept in the order of their encoded form (`f:` before `i:`,
//! `k:`, `v:`), which is the order kube-apiserver writes fields in; it differs for indices
//! only, which Kubernetes' own types never use.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One step of a path.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum PathElement {
    /// A field of a struct or a key of a map.
    Field(String),
    /// A list item with this index (lists without keys that are not atomic).
    Index(usize),
    /// A list item by its key fields, as a JSON object (`{"name":"c"}`).
    Key(String),
    /// An item of a set-typed list, as its JSON value.
    Value(String),
}

impl PathElement {
    /// The element as a `FieldsV1` key: `f:name`, `k:{...}`, `v:...`, `i:n`.
    pub fn encode(&self) -> String {
        match self {
            PathElement::Field(name) => format!("f:{name}"),
            PathElement::Index(i) => format!("i:{i}"),
            PathElement::Key(key) => format!("k:{key}"),
            PathElement::Value(v) => format!("v:{v}"),
        }
    }

    fn decode(s: &str) -> Option<PathElement> {
        let (prefix, rest) = s.split_at_checked(2)?;
        Some(match prefix {
            "f:" => PathElement::Field(rest.to_owned()),
            "i:" => PathElement::Index(rest.parse().ok()?),
            "k:" => PathElement::Key(canonical_json(rest)?),
            "v:" => PathElement::Value(canonical_json(rest)?),
            _ => return None,
        })
    }

    /// How the element prints in a path: `.name`, `[name="c"]`, `[="x"]`, `[3]`.
    pub fn display(&self) -> String {
        match self {
            PathElement::Field(name) => format!(".{name}"),
            PathElement::Index(i) => format!("[{i}]"),
            PathElement::Value(v) => format!("[={v}]"),
            PathElement::Key(key) => {
                let parts: Vec<String> = match serde_json::from_str::<Map<String, Value>>(key) {
                    Ok(map) => map.iter().map(|(k, v)| format!("{k}={v}")).collect(),
                    Err(_) => vec![key.clone()],
                };
                format!("[{}]", parts.join(","))
            }
        }
    }
}

/// A JSON text re-serialized compactly (keys as serde_json orders them), or `None`.
fn canonical_json(s: &str) -> Option<String> {
    serde_json::from_str::<Value>(s).ok().map(|v| v.to_string())
}

/// A path: the elements from the object's root.
pub type Path = Vec<PathElement>;

/// Prints a path as kube-apiserver's conflict messages do (`.data.a`).
pub fn path_string(path: &[PathElement]) -> String {
    path.iter().map(PathElement::display).collect()
}

/// A set of paths, as a trie.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    member: bool,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> FieldSet {
        FieldSet::default()
    }

    /// Whether the set has no member.
    pub fn is_empty(&self) -> bool {
        !self.member && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds `path` (the empty path is the root itself).
    pub fn insert(&mut self, path: &[PathElement]) {
        let mut node = self;
        for element in path {
            if !node.children.contains_key(element) {
                node.children.insert(element.clone(), FieldSet::default());
            }
            match node.children.get_mut(element) {
                Some(child) => node = child,
                None => return,
            }
        }
        node.member = true;
    }

    /// `self` without the members of `ignored` and everything under them.
    pub fn without_subtrees(&self, ignored: &FieldSet) -> FieldSet {
        if ignored.is_empty() {
            return self.clone();
        }
        if ignored.member {
            return FieldSet::new();
        }
        let mut out = FieldSet {
            member: self.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            let kept = match ignored.children.get(element) {
                Some(i) => child.without_subtrees(i),
                None => child.clone(),
            };
            if !kept.is_empty() {
                out.children.insert(element.clone(), kept);
            }
        }
        out
    }

    /// Whether `path` is a member.
    pub fn contains(&self, path: &[PathElement]) -> bool {
        let mut node = self;
        for element in path {
            match node.children.get(element) {
                Some(child) => node = child,
                None => return false,
            }
        }
        node.member
    }

    /// The subtree under `element`, if any.
    pub fn child(&self, element: &PathElement) -> Option<&FieldSet> {
        self.children.get(element)
    }

    /// Every member, in order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        self.collect(&mut Vec::new(), &mut out);
        out
    }

    fn collect(&self, prefix: &mut Path, out: &mut Vec<Path>) {
        if self.member {
            out.push(prefix.clone());
        }
        for (element, child) in &self.children {
            prefix.push(element.clone());
            child.collect(prefix, out);
            prefix.pop();
        }
    }

    /// `self ∪ other`.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_in_place(other);
        out
    }

    /// Adds every member of `other`.
    pub fn union_in_place(&mut self, other: &FieldSet) {
        self.member |= other.member;
        for (element, child) in &other.children {
            self.children
                .entry(element.clone())
                .or_default()
                .union_in_place(child);
        }
    }

    /// `self ∖ other`.
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && !other.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            let rest = match other.children.get(element) {
                Some(o) => child.difference(o),
                None => child.clone(),
            };
            if !rest.is_empty() {
                out.children.insert(element.clone(), rest);
            }
        }
        out
    }

    /// `self ∩ other`.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let mut out = FieldSet {
            member: self.member && other.member,
            children: BTreeMap::new(),
        };
        for (element, child) in &self.children {
            if let Some(o) = other.children.get(element) {
                let both = child.intersection(o);
                if !both.is_empty() {
                    out.children.insert(element.clone(), both);
                }
            }
        }
        out
    }

    /// The `FieldsV1` JSON of the set.
    pub fn to_fields_v1(&self) -> Value {
        let mut map = Map::new();
        if self.member && !self.children.is_empty() {
            map.insert(".".into(), Value::Object(Map::new()));
        }
        for (element, child) in &self.children {
            if !child.is_empty() {
                map.insert(element.encode(), child.to_fields_v1());
            }
        }
        Value::Object(map)
    }

    /// Reads a `FieldsV1` JSON; `None` when it is not one.
    pub fn from_fields_v1(v: &Value) -> Option<FieldSet> {
        let map = v.as_object()?;
        let mut set = FieldSet::default();
        for (key, child) in map {
            if key == "." {
                set.member = true;
                continue;
            }
            let element = PathElement::decode(key)?;
            let mut sub = FieldSet::from_fields_v1(child)?;
            if sub.children.is_empty() {
                sub.member = true;
            }
            set.children.insert(element, sub);
        }
        Some(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn f(name: &str) -> PathElement {
        PathElement::Field(name.into())
    }

    #[test]
    fn encodes_as_kube_apiserver_does() {
        // Observed on kube-apiserver 1.36.2: a ConfigMap created with data and a finalizer.
        let encoded = json!({
            "f:data": {".": {}, "f:k": {}},
            "f:metadata": {"f:finalizers": {".": {}, "v:\"x/y\"": {}}},
        });
        let set = FieldSet::from_fields_v1(&encoded).unwrap();
        assert!(set.contains(&[f("data")]));
        assert!(set.contains(&[f("data"), f("k")]));
        assert!(!set.contains(&[f("metadata")]));
        assert!(set.contains(&[
            f("metadata"),
            f("finalizers"),
            PathElement::Value("\"x/y\"".into())
        ]));
        assert_eq!(set.to_fields_v1(), encoded);
        assert_eq!(
            set.paths()
                .iter()
                .map(|p| path_string(p))
                .collect::<Vec<_>>(),
            [
                ".data",
                ".data.k",
                ".metadata.finalizers",
                ".metadata.finalizers[=\"x/y\"]"
            ]
        );
    }

    #[test]
    fn key_paths_print_as_in_conflicts() {
        let p = [
            f("spec"),
            f("containers"),
            PathElement::Key(r#"{"name":"c"}"#.into()),
            f("image"),
        ];
        assert_eq!(path_string(&p), ".spec.containers[name=\"c\"].image");
    }

    #[test]
    fn set_operations() {
        let mut a = FieldSet::new();
        a.insert(&[f("data"), f("a")]);
        a.insert(&[f("data"), f("b")]);
        let mut b = FieldSet::new();
        b.insert(&[f("data"), f("b")]);
        b.insert(&[f("data"), f("c")]);
        assert_eq!(a.intersection(&b).paths(), vec![vec![f("data"), f("b")]]);
        assert_eq!(a.difference(&b).paths(), vec![vec![f("data"), f("a")]]);
        assert_eq!(a.union(&b).paths().len(), 3);
        assert!(a.difference(&a).is_empty());
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_none());
        assert!(FieldSet::from_fields_v1(&json!([])).is_none());
    }
}
