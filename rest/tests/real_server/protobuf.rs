//! Answers in Kubernetes protobuf: kube-apiserver answers a ConfigMap or Secret create, get,
//! list or watch in protobuf when asked, and it decodes into the very objects the same request
//! gives in JSON. (An expired watch's ERROR event, a protobuf Status, is read in the codec's tests
//! from a real server's bytes: tests/fixtures/protobuf/gone.pb there.)

use std::collections::BTreeMap;

use clientgo_apimachinery::{Object, WatchEvent};
use clientgo_envtest::ControlPlane;
use clientgo_rest::{GetParams, ListParams, PostParams, ResourceClient, RestClient, WatchParams};
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde::de::DeserializeOwned;

use crate::{Recording, config, within};

/// The objects of a streaming list (the ADDED events up to the bookmark that ends them).
async fn initial_events<T: DeserializeOwned>(api: &ResourceClient<T>) -> Vec<T> {
    let params = WatchParams {
        send_initial_events: Some(true),
        resource_version_match: Some("NotOlderThan".into()),
        allow_watch_bookmarks: true,
        ..WatchParams::default()
    };
    let mut watch = within("a streaming list", api.watch(&params))
        .await
        .unwrap();
    let mut objects = Vec::new();
    loop {
        let event = within("a watch event", watch.next())
            .await
            .expect("an event before the initial events end")
            .expect("a decoded event");
        match event {
            WatchEvent::Added(object) => objects.push(object),
            WatchEvent::Bookmark(mark) if mark.is_initial_events_end() => return objects,
            WatchEvent::Bookmark(_) => {}
            other => panic!("unexpected {:?}", other.event_type()),
        }
    }
}

fn json_client(cp: &ControlPlane) -> RestClient {
    let mut config = config(cp);
    config.accept_protobuf = false;
    RestClient::new(&config).expect("a client")
}

fn meta(name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    }
}

#[tokio::test]
async fn config_maps_and_secrets_listed_and_watched_in_protobuf_are_the_objects_json_gives() {
    let Some(cp) = crate::control_plane() else {
        return;
    };
    let namespace = cp.create_namespace("protobuf").unwrap();
    let (client, seen) = Recording::client(cp, false);
    let config_maps = ResourceClient::<ConfigMap>::namespaced(&client, &namespace);
    let secrets = ResourceClient::<Secret>::namespaced(&client, &namespace);
    let post = PostParams::default();

    let owner = within(
        "a ConfigMap",
        config_maps.create(
            &ConfigMap {
                metadata: meta("owner"),
                ..ConfigMap::default()
            },
            &post,
        ),
    )
    .await
    .unwrap();
    let rich = ConfigMap {
        metadata: ObjectMeta {
            name: Some("rich".into()),
            labels: Some(BTreeMap::from([("app".into(), "web".into())])),
            annotations: Some(BTreeMap::from([
                (
                    "note".into(),
                    "line\n\"quoted\" \\ é \u{2028} <&> \u{1}".into(),
                ),
                ("empty".into(), String::new()),
            ])),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "owner".into(),
                uid: owner.metadata.uid.clone().unwrap(),
                controller: Some(true),
                block_owner_deletion: Some(false),
            }]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([
            ("k".into(), "v\twith \"quotes\"".into()),
            ("empty".into(), String::new()),
            ("emoji".into(), "😀".into()),
        ])),
        binary_data: Some(BTreeMap::from([(
            "bin".into(),
            ByteString(vec![0, 1, 2, 255]),
        )])),
        immutable: Some(true),
    };
    within("a ConfigMap", config_maps.create(&rich, &post))
        .await
        .unwrap();
    let secret = Secret {
        metadata: meta("secret"),
        type_: Some("example.com/kind".into()),
        data: Some(BTreeMap::from([(
            "x".into(),
            ByteString(b"hello".to_vec()),
        )])),
        ..Secret::default()
    };
    within("a Secret", secrets.create(&secret, &post))
        .await
        .unwrap();

    let from_protobuf = initial_events(&config_maps).await;
    let secrets_from_protobuf = initial_events(&secrets).await;
    let json = json_client(cp);
    let from_json =
        initial_events(&ResourceClient::<ConfigMap>::namespaced(&json, &namespace)).await;
    let secrets_from_json =
        initial_events(&ResourceClient::<Secret>::namespaced(&json, &namespace)).await;

    let lists = ListParams::default();
    let listed = within("a list", config_maps.list(&lists)).await.unwrap();
    let secrets_listed = within("a list", secrets.list(&lists)).await.unwrap();
    let listed_json = within(
        "a list",
        ResourceClient::<ConfigMap>::namespaced(&json, &namespace).list(&lists),
    )
    .await
    .unwrap();
    let secrets_listed_json = within(
        "a list",
        ResourceClient::<Secret>::namespaced(&json, &namespace).list(&lists),
    )
    .await
    .unwrap();

    let got = within("a get", config_maps.get("rich", &GetParams::default()))
        .await
        .unwrap();
    let got_json = within(
        "a get",
        ResourceClient::<ConfigMap>::namespaced(&json, &namespace)
            .get("rich", &GetParams::default()),
    )
    .await
    .unwrap();
    assert_eq!(got, got_json);

    let answered: Vec<_> = seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.accept.contains("protobuf"))
        .map(|s| (s.path.clone(), s.content_type.clone()))
        .collect();
    assert_eq!(
        answered.len(),
        8,
        "three creates, two watches, two lists, a get: {answered:?}"
    );
    for (path, content_type) in &answered {
        assert!(
            content_type.starts_with("application/vnd.kubernetes.protobuf"),
            "{path}: {content_type}"
        );
    }
    assert_eq!(listed.items, listed_json.items);
    assert_eq!(listed.items, from_json);
    assert_eq!(secrets_listed.items, secrets_listed_json.items);
    assert_eq!(from_protobuf.len(), 2, "owner, rich");
    assert_eq!(from_protobuf, from_json);
    assert_eq!(secrets_from_protobuf, secrets_from_json);
    let got = from_protobuf.iter().find(|cm| cm.name() == "rich").unwrap();
    assert_eq!(
        (&got.data, &got.binary_data, got.immutable),
        (&rich.data, &rich.binary_data, Some(true))
    );
    assert_eq!(got.metadata.annotations, rich.metadata.annotations);
    assert_eq!(
        got.metadata.owner_references,
        rich.metadata.owner_references
    );
    assert!(
        got.metadata
            .managed_fields
            .as_ref()
            .is_some_and(|m| !m.is_empty())
    );
    assert_eq!(secrets_from_protobuf[0].data, secret.data);
}
