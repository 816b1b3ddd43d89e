//! Built-in defaults, with the answers kube-apiserver 1.36.2 gave to the same minimal
//! bodies (server-side noise removed: uid, resourceVersion, timestamps, managedFields).

use serde_json::{Value, json};

use crate::support::*;

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";

fn without_server_fields(mut v: Value) -> Value {
    if let Some(meta) = v["metadata"].as_object_mut() {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "managedFields",
        ] {
            meta.remove(f);
        }
    }
    v
}

fn minimal_deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "w"}},
            "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [
                {"name": "app", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}})
}

#[tokio::test]
async fn a_minimal_deployment_comes_back_defaulted() {
    let (_sim, c) = sim().await;
    let r = c.post(DEPLOYMENTS, minimal_deployment()).await;
    assert_eq!(r.status, 201, "{}", r.body);
    // Observed on kube-apiserver 1.36.2.
    assert_eq!(
        without_server_fields(r.body),
        json!({"kind": "Deployment", "apiVersion": "apps/v1",
          "metadata": {"name": "web", "namespace": "default", "generation": 1},
          "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "w"}},
            "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [{
                "name": "app", "image": "nginx",
                "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
              "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
              "dnsPolicy": "ClusterFirst", "securityContext": {},
              "schedulerName": "default-scheduler"}},
            "strategy": {"type": "RollingUpdate",
              "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600},
          "status": {}})
    );
}

#[tokio::test]
async fn writing_back_the_undefaulted_spec_is_no_change() {
    // A controller that PUTs its desired (undefaulted) spec over the defaulted object must
    // not bump the generation: the defaults are applied again before comparing.
    let (_sim, c) = sim().await;
    let created = c.post(DEPLOYMENTS, minimal_deployment()).await.body;
    let mut again = minimal_deployment();
    again["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"].clone();
    let r = c.put(&format!("{DEPLOYMENTS}/web"), again).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["metadata"]["generation"], 1);
    assert_eq!(
        r.body["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    // A merge patch that removes a defaulted field gets it back.
    let r = c
        .patch(
            &format!("{DEPLOYMENTS}/web"),
            "application/merge-patch+json",
            json!({"spec": {"revisionHistoryLimit": null, "replicas": 2}}),
        )
        .await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(r.body["metadata"]["generation"], 2);
}

#[tokio::test]
async fn replica_sets_pods_secrets_and_namespaces() {
    let (_sim, c) = sim().await;
    let rs = json!({"metadata": {"name": "rs"}, "spec": {
        "selector": {"matchLabels": {"app": "w"}},
        "template": {"metadata": {"labels": {"app": "w"}}, "spec": {"containers": [
            {"name": "app", "image": "nginx:latest",
             "resources": {"limits": {"memory": "1Gi"}},
             "readinessProbe": {"httpGet": {"port": 80}}}],
            "volumes": [{"name": "x"}, {"name": "s", "secret": {"secretName": "s"}}]}}}});
    let r = c
        .post("/apis/apps/v1/namespaces/default/replicasets", rs)
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    // Observed on kube-apiserver 1.36.2: templates get no requests from limits (Pods do).
    assert_eq!(r.body["spec"]["replicas"], 1);
    assert_eq!(r.body["status"], json!({"replicas": 0}));
    let t = &r.body["spec"]["template"]["spec"];
    assert_eq!(
        t["containers"][0]["resources"],
        json!({"limits": {"memory": "1Gi"}})
    );
    assert_eq!(t["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(
        t["containers"][0]["readinessProbe"],
        json!({"httpGet": {"path": "/", "port": 80, "scheme": "HTTP"}, "timeoutSeconds": 1,
            "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(
        t["volumes"],
        json!([{"name": "x", "emptyDir": {}},
            {"name": "s", "secret": {"secretName": "s", "defaultMode": 420}}])
    );

    let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
        "image": "busybox:1.36", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}});
    let r = c.post("/api/v1/namespaces/default/pods", pod).await;
    assert_eq!(r.status, 201, "{}", r.body);
    // Observed on kube-apiserver 1.36.2 (which also mounts the service account's token).
    let spec = &r.body["spec"];
    assert_eq!(
        spec["containers"][0]["resources"]["requests"],
        json!({"cpu": "1", "memory": "1Gi"})
    );
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "IfNotPresent");
    assert_eq!(spec["serviceAccountName"], "default");
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["tolerations"].as_array().map(Vec::len), Some(2));
    assert_eq!(
        r.body["status"],
        json!({"phase": "Pending", "qosClass": "Guaranteed"})
    );
    // Pods track metadata.generation (kube-apiserver 1.36.2: 1, then 2 after a spec change,
    // unchanged by a label change).
    assert_eq!(r.body["metadata"]["generation"], 1);
    let pod_path = "/api/v1/namespaces/default/pods/p";
    let smp = "application/strategic-merge-patch+json";
    let r = c
        .patch(pod_path, smp, json!({"metadata": {"labels": {"x": "y"}}}))
        .await;
    assert_eq!(r.body["metadata"]["generation"], 1);
    let image = json!({"spec": {"containers": [{"name": "c", "image": "busybox:1.37"}]}});
    let r = c.patch(pod_path, smp, image).await;
    assert_eq!(r.body["metadata"]["generation"], 2, "{}", r.body);

    let r = c
        .post(
            "/api/v1/namespaces/default/secrets",
            json!({"metadata": {"name": "s"}}),
        )
        .await;
    assert_eq!(r.body["type"], "Opaque");

    let r = c
        .post(
            "/api/v1/namespaces",
            json!({"metadata": {"generateName": "gen-"}}),
        )
        .await;
    assert_eq!(r.status, 201, "{}", r.body);
    let name = r.body["metadata"]["name"].as_str().unwrap_or_default();
    assert!(name.starts_with("gen-"));
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"kubernetes.io/metadata.name": name})
    );
    // The label is reset on update, as SetDefaults_Namespace does.
    let put = json!({"metadata": {"name": name, "labels": {
        "kubernetes.io/metadata.name": "other", "a": "b"}}});
    let r = c.put(&format!("/api/v1/namespaces/{name}"), put).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"a": "b", "kubernetes.io/metadata.name": name})
    );
    let r = c.get("/api/v1/namespaces/kube-system").await;
    assert_eq!(
        r.body["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "kube-system"
    );
}

