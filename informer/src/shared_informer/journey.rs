//! The informer's part of a key's journey (see the `clientgo-flightrecorder` crate): `watch`
//! when the reflector receives a watch event, `listed` for each object of a list (LIST pages
//! or a streaming list's initial events) as it replaces the cache, `applied` when the change
//! is in the cache and handed to the handlers, and a `handler` span around each handler
//! call, so that the queue adds a handler makes can be traced back to the watch event or
//! the list that caused them.
//!
//! Events and spans go to the target `clientgo_informer::journey` at `TRACE` level, with the
//! object's type, key and resourceVersion only (never its content). With no subscriber
//! interested each costs a relaxed load; the key is formatted only when one is.
//! client-go has no such events; its reflector logs at high verbosity instead.

use clientgo_journey::{Stage, target};
use std::fmt;
use std::sync::Arc;

use clientgo_apimachinery::Object;

use crate::handler::ResourceEventHandler;
use crate::keys::DeleteEvent;

/// The short name of an object type: `Pod` for `k8s_openapi::...::Pod` or `Compact<Pod>`.
pub(crate) fn resource_of<T: ?Sized>() -> &'static str {
    let name = std::any::type_name::<T>().trim_end_matches('>');
    name.rsplit([':', '<']).next().unwrap_or(name)
}

/// An object's `namespace/name`, formatted only when written.
pub(crate) struct Key<'a, T: ?Sized>(pub(crate) &'a T);

impl<T: Object + ?Sized> fmt::Display for Key<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.namespace() {
            "" => f.write_str(self.0.name()),
            namespace => write!(f, "{namespace}/{}", self.0.name()),
        }
    }
}

/// A watch event received (`ADDED`, `MODIFIED`, `DELETED`).
#[inline]
pub(crate) fn watch_event<T: Object>(event_type: &'static str, object: &T) {
    tracing::trace!(target: target::INFORMER, stage = Stage::Watch.name(),
        resource = resource_of::<T>(), r#type = event_type, key = %Key(object),
        rv = object.resource_version());
}

/// The objects of a list about to replace the cache: the initial objects of a key's journey,
/// which no watch event brought. `via` is `LIST` (the pages of a LIST) or `watch-list` (the
/// initial events of a streaming list).
pub(crate) fn listed<T: Object>(via: &'static str, objects: &[T]) {
    if !tracing::enabled!(target: target::INFORMER, tracing::Level::TRACE) {
        return;
    }
    for object in objects {
        tracing::trace!(target: target::INFORMER, stage = Stage::Listed.name(),
            resource = resource_of::<T>(), via, key = %Key(object),
            rv = object.resource_version());
    }
}

/// A change applied to the cache and handed to the handlers.
#[inline]
pub(crate) fn applied<T: Object>(event_type: &'static str, object: &T) {
    tracing::trace!(target: target::INFORMER, stage = Stage::Applied.name(),
        resource = resource_of::<T>(), r#type = event_type, key = %Key(object),
        rv = object.resource_version());
}

/// A handler, each of its calls in a `handler` span.
pub(crate) struct Traced<H> {
    pub(crate) inner: H,
    pub(crate) name: Option<Arc<str>>,
}

impl<H> Traced<H> {
    fn span<T: Object>(&self, event_type: &'static str, object: Option<&T>) -> tracing::Span {
        tracing::trace_span!(target: target::INFORMER, "handler", stage = Stage::Handler.name(),
            resource = resource_of::<T>(), handler = self.name.as_deref().unwrap_or(""),
            r#type = event_type, key = object.map(|o| Key(o).to_string()),
            rv = object.map(|o| o.resource_version()))
    }
}

impl<T: Object, H: ResourceEventHandler<T>> ResourceEventHandler<T> for Traced<H> {
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool) {
        let _in = self.span("add", Some(&**object)).entered();
        self.inner.on_add(object, is_in_initial_list);
    }

    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        let _in = self.span("update", Some(&**new)).entered();
        self.inner.on_update(old, new);
    }

    fn on_delete(&self, event: DeleteEvent<T>) {
        let _in = self.span("delete", event.object().map(|o| &**o)).entered();
        self.inner.on_delete(event);
    }

    fn is_nonblocking(&self) -> bool {
        self.inner.is_nonblocking()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Compact<T>(T);

    #[test]
    fn a_resource_is_named_by_its_type() {
        assert_eq!(
            resource_of::<clientgo_apimachinery::DynamicObject>(),
            "DynamicObject"
        );
        assert_eq!(
            resource_of::<Compact<clientgo_apimachinery::DynamicObject>>(),
            "DynamicObject"
        );
        assert_eq!(resource_of::<u32>(), "u32");
        let _ = Compact(0);
    }
}
