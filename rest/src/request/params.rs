//! Options of the typed helpers, as the query parameters (and `DeleteOptions` body) of
//! `metav1.ListOptions`, `GetOptions`, `CreateOptions`, `UpdateOptions`, `PatchOptions` and
//! `DeleteOptions`, and the patch types with their content types.
//!
//! Parameter names and values are those client-go's parameter codec writes; unset options are
//! left out, as Go's `omitempty` does.

use serde::Serialize;

use super::Request;

/// How a patch is written (client-go's `types.PatchType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PatchType {
    /// RFC 6902 JSON patch: a list of operations.
    Json,
    /// RFC 7386 JSON merge patch.
    Merge,
    /// Kubernetes' strategic merge patch (built-in types only).
    StrategicMerge,
    /// Server-side apply: the object as the field manager wants it. Needs a field manager.
    Apply,
}

impl PatchType {
    /// The `Content-Type` the server recognises the patch by.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::StrategicMerge => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }
}

/// What happens to an object's dependents when it is deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
pub enum PropagationPolicy {
    /// Dependents are left alone.
    Orphan,
    /// Dependents are deleted in the background.
    Background,
    /// Dependents are deleted before the object.
    Foreground,
}

impl PropagationPolicy {
    /// The wire string.
    pub fn as_str(self) -> &'static str {
        match self {
            PropagationPolicy::Orphan => "Orphan",
            PropagationPolicy::Background => "Background",
            PropagationPolicy::Foreground => "Foreground",
        }
    }
}

/// `metav1.ListOptions` for a list: the options of [`ResourceClient::list`], and of every list
/// an informer makes (its reflector, its pager and the informer factory's tweak all take this
/// type).
///
/// [`ResourceClient::list`]: crate::ResourceClient::list
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListParams {
    /// `labelSelector`, e.g. `app=web`.
    pub label_selector: Option<String>,
    /// `fieldSelector`, e.g. `metadata.name=x`.
    pub field_selector: Option<String>,
    /// `limit`: the most items per page; `None` (or 0 or less, which the server reads the
    /// same way) for everything in one response. `int64`, as in `metav1.ListOptions`.
    pub limit: Option<i64>,
    /// `continue`: the token of the page to get, from the previous page's list metadata.
    pub continue_token: Option<String>,
    /// `resourceVersion`: `None` or `""` for a consistent read, `"0"` for any cached state,
    /// a version for a state at least that new (see `resource_version_match`).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`: `NotOlderThan` or `Exact`.
    pub resource_version_match: Option<String>,
    /// `timeoutSeconds`: how long the server may take over the list.
    pub timeout_seconds: Option<i64>,
}

impl ListParams {
    pub(crate) fn apply(&self, mut r: Request) -> Request {
        if let Some(s) = &self.label_selector {
            r = r.label_selector(s);
        }
        if let Some(s) = &self.field_selector {
            r = r.field_selector(s);
        }
        if let Some(n) = self.limit {
            r = r.limit(n);
        }
        if let Some(t) = &self.continue_token {
            r = r.continue_token(t);
        }
        if let Some(rv) = &self.resource_version {
            r = r.resource_version(rv);
        }
        if let Some(m) = &self.resource_version_match {
            r = r.resource_version_match(m);
        }
        if let Some(t) = self.timeout_seconds {
            r = r.timeout_seconds(t);
        }
        r
    }
}

/// `metav1.ListOptions` for a watch (`watch=true` is added): the options of
/// [`ResourceClient::watch`], and of every watch an informer's reflector opens. Only a watch
/// asks for bookmarks and initial events; only a list has a `limit` and a `continue` token.
///
/// [`ResourceClient::watch`]: crate::ResourceClient::watch
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WatchParams {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `resourceVersion`: where the watch starts (events after it).
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`: only `NotOlderThan`, and only with `send_initial_events`.
    pub resource_version_match: Option<String>,
    /// `timeoutSeconds`: the server ends the watch cleanly after this long. `int64`, as in
    /// `metav1.ListOptions`.
    pub timeout_seconds: Option<i64>,
    /// `allowWatchBookmarks=true`: the server may send `BOOKMARK` events.
    pub allow_watch_bookmarks: bool,
    /// `sendInitialEvents`: with `Some(true)` the watch starts with the current state as
    /// `ADDED` events, ended by a bookmark annotated `k8s.io/initial-events-end` (a streaming
    /// list, KEP-3157).
    pub send_initial_events: Option<bool>,
}

impl WatchParams {
    pub(crate) fn apply(&self, mut r: Request) -> Request {
        r = r.param("watch", "true");
        if let Some(s) = &self.label_selector {
            r = r.label_selector(s);
        }
        if let Some(s) = &self.field_selector {
            r = r.field_selector(s);
        }
        if let Some(rv) = &self.resource_version {
            r = r.resource_version(rv);
        }
        if let Some(m) = &self.resource_version_match {
            r = r.resource_version_match(m);
        }
        if let Some(t) = self.timeout_seconds {
            r = r.timeout_seconds(t);
        }
        if self.allow_watch_bookmarks {
            r = r.allow_watch_bookmarks(true);
        }
        if let Some(send) = self.send_initial_events {
            r = r.send_initial_events(send);
        }
        r
    }
}

/// `metav1.GetOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetParams {
    /// `resourceVersion` (`"0"`: any version, from the cache).
    pub resource_version: Option<String>,
}

impl GetParams {
    pub(crate) fn apply(&self, r: Request) -> Request {
        match &self.resource_version {
            Some(rv) => r.resource_version(rv),
            None => r,
        }
    }
}

/// `metav1.CreateOptions` / `UpdateOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostParams {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldManager`.
    pub field_manager: Option<String>,
    /// `fieldValidation`: `Ignore`, `Warn` or `Strict`.
    pub field_validation: Option<String>,
}

