//! Transforms applied to objects before they are cached: client-go's `TransformFunc`.
//!
//! A transform runs once per object, on its way into an informer's queue (or a store fed
//! directly by a reflector), before the object is wrapped in an `Arc` and shared: it can
//! drop what the cache does not need, which is where most of an informer's memory goes.
//!
//! Where it differs from client-go: Go's `TransformFunc(interface{}) (interface{}, error)`
//! may fail and may be handed tombstones. Here it takes and returns the object by value, so
//! it edits in place without copying and cannot see tombstones (they only hold objects that
//! were transformed already), nor fail.

use std::sync::Arc;

use clientgo_apimachinery::ObjectMut;

/// A transform (client-go's `TransformFunc`): called once per object before it is cached.
pub type TransformFunc<T> = Arc<dyn Fn(T) -> T + Send + Sync>;

/// A transform that drops `metadata.managedFields`: server-side-apply bookkeeping that
/// controllers rarely read and that often is the largest part of an object's metadata
/// (controller-runtime's `TransformStripManagedFields`).
///
/// ```
/// use clientgo_apimachinery::{DynamicObject, ManagedFields};
/// use clientgo_informer::strip_managed_fields;
///
/// let mut cm = DynamicObject::new("settings");
/// cm.metadata.managed_fields = Some(ManagedFields::from_json(r#"[{"manager":"kubectl"}]"#)?);
/// let cm = strip_managed_fields(cm);
/// assert!(cm.metadata.managed_fields.is_none());
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn strip_managed_fields<T: ObjectMut>(mut object: T) -> T {
    object.clear_managed_fields();
    object
}
