//! Strategic merge patch: `application/strategic-merge-patch+json`, for built-in types.
//!
//! Ports the behaviour of `apimachinery/pkg/util/strategicpatch` for the resources this
//! server serves: maps merge like a JSON merge patch (`null` deletes), but lists with a
//! merge key (`containers` by `name`, `volumeMounts` by `mountPath`, ...) merge item by item
//! in the order `strategic_list` gives them, lists with the `merge` strategy on primitives
//! (`finalizers`) are unions, and the directives `$patch: replace` / `$patch: delete`,
//! `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>` and `$retainKeys` work as
//! there. Any other `$` key is an ordinary field, which the built-in types then drop as
//! unknown (`pruning`). A list the object has is checked before merging into it as
//! `mergeSlice` checks it: an item without its merge key, an unknown `$patch` or items of
//! different types answer kube-apiserver's 500 with the Go library's message
//! (`map: map[image:busybox] does not contain declared merge key: name`); a list the object
//! lacks is taken from the patch. Difference: the merge keys come from a table keyed by
//! field name, not from Go struct tags.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::json_patch::PatchError;
use super::strategic_list;
use crate::go_text;

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

pub(super) fn strip_directives(v: &Value) -> Value {
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

pub(super) fn merge_map(target: &mut Value, patch: &Map<String, Value>) -> Result<(), PatchError> {
    match patch.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = strip_directives(&Value::Object(patch.clone()));
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Object(Map::new());
            return Ok(());
        }
        Some(other) => return Err(bad_patch_type(other, patch)),
        _ => {}
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let Value::Object(t) = target else {
        return Ok(());
    };
    strategic_list::retain_keys(t, patch)?;
    let ordered = strategic_list::set_element_orders(
        t,
        patch,
        |list, items, field| merge_list(list, items, strategy(field)),
        |field| match strategy(field) {
            ListStrategy::MergeKey(key) => Some(key),
            _ => None,
        },
    )?;
    for (k, v) in patch {
        if k == "$patch"
            || k == "$retainKeys"
            || k.starts_with("$setElementOrder/")
            || ordered.contains(k)
        {
            continue;
        }
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let remove: HashSet<String> =
                v.as_array().into_iter().flatten().map(identity).collect();
            if let Some(Value::Array(items)) = t.get_mut(field) {
                items.retain(|i| !remove.contains(&identity(i)));
            }
            continue;
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

/// A value as a hashable key: its JSON text, equal for equal primitives (what merge keys and
/// primitive lists hold).
pub(super) fn identity(value: &Value) -> String {
    match value {
        Value::String(s) => format!("s{s}"),
        other => format!("j{other}"),
    }
}

/// `mergepatch.ErrBadPatchType`.
fn bad_patch_type(t: &str, item: &Map<String, Value>) -> PatchError {
    PatchError::Unclassified(format!(
        "unknown patch type: {t} in map: {}",
        go_text::go_value(&Value::Object(item.clone()))
    ))
}

/// `mergepatch.ErrNoMergeKey`.
fn no_merge_key(item: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::Unclassified(format!(
        "map: {} does not contain declared merge key: {key}",
        go_text::go_value(&Value::Object(item.clone()))
    ))
}

/// The Go type of a decoded JSON value, as `sliceElementType` compares them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum GoType {
    Nil,
    Bool,
    /// A number with a fraction or an exponent.
    Float64,
    /// A whole number.
    Int64,
    String,
    Slice,
    Map,
}

fn go_type(v: &Value) -> GoType {
    match v {
        Value::Null => GoType::Nil,
        Value::Bool(_) => GoType::Bool,
        Value::Number(n) if n.is_f64() => GoType::Float64,
        Value::Number(_) => GoType::Int64,
        Value::String(_) => GoType::String,
        Value::Array(_) => GoType::Slice,
        Value::Object(_) => GoType::Map,
    }
}

/// What `mergeSlice` checks of a list the object has before merging into it: all items of
/// both lists of one type (`sliceElementType`), and for lists merged by `key` the
/// directives of the patch's items (`mergeSliceWithSpecialElements`) and every other item
/// carrying the key.
fn check_existing_list(
    items: &[Value],
    patch: &[Value],
    strategy: ListStrategy,
) -> Result<(), PatchError> {
    if items.is_empty() && patch.is_empty() {
        return Ok(());
    }
    let mut types = items.iter().chain(patch).map(go_type);
    let first = types.next();
    if first == Some(GoType::Slice) {
        return Err(PatchError::Failed(
            "lists of lists are not supported".into(),
        ));
    }
    if types.any(|t| Some(t) != first) {
        let both = Value::Array(vec![
            Value::Array(items.to_vec()),
            Value::Array(patch.to_vec()),
        ]);
        return Err(PatchError::Unclassified(format!(
            "list element types are not identical: {}",
            go_text::go_value(&both)
        )));
    }
    let ListStrategy::MergeKey(key) = strategy else {
        return Ok(());
    };
    for item in patch.iter().filter_map(Value::as_object) {
        match item.get("$patch") {
            None if !item.contains_key(key) => return Err(no_merge_key(item, key)),
            None => {}
            Some(Value::String(t)) if t == "delete" && !item.contains_key(key) => {
                return Err(no_merge_key(item, key));
            }
            Some(Value::String(t)) if t == "delete" || t == "replace" => {}
            Some(Value::String(t)) if t == "merge" => {
                return Err(PatchError::Unclassified(
                    "merging lists cannot yet be specified in the patch".into(),
                ));
            }
            Some(t) => return Err(bad_patch_type(&go_text::go_value(t), item)),
        }
    }
    Ok(())
}

fn merge_list(
    target: &mut Value,
    patch: &[Value],
    strategy: ListStrategy,
) -> Result<(), PatchError> {
    if let Value::Array(items) = target {
        check_existing_list(items, patch, strategy)?;
    }
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
            let mut seen: HashSet<String> = items.iter().map(identity).collect();
            for v in patch {
                if seen.insert(identity(v)) {
                    items.push(v.clone());
                }
            }
        }
        ListStrategy::MergeKey(key) => {
            *items = strategic_list::merge_keyed(std::mem::take(items), patch, key)?;
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
                "$setElementOrder/containers": [{"name": "new"}, {"name": "app"}],
                "containers": [
                    {"name": "new", "image": "new:1"},
                    {"name": "side", "$patch": "delete"},
                    {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}]}],
                "tolerations": [{"key": "j"}]}}),
        )
        .unwrap();
        assert_eq!(
            pod,
            json!({"metadata": {"finalizers": ["a", "b"], "labels": {"y": "2"}},
            "spec": {"containers": [
                // In `$setElementOrder`'s order; `env` (no directive): the patch's new item
                // before the server's, as kube-apiserver 1.36.2 orders them.
                {"name": "new", "image": "new:1"},
                {"name": "app", "image": "app:2", "env": [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]}],
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

    /// The messages of kube-apiserver 1.36.2 (500, no reason) to these patches of a Pod
    /// with one container `{"name": "a", "image": "nginx"}`.
    #[test]
    fn existing_lists_are_checked_as_kube_apiserver_checks_them() {
        let pod = json!({"spec": {"containers": [{"name": "a", "image": "nginx"}]}});
        let err = |patch: Value| {
            let mut p = pod.clone();
            match apply(&mut p, &patch) {
                Err(PatchError::Unclassified(m)) => m,
                other => panic!("{patch}: {other:?}"),
            }
        };
        assert_eq!(
            err(json!({"spec": {"containers": [{"image": "busybox"}]}})),
            "map: map[image:busybox] does not contain declared merge key: name"
        );
        assert_eq!(
            err(json!({"spec": {"containers": [{"$patch": "delete"}]}})),
            "map: map[$patch:delete] does not contain declared merge key: name"
        );
        assert_eq!(
            err(json!({"spec": {"$patch": "foo"}})),
            "unknown patch type: foo in map: map[$patch:foo]"
        );
        assert_eq!(
            err(json!({"spec": {"containers": [{"name": "a", "$patch": "foo"}]}})),
            "unknown patch type: foo in map: map[$patch:foo name:a]"
        );
        assert_eq!(
            err(json!({"spec": {"containers": [1]}})),
            "list element types are not identical: [[map[image:nginx name:a]] [1]]"
        );
        // A list the object does not have is the patch's, merge key or not.
        let mut p = pod.clone();
        apply(
            &mut p,
            &json!({"metadata": {"ownerReferences": [{"name": "x"}]}}),
        )
        .unwrap();
        assert_eq!(p["metadata"]["ownerReferences"], json!([{"name": "x"}]));
        // Lists of lists are refused before any merge.
        let mut p = json!({"spec": {"args": [["a"]]}});
        assert!(matches!(
            apply(&mut p, &json!({"spec": {"args": [["b"]]}})),
            Err(PatchError::Failed(m)) if m == "lists of lists are not supported"
        ));
    }
}

/// The indexed merge against the straightforward one it replaced (a scan of both lists for
/// every patch item), on seeded random lists with repeated keys, deletes and primitives.
#[cfg(test)]
mod against_scans {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// A direct port of `mergeSlice` for lists of maps (scans of the lists for every
    /// item, `sort.SliceStable` and `mergeSortedSlice`): O(n * m).
    fn scan_merge(items: &mut Vec<Value>, patch: &[Value], key: &str) -> Result<(), PatchError> {
        let mut original = items.clone();
        let mut plain = Vec::new();
        for p in patch {
            if p.get("$patch").and_then(Value::as_str) == Some("delete") {
                original.retain(|i| i.get(key) != p.get(key));
            } else {
                plain.push(p.clone());
            }
        }
        let mut merged = original.clone();
        for p in &plain {
            let Value::Object(pm) = p else {
                unreachable!("generated patches hold objects")
            };
            match merged.iter().position(|i| i.get(key) == p.get(key)) {
                Some(i) => merge_map(&mut merged[i], pm)?,
                None => merged.push(strip_directives(p)),
            }
        }
        let index =
            |list: &[Value], item: &Value| list.iter().position(|i| i.get(key) == item.get(key));
        let (mut patch_items, mut server_only): (Vec<Value>, Vec<Value>) =
            merged.into_iter().partition(|i| index(&plain, i).is_some());
        patch_items.sort_by_key(|i| index(&plain, i));
        server_only.sort_by_key(|i| index(&original, i));
        let (mut l, mut r) = (0, 0);
        let mut out = Vec::new();
        while l < server_only.len() || r < patch_items.len() {
            let left = if l >= server_only.len() {
                false
            } else if r >= patch_items.len() {
                true
            } else {
                match (
                    index(&original, &server_only[l]),
                    index(&original, &patch_items[r]),
                ) {
                    (Some(a), Some(b)) => a < b,
                    _ => false,
                }
            };
            if left {
                out.push(server_only[l].clone());
                l += 1;
            } else {
                out.push(patch_items[r].clone());
                r += 1;
            }
        }
        *items = out;
        Ok(())
    }

    fn item() -> impl Strategy<Value = Value> {
        (0..6u8, 0..4u8, any::<bool>()).prop_map(|(name, value, numeric)| {
            let name = if numeric {
                json!(name)
            } else {
                json!(format!("n{name}"))
            };
            json!({"name": name, "v": value})
        })
    }

    fn patch_item() -> impl Strategy<Value = Value> {
        (item(), 0..4u8).prop_map(|(mut item, what)| {
            match what {
                0 => item["$patch"] = json!("delete"),
                1 => item["extra"] = json!({"x": what}),
                _ => {}
            }
            item
        })
    }

    fn config() -> ProptestConfig {
        let seed = std::env::var("PROPTEST_RNG_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_0001_u64);
        eprintln!("proptest seed {seed} (set PROPTEST_RNG_SEED to change it)");
        ProptestConfig {
            cases: 512,
            rng_seed: proptest::test_runner::RngSeed::Fixed(seed),
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn merging_by_key_matches_the_scan(
            server in proptest::collection::vec(item(), 0..12),
            patch in proptest::collection::vec(patch_item(), 0..12),
        ) {
            let mut indexed = json!({"containers": server.clone()});
            let result = apply(&mut indexed, &json!({"containers": patch.clone()}));
            let mut scanned = server;
            let expected = scan_merge(&mut scanned, &patch, "name");
            prop_assert_eq!(result.is_ok(), expected.is_ok());
            if result.is_ok() {
                prop_assert_eq!(&indexed["containers"], &Value::Array(scanned));
            }
        }

        #[test]
        fn unions_and_deletes_of_primitives_match_the_scan(
            server in proptest::collection::vec(0..8u8, 0..10),
            added in proptest::collection::vec(0..8u8, 0..10),
            removed in proptest::collection::vec(0..8u8, 0..4),
        ) {
            let words = |v: &[u8]| v.iter().map(|n| json!(format!("f{n}"))).collect::<Vec<_>>();
            let mut object = json!({"metadata": {"finalizers": words(&server)}});
            apply(&mut object, &json!({"metadata": {"finalizers": words(&added)}})).unwrap();
            let mut expected = words(&server);
            for v in words(&added) {
                if !expected.contains(&v) {
                    expected.push(v);
                }
            }
            prop_assert_eq!(&object["metadata"]["finalizers"], &Value::Array(expected.clone()));
            let directive = json!({"metadata": {"$deleteFromPrimitiveList/finalizers": words(&removed)}});
            apply(&mut object, &directive).unwrap();
            expected.retain(|v| !words(&removed).contains(v));
            prop_assert_eq!(&object["metadata"]["finalizers"], &Value::Array(expected));
        }
    }
}
