//! Integration with the k8s-openapi crate (feature `k8s-openapi`).
//!
//! Lets the machinery cache and watch the ecosystem's standard typed objects (`Pod`,
//! `Deployment`, `ConfigMap`, `Lease`, ...) directly, without conversion:
//!
//! * [`Resource`] for every `K: k8s_openapi::Resource + k8s_openapi::Metadata<Ty =
//!   ObjectMeta>` whose scope is namespaced or cluster-wide: `GROUP`, `VERSION`, `KIND`
//!   come from k8s-openapi's constants, `PLURAL` from `URL_PATH_SEGMENT`, `NAMESPACED`
//!   from `Scope`. Lists and subresources (`Scale`, `Eviction`, ...) are not resources.
//! * [`Object`] and [`ObjectMut`] for every `K: k8s_openapi::Metadata<Ty = ObjectMeta>`,
//!   reading k8s-openapi's `ObjectMeta` (all `Option`s) in place: absent strings read as
//!   `""`, absent maps and lists as shared empty statics, `jiff` timestamps convert to our
//!   `Copy` [`Time`] (clamped to years 0000..=9999, jiff's range being wider). Setters
//!   store `None` for empty values, so output keeps Go's `omitempty` shape.
//! * Conversions between our [`Time`]/[`MicroTime`] and theirs, and from k8s-openapi's
//!   `LabelSelector` to a parsed [`Selector`].
//!
//! This crate never enables a Kubernetes version feature of k8s-openapi (library crates
//! must not, per k8s-openapi's documentation): the final binary picks one. Because these
//! impls are blanket impls, a type implementing both k8s-openapi's traits and ours by hand
//! will conflict when the feature is on; implement only k8s-openapi's.

use std::borrow::Cow;
use std::collections::BTreeMap;

use ::k8s_openapi::apimachinery::pkg::apis::meta::v1 as k8s_meta;
use ::k8s_openapi::jiff;

use crate::labels::{RequirementError, Selector};
use crate::meta::OwnerReference;
use crate::object::{Object, ObjectMut};
use crate::owner_refs::OwnerRefs;
use crate::resource::Resource;
use crate::time::{MicroTime, Time, TimeError};

pub(crate) type K8sOwnerReference = k8s_meta::OwnerReference;

static EMPTY_MAP: BTreeMap<String, String> = BTreeMap::new();

/// Ours as k8s-openapi's, e.g. for a typed object's `owner_references`:
/// `OwnerReference::controller_of(&foo).into()`.
impl From<OwnerReference> for K8sOwnerReference {
    fn from(r: OwnerReference) -> K8sOwnerReference {
        K8sOwnerReference {
            api_version: r.api_version,
            kind: r.kind,
            name: r.name,
            uid: r.uid,
            controller: r.controller,
            block_owner_deletion: r.block_owner_deletion,
        }
    }
}

/// Whether a k8s-openapi resource scope is namespaced; implemented for
/// `NamespaceResourceScope` and `ClusterResourceScope` (not for subresources).
pub trait ScopeIsNamespaced {
    /// `true` for namespaced resources.
    const NAMESPACED: bool;
}

impl ScopeIsNamespaced for ::k8s_openapi::NamespaceResourceScope {
    const NAMESPACED: bool = true;
}

impl ScopeIsNamespaced for ::k8s_openapi::ClusterResourceScope {
    const NAMESPACED: bool = false;
}

impl<K> Resource for K
where
    K: ::k8s_openapi::Resource + ::k8s_openapi::Metadata<Ty = k8s_meta::ObjectMeta>,
    <K as ::k8s_openapi::Resource>::Scope: ScopeIsNamespaced,
{
    const GROUP: &'static str = <K as ::k8s_openapi::Resource>::GROUP;
    const VERSION: &'static str = <K as ::k8s_openapi::Resource>::VERSION;
    const KIND: &'static str = <K as ::k8s_openapi::Resource>::KIND;
    const PLURAL: &'static str = <K as ::k8s_openapi::Resource>::URL_PATH_SEGMENT;
    const NAMESPACED: bool =
        <<K as ::k8s_openapi::Resource>::Scope as ScopeIsNamespaced>::NAMESPACED;

    fn api_version() -> Cow<'static, str> {
        Cow::Borrowed(<K as ::k8s_openapi::Resource>::API_VERSION)
    }
}

