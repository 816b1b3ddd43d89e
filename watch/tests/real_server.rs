//! Watches against a real kube-apiserver 1.36 (clientgo-envtest): a watch-list (streaming
//! list) that sends the existing objects, then the bookmark ending the initial events, then
//! live events; plain watches and the retry watcher from a resourceVersion; bookmarks, raw and
//! as the retry watcher's progress; and the 410 a compaction causes.
//!
//! One control plane serves every test of this binary; each test works in a namespace of its
//! own. Without the control plane's binaries the tests are skipped with one line saying what
//! to set (they fail instead when `CLIENTGO_ENVTEST_REQUIRED=1`, as in CI). Real servers
//! answer in their own time: every wait is bounded, none is a sleep.

use std::collections::BTreeSet;
use std::future::Future;
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject, Object, WatchEvent};
use clientgo_envtest::ControlPlane;
use clientgo_rest::{Config, DynamicClient, PostParams, RestClient, WatchParams};
use clientgo_watch::{
    ResourceWatchSource, RetryWatchError, RetryWatcher, Watch, WatchResource, WatchSource,
    WatchStartError,
};
use serde_json::json;
use tokio::sync::mpsc;

/// The longest any single wait on the real server may take.
const BOUND: Duration = Duration::from_secs(30);

/// Compacting etcd can make kube-apiserver's watch cache start over, which ends the watches
/// it serves and expires their resourceVersions: the test that compacts runs alone, the others
/// hold this for reading.
static COMPACTION: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// Bounds a future: panics with `what` after [`BOUND`].
async fn within<F: Future>(what: &str, future: F) -> F::Output {
    within_for(BOUND, what, future).await
}

/// Bounds a future: panics with `what` after `bound`.
async fn within_for<F: Future>(bound: Duration, what: &str, future: F) -> F::Output {
    match tokio::time::timeout(bound, future).await {
        Ok(output) => output,
        Err(_) => panic!("timed out after {bound:?} waiting for {what}"),
    }
}

fn client(cp: &ControlPlane) -> RestClient {
    let mut config =
        Config::from_kubeconfig_file(cp.kubeconfig_path()).expect("the kubeconfig loads");
    config.qps = -1.0;
    RestClient::new(&config).expect("a client")
}

fn resource(kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    }
}

/// A fresh namespace and a ConfigMap client in it.
fn config_maps(cp: &ControlPlane, prefix: &str) -> DynamicClient {
    let namespace = cp.create_namespace(prefix).unwrap();
    let resource = resource("ConfigMap", "configmaps");
    DynamicClient::from_api_resource(&client(cp), &resource, Some(&namespace))
}

/// A ConfigMap `name` with `data.key: value` and, if given, the label `app`.
fn config_map(name: &str, value: &str, app: Option<&str>) -> DynamicObject {
    let mut cm = DynamicObject::for_resource(&resource("ConfigMap", "configmaps"), name)
        .with_field("data", json!({"key": value}));
    if let Some(app) = app {
        cm.metadata.labels.insert("app".into(), app.into());
    }
    cm
}

async fn create(api: &DynamicClient, object: &DynamicObject) -> DynamicObject {
    within("a create", api.create(object, &PostParams::default()))
        .await
        .unwrap()
}

/// Replaces `object` with its `data.key` set to `value`.
async fn update(api: &DynamicClient, object: &DynamicObject, value: &str) -> DynamicObject {
    let mut changed = object.clone();
    changed.data["data"] = json!({"key": value});
    within(
        "an update",
        api.update(object.name(), &changed, &PostParams::default()),
    )
    .await
    .unwrap()
}

async fn delete(api: &DynamicClient, name: &str) {
    within("a delete", api.delete(name, &Default::default()))
        .await
        .unwrap();
}

/// A resourceVersion as a number: kube-apiserver's are etcd revisions (clients must not
/// compare them; these tests check what the server does).
fn revision(object: &impl Object) -> u64 {
    object
        .resource_version()
        .parse()
        .expect("a numeric resourceVersion")
}

/// The next event of a watch, bounded; the watch must not end or fail first.
async fn next_event(watch: &mut Watch<DynamicObject>) -> WatchEvent<DynamicObject> {
    within("a watch event", watch.next())
        .await
        .expect("the watch goes on")
        .expect("a decoded event")
}

/// (type, name, data.key) of a change event.
fn change(event: &WatchEvent<DynamicObject>) -> (&'static str, String, String) {
    let object = event
        .object()
        .expect("a change, not a bookmark or an error");
    let value = object.data["data"]["key"].as_str().unwrap_or_default();
    (
        event.event_type().as_str(),
        object.name().to_owned(),
        value.to_owned(),
    )
}

fn expected(kind: &'static str, name: &str, value: &str) -> (&'static str, String, String) {
    (kind, name.to_owned(), value.to_owned())
}

