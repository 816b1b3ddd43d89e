//! An event handler that turns notifications into keys on a work queue.
//!
//! The typical handler computes a key and adds it to a work queue: on add, on update, and on
//! delete, tombstones included; for a dependent, the key of its controller (a key function,
//! such as [`controller_key`]). This one does that once for every controller, on any work
//! [`Queue`]: a FIFO queue ignores the priorities; on a priority queue each key gets the
//! priority the notification deserves, so that after a start or a failover the real changes
//! pass the backlog (see `clientgo_workqueue::Queue`):
//!
//! | notification | priority |
//! |---|---|
//! | add of an object of the initial list (`is_in_initial_list`) | [`PRIORITY_LOW`] |
//! | update with the same resourceVersion (a resync, or a relist that found nothing new) | [`PRIORITY_LOW`] |
//! | any other add or update, every delete (tombstones included) | [`PRIORITY_NORMAL`] |
//!
//! client-go has no such adapter (each controller writes its three closures, and it has no
//! priority queue); controller-runtime's `EnqueueRequestForObject` and
//! `EnqueueRequestForOwner` do the same with its priority queue. A low-priority key is not
//! forgotten: the queue's aging hands it out within a bounded wait.

use std::fmt;
use std::sync::Arc;

use clientgo_apimachinery::{Object, ObjectKey};
use clientgo_workqueue::{AddOptions, PRIORITY_LOW, PRIORITY_NORMAL, Priority, Queue};

use crate::handler::ResourceEventHandler;
use crate::keys::DeleteEvent;

type KeyFn<T> = Box<dyn Fn(&T) -> Option<ObjectKey> + Send + Sync>;

/// Enqueues the key of every object it is told of, at a priority that depends on the
/// notification (see the module docs).
///
/// ```
/// use std::sync::Arc;
/// use clientgo_apimachinery::{DynamicObject, ObjectMut};
/// use clientgo_informer::{EnqueueHandler, ResourceEventHandler};
/// use clientgo_workqueue::Queue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = Queue::builder().default_rate_limiter().priority().build();
/// let handler = EnqueueHandler::new(queue.clone());
/// let mut listed = DynamicObject::new("listed");
/// listed.set_namespace("default".into());
/// let mut created = DynamicObject::new("created");
/// created.set_namespace("default".into());
/// handler.on_add(&Arc::new(listed), true); // from the initial list: low priority
/// handler.on_add(&Arc::new(created), false); // a real change
/// assert_eq!(queue.get().await.unwrap().as_str(), "default/created");
/// # }
/// ```
pub struct EnqueueHandler<T> {
    queue: Queue<ObjectKey>,
    /// Maps an object to the key to enqueue; `None` for the object's own key.
    key: Option<KeyFn<T>>,
}

impl<T> EnqueueHandler<T> {
    /// Enqueues each object's own key.
    pub fn new(queue: Queue<ObjectKey>) -> Self {
        Self { queue, key: None }
    }

    /// Enqueues the key `key` maps an object to, if any: for example the key of the object's
    /// controller. A tombstone without a last known state cannot be mapped, and is skipped.
    pub fn with_key_fn(
        queue: Queue<ObjectKey>,
        key: impl Fn(&T) -> Option<ObjectKey> + Send + Sync + 'static,
    ) -> Self {
        Self {
            queue,
            key: Some(Box::new(key)),
        }
    }
}

/// The key of `object`'s controller (the owner reference with `controller: true`) when it
/// is of `kind`: for [`EnqueueHandler::with_key_fn`] on the informer of dependents, so that a
/// change to a Deployment enqueues the Foo that owns it.
pub fn controller_key<T: Object>(object: &T, kind: &str) -> Option<ObjectKey> {
    let owner = object.controller_ref()?;
    (owner.kind == kind).then(|| ObjectKey::new(object.namespace(), owner.name))
}

impl<T: Object> EnqueueHandler<T> {
    fn key_of(&self, object: &T) -> Option<ObjectKey> {
        match &self.key {
            Some(key) => key(object),
            None => Some(ObjectKey::of(object)),
        }
    }

    fn enqueue(&self, key: Option<ObjectKey>, priority: Priority) {
        if let Some(key) = key {
            self.queue.add_with(key, AddOptions::priority(priority));
        }
    }
}

impl<T: Object + Send + Sync> ResourceEventHandler<T> for EnqueueHandler<T> {
    fn on_add(&self, object: &Arc<T>, is_in_initial_list: bool) {
        let priority = if is_in_initial_list {
            PRIORITY_LOW
        } else {
            PRIORITY_NORMAL
        };
        self.enqueue(self.key_of(object), priority);
    }

    fn on_update(&self, old: &Arc<T>, new: &Arc<T>) {
        let unchanged = old.resource_version() == new.resource_version();
        let priority = if unchanged {
            PRIORITY_LOW
        } else {
            PRIORITY_NORMAL
        };
        self.enqueue(self.key_of(new), priority);
    }

    fn on_delete(&self, event: DeleteEvent<T>) {
        let key = match (&self.key, event.object()) {
            (None, _) => event.object_key(),
            (Some(_), Some(object)) => self.key_of(object),
            (Some(_), None) => None,
        };
        self.enqueue(key, PRIORITY_NORMAL);
    }

    /// A queue add takes the queue's lock for a moment and never waits: called on the
    /// registration's task, with no hand-off to the blocking pool. A key function given to
    /// [`with_key_fn`](Self::with_key_fn) must be as quick.
    fn is_nonblocking(&self) -> bool {
        true
    }
}

