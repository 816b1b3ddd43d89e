//! Events recorded through the broadcaster and the REST sink into a real kube-apiserver 1.36
//! (clientgo-envtest): a core/v1 Event about a real object, the same event counted up into one
//! stored Event by patches, and similar events combined, as the server stores them and as
//! `events.k8s.io/v1` shows them; and the server's refusal in a terminating namespace, which
//! the sink must recognise to give up quietly.

use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, Object, ObjectMeta, Time};
use clientgo_envtest::ControlPlane;
use clientgo_record::{
    Event, EventBroadcaster, EventRecorder, EventSink, EventSource, EventType, EventWatcher,
    NAMESPACE_TERMINATING_CAUSE, ObjectReference, RestEventSink, SinkError,
};
use clientgo_rest::{Config, DynamicClient, ListParams, PostParams, RestClient};
use serde_json::json;
use tokio::time::Instant;

/// The bound of every wait on the server.
const WAIT: Duration = Duration::from_secs(30);
const COMPONENT: &str = "sample-controller";

fn resource(group: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

/// A namespace of the test's own, a client, a ConfigMap there to record events about, and a
/// recorder whose broadcaster writes through the client.
struct Scene {
    namespace: String,
    client: RestClient,
    object: ObjectReference,
    broadcaster: EventBroadcaster,
    watcher: EventWatcher,
    recorder: EventRecorder,
}

/// `None` when no control plane can run here (the reason is printed).
async fn scene(prefix: &str) -> Option<Scene> {
    let cp = ControlPlane::shared()?;
    let namespace = cp.create_namespace(prefix).unwrap();
    let config = Config::from_kubeconfig_file(cp.kubeconfig_path()).expect("the kubeconfig loads");
    let client = RestClient::new(&config).expect("a client");
    let config_maps = DynamicClient::from_api_resource(
        &client,
        &resource("", "ConfigMap", "configmaps"),
        Some(&namespace),
    );
    let config_map: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "settings"},
        "data": {"k": "v"},
    }))
    .unwrap();
    let created = config_maps
        .create(&config_map, &PostParams::default())
        .await
        .expect("the ConfigMap is created");
    let object = ObjectReference::from_dynamic(&created);
    let broadcaster = EventBroadcaster::new();
    let watcher = broadcaster.start_recording_to_sink(RestEventSink::new(&client));
    let recorder = broadcaster.new_recorder(EventSource::component(COMPONENT));
    Some(Scene {
        namespace,
        client,
        object,
        broadcaster,
        watcher,
        recorder,
    })
}

