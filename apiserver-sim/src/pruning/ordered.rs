//! A JSON document as written: objects keep their members in order, duplicates included,
//! so that unknown and duplicate fields are reported in the order `sigs.k8s.io/json`'s
//! strict decoder meets them.

use std::collections::HashSet;
use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};

use super::{child_path, field_shape};
use crate::go_strconv::go_quote;

/// A JSON value with its objects' members in document order.
pub enum Node {
    Scalar,
    Array(Vec<Node>),
    Object(Vec<(String, Node)>),
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
        d.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_unit<E>(self) -> Result<Node, E> {
        Ok(Node::Scalar)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Node::Array(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node, A::Error> {
        let mut members = Vec::new();
        while let Some((k, v)) = map.next_entry::<String, Node>()? {
            members.push((k, v));
        }
        Ok(Node::Object(members))
    }
}

/// Appends the unknown and duplicate fields of `node` (of shape `shape`, see
/// `fields.json`) at `path`, in document order.
pub fn walk(node: &Node, shape: &str, path: &str, out: &mut Vec<String>) {
    if shape.is_empty() {
        return;
    }
    match node {
        Node::Array(items) => {
            if let Some(item) = shape.strip_prefix('[') {
                for (i, v) in items.iter().enumerate() {
                    walk(v, item, &format!("{path}[{i}]"), out);
                }
            }
        }
        Node::Object(members) if !shape.starts_with('[') => {
            let map_of = shape.strip_prefix('{');
            let mut seen = HashSet::new();
            for (k, v) in members {
                let child = child_path(path, k);
                if !seen.insert(k.as_str()) {
                    out.push(format!("duplicate field {}", go_quote(&child)));
                }
                match map_of {
                    Some(item) => walk(v, item, &child, out),
                    None => match field_shape(shape, k) {
                        Some(field) => walk(v, field, &child, out),
                        None => out.push(format!("unknown field {}", go_quote(&child))),
                    },
                }
            }
        }
        _ => {}
    }
}
