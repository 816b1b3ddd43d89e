//! Built-in defaults: the fields kube-apiserver fills in on the objects it serves, so that a
//! controller comparing what it wants with what it reads meets the same objects as on a real
//! cluster.
//!
//! Mirrors the scheme defaulters (`pkg/apis/*/v1/defaults.go`, run on every decoded body:
//! create, update and patch alike), the zero values Go's encoder writes for struct fields
//! that are never omitted (`status: {}` of a Deployment, `source: {}` and `eventTime: null`
//! of a core Event, ...), and on create the admission plugins' additions to Pods (see
//! [`pod`]). The set was taken from kube-apiserver 1.36.2's answers to minimal objects:
//!
//! | resource | defaults |
//! |---|---|
//! | Namespace | label `kubernetes.io/metadata.name: <name>` (always reset) |
//! | Secret | `type: Opaque` |
//! | Pod, pod templates | see [`pod`] |
//! | Deployment | `replicas: 1`, `strategy: RollingUpdate` with `maxUnavailable`/`maxSurge` `25%`, `revisionHistoryLimit: 10`, `progressDeadlineSeconds: 600`, `status: {}` |
//! | ReplicaSet | `replicas: 1`, `status.replicas: 0` |
//! | Lease | `spec: {}` |
//! | core Event | `involvedObject: {}`, `source: {}`, `firstTimestamp`/`lastTimestamp`/`eventTime: null`, `reportingComponent`/`reportingInstance: ""` |
//! | events.k8s.io Event | `deprecatedSource: {}`, `deprecatedFirstTimestamp`/`deprecatedLastTimestamp: null` |
//! | CustomResourceDefinition | `names.singular` (the kind in lower case), `names.listKind` (`<Kind>List`), `conversion: {strategy: None}`, a webhook service's `port: 443` |
//!
//! ConfigMaps get nothing. Custom resources get the defaults of their schema
//! ([`crate::schema`]), not these.

pub mod pod;

use serde_json::{Map, Value, json};

use crate::resources::ResourceInfo;

/// Sets `key` to `value` when it is absent or null.
pub(crate) fn default(m: &mut Map<String, Value>, key: &str, value: Value) {
    match m.get(key) {
        Some(v) if !v.is_null() => {}
        _ => {
            m.insert(key.to_owned(), value);
        }
    }
}

/// The object at `key`, when there is one.
pub(crate) fn child<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// Calls `f` on each object item of the array at `key`.
pub(crate) fn each_item(
    m: &mut Map<String, Value>,
    key: &str,
    mut f: impl FnMut(&mut Map<String, Value>),
) {
    if let Some(items) = m.get_mut(key).and_then(Value::as_array_mut) {
        items
            .iter_mut()
            .filter_map(Value::as_object_mut)
            .for_each(&mut f);
    }
}

/// Defaults a new object of `info` once its name is known (a namespace's label carries a
/// generated name) and its initial status set: the admission plugins' additions, then the
/// scheme defaults again.
pub fn on_create(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    if is(info, "", "pods") {
        pod::admit(obj);
    }
    apply(info, obj);
}

/// Defaults a body decoded for a write (create, update, patch): the scheme defaults.
pub fn on_decode(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    apply(info, obj);
}

fn is(info: &ResourceInfo, group: &str, plural: &str) -> bool {
    info.group == group && info.plural == plural && info.strategic_merge
}

