//! URL routing: which endpoint a request path names.
//!
//! Mirrors kube-apiserver's path layout (`endpoints/installer.go`, `request/requestinfo.go`):
//! `/api/v1/...` for the core group, `/apis/<group>/<version>/...` otherwise; namespaced
//! resources under `namespaces/<ns>/<resource>[/<name>[/<subresource>]]`, cluster-scoped
//! ones and all-namespace lists at `<resource>[/<name>[/<subresource>]]`; the deprecated
//! `watch/` prefix; `namespaces/<name>/status` and `/finalize` as the namespace's own
//! subresources; plus the discovery, version and health paths. Whether a resource exists
//! is decided later against the registry.

/// A parsed resource path.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ResourcePath {
    /// API group (`""` for `/api`).
    pub group: String,
    /// Version.
    pub version: String,
    /// Resource plural.
    pub plural: String,
    /// Namespace segment, when the path has one.
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
    /// Subresource (`status`).
    pub subresource: Option<String>,
    /// The path used the `watch/` prefix.
    pub watch_prefix: bool,
}

/// What a path addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/version`.
    Version,
    /// `/healthz`, `/livez`, `/readyz` (and their sub-checks).
    Health,
    /// `/api`.
    CoreVersions,
    /// `/apis`.
    Groups,
    /// `/apis/<group>`.
    Group(String),
    /// `/api/v1`, `/apis/<group>/<version>`.
    GroupVersion(String, String),
    /// A resource, collection or subresource.
    Resource(ResourcePath),
    /// `/_sim/<action>`: the fault-injection admin endpoint (see [`crate::http::admin`]).
    Admin(String),
    /// Anything else.
    NotFound,
}

/// Parses a request path.
pub fn route(path: &str) -> Route {
    let trimmed = path.trim_end_matches('/');
    let segs: Vec<&str> = trimmed.split('/').skip(1).collect();
    if segs.iter().any(|s| s.is_empty() || *s == "." || *s == "..") {
        return Route::NotFound;
    }
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["_sim", action] => Route::Admin((*action).to_owned()),
        ["healthz" | "livez" | "readyz", ..] => Route::Health,
        ["api"] => Route::CoreVersions,
        ["apis"] => Route::Groups,
        ["apis", group] => Route::Group((*group).to_owned()),
        ["api", version, rest @ ..] => resource_route("", version, rest),
        ["apis", group, version, rest @ ..] => resource_route(group, version, rest),
        _ => Route::NotFound,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    if rest.is_empty() {
        return Route::GroupVersion(group.to_owned(), version.to_owned());
    }
    let (watch_prefix, rest) = match rest {
        ["watch", tail @ ..] if !tail.is_empty() => (true, tail),
        _ => (false, rest),
    };
    let mut p = ResourcePath {
        group: group.to_owned(),
        version: version.to_owned(),
        watch_prefix,
        ..ResourcePath::default()
    };
    let owned = |s: &&str| (*s).to_owned();
    let tail = match rest {
        ["namespaces", ns, plural, tail @ ..]
            if !matches!(*plural, "status" | "finalize") || !tail.is_empty() =>
        {
            p.namespace = Some((*ns).to_owned());
            p.plural = (*plural).to_owned();
            tail
        }
        [plural, tail @ ..] => {
            p.plural = (*plural).to_owned();
            tail
        }
        [] => return Route::NotFound,
    };
    match tail {
        [] => {}
        [name] => p.name = Some(owned(name)),
        [name, sub] => {
            p.name = Some(owned(name));
            p.subresource = Some(owned(sub));
        }
        _ => return Route::NotFound,
    }
    Route::Resource(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourcePath {
        match route(path) {
            Route::Resource(p) => p,
            other => panic!("{path}: {other:?}"),
        }
    }

    #[test]
    fn paths() {
        assert_eq!(route("/version"), Route::Version);
        assert_eq!(route("/readyz/ping"), Route::Health);
        assert_eq!(route("/api"), Route::CoreVersions);
        assert_eq!(
            route("/api/v1"),
            Route::GroupVersion("".into(), "v1".into())
        );
        assert_eq!(
            route("/apis/apps/v1/"),
            Route::GroupVersion("apps".into(), "v1".into())
        );
        let p = res("/api/v1/namespaces/ns1/configmaps/cm1");
        assert_eq!(
            (p.namespace.as_deref(), p.plural.as_str(), p.name.as_deref()),
            (Some("ns1"), "configmaps", Some("cm1"))
        );
        let p = res("/api/v1/namespaces/ns1");
        assert_eq!(
            (p.namespace, p.plural.as_str(), p.name.as_deref()),
            (None, "namespaces", Some("ns1"))
        );
        let p = res("/api/v1/namespaces/ns1/status");
        assert_eq!(
            (
                p.plural.as_str(),
                p.name.as_deref(),
                p.subresource.as_deref()
            ),
            ("namespaces", Some("ns1"), Some("status"))
        );
        let p = res("/apis/example.com/v1/namespaces/a/widgets/w/status");
        assert_eq!(p.subresource.as_deref(), Some("status"));
        let p = res("/api/v1/watch/namespaces/a/pods");
        assert!(p.watch_prefix && p.namespace.as_deref() == Some("a"));
        assert_eq!(res("/api/v1/pods").namespace, None);
        assert_eq!(
            route("/api/v1/namespaces/a/pods/x/status/extra"),
            Route::NotFound
        );
        assert_eq!(route("/nope"), Route::NotFound);
        assert_eq!(route("/api/v1//pods"), Route::NotFound);
    }
}
