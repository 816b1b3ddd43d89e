//! Lists whose items carry no `apiVersion`/`kind`, as kube-apiserver writes built-in types'
//! lists (observed on kube-apiserver 1.36.2: `GET /api/v1/namespaces/<ns>/configmaps` answers
//! `{"kind":"ConfigMapList","apiVersion":"v1",...,"items":[{"metadata":...,"data":...}]}`;
//! custom resources' items carry both): every way the client decodes a list keeps working.

use clientgo_apimachinery::{DynamicObject, Object, ObjectList};
use clientgo_rest::{
    DeleteParams, Deleted, DynamicClient, ListParams, MetadataClient, PostParams, ResourceClient,
};
use k8s_openapi::api::core::v1::ConfigMap;
use serde_json::{Value, json};

use crate::common::{self, config_map_resource, config_maps};
use crate::custom::{crd, crds};

async fn seed(s: &common::Sim, namespace: &str) {
    common::namespace(&s.sim, namespace);
    let api = config_maps(&s.client, namespace);
    for name in ["a", "b"] {
        let cm: DynamicObject = serde_json::from_value(json!({"apiVersion": "v1",
            "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": name}}))
        .unwrap();
        api.create(&cm, &PostParams::default()).await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn built_in_list_items_carry_no_type_and_every_decoder_reads_them() {
    let s = common::secure().await;
    seed(&s, "items").await;

    // What the server sends: the list is typed, its items are not.
    let raw: Value = s
        .client
        .get()
        .abs_path("/api/v1/namespaces/items/configmaps")
        .send()
        .await
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(
        (&raw["apiVersion"], &raw["kind"]),
        (&json!("v1"), &json!("ConfigMapList"))
    );
    assert!(raw["items"][0].get("kind").is_none() && raw["items"][0].get("apiVersion").is_none());

    // Typed: k8s-openapi's ConfigMap needs no type in the item.
    let typed = ResourceClient::<ConfigMap>::namespaced(&s.client, "items")
        .list(&ListParams::default())
        .await
        .unwrap();
    let keys: Vec<String> = typed.items.iter().map(|c| c.key()).collect();
    assert_eq!(keys, ["items/a", "items/b"]);
    assert_eq!(typed.items[0].data.as_ref().unwrap()["k"], "a");

    // Dynamic: items get the list's apiVersion and its kind without `List`, as client-go's
    // unstructured list decoder gives them.
    let dynamic = config_maps(&s.client, "items")
        .list(&ListParams::default())
        .await
        .unwrap();
    for item in &dynamic.items {
        assert_eq!(
            (item.api_version(), item.kind()),
            ("v1", "ConfigMap"),
            "{item:?}"
        );
    }
    // So a listed object equals the same object read alone.
    let alone: DynamicObject = s
        .client
        .get()
        .abs_path("/api/v1/namespaces/items/configmaps/a")
        .send()
        .await
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(dynamic.items[0], alone);

    // Metadata: a metadata list decodes items either way.
    let metadata = MetadataClient::metadata(&s.client, &config_map_resource(), Some("items"))
        .list(&ListParams::default())
        .await
        .unwrap();
    let names: Vec<&str> = metadata.items.iter().map(|m| m.name()).collect();
    assert_eq!(names, ["a", "b"]);

    // A collection delete answers the same list form.
    let deleted = config_maps(&s.client, "items")
        .delete_collection(&DeleteParams::default(), &ListParams::default())
        .await
        .unwrap();
    let Deleted::Object(ObjectList { items, .. }) = deleted else {
        panic!("a list of the deleted objects");
    };
    assert!(
        items
            .iter()
            .all(|i| i.kind() == "ConfigMap" && i.api_version() == "v1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resource_items_keep_their_own_type() {
    let s = common::secure().await;
    common::namespace(&s.sim, "crs");
    crds(&s.client)
        .create(
            &crd("example.com", "Gadget", "Namespaced"),
            &PostParams::default(),
        )
        .await
        .unwrap();
    let resource = common::namespaced_v1("example.com", "Gadget", "gadgets");
    let api = DynamicClient::from_api_resource(&s.client, &resource, Some("crs"));
    let gadget: DynamicObject = serde_json::from_value(json!({"apiVersion": "example.com/v1",
        "kind": "Gadget", "metadata": {"name": "g"}}))
    .unwrap();
    api.create(&gadget, &PostParams::default()).await.unwrap();
    let raw: Value = s
        .client
        .get()
        .abs_path("/apis/example.com/v1/namespaces/crs/gadgets")
        .send()
        .await
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(raw["items"][0]["kind"], "Gadget");
    let list = api.list(&ListParams::default()).await.unwrap();
    assert_eq!(
        (list.items[0].api_version(), list.items[0].kind()),
        ("example.com/v1", "Gadget")
    );
}
