//! The resource types the server serves: built-ins plus those defined by CRDs.
//!
//! Plays the role of kube-apiserver's REST storage registration (`pkg/registry/...`,
//! `apiextensions-apiserver`'s CRD handler) reduced to the facts the generic handlers need:
//! group, version, plural, kind, scope, whether a `status` subresource exists, whether
//! `metadata.generation` is tracked, which fields a field selector may use, and whether
//! strategic merge patch is allowed (built-ins only). Each resource has its own keyspace in
//! the store, named `group/plural` like etcd's `/registry/<group>/<plural>`.
//!
//! A custom resource's version also carries its `openAPIV3Schema`, which prunes, defaults
//! and validates its objects ([`crate::schema`]).
//!
//! Differences: every resource is served at exactly one version (no conversion), and the
//! selectable fields are a fixed per-type list instead of each type's field-label function.

use std::collections::BTreeMap;
use std::sync::Arc;

use parking_lot::RwLock;
use serde_json::Value;

/// What the server knows about one served resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, `""` for core.
    pub group: String,
    /// Served version.
    pub version: String,
    /// Plural name used in URLs.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Kind.
    pub kind: String,
    /// Kind of the list (`<Kind>List`).
    pub list_kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Whether the `status` subresource is served.
    pub status_subresource: bool,
    /// Whether `metadata.generation` is bumped on spec changes.
    pub tracks_generation: bool,
    /// Whether strategic merge patch is accepted (built-in types only).
    pub strategic_merge: bool,
    /// Short names for discovery (`cm`, `deploy`, ...).
    pub short_names: Vec<String>,
    /// Categories for discovery (`all`, `api-extensions`, a CRD's `names.categories`).
    pub categories: Vec<String>,
    /// Discovery's `storageVersionHash` ([`storage_version_hash`] of the version objects
    /// are stored as).
    pub storage_version_hash: String,
    /// Field paths a field selector may use besides `metadata.name`/`metadata.namespace`.
    pub selectable_fields: Vec<String>,
    /// Name validation: `true` for DNS-1123 labels (namespaces), `false` for subdomains.
    pub name_is_label: bool,
    /// The structural schema (`openAPIV3Schema`) of a custom resource's version.
    pub schema: Option<Arc<Value>>,
    /// A custom resource version's `additionalPrinterColumns` (its Table columns).
    pub printer_columns: Option<Arc<Value>>,
}

impl ResourceInfo {
    /// Whether kube-apiserver keeps a watch cache of the resource: every one but Events
    /// (core and events.k8s.io), which its default `--watch-cache-sizes` leave uncached.
    pub fn watch_cached(&self) -> bool {
        !(self.plural == "events" && matches!(self.group.as_str(), "" | "events.k8s.io"))
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The store keyspace of this resource: `group/plural`.
    pub fn keyspace(&self) -> String {
        format!("{}/{}", self.group, self.plural)
    }

    /// The object's key in kube-apiserver's etcd, as its storage errors name it:
    /// `/registry/<plural>/[<namespace>/]<name>` for the built-in groups served here,
    /// `/registry/<group>/<plural>/...` for CRDs and custom resources.
    pub fn etcd_key(&self, namespace: &str, name: &str) -> String {
        let mut key = String::from("/registry/");
        if !self.strategic_merge || self.group == "apiextensions.k8s.io" {
            key.push_str(&self.group);
            key.push('/');
        }
        key.push_str(&self.plural);
        key.push('/');
        if self.namespaced {
            key.push_str(namespace);
            key.push('/');
        }
        key.push_str(name);
        key
    }

    /// Whether the field selector may use `field`.
    pub fn field_selectable(&self, field: &str) -> bool {
        field == "metadata.name"
            || (self.namespaced && field == "metadata.namespace")
            || self.selectable_fields.iter().any(|f| f == field)
    }
}

/// The `storageVersionHash` of discovery for objects stored as `group/version` `kind`:
/// the first 8 bytes of the SHA-256 of `<group>/<version>/<kind>`, in base64, as
/// kube-apiserver's `discovery.StorageVersionHash` computes it (checked against
/// kube-apiserver 1.36.2's values: ConfigMaps `qFsyl6wFWjQ=` from `/v1/ConfigMap`).
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine as _;
    let digest = ring::digest::digest(
        &ring::digest::SHA256,
        format!("{group}/{version}/{kind}").as_bytes(),
    );
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    version: &str,
    plural: &str,
    kind: &str,
    namespaced: bool,
    status: bool,
    generation: bool,
    short: &[&str],
    fields: &[&str],
) -> ResourceInfo {
    ResourceInfo {
        group: group.to_owned(),
        version: version.to_owned(),
        plural: plural.to_owned(),
        singular: kind.to_ascii_lowercase(),
        kind: kind.to_owned(),
        list_kind: format!("{kind}List"),
        namespaced,
        status_subresource: status,
        tracks_generation: generation,
        strategic_merge: true,
        short_names: short.iter().map(|s| (*s).to_owned()).collect(),
        categories: match plural {
            "pods" | "deployments" | "replicasets" => vec!["all".to_owned()],
            "customresourcedefinitions" => vec!["api-extensions".to_owned()],
            _ => Vec::new(),
        },
        storage_version_hash: {
            // events.k8s.io Events are stored as core v1 Events, CRDs still as v1beta1.
            let (g, v) = match (group, plural) {
                ("events.k8s.io", "events") => ("", "v1"),
                ("apiextensions.k8s.io", _) => (group, "v1beta1"),
                _ => (group, version),
            };
            storage_version_hash(g, v, kind)
        },
        selectable_fields: fields.iter().map(|s| (*s).to_owned()).collect(),
        name_is_label: plural == "namespaces",
        schema: None,
        printer_columns: None,
    }
}

