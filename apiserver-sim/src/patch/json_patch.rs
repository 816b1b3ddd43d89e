//! JSON Patch (RFC 6902): `application/json-patch+json`.
//!
//! Plays the role of the `evanphx/json-patch` library kube-apiserver applies JSON patches
//! with: operations `add`, `remove`, `replace`, `move`, `copy`, `test` on RFC 6901 pointers
//! (`~0`, `~1` escapes, `-` for the end of an array). A patch document that is no array is
//! an error of the request ([`PatchError::Malformed`], 400); an operation that cannot be
//! applied, unknown or missing its `op` or `path` ([`PatchError::Failed`]), 422 as the real
//! server answers; a missing `value` is `null`.
//!
//! One request cannot exhaust the server's memory or stack: a patch has at most
//! [`MAX_OPERATIONS`] operations (kube-apiserver's `maxJSONPatchOperations`), and the
//! patched document may grow to at most [`MAX_RESULT_BYTES`] of JSON and nest at most
//! [`MAX_DEPTH`] levels; past either the patch is refused with 413 ([`PatchError::TooLarge`])
//! before the document is built. `copy` doubles a document with each operation, so these
//! are checked on every operation, not at the end. The size is counted as it grows (every
//! value an operation inserts is added, nothing removed is subtracted), as evanphx's
//! `AccumulatedCopySizeLimit` counts copies: an estimate that can only be too high (a `move`
//! adds nothing, but its new place counts for the depth).
//! Differences: kube-apiserver bounds the result by its request and etcd limits (3 MiB and
//! 1.5 MiB) and its JSON decoder by 10,000 levels; the simulator's request bodies nest at
//! most serde_json's 128 levels, so a patch may not build anything deeper.

use serde_json::Value;

/// The most operations one JSON patch may have (kube-apiserver's `maxJSONPatchOperations`).
pub const MAX_OPERATIONS: usize = 10_000;
/// The most bytes of JSON a patched document may reach (the server's default request limit).
pub const MAX_RESULT_BYTES: usize = 3 * 1024 * 1024;
/// The deepest nesting a patched document may reach (what the request decoder accepts).
pub const MAX_DEPTH: usize = 128;

/// Why a patch was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document itself is invalid.
    #[error("{0}")]
    Malformed(String),
    /// The patch could not be applied to the object.
    #[error("{0}")]
    Failed(String),
    /// The patch has too many operations, or would make the document too large or too deep.
    #[error("{0}")]
    TooLarge(String),
    /// A plain error of the patch library (a strategic merge patch's list item without its
    /// merge key, an unknown `$patch`): kube-apiserver answers 500 with the message alone.
    #[error("{0}")]
    Unclassified(String),
}

/// The size (bytes of compact JSON) and depth (levels of arrays and objects; a scalar is 0)
/// of `value`, walked without recursion.
fn measure(value: &Value) -> (usize, usize) {
    let mut size = 0usize;
    let mut depth = 0;
    let mut stack = vec![(value, 0usize)];
    while let Some((value, level)) = stack.pop() {
        size = size.saturating_add(match value {
            Value::Null => 4,
            Value::Bool(_) => 5,
            Value::Number(n) => n.to_string().len(),
            Value::String(s) => s.len() + 2,
            Value::Array(a) => {
                stack.extend(a.iter().map(|v| (v, level + 1)));
                2 + a.len()
            }
            Value::Object(m) => {
                stack.extend(m.values().map(|v| (v, level + 1)));
                2 + m.keys().map(|k| k.len() + 4).sum::<usize>()
            }
        });
        if value.is_array() || value.is_object() {
            depth = depth.max(level + 1);
        }
    }
    (size, depth)
}

/// The size the document has grown to, checked against the limits as values are inserted.
struct Growth {
    size: usize,
}

impl Growth {
    /// Accounts for `value` inserted at `path` (moved there, not added, when `moved`).
    fn insert(&mut self, path: &[String], value: &Value, moved: bool) -> Result<(), PatchError> {
        let (size, depth) = measure(value);
        if path.len() + depth > MAX_DEPTH {
            return Err(PatchError::TooLarge(format!(
                "the patched object would nest deeper than {MAX_DEPTH} levels"
            )));
        }
        if !moved {
            self.size = self.size.saturating_add(size);
        }
        if self.size > MAX_RESULT_BYTES {
            return Err(PatchError::TooLarge(format!(
                "the patched object would exceed {MAX_RESULT_BYTES} bytes"
            )));
        }
        Ok(())
    }
}

