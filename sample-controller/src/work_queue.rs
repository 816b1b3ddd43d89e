//! The controller's work queue: client-go's FIFO rate-limited queue, or (with
//! `--priority-queue`) the priority queue, which serves real changes before the backlog of a
//! start.
//!
//! On start, and after a leader change, the informers deliver every existing Foo as an add:
//! with a FIFO queue a user's change waits behind all of them. With the priority queue the
//! handlers add keys from the initial list, and updates that changed nothing (resyncs), at low
//! priority, and everything else at normal priority; aging still hands every low key out
//! within a bounded wait (see `clientgo_workqueue::PriorityQueue`). The FIFO queue stays the
//! default because it is client-go's, the one a reader of kubernetes/sample-controller knows;
//! `docs/walkthrough.md` says when the other one matters.

use std::ops::Deref;
use std::sync::Arc;

use clientgo_informer::KeyQueue;
use clientgo_ratelimit::default_controller_rate_limiter;
use clientgo_workqueue::{
    PRIORITY_LOW, PRIORITY_NORMAL, Priority, PriorityQueue, PriorityQueueConfig, Queue,
    QueueConfig, RateLimitingQueue,
};

/// One of the two queues. Both are a [`Queue`] underneath (get, outcomes, shut down).
pub enum WorkQueue {
    /// client-go's rate-limited FIFO queue.
    Fifo(RateLimitingQueue<Arc<str>>),
    /// The priority queue with aging.
    Priority(PriorityQueue<Arc<str>>),
}

impl WorkQueue {
    /// A new queue with client-go's default controller rate limiter.
    pub fn new(priority: bool, config: QueueConfig) -> WorkQueue {
        let limiter = Arc::new(default_controller_rate_limiter());
        if priority {
            WorkQueue::Priority(PriorityQueue::with_config(
                limiter,
                PriorityQueueConfig {
                    queue: config,
                    ..PriorityQueueConfig::default()
                },
            ))
        } else {
            WorkQueue::Fifo(RateLimitingQueue::with_config(limiter, config))
        }
    }

    /// Adds `key`; `routine` marks an add that most likely needs no work (from the initial
    /// list, or a resync), which the priority queue serves after the real changes.
    pub fn add(&self, key: Arc<str>, routine: bool) {
        let priority = if routine {
            PRIORITY_LOW
        } else {
            PRIORITY_NORMAL
        };
        self.add_key(key, priority);
    }

    /// Whether this is the priority queue.
    pub fn is_priority(&self) -> bool {
        matches!(self, WorkQueue::Priority(_))
    }
}

/// The informers' rule for a queue of keys: the priority queue honours the priority, the
/// FIFO queue ignores it.
impl KeyQueue for WorkQueue {
    fn add_key(&self, key: Arc<str>, priority: Priority) {
        match self {
            WorkQueue::Fifo(queue) => queue.add_key(key, priority),
            WorkQueue::Priority(queue) => queue.add_key(key, priority),
        }
    }
}

impl Deref for WorkQueue {
    type Target = Queue<Arc<str>>;

    fn deref(&self) -> &Queue<Arc<str>> {
        match self {
            WorkQueue::Fifo(queue) => queue,
            WorkQueue::Priority(queue) => queue,
        }
    }
}
