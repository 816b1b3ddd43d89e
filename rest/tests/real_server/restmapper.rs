//! The RESTMapper on the real API surface: kinds to resources and back for built-in kinds,
//! and a CRD created after the mapper's snapshot, which resolves after one refresh.

use clientgo_apimachinery::{
    ApiResource, DynamicObject, GroupVersion, GroupVersionKind, GroupVersionResource, Object,
    WatchEvent,
};
use clientgo_rest::{
    DeleteParams, DiscoveryClient, DynamicClient, GetParams, MappingError, PostParams, RestMapper,
    WatchParams,
};
use serde_json::json;

use crate::{COMPACTION, client, control_plane, within};

fn gvk(group: &str, version: &str, kind: &str) -> GroupVersionKind {
    GroupVersionKind::new(group, version, kind)
}

fn gvr(group: &str, version: &str, resource: &str) -> GroupVersionResource {
    GroupVersionResource::new(group, version, resource)
}

#[tokio::test]
async fn the_rest_mapper_maps_built_in_kinds_to_resources_and_back() {
    let Some(cp) = control_plane() else { return };
    let mapper = RestMapper::for_client(&client(cp));

    let deployments = within(
        "a mapping",
        mapper.resource_for_kind(&gvk("apps", "v1", "Deployment")),
    )
    .await
    .unwrap();
    assert_eq!(
        deployments,
        ApiResource {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
            namespaced: true,
        }
    );
    let namespaces = mapper
        .resource_for_kind(&gvk("", "v1", "Namespace"))
        .await
        .unwrap();
    assert_eq!(
        (namespaces.plural.as_str(), namespaces.namespaced),
        ("namespaces", false)
    );
    let leases = mapper
        .mapping("coordination.k8s.io", "Lease", &[])
        .await
        .unwrap();
    assert_eq!(
        (leases.version.as_str(), leases.plural.as_str()),
        ("v1", "leases")
    );
    let hpa = mapper
        .mapping("autoscaling", "HorizontalPodAutoscaler", &[])
        .await
        .unwrap();
    assert_eq!(hpa.version, "v2", "the preferred version of autoscaling");
    let hpa_v1 = mapper
        .mapping("autoscaling", "HorizontalPodAutoscaler", &["v1"])
        .await
        .unwrap();
    assert_eq!(hpa_v1.version, "v1");

    assert_eq!(
        mapper.kind_for(&gvr("", "", "deploy")).await.unwrap(),
        gvk("apps", "v1", "Deployment"),
        "a short name"
    );
    assert_eq!(
        mapper.kind_for(&gvr("", "", "Pod")).await.unwrap(),
        gvk("", "v1", "Pod")
    );
    assert_eq!(
        mapper.kind_for(&gvr("", "", "events")).await.unwrap(),
        gvk("", "v1", "Event"),
        "the core group's events first"
    );
    assert_eq!(
        mapper
            .kind_for(&gvr("events.k8s.io", "", "events"))
            .await
            .unwrap(),
        gvk("events.k8s.io", "v1", "Event")
    );
    assert_eq!(
        mapper.discovery().generation(),
        1,
        "every hit from one discovery"
    );

    let missing = mapper
        .resource_for_kind(&gvk("apps", "v1", "NoSuchKind"))
        .await
        .unwrap_err();
    assert!(
        matches!(&missing, MappingError::NoKindMatch { group, kind, .. } if group == "apps" && kind == "NoSuchKind"),
        "{missing}"
    );
    assert_eq!(
        mapper.discovery().generation(),
        2,
        "a miss refreshes discovery once"
    );
    let subresource = mapper
        .resource_for(&gvr("", "v1", "pods/status"))
        .await
        .unwrap_err();
    assert!(
        subresource.is_no_match(),
        "subresources are not mapped: {subresource}"
    );
}

/// A namespaced CRD of kind `Gadget` in `group`, served as v1.
fn gadget_crd(group: &str) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("gadgets.{group}")},
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget",
                      "listKind": "GadgetList", "shortNames": ["gdg"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}
            }]
        }
    }))
    .expect("a CRD manifest")
}

fn is_established(crd: &DynamicObject) -> bool {
    crd.data["status"]["conditions"]
        .as_array()
        .is_some_and(|conditions| {
            conditions
                .iter()
                .any(|c| c["type"] == "Established" && c["status"] == "True")
        })
}

