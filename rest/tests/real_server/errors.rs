//! Typed errors as the real server sends them: its `Status` bodies for 404, 409, 422 and 410
//! become `ApiError`s with the server's reason, code, message and causes, and the plain-text
//! `404 page not found` of an unserved group version becomes a clear NotFound.

use std::collections::BTreeMap;

use clientgo_apimachinery::{ApiResource, DynamicObject, Object, StatusReason, WatchEvent};
use clientgo_rest::api_error::CAUSE_UNEXPECTED_SERVER_RESPONSE;
use clientgo_rest::{
    ApiError, DynamicClient, Error, GetParams, ListParams, PostParams, ResourceClient, WatchParams,
};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Container, PodSpec, PodTemplate, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::json;

use crate::{COMPACTION, Recording, client, control_plane, within};
use clientgo_envtest::ControlPlane;

fn config_map(name: &str, value: &str) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([("key".to_owned(), value.to_owned())])),
        ..ConfigMap::default()
    }
}

type Predicate = (&'static str, fn(&Error) -> bool);

/// The names of the predicates that hold for `error`.
fn predicates(error: &Error) -> Vec<&'static str> {
    let all: [Predicate; 9] = [
        ("not_found", Error::is_not_found),
        ("already_exists", Error::is_already_exists),
        ("conflict", Error::is_conflict),
        ("gone", Error::is_gone),
        ("resource_expired", Error::is_resource_expired),
        ("invalid", Error::is_invalid),
        ("forbidden", Error::is_forbidden),
        ("bad_request", Error::is_bad_request),
        ("internal_error", Error::is_internal_error),
    ];
    all.iter()
        .filter(|(_, p)| p(error))
        .map(|(n, _)| *n)
        .collect()
}

/// The `ApiError` of a failed request, checked: exactly `holding` of the predicates hold,
/// and its Status has `code` and `reason`.
fn api_error<'a>(
    error: &'a Error,
    holding: &[&str],
    code: i32,
    reason: StatusReason,
) -> &'a ApiError {
    assert_eq!(predicates(error), holding, "{error}");
    let api = error
        .api_error()
        .unwrap_or_else(|| panic!("not an API error: {error}"));
    assert_eq!((api.code(), &api.status.reason), (code, &reason), "{error}");
    api
}

/// (field, reason) of each cause of the error's Status.
fn causes(error: &ApiError) -> Vec<(String, String)> {
    error
        .status
        .details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| (c.field.clone(), c.reason.clone()))
                .collect()
        })
        .unwrap_or_default()
}

/// A fresh namespace and a ConfigMap client in it.
fn config_maps(cp: &ControlPlane) -> (String, ResourceClient<ConfigMap>) {
    let namespace = cp.create_namespace("errors").unwrap();
    let api = ResourceClient::namespaced(&client(cp), &namespace);
    (namespace, api)
}

/// Creates the ConfigMap `name` with `key: value`.
async fn create(
    api: &ResourceClient<ConfigMap>,
    name: &str,
    value: &str,
) -> Result<ConfigMap, Error> {
    within(
        "a create",
        api.create(&config_map(name, value), &PostParams::default()),
    )
    .await
}