fn time_from_jiff_saturating(ts: jiff::Timestamp) -> Time {
    let (secs, nanos) = split_jiff(ts);
    Time::from_unix(secs, nanos).unwrap_or_else(|_| {
        let edge = if secs < 0 {
            "0000-01-01T00:00:00Z"
        } else {
            "9999-12-31T23:59:59.999999999Z"
        };
        Time::parse(edge).unwrap_or(Time::UNIX_EPOCH)
    })
}

fn split_jiff(ts: jiff::Timestamp) -> (i64, u32) {
    let (mut secs, mut nanos) = (ts.as_second(), ts.subsec_nanosecond());
    if nanos < 0 {
        secs -= 1;
        nanos += 1_000_000_000;
    }
    (secs, nanos.unsigned_abs())
}

fn jiff_from_time(t: Time) -> Result<jiff::Timestamp, TimeError> {
    let nanos = t.subsec_nanos();
    // `nanos` < 1e9 fits an i32.
    jiff::Timestamp::new(t.unix_seconds(), i32::try_from(nanos).unwrap_or(0)).map_err(|_| {
        TimeError::OutOfRange {
            secs: t.unix_seconds(),
            nanos,
        }
    })
}

impl TryFrom<&k8s_meta::Time> for Time {
    type Error = TimeError;
    fn try_from(t: &k8s_meta::Time) -> Result<Time, TimeError> {
        let (secs, nanos) = split_jiff(t.0);
        Time::from_unix(secs, nanos)
    }
}

impl TryFrom<Time> for k8s_meta::Time {
    type Error = TimeError;
    fn try_from(t: Time) -> Result<k8s_meta::Time, TimeError> {
        jiff_from_time(t).map(k8s_meta::Time)
    }
}

impl TryFrom<&k8s_meta::MicroTime> for MicroTime {
    type Error = TimeError;
    fn try_from(t: &k8s_meta::MicroTime) -> Result<MicroTime, TimeError> {
        let (secs, nanos) = split_jiff(t.0);
        Time::from_unix(secs, nanos).map(MicroTime)
    }
}

impl TryFrom<MicroTime> for k8s_meta::MicroTime {
    type Error = TimeError;
    fn try_from(t: MicroTime) -> Result<k8s_meta::MicroTime, TimeError> {
        jiff_from_time(t.0).map(k8s_meta::MicroTime)
    }
}

impl TryFrom<&k8s_meta::LabelSelector> for Selector {
    type Error = RequirementError;
    fn try_from(ls: &k8s_meta::LabelSelector) -> Result<Selector, RequirementError> {
        crate::labels::label_selector::selector_from_parts(
            ls.match_labels
                .iter()
                .flatten()
                .map(|(k, v)| (k.as_str(), v.as_str())),
            ls.match_expressions.iter().flatten().map(|e| {
                (
                    e.key.as_str(),
                    e.operator.as_str(),
                    e.values.as_deref().unwrap_or(&[]),
                )
            }),
        )
    }
}

fn meta<K: ::k8s_openapi::Metadata<Ty = k8s_meta::ObjectMeta>>(k: &K) -> &k8s_meta::ObjectMeta {
    ::k8s_openapi::Metadata::metadata(k)
}

fn meta_mut<K: ::k8s_openapi::Metadata<Ty = k8s_meta::ObjectMeta>>(
    k: &mut K,
) -> &mut k8s_meta::ObjectMeta {
    ::k8s_openapi::Metadata::metadata_mut(k)
}

fn non_empty(s: String) -> Option<String> {
    Some(s).filter(|s| !s.is_empty())
}

