//! `metadata.managedFields`: which manager owns which field, kept on every write, and the
//! ownership rules of server-side apply.
//!
//! Mirrors k8s.io/apiserver's `endpoints/handlers/fieldmanager` and `managedfields` over
//! structured-merge-diff, as kube-apiserver 1.36 runs them: create, update and the patches
//! other than apply are `Update` operations of the request's manager (the `fieldManager`
//! parameter, else the User-Agent up to its first `/`, else `unknown`); apply is an `Apply`
//! operation with conflicts between managers (409 with one `FieldManagerConflict` cause per
//! field), `force` to take fields over, and removal of the fields a manager stops applying.
//! Writes through `/status` are entries of their own with `subresource: status`.
//!
//! Differences: shapes (maps, keyed lists, sets, atomic values) come from a table of the
//! served built-in types' field names rather than their OpenAPI schemas ([`schema`]), and
//! the applied configuration is merged into the object by the sim's strategic (built-ins)
//! or JSON merge (custom resources) instead of structured-merge-diff's merge; entries are
//! always in the served version (the sim has no conversion). The client-side apply
//! annotation (`kubectl.kubernetes.io/last-applied-configuration`) is not upgraded into
//! managedFields.

pub mod conflicts;
pub mod created;
pub mod fieldset;
pub mod managers;
pub mod schema;
pub mod walk;

use serde_json::{Map, Value};

use crate::errors::ApiResult;
use crate::resources::ResourceInfo;
use fieldset::{FieldSet, PathElement};
use managers::{Entry, Managed, Operation};

/// Who writes, as managedFields records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Writer {
    /// The manager's name.
    pub manager: String,
    /// Whether the write goes through `/status`.
    pub status: bool,
}

impl Writer {
    /// The manager of a request: `fieldManager`, else the User-Agent's program name (the
    /// text before its first `/`), else `unknown`, as kube-apiserver derives it.
    pub fn from_request(field_manager: Option<&str>, user_agent: &str, status: bool) -> Writer {
        let manager = match field_manager {
            Some(m) if !m.is_empty() => m.to_owned(),
            _ => match user_agent.split('/').next().unwrap_or("") {
                "" => "unknown".to_owned(),
                program => program.to_owned(),
            },
        };
        Writer { manager, status }
    }

    fn entry(&self, info: &ResourceInfo, operation: Operation) -> Entry {
        Entry {
            manager: self.manager.clone(),
            operation,
            api_version: info.api_version(),
            time: None,
            subresource: if self.status {
                "status".into()
            } else {
                String::new()
            },
            fields: FieldSet::new(),
        }
    }
}

fn now() -> String {
    clientgo_apimachinery::Time::now().to_rfc3339()
}

/// The fields a write of `info` never owns: status where the server sets it or where it is a
/// subresource, a Namespace's `spec.finalizers`; through `/status`, everything but status.
fn ignored(
    info: &ResourceInfo,
    status_write: bool,
    old: &Map<String, Value>,
    new: &Map<String, Value>,
) -> FieldSet {
    let field = |s: &str| PathElement::Field(s.to_owned());
    let mut set = FieldSet::new();
    if status_write {
        for key in old.keys().chain(new.keys()).filter(|k| *k != "status") {
            set.insert(&[field(key)]);
        }
        return set;
    }
    let core = info.group.is_empty();
    if info.status_subresource || (core && matches!(info.plural.as_str(), "pods" | "namespaces")) {
        set.insert(&[field("status")]);
    }
    if core && info.plural == "namespaces" {
        set.insert(&[field("spec"), field("finalizers")]);
    }
    set
}

/// The nodes of `info`'s zero value ([`schema::zero_value_paths`]).
fn zero_value(info: &ResourceInfo) -> FieldSet {
    let mut set = FieldSet::new();
    for path in schema::zero_value_paths(&info.group, &info.plural) {
        let path: Vec<PathElement> = path
            .iter()
            .map(|f| PathElement::Field((*f).to_owned()))
            .collect();
        set.insert(&path);
    }
    set
}

/// Records an `Update` by `writer` that turns `old` (`None`: a create) into `new`, in
/// `new`'s `metadata.managedFields`. The entries start from those `new` carries when they
/// decode and are not empty (so a client may rewrite them), else from `old`'s.
pub fn record_update(
    info: &ResourceInfo,
    old: Option<&Map<String, Value>>,
    new: &mut Map<String, Value>,
    writer: &Writer,
) {
    let builtin = info.strategic_merge;
    let empty = Map::new();
    if old.is_none() && !writer.status && managers::decode(new).is_some_and(|m| m.is_empty()) {
        record_create(info, new, writer);
        return;
    }
    let old_map = old.unwrap_or(&empty);
    let mut managed: Managed = match managers::decode(new) {
        Some(m) if !m.is_empty() && !writer.status => m,
        _ => managers::decode(old_map).unwrap_or_default(),
    };
    let ignore = ignored(info, writer.status, old_map, new);
    if builtin {
        walk::drop_empty_maps(new);
    }
    let mut cmp = walk::compare_maps(builtin, old, new);
    if old.is_none() {
        cmp.added = cmp.added.difference(&zero_value(info));
    }
    cmp.filter(&ignore);
    let mut changed = cmp.added;
    changed.union_in_place(&cmp.modified);
    managers::take(&mut managed, None, &changed, &cmp.removed);
    let mine = changed.difference(managers::stripped());
    if !mine.is_empty() {
        let me = writer.entry(info, Operation::Update);
        match managed.iter_mut().find(|e| e.same_manager(&me)) {
            Some(e) => {
                e.fields.union_in_place(&mine);
                e.time = Some(now());
            }
            None => managed.push(Entry {
                fields: mine,
                time: Some(now()),
                ..me
            }),
        }
    }
    managers::encode(new, managed);
}

