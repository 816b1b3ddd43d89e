//! Pod defaults: `pkg/apis/core/v1/defaults.go` for pod specs (in Pods and in the pod
//! templates of Deployments and ReplicaSets), plus what the admission plugins every real
//! cluster runs add to a new Pod.
//!
//! Scheme defaults, applied to Pods and templates on every write (kube-apiserver defaults
//! each decoded body): `restartPolicy: Always`, `dnsPolicy: ClusterFirst`,
//! `terminationGracePeriodSeconds: 30`, `securityContext: {}`, `schedulerName:
//! default-scheduler`; per container (init and ephemeral too) `imagePullPolicy` (`Always` for
//! `:latest` or no tag, else `IfNotPresent`), `terminationMessagePath`,
//! `terminationMessagePolicy: File`, `resources: {}`, ports' `protocol: TCP`, probes'
//! timeouts, periods and thresholds, `httpGet` `path: /` and `scheme: HTTP`, `grpc`
//! `service: ""`, env and downward-API `fieldRef.apiVersion: v1` and `resourceFieldRef.divisor:
//! "0"`; per volume `emptyDir: {}` when no source is given, `defaultMode: 420` of secret,
//! configMap, downwardAPI and projected sources, `expirationSeconds: 3600` of projected
//! service-account tokens, `hostPath.type: ""`.
//!
//! Pods only (`SetDefaults_Pod`): `enableServiceLinks: true`, `requests` copied from
//! `limits` where missing, `hostPort` set to `containerPort` with `hostNetwork`, and the
//! computed `status.qosClass`. On create only, as the admission plugins do:
//! `serviceAccountName`/`serviceAccount: default` (ServiceAccount), the two
//! `NoExecute` tolerations of 300 s (DefaultTolerationSeconds), `priority: 0` and
//! `preemptionPolicy: PreemptLowerPriority` (Priority).
//!
//! Differences: the ServiceAccount plugin's projected token volume and its mounts are not
//! added (nor is a missing service account refused), and only the volume sources above are
//! defaulted (not the rarely used in-tree storage drivers).

use serde_json::{Map, Value, json};

use super::{child, default, each_item};

/// The image pull policy kube-apiserver gives an image without one: `Always` when the tag
/// is `latest` or absent (and there is no digest), `IfNotPresent` otherwise.
pub fn image_pull_policy(image: &str) -> &'static str {
    let (name, has_digest) = match image.split_once('@') {
        Some((name, _)) => (name, true),
        None => (image, false),
    };
    let last_segment = name.rsplit('/').next().unwrap_or(name);
    let tag = match last_segment.split_once(':') {
        Some((_, tag)) => tag,
        None if has_digest => "",
        None => "latest",
    };
    if tag == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    }
}

/// Defaults a pod spec (of a Pod or a pod template).
pub fn spec(spec: &mut Map<String, Value>) {
    default(spec, "restartPolicy", json!("Always"));
    default(spec, "terminationGracePeriodSeconds", json!(30));
    default(spec, "dnsPolicy", json!("ClusterFirst"));
    default(spec, "securityContext", json!({}));
    default(spec, "schedulerName", json!("default-scheduler"));
    for field in ["initContainers", "containers", "ephemeralContainers"] {
        each_item(spec, field, container);
    }
    each_item(spec, "volumes", volume);
}

/// Defaults a pod template (`{metadata, spec}`).
pub fn template(template: &mut Map<String, Value>) {
    // Its ObjectMeta as any other: `creationTimestamp: null` (kubectl's dry-run output) and
    // the other nulls are written as nothing (observed on kube-apiserver 1.36.2).
    if let Some(meta) = template.get_mut("metadata") {
        crate::validation::drop_nulls(meta);
    }
    if let Some(s) = child(template, "spec") {
        spec(s);
    }
}

fn container(c: &mut Map<String, Value>) {
    let image = c.get("image").and_then(Value::as_str).unwrap_or("");
    let policy = image_pull_policy(image);
    default(c, "imagePullPolicy", json!(policy));
    default(c, "terminationMessagePath", json!("/dev/termination-log"));
    default(c, "terminationMessagePolicy", json!("File"));
    default(c, "resources", json!({}));
    each_item(c, "ports", |p| default(p, "protocol", json!("TCP")));
    each_item(c, "env", |e| {
        if let Some(from) = child(e, "valueFrom") {
            field_refs(from);
        }
    });
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = child(c, probe) {
            default(p, "timeoutSeconds", json!(1));
            default(p, "periodSeconds", json!(10));
            default(p, "successThreshold", json!(1));
            default(p, "failureThreshold", json!(3));
            handler(p);
        }
    }
    if let Some(lifecycle) = child(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = child(lifecycle, hook) {
                handler(h);
            }
        }
    }
}

fn handler(h: &mut Map<String, Value>) {
    if let Some(get) = child(h, "httpGet") {
        default(get, "path", json!("/"));
        default(get, "scheme", json!("HTTP"));
    }
    if let Some(grpc) = child(h, "grpc") {
        default(grpc, "service", json!(""));
    }
}

/// `fieldRef.apiVersion` and `resourceFieldRef.divisor` of an env source or a downward-API
/// item.
fn field_refs(m: &mut Map<String, Value>) {
    if let Some(f) = child(m, "fieldRef") {
        default(f, "apiVersion", json!("v1"));
    }
    if let Some(r) = child(m, "resourceFieldRef") {
        default(r, "divisor", json!("0"));
    }
}

const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

