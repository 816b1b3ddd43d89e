//! Every helper on a custom resource, through a DynamicClient the RESTMapper makes from the
//! kind of a CRD created at run time.

use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, GroupVersionKind, Object, WatchEvent};
use clientgo_rest::{
    DeleteParams, Deleted, DynamicClient, GetParams, ListParams, PatchParams, PatchType,
    PostParams, RestClient, RestMapper, WatchParams,
};
use serde_json::{Value, json};

use crate::common::{self, within};

/// The CRDs resource.
pub fn crds(client: &RestClient) -> DynamicClient {
    let resource = ApiResource {
        group: "apiextensions.k8s.io".into(),
        version: "v1".into(),
        kind: "CustomResourceDefinition".into(),
        plural: "customresourcedefinitions".into(),
        namespaced: false,
    };
    DynamicClient::from_api_resource(client, &resource, None)
}

/// A CRD of `kind` (plural: lower-case kind + "s") in `group`, with a status subresource.
pub fn crd(group: &str, kind: &str, scope: &str) -> DynamicObject {
    let plural = format!("{}s", kind.to_ascii_lowercase());
    let manifest = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.{group}")},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {"plural": plural, "singular": kind.to_ascii_lowercase(), "kind": kind,
                      "listKind": format!("{kind}List"), "shortNames": ["wg"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}
            }]
        }
    });
    serde_json::from_value(manifest).expect("a CRD manifest")
}

fn widget(name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "labels": {"tier": "gold"}},
        "spec": {"size": size}
    }))
    .expect("a widget")
}

fn size(w: &DynamicObject) -> &Value {
    &w.data["spec"]["size"]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resource_verbs_through_the_rest_mapper() {
    let s = common::secure().await;
    common::namespace(&s.sim, "crs");
    let crds = crds(&s.client);
    crds.create(
        &crd("example.com", "Widget", "Namespaced"),
        &PostParams::default(),
    )
    .await
    .unwrap();
    common::eventually(
        Duration::from_secs(10),
        "the CRD to be established",
        || async {
            let crd = crds
                .get("widgets.example.com", &GetParams::default())
                .await
                .unwrap();
            crd.data["status"]["conditions"]
                .to_string()
                .contains("Established")
        },
    )
    .await;

    let mapper = RestMapper::for_client(&s.client);
    let gvk = GroupVersionKind::new("example.com", "v1", "Widget");
    let api = mapper
        .dynamic_client(&s.client, &gvk, Some("crs"))
        .await
        .unwrap();
    let post = PostParams::default();

    let start = api.list(&ListParams::default()).await.unwrap();
    let mut watch = api
        .watch(&WatchParams {
            resource_version: Some(start.resource_version().to_owned()),
            ..WatchParams::default()
        })
        .await
        .unwrap();

    let w = api.create(&widget("w1", 1), &post).await.unwrap();
    assert_eq!(w.metadata.generation, 1);
    let got = api.get("w1", &GetParams::default()).await.unwrap();
    assert_eq!(got.metadata.uid, w.metadata.uid);
    api.create(&widget("w2", 2), &post).await.unwrap();
    let listed = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(listed.items.len(), 2);

    // update keeps the status; update_status changes only the status.
    let mut bigger = got.clone();
    bigger.data.insert("spec".into(), json!({"size": 3}));
    bigger
        .data
        .insert("status".into(), json!({"ready": "ignored"}));
    let updated = api.update("w1", &bigger, &post).await.unwrap();
    assert_eq!(
        (size(&updated), updated.data.get("status")),
        (&json!(3), None)
    );
    assert_eq!(updated.metadata.generation, 2);
    let mut ready = updated.clone();
    ready.data.insert("status".into(), json!({"ready": true}));
    ready.data.insert("spec".into(), json!({"size": 99}));
    let with_status = api.update_status("w1", &ready, &post).await.unwrap();
    assert_eq!(with_status.data["status"]["ready"], json!(true));
    assert_eq!(
        size(&with_status),
        &json!(3),
        "a status write leaves the spec"
    );

    let merged = api
        .patch(
            "w1",
            PatchType::Merge,
            &json!({"spec": {"color": "red"}}),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(merged.data["spec"]["color"], "red");
    let op = json!([{"op": "replace", "path": "/spec/size", "value": 4}]);
    let patched = api
        .patch("w1", PatchType::Json, &op, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(size(&patched), &json!(4));
    let err = api
        .patch(
            "w1",
            PatchType::StrategicMerge,
            &json!({"spec": {}}),
            &PatchParams::default(),
        )
        .await
        .unwrap_err();
    assert_eq!(err.api_error().map(|e| e.code()), Some(415), "{err}");
    let applied = api
        .patch(
            "w3",
            PatchType::Apply,
            &widget("w3", 7),
            &PatchParams::apply("tests"),
        )
        .await
        .unwrap();
    assert_eq!(size(&applied), &json!(7));

    match api.delete("w2", &DeleteParams::default()).await.unwrap() {
        Deleted::Status(status) => assert_eq!(status.status, "Success"),
        other => panic!("{other:?}"),
    }
    let gold = ListParams {
        label_selector: Some("tier=gold".into()),
        ..ListParams::default()
    };
    let Deleted::Object(gone) = api
        .delete_collection(&DeleteParams::default(), &gold)
        .await
        .unwrap()
    else {
        panic!("deletecollection answers the list")
    };
    let mut names: Vec<&str> = gone.items.iter().map(|w| w.name()).collect();
    names.sort_unstable();
    assert_eq!(names, ["w1", "w3"]);

    let mut seen = Vec::new();
    while seen.len() < 10 {
        let event = within(Duration::from_secs(10), "widget events", watch.next()).await;
        let event = event.expect("open").expect("decodes");
        let name = event
            .object()
            .map(|o| o.name().to_owned())
            .unwrap_or_default();
        seen.push(format!("{} {name}", event.event_type()));
        assert!(!matches!(event, WatchEvent::Error(_)));
    }
    assert_eq!(
        seen,
        [
            "ADDED w1",
            "ADDED w2",
            "MODIFIED w1",
            "MODIFIED w1",
            "MODIFIED w1",
            "MODIFIED w1",
            "ADDED w3",
            "DELETED w2",
            "DELETED w1",
            "DELETED w3"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_scoped_custom_resources() {
    let s = common::secure().await;
    crds(&s.client)
        .create(
            &crd("infra.example.com", "Gadget", "Cluster"),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let mapper = RestMapper::for_client(&s.client);
    let gvk = GroupVersionKind::new("infra.example.com", "", "Gadget");
    let resource = mapper.resource_for_kind(&gvk).await.unwrap();
    assert_eq!(
        (resource.plural.as_str(), resource.namespaced),
        ("gadgets", false)
    );
    // A namespace given for a cluster-scoped resource is ignored, as in client-go.
    let api = mapper
        .dynamic_client(&s.client, &gvk, Some("default"))
        .await
        .unwrap();
    assert_eq!(api.namespace(), None);
    let g = DynamicObject::for_resource(&resource, "g1").with_field("spec", json!({"x": 1}));
    let created = api.create(&g, &PostParams::default()).await.unwrap();
    assert_eq!(created.metadata.namespace, "");
    assert_eq!(
        api.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
}
