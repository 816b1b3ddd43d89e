//! Discovery: what the API server serves. The server version, the API groups with their
//! versions, and each group version's resources with kind, scope, verbs and subresources;
//! client-go's `discovery` package (`DiscoveryClient` and the in-memory cache of
//! `discovery/cached/memory`).
//!
//! [`DiscoveryClient::discover`] asks `/api` and `/apis` for aggregated discovery
//! (`application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`, then `v2beta1`,
//! then plain `application/json`, in one `Accept` header as client-go does). A server that
//! supports it (Kubernetes 1.26 and later) answers each root with every group, version and
//! resource in one document. Any other answer falls back to the classic documents: a plain
//! `APIVersions` from `/api` and `APIGroupList` from `/apis`, then one `APIResourceList` per
//! group version (`/api/v1`, `/apis/<group>/<version>`), fetched concurrently. A 406 is asked
//! again with plain JSON; a 404 or 403 on a root means no groups there (a very old server, as
//! client-go treats it).
//!
//! Classic discovery lists subresources as resources named `<resource>/<subresource>`
//! (`pods/status`, `deployments/scale`); they are folded into their resource's
//! [`DiscoveredResource::subresources`] and never appear as resources themselves.
//! Aggregated discovery nests them already.
//!
//! Requests go through the given client's throttle: classic discovery of a large cluster makes
//! one request per group version, so give it a client with a wider throttle (kubectl's
//! discovery uses 50 QPS and bursts of 300) when aggregated discovery is not available.
//!
//! The result, an [`ApiDiscovery`], is cached until [`DiscoveryClient::invalidate`] or a
//! refresh; concurrent callers share one fetch, and [`DiscoveryClient::refresh_after`] lets
//! any number of callers who missed on the same snapshot trigger a single refresh (what the
//! [`RestMapper`](crate::RestMapper) does on a miss).
//!
//! Differences from client-go: one client for every group (client-go makes a REST client per
//! group version); group versions that fail to be discovered (or are `Stale` in aggregated
//! discovery) are listed in [`ApiDiscovery::failed`] next to the partial result instead of
//! being returned as an error alongside it; there is no disk cache and no OpenAPI.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

use clientgo_apimachinery::{ApiResource, GroupVersion, GroupVersionKind, GroupVersionResource};
use serde::{Deserialize, Serialize};

use crate::client::RestClient;
use crate::error::{DecodeError, Error};

#[path = "discovery_wire.rs"]
mod wire;

/// The aggregated discovery media type, version 2 (Kubernetes 1.30 and later).
pub const AGGREGATED_V2: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";
/// The aggregated discovery media type, version 2beta1 (Kubernetes 1.26 to 1.32).
pub const AGGREGATED_V2BETA1: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList";
/// The `Accept` header of discovery requests: aggregated v2, then v2beta1, then plain JSON.
pub const ACCEPT_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// The server's version (`/version`, apimachinery's `version.Info`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ServerVersion {
    /// Major version, e.g. `1`.
    pub major: String,
    /// Minor version, e.g. `32` (some distributions add a `+`).
    pub minor: String,
    /// The full version, e.g. `v1.32.0`.
    pub git_version: String,
    /// The commit it was built from.
    pub git_commit: String,
    /// `clean` or `dirty`.
    pub git_tree_state: String,
    /// When it was built (RFC 3339).
    pub build_date: String,
    /// The Go version it was built with.
    pub go_version: String,
    /// The Go compiler.
    pub compiler: String,
    /// `os/arch`.
    pub platform: String,
}

/// An API group and the versions the server serves of it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ApiGroup {
    /// The group's name, `""` for the core group.
    pub name: String,
    /// Its versions, in the server's order (aggregated discovery lists the preferred first).
    pub versions: Vec<String>,
    /// The version clients should use when they do not care which.
    pub preferred_version: String,
}

/// A subresource of a [`DiscoveredResource`], e.g. `status` or `scale`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Subresource {
    /// The subresource's name, e.g. `status`.
    pub name: String,
    /// The kind its requests and responses carry (`Scale` for `scale`), when given.
    pub kind: Option<GroupVersionKind>,
    /// The verbs it supports.
    pub verbs: Vec<String>,
}

