//! An event handler that turns notifications into keys on a priority work queue.
//!
//! The typical handler computes a key and adds it to a work queue. This one does it with the
//! priority the notification deserves, so that after a start or a failover the real changes
//! pass the backlog (see `clientgo_workqueue::PriorityQueue`):
//!
//! | notification | priority |
//! |---|---|
//! | add of an object of the initial list (`is_in_initial_list`) | [`PRIORITY_LOW`] |
//! | update with the same resourceVersion (a resync, or a relist that found nothing new) | [`PRIORITY_LOW`] |
//! | any other add or update, every delete (tombstones included) | [`PRIORITY_NORMAL`] |
//!
//! client-go has no such adapter (it has no priority queue); controller-runtime's
//! `EnqueueRequestForObject` does the same with its priority queue. A low-priority key is not
//! forgotten: the queue's aging hands it out within a bounded wait.

use std::fmt;
use std::sync::Arc;

use clientgo_apimachinery::Object;
use clientgo_workqueue::{AddOptions, PRIORITY_LOW, PRIORITY_NORMAL, Priority, PriorityQueue};

use crate::handler::ResourceEventHandler;
use crate::keys::{DeleteEvent, meta_namespace_key_func};

type KeyFn<T> = Box<dyn Fn(&T) -> Option<String> + Send + Sync>;

/// Enqueues the key of every object it is told of, at a priority that depends on the
/// notification (see the module docs).
///
/// ```
/// use std::sync::Arc;
/// use clientgo_apimachinery::{DynamicObject, ObjectMut};
/// use clientgo_informer::{EnqueueHandler, ResourceEventHandler};
/// use clientgo_workqueue::PriorityQueue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue = PriorityQueue::new(Arc::new(clientgo_ratelimit::default_controller_rate_limiter()));
/// let handler = EnqueueHandler::new(queue.clone());
/// let mut listed = DynamicObject::new("listed");
/// listed.set_namespace("default".into());
/// let mut created = DynamicObject::new("created");
/// created.set_namespace("default".into());
/// handler.on_add(&Arc::new(listed), true); // from the initial list: low priority
/// handler.on_add(&Arc::new(created), false); // a real change
/// assert_eq!(**queue.get().await.unwrap(), *"default/created");
/// # }
/// ```
pub struct EnqueueHandler<T> {
    queue: PriorityQueue<Arc<str>>,
    /// Maps an object to the key to enqueue; `None` for the object's own key.
    key: Option<KeyFn<T>>,
}

impl<T> EnqueueHandler<T> {
    /// Enqueues each object's own key (`namespace/name`).
    pub fn new(queue: PriorityQueue<Arc<str>>) -> Self {
        Self { queue, key: None }
    }

    /// Enqueues the key `key` maps an object to, if any: for example the key of the object's
    /// controller. A tombstone without a last known state cannot be mapped, and is skipped.
    pub fn with_key_fn(
        queue: PriorityQueue<Arc<str>>,
        key: impl Fn(&T) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            queue,
            key: Some(Box::new(key)),
        }
    }
}

impl<T: Object> EnqueueHandler<T> {
    fn key_of(&self, object: &T) -> Option<String> {
        match &self.key {
            Some(key) => key(object),
            None => Some(meta_namespace_key_func(object)),
        }
    }

    fn enqueue(&self, key: Option<String>, priority: Priority) {
        if let Some(key) = key {
            self.queue
                .add_with(Arc::from(key), AddOptions::priority(priority));
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
            (None, _) => Some(event.key()),
            (Some(_), Some(object)) => self.key_of(object),
            (Some(_), None) => None,
        };
        self.enqueue(key, PRIORITY_NORMAL);
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

    fn queue() -> PriorityQueue<Arc<str>> {
        PriorityQueue::new(Arc::new(
            clientgo_ratelimit::default_controller_rate_limiter(),
        ))
    }

    /// Every key in line, in the order the queue hands them out.
    async fn in_order(queue: &PriorityQueue<Arc<str>>) -> Vec<String> {
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
            (o.name() != "orphan").then(|| format!("{}/owner-of-{}", o.namespace(), o.name()))
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
}
