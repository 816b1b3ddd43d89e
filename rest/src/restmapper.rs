//! The RESTMapper: from a kind to the resource that serves it, and back; client-go's
//! `restmapper` package (`NewDiscoveryRESTMapper`, `DeferredDiscoveryRESTMapper`) over
//! apimachinery's `meta.DefaultRESTMapper` and `PriorityRESTMapper`.
//!
//! A manifest, an owner reference or an event names a kind (`apps/v1, Kind=Deployment`);
//! requests need the resource (`deployments`) and its scope. [`StaticRestMapper`] answers from
//! one [`ApiDiscovery`] snapshot with no I/O; [`RestMapper`] keeps one built from a
//! [`DiscoveryClient`]'s cache, and on a miss refreshes discovery once and asks again, so a
//! CRD created a moment ago becomes resolvable (concurrent misses on the same snapshot share
//! one refresh). A miss after the refresh is [`MappingError::NoKindMatch`] or
//! [`MappingError::NoResourceMatch`]; if the kind's group failed to be discovered, it is
//! [`MappingError::GroupDiscoveryFailed`] instead, since the kind may well exist.
//!
//! Preference follows discovery order as client-go's priority mapper does: groups in the order
//! the server lists them (the core group first), and within a group the preferred version,
//! then the others in the server's order. Only resources are mapped: subresources
//! (`pods/status`) never are, and neither are resources without a kind.
//!
//! Differences from client-go: a partially specified resource (`kind_for`, `resource_for`)
//! with an empty group resolves to the most preferred match instead of failing as ambiguous
//! when several groups serve it (`events` is the core group's, as kubectl picks it); resource
//! names match the plural, the singular and the short names (kubectl's shortcut expander
//! folded in); kinds match exactly (case-sensitive), as in client-go.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use clientgo_apimachinery::{ApiResource, GroupVersionKind, GroupVersionResource};

use crate::client::RestClient;
use crate::discovery::{ApiDiscovery, DiscoveryClient, ordered_versions};
use crate::error::Error;
use crate::resource_client::DynamicClient;

/// Why a kind or resource could not be mapped.
#[derive(Debug, thiserror::Error)]
pub enum MappingError {
    /// No resource serves the kind (client-go's `NoKindMatchError`).
    #[error(
        "no matches for kind {kind:?} in {}",
        group_and_versions(group, versions)
    )]
    NoKindMatch {
        /// The kind's group.
        group: String,
        /// The kind.
        kind: String,
        /// The versions asked for (empty: any).
        versions: Vec<String>,
    },
    /// No resource matches (client-go's `NoResourceMatchError`).
    #[error("the server doesn't have a resource type {0:?}")]
    NoResourceMatch(GroupVersionResource),
    /// The kind's group could not be discovered, so whether it exists is unknown.
    #[error("unable to map {what}: discovery of {group_version} failed: {reason}")]
    GroupDiscoveryFailed {
        /// What was being mapped.
        what: String,
        /// The group version that failed.
        group_version: String,
        /// Why.
        reason: String,
    },
    /// Discovery itself failed.
    #[error("discovery failed: {0}")]
    Discovery(#[source] Error),
}

impl MappingError {
    /// Whether the server serves no such kind or resource (client-go's `IsNoMatchError`).
    pub fn is_no_match(&self) -> bool {
        matches!(
            self,
            MappingError::NoKindMatch { .. } | MappingError::NoResourceMatch(_)
        )
    }
}

fn group_and_versions(group: &str, versions: &[String]) -> String {
    let group = if group.is_empty() {
        "the core group"
    } else {
        group
    };
    match versions {
        [] => format!("group {group:?}"),
        vs => format!("group {group:?}, versions {vs:?}"),
    }
}

/// A mapper over one discovery snapshot. See the module documentation.
#[derive(Clone, Debug, Default)]
pub struct StaticRestMapper {
    /// Every mapped resource, most preferred first.
    resources: Vec<ApiResource>,
    by_gvk: HashMap<GroupVersionKind, usize>,
    by_gvr: HashMap<GroupVersionResource, usize>,
    /// (group, kind) → indexes in preference order.
    by_group_kind: HashMap<(String, String), Vec<usize>>,
    /// Lower-case plural, singular or short name → indexes in preference order.
    by_name: HashMap<String, Vec<usize>>,
    /// Failed group versions: (group, "group/version: reason").
    failed: Vec<(String, String, String)>,
    generation: u64,
}