/// A pointer's tokens, as evanphx/json-patch v4 splits it: at every `/`, the first part
/// dropped whatever it holds (`data/x` is `/x`); `""` and a pointer without `/` name nothing
/// (the operation fails).
fn parse_pointer(p: &str) -> Result<Vec<String>, PatchError> {
    let Some((_, rest)) = p.split_once('/') else {
        return Err(PatchError::Failed(format!(
            "doc is missing path: {p:?}: missing value"
        )));
    };
    Ok(rest
        .split('/')
        .map(|s| s.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn index(token: &str, len: usize, allow_end: bool) -> Result<usize, PatchError> {
    if allow_end && token == "-" {
        return Ok(len);
    }
    let i: usize = token
        .parse()
        .map_err(|_| PatchError::Failed(format!("invalid array index {token:?}")))?;
    let max = if allow_end {
        len
    } else {
        len.saturating_sub(1)
    };
    if i > max || (!allow_end && len == 0) {
        return Err(PatchError::Failed(format!("array index {i} out of bounds")));
    }
    Ok(i)
}

fn get<'a>(doc: &'a Value, path: &[String]) -> Result<&'a Value, PatchError> {
    let mut cur = doc;
    for t in path {
        cur = match cur {
            Value::Object(m) => m.get(t),
            Value::Array(a) => a.get(index(t, a.len(), false)?),
            _ => None,
        }
        .ok_or_else(|| PatchError::Failed(format!("doc is missing path: /{}", path.join("/"))))?;
    }
    Ok(cur)
}

fn parent_mut<'a>(doc: &'a mut Value, path: &[String]) -> Result<&'a mut Value, PatchError> {
    let mut cur = doc;
    for t in &path[..path.len().saturating_sub(1)] {
        cur = match cur {
            Value::Object(m) => m.get_mut(t),
            Value::Array(a) => {
                let i = index(t, a.len(), false)?;
                a.get_mut(i)
            }
            _ => None,
        }
        .ok_or_else(|| PatchError::Failed(format!("doc is missing path: /{}", path.join("/"))))?;
    }
    Ok(cur)
}

fn add(doc: &mut Value, path: &[String], value: Value) -> Result<(), PatchError> {
    let Some(last) = path.last() else {
        *doc = value;
        return Ok(());
    };
    match parent_mut(doc, path)? {
        Value::Object(m) => {
            m.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(a) => {
            let i = index(last, a.len(), true)?;
            a.insert(i, value);
            Ok(())
        }
        _ => Err(PatchError::Failed(format!(
            "doc is missing path: /{}",
            path.join("/")
        ))),
    }
}

fn remove(doc: &mut Value, path: &[String]) -> Result<Value, PatchError> {
    let Some(last) = path.last() else {
        return Err(PatchError::Failed(
            "cannot remove the whole document".into(),
        ));
    };
    let missing = || PatchError::Failed(format!("doc is missing path: /{}", path.join("/")));
    match parent_mut(doc, path)? {
        Value::Object(m) => m.remove(last).ok_or_else(missing),
        Value::Array(a) => {
            let i = index(last, a.len(), false)?;
            Ok(a.remove(i))
        }
        _ => Err(missing()),
    }
}

fn field<'a>(op: &'a Value, name: &str) -> Result<&'a str, PatchError> {
    op.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| PatchError::Failed(format!("operation is missing {name:?}: {op}")))
}

