//! The Foo finalizer: cleanup that garbage collection cannot do, done before a Foo goes away.
//!
//! Deleting an object that carries finalizers does not remove it. The API server only sets
//! `metadata.deletionTimestamp` and keeps the object until every finalizer has been taken off;
//! whoever put a finalizer there is expected to notice the deletion, clean up, and remove it.
//! The sample-controller keeps state that garbage collection cannot reach (an entry in a
//! shared ConfigMap, see [`crate::records`]), so it puts [`FINALIZER`] on every Foo and
//! follows two rules:
//!
//! * **add before creating**: the finalizer is on the Foo before the state it guards exists.
//!   Added after, a deletion in between would find no finalizer, and the state would stay
//!   behind forever;
//! * **remove after cleaning up**: the finalizer comes off only once the cleanup succeeded.
//!   Removed before, a failed cleanup could never be retried. A cleanup that keeps failing
//!   therefore keeps the Foo in `Terminating` (a "stuck deletion"), which is the point: the
//!   alternative is a silent leak.
//!
//! Both changes are JSON merge patches of `metadata.finalizers` carrying the
//! `resourceVersion` they were computed from. A merge patch replaces a list whole, so without
//! that precondition a patch computed from a stale cache would silently drop a finalizer that
//! another controller added in the meantime. With it, the API server answers 409 Conflict
//! instead, and the key is retried from a fresh read. (controller-runtime calls this a merge
//! patch "with optimistic lock"; client-go controllers usually send a whole-object `Update`,
//! which carries the resourceVersion the same way.)
//!
//! The name follows the convention for finalizers that are not Kubernetes' own: qualified by
//! a domain and a path, here the controller's API group.

use clientgo::apimachinery::Object;
use clientgo::rest::{PatchParams, PatchType, ResourceClient, RestClient};
use serde_json::{Value, json};

use crate::controller::CONTROLLER_NAME;
use crate::foo::Foo;

/// The finalizer the controller puts on every Foo it manages.
pub const FINALIZER: &str = "samplecontroller.k8s.io/cleanup";

/// Whether `foo` carries [`FINALIZER`].
pub fn has(foo: &Foo) -> bool {
    foo.finalizers().iter().any(|f| f == FINALIZER)
}

/// The merge patch setting `metadata.finalizers` to `finalizers`, valid only while the Foo is
/// still at `resource_version`.
pub fn patch(finalizers: &[String], resource_version: &str) -> Value {
    json!({"metadata": {"finalizers": finalizers, "resourceVersion": resource_version}})
}

/// Adds [`FINALIZER`] to `foo` (as read from the cache); returns the Foo as written.
///
/// Fails with a conflict if the Foo changed since `foo` was read.
pub async fn add(client: &RestClient, foo: &Foo) -> Result<Foo, clientgo::rest::Error> {
    let mut finalizers = foo.finalizers().to_vec();
    finalizers.push(FINALIZER.to_owned());
    send(client, foo, &finalizers).await
}

/// Removes [`FINALIZER`] from `foo`, keeping any other finalizer; returns the Foo as written.
/// If it was the last finalizer of a Foo being deleted, the API server removes the Foo.
///
/// Fails with a conflict if the Foo changed since `foo` was read.
pub async fn remove(client: &RestClient, foo: &Foo) -> Result<Foo, clientgo::rest::Error> {
    let finalizers: Vec<String> = foo
        .finalizers()
        .iter()
        .filter(|f| *f != FINALIZER)
        .cloned()
        .collect();
    send(client, foo, &finalizers).await
}

async fn send(
    client: &RestClient,
    foo: &Foo,
    finalizers: &[String],
) -> Result<Foo, clientgo::rest::Error> {
    let params = PatchParams {
        field_manager: Some(CONTROLLER_NAME.to_owned()),
        ..PatchParams::default()
    };
    ResourceClient::<Foo>::namespaced(client, foo.namespace())
        .patch(
            foo.name(),
            PatchType::Merge,
            &patch(finalizers, foo.resource_version()),
            &params,
        )
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_patch_sends_the_whole_list_guarded_by_the_resource_version() {
        let others = vec!["example.com/other".to_owned(), FINALIZER.to_owned()];
        assert_eq!(
            patch(&others, "42"),
            json!({"metadata": {
                "finalizers": ["example.com/other", FINALIZER],
                "resourceVersion": "42",
            }})
        );
        // Removing the last one sends an empty list, not a missing field: the list is replaced.
        assert_eq!(patch(&[], "43")["metadata"]["finalizers"], json!([]));
    }

    #[test]
    fn only_our_finalizer_counts() {
        let mut foo = Foo::new("ns", "f", "d", 1);
        assert!(!has(&foo));
        foo.metadata.finalizers = vec!["example.com/other".into()];
        assert!(!has(&foo));
        foo.metadata.finalizers.push(FINALIZER.into());
        assert!(has(&foo));
    }
}
