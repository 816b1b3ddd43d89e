//! Manager bookkeeping: the entries of `metadata.managedFields` and how a write changes
//! them.
//!
//! Mirrors k8s.io/apiserver's `managedfields/internal` (`managedFieldsUpdater`,
//! `stripMetaManager`, `buildManagerInfoManager`, `capManagersManager`, the entry sort of
//! `encodeManagedFields`) over structured-merge-diff's `merge.Updater`:
//! - an entry is identified by manager, operation, subresource and (for `Update` only)
//!   apiVersion;
//! - an update takes from every manager the fields it adds or changes and removes the fields
//!   it removes; its own entry gains what it changed (its time is then set), and entries left
//!   empty disappear;
//! - an apply owns exactly the fields of its configuration; a field another manager owns and
//!   the apply changes is a conflict unless `force` takes it; fields the manager applied last
//!   time and no longer applies are removed from the object when no one else owns them;
//! - identity fields (`apiVersion`, `kind`, `metadata.name`, `uid`, `resourceVersion`, ...)
//!   are never owned; entries are sorted by operation, time (seconds), manager, apiVersion,
//!   subresource; past 10 `Update` entries the oldest are merged into `ancient-changes`.

use serde_json::{Map, Value, json};

use super::fieldset::{FieldSet, Path, PathElement};

/// `Apply` or `Update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// One entry of `metadata.managedFields`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// The manager's name.
    pub manager: String,
    /// The operation.
    pub operation: Operation,
    /// The apiVersion the fields are expressed in.
    pub api_version: String,
    /// When the manager last changed the object (RFC 3339, seconds).
    pub time: Option<String>,
    /// `status` for writes through `/status`, else empty.
    pub subresource: String,
    /// The fields owned.
    pub fields: FieldSet,
}

impl Entry {
    /// Whether `self` and `other` are the same manager (apiVersion counts for updates only).
    pub fn same_manager(&self, other: &Entry) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.subresource == other.subresource
            && (self.operation == Operation::Apply || self.api_version == other.api_version)
    }

    /// The manager as conflict messages print it: `"bob" using v1` for an update.
    pub fn describe(&self) -> String {
        let mut s = format!("{:?}", self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {:?}", self.subresource);
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }

    fn to_json(&self) -> Value {
        entry_json(self, self.fields.to_fields_v1())
    }

    fn from_json(v: &Value) -> Option<Entry> {
        let operation = match v.get("operation")?.as_str()? {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return None,
        };
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
        let fields = match v.get("fieldsV1") {
            Some(f) => FieldSet::from_fields_v1(f)?,
            None => FieldSet::new(),
        };
        Some(Entry {
            manager: s("manager"),
            operation,
            api_version: s("apiVersion"),
            time: v.get("time").and_then(Value::as_str).map(str::to_owned),
            subresource: s("subresource"),
            fields,
        })
    }
}

/// The JSON of `entry` with `fields_v1` as its fields (its own `fields` are not read).
pub fn entry_json(entry: &Entry, fields_v1: Value) -> Value {
    let mut m = Map::new();
    if !entry.manager.is_empty() {
        m.insert("manager".into(), json!(entry.manager));
    }
    m.insert("operation".into(), json!(entry.operation.as_str()));
    m.insert("apiVersion".into(), json!(entry.api_version));
    if let Some(t) = &entry.time {
        m.insert("time".into(), json!(t));
    }
    m.insert("fieldsType".into(), json!("FieldsV1"));
    m.insert("fieldsV1".into(), fields_v1);
    if !entry.subresource.is_empty() {
        m.insert("subresource".into(), json!(entry.subresource));
    }
    Value::Object(m)
}

/// The entries of one object.
pub type Managed = Vec<Entry>;

/// The entries of `obj`'s `metadata.managedFields`; `None` when they do not decode.
pub fn decode(obj: &Map<String, Value>) -> Option<Managed> {
    match obj.get("metadata").and_then(|m| m.get("managedFields")) {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(entries)) => entries.iter().map(Entry::from_json).collect(),
        Some(_) => None,
    }
}