#[tokio::test]
async fn a_missing_object_is_not_found_as_the_server_says() {
    let Some(cp) = control_plane() else { return };
    let (_, api) = config_maps(cp);
    let error = within("a get", api.get("absent", &GetParams::default()))
        .await
        .unwrap_err();
    let e = api_error(&error, &["not_found"], 404, StatusReason::NotFound);
    assert_eq!(e.http_code, 404);
    assert_eq!(e.status.message, r#"configmaps "absent" not found"#);
    let details = e.status.details.as_ref().expect("details");
    assert_eq!(
        (details.name.as_str(), details.kind.as_str()),
        ("absent", "configmaps")
    );
    assert!(
        !e.has_cause(CAUSE_UNEXPECTED_SERVER_RESPONSE),
        "the server's Status, not a synthesised one"
    );
}

#[tokio::test]
async fn creating_an_existing_object_is_already_exists() {
    let Some(cp) = control_plane() else { return };
    let (_, api) = config_maps(cp);
    create(&api, "twice", "a").await.unwrap();
    let error = create(&api, "twice", "b").await.unwrap_err();
    let e = api_error(
        &error,
        &["already_exists"],
        409,
        StatusReason::AlreadyExists,
    );
    assert_eq!(e.status.message, r#"configmaps "twice" already exists"#);
}

#[tokio::test]
async fn an_update_with_a_stale_resource_version_is_a_conflict() {
    let Some(cp) = control_plane() else { return };
    let (_, api) = config_maps(cp);
    let stale = create(&api, "raced", "a").await.unwrap();
    let update = |value: &str| {
        let mut cm = stale.clone();
        cm.data = Some(BTreeMap::from([("key".to_owned(), value.to_owned())]));
        let api = api.clone();
        async move {
            within(
                "an update",
                api.update("raced", &cm, &PostParams::default()),
            )
            .await
        }
    };
    let updated = update("first").await.unwrap();
    assert_ne!(updated.resource_version(), stale.resource_version());

    let error = update("second").await.unwrap_err();
    let e = api_error(&error, &["conflict"], 409, StatusReason::Conflict);
    assert_eq!(
        e.status.message,
        r#"Operation cannot be fulfilled on configmaps "raced": the object has been modified; please apply your changes to the latest version and try again"#
    );
    let kept = api.get("raced", &GetParams::default()).await.unwrap();
    assert_eq!(
        kept.data.unwrap()["key"],
        "first",
        "the stale update changed nothing"
    );
}

#[tokio::test]
async fn an_invalid_object_is_invalid_with_the_fields_at_fault_as_causes() {
    let Some(cp) = control_plane() else { return };
    let (namespace, api) = config_maps(cp);
    let error = create(&api, "Not_A_Name", "a").await.unwrap_err();
    let e = api_error(&error, &["invalid"], 422, StatusReason::Invalid);
    assert!(
        e.status.message.starts_with(
            r#"ConfigMap "Not_A_Name" is invalid: metadata.name: Invalid value: "Not_A_Name""#
        ),
        "{}",
        e.status.message
    );
    assert_eq!(
        causes(e),
        [("metadata.name".to_owned(), "FieldValueInvalid".to_owned())]
    );
    assert!(e.has_cause("FieldValueInvalid"));

    let deployment: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "no-selector"},
        "spec": {"template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
        }}
    }))
    .unwrap();
    let deployments = DynamicClient::from_api_resource(
        api.client(),
        &ApiResource::of::<Deployment>(),
        Some(&namespace),
    );
    let error = within(
        "a deployment without a selector",
        deployments.create(&deployment, &PostParams::default()),
    )
    .await
    .unwrap_err();
    let e = api_error(&error, &["invalid"], 422, StatusReason::Invalid);
    let details = e.status.details.as_ref().expect("details");
    assert_eq!(
        (
            details.group.as_str(),
            details.kind.as_str(),
            details.name.as_str()
        ),
        ("apps", "Deployment", "no-selector")
    );
    let causes = causes(e);
    assert!(
        causes.contains(&("spec.selector".to_owned(), "FieldValueRequired".to_owned())),
        "{causes:?}"
    );
}

fn pod_spec() -> PodSpec {
    PodSpec {
        containers: vec![Container {
            name: "main".into(),
            image: Some("registry.k8s.io/pause:3.10".into()),
            ..Container::default()
        }],
        ..PodSpec::default()
    }
}

fn pod_template(name: &str) -> PodTemplate {
    PodTemplate {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        template: Some(PodTemplateSpec {
            metadata: None,
            spec: Some(pod_spec()),
        }),
    }
}

