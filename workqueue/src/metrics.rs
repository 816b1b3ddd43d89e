//! Work queue metrics: client-go's `util/workqueue/metrics.go`.
//!
//! A [`MetricsProvider`] makes the seven metrics of a named queue. The queue updates them under
//! its own lock at exactly client-go's points:
//!
//! | event | metrics |
//! |---|---|
//! | `add` of an item that was not already waiting | adds +1, depth +1, remember the add time |
//! | `get` | depth −1, queue latency = now − add time, remember the start time |
//! | `done` | work duration = now − start time |
//! | every 500 ms | unfinished work seconds (sum of in-flight ages), longest running processor |
//! | `add_after` (delaying queue) | retries +1 |
//! | priority queue: an item starts or stops needing processing, or its priority rises | depth by priority ±1 |
//!
//! As in client-go, re-adding an item that is being processed counts as an add and raises the
//! depth: depth counts items that need processing, not only items waiting in line.
//!
//! Differences from client-go: there is no no-op provider object to compare against; a queue
//! without a name or without a provider simply has no metrics and pays nothing for them. The
//! global provider is a [`OnceLock`] (only the first [`set_provider`] call takes effect, as in
//! client-go). Time comes from [`tokio::time::Instant`], so tests drive it with a paused clock.

#![cfg_attr(clientgo_loom, allow(dead_code))] // the unfinished-work updater needs a tokio runtime

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::time::Instant;

/// A gauge that goes up and down by one.
pub trait GaugeMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
    /// Subtracts one.
    fn dec(&self);
}

/// A gauge that is set to a value.
pub trait SettableGaugeMetric: Send + Sync {
    /// Sets the current value.
    fn set(&self, value: f64);
}

/// A monotonically increasing counter.
pub trait CounterMetric: Send + Sync {
    /// Adds one.
    fn inc(&self);
}

/// A distribution of observed values, in seconds.
pub trait HistogramMetric: Send + Sync {
    /// Records one observation.
    fn observe(&self, value: f64);
}

/// Makes the metrics of a queue, given the queue's name.
///
/// This is client-go's `MetricsProvider`. [`PrometheusMetricsProvider`] is the ready
/// implementation.
///
/// [`PrometheusMetricsProvider`]: crate::PrometheusMetricsProvider
pub trait MetricsProvider: Send + Sync {
    /// Items that need processing (`workqueue_depth`).
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric>;
    /// Adds handled by the queue (`workqueue_adds_total`).
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric>;
    /// Seconds an item waits before it is handed out (`workqueue_queue_duration_seconds`).
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// Seconds an item is processed for (`workqueue_work_duration_seconds`).
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric>;
    /// Seconds of work in progress not yet observed by the work duration
    /// (`workqueue_unfinished_work_seconds`); large values suggest stuck workers.
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric>;
    /// Age in seconds of the longest-running item in progress
    /// (`workqueue_longest_running_processor_seconds`).
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric>;
    /// Retries handled by the queue (`workqueue_retries_total`).
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric>;

    /// Items of one priority that need processing, in a
    /// priority [`Queue`](crate::Queue) (`workqueue_depth_by_priority`; not a
    /// client-go metric). The default discards the values, so providers written for the other
    /// queues keep working.
    fn new_depth_by_priority_metric(&self, name: &str, priority: i32) -> Box<dyn GaugeMetric> {
        let _ = (name, priority);
        Box::new(Discard)
    }
}

/// A gauge that records nothing.
struct Discard;

impl GaugeMetric for Discard {
    fn inc(&self) {}
    fn dec(&self) {}
}

static GLOBAL_PROVIDER: OnceLock<Arc<dyn MetricsProvider>> = OnceLock::new();

/// Sets the provider used by named queues created without one of their own.
///
/// Only the first call takes effect, as in client-go; it returns whether this call did.
pub fn set_provider(provider: Arc<dyn MetricsProvider>) -> bool {
    GLOBAL_PROVIDER.set(provider).is_ok()
}

/// The provider a queue named `name` uses: its own, else the global one, and none without a name.
pub(crate) fn resolve_provider(
    name: &str,
    own: Option<&Arc<dyn MetricsProvider>>,
) -> Option<Arc<dyn MetricsProvider>> {
    if name.is_empty() {
        return None;
    }
    own.or_else(|| GLOBAL_PROVIDER.get()).cloned()
}