impl<K> Object for K
where
    K: ::k8s_openapi::Metadata<Ty = k8s_meta::ObjectMeta>,
{
    fn name(&self) -> &str {
        meta(self).name.as_deref().unwrap_or("")
    }
    fn generate_name(&self) -> &str {
        meta(self).generate_name.as_deref().unwrap_or("")
    }
    fn namespace(&self) -> &str {
        meta(self).namespace.as_deref().unwrap_or("")
    }
    fn uid(&self) -> &str {
        meta(self).uid.as_deref().unwrap_or("")
    }
    fn resource_version(&self) -> &str {
        meta(self).resource_version.as_deref().unwrap_or("")
    }
    fn generation(&self) -> i64 {
        meta(self).generation.unwrap_or(0)
    }
    fn creation_timestamp(&self) -> Option<Time> {
        meta(self)
            .creation_timestamp
            .as_ref()
            .map(|t| time_from_jiff_saturating(t.0))
    }
    fn deletion_timestamp(&self) -> Option<Time> {
        meta(self)
            .deletion_timestamp
            .as_ref()
            .map(|t| time_from_jiff_saturating(t.0))
    }
    fn deletion_grace_period_seconds(&self) -> Option<i64> {
        meta(self).deletion_grace_period_seconds
    }
    fn labels(&self) -> crate::MapRef<'_> {
        meta(self).labels.as_ref().unwrap_or(&EMPTY_MAP).into()
    }
    fn annotations(&self) -> crate::MapRef<'_> {
        meta(self).annotations.as_ref().unwrap_or(&EMPTY_MAP).into()
    }
    fn owner_references(&self) -> OwnerRefs<'_> {
        OwnerRefs::k8s(meta(self).owner_references.as_deref().unwrap_or(&[]))
    }
    fn finalizers(&self) -> &[String] {
        meta(self).finalizers.as_deref().unwrap_or(&[])
    }
}

