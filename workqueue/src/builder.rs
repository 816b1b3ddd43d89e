//! How a [`Queue`] is made: its name and metrics, its rate limiter and its order.
//!
//! client-go builds a queue in layers, each a constructor that wraps the one below it:
//! `NewTypedWithConfig` (the queue), `NewTypedDelayingQueueWithConfig` (adds `AddAfter`),
//! `NewTypedRateLimitingQueueWithConfig` (adds `AddRateLimited`, `Forget`, `NumRequeues`).
//! Here there is one type, and those are options of one [`QueueBuilder`]: every queue can
//! delay an add, a queue with a rate limiter backs failures off, and a queue with
//! [`priority`](QueueBuilder::priority) hands out the highest priority first (with aging, so
//! nothing starves; see [`Queue`]'s docs). The constructors on [`Queue`] keep client-go's
//! names for the usual combinations.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use clientgo_ratelimit::RateLimiter;

use crate::line::{PRIORITY_LOW, PRIORITY_NORMAL, Priority};
use crate::metrics::MetricsProvider;
use crate::queue::{Order, Queue, QueueItem};

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

/// Builds a [`Queue`]: `Queue::builder()`.
///
/// ```
/// use std::time::Duration;
/// use clientgo_workqueue::Queue;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let queue: Queue<String> = Queue::builder()
///     .name("foos") // metrics labelled name="foos"
///     .default_rate_limiter() // failures back off: 5 ms doubling to 1000 s, 10 qps overall
///     .priority() // initial-list keys at low priority go behind real changes
///     .aging(Duration::from_secs(2)) // a key gains one priority level per 2 s of waiting
///     .build();
/// # }
/// ```
#[must_use = "a builder does nothing until `build` is called"]
pub struct QueueBuilder<T> {
    config: QueueConfig,
    limiter: Option<Arc<dyn RateLimiter<T>>>,
    order: Order,
}

impl<T: QueueItem> Default for QueueBuilder<T> {
    fn default() -> Self {
        Self {
            config: QueueConfig::default(),
            limiter: None,
            order: Order::Fifo,
        }
    }
}

impl<T: QueueItem> QueueBuilder<T> {
    /// Names the queue: the `name` label of its metrics (an unnamed queue has none) and the
    /// queue in its journey events.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.config.name = name.into();
        self
    }

    /// Sends the queue's metrics to `provider` instead of the global one.
    pub fn metrics_provider(mut self, provider: Arc<dyn MetricsProvider>) -> Self {
        self.config.metrics_provider = Some(provider);
        self
    }

    /// Takes the name and metrics provider of `config`.
    pub fn config(mut self, config: QueueConfig) -> Self {
        self.config = config;
        self
    }

    /// Backs failed items off as `limiter` says: [`Processing::retry`](crate::Processing::retry)
    /// and [`Queue::add_rate_limited`] wait for its delay. Without one, a retried item goes
    /// back in line at once.
    pub fn rate_limiter(mut self, limiter: Arc<dyn RateLimiter<T>>) -> Self {
        self.limiter = Some(limiter);
        self
    }

    /// Backs failed items off with client-go's `DefaultTypedControllerRateLimiter`: per item,
    /// 5 ms doubling up to 1000 s; overall, 10 retries per second with bursts of 100.
    pub fn default_rate_limiter(self) -> Self
    where
        T: Sync,
    {
        self.rate_limiter(Arc::new(
            clientgo_ratelimit::default_controller_rate_limiter(),
        ))
    }

    /// Hands out the highest priority first, FIFO within a priority, with
    /// [`DEFAULT_AGING`] unless [`aging`](QueueBuilder::aging) says otherwise.
    pub fn priority(mut self) -> Self {
        if let Order::Fifo = self.order {
            self.order = Order::Priority {
                aging: DEFAULT_AGING,
            };
        }
        self
    }

    /// Hands out the highest priority first, waiting `aging` being worth one priority level
    /// (implies [`priority`](QueueBuilder::priority)).
    pub fn aging(mut self, aging: Duration) -> Self {
        self.order = Order::Priority { aging };
        self
    }

    /// The queue. A named queue with a metrics provider refreshes its unfinished-work gauges
    /// every 500 ms from a tokio task; built outside a tokio runtime, it reports every other
    /// metric but leaves those two at zero (and says so in a warning).
    pub fn build(self) -> Queue<T> {
        Queue::build(self.config, self.limiter, self.order)
    }
}

impl<T> fmt::Debug for QueueBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueBuilder")
            .field("config", &self.config)
            .field("rate_limiter", &self.limiter.is_some())
            .field("order", &self.order)
            .finish()
    }
}

/// How [`Queue::add_with`] adds an item: at which priority, after which delay, and whether
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
