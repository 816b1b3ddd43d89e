//! Discovery against the real server: aggregated (`/api` and `/apis` answering
//! `APIGroupDiscoveryList`) and classic (one `APIResourceList` per group version, taken by
//! asking the roots for plain JSON), with the resources, verbs, scopes and subresources
//! kube-apiserver 1.36 serves, and the two paths agreeing resource for resource.

use std::collections::BTreeMap;

use clientgo_apimachinery::{GroupVersion, GroupVersionKind};
use clientgo_rest::discovery::AGGREGATED_V2;
use clientgo_rest::{ApiDiscovery, DiscoveredResource, DiscoveryClient};

use crate::{Recording, client, control_plane, within};

/// Every verb of a resource with the full set, sorted.
const CRUD: &str = "create delete deletecollection get list patch update watch";

fn resource<'a>(
    d: &'a ApiDiscovery,
    group: &str,
    version: &str,
    plural: &str,
) -> &'a DiscoveredResource {
    d.resources_for(&GroupVersion::new(group, version))
        .unwrap_or_else(|| panic!("{group}/{version} is discovered"))
        .iter()
        .find(|r| r.plural == plural)
        .unwrap_or_else(|| panic!("{group}/{version} serves {plural}"))
}

fn sorted(verbs: &[String]) -> Vec<&str> {
    let mut verbs: Vec<&str> = verbs.iter().map(String::as_str).collect();
    verbs.sort_unstable();
    verbs
}

/// What the real server says of pods, namespaces and deployments, whichever path discovered it.
fn assert_core_and_apps(d: &ApiDiscovery) {
    assert!(d.failed().is_empty(), "{:?}", d.failed());
    let core = d.group("").expect("the core group");
    assert_eq!(
        (core.versions.as_slice(), core.preferred_version.as_str()),
        (&["v1".to_owned()][..], "v1")
    );
    assert_eq!(d.groups()[0].name, "", "the core group comes first");
    let apps = d.group("apps").expect("the apps group");
    assert_eq!(apps.preferred_version, "v1");

    let core_v1 = d.resources_for(&GroupVersion::new("", "v1")).unwrap();
    assert!(
        core_v1.iter().all(|r| !r.plural.contains('/')),
        "subresources are folded into their resources"
    );

    let pods = resource(d, "", "v1", "pods");
    assert_eq!((pods.kind.as_str(), pods.singular.as_str()), ("Pod", "pod"));
    assert!(pods.namespaced);
    assert_eq!(sorted(&pods.verbs).join(" "), CRUD);
    assert_eq!(pods.short_names, ["po"]);
    assert_eq!(pods.categories, ["all"]);
    let status = pods.subresource("status").expect("pods/status");
    assert_eq!(status.kind, Some(GroupVersionKind::new("", "v1", "Pod")));
    assert_eq!(sorted(&status.verbs), ["get", "patch", "update"]);
    let eviction = pods.subresource("eviction").expect("pods/eviction");
    assert_eq!(
        eviction.kind,
        Some(GroupVersionKind::new("policy", "v1", "Eviction"))
    );
    assert_eq!(eviction.verbs, ["create"]);
    for sub in ["binding", "ephemeralcontainers", "exec", "log", "resize"] {
        assert!(
            pods.subresource(sub).is_some(),
            "pods/{sub}: {:?}",
            pods.subresources
        );
    }

    let namespaces = resource(d, "", "v1", "namespaces");
    assert_eq!(namespaces.kind, "Namespace");
    assert!(!namespaces.namespaced, "namespaces are cluster-scoped");
    assert_eq!(namespaces.short_names, ["ns"]);
    assert!(
        !namespaces.supports("deletecollection"),
        "{:?}",
        namespaces.verbs
    );
    assert!(namespaces.subresource("finalize").is_some());
    assert!(namespaces.subresource("status").is_some());

    let config_maps = resource(d, "", "v1", "configmaps");
    assert_eq!(
        (config_maps.kind.as_str(), config_maps.namespaced),
        ("ConfigMap", true)
    );
    assert!(
        config_maps.subresources.is_empty(),
        "{:?}",
        config_maps.subresources
    );

    let deployments = resource(d, "apps", "v1", "deployments");
    assert_eq!(
        deployments.gvk(),
        GroupVersionKind::new("apps", "v1", "Deployment")
    );
    assert!(deployments.namespaced);
    assert_eq!(sorted(&deployments.verbs).join(" "), CRUD);
    assert_eq!(deployments.short_names, ["deploy"]);
    assert_eq!(deployments.categories, ["all"]);
    let scale = deployments.subresource("scale").expect("deployments/scale");
    assert_eq!(
        scale.kind,
        Some(GroupVersionKind::new("autoscaling", "v1", "Scale"))
    );
    assert_eq!(sorted(&scale.verbs), ["get", "patch", "update"]);
    let status = deployments
        .subresource("status")
        .expect("deployments/status");
    assert_eq!(
        status.kind,
        Some(GroupVersionKind::new("apps", "v1", "Deployment"))
    );

    let nodes = resource(d, "", "v1", "nodes");
    assert!(!nodes.namespaced);
    let events = d
        .preferred_resources()
        .into_iter()
        .filter(|r| r.plural == "events")
        .map(|r| r.gvk())
        .collect::<Vec<_>>();
    assert_eq!(
        events,
        [
            GroupVersionKind::new("", "v1", "Event"),
            GroupVersionKind::new("events.k8s.io", "v1", "Event")
        ]
    );
}

