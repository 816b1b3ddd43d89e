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

use crate::metrics::MetricsProvider;
use crate::options::{DEFAULT_AGING, Order, QueueConfig};
use crate::queue::{Queue, QueueItem};

impl<T: QueueItem> Default for Queue<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Making a queue.
impl<T: QueueItem> Queue<T> {
    /// A new queue without a name (and so without metrics) or rate limiter: client-go's
    /// `NewTyped` (and `NewTypedDelayingQueue`: every queue can delay an add).
    pub fn new() -> Self {
        Self::builder().build()
    }

    /// A new queue without a rate limiter: client-go's `NewTypedWithConfig`.
    pub fn with_config(config: QueueConfig) -> Self {
        Self::builder().config(config).build()
    }

    /// A new queue that backs failed items off as `limiter` says: client-go's
    /// `NewTypedRateLimitingQueue`.
    pub fn rate_limiting(limiter: Arc<dyn RateLimiter<T>>) -> Self {
        Self::builder().rate_limiter(limiter).build()
    }

    /// [`rate_limiting`](Queue::rate_limiting) with a name and metrics: client-go's
    /// `NewTypedRateLimitingQueueWithConfig`.
    pub fn rate_limiting_with_config(
        limiter: Arc<dyn RateLimiter<T>>,
        config: QueueConfig,
    ) -> Self {
        Self::builder().config(config).rate_limiter(limiter).build()
    }

    /// A new queue with client-go's default controller rate limiter
    /// (`DefaultTypedControllerRateLimiter`), the usual queue of a controller.
    pub fn with_default_rate_limiter() -> Self
    where
        T: Sync,
    {
        Self::builder().default_rate_limiter().build()
    }

    /// A builder for any other combination: name, metrics, rate limiter, priority and aging.
    pub fn builder() -> QueueBuilder<T> {
        QueueBuilder::default()
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