#[tokio::test]
async fn a_list_or_watch_from_a_compacted_resource_version_is_expired() {
    let Some(cp) = control_plane() else { return };
    let _alone = COMPACTION.write().await;
    let namespace = cp.create_namespace("expired").unwrap();
    let api = ResourceClient::<PodTemplate>::namespaced(&client(cp), &namespace);
    let create = |name: &'static str| {
        let api = api.clone();
        async move {
            within(
                "a pod template",
                api.create(&pod_template(name), &PostParams::default()),
            )
            .await
        }
    };
    let old = create("old").await.unwrap();
    // A watch from `old` starts at the next revision: two more writes put that one behind
    // the compaction too.
    let new = create("new").await.unwrap();
    create("newer").await.unwrap();
    let old_version = old.resource_version().to_owned();
    let exact = ListParams {
        resource_version: Some(old_version.clone()),
        resource_version_match: Some("Exact".into()),
        ..ListParams::default()
    };
    let before = within("a list at an exact version", api.list(&exact))
        .await
        .unwrap();
    assert_eq!(before.items.len(), 1, "the list as it was at that version");

    let compacted = cp.compact().unwrap();
    let new_version: u64 = new.resource_version().parse().unwrap();
    assert!(compacted > new_version, "{compacted} > {new_version}");

    let error = within("a list at a compacted version", api.list(&exact))
        .await
        .unwrap_err();
    // Expired, not Gone: apimachinery's IsGone matches the reason Gone only.
    let e = api_error(&error, &["resource_expired"], 410, StatusReason::Expired);
    assert_eq!(e.http_code, 410);
    assert!(e.status.message.contains("too old"), "{}", e.status.message);

    // A watch from that version opens (200) and ends with the 410 as an ERROR event.
    let params = WatchParams {
        resource_version: Some(old_version),
        ..WatchParams::default()
    };
    let mut watch = within("a watch", api.watch(&params)).await.unwrap();
    let event = within("the watch's first event", watch.next())
        .await
        .expect("an event")
        .expect("a decoded event");
    let WatchEvent::Error(status) = event else {
        panic!("not an ERROR event: {event:?}")
    };
    assert_eq!(
        (status.code, status.reason.clone()),
        (410, StatusReason::Expired)
    );
    assert!(status.is_resource_expired());
}

#[tokio::test]
async fn an_unserved_group_version_is_a_clear_not_found_from_plain_text() {
    let Some(cp) = control_plane() else { return };
    let (client, seen) = Recording::client(cp, false);
    let things = ApiResource {
        group: "nope.example.com".into(),
        version: "v1".into(),
        kind: "Thing".into(),
        plural: "things".into(),
        namespaced: false,
    };
    let api = DynamicClient::from_api_resource(&client, &things, None);
    let error = within(
        "a get of an unserved group",
        api.get("x", &GetParams::default()),
    )
    .await
    .unwrap_err();
    let seen = seen.lock().unwrap().clone();
    let [response] = seen.as_slice() else {
        panic!("one response, no retry: {seen:?}")
    };
    assert_eq!(response.path, "/apis/nope.example.com/v1/things/x");
    assert_eq!(response.status, 404);
    assert!(
        response.content_type.starts_with("text/plain"),
        "{response:?}"
    );

    let e = api_error(&error, &["not_found"], 404, StatusReason::NotFound);
    assert_eq!(
        e.status.message,
        "the server could not find the requested resource (get things.nope.example.com x)"
    );
    let details = e.status.details.as_ref().expect("details");
    assert_eq!(details.causes.len(), 1);
    assert_eq!(details.causes[0].reason, CAUSE_UNEXPECTED_SERVER_RESPONSE);
    assert_eq!(details.causes[0].message, "404 page not found");

    let list = within(
        "a list of an unserved group",
        api.list(&ListParams::default()),
    )
    .await
    .unwrap_err();
    api_error(&list, &["not_found"], 404, StatusReason::NotFound);
}
