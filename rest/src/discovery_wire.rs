//! The wire documents of discovery and their conversion into [`ApiDiscovery`]: classic
//! (`APIVersions`, `APIGroupList`, `APIResourceList`) and aggregated
//! (`apidiscovery.k8s.io/v2` and `v2beta1` `APIGroupDiscoveryList`, which have the same shape).
//!
//! Every list or string field may be missing or `null` (Go writes `null` for a nil slice
//! without `omitempty`); both decode as empty.

use clientgo_apimachinery::{GroupVersion, GroupVersionKind};
use serde::{Deserialize, Deserializer};

use super::{ApiDiscovery, ApiGroup, DiscoveredResource, FailedGroupVersion, Subresource};

fn null_default<'de, D: Deserializer<'de>, T: Default + Deserialize<'de>>(
    d: D,
) -> Result<T, D::Error> {
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// What `/api` or `/apis` answered.
#[derive(Debug)]
pub(crate) enum Root {
    /// Aggregated discovery: every group, version and resource.
    Aggregated(GroupDiscoveryList),
    /// Classic discovery: the groups and their versions; resources still to fetch.
    Groups(Vec<ApiGroup>),
}

#[derive(Deserialize)]
struct Kind {
    #[serde(default, deserialize_with = "null_default")]
    kind: String,
}

/// `APIVersions` (`/api`).
#[derive(Deserialize)]
struct ApiVersions {
    #[serde(default, deserialize_with = "null_default")]
    versions: Vec<String>,
}

/// `APIGroupList` (`/apis`).
#[derive(Deserialize)]
struct ApiGroupList {
    #[serde(default, deserialize_with = "null_default")]
    groups: Vec<ApiGroupDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ApiGroupDoc {
    #[serde(default, deserialize_with = "null_default")]
    name: String,
    #[serde(default, deserialize_with = "null_default")]
    versions: Vec<VersionForDiscovery>,
    #[serde(default)]
    preferred_version: Option<VersionForDiscovery>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct VersionForDiscovery {
    #[serde(default, deserialize_with = "null_default")]
    group_version: String,
    #[serde(default, deserialize_with = "null_default")]
    version: String,
}

impl VersionForDiscovery {
    fn version(&self) -> String {
        if self.version.is_empty() {
            let gv = &self.group_version;
            gv.rsplit_once('/')
                .map_or(gv.as_str(), |(_, v)| v)
                .to_owned()
        } else {
            self.version.clone()
        }
    }
}

/// `APIResourceList` (`/api/v1`, `/apis/<group>/<version>`).
#[derive(Deserialize)]
pub(crate) struct ResourceList {
    #[serde(default, deserialize_with = "null_default")]
    resources: Vec<ResourceDoc>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceDoc {
    #[serde(default, deserialize_with = "null_default")]
    name: String,
    #[serde(default, deserialize_with = "null_default")]
    singular_name: String,
    #[serde(default, deserialize_with = "null_default")]
    namespaced: bool,
    #[serde(default, deserialize_with = "null_default")]
    group: String,
    #[serde(default, deserialize_with = "null_default")]
    version: String,
    #[serde(default, deserialize_with = "null_default")]
    kind: String,
    #[serde(default, deserialize_with = "null_default")]
    verbs: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    short_names: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    categories: Vec<String>,
}

/// `APIGroupDiscoveryList`.
#[derive(Debug, Deserialize)]
pub(crate) struct GroupDiscoveryList {
    #[serde(default, deserialize_with = "null_default")]
    items: Vec<GroupDiscovery>,
}

#[derive(Debug, Default, Deserialize)]
struct NameOnly {
    #[serde(default, deserialize_with = "null_default")]
    name: String,
}

#[derive(Debug, Deserialize)]
struct GroupDiscovery {
    #[serde(default, deserialize_with = "null_default")]
    metadata: NameOnly,
    /// In preference order.
    #[serde(default, deserialize_with = "null_default")]
    versions: Vec<VersionDiscovery>,
}

#[derive(Debug, Deserialize)]
struct VersionDiscovery {
    #[serde(default, deserialize_with = "null_default")]
    version: String,
    #[serde(default, deserialize_with = "null_default")]
    resources: Vec<ResourceDiscovery>,
    #[serde(default, deserialize_with = "null_default")]
    freshness: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ResourceDiscovery {
    #[serde(default, deserialize_with = "null_default")]
    resource: String,
    #[serde(default)]
    response_kind: Option<KindDoc>,
    #[serde(default, deserialize_with = "null_default")]
    scope: String,
    #[serde(default, deserialize_with = "null_default")]
    singular_resource: String,
    #[serde(default, deserialize_with = "null_default")]
    verbs: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    short_names: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    categories: Vec<String>,
    #[serde(default, deserialize_with = "null_default")]
    subresources: Vec<SubresourceDiscovery>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SubresourceDiscovery {
    #[serde(default, deserialize_with = "null_default")]
    subresource: String,
    #[serde(default)]
    response_kind: Option<KindDoc>,
    #[serde(default, deserialize_with = "null_default")]
    verbs: Vec<String>,
}

#[derive(Debug, Deserialize)]
struct KindDoc {
    #[serde(default, deserialize_with = "null_default")]
    group: String,
    #[serde(default, deserialize_with = "null_default")]
    version: String,
    #[serde(default, deserialize_with = "null_default")]
    kind: String,
}

impl KindDoc {
    /// The kind, its group and version defaulting to `gv`'s; `None` without a kind.
    fn gvk(&self, gv: &GroupVersion) -> Option<GroupVersionKind> {
        if self.kind.is_empty() {
            return None;
        }
        let (group, version) = if self.group.is_empty() && self.version.is_empty() {
            (gv.group.as_str(), gv.version.as_str())
        } else {
            (self.group.as_str(), self.version.as_str())
        };
        Some(GroupVersionKind::new(group, version, self.kind.clone()))
    }
}

/// Whether a `Content-Type` is an aggregated discovery document.
fn is_aggregated_media_type(content_type: &str) -> bool {
    let mut params = content_type.split(';').skip(1).map(str::trim);
    params.any(|p| p.eq_ignore_ascii_case("as=APIGroupDiscoveryList"))
}

/// Decodes what `path` (`/api` or `/apis`) answered with `content_type`.
pub(crate) fn parse_root(
    path: &str,
    content_type: &str,
    body: &[u8],
) -> Result<Root, serde_json::Error> {
    let aggregated = is_aggregated_media_type(content_type)
        || serde_json::from_slice::<Kind>(body)?.kind == "APIGroupDiscoveryList";
    if aggregated {
        return Ok(Root::Aggregated(serde_json::from_slice(body)?));
    }
    if path == "/api" {
        let doc: ApiVersions = serde_json::from_slice(body)?;
        let Some(preferred) = doc.versions.first().cloned() else {
            return Ok(Root::Groups(Vec::new()));
        };
        return Ok(Root::Groups(vec![ApiGroup {
            name: String::new(),
            versions: doc.versions,
            preferred_version: preferred,
        }]));
    }
    let doc: ApiGroupList = serde_json::from_slice(body)?;
    let groups = doc
        .groups
        .into_iter()
        .filter(|g| !g.name.is_empty())
        .map(|g| {
            let versions: Vec<String> = g
                .versions
                .iter()
                .map(VersionForDiscovery::version)
                .collect();
            let preferred = g
                .preferred_version
                .as_ref()
                .map(VersionForDiscovery::version)
                .filter(|v| !v.is_empty())
                .or_else(|| versions.first().cloned())
                .unwrap_or_default();
            ApiGroup {
                name: g.name,
                versions,
                preferred_version: preferred,
            }
        })
        .collect();
    Ok(Root::Groups(groups))
}

/// The resources of a classic `APIResourceList` of `gv`, subresources folded into their
/// resources.
pub(crate) fn legacy_resources(gv: &GroupVersion, list: ResourceList) -> Vec<DiscoveredResource> {
    let mut resources = Vec::new();
    let mut subresources = Vec::new();
    for doc in list.resources {
        if let Some((parent, name)) = doc.name.split_once('/') {
            let kind = KindDoc {
                group: doc.group,
                version: doc.version,
                kind: doc.kind,
            };
            let sub = Subresource {
                name: name.to_owned(),
                kind: kind.gvk(gv),
                verbs: doc.verbs,
            };
            subresources.push((parent.to_owned(), sub));
            continue;
        }
        if doc.name.is_empty() {
            continue;
        }
        resources.push(DiscoveredResource {
            group: gv.group.clone(),
            version: gv.version.clone(),
            kind: doc.kind,
            plural: doc.name,
            singular: doc.singular_name,
            namespaced: doc.namespaced,
            verbs: doc.verbs,
            short_names: doc.short_names,
            categories: doc.categories,
            subresources: Vec::new(),
        });
    }
    for (parent, sub) in subresources {
        match resources.iter_mut().find(|r| r.plural == parent) {
            Some(resource) => resource.subresources.push(sub),
            None => tracing::debug!(
                group_version = %gv, parent, subresource = sub.name,
                "discovery lists a subresource of a resource it does not list; ignored"
            ),
        }
    }
    resources
}

/// Adds an aggregated document's groups, versions and resources to `out`.
pub(crate) fn add_aggregated(out: &mut ApiDiscovery, list: GroupDiscoveryList) {
    for item in list.items {
        let name = item.metadata.name;
        let versions: Vec<String> = item.versions.iter().map(|v| v.version.clone()).collect();
        out.groups.push(ApiGroup {
            name: name.clone(),
            preferred_version: versions.first().cloned().unwrap_or_default(),
            versions,
        });
        for version in item.versions {
            let gv = GroupVersion::new(name.clone(), version.version);
            if version.freshness.eq_ignore_ascii_case("Stale") {
                out.failed.push(FailedGroupVersion {
                    group_version: gv,
                    reason: "stale: the server's aggregated discovery of it is out of date"
                        .to_owned(),
                });
                continue;
            }
            let resources = version
                .resources
                .into_iter()
                .filter(|r| !r.resource.is_empty())
                .map(|r| aggregated_resource(&gv, r))
                .collect();
            out.resources.push((gv, resources));
        }
    }
}

fn aggregated_resource(gv: &GroupVersion, r: ResourceDiscovery) -> DiscoveredResource {
    DiscoveredResource {
        group: gv.group.clone(),
        version: gv.version.clone(),
        kind: r.response_kind.map(|k| k.kind).unwrap_or_default(),
        plural: r.resource,
        singular: r.singular_resource,
        namespaced: r.scope == "Namespaced",
        verbs: r.verbs,
        short_names: r.short_names,
        categories: r.categories,
        subresources: r
            .subresources
            .into_iter()
            .map(|s| Subresource {
                name: s.subresource,
                kind: s.response_kind.and_then(|k| k.gvk(gv)),
                verbs: s.verbs,
            })
            .collect(),
    }
}