impl StaticRestMapper {
    /// A mapper of what `discovery` found.
    pub fn new(discovery: &ApiDiscovery) -> StaticRestMapper {
        let mut mapper = StaticRestMapper {
            generation: discovery.generation(),
            failed: discovery
                .failed()
                .iter()
                .map(|f| {
                    let gv = &f.group_version;
                    (gv.group.clone(), gv.to_string(), f.reason.clone())
                })
                .collect(),
            ..StaticRestMapper::default()
        };
        for group in discovery.groups() {
            for version in ordered_versions(group) {
                let gv = clientgo_apimachinery::GroupVersion::new(group.name.clone(), version);
                for resource in discovery.resources_for(&gv).unwrap_or_default() {
                    if resource.kind.is_empty() || resource.plural.contains('/') {
                        continue;
                    }
                    let i = mapper.resources.len();
                    let api = resource.api_resource();
                    mapper.by_gvk.entry(api.gvk()).or_insert(i);
                    mapper.by_gvr.entry(api.gvr()).or_insert(i);
                    mapper
                        .by_group_kind
                        .entry((api.group.clone(), api.kind.clone()))
                        .or_default()
                        .push(i);
                    let mut names = vec![resource.plural.to_ascii_lowercase()];
                    names.push(resource.singular.to_ascii_lowercase());
                    names.extend(resource.short_names.iter().map(|s| s.to_ascii_lowercase()));
                    names.retain(|n| !n.is_empty());
                    names.dedup();
                    for name in names {
                        let entry = mapper.by_name.entry(name).or_default();
                        if !entry.contains(&i) {
                            entry.push(i);
                        }
                    }
                    mapper.resources.push(api);
                }
            }
        }
        mapper
    }

    /// Every mapped resource, most preferred first.
    pub fn resources(&self) -> &[ApiResource] {
        &self.resources
    }

    /// The discovery generation this mapper was built from.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The resource serving exactly `gvk`; with an empty version, the most preferred version
    /// of the kind.
    pub fn resource_for_kind(&self, gvk: &GroupVersionKind) -> Option<&ApiResource> {
        if gvk.version.is_empty() {
            return self.mapping(&gvk.group, &gvk.kind, &[]);
        }
        self.by_gvk.get(gvk).map(|&i| &self.resources[i])
    }

    /// client-go's `RESTMapping(groupKind, versions...)`: the resource of the kind in the first
    /// of `versions` that serves it, or the most preferred version when `versions` is empty.
    pub fn mapping(&self, group: &str, kind: &str, versions: &[&str]) -> Option<&ApiResource> {
        let candidates = self
            .by_group_kind
            .get(&(group.to_owned(), kind.to_owned()))?;
        if versions.is_empty() {
            return candidates.first().map(|&i| &self.resources[i]);
        }
        versions.iter().find_map(|v| {
            candidates
                .iter()
                .map(|&i| &self.resources[i])
                .find(|r| r.version == *v)
        })
    }

    /// Every version of the kind, most preferred first (client-go's `RESTMappings`).
    pub fn mappings(&self, group: &str, kind: &str) -> Vec<&ApiResource> {
        self.by_group_kind
            .get(&(group.to_owned(), kind.to_owned()))
            .map(|c| c.iter().map(|&i| &self.resources[i]).collect())
            .unwrap_or_default()
    }

    /// The resource `gvr` names, which may be partial: an empty version means the most
    /// preferred, an empty group any group (the core group's first); the resource may be the
    /// plural, singular or a short name, in any case (client-go's `ResourceFor`).
    pub fn resource_for(&self, gvr: &GroupVersionResource) -> Option<&ApiResource> {
        if let Some(&i) = self.by_gvr.get(gvr) {
            return Some(&self.resources[i]);
        }
        let name = gvr.resource.to_ascii_lowercase();
        self.by_name
            .get(&name)?
            .iter()
            .map(|&i| &self.resources[i])
            .find(|r| {
                (gvr.group.is_empty() || r.group == gvr.group)
                    && (gvr.version.is_empty() || r.version == gvr.version)
            })
    }

    /// The kind served at `gvr` (partial as for [`resource_for`](Self::resource_for));
    /// client-go's `KindFor`.
    pub fn kind_for(&self, gvr: &GroupVersionResource) -> Option<GroupVersionKind> {
        self.resource_for(gvr).map(ApiResource::gvk)
    }

    /// The error for a miss on `group`'s kind `what`: a failed discovery of the group, if
    /// any, else `no_match`.
    fn miss(&self, group: &str, what: String, no_match: MappingError) -> MappingError {
        match self.failed.iter().find(|(g, _, _)| g == group) {
            Some((_, gv, reason)) => MappingError::GroupDiscoveryFailed {
                what,
                group_version: gv.clone(),
                reason: reason.clone(),
            },
            None => no_match,
        }
    }
}

/// A RESTMapper over a discovery client's cache, refreshed on a miss. Cheap to clone; clones
/// share the mapper and the discovery cache. See the module documentation.
#[derive(Clone, Debug)]
pub struct RestMapper {
    discovery: DiscoveryClient,
    current: Arc<Mutex<Option<Arc<StaticRestMapper>>>>,
}

impl RestMapper {
    /// A mapper over `discovery`'s cache.
    pub fn new(discovery: DiscoveryClient) -> RestMapper {
        RestMapper {
            discovery,
            current: Arc::new(Mutex::new(None)),
        }
    }