/// The built-in resources.
pub fn builtins() -> Vec<ResourceInfo> {
    vec![
        builtin(
            "",
            "v1",
            "namespaces",
            "Namespace",
            false,
            true,
            false,
            &["ns"],
            &["status.phase"],
        ),
        builtin(
            "",
            "v1",
            "configmaps",
            "ConfigMap",
            true,
            false,
            false,
            &["cm"],
            &[],
        ),
        builtin(
            "",
            "v1",
            "secrets",
            "Secret",
            true,
            false,
            false,
            &[],
            &["type"],
        ),
        builtin(
            "",
            "v1",
            "pods",
            "Pod",
            true,
            true,
            true, // metadata.generation on Pods since 1.34 (observed on 1.36.2)
            &["po"],
            &[
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "status.phase",
                "status.podIP",
                "status.nominatedNodeName",
            ],
        ),
        builtin(
            "",
            "v1",
            "events",
            "Event",
            true,
            false,
            false,
            &["ev"],
            &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
            ],
        ),
        builtin(
            "apps",
            "v1",
            "deployments",
            "Deployment",
            true,
            true,
            true,
            &["deploy"],
            &[],
        ),
        builtin(
            "apps",
            "v1",
            "replicasets",
            "ReplicaSet",
            true,
            true,
            true,
            &["rs"],
            &["status.replicas"],
        ),
        builtin(
            "coordination.k8s.io",
            "v1",
            "leases",
            "Lease",
            true,
            false,
            false,
            &[],
            &[],
        ),
        builtin(
            "events.k8s.io",
            "v1",
            "events",
            "Event",
            true,
            false,
            false,
            &["ev"],
            &[
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "regarding.apiVersion",
                "regarding.resourceVersion",
                "regarding.fieldPath",
                "reason",
                "reportingController",
                "type",
            ],
        ),
        builtin(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            true,
            true,
            &["crd", "crds"],
            &[],
        ),
    ]
}

/// `(group, version, plural)`.
type ResourceKey = (String, String, String);

/// The set of served resources, shared by the router, discovery and the CRD controller.
#[derive(Debug, Clone, Default)]
pub struct Registry {
    inner: Arc<RwLock<BTreeMap<ResourceKey, Arc<ResourceInfo>>>>,
}

impl Registry {
    /// A registry with the built-in resources.
    pub fn with_builtins() -> Registry {
        let registry = Registry::default();
        for info in builtins() {
            registry.insert(info);
        }
        registry
    }

    /// Serves `info` (replacing a resource with the same group/version/plural).
    pub fn insert(&self, info: ResourceInfo) {
        let key = (
            info.group.clone(),
            info.version.clone(),
            info.plural.clone(),
        );
        self.inner.write().insert(key, Arc::new(info));
    }

    /// Stops serving `group/version/plural`.
    pub fn remove(&self, group: &str, version: &str, plural: &str) {
        self.inner
            .write()
            .remove(&(group.to_owned(), version.to_owned(), plural.to_owned()));
    }

    /// The resource served at `group/version/plural`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        self.inner
            .read()
            .get(&(group.to_owned(), version.to_owned(), plural.to_owned()))
            .cloned()
    }

    /// Every served resource, sorted by group, version and plural.
    pub fn all(&self) -> Vec<Arc<ResourceInfo>> {
        self.inner.read().values().cloned().collect()
    }

    /// The served resources of one group version.
    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<Arc<ResourceInfo>> {
        self.inner
            .read()
            .values()
            .filter(|r| r.group == group && r.version == version)
            .cloned()
            .collect()
    }

    /// The resource whose kind and apiVersion match (for owner references).
    pub fn by_kind(&self, api_version: &str, kind: &str) -> Option<Arc<ResourceInfo>> {
        self.inner
            .read()
            .values()
            .find(|r| r.kind == kind && r.api_version() == api_version)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_served_and_crds_come_and_go() {
        let r = Registry::with_builtins();
        let cm = r.get("", "v1", "configmaps").expect("configmaps");
        assert!(cm.namespaced && !cm.status_subresource);
        assert_eq!(cm.keyspace(), "/configmaps");
        assert!(
            r.get("apps", "v1", "deployments")
                .is_some_and(|d| d.tracks_generation)
        );
        assert!(r.get("example.com", "v1", "widgets").is_none());
        let mut w = (*cm).clone();
        w.group = "example.com".into();
        w.plural = "widgets".into();
        r.insert(w);
        assert!(r.get("example.com", "v1", "widgets").is_some());
        r.remove("example.com", "v1", "widgets");
        assert!(r.get("example.com", "v1", "widgets").is_none());
        assert!(
            r.get("", "v1", "pods")
                .is_some_and(|p| p.field_selectable("spec.nodeName"))
        );
    }
}