/// Waits, on a watch of the CRD, until it is Established.
async fn until_established(crds: &DynamicClient, created: &DynamicObject) {
    if is_established(created) {
        return;
    }
    let params = WatchParams {
        field_selector: Some(format!("metadata.name={}", created.name())),
        resource_version: Some(created.resource_version().to_owned()),
        ..WatchParams::default()
    };
    let mut watch = within("the CRD watch", crds.watch(&params)).await.unwrap();
    within("the CRD to be Established", async {
        while let Some(event) = watch.next().await {
            match event.expect("a watch event") {
                WatchEvent::Added(crd) | WatchEvent::Modified(crd) if is_established(&crd) => {
                    return;
                }
                WatchEvent::Deleted(_) | WatchEvent::Error(_) => panic!("the CRD went away"),
                _ => {}
            }
        }
        panic!("the CRD watch ended before the CRD was Established");
    })
    .await;
}

/// Discovery (of a client of its own) until it serves `gv`: the server publishes a new CRD in
/// its discovery documents a moment after it is Established.
async fn until_discovered(discovery: &DiscoveryClient, gv: &GroupVersion) {
    within("the CRD to be discovered", async {
        loop {
            let d = discovery.refresh().await.expect("discovery");
            if d.resources_for(gv)
                .is_some_and(|r| r.iter().any(|r| r.plural == "gadgets"))
            {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    })
    .await;
}

#[tokio::test]
async fn the_rest_mapper_refreshes_on_a_miss_to_find_a_crd_created_after_its_snapshot() {
    let Some(cp) = control_plane() else { return };
    let _no_compaction = COMPACTION.read().await;
    let namespace = cp.create_namespace("mapper").unwrap();
    let client = client(cp);
    let group = format!("{namespace}.example.com");
    let kind = gvk(&group, "v1", "Gadget");

    let mapper = RestMapper::for_client(&client);
    let before = within("a first snapshot", mapper.snapshot()).await.unwrap();
    assert!(before.resource_for_kind(&kind).is_none());
    assert_eq!(mapper.discovery().generation(), 1);

    let crds = within(
        "the CRDs' client, from their kind",
        mapper.dynamic_client(
            &client,
            &gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            None,
        ),
    )
    .await
    .unwrap();
    let created = within(
        "the CRD",
        crds.create(&gadget_crd(&group), &PostParams::default()),
    )
    .await
    .unwrap();
    until_established(&crds, &created).await;
    until_discovered(
        &DiscoveryClient::new(&client),
        &GroupVersion::new(&group, "v1"),
    )
    .await;

    let gadgets = within("the CRD's mapping", mapper.resource_for_kind(&kind))
        .await
        .unwrap();
    assert_eq!(
        gadgets,
        ApiResource {
            group: group.clone(),
            version: "v1".into(),
            kind: "Gadget".into(),
            plural: "gadgets".into(),
            namespaced: true,
        }
    );
    assert_eq!(
        mapper.discovery().generation(),
        2,
        "one refresh on the miss"
    );
    assert_eq!(
        mapper.mapping(&group, "Gadget", &[]).await.unwrap(),
        gadgets
    );
    assert_eq!(
        mapper.kind_for(&gvr("", "", "gdg")).await.unwrap(),
        kind,
        "its short name"
    );
    assert_eq!(
        mapper.kind_for(&gvr(&group, "v1", "gadget")).await.unwrap(),
        kind
    );
    let snapshot = mapper.snapshot().await.unwrap();
    assert_eq!(snapshot.generation(), 2);
    let d = mapper.discovery().cached().unwrap();
    let discovered = d
        .resources_for(&GroupVersion::new(&group, "v1"))
        .unwrap()
        .iter()
        .find(|r| r.plural == "gadgets")
        .unwrap();
    assert_eq!(discovered.short_names, ["gdg"]);
    assert_eq!(
        discovered
            .subresource("status")
            .and_then(|s| s.kind.clone()),
        Some(kind.clone())
    );
    assert_eq!(mapper.discovery().generation(), 2, "hits need no refresh");

    // A client made from the kind works on the real server.
    let api = within(
        "a dynamic client",
        mapper.dynamic_client(&client, &kind, Some(&namespace)),
    )
    .await
    .unwrap();
    let gadget: DynamicObject = serde_json::from_value(json!({
        "apiVersion": format!("{group}/v1"), "kind": "Gadget",
        "metadata": {"name": "first"}, "spec": {"size": 3}
    }))
    .unwrap();
    within("a gadget", api.create(&gadget, &PostParams::default()))
        .await
        .unwrap();
    let read = within("the gadget", api.get("first", &GetParams::default()))
        .await
        .unwrap();
    assert_eq!(
        (read.namespace(), read.data["spec"]["size"].as_i64()),
        (namespace.as_str(), Some(3))
    );

    within(
        "the CRD's deletion",
        crds.delete(created.name(), &DeleteParams::default()),
    )
    .await
    .unwrap();
}
