//! API groups, versions, kinds and resources: `GroupVersion`, `GroupVersionKind`,
//! `GroupVersionResource`.
//!
//! Mirrors `k8s.io/apimachinery/pkg/runtime/schema/group_version.go`. An `apiVersion` string
//! is `"<version>"` for the core (legacy, empty-named) group and `"<group>/<version>"`
//! otherwise. Display formats match Go's `String()` methods (`"apps/v1, Kind=Deployment"`).
//!
//! Difference from Go: `ParseGroupVersion` accepts `"apps/"` and `"/v1"`; we reject an empty
//! group or version around the slash, since no server produces them and accepting them
//! would only hide a typo.

use std::fmt;
use std::str::FromStr;

/// Why an `apiVersion` string could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid apiVersion {input:?}: {reason}")]
pub struct GroupVersionError {
    /// The rejected input.
    pub input: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

/// An API group and version, e.g. `apps/v1`; the core group has the empty name (`v1`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GroupVersion {
    /// The group; `""` for the core group.
    pub group: String,
    /// The version, e.g. `v1`.
    pub version: String,
}

impl GroupVersion {
    /// Builds a group/version pair.
    pub fn new(group: impl Into<String>, version: impl Into<String>) -> GroupVersion {
        GroupVersion {
            group: group.into(),
            version: version.into(),
        }
    }

    /// Parses an `apiVersion` string: `"v1"` or `"apps/v1"`.
    pub fn parse(api_version: &str) -> Result<GroupVersion, GroupVersionError> {
        let err = |reason| GroupVersionError {
            input: api_version.to_owned(),
            reason,
        };
        if api_version.is_empty() {
            return Err(err("empty"));
        }
        match api_version.split_once('/') {
            None => Ok(GroupVersion::new("", api_version)),
            Some((_, v)) if v.contains('/') => Err(err("more than one '/'")),
            Some(("", _)) => Err(err("empty group before '/'")),
            Some((_, "")) => Err(err("empty version after '/'")),
            Some((g, v)) => Ok(GroupVersion::new(g, v)),
        }
    }

    /// The `apiVersion` string: `"v1"` or `"apps/v1"`.
    pub fn api_version(&self) -> String {
        self.to_string()
    }

    /// Adds a kind.
    pub fn with_kind(&self, kind: impl Into<String>) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), self.version.clone(), kind)
    }

    /// Adds a resource (plural name).
    pub fn with_resource(&self, resource: impl Into<String>) -> GroupVersionResource {
        GroupVersionResource::new(self.group.clone(), self.version.clone(), resource)
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_api_version(f, &self.group, &self.version)
    }
}

impl FromStr for GroupVersion {
    type Err = GroupVersionError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        GroupVersion::parse(s)
    }
}

/// A group, version and kind: names a type, e.g. `apps/v1, Kind=Deployment`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GroupVersionKind {
    /// The group; `""` for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The kind, e.g. `Deployment`.
    pub kind: String,
}

impl GroupVersionKind {
    /// Builds a GVK.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> GroupVersionKind {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// Builds a GVK from an `apiVersion` string and a kind.
    pub fn from_api_version_kind(
        api_version: &str,
        kind: impl Into<String>,
    ) -> Result<GroupVersionKind, GroupVersionError> {
        Ok(GroupVersion::parse(api_version)?.with_kind(kind))
    }

    /// The `apiVersion` string.
    pub fn api_version(&self) -> String {
        let mut s = String::new();
        push_api_version(&mut s, &self.group, &self.version);
        s
    }

    /// The group and version alone.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }
}

impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_api_version(f, &self.group, &self.version)?;
        write!(f, ", Kind={}", self.kind)
    }
}

/// A group, version and resource: names an endpoint, e.g. `apps/v1, Resource=deployments`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct GroupVersionResource {
    /// The group; `""` for the core group.
    pub group: String,
    /// The version.
    pub version: String,
    /// The resource: the lower-case plural used in URLs, e.g. `deployments`.
    pub resource: String,
}

impl GroupVersionResource {
    /// Builds a GVR.
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> GroupVersionResource {
        GroupVersionResource {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The `apiVersion` string.
    pub fn api_version(&self) -> String {
        let mut s = String::new();
        push_api_version(&mut s, &self.group, &self.version);
        s
    }

    /// The group and version alone.
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(self.group.clone(), self.version.clone())
    }
}

impl fmt::Display for GroupVersionResource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_api_version(f, &self.group, &self.version)?;
        write!(f, ", Resource={}", self.resource)
    }
}

fn write_api_version(f: &mut fmt::Formatter<'_>, group: &str, version: &str) -> fmt::Result {
    if group.is_empty() {
        f.write_str(version)
    } else {
        write!(f, "{group}/{version}")
    }
}

pub(crate) fn push_api_version(out: &mut String, group: &str, version: &str) {
    if !group.is_empty() {
        out.push_str(group);
        out.push('/');
    }
    out.push_str(version);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_api_versions() {
        assert_eq!(GroupVersion::parse("v1"), Ok(GroupVersion::new("", "v1")));
        assert_eq!(
            "apps/v1".parse::<GroupVersion>(),
            Ok(GroupVersion::new("apps", "v1"))
        );
        assert_eq!(
            GroupVersion::parse("coordination.k8s.io/v1")
                .unwrap()
                .to_string(),
            "coordination.k8s.io/v1"
        );
        for (bad, reason) in [
            ("", "empty"),
            ("a/b/c", "more than one '/'"),
            ("/v1", "empty group before '/'"),
            ("apps/", "empty version after '/'"),
        ] {
            assert_eq!(
                GroupVersion::parse(bad),
                Err(GroupVersionError {
                    input: bad.to_owned(),
                    reason
                })
            );
        }
    }

    #[test]
    fn display_like_go() {
        let gvk = GroupVersionKind::from_api_version_kind("apps/v1", "Deployment").unwrap();
        assert_eq!(gvk.to_string(), "apps/v1, Kind=Deployment");
        assert_eq!(gvk.api_version(), "apps/v1");
        assert_eq!(
            GroupVersionKind::new("", "v1", "Pod").to_string(),
            "v1, Kind=Pod"
        );
        let gvr = gvk.group_version().with_resource("deployments");
        assert_eq!(gvr.to_string(), "apps/v1, Resource=deployments");
        assert_eq!(
            GroupVersionResource::new("", "v1", "pods").api_version(),
            "v1"
        );
    }
}
