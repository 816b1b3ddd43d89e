//! The Kubernetes object model shared by clientgo-rs's API-server simulator and its
//! clients: the role k8s.io/apimachinery plays for client-go.
//!
//! * Metadata: [`TypeMeta`], [`ObjectMeta`], [`OwnerReference`], [`ListMeta`], with
//!   `managedFields` kept as raw JSON ([`ManagedFields`]).
//! * Containers: [`ObjectList<T>`], [`WatchEvent<T>`] (`ADDED`, `MODIFIED`, `DELETED`,
//!   `BOOKMARK`, `ERROR`), [`Status`] for errors.
//! * Types: [`GroupVersion`], [`GroupVersionKind`], [`GroupVersionResource`], the
//!   [`Resource`] trait (static group/version/kind/plural/scope) and [`ApiResource`].
//! * The [`Object`] / [`ObjectMut`] traits: the metadata accessors caches, informers and
//!   controllers use (client-go's `metav1.Object`), implemented for [`ObjectMeta`],
//!   [`DynamicObject`], your own types via [`impl_object!`], and, with the `k8s-openapi`
//!   feature, for k8s-openapi's `Pod`, `Deployment`, `ConfigMap`, `Lease`, ...
//! * [`DynamicObject`]: typed metadata plus the rest as JSON, lossless.
//! * [`PartialObjectMetadata`]: any object reduced to its metadata (the server's
//!   `as=PartialObjectMetadata` answers), and [`PartialObjectMetadataList`].
//! * [`labels`] and [`fields`] selectors: parse, match, render.
//! * [`Time`] / [`MicroTime`]: RFC 3339 instants.
//!
//! The wire format is Kubernetes JSON (camelCase, Go's `omitempty`). Malformed input is a
//! typed error naming what is wrong, never a panic.
//!
//! ```
//! use clientgo_apimachinery::{DynamicObject, Object, WatchEvent, labels::Selector};
//!
//! let event: WatchEvent<DynamicObject> = serde_json::from_str(
//!     r#"{"type":"ADDED","object":{"apiVersion":"v1","kind":"ConfigMap",
//!         "metadata":{"name":"settings","namespace":"prod","resourceVersion":"42",
//!                     "labels":{"app":"web"}},
//!         "data":{"mode":"fast"}}}"#,
//! )?;
//! let WatchEvent::Added(cm) = &event else { unreachable!() };
//! assert_eq!(cm.key(), "prod/settings");
//! assert_eq!(event.resource_version(), Some("42"));
//! assert_eq!(cm.data["data"]["mode"], "fast");
//!
//! let selector: Selector = "app in (web, api), !canary".parse()?;
//! assert!(selector.matches(&cm.labels()));
//! assert_eq!(selector.to_string(), "app in (api,web),!canary");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![deny(missing_docs)]

mod compact;
mod dynamic;
pub mod fields;
mod gvk;
#[cfg(feature = "k8s-openapi")]
pub mod k8s_openapi;
pub mod labels;
mod list;
mod managed_fields;
mod map_ref;
mod meta;
mod object;
mod object_key;
mod owner_refs;
mod partial;
mod resource;
mod serde_util;
mod status;
pub mod time;
mod watch;

pub use compact::{Compact, CompactMeta, RestNotAnObject};
pub use dynamic::DynamicObject;
pub use gvk::{GroupVersion, GroupVersionError, GroupVersionKind, GroupVersionResource};
pub use list::ObjectList;
pub use managed_fields::ManagedFields;
pub use map_ref::{Iter as MapIter, MapRef};
pub use meta::{ListMeta, ObjectMeta, OwnerReference, TypeMeta};
pub use object::{KeyError, Object, ObjectMut, object_key, split_key};
pub use object_key::ObjectKey;
pub use owner_refs::{OwnerRef, OwnerRefs};
pub use partial::{
    META_V1_API_VERSION, PARTIAL_OBJECT_METADATA_KIND, PARTIAL_OBJECT_METADATA_LIST_KIND,
    PartialObjectMetadata, PartialObjectMetadataList,
};
pub use resource::{ApiResource, Resource};
pub use status::{
    STATUS_FAILURE, STATUS_SUCCESS, Status, StatusCause, StatusDetails, StatusReason,
};
pub use time::{MicroTime, Time, TimeError};
pub use watch::{
    Bookmark, BookmarkMeta, INITIAL_EVENTS_END_ANNOTATION, WatchEvent, WatchEventType,
};
