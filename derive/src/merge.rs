//! Several versions of one kind in one CustomResourceDefinition.
//!
//! controller-tools gathers every version of a group-kind found in the Go packages into one
//! CRD and requires exactly one `+kubebuilder:storageversion` when there are several;
//! kube-core has `merge_crds(crds, stored_apiversion)`. Here [`merge_crds`] takes the
//! single-version CRDs of each version type (`v1::Foo::crd()`, `v2::Foo::crd()`) and keeps
//! the served/storage flags each version type declares (`#[resource(storage = false)]`),
//! requiring exactly one storage version; [`merge_crds_storing`] sets the storage version by
//! name instead, as kube-core does.
//!
//! Conversion is `None`: the API server only rewrites `apiVersion`, so the versions' schemas
//! must hold the same data. Webhook conversion is not generated.

use std::fmt;

use serde_json::{Value, json};

/// Why CRDs could not be merged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeError {
    /// No CRD was given.
    Empty,
    /// A value is not a CRD with `spec.versions`.
    NotACrd(String),
    /// Two CRDs differ in what must be shared: name, group, names or scope.
    Mismatch {
        /// The field that differs, e.g. `spec.scope`.
        field: &'static str,
        /// Its value in the first CRD.
        first: String,
        /// Its value in a later CRD.
        other: String,
    },
    /// One version comes twice.
    DuplicateVersion(String),
    /// No version is the storage version.
    NoStorageVersion,
    /// More than one version is the storage version.
    SeveralStorageVersions(Vec<String>),
    /// The storage version named is not among the versions.
    UnknownStorageVersion(String),
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MergeError::Empty => write!(f, "no CRDs to merge"),
            MergeError::NotACrd(why) => write!(f, "not a CustomResourceDefinition: {why}"),
            MergeError::Mismatch {
                field,
                first,
                other,
            } => write!(
                f,
                "the CRDs are not of one kind: {field} is {first} in the first and {other} in another"
            ),
            MergeError::DuplicateVersion(v) => write!(f, "version {v} is given twice"),
            MergeError::NoStorageVersion => write!(
                f,
                "no version is the storage version: exactly one must be (`#[resource(storage)]`)"
            ),
            MergeError::SeveralStorageVersions(versions) => write!(
                f,
                "several versions are the storage version ({}): exactly one must be",
                versions.join(", ")
            ),
            MergeError::UnknownStorageVersion(v) => {
                write!(f, "the storage version {v} is not among the versions")
            }
        }
    }
}

impl std::error::Error for MergeError {}

/// The fields every merged CRD must agree on.
const SHARED: [(&str, &str); 4] = [
    ("metadata.name", "/metadata/name"),
    ("spec.group", "/spec/group"),
    ("spec.names", "/spec/names"),
    ("spec.scope", "/spec/scope"),
];

/// Merges single- (or multi-) version CRDs of one kind into one, keeping each version's
/// `served` and `storage` flags; exactly one version must be stored. Metadata (annotations,
/// labels) is the first CRD's.
pub fn merge_crds(crds: impl IntoIterator<Item = Value>) -> Result<Value, MergeError> {
    let mut crds = crds.into_iter();
    let mut merged = crds.next().ok_or(MergeError::Empty)?;
    check_crd(&merged)?;
    for crd in crds {
        check_crd(&crd)?;
        for (field, pointer) in SHARED {
            if merged.pointer(pointer) != crd.pointer(pointer) {
                return Err(MergeError::Mismatch {
                    field,
                    first: show(merged.pointer(pointer)),
                    other: show(crd.pointer(pointer)),
                });
            }
        }
        let versions = crd["spec"]["versions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let into = merged["spec"]["versions"]
            .as_array_mut()
            .expect("checked: versions is an array");
        for version in versions {
            if into.iter().any(|v| v["name"] == version["name"]) {
                return Err(MergeError::DuplicateVersion(show(Some(&version["name"]))));
            }
            into.push(version);
        }
    }
    let storage: Vec<String> = merged["spec"]["versions"]
        .as_array()
        .expect("checked")
        .iter()
        .filter(|v| v["storage"] == true)
        .map(|v| show(Some(&v["name"])))
        .collect();
    match storage.len() {
        0 => return Err(MergeError::NoStorageVersion),
        1 => {}
        _ => return Err(MergeError::SeveralStorageVersions(storage)),
    }
    merged["spec"]["conversion"] = json!({"strategy": "None"});
    Ok(merged)
}

/// Merges CRDs of one kind as [`merge_crds`] does, with `storage_version` the one stored
/// (whatever the version types declare), as kube-core's `merge_crds` does.
pub fn merge_crds_storing(
    crds: impl IntoIterator<Item = Value>,
    storage_version: &str,
) -> Result<Value, MergeError> {
    let mut found = false;
    let crds: Vec<Value> = crds
        .into_iter()
        .map(|mut crd| {
            if let Some(versions) = crd
                .pointer_mut("/spec/versions")
                .and_then(Value::as_array_mut)
            {
                for version in versions {
                    let stored = version["name"] == storage_version;
                    found |= stored;
                    version["storage"] = stored.into();
                }
            }
            crd
        })
        .collect();
    if !found && !crds.is_empty() {
        return Err(MergeError::UnknownStorageVersion(
            storage_version.to_owned(),
        ));
    }
    merge_crds(crds)
}

fn check_crd(crd: &Value) -> Result<(), MergeError> {
    if crd["kind"] != "CustomResourceDefinition" {
        return Err(MergeError::NotACrd(format!(
            "kind is {}",
            show(crd.get("kind"))
        )));
    }
    if !crd["spec"]["versions"].is_array() {
        return Err(MergeError::NotACrd("spec.versions is not a list".into()));
    }
    Ok(())
}

fn show(value: Option<&Value>) -> String {
    match value {
        None => "absent".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}
