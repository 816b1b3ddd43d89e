//! The order of a strategic merge patch's merged lists, and its `$setElementOrder` and
//! `$retainKeys` directives.
//!
//! Mirrors `apimachinery/pkg/util/strategicpatch`: a list merged by key (`mergeSlice`)
//! first drops the items a `$patch: delete` names (`deleteMatchingEntries`), merges each
//! other patch item into the server's item with its key or appends it
//! (`mergeSliceWithoutSpecialElements`), then enforces the order (`normalizeElementOrder`):
//! the patch's items sorted by the patch's order, the server-only items by the server's,
//! the two interleaved by `mergeSortedSlice` (a server-only item goes first while it comes
//! before the next patch item in the server's list; a patch item the server lacks goes as
//! soon as it is next). `$setElementOrder/<field>` orders the merged list the same way with
//! its own list as the patch's order (`mergePatchIntoOriginal`). `$retainKeys` drops the
//! object's fields it does not list, after checking the patch sets only fields it lists
//! (`applyRetainKeysDirective`). Items are found through indexes by key, so merging n
//! items into m costs O((n + m) log(n + m)).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use super::json_patch::PatchError;
use super::strategic::{identity, merge_map, strip_directives};
use crate::go_text;

/// The identity of a list item: its merge key's value (`key`), else the item itself (a
/// primitive).
fn id_of(item: &Value, key: Option<&str>) -> String {
    match key {
        Some(key) => identity(item.get(key).unwrap_or(&Value::Null)),
        None => identity(item),
    }
}

/// The first position of each identity in `items`.
fn positions(items: &[Value], key: Option<&str>) -> HashMap<String, usize> {
    let mut at = HashMap::new();
    for (i, item) in items.iter().enumerate() {
        at.entry(id_of(item, key)).or_insert(i);
    }
    at
}

/// `normalizeElementOrder`: `patch_items` sorted by `patch_order`, `server_only` by
/// `server_order`, then interleaved by `mergeSortedSlice(serverOnly, patch, serverOrder)`.
fn normalize_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let patch_at = positions(patch_order, key);
    let server_at = positions(server_order, key);
    patch_items.sort_by_key(|i| patch_at.get(&id_of(i, key)).copied().unwrap_or(usize::MAX));
    server_only.sort_by_key(|i| server_at.get(&id_of(i, key)).copied().unwrap_or(usize::MAX));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let l = server_at.get(&id_of(l, key));
                let r = server_at.get(&id_of(r, key));
                matches!((l, r), (Some(l), Some(r)) if l < r)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    out
}

/// Splits `merged` into the items whose identity `order` holds and the others.
fn partition(merged: Vec<Value>, order: &[Value], key: Option<&str>) -> (Vec<Value>, Vec<Value>) {
    let wanted: HashSet<String> = order.iter().map(|i| id_of(i, key)).collect();
    merged
        .into_iter()
        .partition(|item| wanted.contains(&id_of(item, key)))
}

/// `mergeSlice` of a list merged by `key` whose items the caller checked (objects carrying
/// the key, known `$patch` values).
pub fn merge_keyed(
    server: Vec<Value>,
    patch: &[Value],
    key: &str,
) -> Result<Vec<Value>, PatchError> {
    let directive = |p: &Value| p.get("$patch").and_then(Value::as_str).map(str::to_owned);
    if patch
        .iter()
        .any(|p| directive(p).as_deref() == Some("replace"))
    {
        return Ok(patch
            .iter()
            .filter(|p| directive(p).is_none())
            .map(strip_directives)
            .collect());
    }
    let deleted: HashSet<String> = patch
        .iter()
        .filter(|p| directive(p).as_deref() == Some("delete"))
        .map(|p| id_of(p, Some(key)))
        .collect();
    let plain: Vec<Value> = patch
        .iter()
        .filter(|p| directive(p).is_none())
        .cloned()
        .collect();
    let original: Vec<Value> = server
        .into_iter()
        .filter(|i| !deleted.contains(&id_of(i, Some(key))))
        .collect();
    let mut merged = original.clone();
    let mut at = positions(&merged, Some(key));
    for p in &plain {
        let Value::Object(pm) = p else {
            return Err(PatchError::Malformed(format!(
                "list items merged by {key:?} must be objects, got {p}"
            )));
        };
        let id = id_of(p, Some(key));
        match at.get(&id) {
            Some(&i) => merge_map(&mut merged[i], pm)?,
            None => {
                at.insert(id, merged.len());
                merged.push(strip_directives(p));
            }
        }
    }
    let (patch_items, server_only) = partition(merged, &plain, Some(key));
    Ok(normalize_order(
        patch_items,
        server_only,
        &plain,
        &original,
        Some(key),
    ))
}