fn apply(info: &ResourceInfo, obj: &mut Map<String, Value>) {
    match (info.group.as_str(), info.plural.as_str()) {
        _ if !info.strategic_merge => {} // custom resources: their schema's defaults
        ("", "namespaces") => namespace(obj),
        ("", "secrets") => default(obj, "type", json!("Opaque")),
        ("", "pods") => pod::pod(obj),
        ("", "events") => {
            default(obj, "involvedObject", json!({}));
            default(obj, "source", json!({}));
            for key in ["firstTimestamp", "lastTimestamp", "eventTime"] {
                obj.entry(key).or_insert(Value::Null);
            }
            default(obj, "reportingComponent", json!(""));
            default(obj, "reportingInstance", json!(""));
        }
        ("events.k8s.io", "events") => {
            default(obj, "deprecatedSource", json!({}));
            for key in ["deprecatedFirstTimestamp", "deprecatedLastTimestamp"] {
                obj.entry(key).or_insert(Value::Null);
            }
        }
        ("coordination.k8s.io", "leases") => default(obj, "spec", json!({})),
        ("apps", "deployments") => deployment(obj),
        ("apps", "replicasets") => {
            if let Some(spec) = child(obj, "spec") {
                default(spec, "replicas", json!(1));
                if let Some(t) = child(spec, "template") {
                    pod::template(t);
                }
            }
            default(obj, "status", json!({}));
            if let Some(status) = child(obj, "status") {
                default(status, "replicas", json!(0));
            }
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => crd(obj),
        _ => {}
    }
}

fn namespace(obj: &mut Map<String, Value>) {
    let meta = crate::validation::meta_mut(obj);
    let Some(name) = meta.get("name").and_then(Value::as_str).map(str::to_owned) else {
        return;
    };
    if name.is_empty() {
        return;
    }
    default(meta, "labels", json!({}));
    if let Some(labels) = child(meta, "labels") {
        labels.insert("kubernetes.io/metadata.name".into(), json!(name));
    }
}

fn deployment(obj: &mut Map<String, Value>) {
    if let Some(spec) = child(obj, "spec") {
        default(spec, "replicas", json!(1));
        default(spec, "strategy", json!({}));
        if let Some(strategy) = child(spec, "strategy") {
            default(strategy, "type", json!("RollingUpdate"));
            if strategy.get("type") == Some(&json!("RollingUpdate")) {
                default(strategy, "rollingUpdate", json!({}));
                if let Some(rolling) = child(strategy, "rollingUpdate") {
                    default(rolling, "maxUnavailable", json!("25%"));
                    default(rolling, "maxSurge", json!("25%"));
                }
            }
        }
        default(spec, "revisionHistoryLimit", json!(10));
        default(spec, "progressDeadlineSeconds", json!(600));
        if let Some(t) = child(spec, "template") {
            pod::template(t);
        }
    }
    default(obj, "status", json!({}));
}

fn crd(obj: &mut Map<String, Value>) {
    let Some(spec) = child(obj, "spec") else {
        return;
    };
    if let Some(names) = child(spec, "names") {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        if !kind.is_empty() {
            default(names, "singular", json!(kind.to_ascii_lowercase()));
            default(names, "listKind", json!(format!("{kind}List")));
        }
    }
    default(spec, "conversion", json!({"strategy": "None"}));
    if let Some(service) = child(spec, "conversion")
        .and_then(|c| child(c, "webhook"))
        .and_then(|w| child(w, "clientConfig"))
        .and_then(|c| child(c, "service"))
    {
        default(service, "port", json!(443));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(group: &str, plural: &str) -> ResourceInfo {
        crate::resources::builtins()
            .into_iter()
            .find(|r| r.group == group && r.plural == plural)
            .expect("a built-in")
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    #[test]
    fn recreate_has_no_rolling_update_and_defaults_are_idempotent() {
        let mut d = obj(json!({"spec": {"replicas": 3, "strategy": {"type": "Recreate"}}}));
        on_decode(&info("apps", "deployments"), &mut d);
        let once = d.clone();
        on_decode(&info("apps", "deployments"), &mut d);
        assert_eq!(d, once);
        assert_eq!(d["spec"]["strategy"], json!({"type": "Recreate"}));
        assert_eq!(d["spec"]["replicas"], json!(3));
    }

    #[test]
    fn namespaces_secrets_and_crds() {
        let mut ns = obj(json!({"metadata": {"name": "a", "labels": {
            "kubernetes.io/metadata.name": "other", "x": "y"}}}));
        on_decode(&info("", "namespaces"), &mut ns);
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"kubernetes.io/metadata.name": "a", "x": "y"})
        );
        let mut s = obj(json!({"metadata": {"name": "s"}}));
        on_create(&info("", "secrets"), &mut s);
        assert_eq!(s["type"], "Opaque");
        let mut crd = obj(json!({"spec": {"names": {"plural": "widgets", "kind": "Widget"}}}));
        on_create(
            &info("apiextensions.k8s.io", "customresourcedefinitions"),
            &mut crd,
        );
        assert_eq!(
            Value::Object(crd)["spec"],
            json!({"names": {"plural": "widgets", "kind": "Widget", "singular": "widget",
                "listKind": "WidgetList"}, "conversion": {"strategy": "None"}})
        );
    }

    #[test]
    fn a_pod_gets_scheme_and_admission_defaults() {
        // Observed on kube-apiserver 1.36.2 (less the service account token volume).
        let mut p = obj(json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]},
            "status": {"phase": "Pending"}}));
        on_create(&info("", "pods"), &mut p);
        assert_eq!(
            Value::Object(p),
            json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c",
                "image": "busybox:1.36", "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
                "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
                "serviceAccount": "default", "securityContext": {},
                "schedulerName": "default-scheduler", "tolerations": [
                    {"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300},
                    {"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                     "effect": "NoExecute", "tolerationSeconds": 300}],
                "priority": 0, "enableServiceLinks": true,
                "preemptionPolicy": "PreemptLowerPriority"},
              "status": {"phase": "Pending", "qosClass": "BestEffort"}})
        );
    }
}