impl<K> ObjectMut for K
where
    K: ::k8s_openapi::Metadata<Ty = k8s_meta::ObjectMeta>,
{
    fn set_name(&mut self, name: String) {
        meta_mut(self).name = non_empty(name);
    }
    fn set_namespace(&mut self, namespace: String) {
        meta_mut(self).namespace = non_empty(namespace);
    }
    fn set_uid(&mut self, uid: String) {
        meta_mut(self).uid = non_empty(uid);
    }
    fn set_resource_version(&mut self, resource_version: String) {
        meta_mut(self).resource_version = non_empty(resource_version);
    }
    fn set_generation(&mut self, generation: i64) {
        meta_mut(self).generation = Some(generation).filter(|g| *g != 0);
    }
    fn set_creation_timestamp(&mut self, time: Option<Time>) {
        meta_mut(self).creation_timestamp = time.and_then(|t| k8s_meta::Time::try_from(t).ok());
    }
    fn set_deletion_timestamp(&mut self, time: Option<Time>) {
        meta_mut(self).deletion_timestamp = time.and_then(|t| k8s_meta::Time::try_from(t).ok());
    }
    fn set_deletion_grace_period_seconds(&mut self, seconds: Option<i64>) {
        meta_mut(self).deletion_grace_period_seconds = seconds;
    }
    fn set_owner_references(&mut self, refs: Vec<OwnerReference>) {
        let refs: Vec<K8sOwnerReference> = refs.into_iter().map(K8sOwnerReference::from).collect();
        meta_mut(self).owner_references = Some(refs).filter(|r| !r.is_empty());
    }
    fn labels_mut(&mut self) -> &mut BTreeMap<String, String> {
        meta_mut(self).labels.get_or_insert_with(BTreeMap::new)
    }
    fn annotations_mut(&mut self) -> &mut BTreeMap<String, String> {
        meta_mut(self).annotations.get_or_insert_with(BTreeMap::new)
    }
    fn finalizers_mut(&mut self) -> &mut Vec<String> {
        meta_mut(self).finalizers.get_or_insert_with(Vec::new)
    }
    fn clear_managed_fields(&mut self) {
        meta_mut(self).managed_fields = None;
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ::k8s_openapi::api::apps::v1::Deployment;
    use ::k8s_openapi::api::coordination::v1::Lease;
    use ::k8s_openapi::api::core::v1::{ConfigMap, Namespace, Node, Pod};

    use super::*;
    use crate::{DynamicObject, ObjectList, WatchEvent};

    const POD: &str = r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0","namespace":"default","uid":"u-1","resourceVersion":"77","generation":2,"creationTimestamp":"2024-01-02T03:04:05Z","deletionTimestamp":"2024-01-02T04:00:00Z","deletionGracePeriodSeconds":30,"labels":{"app":"web"},"annotations":{"a":"b"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"StatefulSet","name":"web","uid":"s-1","controller":true}],"finalizers":["f1"]},"spec":{"containers":[{"name":"c","image":"nginx"}]}}"#;

    fn info<K: Resource>() -> (
        &'static str,
        &'static str,
        &'static str,
        &'static str,
        bool,
        String,
    ) {
        (
            K::GROUP,
            K::VERSION,
            K::KIND,
            K::PLURAL,
            K::NAMESPACED,
            K::api_version().into_owned(),
        )
    }

    #[test]
    fn resource_constants() {
        assert_eq!(info::<Pod>(), ("", "v1", "Pod", "pods", true, "v1".into()));
        assert_eq!(
            info::<ConfigMap>(),
            ("", "v1", "ConfigMap", "configmaps", true, "v1".into())
        );
        assert_eq!(
            info::<Deployment>(),
            (
                "apps",
                "v1",
                "Deployment",
                "deployments",
                true,
                "apps/v1".into()
            )
        );
        assert_eq!(
            info::<Lease>(),
            (
                "coordination.k8s.io",
                "v1",
                "Lease",
                "leases",
                true,
                "coordination.k8s.io/v1".into()
            )
        );
        assert_eq!(
            info::<Node>(),
            ("", "v1", "Node", "nodes", false, "v1".into())
        );
        assert!(!info::<Namespace>().4);
        assert_eq!(
            <Deployment as Resource>::gvr().to_string(),
            "apps/v1, Resource=deployments"
        );
        assert!(matches!(
            <Pod as Resource>::api_version(),
            Cow::Borrowed("v1")
        ));
    }

    fn summary<O: Object + ?Sized>(o: &O) -> (String, &str, i64, usize, Option<String>) {
        (
            o.key(),
            o.resource_version(),
            o.generation(),
            o.finalizers().len(),
            o.controller_ref().map(|r| format!("{}/{}", r.kind, r.name)),
        )
    }

    #[test]
    fn object_accessors_read_k8s_openapi_metadata_in_place() {
        let pod: Pod = serde_json::from_str(POD).unwrap();
        assert_eq!(
            summary(&pod),
            (
                "default/web-0".into(),
                "77",
                2,
                1,
                Some("StatefulSet/web".into())
            )
        );
        assert_eq!(pod.uid(), "u-1");
        assert_eq!(Object::labels(&pod).get("app"), Some("web"));
        assert_eq!(pod.annotations().get("a"), Some("b"));
        assert_eq!(
            pod.creation_timestamp().unwrap().to_string(),
            "2024-01-02T03:04:05Z"
        );
        assert!(pod.is_being_deleted());
        assert_eq!(pod.deletion_grace_period_seconds(), Some(30));

        // The same accessors on our own types give the same answers.
        let dynamic: DynamicObject = serde_json::from_str(POD).unwrap();
        assert_eq!(summary(&dynamic), summary(&pod));
        assert_eq!(dynamic.to_typed::<Pod>().unwrap(), pod);

        // Absent metadata reads as empty; Arc<Pod> derefs (what a store holds).
        let empty = Arc::new(Pod::default());
        assert_eq!(summary(&*empty), (String::new(), "", 0, 0, None));
        assert!(empty.labels().is_empty());
        assert_eq!(empty.owner_references().len(), 0);
        assert_eq!(empty.name(), "");
    }

    #[test]
    fn object_mut_keeps_omitempty_shape() {
        let mut cm = ConfigMap::default();
        cm.set_name("c".into());
        cm.set_namespace(String::new());
        cm.set_resource_version("5".into());
        cm.set_generation(0);
        cm.labels_mut().insert("k".into(), "v".into());
        cm.finalizers_mut().push("f".into());
        cm.set_creation_timestamp(Some(Time::parse("2024-01-02T03:04:05Z").unwrap()));
        cm.set_owner_references(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Secret".into(),
            name: "s".into(),
            uid: "u".into(),
            controller: Some(true),
            block_owner_deletion: None,
        }]);
        assert_eq!(cm.metadata.namespace, None);
        assert_eq!(cm.metadata.generation, None);
        assert_eq!(cm.controller_ref().unwrap().kind, "Secret");
        assert_eq!(
            serde_json::to_string(&cm.metadata).unwrap(),
            r#"{"creationTimestamp":"2024-01-02T03:04:05Z","finalizers":["f"],"labels":{"k":"v"},"name":"c","ownerReferences":[{"apiVersion":"v1","controller":true,"kind":"Secret","name":"s","uid":"u"}],"resourceVersion":"5"}"#
        );
        cm.set_owner_references(vec![]);
        cm.clear_managed_fields();
        cm.set_deletion_timestamp(None);
        assert_eq!(cm.metadata.owner_references, None);
    }

    #[test]
    fn time_conversions() {
        for s in [
            "2024-01-02T03:04:05.123456789Z",
            "1969-12-31T23:59:59.5Z",
            "0000-01-01T00:00:00Z",
        ] {
            let ours = Time::parse(s).unwrap();
            let theirs = k8s_meta::Time::try_from(ours).unwrap();
            assert_eq!(Time::try_from(&theirs), Ok(ours), "{s}");
            let micro = k8s_meta::MicroTime::try_from(MicroTime(ours)).unwrap();
            assert_eq!(MicroTime::try_from(&micro), Ok(MicroTime(ours)));
        }
        // jiff reaches further back than RFC 3339's year 0: such a time is an error, and
        // the saturating accessor clamps it.
        let ancient = k8s_meta::Time(jiff::Timestamp::MIN);
        assert!(Time::try_from(&ancient).is_err());
        assert_eq!(
            time_from_jiff_saturating(ancient.0).to_string(),
            "0000-01-01T00:00:00Z"
        );
        assert!(k8s_meta::Time::try_from(Time::parse("9999-12-31T23:59:59Z").unwrap()).is_err());
    }

    #[test]
    fn label_selector_from_a_deployment() {
        let d: Deployment = serde_json::from_str(
            r#"{"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"NotIn","values":["db"]}]},"template":{}}}"#,
        )
        .unwrap();
        let sel = Selector::try_from(&d.spec.selector).unwrap();
        assert_eq!(sel.to_string(), "app=web,tier notin (db)");
        let pod: Pod = serde_json::from_str(POD).unwrap();
        assert!(sel.matches_object(&pod));
        let bad = k8s_meta::LabelSelector {
            match_expressions: Some(vec![k8s_meta::LabelSelectorRequirement {
                key: "k".into(),
                operator: "Sometimes".into(),
                values: None,
            }]),
            match_labels: None,
        };
        assert_eq!(
            Selector::try_from(&bad),
            Err(RequirementError::UnknownOperator {
                operator: "Sometimes".into()
            })
        );
    }

    #[test]
    fn lists_and_watch_events_of_k8s_openapi_types() {
        let list: ObjectList<Pod> = serde_json::from_str(&format!(
            r#"{{"apiVersion":"v1","kind":"PodList","metadata":{{"resourceVersion":"90"}},"items":[{POD}]}}"#
        ))
        .unwrap();
        assert_eq!(list.items[0].key(), "default/web-0");
        let ev: WatchEvent<Pod> =
            serde_json::from_str(&format!(r#"{{"type":"MODIFIED","object":{POD}}}"#)).unwrap();
        assert_eq!(ev.resource_version(), Some("77"));
        let bm: WatchEvent<Pod> = serde_json::from_str(
            r#"{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"91","annotations":{"k8s.io/initial-events-end":"true"}},"spec":{"containers":null},"status":{}}}"#,
        )
        .unwrap();
        assert!(matches!(&bm, WatchEvent::Bookmark(b) if b.is_initial_events_end()));
        let typed = ObjectList::of(vec![Lease::default()], "3");
        assert_eq!(
            (typed.api_version.as_str(), typed.kind.as_str()),
            ("coordination.k8s.io/v1", "LeaseList")
        );
        let dynamic = DynamicObject::from_typed(&list.items[0]).unwrap();
        assert!(dynamic.is_a::<Pod>());
        assert!(!dynamic.is_a::<ConfigMap>());
    }
}
