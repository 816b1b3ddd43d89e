//! Every typed helper on built-in resources (k8s-openapi's types), over TLS with a token.

use std::collections::BTreeMap;
use std::time::Duration;

use clientgo_apimachinery::{Object, WatchEvent};
use clientgo_rest::{
    DeleteParams, Deleted, GetParams, ListParams, PatchParams, PatchType, PostParams,
    ResourceClient, WatchParams,
};
use k8s_openapi::api::core::v1::{ConfigMap, Container, Namespace, Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use serde_json::json;

use crate::common::{self, eventually, within};

const LIMIT: Duration = Duration::from_secs(10);

fn config_map(name: &str, app: &str, data: &[(&str, &str)]) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            labels: Some(BTreeMap::from([("app".to_owned(), app.to_owned())])),
            ..ObjectMeta::default()
        },
        data: Some(
            data.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        ),
        ..ConfigMap::default()
    }
}

fn data(cm: &ConfigMap) -> BTreeMap<String, String> {
    cm.data.clone().unwrap_or_default()
}

fn names(list: &[ConfigMap]) -> Vec<String> {
    list.iter().map(|c| c.name().to_owned()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn config_map_verbs_over_tls_with_a_token() {
    let s = common::secure().await;
    common::namespace(&s.sim, "verbs");
    let api = ResourceClient::<ConfigMap>::namespaced(&s.client, "verbs");
    let post = PostParams::default();

    let a = api
        .create(&config_map("a", "web", &[("k", "v")]), &post)
        .await
        .unwrap();
    assert!(!a.uid().is_empty() && !a.resource_version().is_empty());
    assert_eq!(a.namespace(), "verbs");
    api.create(&config_map("b", "web", &[]), &post)
        .await
        .unwrap();
    api.create(&config_map("c", "db", &[]), &post)
        .await
        .unwrap();
    let got = api.get("a", &GetParams::default()).await.unwrap();
    assert_eq!((got.uid(), data(&got)["k"].as_str()), (a.uid(), "v"));

    // list: selectors and pages.
    let web = ListParams {
        label_selector: Some("app=web".into()),
        ..ListParams::default()
    };
    assert_eq!(names(&api.list(&web).await.unwrap().items), ["a", "b"]);
    let page = ListParams {
        limit: Some(2),
        ..ListParams::default()
    };
    let first = api.list(&page).await.unwrap();
    assert_eq!(names(&first.items), ["a", "b"]);
    let token = first.continue_token().expect("a continue token").to_owned();
    let rest = api
        .list(&ListParams {
            continue_token: Some(token),
            ..page.clone()
        })
        .await
        .unwrap();
    assert_eq!(names(&rest.items), ["c"]);
    let all = ResourceClient::<ConfigMap>::all(&s.client)
        .list(&web)
        .await
        .unwrap();
    assert_eq!(all.items.len(), 2, "across namespaces");

    // update: the resourceVersion guards it.
    let mut changed = got.clone();
    changed.data = Some(BTreeMap::from([("k".to_owned(), "v2".to_owned())]));
    let updated = api.update("a", &changed, &post).await.unwrap();
    assert_ne!(updated.resource_version(), got.resource_version());
    assert!(
        api.update("a", &changed, &post)
            .await
            .unwrap_err()
            .is_conflict()
    );

    // The four patch types.
    let merged = api
        .patch(
            "a",
            PatchType::Merge,
            &json!({"data": {"m": "1"}}),
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(data(&merged)["m"], "1");
    let op = json!([{"op": "add", "path": "/data/j", "value": "2"}]);
    let patched = api
        .patch("a", PatchType::Json, &op, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(data(&patched)["j"], "2");
    let strategic = json!({"metadata": {"labels": {"s": "3"}}});
    let patched = api
        .patch(
            "a",
            PatchType::StrategicMerge,
            &strategic,
            &PatchParams::default(),
        )
        .await
        .unwrap();
    assert_eq!(patched.labels().get("s"), Some("3"));
    assert_eq!(patched.labels().get("app"), Some("web"));
    let applied = config_map("d", "web", &[("x", "1")]);
    let apply = PatchParams::apply("clientgo-tests");
    let d = api.apply("d", &applied, &apply).await.unwrap();
    assert_eq!(data(&d)["x"], "1", "apply creates");
    let again = config_map("d", "web", &[("x", "2")]);
    let d = api.apply("d", &again, &apply).await.unwrap();
    assert_eq!(data(&d)["x"], "2", "apply updates");
    // Another manager setting the same field conflicts, until it forces the apply.
    let theirs = config_map("d", "web", &[("x", "3")]);
    let error = api
        .apply("d", &theirs, &PatchParams::apply("someone-else"))
        .await
        .unwrap_err();
    assert!(error.is_conflict(), "{error}");
    let forced = PatchParams::apply("someone-else").force();
    let d = api.apply("d", &theirs, &forced).await.unwrap();
    assert_eq!(data(&d)["x"], "3", "a forced apply takes the field over");

    // delete and delete_collection.
    match api.delete("a", &DeleteParams::default()).await.unwrap() {
        Deleted::Status(status) => assert_eq!(status.status, "Success"),
        Deleted::Object(o) => panic!("expected a Status, got {o:?}"),
    }
    assert!(
        api.get("a", &GetParams::default())
            .await
            .unwrap_err()
            .is_not_found()
    );
    let Deleted::Object(gone) = api
        .delete_collection(&DeleteParams::default(), &web)
        .await
        .unwrap()
    else {
        panic!("deletecollection answers the list")
    };
    assert_eq!(names(&gone.items), ["b", "d"]);
    assert_eq!(
        names(&api.list(&ListParams::default()).await.unwrap().items),
        ["c"]
    );
}

fn pod(name: &str) -> Pod {
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "main".into(),
                image: Some("registry.local/web:1".into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
        ..Pod::default()
    }
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_status_subresource_and_a_typed_watch() {
    let s = common::secure().await;
    common::namespace(&s.sim, "pods");
    let api = ResourceClient::<Pod>::namespaced(&s.client, "pods");
    let post = PostParams::default();
    let start = api.list(&ListParams::default()).await.unwrap();
    let mut watch = api
        .watch(&WatchParams {
            resource_version: Some(start.resource_version().to_owned()),
            ..WatchParams::default()
        })
        .await
        .unwrap();

    let created = api.create(&pod("web"), &post).await.unwrap();
    assert_eq!(phase(&created), "Pending", "the server sets the phase");
    let mut running = created.clone();
    running.status = Some(PodStatus {
        phase: Some("Running".into()),
        ..PodStatus::default()
    });
    let updated = api.update_status("web", &running, &post).await.unwrap();
    assert_eq!(phase(&updated), "Running");
    // A main-resource update leaves the status alone.
    let mut relabeled = updated.clone();
    relabeled.metadata.labels = Some(BTreeMap::from([("v".to_owned(), "1".to_owned())]));
    relabeled.status = None;
    let relabeled = api.update("web", &relabeled, &post).await.unwrap();
    assert_eq!(phase(&relabeled), "Running");
    let ip = json!({"status": {"podIP": "10.0.0.7"}});
    let patched = api
        .patch_status("web", PatchType::Merge, &ip, &PatchParams::default())
        .await
        .unwrap();
    assert_eq!(patched.status.unwrap().pod_ip.as_deref(), Some("10.0.0.7"));
    api.delete("web", &DeleteParams::default()).await.unwrap();

    let mut seen = Vec::new();
    while seen.len() < 5 {
        let event = within(LIMIT, "watch events", watch.next()).await;
        let event = event.expect("the watch stays open").expect("events decode");
        let label = match &event {
            WatchEvent::Added(p) => format!("ADDED {}", phase(p)),
            WatchEvent::Modified(p) => format!("MODIFIED {}", phase(p)),
            WatchEvent::Deleted(p) => format!("DELETED {}", p.name()),
            other => panic!("unexpected {other:?}"),
        };
        seen.push(label);
    }
    assert_eq!(
        seen,
        [
            "ADDED Pending",
            "MODIFIED Running",
            "MODIFIED Running",
            "MODIFIED Running",
            "DELETED web"
        ]
    );
}

fn owned_by(name: &str, owner: &ConfigMap) -> ConfigMap {
    let mut cm = config_map(name, "dep", &[]);
    cm.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        name: owner.name().to_owned(),
        uid: owner.uid().to_owned(),
        ..OwnerReference::default()
    }]);
    cm
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_propagate_as_asked() {
    let s = common::secure().await;
    common::namespace(&s.sim, "gc");
    let api = ResourceClient::<ConfigMap>::namespaced(&s.client, "gc");
    let post = PostParams::default();
    let exists = |name: &'static str| {
        let api = api.clone();
        async move { api.get(name, &GetParams::default()).await.is_ok() }
    };
    let owners_of = |name: &'static str| {
        let api = api.clone();
        async move {
            let cm = api.get(name, &GetParams::default()).await.unwrap();
            cm.owner_references().len()
        }
    };

    // Foreground: the owner waits, marked, until its dependents are gone.
    let owner = api
        .create(&config_map("fg", "owner", &[]), &post)
        .await
        .unwrap();
    api.create(&owned_by("fg-dep", &owner), &post)
        .await
        .unwrap();
    let Deleted::Object(marked) = api.delete("fg", &DeleteParams::foreground()).await.unwrap()
    else {
        panic!("a foreground delete returns the object")
    };
    assert!(marked.metadata.deletion_timestamp.is_some());
    assert_eq!(marked.finalizers(), ["foregroundDeletion"]);
    eventually(
        LIMIT,
        "the foreground owner and its dependent to go",
        || async { !exists("fg").await && !exists("fg-dep").await },
    )
    .await;

    // Orphan: the dependent stays, without its owner reference.
    let owner = api
        .create(&config_map("or", "owner", &[]), &post)
        .await
        .unwrap();
    api.create(&owned_by("or-dep", &owner), &post)
        .await
        .unwrap();
    let Deleted::Object(marked) = api.delete("or", &DeleteParams::orphan()).await.unwrap() else {
        panic!("an orphaning delete returns the object")
    };
    assert_eq!(marked.finalizers(), ["orphan"]);
    eventually(LIMIT, "the orphaned owner to go", || async {
        !exists("or").await
    })
    .await;
    assert_eq!(owners_of("or-dep").await, 0);

    // Background: the owner goes now, the dependent after.
    let owner = api
        .create(&config_map("bg", "owner", &[]), &post)
        .await
        .unwrap();
    api.create(&owned_by("bg-dep", &owner), &post)
        .await
        .unwrap();
    let deleted = api.delete("bg", &DeleteParams::background()).await.unwrap();
    assert!(matches!(deleted, Deleted::Status(_)), "{deleted:?}");
    eventually(LIMIT, "the background dependent to go", || async {
        !exists("bg-dep").await
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cluster_scoped_namespaces() {
    let s = common::secure().await;
    let api = ResourceClient::<Namespace>::all(&s.client);
    let ns = Namespace {
        metadata: ObjectMeta {
            name: Some("team-a".into()),
            ..ObjectMeta::default()
        },
        ..Namespace::default()
    };
    let created = api.create(&ns, &PostParams::default()).await.unwrap();
    assert_eq!(created.status.unwrap().phase.as_deref(), Some("Active"));
    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .map(|n| n.name().to_owned())
        .collect();
    assert!(names.contains(&"team-a".to_owned()) && names.contains(&"kube-system".to_owned()));
    // An empty namespace goes at once; one being emptied answers Terminating.
    api.delete("team-a", &DeleteParams::default())
        .await
        .unwrap();
    eventually(LIMIT, "the namespace to go", || async {
        api.get("team-a", &GetParams::default())
            .await
            .is_err_and(|e| e.is_not_found())
    })
    .await;
}