fn volume(v: &mut Map<String, Value>) {
    if !VOLUME_SOURCES
        .iter()
        .any(|s| v.get(*s).is_some_and(|x| !x.is_null()))
    {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = child(v, source) {
            default(s, "defaultMode", json!(420));
        }
    }
    if let Some(d) = child(v, "downwardAPI") {
        each_item(d, "items", field_refs);
    }
    if let Some(h) = child(v, "hostPath") {
        default(h, "type", json!(""));
    }
    if let Some(p) = child(v, "projected") {
        each_item(p, "sources", |s| {
            if let Some(t) = child(s, "serviceAccountToken") {
                default(t, "expirationSeconds", json!(3600));
            }
            if let Some(d) = child(s, "downwardAPI") {
                each_item(d, "items", field_refs);
            }
        });
    }
}

/// Defaults a Pod (`SetDefaults_Pod` on top of the spec's defaults).
pub fn pod(obj: &mut Map<String, Value>) {
    let Some(s) = child(obj, "spec") else {
        return;
    };
    spec(s);
    default(s, "enableServiceLinks", json!(true));
    let host_network = s.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for field in ["initContainers", "containers"] {
        each_item(s, field, |c| {
            if let Some(r) = child(c, "resources") {
                requests_from_limits(r);
            }
            if host_network {
                each_item(c, "ports", |p| {
                    let unset = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0;
                    if unset && let Some(port) = p.get("containerPort").cloned() {
                        p.insert("hostPort".into(), port);
                    }
                });
            }
        });
    }
    let qos = qos_class(obj);
    if let Some(status) = child(obj, "status") {
        status.insert("qosClass".into(), json!(qos));
    }
}

fn requests_from_limits(r: &mut Map<String, Value>) {
    let Some(limits) = r.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if limits.is_empty() {
        return;
    }
    let requests = r
        .entry("requests")
        .or_insert_with(|| Value::Object(Map::new()));
    if !requests.is_object() {
        *requests = Value::Object(Map::new());
    }
    if let Value::Object(requests) = requests {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
}

/// `status.qosClass` as `GetPodQOS` computes it from the containers' cpu and memory
/// requests and limits.
fn qos_class(obj: &Map<String, Value>) -> &'static str {
    let mut any = false;
    let mut guaranteed = true;
    let spec = obj.get("spec");
    for field in ["initContainers", "containers"] {
        let containers = spec
            .and_then(|s| s.get(field))
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for c in containers {
            let get = |kind: &str, res: &str| {
                c.get("resources")
                    .and_then(|r| r.get(kind))
                    .and_then(|m| m.get(res))
                    .map(|q| q.as_str().map_or_else(|| q.to_string(), str::to_owned))
                    .filter(|q| !is_zero(q))
            };
            for res in ["cpu", "memory"] {
                let (req, lim) = (get("requests", res), get("limits", res));
                any |= req.is_some() || lim.is_some();
                if lim.is_none() || req != lim {
                    guaranteed = false;
                }
            }
        }
    }
    match (any, guaranteed) {
        (false, _) => "BestEffort",
        (true, true) => "Guaranteed",
        (true, false) => "Burstable",
    }
}

fn is_zero(q: &str) -> bool {
    q.trim_end_matches(|c: char| c.is_ascii_alphabetic())
        .parse::<f64>()
        .is_ok_and(|f| f == 0.0)
}

/// What the ServiceAccount, DefaultTolerationSeconds and Priority admission plugins add to
/// a new Pod.
pub fn admit(obj: &mut Map<String, Value>) {
    let Some(s) = child(obj, "spec") else {
        return;
    };
    let account = match s.get("serviceAccountName").and_then(Value::as_str) {
        Some(name) if !name.is_empty() => name.to_owned(),
        _ => match s.get("serviceAccount").and_then(Value::as_str) {
            Some(name) if !name.is_empty() => name.to_owned(),
            _ => "default".to_owned(),
        },
    };
    s.insert("serviceAccountName".into(), json!(account));
    s.insert("serviceAccount".into(), json!(account));
    let tolerations = s
        .entry("tolerations")
        .or_insert_with(|| Value::Array(Vec::new()));
    if tolerations.is_null() {
        *tolerations = Value::Array(Vec::new());
    }
    if let Value::Array(list) = tolerations {
        for key in [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
        ] {
            let tolerated = list.iter().any(|t| {
                let effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
                let k = t.get("key").and_then(Value::as_str).unwrap_or("");
                (effect.is_empty() || effect == "NoExecute") && (k == key || k.is_empty())
            });
            if !tolerated {
                list.push(
                    json!({"key": key, "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": 300}),
                );
            }
        }
    }
    default(s, "priority", json!(0));
    default(s, "preemptionPolicy", json!("PreemptLowerPriority"));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_pull_policies_follow_the_tag() {
        assert_eq!(image_pull_policy("nginx"), "Always");
        assert_eq!(image_pull_policy("nginx:latest"), "Always");
        assert_eq!(image_pull_policy("nginx:1.27"), "IfNotPresent");
        assert_eq!(image_pull_policy("localhost:5000/busybox"), "Always");
        assert_eq!(
            image_pull_policy("localhost:5000/busybox:1"),
            "IfNotPresent"
        );
        assert_eq!(image_pull_policy("busybox@sha256:abc"), "IfNotPresent");
        assert_eq!(image_pull_policy("busybox:latest@sha256:abc"), "Always");
    }

    #[test]
    fn qos_classes() {
        let pod = |res: Value| {
            json!({"spec": {"containers": [{"name": "c", "resources": res}]}})
                .as_object()
                .cloned()
                .unwrap()
        };
        assert_eq!(qos_class(&pod(json!({}))), "BestEffort");
        assert_eq!(
            qos_class(&pod(
                json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1"}})
            )),
            "Burstable"
        );
        let full = json!({"cpu": "1", "memory": "1Gi"});
        assert_eq!(
            qos_class(&pod(json!({"limits": full, "requests": full}))),
            "Guaranteed"
        );
    }
}
