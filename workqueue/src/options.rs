//! What a [`Queue`](crate::Queue) is made with and how an item is added to it: its name and
//! metrics (client-go's `TypedQueueConfig`), its order, and the options of one add
//! (controller-runtime's priority queue's `AddOpts`). A leaf the queue and its builder both
//! read.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::line::{PRIORITY_LOW, PRIORITY_NORMAL, Priority};
use crate::metrics::MetricsProvider;

/// How long a waiting item takes to gain one priority level on a priority queue, unless the
/// builder says otherwise: [`PRIORITY_LOW`] is 100 levels below [`PRIORITY_NORMAL`], so a
/// low-priority key outranks fresh normal adds after 100 s.
pub const DEFAULT_AGING: Duration = Duration::from_secs(1);

/// A queue's name and where its metrics go: client-go's `TypedQueueConfig`.
#[derive(Clone, Default)]
pub struct QueueConfig {
    /// The queue's name, the `name` label of its metrics. A queue without a name has no metrics.
    pub name: String,
    /// Where the queue's metrics go; `None` uses the provider given to
    /// [`set_provider`](crate::set_provider), if any.
    pub metrics_provider: Option<Arc<dyn MetricsProvider>>,
}

impl QueueConfig {
    /// A configuration with only a name.
    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            metrics_provider: None,
        }
    }

    /// Sends this queue's metrics to `provider`.
    pub fn with_metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.metrics_provider = Some(provider);
        self
    }
}

impl fmt::Debug for QueueConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueConfig")
            .field("name", &self.name)
            .field("metrics_provider", &self.metrics_provider.is_some())
            .finish()
    }
}

/// The order in which a queue hands out its waiting items.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Order {
    /// First added, first handed out (client-go's order).
    Fifo,
    /// Highest priority first, FIFO within a priority; waiting `aging` is worth one priority
    /// level (see `line.rs`).
    Priority { aging: Duration },
}

/// How [`Queue::add_with`](crate::Queue::add_with) adds an item: at which priority, after which delay, and whether
/// after the rate limiter's backoff. controller-runtime's priority queue's `AddOpts`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddOptions {
    /// The priority it waits at (a FIFO queue ignores it); [`PRIORITY_NORMAL`] by default.
    pub priority: Priority,
    /// Add it only once this delay has passed.
    pub after: Option<Duration>,
    /// Add it after the rate limiter's backoff (recording one more failure), or after
    /// `after` if that is shorter.
    pub rate_limited: bool,
}

impl Default for AddOptions {
    fn default() -> Self {
        Self {
            priority: PRIORITY_NORMAL,
            after: None,
            rate_limited: false,
        }
    }
}

impl AddOptions {
    /// An add at `priority`, now.
    pub fn priority(priority: Priority) -> Self {
        Self {
            priority,
            ..Self::default()
        }
    }

    /// An add at [`PRIORITY_LOW`], now: for keys that most likely need no work (the initial
    /// list, a resync).
    pub fn low() -> Self {
        Self::priority(PRIORITY_LOW)
    }
}
