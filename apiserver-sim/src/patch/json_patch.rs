//! JSON Patch (RFC 6902): `application/json-patch+json`.
//!
//! Plays the role of the `evanphx/json-patch` library kube-apiserver applies JSON patches
//! with: operations `add`, `remove`, `replace`, `move`, `copy`, `test` on RFC 6901 pointers
//! (`~0`, `~1` escapes, `-` for the end of an array). A malformed patch document is an
//! error of the request ([`PatchError::Malformed`], 400); an operation that cannot be
//! applied ([`PatchError::Failed`], 422 as the real server answers).

use serde_json::Value;

/// Why a patch was not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch document itself is invalid.
    #[error("{0}")]
    Malformed(String),
    /// The patch could not be applied to the object.
    #[error("{0}")]
    Failed(String),
}

fn parse_pointer(p: &str) -> Result<Vec<String>, PatchError> {
    if p.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = p.strip_prefix('/') else {
        return Err(PatchError::Malformed(format!(
            "invalid JSON pointer {p:?}: must start with '/'"
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
        .ok_or_else(|| PatchError::Malformed(format!("operation is missing {name:?}: {op}")))
}

/// Applies a JSON patch document to `doc`.
pub fn apply(doc: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let ops = patch.as_array().ok_or_else(|| {
        PatchError::Malformed("a JSON patch must be an array of operations".into())
    })?;
    for op in ops {
        let path = parse_pointer(field(op, "path")?)?;
        let value = || {
            op.get("value").cloned().ok_or_else(|| {
                PatchError::Malformed(format!("operation is missing \"value\": {op}"))
            })
        };
        match field(op, "op")? {
            "add" => add(doc, &path, value()?)?,
            "remove" => {
                remove(doc, &path)?;
            }
            "replace" => {
                let v = value()?;
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
                add(doc, &path, v)?;
            }
            "copy" => {
                let from = parse_pointer(field(op, "from")?)?;
                let v = get(doc, &from)?.clone();
                add(doc, &path, v)?;
            }
            "test" => {
                if *get(doc, &path)? != value()? {
                    return Err(PatchError::Failed(format!(
                        "testing value /{} failed: test failed",
                        path.join("/")
                    )));
                }
            }
            other => {
                return Err(PatchError::Malformed(format!(
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
            Err(PatchError::Malformed(_))
        ));
        let mut whole = json!({"a": 1});
        apply(
            &mut whole,
            &json!([{"op": "replace", "path": "", "value": {"b": 2}}]),
        )
        .unwrap();
        assert_eq!(whole, json!({"b": 2}));
        assert!(matches!(
            apply(&mut d, &json!([{"op":"add","path":"/list/9","value":1}])),
            Err(PatchError::Failed(_))
        ));
    }
}
