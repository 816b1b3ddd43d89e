//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/<group>`, `/api/v1`,
//! `/apis/<group>/<version>`.
//!
//! Mirrors `endpoints/discovery` (legacy, unaggregated discovery): `APIVersions`,
//! `APIGroupList`, `APIGroup` and `APIResourceList` with each resource's name, singular
//! name, scope, kind, verbs (as kube-apiserver 1.36.2 lists them: namespaces without
//! `deletecollection`, custom resources in the apiextensions handler's order), short
//! names, categories, `storageVersionHash` and its `status` subresource; the core group's
//! list has no `apiVersion`, the others' do. `/version` has the fields of 1.36's
//! (`emulationMajor`, `minCompatibilityMinor`, ...) with the sim's own values. kubectl 1.32 first
//! asks for aggregated discovery (`apidiscovery.k8s.io/v2`) and falls back to these
//! documents when the response is plain `application/json`, which is what it gets here.
//! Custom resources appear and disappear with their CRDs.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::resources::{Registry, ResourceInfo};

const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// The verbs of a custom resource, in the order kube-apiserver 1.36.2 lists them.
const CUSTOM_RESOURCE_VERBS: &[&str] = &[
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "create",
    "update",
    "watch",
];

/// `/version`: the fields kube-apiserver 1.36 answers, the emulated version the same as the
/// binary's and the minimum compatibility version one minor before (as a 1.36 server's
/// defaults are).
pub fn version(git_version: &str) -> Value {
    let (major, minor) = git_version
        .trim_start_matches('v')
        .split_once('.')
        .map(|(a, b)| (a.to_owned(), b.split('.').next().unwrap_or("").to_owned()))
        .unwrap_or_default();
    let min_compatibility_minor = minor
        .parse::<u32>()
        .map_or_else(|_| minor.clone(), |m| m.saturating_sub(1).to_string());
    json!({
        "major": major, "minor": minor, "emulationMajor": major, "emulationMinor": minor,
        "minCompatibilityMajor": major, "minCompatibilityMinor": min_compatibility_minor,
        "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2024-12-11T00:00:00Z", "goVersion": "go1.23.4", "compiler": "gc",
        "platform": "linux/amd64"
    })
}

/// `/api`.
pub fn core_versions(server_address: &str) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"],
           "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}]})
}

fn groups_map(registry: &Registry) -> BTreeMap<String, Vec<String>> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in registry.all().iter().filter(|r| !r.group.is_empty()) {
        let versions = groups.entry(r.group.clone()).or_default();
        if !versions.contains(&r.version) {
            versions.push(r.version.clone());
        }
    }
    groups
}

fn group_doc(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(Value::Null)})
}

/// `/apis`.
pub fn groups(registry: &Registry) -> Value {
    let groups: Vec<Value> = groups_map(registry)
        .iter()
        .map(|(g, vs)| group_doc(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`, if served.
pub fn group(registry: &Registry, name: &str) -> Option<Value> {
    let map = groups_map(registry);
    let versions = map.get(name)?;
    let mut doc = group_doc(name, versions);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

fn verbs(r: &ResourceInfo) -> Vec<&'static str> {
    if !r.strategic_merge {
        return CUSTOM_RESOURCE_VERBS.to_vec();
    }
    VERBS
        .iter()
        .copied()
        .filter(|v| !(*v == "deletecollection" && r.group.is_empty() && r.plural == "namespaces"))
        .collect()
}

fn resource_doc(r: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
        "kind": r.kind, "verbs": verbs(r), "storageVersionHash": r.storage_version_hash,
    });
    if !r.short_names.is_empty() {
        main["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        main["categories"] = json!(r.categories);
    }
    let mut out = vec![main];
    if r.status_subresource {
        out.push(json!({"name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced,
                        "kind": r.kind, "verbs": ["get", "patch", "update"]}));
    }
    out
}

/// `/api/v1` or `/apis/<group>/<version>`, if served.
pub fn resources(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let served = registry.in_group_version(group, version);
    if served.is_empty() {
        return None;
    }
    let gv = if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    };
    let resources: Vec<Value> = served.iter().flat_map(|r| resource_doc(r)).collect();
    let mut doc = json!({"kind": "APIResourceList", "groupVersion": gv, "resources": resources});
    if !group.is_empty() {
        // The core group's list is written without it (observed on kube-apiserver 1.36.2).
        doc["apiVersion"] = json!("v1");
    }
    Some(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        let r = Registry::with_builtins();
        let g = groups(&r);
        let names: Vec<&str> = g["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            vec![
                "apiextensions.k8s.io",
                "apps",
                "coordination.k8s.io",
                "events.k8s.io"
            ]
        );
        let core = resources(&r, "", "v1").unwrap();
        let names: Vec<&str> = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect();
        assert!(names.contains(&"pods/status") && names.contains(&"configmaps"));
        assert!(resources(&r, "nope.io", "v1").is_none());
        let v = version("v1.32.0-sim");
        assert_eq!(
            (v["minor"].as_str(), v["emulationMinor"].as_str()),
            (Some("32"), Some("32"))
        );
        assert_eq!(v["minCompatibilityMinor"], "31");
        let pods = core["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pods")
            .unwrap();
        assert_eq!(pods["categories"], json!(["all"]));
        assert_eq!(pods["storageVersionHash"], "xPOwRZ+Yhw8=");
        assert!(core.get("apiVersion").is_none());
        assert_eq!(
            group(&r, "apps").unwrap()["preferredVersion"]["version"],
            "v1"
        );
    }
}