/// A resource served in one group version (`metav1.APIResource` of its group version).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DiscoveredResource {
    /// The group it is served in (`""` for the core group).
    pub group: String,
    /// The version it is served in.
    pub version: String,
    /// Its kind, e.g. `Deployment`.
    pub kind: String,
    /// The plural resource name used in URLs, e.g. `deployments`.
    pub plural: String,
    /// The singular name, e.g. `deployment` (may be empty on old servers).
    pub singular: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// The verbs it supports (`get`, `list`, `watch`, ...).
    pub verbs: Vec<String>,
    /// Short names, e.g. `deploy`.
    pub short_names: Vec<String>,
    /// Categories, e.g. `all`.
    pub categories: Vec<String>,
    /// Its subresources.
    pub subresources: Vec<Subresource>,
}

impl DiscoveredResource {
    /// Group, version, kind, plural and scope, as dynamic clients take them.
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
            namespaced: self.namespaced,
        }
    }

    /// Its group, version and kind.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), self.version.clone(), self.kind.clone())
    }

    /// Its group, version and resource.
    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::new(
            self.group.clone(),
            self.version.clone(),
            self.plural.clone(),
        )
    }

    /// Whether it supports `verb`.
    pub fn supports(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// The subresource `name`, if it has one.
    pub fn subresource(&self, name: &str) -> Option<&Subresource> {
        self.subresources.iter().find(|s| s.name == name)
    }
}

/// A group version whose resources could not be discovered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FailedGroupVersion {
    /// The group version.
    pub group_version: GroupVersion,
    /// Why (the request's error, or "stale" for a stale aggregated entry).
    pub reason: String,
}

/// Everything discovery found: groups, resources per group version, and what failed.
#[derive(Clone, Debug, Default)]
pub struct ApiDiscovery {
    pub(crate) groups: Vec<ApiGroup>,
    pub(crate) resources: Vec<(GroupVersion, Vec<DiscoveredResource>)>,
    pub(crate) failed: Vec<FailedGroupVersion>,
    pub(crate) aggregated: bool,
    pub(crate) generation: u64,
}

impl ApiDiscovery {
    /// Builds a discovery result by hand (for tests and static configurations).
    pub fn new(
        groups: Vec<ApiGroup>,
        resources: Vec<(GroupVersion, Vec<DiscoveredResource>)>,
    ) -> ApiDiscovery {
        ApiDiscovery {
            groups,
            resources,
            ..ApiDiscovery::default()
        }
    }

    /// The groups, in the server's order (the core group first when it is served).
    pub fn groups(&self) -> &[ApiGroup] {
        &self.groups
    }

    /// The group `name` (`""` for the core group).
    pub fn group(&self, name: &str) -> Option<&ApiGroup> {
        self.groups.iter().find(|g| g.name == name)
    }

    /// Each discovered group version with its resources (subresources folded in).
    pub fn group_versions(&self) -> impl Iterator<Item = (&GroupVersion, &[DiscoveredResource])> {
        self.resources.iter().map(|(gv, r)| (gv, r.as_slice()))
    }

    /// The resources of one group version, if it was discovered.
    pub fn resources_for(&self, group_version: &GroupVersion) -> Option<&[DiscoveredResource]> {
        self.resources
            .iter()
            .find(|(gv, _)| gv == group_version)
            .map(|(_, r)| r.as_slice())
    }

    /// Every resource of every version.
    pub fn resources(&self) -> impl Iterator<Item = &DiscoveredResource> {
        self.resources.iter().flat_map(|(_, r)| r.iter())
    }

    /// One entry per group and resource, from the most preferred version that serves it
    /// (client-go's `ServerPreferredResources`).
    pub fn preferred_resources(&self) -> Vec<&DiscoveredResource> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for group in &self.groups {
            for version in ordered_versions(group) {
                let gv = GroupVersion::new(group.name.clone(), version);
                for resource in self.resources_for(&gv).unwrap_or_default() {
                    if seen.insert((resource.group.as_str(), resource.plural.as_str())) {
                        out.push(resource);
                    }
                }
            }
        }
        out
    }

    /// The group versions that could not be discovered.
    pub fn failed(&self) -> &[FailedGroupVersion] {
        &self.failed
    }

    /// Whether the server answered with aggregated discovery (for `/api` or `/apis`).
    pub fn is_aggregated(&self) -> bool {
        self.aggregated
    }

    /// Which fetch of its [`DiscoveryClient`] this is (1 for the first).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

