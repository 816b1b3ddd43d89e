//! CustomResourceDefinitions: validation, serving their resources, establishing them.
//!
//! Mirrors the parts of `apiextensions-apiserver` a client sees: CRD validation (name is
//! `<plural>.<group>`, names, scope, exactly one storage version, the
//! `api-approved.kubernetes.io` annotation in protected groups), the naming and
//! establishing controllers (a new CRD's status as `PrepareForCreate` writes it, then
//! `NamesAccepted` and `Established` set at once, with `acceptedNames` and
//! `storedVersions`, and `KubernetesAPIApprovalPolicyConformant` in protected groups, as
//! the API approval controller sets it), and the CRD handler: each served version of a CRD
//! is routed at `/apis/<group>/<version>/...` with a `status` subresource when declared;
//! deleting the CRD stops serving it and deletes its objects (the finalizer controller's
//! job); custom resources are validated against their version's schema ([`crate::schema`]).
//! Differences: establishment is synchronous; multi-version CRDs share one keyspace and
//! objects are returned as written (no conversion webhooks); the schema itself is not
//! checked for being structural.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use crate::errors::{self, ApiResult, FieldError};
use crate::resources::ResourceInfo;
use crate::state::SimState;

/// The keyspace of CRDs.
pub const CRD_KEYSPACE: &str = "apiextensions.k8s.io/customresourcedefinitions";

fn is_crd(info: &ResourceInfo) -> bool {
    info.group == "apiextensions.k8s.io" && info.plural == "customresourcedefinitions"
}

fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        match cur.get(p) {
            Some(next) => cur = next,
            None => return "",
        }
    }
    cur.as_str().unwrap_or("")
}

/// Validates a CRD, or a custom resource against its schema (does nothing for other
/// resources).
pub fn validate(info: &ResourceInfo, obj: &Map<String, Value>) -> ApiResult<()> {
    if !is_crd(info) {
        return crate::schema::validate(info, obj);
    }
    let v = Value::Object(obj.clone());
    let name = s(&v, &["metadata", "name"]);
    let group = s(&v, &["spec", "group"]);
    let plural = s(&v, &["spec", "names", "plural"]);
    let kind = s(&v, &["spec", "names", "kind"]);
    let scope = s(&v, &["spec", "scope"]);
    let mut errs = Vec::new();
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
    } else if !group.contains('.') {
        errs.push(FieldError::invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
    if plural.is_empty() {
        errs.push(FieldError::required("spec.names.plural", ""));
    } else if !crate::validation::is_dns1123_label(plural) {
        errs.push(FieldError::invalid(
            "spec.names.plural",
            plural,
            "a lowercase RFC 1123 label is required",
        ));
    }
    if kind.is_empty() {
        errs.push(FieldError::required("spec.names.kind", ""));
    }
    if scope != "Namespaced" && scope != "Cluster" {
        errs.push(FieldError::unsupported(
            "spec.scope",
            scope,
            &["Cluster", "Namespaced"],
        ));
    }
    let versions = v["spec"]["versions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if versions.is_empty() {
        errs.push(FieldError::required(
            "spec.versions",
            "must have exactly one version marked as storage version",
        ));
    } else if versions
        .iter()
        .filter(|v| v["storage"].as_bool() == Some(true))
        .count()
        != 1
    {
        errs.push(FieldError::invalid(
            "spec.versions",
            "",
            "must have exactly one version marked as storage version",
        ));
    }
    if !group.is_empty() && !plural.is_empty() && name != format!("{plural}.{group}") {
        errs.push(FieldError::invalid(
            "metadata.name",
            name,
            "must be spec.names.plural+\".\"+spec.group",
        ));
    }
    errs.extend(api_approval(&v, group));
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errors::invalid(&info.group, &info.kind, name, &errs))
    }
}

/// Whether `group` is one of the Kubernetes project's (`k8s.io`, `kubernetes.io` and their
/// subdomains), where a CRD needs the `api-approved.kubernetes.io` annotation.
fn is_protected_group(group: &str) -> bool {
    ["k8s.io", "kubernetes.io"]
        .iter()
        .any(|g| group == *g || group.ends_with(&format!(".{g}")))
}

const APPROVAL: &str = "api-approved.kubernetes.io";