/// How often the unfinished-work gauges are refreshed (client-go's
/// `defaultUnfinishedWorkUpdatePeriod`).
pub(crate) const UNFINISHED_WORK_UPDATE_PERIOD: Duration = Duration::from_millis(500);

/// The metrics of one queue and the timestamps they are computed from.
///
/// Lives inside the queue's state, so every update happens under the queue's lock.
pub(crate) struct QueueMetrics<T> {
    depth: Box<dyn GaugeMetric>,
    adds: Box<dyn CounterMetric>,
    latency: Box<dyn HistogramMetric>,
    work_duration: Box<dyn HistogramMetric>,
    unfinished_work_seconds: Box<dyn SettableGaugeMetric>,
    longest_running_processor: Box<dyn SettableGaugeMetric>,
    added_at: HashMap<T, Instant, foldhash::fast::RandomState>,
    started_at: HashMap<T, Instant, foldhash::fast::RandomState>,
}

impl<T: Hash + Eq + Clone> QueueMetrics<T> {
    pub(crate) fn new(provider: &dyn MetricsProvider, name: &str) -> Self {
        Self {
            depth: provider.new_depth_metric(name),
            adds: provider.new_adds_metric(name),
            latency: provider.new_latency_metric(name),
            work_duration: provider.new_work_duration_metric(name),
            unfinished_work_seconds: provider.new_unfinished_work_seconds_metric(name),
            longest_running_processor: provider.new_longest_running_processor_seconds_metric(name),
            added_at: HashMap::default(),
            started_at: HashMap::default(),
        }
    }

    pub(crate) fn add(&mut self, item: &T) {
        self.adds.inc();
        self.depth.inc();
        if !self.added_at.contains_key(item) {
            self.added_at.insert(item.clone(), Instant::now());
        }
    }

    pub(crate) fn get(&mut self, item: &T) {
        let now = Instant::now();
        self.depth.dec();
        self.started_at.insert(item.clone(), now);
        if let Some(added) = self.added_at.remove(item) {
            self.latency.observe(seconds_between(added, now));
        }
    }

    pub(crate) fn done(&mut self, item: &T) {
        if let Some(started) = self.started_at.remove(item) {
            self.work_duration
                .observe(seconds_between(started, Instant::now()));
        }
    }

    pub(crate) fn update_unfinished_work(&self) {
        let now = Instant::now();
        let (mut total, mut oldest) = (0.0, 0.0f64);
        for &started in self.started_at.values() {
            let age = seconds_between(started, now);
            total += age;
            oldest = oldest.max(age);
        }
        self.unfinished_work_seconds.set(total);
        self.longest_running_processor.set(oldest);
    }
}

fn seconds_between(earlier: Instant, later: Instant) -> f64 {
    later.saturating_duration_since(earlier).as_secs_f64()
}

#[cfg(all(test, not(clientgo_loom)))]
pub(crate) mod testing {
    //! A provider that records every update, for asserting on metrics in tests.

    use super::*;
    use parking_lot::Mutex;

    /// The values one queue's metrics hold.
    #[derive(Debug, Default, Clone, PartialEq)]
    pub(crate) struct Recorded {
        pub depth: i64,
        pub adds: u64,
        pub latency: Vec<f64>,
        pub work_duration: Vec<f64>,
        pub unfinished: f64,
        pub longest: f64,
        pub retries: u64,
        /// Number of updates of any kind.
        pub updates: u64,
    }

    #[derive(Default, Clone)]
    pub(crate) struct RecordingProvider(pub Arc<Mutex<Recorded>>);

    impl RecordingProvider {
        pub(crate) fn snapshot(&self) -> Recorded {
            self.0.lock().clone()
        }
    }

    struct Handle(Arc<Mutex<Recorded>>, fn(&mut Recorded, f64));

    impl Handle {
        fn apply(&self, value: f64) {
            let mut recorded = self.0.lock();
            recorded.updates += 1;
            (self.1)(&mut recorded, value);
        }
    }
    impl GaugeMetric for Handle {
        fn inc(&self) {
            self.apply(1.0);
        }
        fn dec(&self) {
            self.apply(-1.0);
        }
    }
    impl CounterMetric for Handle {
        fn inc(&self) {
            self.apply(1.0);
        }
    }
    impl SettableGaugeMetric for Handle {
        fn set(&self, value: f64) {
            self.apply(value);
        }
    }
    impl HistogramMetric for Handle {
        fn observe(&self, value: f64) {
            self.apply(value);
        }
    }

