//! The controller's work queue: client-go's FIFO rate-limited queue, or (with
//! `--priority-queue`) the priority queue, which serves real changes before the backlog of a
//! start.
//!
//! On start, and after a leader change, the informers deliver every existing Foo as an add:
//! with a FIFO queue a user's change waits behind all of them. With the priority queue the
//! handlers add keys from the initial list, and updates that changed nothing (resyncs), at low
//! priority, and everything else at normal priority; aging still hands every low key out
//! within a bounded wait (see `clientgo::util::workqueue::Queue`). The FIFO queue stays the
//! default because it is client-go's, the one a reader of kubernetes/sample-controller knows;
//! `docs/walkthrough.md` says when the other one matters.

use clientgo::util::workqueue::{AddOptions, ObjectKey, Queue, QueueConfig};

/// The controller's queue: client-go's default controller rate limiter, FIFO or, with
/// `priority`, by priority with aging.
pub fn new(priority: bool, config: QueueConfig) -> Queue<ObjectKey> {
    let builder = Queue::builder().config(config).default_rate_limiter();
    if priority {
        builder.priority().build()
    } else {
        builder.build()
    }
}

/// How a handler adds a key: `routine` marks an add that most likely needs no work (from the
/// initial list, or a resync), which the priority queue serves after the real changes (a
/// FIFO queue ignores it).
pub fn add_options(routine: bool) -> AddOptions {
    if routine {
        AddOptions::low()
    } else {
        AddOptions::default()
    }
}