/// The approval check of `validateAPIApproval`: in a protected group the annotation must
/// be a URL (as Go's `url.ParseRequestURI` accepts) or start with `unapproved`.
fn api_approval(crd: &Value, group: &str) -> Vec<FieldError> {
    if !is_protected_group(group) {
        return Vec::new();
    }
    let field = format!("metadata.annotations[{APPROVAL}]");
    let Some(value) = crd["metadata"]["annotations"][APPROVAL].as_str() else {
        return vec![FieldError::required(
            &field,
            &format!(
                "protected groups must have approval annotation \"{APPROVAL}\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )];
    };
    let scheme = value.split_once(':').is_some_and(|(s, _)| {
        s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    });
    if value.starts_with("unapproved") || value.starts_with('/') || scheme {
        return Vec::new();
    }
    vec![FieldError::invalid(
        &field,
        value,
        &format!(
            "protected groups must have approval annotation \"{APPROVAL}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
        ),
    )]
}

/// The resources a stored CRD serves.
pub fn resources_of(crd: &Value) -> Vec<ResourceInfo> {
    let group = s(crd, &["spec", "group"]);
    let names = &crd["spec"]["names"];
    let plural = s(names, &["plural"]);
    let kind = s(names, &["kind"]);
    let singular = match s(names, &["singular"]) {
        "" => kind.to_ascii_lowercase(),
        other => other.to_owned(),
    };
    let list_kind = match s(names, &["listKind"]) {
        "" => format!("{kind}List"),
        other => other.to_owned(),
    };
    let short_names: Vec<String> = names["shortNames"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let categories: Vec<String> = names["categories"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let storage_version = crd["spec"]["versions"]
        .as_array()
        .and_then(|vs| vs.iter().find(|v| v["storage"].as_bool() == Some(true)))
        .map_or("", |v| s(v, &["name"]));
    let storage_version_hash = crate::resources::storage_version_hash(group, storage_version, kind);
    let namespaced = s(crd, &["spec", "scope"]) == "Namespaced";
    crd["spec"]["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter(|v| v["served"].as_bool().unwrap_or(false))
                .map(|v| ResourceInfo {
                    group: group.to_owned(),
                    version: s(v, &["name"]).to_owned(),
                    plural: plural.to_owned(),
                    singular: singular.clone(),
                    kind: kind.to_owned(),
                    list_kind: list_kind.clone(),
                    namespaced,
                    status_subresource: v["subresources"]["status"].is_object(),
                    tracks_generation: true,
                    strategic_merge: false,
                    short_names: short_names.clone(),
                    categories: categories.clone(),
                    storage_version_hash: storage_version_hash.clone(),
                    selectable_fields: Vec::new(),
                    name_is_label: false,
                    schema: v["schema"]["openAPIV3Schema"]
                        .is_object()
                        .then(|| std::sync::Arc::new(v["schema"]["openAPIV3Schema"].clone())),
                    printer_columns: v["additionalPrinterColumns"]
                        .is_array()
                        .then(|| std::sync::Arc::new(v["additionalPrinterColumns"].clone())),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// After a write to `info`: when it is the CRD resource, establishes new CRDs and brings
/// the served custom resources in line with the stored CRDs.
pub fn after_write(state: &SimState, info: &ResourceInfo) {
    if is_crd(info) {
        sync(state);
    }
}

/// Establishes stored CRDs and registers / unregisters their resources.
pub fn sync(state: &SimState) {
    let crds = state.store.all(CRD_KEYSPACE);
    let mut desired = Vec::new();
    for crd in &crds {
        let mut value = crd.to_value();
        if !is_established(&value) {
            establish(&mut value);
            let selectable = Vec::new();
            // A concurrent write wins; the next sync establishes that version.
            if let Ok(updated) =
                state
                    .store
                    .update(CRD_KEYSPACE, value.clone(), crd.rv(), &selectable)
            {
                value = updated.to_value();
            }
        }
        desired.extend(resources_of(&value));
    }
    let wanted: BTreeSet<(String, String, String)> = desired
        .iter()
        .map(|r| (r.group.clone(), r.version.clone(), r.plural.clone()))
        .collect();
    let keyspaces: BTreeSet<String> = desired.iter().map(ResourceInfo::keyspace).collect();
    for served in state
        .registry
        .all()
        .into_iter()
        .filter(|r| !r.strategic_merge)
    {
        let key = (
            served.group.clone(),
            served.version.clone(),
            served.plural.clone(),
        );
        if !wanted.contains(&key) {
            tracing::info!(group = %served.group, version = %served.version, plural = %served.plural, "custom resource no longer served");
            state
                .registry
                .remove(&served.group, &served.version, &served.plural);
            if !keyspaces.contains(&served.keyspace()) {
                for obj in state.store.all(&served.keyspace()) {
                    let _ = state.store.delete(&served.keyspace(), obj.key(), None, &[]);
                }
            }
        }
    }
    for info in desired {
        // A CRD never replaces a built-in resource (the real server refuses such names).
        let existing = state.registry.get(&info.group, &info.version, &info.plural);
        if existing.as_deref().is_some_and(|e| e.strategic_merge) {
            continue;
        }
        if state
            .registry
            .get(&info.group, &info.version, &info.plural)
            .as_deref()
            != Some(&info)
        {
            tracing::info!(group = %info.group, version = %info.version, plural = %info.plural, "serving custom resource");
            state.registry.insert(info);
        }
    }
}

fn is_established(crd: &Value) -> bool {
    crd["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    })
}

/// The names of a CRD's storage versions.
fn storage_versions(crd: &Value) -> Vec<Value> {
    crd["spec"]["versions"]
        .as_array()
        .map(|vs| {
            vs.iter()
                .filter(|v| v["storage"].as_bool() == Some(true))
                .map(|v| v["name"].clone())
                .collect()
        })
        .unwrap_or_default()
}

/// The status of a CRD as created, before any controller ran, as the CRD strategy's
/// `PrepareForCreate` writes it: no names accepted yet (`kind` and `plural` written empty),
/// `conditions: null`, `storedVersions` the storage version.
pub fn initial_status(crd: &Value) -> Value {
    json!({
        "acceptedNames": {"kind": "", "plural": ""},
        "conditions": null,
        "storedVersions": storage_versions(crd),
    })
}

/// The `KubernetesAPIApprovalPolicyConformant` condition of a CRD in a protected group, as
/// the API approval controller sets it (`None` elsewhere).
fn approval_condition(crd: &Value, now: &Value) -> Option<Value> {
    let group = crd["spec"]["group"].as_str().unwrap_or("");
    if !is_protected_group(group) {
        return None;
    }
    let value = crd["metadata"]["annotations"][APPROVAL]
        .as_str()
        .unwrap_or("");
    let (status, reason, message) = if value.starts_with("unapproved") {
        (
            "False",
            "UnapprovedAnnotation",
            format!("not approved: {}", crate::go_strconv::go_quote(value)),
        )
    } else {
        ("True", "ApprovedAnnotation", format!("approved in {value}"))
    };
    Some(
        json!({"type": "KubernetesAPIApprovalPolicyConformant", "status": status,
        "lastTransitionTime": now, "reason": reason, "message": message}),
    )
}

/// The naming, establishing and API approval controllers' status: `acceptedNames` the
/// spec's names, `NamesAccepted` and `Established`, then (protected groups)
/// `KubernetesAPIApprovalPolicyConformant` (kube-apiserver 1.36.2 adds the three in an
/// order that varies with its controllers' timing; this is its most frequent one).
fn establish(crd: &mut Value) {
    let now = crate::verbs::now();
    let storage = storage_versions(crd);
    let names = crd["spec"]["names"].clone();
    let mut conditions = vec![
        json!({"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
         "reason": "NoConflicts", "message": "no conflicts found"}),
        json!({"type": "Established", "status": "True", "lastTransitionTime": now,
         "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}),
    ];
    conditions.extend(approval_condition(crd, &now));
    if let Some(obj) = crd.as_object_mut() {
        obj.insert(
            "status".into(),
            json!({
                "acceptedNames": names,
                "conditions": conditions,
                "storedVersions": storage,
            }),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widget_crd() -> Value {
        json!({"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
          "metadata":{"name":"widgets.example.com"},
          "spec":{"group":"example.com","scope":"Namespaced",
            "names":{"plural":"widgets","singular":"widget","kind":"Widget","shortNames":["wd"]},
            "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
                         "schema":{"openAPIV3Schema":{"type":"object"}}}]}})
    }

    #[test]
    fn crd_validation_and_resources() {
        let info = crate::resources::builtins().pop().unwrap();
        let crd = widget_crd();
        validate(&info, crd.as_object().unwrap()).unwrap();
        let r = resources_of(&crd);
        assert_eq!(r.len(), 1);
        assert!(r[0].namespaced && r[0].status_subresource && !r[0].strategic_merge);
        assert_eq!(r[0].short_names, vec!["wd".to_owned()]);
        let mut bad = crd.clone();
        bad["metadata"]["name"] = json!("wrong");
        let e = validate(&info, bad.as_object().unwrap()).unwrap_err();
        assert_eq!(e.code(), 422);
        assert!(
            e.status
                .message
                .contains("must be spec.names.plural+\".\"+spec.group")
        );
        let mut c = crd;
        establish(&mut c);
        assert!(is_established(&c));
    }
}
