//! Events recorded through the REST client into apiserver-sim: created once, then patched
//! with a growing count when they repeat.

use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_record::{EventBroadcaster, EventSource, EventType, ObjectReference, RestEventSink};
use clientgo_rest::config::Config;
use clientgo_rest::{DynamicClient, ListParams, RestClient};

#[tokio::test(start_paused = true)]
async fn repeated_events_become_one_event_with_a_count() {
    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    let broadcaster = EventBroadcaster::new();
    let watcher = broadcaster.start_recording_to_sink(RestEventSink::new(&client));
    let recorder = broadcaster.new_recorder(EventSource::component("sample-controller"));
    let object = ObjectReference {
        kind: "Foo".into(),
        namespace: "default".into(),
        name: "example".into(),
        uid: "uid-1".into(),
        api_version: "samplecontroller.k8s.io/v1alpha1".into(),
        ..ObjectReference::default()
    };
    for _ in 0..3 {
        recorder.event(&object, EventType::Warning, "ErrResourceExists", "not ours");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let events = DynamicClient::from_api_resource(
        &client,
        &ApiResource {
            group: String::new(),
            version: "v1".into(),
            kind: "Event".into(),
            plural: "events".into(),
            namespaced: true,
        },
        Some("default"),
    );
    let mut found: Option<DynamicObject> = None;
    for _ in 0..100 {
        let list = events.list(&ListParams::default()).await.unwrap();
        found = list.items.into_iter().find(|e| e.data["count"] == 3);
        if found.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let event = found.expect("one event counted three times");
    assert_eq!(event.data["type"], "Warning");
    assert_eq!(event.data["reason"], "ErrResourceExists");
    assert_eq!(event.data["involvedObject"]["name"], "example");
    assert_eq!(event.data["source"]["component"], "sample-controller");
    let all = events.list(&ListParams::default()).await.unwrap();
    assert_eq!(all.items.len(), 1, "patched, not created again");
    broadcaster.shutdown();
    watcher.join().await;
}