/// Applies a JSON patch document to `doc`.
pub fn apply(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let ops = patch.as_array().ok_or_else(|| {
        PatchError::Malformed("a JSON patch must be an array of operations".into())
    })?;
    if ops.len() > MAX_OPERATIONS {
        return Err(PatchError::TooLarge(format!(
            "The allowed maximum operations in a JSON patch is {MAX_OPERATIONS}, got {}",
            ops.len()
        )));
    }
    let mut growth = Growth {
        size: measure(doc).0,
    };
    for op in ops {
        let path = parse_pointer(field(op, "path")?)?;
        // A missing value is `null`, as evanphx/json-patch reads it.
        let value = || op.get("value").cloned().unwrap_or(Value::Null);
        match field(op, "op")? {
            "add" => {
                let v = value();
                growth.insert(&path, &v, false)?;
                add(doc, &path, v)?;
            }
            "remove" => {
                remove(doc, &path)?;
            }
            "replace" => {
                let v = value();
                growth.insert(&path, &v, false)?;
                if path.is_empty() {
                    *doc = v;
                } else {
                    remove(doc, &path)?;
                    add(doc, &path, v)?;
                }
            }
            "move" => {
                let from = parse_pointer(field(op, "from")?)?;
                let v = remove(doc, &from)?;
                growth.insert(&path, &v, true)?;
                add(doc, &path, v)?;
            }
            "copy" => {
                let from = parse_pointer(field(op, "from")?)?;
                // evanphx/json-patch v4 copies a member missing from an object that
                // exists as `null` (its parent must exist; an array's index must be in
                // range).
                let v = match get(doc, &from) {
                    Ok(v) => v.clone(),
                    Err(e) => match (from.last(), parent_mut(doc, &from)) {
                        (Some(_), Ok(Value::Object(_))) => Value::Null,
                        _ => return Err(e),
                    },
                };
                growth.insert(&path, &v, false)?;
                add(doc, &path, v)?;
            }
            "test" => {
                if *get(doc, &path)? != value() {
                    return Err(PatchError::Failed(format!(
                        "testing value /{} failed: test failed",
                        path.join("/")
                    )));
                }
            }
            other => {
                return Err(PatchError::Failed(format!(
                    "unexpected kind of operation {other:?}"
                )));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc6902_operations() {
        let mut d = json!({"a": {"b": [1, 2]}, "c": "x"});
        let p = json!([
            {"op": "add", "path": "/a/b/-", "value": 3},
            {"op": "add", "path": "/a/b/0", "value": 0},
            {"op": "replace", "path": "/c", "value": "y"},
            {"op": "copy", "from": "/c", "path": "/d~1e"},
            {"op": "move", "from": "/a/b", "path": "/list"},
            {"op": "remove", "path": "/a"},
            {"op": "test", "path": "/list/3", "value": 3}
        ]);
        apply(&mut d, &p).unwrap();
        assert_eq!(d, json!({"c": "y", "d/e": "y", "list": [0, 1, 2, 3]}));
        assert!(matches!(
            apply(&mut d, &json!([{"op":"remove","path":"/nope"}])),
            Err(PatchError::Failed(_))
        ));
        assert!(matches!(
            apply(&mut d, &json!([{"op":"test","path":"/c","value":"z"}])),
            Err(PatchError::Failed(_))
        ));
        assert!(matches!(
            apply(&mut d, &json!({"op":"add"})),
            Err(PatchError::Malformed(_))
        ));
        assert!(matches!(
            apply(&mut d, &json!([{"op":"jump","path":"/c"}])),
            Err(PatchError::Failed(_))
        ));
        // As evanphx/json-patch v4 (kube-apiserver 1.36.2): `""` names nothing, and a
        // pointer's first part is dropped whatever it holds.
        let mut whole = json!({"a": 1});
        assert!(matches!(
            apply(
                &mut whole,
                &json!([{"op": "replace", "path": "", "value": {"b": 2}}])
            ),
            Err(PatchError::Failed(_))
        ));
        apply(
            &mut whole,
            &json!([{"op": "add", "path": "data/b", "value": 2}]),
        )
        .unwrap();
        assert_eq!(whole, json!({"a": 1, "b": 2}));
        assert!(matches!(
            apply(&mut d, &json!([{"op":"add","path":"/list/9","value":1}])),
            Err(PatchError::Failed(_))
        ));
    }

    #[test]
    fn a_json_patch_has_at_most_max_operations() {
        let op = json!({"op": "test", "path": "/a", "value": 1});
        let mut d = json!({"a": 1});
        apply(&mut d, &Value::Array(vec![op.clone(); MAX_OPERATIONS])).unwrap();
        let err = apply(&mut d, &Value::Array(vec![op; MAX_OPERATIONS + 1])).unwrap_err();
        assert!(matches!(err, PatchError::TooLarge(_)), "{err}");
    }

    #[test]
    fn a_json_patch_cannot_grow_the_document_past_max_result_bytes() {
        // Each copy doubles the array: 12 of them make 4 MiB of a 1 KiB string.
        let ops: Vec<Value> = (0..12)
            .map(|_| json!({"op": "copy", "from": "/a", "path": "/a/-"}))
            .collect();
        let mut d = json!({"a": ["x".repeat(1024)]});
        let err = apply(&mut d, &Value::Array(ops)).unwrap_err();
        assert!(matches!(err, PatchError::TooLarge(_)), "{err}");
        assert!(
            measure(&d).0 <= 2 * MAX_RESULT_BYTES,
            "refused before it grew"
        );
        // Growing to just under the limit is fine.
        let big = "x".repeat(MAX_RESULT_BYTES / 2);
        let mut d = json!({});
        apply(
            &mut d,
            &json!([{"op": "add", "path": "/big", "value": big}]),
        )
        .unwrap();
    }

    #[test]
    fn a_json_patch_cannot_nest_the_document_past_max_depth() {
        // Copying a value into itself nests it one level deeper each time.
        let ops: Vec<Value> = (0..MAX_DEPTH)
            .map(|_| json!({"op": "copy", "from": "/a", "path": "/a/a"}))
            .collect();
        let mut d = json!({"a": {}});
        let err = apply(&mut d, &Value::Array(ops)).unwrap_err();
        assert!(
            matches!(err, PatchError::TooLarge(ref m) if m.contains("deeper")),
            "{err}"
        );
        assert!(measure(&d).1 <= MAX_DEPTH);
        // A move deeper counts too.
        let mut d = json!({"a": {"b": {}}, "c": {"d": {}}});
        let deep_path = format!("/a/b{}", "/x".repeat(MAX_DEPTH));
        let err = apply(
            &mut d,
            &json!([{"op": "add", "path": "/c/d/x", "value": {}}, {"op": "move", "from": "/c", "path": deep_path}]),
        )
        .unwrap_err();
        assert!(
            matches!(err, PatchError::TooLarge(_) | PatchError::Failed(_)),
            "{err}"
        );
    }

    #[test]
    fn measure_counts_compact_json_and_levels() {
        let v = json!({"a": [1, "xy", null, {"b": true}]});
        assert_eq!(measure(&v).1, 3);
        assert!(measure(&v).0 >= serde_json::to_vec(&v).unwrap().len());
        assert_eq!(measure(&json!(1)), (1, 0));
    }
}