/// [`record_update`] of a create whose body carries no entries: the one entry of the
/// creator, its fields written in one walk ([`created::fields_v1`]).
fn record_create(info: &ResourceInfo, new: &mut Map<String, Value>, writer: &Writer) {
    let builtin = info.strategic_merge;
    if builtin {
        walk::drop_empty_maps(new);
    }
    let ignore = ignored(info, false, &Map::new(), new);
    let fields = created::fields_v1(
        builtin,
        new,
        &zero_value(info),
        managers::stripped(),
        &ignore,
    );
    let Some(Value::Object(meta)) = new.get_mut("metadata") else {
        return;
    };
    if fields.is_empty() {
        meta.remove("managedFields");
        return;
    }
    let entry = Entry {
        time: Some(now()),
        ..writer.entry(info, Operation::Update)
    };
    let entry = managers::entry_json(&entry, Value::Object(fields));
    meta.insert("managedFields".into(), Value::Array(vec![entry]));
}

/// Records an `Apply` of `config` by `writer`: `merged` is `live` (`None`: a create) with
/// `config` merged in. Removes from `merged` the fields `writer` applied before, applies no
/// longer and no one else owns; answers 409 when the apply changes fields other managers
/// own, unless `force` (which takes them).
pub fn record_apply(
    info: &ResourceInfo,
    live: Option<&Map<String, Value>>,
    merged: &mut Map<String, Value>,
    config: &Value,
    writer: &Writer,
    force: bool,
) -> ApiResult<()> {
    let builtin = info.strategic_merge;
    let empty = Map::new();
    let live_map = live.unwrap_or(&empty);
    let mut managed: Managed = managers::decode(live_map).unwrap_or_default();
    let ignore = ignored(info, writer.status, live_map, merged);
    let applied = walk::to_field_set(builtin, config)
        .without_subtrees(&ignore)
        .difference(managers::stripped());
    let me = writer.entry(info, Operation::Apply);
    let previous = managed.iter().position(|e| e.same_manager(&me));
    let last = previous
        .map(|i| managed[i].fields.clone())
        .unwrap_or_default();
    let time = previous.and_then(|i| managed[i].time.clone());
    if let Some(i) = previous {
        managed.remove(i);
    }
    // Fields applied last time, not now, and owned by no one else go away.
    let mut owned = applied.clone();
    for e in &managed {
        owned.union_in_place(&e.fields);
    }
    let mut merged_value = Value::Object(std::mem::take(merged));
    walk::remove(builtin, &mut merged_value, &last.difference(&owned));
    let Value::Object(pruned) = merged_value else {
        return Err(crate::errors::internal(
            "the applied object is not a JSON object",
        ));
    };
    *merged = pruned;
    let mut cmp = walk::compare_maps(builtin, live, merged);
    // Whether the apply changes the object (an empty map and no map are the same object).
    let object_changed = !cmp.is_empty();
    cmp.filter(&ignore);
    let changed = cmp.added.union(&cmp.modified);
    let mut trial = managed.clone();
    let found = managers::take(&mut trial, Some(&me), &changed, &cmp.removed);
    if !found.is_empty() && !force {
        return Err(conflicts::error(&found));
    }
    managed = trial;
    managed.push(Entry {
        fields: applied,
        time: if object_changed { Some(now()) } else { time },
        ..me
    });
    managers::encode(merged, managed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_manager_comes_from_field_manager_or_the_user_agent() {
        // Observed on kube-apiserver 1.36.2: curl/8.5.0 → "curl", none → "unknown".
        let w = |fm: Option<&str>, ua: &str| Writer::from_request(fm, ua, false).manager;
        assert_eq!(w(Some("alice"), "curl/8.5.0"), "alice");
        assert_eq!(w(None, "curl/8.5.0"), "curl");
        assert_eq!(
            w(Some(""), "kubectl/v1.32.0 (linux/amd64) kubernetes/abc"),
            "kubectl"
        );
        assert_eq!(w(None, "my-controller"), "my-controller");
        assert_eq!(w(None, ""), "unknown");
    }
}