/// `mergePatchIntoOriginal`: each `$setElementOrder/<field>` of `patch` merges `<field>`
/// (with `merge_list`) and orders the result by the directive's list. Returns the fields
/// done, which the caller skips.
pub fn set_element_orders(
    target: &mut Map<String, Value>,
    patch: &Map<String, Value>,
    merge_list: impl Fn(&mut Value, &[Value], &str) -> Result<(), PatchError>,
    merge_key: impl Fn(&str) -> Option<&'static str>,
) -> Result<HashSet<String>, PatchError> {
    let mut done = HashSet::new();
    for (k, order) in patch {
        let Some(field) = k.strip_prefix("$setElementOrder/") else {
            continue;
        };
        let bad = || PatchError::Malformed("invalid patch format of setElementOrder list".into());
        let Value::Array(order) = order else {
            return Err(bad());
        };
        let original = target.get(field).and_then(Value::as_array).cloned();
        let listed = match patch.get(field) {
            None => None,
            Some(Value::Array(listed)) => Some(listed),
            Some(_) => return Err(bad()),
        };
        let key = merge_key(field);
        if let Some(listed) = listed {
            check_order(listed, order, key)?;
        }
        let merged = match (&original, listed) {
            (None, None) => continue,
            (Some(original), None) => original.clone(),
            (None, Some(listed)) => listed.iter().map(strip_directives).collect(),
            (Some(original), Some(listed)) => {
                let mut value = Value::Array(original.clone());
                merge_list(&mut value, listed, field)?;
                match value {
                    Value::Array(items) => items,
                    _ => Vec::new(),
                }
            }
        };
        let (patch_items, server_only) = partition(merged, order, key);
        let server_order = original.unwrap_or_default();
        let ordered = normalize_order(patch_items, server_only, order, &server_order, key);
        target.insert(field.to_owned(), Value::Array(ordered));
        done.insert(field.to_owned());
    }
    Ok(done)
}

/// `validatePatchWithSetOrderList`: the patch list's items (but deletes) come in the
/// directive's order; else kube-apiserver's 500.
fn check_order(listed: &[Value], order: &[Value], key: Option<&str>) -> Result<(), PatchError> {
    if listed.is_empty() || order.is_empty() {
        return Ok(());
    }
    let kept: Vec<&Value> = listed
        .iter()
        .filter(|p| key.is_none() || p.get("$patch").and_then(Value::as_str) != Some("delete"))
        .collect();
    let (mut p, mut o) = (0, 0);
    while p < kept.len() && o < order.len() {
        if kept[p].get("$patch").is_some() {
            p += 1;
            continue;
        }
        let equal = match key {
            Some(key) => kept[p].get(key) == order[o].get(key),
            None => kept[p] == &order[o],
        };
        if equal {
            p += 1;
        }
        o += 1;
    }
    if p < kept.len() {
        return Err(PatchError::Unclassified(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            go_text::go_value(&Value::Array(listed.to_vec())),
            go_text::go_value(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

/// `applyRetainKeysDirective`: with `$retainKeys` in `patch`, the fields of `target` it
/// does not list are dropped; a field the patch sets (not `null`, not a directive) that it
/// does not list is refused.
pub fn retain_keys(
    target: &mut Map<String, Value>,
    patch: &Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(keep) = patch.get("$retainKeys") else {
        return Ok(());
    };
    let bad = || PatchError::Malformed("invalid patch format of retainKeys".into());
    let Value::Array(keep) = keep else {
        return Err(bad());
    };
    let keep: HashSet<&str> = keep.iter().filter_map(Value::as_str).collect();
    let sets_other = patch.iter().any(|(k, v)| {
        !v.is_null()
            && !k.starts_with("$deleteFromPrimitiveList/")
            && !k.starts_with("$setElementOrder/")
            && k != "$retainKeys"
            && !keep.contains(k.as_str())
    });
    if sets_other {
        return Err(bad());
    }
    target.retain(|k, _| keep.contains(k.as_str()));
    Ok(())
}