/// A group's versions, preferred first.
pub(crate) fn ordered_versions(group: &ApiGroup) -> Vec<String> {
    let mut versions = Vec::with_capacity(group.versions.len());
    if !group.preferred_version.is_empty() {
        versions.push(group.preferred_version.clone());
    }
    for v in &group.versions {
        if *v != group.preferred_version {
            versions.push(v.clone());
        }
    }
    versions
}

/// Discovers the API server's groups and resources, and caches them. See the module
/// documentation. Cheap to clone; clones share the cache.
#[derive(Clone)]
pub struct DiscoveryClient {
    client: RestClient,
    cache: Arc<Cache>,
}

struct Cache {
    current: Mutex<Option<Arc<ApiDiscovery>>>,
    /// Held while fetching, so that concurrent callers share one fetch.
    fetching: tokio::sync::Mutex<()>,
    generation: AtomicU64,
}

impl std::fmt::Debug for DiscoveryClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DiscoveryClient")
            .field("client", &self.client)
            .field("generation", &self.cache.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl DiscoveryClient {
    /// A discovery client over `client` (its throttle, retries and credentials apply).
    pub fn new(client: &RestClient) -> DiscoveryClient {
        DiscoveryClient {
            client: client.clone(),
            cache: Arc::new(Cache {
                current: Mutex::new(None),
                fetching: tokio::sync::Mutex::new(()),
                generation: AtomicU64::new(0),
            }),
        }
    }

    /// The REST client underneath.
    pub fn client(&self) -> &RestClient {
        &self.client
    }

    /// `GET /version` (not cached).
    pub async fn server_version(&self) -> Result<ServerVersion, Error> {
        self.client.get().abs_path("/version").send().await?.json()
    }

    /// The cached discovery, fetched first if there is none.
    pub async fn discover(&self) -> Result<Arc<ApiDiscovery>, Error> {
        if let Some(current) = self.cached() {
            return Ok(current);
        }
        let _fetching = self.cache.fetching.lock().await;
        if let Some(current) = self.cached() {
            return Ok(current);
        }
        self.fetch_and_store().await
    }

    /// Fetches discovery again, whatever is cached.
    pub async fn refresh(&self) -> Result<Arc<ApiDiscovery>, Error> {
        let _fetching = self.cache.fetching.lock().await;
        self.fetch_and_store().await
    }

    /// Fetches discovery again unless a fetch newer than `generation` is already cached (or
    /// finishes while waiting): the refresh of a caller that missed on the snapshot of
    /// `generation`. Callers missing on the same snapshot share one fetch.
    pub async fn refresh_after(&self, generation: u64) -> Result<Arc<ApiDiscovery>, Error> {
        let _fetching = self.cache.fetching.lock().await;
        if let Some(current) = self.cached().filter(|c| c.generation > generation) {
            return Ok(current);
        }
        self.fetch_and_store().await
    }

    /// The cached discovery, if any.
    pub fn cached(&self) -> Option<Arc<ApiDiscovery>> {
        lock(&self.cache.current).clone()
    }

    /// Drops the cache: the next [`discover`](Self::discover) fetches again (client-go's
    /// `Invalidate`).
    pub fn invalidate(&self) {
        *lock(&self.cache.current) = None;
    }

    /// How many fetches have completed.
    pub fn generation(&self) -> u64 {
        self.cache.generation.load(Ordering::Acquire)
    }

    async fn fetch_and_store(&self) -> Result<Arc<ApiDiscovery>, Error> {
        let mut discovery = self.fetch().await?;
        discovery.generation = self.cache.generation.fetch_add(1, Ordering::AcqRel) + 1;
        tracing::debug!(
            generation = discovery.generation,
            aggregated = discovery.aggregated,
            groups = discovery.groups.len(),
            failed = discovery.failed.len(),
            "discovery fetched"
        );
        let discovery = Arc::new(discovery);
        *lock(&self.cache.current) = Some(discovery.clone());
        Ok(discovery)
    }

    /// One full discovery from the server.
    async fn fetch(&self) -> Result<ApiDiscovery, Error> {
        let (core, apis) = join2(self.root("/api"), self.root("/apis")).await;
        let mut out = ApiDiscovery::default();
        let mut pending: Vec<GroupVersion> = Vec::new();
        for root in [core?, apis?] {
            match root {
                wire::Root::Aggregated(list) => {
                    out.aggregated = true;
                    wire::add_aggregated(&mut out, list);
                }
                wire::Root::Groups(groups) => {
                    for group in groups {
                        for version in &group.versions {
                            pending.push(GroupVersion::new(group.name.clone(), version.clone()));
                        }
                        out.groups.push(group);
                    }
                }
            }
        }
        let fetched = join_all(pending.iter().map(|gv| self.group_version(gv))).await;
        for (gv, result) in pending.into_iter().zip(fetched) {
            match result {
                Ok(resources) => out.resources.push((gv, resources)),
                Err(error) => {
                    tracing::warn!(group_version = %gv, %error, "unable to discover a group version");
                    out.failed.push(FailedGroupVersion {
                        group_version: gv,
                        reason: error.to_string(),
                    });
                }
            }
        }
        Ok(out)
    }

    /// `/api` or `/apis`: aggregated if the server offers it, else the classic document.
    async fn root(&self, path: &'static str) -> Result<wire::Root, Error> {
        let request = |accept: &str| {
            self.client
                .get()
                .abs_path(path)
                .header(http::header::ACCEPT.as_str(), accept)
                .send()
        };
        let response = match request(ACCEPT_DISCOVERY).await {
            Err(Error::Api(e)) if e.code() == 406 => request(crate::request::JSON).await,
            other => other,
        };
        let response = match response {
            Ok(response) => response,
            // No groups there (client-go: compatibility with very old servers).
            Err(Error::Api(e)) if matches!(e.code(), 403 | 404) => {
                tracing::debug!(path, code = e.code(), "discovery root not served");
                return Ok(wire::Root::Groups(Vec::new()));
            }
            Err(e) => return Err(e),
        };
        let content_type = response
            .headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        wire::parse_root(path, content_type, &response.body)
            .map_err(|e| DecodeError::of::<wire::Root>(&e, response.body.len()).into())
    }

    /// The resources of one group version (classic discovery).
    async fn group_version(&self, gv: &GroupVersion) -> Result<Vec<DiscoveredResource>, Error> {
        let path = if gv.group.is_empty() {
            format!("/api/{}", gv.version)
        } else {
            format!("/apis/{}/{}", gv.group, gv.version)
        };
        let response = self.client.get().abs_path(&path).send().await?;
        let list: wire::ResourceList = response.json()?;
        Ok(wire::legacy_resources(gv, list))
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Polls two futures concurrently.
async fn join2<A: Future, B: Future>(a: A, b: B) -> (A::Output, B::Output) {
    let (mut a, mut b) = (Box::pin(a), Box::pin(b));
    let (mut ra, mut rb) = (None, None);
    std::future::poll_fn(|cx| {
        if ra.is_none() {
            if let Poll::Ready(v) = a.as_mut().poll(cx) {
                ra = Some(v);
            }
        }
        if rb.is_none() {
            if let Poll::Ready(v) = b.as_mut().poll(cx) {
                rb = Some(v);
            }
        }
        match (ra.take(), rb.take()) {
            (Some(x), Some(y)) => Poll::Ready((x, y)),
            (x, y) => {
                ra = x;
                rb = y;
                Poll::Pending
            }
        }
    })
    .await
}

/// Polls every future concurrently (one task; discovery has a few dozen at most).
async fn join_all<F: Future>(futures: impl IntoIterator<Item = F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (future, output) in futures.iter_mut().zip(outputs.iter_mut()) {
            if output.is_none() {
                match future.as_mut().poll(cx) {
                    Poll::Ready(v) => *output = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            Poll::Pending
        } else {
            Poll::Ready(())
        }
    })
    .await;
    outputs.into_iter().flatten().collect()
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
pub(crate) mod tests;