/// Lists the `events` of `group` in `namespace` until `done` holds for them, at most
/// [`WAIT`]; returns the last list.
async fn events_until(
    client: &RestClient,
    group: &str,
    namespace: &str,
    done: impl Fn(&[DynamicObject]) -> bool,
) -> Vec<DynamicObject> {
    let events = DynamicClient::from_api_resource(
        client,
        &resource(group, "Event", "events"),
        Some(namespace),
    );
    let deadline = Instant::now() + WAIT;
    loop {
        let list = events.list(&ListParams::default()).await.expect("events");
        if done(&list.items) {
            return list.items;
        }
        assert!(
            Instant::now() < deadline,
            "not within {WAIT:?}: {:#?}",
            list.items.iter().map(|e| &e.data).collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

impl Scene {
    /// Shuts the broadcaster down once its queued events are written.
    async fn stop(self) {
        self.broadcaster.shutdown();
        self.watcher.join().await;
        assert_eq!(self.broadcaster.dropped_events(), 0);
    }
}

#[tokio::test]
async fn a_recorded_event_is_stored_as_a_core_v1_event_about_its_object() {
    let Some(scene) = scene("event").await else {
        return;
    };
    let (client, namespace, object) = (&scene.client, &scene.namespace, &scene.object);
    scene
        .recorder
        .event(object, EventType::Warning, "ErrResourceExists", "not ours");

    let events = events_until(client, "", namespace, |events| !events.is_empty()).await;
    assert_eq!(events.len(), 1);
    let event = &events[0];
    assert!(event.name().starts_with("settings."), "{}", event.name());
    assert_eq!(event.namespace(), namespace);
    let involved = &event.data["involvedObject"];
    assert_eq!(involved["kind"], "ConfigMap");
    assert_eq!(involved["apiVersion"], "v1");
    assert_eq!(involved["namespace"], namespace.as_str());
    assert_eq!(involved["name"], "settings");
    assert_eq!(involved["uid"], object.uid.as_str());
    assert_eq!(
        involved["resourceVersion"],
        object.resource_version.as_str()
    );
    assert_eq!(event.data["type"], "Warning");
    assert_eq!(event.data["reason"], "ErrResourceExists");
    assert_eq!(event.data["message"], "not ours");
    assert_eq!(event.data["count"], 1);
    assert_eq!(event.data["source"]["component"], COMPONENT);
    assert_eq!(event.data["reportingComponent"], COMPONENT);
    assert_eq!(event.data["firstTimestamp"], event.data["lastTimestamp"]);

    // The same event through the newer API, converted by the server.
    let converted = events_until(client, "events.k8s.io", namespace, |events| {
        events.len() == 1
    })
    .await;
    let converted = &converted[0];
    assert_eq!(converted.name(), event.name());
    assert_eq!(converted.data["note"], "not ours");
    assert_eq!(converted.data["regarding"]["uid"], object.uid.as_str());
    assert_eq!(converted.data["reportingController"], COMPONENT);
    assert_eq!(converted.data["deprecatedCount"], 1);
    scene.stop().await;
}

#[tokio::test]
async fn the_same_event_recorded_ten_times_is_one_stored_event_with_count_ten() {
    let Some(scene) = scene("counted").await else {
        return;
    };
    let (client, namespace, object) = (&scene.client, &scene.namespace, &scene.object);
    for _ in 0..10 {
        scene
            .recorder
            .event(object, EventType::Normal, "Synced", "synced successfully");
    }

    let counted = |events: &[DynamicObject]| events.iter().any(|e| e.data["count"] == 10);
    let events = events_until(client, "", namespace, counted).await;
    assert_eq!(events.len(), 1, "patched, never created again");
    let event = &events[0];
    assert_eq!(event.data["message"], "synced successfully");
    assert_eq!(event.data["reason"], "Synced");
    let first = event.data["firstTimestamp"]
        .as_str()
        .expect("firstTimestamp");
    let last = event.data["lastTimestamp"].as_str().expect("lastTimestamp");
    assert!(first <= last, "{first} <= {last}");
    scene.stop().await;
}

#[tokio::test]
async fn twelve_similar_events_are_nine_events_and_one_combined_with_count_three() {
    let Some(scene) = scene("combined").await else {
        return;
    };
    let (client, namespace, object) = (&scene.client, &scene.namespace, &scene.object);
    // Same object, type and reason, a different message each time: from the tenth distinct
    // message on, they count up one combined event.
    for i in 0..12 {
        scene.recorder.event(
            object,
            EventType::Warning,
            "FailedSync",
            &format!("attempt {i} failed"),
        );
    }

    let combined = |events: &[DynamicObject]| {
        events.iter().any(|e| {
            e.data["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("(combined from similar events): "))
                && e.data["count"] == 3
        })
    };
    let events = events_until(client, "", namespace, combined).await;
    let mut messages: Vec<&str> = events
        .iter()
        .map(|e| e.data["message"].as_str().unwrap())
        .collect();
    messages.sort();
    let mut expected: Vec<String> = (0..9).map(|i| format!("attempt {i} failed")).collect();
    expected.push("(combined from similar events): attempt 11 failed".into());
    expected.sort();
    assert_eq!(messages, expected);
    scene.stop().await;
}

#[tokio::test]
async fn a_terminating_namespace_refuses_events_with_the_cause_the_sink_gives_up_on() {
    let Some(scene) = scene("terminating").await else {
        return;
    };
    let (client, namespace, object) = (&scene.client, &scene.namespace, &scene.object);
    // No namespace controller runs here: the deleted namespace stays Terminating.
    client
        .delete()
        .group_version("", "v1")
        .resource("namespaces")
        .name(namespace)
        .send()
        .await
        .expect("the namespace is deleted");
    let now = Time::now();
    let event = Event {
        metadata: ObjectMeta::namespaced(namespace.as_str(), "settings.terminating"),
        involved_object: object.clone(),
        reason: "Synced".into(),
        message: "synced successfully".into(),
        source: EventSource::component(COMPONENT),
        first_timestamp: Some(now),
        last_timestamp: Some(now),
        count: 1,
        type_: "Normal".into(),
        ..Event::default()
    };

    let refused = RestEventSink::new(client)
        .create(&event)
        .await
        .expect_err("refused");
    let SinkError::Rejected(status) = &refused else {
        panic!("a rejection: {refused:?}");
    };
    assert_eq!(status.code, 403, "{status:?}");
    let causes = &status.details.as_ref().expect("details").causes;
    assert!(
        causes
            .iter()
            .any(|c| c.reason == NAMESPACE_TERMINATING_CAUSE),
        "{causes:?}"
    );
    scene.stop().await;
}