    /// A mapper with a discovery client of its own over `client`.
    pub fn for_client(client: &RestClient) -> RestMapper {
        RestMapper::new(DiscoveryClient::new(client))
    }

    /// The discovery client underneath.
    pub fn discovery(&self) -> &DiscoveryClient {
        &self.discovery
    }

    /// Forgets the mapper and the discovery cache (client-go's `Reset`): the next lookup
    /// discovers again.
    pub fn reset(&self) {
        self.discovery.invalidate();
        *self.lock() = None;
    }

    /// The mapper of the current discovery snapshot, discovering first if needed.
    pub async fn snapshot(&self) -> Result<Arc<StaticRestMapper>, MappingError> {
        let discovery = self
            .discovery
            .discover()
            .await
            .map_err(MappingError::Discovery)?;
        Ok(self.mapper_of(&discovery))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Arc<StaticRestMapper>>> {
        self.current.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn mapper_of(&self, discovery: &ApiDiscovery) -> Arc<StaticRestMapper> {
        let mut current = self.lock();
        match &*current {
            Some(mapper) if mapper.generation == discovery.generation() => mapper.clone(),
            _ => {
                let mapper = Arc::new(StaticRestMapper::new(discovery));
                *current = Some(mapper.clone());
                mapper
            }
        }
    }

    /// Looks up with `find`; on a miss, refreshes discovery once and looks again.
    async fn lookup<R>(
        &self,
        find: impl Fn(&StaticRestMapper) -> Option<R>,
    ) -> Result<Result<R, Arc<StaticRestMapper>>, MappingError> {
        let mapper = self.snapshot().await?;
        if let Some(found) = find(&mapper) {
            return Ok(Ok(found));
        }
        tracing::debug!(
            generation = mapper.generation,
            "RESTMapper miss, refreshing discovery"
        );
        let discovery = self
            .discovery
            .refresh_after(mapper.generation)
            .await
            .map_err(MappingError::Discovery)?;
        let mapper = self.mapper_of(&discovery);
        Ok(find(&mapper).ok_or(mapper))
    }

    /// The resource serving `gvk` (an empty version: the most preferred); see
    /// [`StaticRestMapper::resource_for_kind`].
    pub async fn resource_for_kind(
        &self,
        gvk: &GroupVersionKind,
    ) -> Result<ApiResource, MappingError> {
        match self.lookup(|m| m.resource_for_kind(gvk).cloned()).await? {
            Ok(found) => Ok(found),
            Err(mapper) => Err(mapper.miss(
                &gvk.group,
                format!("{gvk}"),
                MappingError::NoKindMatch {
                    group: gvk.group.clone(),
                    kind: gvk.kind.clone(),
                    versions: Some(gvk.version.clone())
                        .filter(|v| !v.is_empty())
                        .into_iter()
                        .collect(),
                },
            )),
        }
    }

    /// client-go's `RESTMapping`; see [`StaticRestMapper::mapping`].
    pub async fn mapping(
        &self,
        group: &str,
        kind: &str,
        versions: &[&str],
    ) -> Result<ApiResource, MappingError> {
        match self
            .lookup(|m| m.mapping(group, kind, versions).cloned())
            .await?
        {
            Ok(found) => Ok(found),
            Err(mapper) => Err(mapper.miss(
                group,
                format!("kind {kind:?} of group {group:?}"),
                MappingError::NoKindMatch {
                    group: group.to_owned(),
                    kind: kind.to_owned(),
                    versions: versions.iter().map(|v| (*v).to_owned()).collect(),
                },
            )),
        }
    }

    /// The resource `gvr` names (partial); see [`StaticRestMapper::resource_for`].
    pub async fn resource_for(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<ApiResource, MappingError> {
        match self.lookup(|m| m.resource_for(gvr).cloned()).await? {
            Ok(found) => Ok(found),
            Err(mapper) => Err(mapper.miss(
                &gvr.group,
                format!("{gvr}"),
                MappingError::NoResourceMatch(gvr.clone()),
            )),
        }
    }

    /// The kind served at `gvr` (partial); client-go's `KindFor`.
    pub async fn kind_for(
        &self,
        gvr: &GroupVersionResource,
    ) -> Result<GroupVersionKind, MappingError> {
        self.resource_for(gvr).await.map(|r| r.gvk())
    }

    /// A dynamic client of the resource serving `gvk`, in `namespace` (`None`: all
    /// namespaces; ignored for cluster-scoped kinds): how a controller starts from a kind.
    pub async fn dynamic_client(
        &self,
        client: &RestClient,
        gvk: &GroupVersionKind,
        namespace: Option<&str>,
    ) -> Result<DynamicClient, MappingError> {
        let resource = self.resource_for_kind(gvk).await?;
        Ok(DynamicClient::from_api_resource(
            client, &resource, namespace,
        ))
    }
}

#[cfg(test)]
#[path = "restmapper_tests.rs"]
mod tests;
