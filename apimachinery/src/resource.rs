//! Static type information: the [`Resource`] trait and its runtime twin [`ApiResource`].
//!
//! Plays the role of apimachinery's `runtime/schema` type registration plus the discovery
//! facts a client needs to build URLs (`metav1.APIResource`: plural name, namespaced). In Go
//! these live in a runtime `Scheme`; here a type states them as associated constants, so
//! generic code (`Store<Pod>`, `Informer<Deployment>`) gets them at compile time and for
//! free. [`ApiResource`] carries the same facts at run time, for dynamic objects.
//!
//! When both this trait and `k8s_openapi::Resource` are in scope, `Pod::KIND` is ambiguous:
//! write `<Pod as clientgo_apimachinery::Resource>::KIND`.

use std::borrow::Cow;

use crate::gvk::{GroupVersionKind, GroupVersionResource, push_api_version};

/// A type that is one Kubernetes resource kind in one API group version.
///
/// Implemented for the k8s-openapi types behind the `k8s-openapi` feature; implement it for
/// your own typed objects (custom resources).
///
/// ```
/// use clientgo_apimachinery::Resource;
///
/// struct Widget;
/// impl Resource for Widget {
///     const GROUP: &'static str = "example.com";
///     const VERSION: &'static str = "v1";
///     const KIND: &'static str = "Widget";
///     const PLURAL: &'static str = "widgets";
///     const NAMESPACED: bool = true;
/// }
/// assert_eq!(Widget::api_version(), "example.com/v1");
/// assert_eq!(Widget::gvr().to_string(), "example.com/v1, Resource=widgets");
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a Kubernetes resource known to clientgo (no `Resource` impl)",
    note = "k8s-openapi types (Pod, Deployment, ConfigMap, ...) implement it with the `k8s-openapi` feature of clientgo-apimachinery (or of the clientgo crate)",
    note = "your own types implement it by hand or are used as `DynamicObject`"
)]
pub trait Resource {
    /// API group; `""` for the core group.
    const GROUP: &'static str;
    /// API version within the group, e.g. `v1`.
    const VERSION: &'static str;
    /// Kind, e.g. `Pod`.
    const KIND: &'static str;
    /// Lower-case plural used in URLs, e.g. `pods`.
    const PLURAL: &'static str;
    /// Whether objects live in namespaces.
    const NAMESPACED: bool;

    /// The `apiVersion` string: `VERSION` for the core group, `GROUP/VERSION` otherwise.
    /// Borrowed (no allocation) for the core group.
    fn api_version() -> Cow<'static, str> {
        if Self::GROUP.is_empty() {
            Cow::Borrowed(Self::VERSION)
        } else {
            let mut s = String::with_capacity(Self::GROUP.len() + 1 + Self::VERSION.len());
            push_api_version(&mut s, Self::GROUP, Self::VERSION);
            Cow::Owned(s)
        }
    }

    /// Group, version and kind.
    fn gvk() -> GroupVersionKind {
        GroupVersionKind::new(Self::GROUP, Self::VERSION, Self::KIND)
    }

    /// Group, version and plural resource name.
    fn gvr() -> GroupVersionResource {
        GroupVersionResource::new(Self::GROUP, Self::VERSION, Self::PLURAL)
    }
}

/// [`Resource`]'s facts as a value, for objects whose type is known only at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct ApiResource {
    /// API group; `""` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Lower-case plural used in URLs.
    pub plural: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

impl ApiResource {
    /// The facts of a static type.
    pub fn of<K: Resource>() -> ApiResource {
        ApiResource {
            group: K::GROUP.to_owned(),
            version: K::VERSION.to_owned(),
            kind: K::KIND.to_owned(),
            plural: K::PLURAL.to_owned(),
            namespaced: K::NAMESPACED,
        }
    }

    /// The `apiVersion` string.
    pub fn api_version(&self) -> String {
        let mut s = String::new();
        push_api_version(&mut s, &self.group, &self.version);
        s
    }

    /// Group, version and kind.
    pub fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(self.group.clone(), self.version.clone(), self.kind.clone())
    }

    /// Group, version and plural resource name.
    pub fn gvr(&self) -> GroupVersionResource {
        GroupVersionResource::new(
            self.group.clone(),
            self.version.clone(),
            self.plural.clone(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct ConfigMapLike;
    impl Resource for ConfigMapLike {
        const GROUP: &'static str = "";
        const VERSION: &'static str = "v1";
        const KIND: &'static str = "ConfigMap";
        const PLURAL: &'static str = "configmaps";
        const NAMESPACED: bool = true;
    }

    #[test]
    fn core_group_api_version_is_borrowed() {
        assert!(matches!(ConfigMapLike::api_version(), Cow::Borrowed("v1")));
        assert_eq!(ConfigMapLike::gvk().to_string(), "v1, Kind=ConfigMap");
        let ar = ApiResource::of::<ConfigMapLike>();
        assert_eq!(ar.api_version(), "v1");
        assert_eq!(ar.gvr(), ConfigMapLike::gvr());
        assert_eq!(ar.gvk(), ConfigMapLike::gvk());
        assert!(ar.namespaced);
    }
}