#[tokio::test]
async fn a_watch_list_sends_existing_objects_then_the_initial_events_end_bookmark_then_live_events()
{
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let _no_compaction = COMPACTION.read().await;
    let api = config_maps(cp, "watch-list");
    let mut existing = BTreeSet::new();
    let mut newest = 0;
    for name in ["a", "b", "c"] {
        let cm = create(&api, &config_map(name, "v1", None)).await;
        newest = newest.max(revision(&cm));
        existing.insert(name.to_owned());
    }

    let params = WatchParams {
        send_initial_events: Some(true),
        resource_version_match: Some("NotOlderThan".into()),
        allow_watch_bookmarks: true,
        ..WatchParams::default()
    };
    let mut watch = within("a watch-list", api.watch(&params)).await.unwrap();
    let mut initial = BTreeSet::new();
    let end = loop {
        match next_event(&mut watch).await {
            WatchEvent::Added(cm) => {
                assert!(initial.insert(cm.name().to_owned()), "{} twice", cm.name());
            }
            WatchEvent::Bookmark(bookmark) if bookmark.is_initial_events_end() => break bookmark,
            // A periodic bookmark, before the end of the initial events.
            WatchEvent::Bookmark(_) => {}
            other => panic!("only ADDED events before the end of the initial events: {other:?}"),
        }
    };
    assert_eq!(initial, existing, "every existing object, once");
    assert_eq!(
        end.metadata
            .annotations
            .get("k8s.io/initial-events-end")
            .map(String::as_str),
        Some("true")
    );
    let end_revision: u64 = end.resource_version().parse().unwrap();
    assert!(
        end_revision >= newest,
        "the initial events are at least as new as the last write: {end_revision} < {newest}"
    );
    assert_eq!(
        (end.kind.as_str(), end.api_version.as_str()),
        ("ConfigMap", "v1")
    );

    let live = create(&api, &config_map("live", "v1", None)).await;
    assert!(revision(&live) > end_revision);
    update(&api, &live, "v2").await;
    delete(&api, "a").await;
    let mut live_events = Vec::new();
    while live_events.len() < 3 {
        let event = next_event(&mut watch).await;
        if !matches!(event, WatchEvent::Bookmark(_)) {
            live_events.push(change(&event));
        }
    }
    assert_eq!(
        live_events,
        [
            expected("ADDED", "live", "v1"),
            expected("MODIFIED", "live", "v2"),
            expected("DELETED", "a", "v1"),
        ]
    );
}

#[tokio::test]
async fn a_retry_watcher_from_a_resource_version_sees_every_later_change_in_order() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let _no_compaction = COMPACTION.read().await;
    let api = config_maps(cp, "retry-watch");
    let start = create(&api, &config_map("before", "v1", None)).await;

    let mut watcher = api
        .retry_watcher(WatchParams::default(), start.resource_version())
        .unwrap();
    let b = create(&api, &config_map("b", "v1", None)).await;
    let changed = update(&api, &b, "v2").await;
    delete(&api, "before").await;

    let mut seen = Vec::new();
    let mut revisions = Vec::new();
    for _ in 0..3 {
        let event = within("a retry watcher event", watcher.next())
            .await
            .expect("the watcher goes on")
            .expect("an event");
        revisions.push(revision(event.object().unwrap()));
        seen.push(change(&event));
    }
    assert_eq!(
        seen,
        [
            expected("ADDED", "b", "v1"),
            expected("MODIFIED", "b", "v2"),
            expected("DELETED", "before", "v1"),
        ],
        "nothing from before the starting resourceVersion, everything after it"
    );
    assert_eq!(&revisions[..2], [revision(&b), revision(&changed)]);
    assert!(revisions.windows(2).all(|w| w[0] < w[1]), "{revisions:?}");
    assert_eq!(
        watcher.last_resource_version(),
        revisions[2].to_string(),
        "the watcher resumes after the last event"
    );
}

#[tokio::test]
async fn a_watch_asking_for_bookmarks_gets_one_before_the_server_ends_it() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let _no_compaction = COMPACTION.read().await;
    let api = config_maps(cp, "bookmarks");
    let start = create(&api, &config_map("start", "v1", Some("watched"))).await;
    // A change the watch filters out: the collection moves on, the watch has nothing to send
    // but a bookmark (kube-apiserver sends none that would not move the watch forward).
    create(&api, &config_map("unwatched", "v1", None)).await;
    // kube-apiserver sends a bookmark 2 s before the end of a watch with a timeout (none when
    // a busy server registers the watch too late for that): watch again until one comes.
    let params = WatchParams {
        label_selector: Some("app=watched".into()),
        resource_version: Some(start.resource_version().to_owned()),
        allow_watch_bookmarks: true,
        timeout_seconds: Some(10),
        ..WatchParams::default()
    };
    // A loaded machine can miss several in a row: a longer bound than the other waits.
    let bookmarks = within_for(BOUND * 4, "a watch with a bookmark (10 s watches)", async {
        loop {
            let mut watch = api.watch(&params).await.unwrap();
            let mut bookmarks = Vec::new();
            // The server ends each watch cleanly at its timeout.
            while let Some(event) = watch.next().await {
                match event.expect("a decoded event") {
                    WatchEvent::Bookmark(bookmark) => {
                        assert!(!bookmark.is_initial_events_end());
                        assert_eq!(bookmark.kind, "ConfigMap");
                        bookmarks.push(bookmark.resource_version().parse::<u64>().unwrap());
                    }
                    other => panic!("bookmarks only, the change is filtered out: {other:?}"),
                }
            }
            if !bookmarks.is_empty() {
                return bookmarks;
            }
        }
    })
    .await;
    // Each past the starting resourceVersion: kube-apiserver sends none that would not be.
    assert!(
        bookmarks.iter().all(|&rv| rv > revision(&start)),
        "{bookmarks:?} past {}",
        revision(&start)
    );
    assert!(bookmarks.windows(2).all(|w| w[0] <= w[1]), "{bookmarks:?}");
}