#[tokio::test]
async fn aggregated_discovery_reports_the_real_core_and_apps_resources() {
    let Some(cp) = control_plane() else { return };
    let (client, seen) = Recording::client(cp, false);
    let discovery = DiscoveryClient::new(&client);
    let version = within("the server version", discovery.server_version())
        .await
        .unwrap();
    assert_eq!(
        (version.major.as_str(), version.minor.as_str()),
        ("1", "36")
    );
    assert_eq!(version.git_version, "v1.36.2");

    let d = within("discovery", discovery.discover()).await.unwrap();
    assert!(d.is_aggregated());
    assert_eq!(d.generation(), 1);
    let roots: Vec<(String, String)> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.path.starts_with("/api"))
        .map(|s| (s.path.clone(), s.content_type.clone()))
        .collect();
    assert_eq!(
        roots.len(),
        2,
        "aggregated discovery takes two requests, /api and /apis: {roots:?}"
    );
    for (path, content_type) in &roots {
        assert_eq!(content_type, AGGREGATED_V2, "{path}");
    }
    assert_core_and_apps(&d);

    let cached = within("cached discovery", discovery.discover())
        .await
        .unwrap();
    assert_eq!(cached.generation(), 1, "served from the cache");
    assert_eq!(
        seen.lock().unwrap().len(),
        3,
        "no request for a cached discovery"
    );
}

#[tokio::test]
async fn classic_discovery_reports_the_real_core_and_apps_resources() {
    let Some(cp) = control_plane() else { return };
    let (client, seen) = Recording::client(cp, true);
    let d = within(
        "classic discovery",
        DiscoveryClient::new(&client).discover(),
    )
    .await
    .unwrap();
    assert!(!d.is_aggregated());
    let seen = seen.lock().unwrap().clone();
    let roots: Vec<&crate::Seen> = seen
        .iter()
        .filter(|s| s.path == "/api" || s.path == "/apis")
        .collect();
    assert_eq!(roots.len(), 2, "{seen:?}");
    for root in roots {
        assert_eq!(root.accept, "application/json", "{root:?}");
        assert!(
            root.content_type.starts_with("application/json") && !root.content_type.contains("as="),
            "{root:?}"
        );
    }
    for path in ["/api/v1", "/apis/apps/v1", "/apis/autoscaling/v2"] {
        assert!(
            seen.iter().any(|s| s.path == path && s.status == 200),
            "{path} was fetched: {seen:?}"
        );
    }
    assert_core_and_apps(&d);
}

/// Group versions of built-in groups (CRDs that other tests of this binary create come and
/// go between the two discoveries), each resource with its verbs and subresources sorted.
fn built_in(d: &ApiDiscovery) -> BTreeMap<String, Vec<DiscoveredResource>> {
    d.group_versions()
        .filter(|(gv, _)| !gv.group.ends_with(".example.com"))
        .map(|(gv, resources)| {
            let mut resources = resources.to_vec();
            for r in &mut resources {
                r.verbs.sort();
                r.subresources.sort_by(|a, b| a.name.cmp(&b.name));
                for s in &mut r.subresources {
                    s.verbs.sort();
                }
            }
            resources.sort_by(|a, b| a.plural.cmp(&b.plural));
            (gv.to_string(), resources)
        })
        .collect()
}

#[tokio::test]
async fn aggregated_and_classic_discovery_agree_resource_for_resource() {
    let Some(cp) = control_plane() else { return };
    let aggregated = within(
        "aggregated discovery",
        DiscoveryClient::new(&client(cp)).discover(),
    )
    .await
    .unwrap();
    let (classic_client, _) = Recording::client(cp, true);
    let classic = within(
        "classic discovery",
        DiscoveryClient::new(&classic_client).discover(),
    )
    .await
    .unwrap();
    assert!(aggregated.is_aggregated() && !classic.is_aggregated());

    let groups = |d: &ApiDiscovery| {
        d.groups()
            .iter()
            .filter(|g| !g.name.ends_with(".example.com"))
            .map(|g| {
                (
                    g.name.clone(),
                    g.versions.clone(),
                    g.preferred_version.clone(),
                )
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(
        groups(&aggregated),
        groups(&classic),
        "groups, versions and preferences"
    );

    let (aggregated, classic) = (built_in(&aggregated), built_in(&classic));
    assert_eq!(
        aggregated.keys().collect::<Vec<_>>(),
        classic.keys().collect::<Vec<_>>(),
        "group versions"
    );
    assert!(aggregated.len() > 20, "{:?}", aggregated.keys());
    let mut differences = Vec::new();
    for (gv, resources) in &aggregated {
        let other = &classic[gv];
        let plurals =
            |rs: &[DiscoveredResource]| rs.iter().map(|r| r.plural.clone()).collect::<Vec<_>>();
        if plurals(resources) != plurals(other) {
            differences.push(format!(
                "{gv}: aggregated {:?}, classic {:?}",
                plurals(resources),
                plurals(other)
            ));
            continue;
        }
        for (a, c) in resources.iter().zip(other) {
            if a != c {
                differences.push(format!(
                    "{gv} {}:\n  aggregated {a:?}\n  classic    {c:?}",
                    a.plural
                ));
            }
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}