    impl MetricsProvider for RecordingProvider {
        fn new_depth_metric(&self, _: &str) -> Box<dyn GaugeMetric> {
            Box::new(Handle(self.0.clone(), |r, v| r.depth += v as i64))
        }
        fn new_adds_metric(&self, _: &str) -> Box<dyn CounterMetric> {
            Box::new(Handle(self.0.clone(), |r, _| r.adds += 1))
        }
        fn new_latency_metric(&self, _: &str) -> Box<dyn HistogramMetric> {
            Box::new(Handle(self.0.clone(), |r, v| r.latency.push(v)))
        }
        fn new_work_duration_metric(&self, _: &str) -> Box<dyn HistogramMetric> {
            Box::new(Handle(self.0.clone(), |r, v| r.work_duration.push(v)))
        }
        fn new_unfinished_work_seconds_metric(&self, _: &str) -> Box<dyn SettableGaugeMetric> {
            Box::new(Handle(self.0.clone(), |r, v| r.unfinished = v))
        }
        fn new_longest_running_processor_seconds_metric(
            &self,
            _: &str,
        ) -> Box<dyn SettableGaugeMetric> {
            Box::new(Handle(self.0.clone(), |r, v| r.longest = v))
        }
        fn new_retries_metric(&self, _: &str) -> Box<dyn CounterMetric> {
            Box::new(Handle(self.0.clone(), |r, _| r.retries += 1))
        }
    }
}

#[cfg(all(test, not(clientgo_loom)))]
mod tests {
    //! Ported from client-go's `util/workqueue/metrics_test.go`.

    use std::sync::Arc;
    use std::time::Duration;

    use super::testing::RecordingProvider;
    use crate::{Queue, QueueConfig};

    fn config(provider: &RecordingProvider) -> QueueConfig {
        QueueConfig::named("test").with_metrics_provider(Arc::new(provider.clone()))
    }

    #[tokio::test(start_paused = true)]
    async fn metrics_follow_adds_gets_and_dones() {
        let provider = RecordingProvider::default();
        let queue = Queue::with_config(config(&provider));
        queue.add("foo");
        let recorded = provider.snapshot();
        assert_eq!((recorded.adds, recorded.depth), (1, 1));

        tokio::time::advance(Duration::from_micros(50)).await;
        let item = queue.get().await.unwrap();
        let recorded = provider.snapshot();
        assert_eq!(recorded.depth, 0);
        assert_eq!(recorded.latency, [50e-6]);

        // Re-adds while processing count as one add and raise the depth, as in client-go.
        for _ in 0..5 {
            queue.add("foo");
        }
        let recorded = provider.snapshot();
        assert_eq!((recorded.adds, recorded.depth), (2, 1));

        tokio::time::advance(Duration::from_micros(25)).await;
        item.done();
        assert_eq!(provider.snapshot().work_duration, [25e-6]);

        // The re-added item comes out again; hold it and let the updater run.
        let _item = queue.get().await.unwrap();
        tokio::time::sleep(Duration::from_millis(1)).await;
        tokio::time::sleep(super::UNFINISHED_WORK_UPDATE_PERIOD).await;
        let recorded = provider.snapshot();
        let expected = 0.501;
        assert!(
            (recorded.unfinished - expected).abs() < 1e-9,
            "unfinished work {}",
            recorded.unfinished
        );
        assert!((recorded.longest - expected).abs() < 1e-9);
    }

    #[tokio::test(start_paused = true)]
    async fn no_updates_after_shut_down() {
        let provider = RecordingProvider::default();
        let queue = Queue::with_config(config(&provider));
        queue.add("foo");
        queue.shut_down();
        let before = provider.snapshot().updates;
        queue.add("bar");
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(provider.snapshot().updates, before);
    }

    #[tokio::test(start_paused = true)]
    async fn every_add_after_counts_a_retry() {
        let provider = RecordingProvider::default();
        let queue = Queue::with_config(config(&provider));
        queue.add_after("foo", Duration::ZERO);
        queue.add_after("foo", Duration::from_millis(10));
        queue.add_after("bar", Duration::from_millis(10));
        assert_eq!(provider.snapshot().retries, 3);
    }

    #[test]
    fn unnamed_queue_has_no_metrics() {
        let provider = RecordingProvider::default();
        let queue = Queue::with_config(
            QueueConfig::default().with_metrics_provider(Arc::new(provider.clone())),
        );
        queue.add("foo");
        assert_eq!(provider.snapshot().updates, 0);
    }
}