/// A [`ResourceWatchSource`] that reports the resourceVersion of each watch it opens.
struct Reporting {
    source: ResourceWatchSource<DynamicObject>,
    opened: mpsc::UnboundedSender<String>,
}

impl WatchSource<DynamicObject> for Reporting {
    async fn watch(&self, resource_version: &str) -> Result<Watch<DynamicObject>, WatchStartError> {
        let _ = self.opened.send(resource_version.to_owned());
        self.source.watch(resource_version).await
    }
}

#[tokio::test]
async fn bookmarks_carry_a_retry_watcher_past_changes_it_does_not_deliver() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let _no_compaction = COMPACTION.read().await;
    let api = config_maps(cp, "retry-bookmarks");
    let start = create(&api, &config_map("start", "v1", Some("watched"))).await;
    let params = WatchParams {
        label_selector: Some("app=watched".into()),
        // As in the test above: long enough that a busy server still registers the watch in
        // time for the bookmark it sends 2 s before the end.
        timeout_seconds: Some(10),
        ..WatchParams::default()
    };
    let (opened, mut opens) = mpsc::unbounded_channel();
    let source = Reporting {
        source: ResourceWatchSource::new(api.clone(), params),
        opened,
    };
    let mut watcher = RetryWatcher::new(source, start.resource_version()).unwrap();
    let mut first_event = tokio::spawn(async move {
        let event = watcher.next().await;
        (event, watcher)
    });
    assert_eq!(
        within("the first watch", opens.recv()).await.as_deref(),
        Some(start.resource_version())
    );

    // A change the label selector filters out: only a bookmark can tell the watcher of it.
    let unwatched = create(&api, &config_map("unwatched", "v1", None)).await;
    // The watcher opens a watch from a resourceVersion at or past the filtered change, having
    // delivered nothing. A watch the server ends without a bookmark makes the watcher resume
    // from where it was; a loaded machine can do that several times in a row, so this waits
    // as long as the test above does.
    within_for(BOUND * 4, "a watch resumed after the unwatched change (10 s watches)", async {
        loop {
            tokio::select! {
                rv = opens.recv() => {
                    let rv = rv.expect("the watcher goes on");
                    if rv.parse::<u64>().unwrap() >= revision(&unwatched) {
                        return;
                    }
                }
                ended = &mut first_event => {
                    panic!("the watcher delivered or ended before resuming: {:?}", ended.unwrap().0)
                }
            }
        }
    })
    .await;
    let watched = create(&api, &config_map("watched", "v1", Some("watched"))).await;
    let (event, watcher) = within("the watched change", first_event).await.unwrap();
    let event = event.expect("the watcher goes on").expect("an event");
    assert_eq!(change(&event), expected("ADDED", "watched", "v1"));
    assert_eq!(watcher.last_resource_version(), watched.resource_version());
}

#[tokio::test]
async fn a_retry_watcher_from_a_compacted_resource_version_ends_with_gone() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let _alone = COMPACTION.write().await;
    // PodTemplates are served without the watch cache: their watches read etcd's history.
    let namespace = cp.create_namespace("gone").unwrap();
    let templates = resource("PodTemplate", "podtemplates");
    let api = DynamicClient::from_api_resource(&client(cp), &templates, Some(&namespace));
    let template = |name: &str| {
        DynamicObject::for_resource(&templates, name).with_field(
            "template",
            json!({"spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}}),
        )
    };
    let old = create(&api, &template("old")).await;
    // A watch from `old` starts at the next revision: two more writes put that one behind
    // the compaction too.
    let new = create(&api, &template("new")).await;
    create(&api, &template("newer")).await;
    let compacted = cp.compact().unwrap();
    assert!(
        compacted > revision(&new),
        "{compacted} > {}",
        revision(&new)
    );

    let mut watcher = api
        .retry_watcher(WatchParams::default(), old.resource_version())
        .unwrap();
    let ended = within("the watcher's end", watcher.next())
        .await
        .expect("an end");
    let Err(RetryWatchError::Gone(status)) = ended else {
        panic!("Gone: {ended:?}")
    };
    assert_eq!(status.code, 410);
    assert!(status.is_resource_expired(), "{status:?}");
    assert!(watcher.next().await.is_none(), "nothing after the end");
}