/// Observed on kube-apiserver 1.36.2 (the differential steps `nulls/*`): `null`s of an
/// ObjectMeta (the object's, a pod template's) and of a built-in's top-level fields are
/// written as nothing, `creationTimestamp: null` (kubectl's dry-run output) included; the
/// watch events carry the same objects.
#[tokio::test]
async fn nulls_of_object_meta_and_top_level_fields_are_written_as_nothing() {
    let (sim, c) = sim().await;
    let start = sim.resource_version();
    let mut w = c
        .watch(&format!("{DEPLOYMENTS}?watch=true&resourceVersion={start}"))
        .await;
    let mut body = minimal_deployment();
    body["metadata"]["creationTimestamp"] = Value::Null;
    body["metadata"]["labels"] = Value::Null;
    body["spec"]["template"]["metadata"]["creationTimestamp"] = Value::Null;
    body["spec"]["template"]["metadata"]["annotations"] = Value::Null;
    body["status"] = Value::Null;
    let r = c.post(DEPLOYMENTS, body).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.body["metadata"]["creationTimestamp"].is_string());
    assert!(r.body["metadata"].get("labels").is_none());
    assert_eq!(
        r.body["spec"]["template"]["metadata"],
        json!({"labels": {"app": "w"}})
    );
    assert_eq!(r.body["status"], json!({}));
    let (t, o) = w.event().await;
    assert_eq!(t, "ADDED");
    assert_eq!(o, r.body);

    let cms = "/api/v1/namespaces/default/configmaps";
    let cm = json!({"metadata": {"name": "n", "annotations": null, "finalizers": null},
        "data": null});
    let r = c.post(cms, cm).await;
    assert_eq!(r.status, 201, "{}", r.body);
    assert!(r.body.get("data").is_none());
    let meta = r.body["metadata"].as_object().unwrap();
    assert!(!meta.contains_key("annotations") && !meta.contains_key("finalizers"));
}