/// Sorts `managed` as kube-apiserver writes it, caps the `Update` entries, and stores it
/// in `obj` (removing `managedFields` when there is none).
pub fn encode(obj: &mut Map<String, Value>, mut managed: Managed) {
    managed.retain(|e| !e.fields.is_empty());
    cap_updates(&mut managed);
    managed.sort_by(|p, q| {
        p.operation
            .cmp(&q.operation)
            .then_with(|| seconds(&p.time).cmp(seconds(&q.time)))
            .then_with(|| p.manager.cmp(&q.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.subresource.cmp(&q.subresource))
    });
    let Some(Value::Object(meta)) = obj.get_mut("metadata") else {
        return;
    };
    if managed.is_empty() {
        meta.remove("managedFields");
    } else {
        meta.insert(
            "managedFields".into(),
            Value::Array(managed.iter().map(Entry::to_json).collect()),
        );
    }
}

/// The time as a sortable key (RFC 3339 in UTC sorts as text; no time sorts first).
fn seconds(t: &Option<String>) -> &str {
    t.as_deref().unwrap_or("")
}

const MAX_UPDATE_MANAGERS: usize = 10;
const ANCIENT: &str = "ancient-changes";

/// Merges the oldest `Update` entries, per apiVersion, into an `ancient-changes` entry
/// while there are more than ten (`capManagersManager`).
fn cap_updates(managed: &mut Managed) {
    let mut updaters: Vec<usize> = (0..managed.len())
        .filter(|i| managed[*i].operation == Operation::Update)
        .collect();
    let mut length = updaters.len();
    if length <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort_by(|a, b| seconds(&managed[*a].time).cmp(seconds(&managed[*b].time)));
    let mut first_of_version: Vec<(String, usize)> = Vec::new();
    for i in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let version = managed[i].api_version.clone();
        let Some(first) = first_of_version
            .iter()
            .find(|(v, _)| *v == version)
            .map(|(_, f)| *f)
        else {
            first_of_version.push((version, i));
            continue;
        };
        let bucket = managed
            .iter()
            .position(|e| {
                e.manager == ANCIENT
                    && e.operation == Operation::Update
                    && e.api_version == version
                    && e.subresource.is_empty()
            })
            .unwrap_or(first);
        managed[bucket].manager = ANCIENT.into();
        managed[bucket].subresource.clear();
        let fields = std::mem::take(&mut managed[i].fields);
        managed[bucket].fields.union_in_place(&fields);
        managed[bucket].time = managed[i].time.clone();
        length -= 1;
    }
    managed.retain(|e| !e.fields.is_empty());
}

/// The fields no manager ever owns (`stripMetaManager`).
pub fn stripped() -> &'static FieldSet {
    static STRIPPED: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(build_stripped);
    &STRIPPED
}

fn build_stripped() -> FieldSet {
    let f = |s: &str| PathElement::Field(s.to_owned());
    let mut set = FieldSet::new();
    set.insert(&[f("apiVersion")]);
    set.insert(&[f("kind")]);
    set.insert(&[f("metadata")]);
    for field in [
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ] {
        set.insert(&[f("metadata"), f(field)]);
    }
    set
}

/// One field-manager conflict: who owns the path.
#[derive(Debug, Clone)]
pub struct Conflict {
    /// The owner, as messages print it.
    pub manager: String,
    /// The path.
    pub path: Path,
}

/// Takes `changed` from every entry but `except`, and `removed` too; returns what was taken
/// from each (the conflicts of an apply).
pub fn take(
    managed: &mut Managed,
    except: Option<&Entry>,
    changed: &FieldSet,
    removed: &FieldSet,
) -> Vec<Conflict> {
    let mut conflicts = Vec::new();
    for e in managed.iter_mut() {
        if except.is_some_and(|x| x.same_manager(e)) {
            continue;
        }
        let taken = e.fields.intersection(changed);
        let who = e.describe();
        conflicts.extend(taken.paths().into_iter().map(|path| Conflict {
            manager: who.clone(),
            path,
        }));
        e.fields = e.fields.difference(changed).difference(removed);
    }
    managed.retain(|e| !e.fields.is_empty());
    conflicts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(manager: &str, operation: Operation, time: &str) -> Entry {
        let mut fields = FieldSet::new();
        fields.insert(&[PathElement::Field(format!("f{manager}"))]);
        Entry {
            manager: manager.into(),
            operation,
            api_version: "v1".into(),
            time: Some(time.into()),
            subresource: String::new(),
            fields,
        }
    }

    #[test]
    fn entries_sort_and_round_trip() {
        let mut obj = json!({"metadata": {}}).as_object().cloned().unwrap();
        let managed = vec![
            entry("b", Operation::Update, "2026-01-01T00:00:02Z"),
            entry("c", Operation::Update, "2026-01-01T00:00:01Z"),
            entry("a", Operation::Apply, "2026-01-01T00:00:03Z"),
        ];
        encode(&mut obj, managed);
        let back = decode(&obj).unwrap();
        let names: Vec<&str> = back.iter().map(|e| e.manager.as_str()).collect();
        assert_eq!(names, ["a", "c", "b"]);
        assert_eq!(back[1].describe(), "\"c\" using v1");
        assert_eq!(back[0].describe(), "\"a\"");
    }

    #[test]
    fn past_ten_updates_the_oldest_become_ancient_changes() {
        let mut obj = json!({"metadata": {}}).as_object().cloned().unwrap();
        let managed: Managed = (0..11)
            .map(|i| {
                entry(
                    &format!("m{i:02}"),
                    Operation::Update,
                    &format!("2026-01-01T00:00:{i:02}Z"),
                )
            })
            .collect();
        encode(&mut obj, managed);
        let back = decode(&obj).unwrap();
        assert_eq!(back.len(), 10);
        assert!(back.iter().any(|e| e.manager == ANCIENT));
        assert!(
            !back
                .iter()
                .any(|e| e.manager == "m00" || e.manager == "m01")
        );
        let ancient = back.iter().find(|e| e.manager == ANCIENT).unwrap();
        assert_eq!(ancient.time.as_deref(), Some("2026-01-01T00:00:01Z"));
        assert_eq!(ancient.fields.paths().len(), 2);
    }
}