impl<T> fmt::Debug for EnqueueHandler<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EnqueueHandler")
            .field("queue", &self.queue)
            .field("key_fn", &self.key.is_some())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::DeletedFinalStateUnknown;
    use clientgo_apimachinery::{DynamicObject, ObjectMut};

    fn object(namespace: &str, name: &str, resource_version: &str) -> Arc<DynamicObject> {
        let mut object = DynamicObject::new(name);
        object.set_namespace(namespace.into());
        object.set_resource_version(resource_version.into());
        Arc::new(object)
    }

    fn queue() -> Queue<ObjectKey> {
        Queue::builder().default_rate_limiter().priority().build()
    }

    /// Every key in line, in the order the queue hands them out.
    async fn in_order(queue: &Queue<ObjectKey>) -> Vec<String> {
        let mut keys = Vec::new();
        while !queue.is_empty() {
            let held = queue.get().await.unwrap();
            keys.push(held.to_string());
            held.done();
        }
        keys
    }

    #[tokio::test(start_paused = true)]
    async fn initial_list_and_unchanged_updates_go_behind_real_changes() {
        let queue = queue();
        let handler = EnqueueHandler::new(queue.clone());
        handler.on_add(&object("ns", "listed", "1"), true);
        handler.on_update(&object("ns", "resync", "2"), &object("ns", "resync", "2"));
        handler.on_add(&object("ns", "created", "3"), false);
        handler.on_update(&object("ns", "changed", "4"), &object("ns", "changed", "5"));
        handler.on_delete(DeleteEvent::Object(object("ns", "deleted", "6")));
        handler.on_delete(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
            "ns/vanished",
            None,
        )));
        assert_eq!(
            in_order(&queue).await,
            [
                "ns/created",
                "ns/changed",
                "ns/deleted",
                "ns/vanished",
                "ns/listed",
                "ns/resync"
            ]
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_real_change_raises_a_key_waiting_at_low_priority() {
        let queue = queue();
        let handler = EnqueueHandler::new(queue.clone());
        handler.on_add(&object("ns", "a", "1"), true);
        handler.on_add(&object("ns", "b", "1"), true);
        handler.on_update(&object("ns", "b", "1"), &object("ns", "b", "2"));
        assert_eq!(in_order(&queue).await, ["ns/b", "ns/a"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_key_fn_maps_objects_and_skips_unmappable_tombstones() {
        let queue = queue();
        let handler = EnqueueHandler::with_key_fn(queue.clone(), |o: &DynamicObject| {
            (o.name() != "orphan")
                .then(|| ObjectKey::new(o.namespace(), &format!("owner-of-{}", o.name())))
        });
        handler.on_add(&object("ns", "a", "1"), false);
        handler.on_add(&object("ns", "orphan", "1"), false);
        handler.on_delete(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
            "ns/gone", None,
        )));
        handler.on_delete(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
            "ns/b",
            Some(object("ns", "b", "1")),
        )));
        assert_eq!(in_order(&queue).await, ["ns/owner-of-a", "ns/owner-of-b"]);
    }

    #[tokio::test(start_paused = true)]
    async fn on_a_fifo_queue_every_notification_enqueues_its_key_in_order() {
        let queue = Queue::<ObjectKey>::with_default_rate_limiter();
        let handler = EnqueueHandler::new(queue.clone());
        handler.on_add(&object("ns", "listed", "1"), true);
        handler.on_update(&object("ns", "changed", "1"), &object("ns", "changed", "2"));
        handler.on_delete(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
            "ns/gone".to_owned(),
            None,
        )));
        let mut keys = Vec::new();
        while !queue.is_empty() {
            let held = queue.get().await.unwrap();
            keys.push(held.to_string());
            held.done();
        }
        // No priorities on a FIFO queue: first in, first out.
        assert_eq!(keys, ["ns/listed", "ns/changed", "ns/gone"]);
    }

    fn owned_by(kind: &str, owner: &str, controller: bool) -> Arc<DynamicObject> {
        let mut dependent = DynamicObject::new("web-deploy");
        dependent.set_namespace("ns".into());
        dependent.set_owner_references(vec![clientgo_apimachinery::OwnerReference {
            api_version: "example.com/v1".into(),
            kind: kind.into(),
            name: owner.into(),
            uid: "u".into(),
            controller: Some(controller),
            block_owner_deletion: None,
        }]);
        Arc::new(dependent)
    }

    #[test]
    fn controller_key_is_the_key_of_the_controlling_owner_of_that_kind() {
        assert_eq!(
            controller_key(&*owned_by("Foo", "web", true), "Foo"),
            Some(ObjectKey::new("ns", "web"))
        );
        assert_eq!(controller_key(&*owned_by("Bar", "web", true), "Foo"), None);
        assert_eq!(
            controller_key(&*owned_by("Foo", "web", false), "Foo"),
            None,
            "an owner that is not the controller"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_dependent_enqueues_its_controller_even_from_a_tombstone() {
        let queue = Queue::<ObjectKey>::with_default_rate_limiter();
        let handler = EnqueueHandler::with_key_fn(queue.clone(), |d: &DynamicObject| {
            controller_key(d, "Foo")
        });
        handler.on_delete(DeleteEvent::Tombstone(DeletedFinalStateUnknown::new(
            "ns/web-deploy".to_owned(),
            Some(owned_by("Foo", "web", true)),
        )));
        let held = queue.get().await.unwrap();
        assert_eq!(held.to_string(), "ns/web");
        held.done();
    }
}
