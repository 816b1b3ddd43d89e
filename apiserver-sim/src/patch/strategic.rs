//! Strategic merge patch: `application/strategic-merge-patch+json`, for built-in types.
//!
//! Ports the behaviour of `apimachinery/pkg/util/strategicpatch` for the resources this
//! server serves: maps merge like a JSON merge patch (`null` deletes), but lists with a
//! merge key (`containers` by `name`, `volumeMounts` by `mountPath`, ...) merge item by item,
//! lists with the `merge` strategy on primitives (`finalizers`) are unions, and the
//! directives `$patch: replace` / `$patch: delete`, `$deleteFromPrimitiveList/<field>` and
//! `$setElementOrder/<field>` are understood (the last one is accepted; items keep the
//! server's order). Differences: the merge keys come from a table keyed by field name, not
//! from Go struct tags; `$retainKeys` is accepted and ignored.

use serde_json::{Map, Value};

use super::json_patch::PatchError;

/// How a list field is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ListStrategy {
    /// Replace the whole list.
    Replace,
    /// Merge items with the same value of this key.
    MergeKey(&'static str),
    /// Union of primitive values.
    Union,
}

fn strategy(field: &str) -> ListStrategy {
    match field {
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "imagePullSecrets"
        | "resourceClaims" => ListStrategy::MergeKey("name"),
        "ports" => ListStrategy::MergeKey("containerPort"),
        "volumeMounts" => ListStrategy::MergeKey("mountPath"),
        "volumeDevices" => ListStrategy::MergeKey("devicePath"),
        "conditions" => ListStrategy::MergeKey("type"),
        "ownerReferences" => ListStrategy::MergeKey("uid"),
        "hostAliases" => ListStrategy::MergeKey("ip"),
        "topologySpreadConstraints" => ListStrategy::MergeKey("topologyKey"),
        "finalizers" => ListStrategy::Union,
        _ => ListStrategy::Replace,
    }
}

fn strip_directives(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| !k.starts_with('$'))
                .map(|(k, v)| (k.clone(), strip_directives(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(strip_directives).collect()),
        other => other.clone(),
    }
}

/// Applies a strategic merge patch to `target`.
pub fn apply(target: &mut Value, patch: &Value) -> Result<(), PatchError> {
    let Value::Object(p) = patch else {
        return Err(PatchError::Malformed(
            "a strategic merge patch must be a JSON object".into(),
        ));
    };
    merge_map(target, p)
}

fn merge_map(target: &mut Value, patch: &Map<String, Value>) -> Result<(), PatchError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = strip_directives(&Value::Object(patch.clone()));
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return Ok(());
        }
        Some(other) if other != "merge" => {
            return Err(PatchError::Malformed(format!(
                "unknown patch type: {other} in map"
            )));
        }
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else {
        return Ok(());
    };
    for (k, v) in patch {
        if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let remove = v.as_array().cloned().unwrap_or_default();
            if let Some(Value::Array(items)) = t.get_mut(field) {
                items.retain(|i| !remove.contains(i));
            }
            continue;
        }
        if k.starts_with('$') {
            return Err(PatchError::Malformed(format!("unknown directive {k}")));
        }
        match v {
            Value::Null => {
                t.remove(k);
            }
            Value::Object(pm) => {
                let entry = t.entry(k.clone()).or_insert(Value::Null);
                merge_map(entry, pm)?;
            }
            Value::Array(items) => {
                let entry = t.entry(k.clone()).or_insert(Value::Null);
                merge_list(entry, items, strategy(k))?;
            }
            other => {
                t.insert(k.clone(), other.clone());
            }
        }
    }
    Ok(())
}

fn merge_list(
    target: &mut Value,
    patch: &[Value],
    strategy: ListStrategy,
) -> Result<(), PatchError> {
    if patch
        .iter()
        .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
    {
        *target = Value::Array(
            patch
                .iter()
                .filter(|i| i.get("$patch").is_none())
                .map(strip_directives)
                .collect(),
        );
        return Ok(());
    }
    if !target.is_array() {
        *target = Value::Array(Vec::new());
    }
    let Value::Array(items) = target else {
        return Ok(());
    };
    match strategy {
        ListStrategy::Replace => {
            *items = patch.iter().map(strip_directives).collect();
        }
        ListStrategy::Union => {
            for v in patch {
                if !items.contains(v) {
                    items.push(v.clone());
                }
            }
        }
        ListStrategy::MergeKey(key) => {
            // The patch's items first, in its order, then the items only the server has,
            // in theirs (strategicpatch's `normalizeElementOrder`).
            let mut patched: Vec<Value> = Vec::new();
            for p in patch {
                let Value::Object(pm) = p else {
                    return Err(PatchError::Malformed(format!(
                        "list items merged by {key:?} must be objects, got {p}"
                    )));
                };
                let id = pm.get(key).cloned().unwrap_or(Value::Null);
                let deleting = pm.get("$patch").and_then(Value::as_str) == Some("delete");
                if let Some(i) = items.iter().position(|i| i.get(key) == Some(&id)) {
                    let mut server = items.remove(i);
                    if !deleting {
                        merge_map(&mut server, pm)?;
                        patched.push(server);
                    }
                } else if let Some(i) = patched.iter().position(|i| i.get(key) == Some(&id)) {
                    if deleting {
                        patched.remove(i);
                    } else {
                        merge_map(&mut patched[i], pm)?;
                    }
                } else if !deleting {
                    patched.push(strip_directives(p));
                }
            }
            patched.append(items);
            *items = patched;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers_merge_by_name_and_directives_work() {
        let mut pod = json!({"metadata": {"finalizers": ["a"], "labels": {"x": "1"}},
            "spec": {"containers": [
                {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}]},
                {"name": "side", "image": "side:1"}],
              "tolerations": [{"key": "k"}]}});
        apply(
            &mut pod,
            &json!({
            "metadata": {"finalizers": ["b"], "labels": {"x": null, "y": "2"}},
            "spec": {
                "$setElementOrder/containers": [{"name": "app"}, {"name": "side"}],
                "containers": [
                    {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]},
                    {"name": "side", "$patch": "delete"},
                    {"name": "new", "image": "new:1"}],
                "tolerations": [{"key": "j"}]}}),
        )
        .unwrap();
        assert_eq!(
            pod,
            json!({"metadata": {"finalizers": ["a", "b"], "labels": {"y": "2"}},
            "spec": {"containers": [
                // The patch's items first (kube-apiserver 1.36.2, `patch/strategic-deployment`).
                {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]},
                {"name": "new", "image": "new:1"}],
              "tolerations": [{"key": "j"}]}})
        );
        apply(
            &mut pod,
            &json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        )
        .unwrap();
        assert_eq!(pod["metadata"]["finalizers"], json!(["b"]));
        apply(
            &mut pod,
            &json!({"spec": {"$patch": "replace", "containers": []}}),
        )
        .unwrap();
        assert_eq!(pod["spec"], json!({"containers": []}));
        assert!(apply(&mut pod, &json!([1])).is_err());
        assert!(apply(&mut pod, &json!({"spec": {"containers": [1]}})).is_err());
    }
}
