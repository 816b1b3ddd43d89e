//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/<group>`, `/api/v1`,
//! `/apis/<group>/<version>`.
//!
//! Mirrors `endpoints/discovery` (legacy, unaggregated discovery): `APIVersions`,
//! `APIGroupList`, `APIGroup` and `APIResourceList` with each resource's name, singular
//! name, scope, kind, verbs, short names and its `status` subresource. kubectl 1.32 first
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

/// `/version`.
pub fn version(git_version: &str) -> Value {
    let (major, minor) = git_version
        .trim_start_matches('v')
        .split_once('.')
        .map(|(a, b)| (a.to_owned(), b.split('.').next().unwrap_or("").to_owned()))
        .unwrap_or_default();
    json!({
        "major": major, "minor": minor, "gitVersion": git_version,
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

fn resource_doc(r: &ResourceInfo) -> Vec<Value> {
    let mut main = json!({
        "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
        "kind": r.kind, "verbs": VERBS,
    });
    if !r.short_names.is_empty() {
        main["shortNames"] = json!(r.short_names);
    }
    if !r.strategic_merge || r.group == "apiextensions.k8s.io" {
        main["categories"] = json!(if r.strategic_merge {
            vec!["api-extensions"]
        } else {
            vec!["all"]
        });
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
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
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
        assert_eq!(version("v1.32.0-sim")["minor"], "32");
        assert_eq!(
            group(&r, "apps").unwrap()["preferredVersion"]["version"],
            "v1"
        );
    }
}
