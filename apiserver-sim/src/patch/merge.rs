//! JSON Merge Patch (RFC 7386): `application/merge-patch+json`.
//!
//! Plays the role of `evanphx/json-patch`'s `MergePatch` in kube-apiserver: objects merge
//! key by key, `null` deletes a key, anything else (lists included) replaces.

use serde_json::{Map, Value};

/// Applies a merge patch to `target`.
pub fn apply(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    if let Value::Object(t) = target {
        for (k, v) in p {
            if v.is_null() {
                t.remove(k);
            } else {
                apply(t.entry(k.clone()).or_insert(Value::Null), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc7386_examples() {
        let mut d = json!({"a": "b", "c": {"d": "e", "f": "g"}, "l": [1, 2]});
        apply(
            &mut d,
            &json!({"a": "z", "c": {"f": null}, "l": [3], "n": {"x": 1}}),
        );
        assert_eq!(
            d,
            json!({"a": "z", "c": {"d": "e"}, "l": [3], "n": {"x": 1}})
        );
        let mut d = json!([1]);
        apply(&mut d, &json!({"a": 1}));
        assert_eq!(d, json!({"a": 1}));
    }
}