impl PostParams {
    pub(crate) fn apply(&self, mut r: Request) -> Request {
        if self.dry_run {
            r = r.dry_run();
        }
        if let Some(m) = &self.field_manager {
            r = r.field_manager(m);
        }
        if let Some(v) = &self.field_validation {
            r = r.param("fieldValidation", v.as_str());
        }
        r
    }
}

/// `metav1.PatchOptions`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PatchParams {
    /// `dryRun=All`.
    pub dry_run: bool,
    /// `fieldManager`; required for [`PatchType::Apply`].
    pub field_manager: Option<String>,
    /// `force=true`: take ownership of conflicting fields (apply only).
    pub force: bool,
    /// `fieldValidation`: `Ignore`, `Warn` or `Strict`.
    pub field_validation: Option<String>,
}

impl PatchParams {
    /// Options for a server-side apply by `field_manager`.
    pub fn apply(field_manager: &str) -> Self {
        PatchParams {
            field_manager: Some(field_manager.to_owned()),
            ..PatchParams::default()
        }
    }

    /// Takes over the fields other managers own with other values (`force=true`), instead of
    /// a 409 Conflict: `PatchParams::apply("foo-controller").force()`, a controller applying
    /// what it alone manages.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }

    pub(crate) fn apply_to(&self, mut r: Request) -> Request {
        if self.dry_run {
            r = r.dry_run();
        }
        if let Some(m) = &self.field_manager {
            r = r.field_manager(m);
        }
        if self.force {
            r = r.param("force", "true");
        }
        if let Some(v) = &self.field_validation {
            r = r.param("fieldValidation", v.as_str());
        }
        r
    }
}

/// Preconditions of a delete: it happens only if the object still has this uid and version.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Preconditions {
    /// The object's uid.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The object's resourceVersion.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// `metav1.DeleteOptions`, sent as the body of a delete (as client-go's typed clients do).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeleteParams {
    /// `dryRun: [All]`.
    pub dry_run: bool,
    /// `gracePeriodSeconds` (0: immediately).
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`.
    pub propagation_policy: Option<PropagationPolicy>,
    /// `preconditions`.
    pub preconditions: Option<Preconditions>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeleteOptions<'a> {
    kind: &'static str,
    api_version: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    grace_period_seconds: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    preconditions: Option<&'a Preconditions>,
    #[serde(skip_serializing_if = "Option::is_none")]
    propagation_policy: Option<PropagationPolicy>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    dry_run: Vec<&'static str>,
}

impl DeleteParams {
    /// Delete in the foreground: the object goes after its dependents.
    pub fn foreground() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Foreground),
            ..DeleteParams::default()
        }
    }

    /// Delete in the background.
    pub fn background() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Background),
            ..DeleteParams::default()
        }
    }

    /// Leave the dependents.
    pub fn orphan() -> Self {
        DeleteParams {
            propagation_policy: Some(PropagationPolicy::Orphan),
            ..DeleteParams::default()
        }
    }

    /// The `DeleteOptions` body.
    pub(crate) fn apply(&self, r: Request) -> Request {
        r.json(&DeleteOptions {
            kind: "DeleteOptions",
            api_version: "v1",
            grace_period_seconds: self.grace_period_seconds,
            preconditions: self.preconditions.as_ref(),
            propagation_policy: self.propagation_policy,
            dry_run: if self.dry_run {
                vec!["All"]
            } else {
                Vec::new()
            },
        })
    }
}
