//! Prometheus metrics for work queues, with client-go's metric names.
//!
//! client-go leaves the Prometheus side to `k8s.io/component-base`, which registers the
//! families below; this module registers the same names, help texts, label and buckets in a
//! [`prometheus_client`] registry, so dashboards written for Go controllers work unchanged.
//!
//! | metric | type |
//! |---|---|
//! | `workqueue_depth` | gauge |
//! | `workqueue_adds_total` | counter |
//! | `workqueue_queue_duration_seconds` | histogram, buckets 1e-8 s × 10ⁿ, n = 0..9 |
//! | `workqueue_work_duration_seconds` | histogram, same buckets |
//! | `workqueue_unfinished_work_seconds` | gauge |
//! | `workqueue_longest_running_processor_seconds` | gauge |
//! | `workqueue_retries_total` | counter |
//! | `workqueue_depth_by_priority` | gauge, labels `name` and `priority` (priority queues) |
//!
//! Every family carries the label `name`: the queue's name. The last family is not client-go's:
//! a priority [`Queue`](crate::Queue) reports its depth per priority there, besides the
//! total in `workqueue_depth`.

use std::sync::atomic::AtomicU64;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::metrics::{
    CounterMetric, GaugeMetric, HistogramMetric, MetricsProvider, SettableGaugeMetric,
};

type Labels = [(&'static str, String); 1];
type PriorityLabels = [(&'static str, String); 2];
type HistogramFamily = Family<Labels, Histogram, fn() -> Histogram>;

fn duration_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1e-8, 10.0, 10))
}

/// A [`MetricsProvider`] that feeds a [`prometheus_client`] registry.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use prometheus_client::registry::Registry;
/// use clientgo_workqueue::{PrometheusMetricsProvider, Queue, QueueConfig};
///
/// let mut registry = Registry::default();
/// let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
/// let queue: Queue<&str> = Queue::with_config(QueueConfig::named("foos").with_metrics_provider(provider));
/// queue.add("default/web");
///
/// let mut text = String::new();
/// prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
/// assert!(text.contains(r#"workqueue_adds_total{name="foos"} 1"#));
/// ```
#[derive(Clone)]
pub struct PrometheusMetricsProvider {
    depth: Family<Labels, Gauge>,
    adds: Family<Labels, Counter>,
    latency: HistogramFamily,
    work_duration: HistogramFamily,
    unfinished_work: Family<Labels, Gauge<f64, AtomicU64>>,
    longest_running: Family<Labels, Gauge<f64, AtomicU64>>,
    retries: Family<Labels, Counter>,
    depth_by_priority: Family<PriorityLabels, Gauge>,
}

impl PrometheusMetricsProvider {
    /// Registers the work queue metric families in `registry`.
    pub fn new(registry: &mut Registry) -> Self {
        let provider = Self {
            depth: Family::default(),
            adds: Family::default(),
            latency: Family::new_with_constructor(duration_histogram as fn() -> Histogram),
            work_duration: Family::new_with_constructor(duration_histogram as fn() -> Histogram),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            retries: Family::default(),
            depth_by_priority: Family::default(),
        };
        registry.register(
            "workqueue_depth",
            "Current depth of workqueue",
            provider.depth.clone(),
        );
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            provider.adds.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            provider.latency.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            provider.work_duration.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been \
             observed by work_duration. Large values indicate stuck threads. One can deduce \
             the number of stuck threads by observing the rate at which this increases",
            provider.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds has the longest running processor for workqueue been running",
            provider.longest_running.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by workqueue",
            provider.retries.clone(),
        );
        registry.register(
            "workqueue_depth_by_priority",
            "Current depth of a priority workqueue, per priority",
            provider.depth_by_priority.clone(),
        );
        provider
    }
}

fn labels(name: &str) -> Labels {
    [("name", name.to_owned())]
}

impl GaugeMetric for Gauge {
    fn inc(&self) {
        Gauge::inc(self);
    }
    fn dec(&self) {
        Gauge::dec(self);
    }
}

impl SettableGaugeMetric for Gauge<f64, AtomicU64> {
    fn set(&self, value: f64) {
        Gauge::set(self, value);
    }
}

impl CounterMetric for Counter {
    fn inc(&self) {
        Counter::inc(self);
    }
}

impl HistogramMetric for Histogram {
    fn observe(&self, value: f64) {
        Histogram::observe(self, value);
    }
}

impl MetricsProvider for PrometheusMetricsProvider {
    fn new_depth_metric(&self, name: &str) -> Box<dyn GaugeMetric> {
        Box::new(self.depth.get_or_create(&labels(name)).clone())
    }
    fn new_adds_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(self.adds.get_or_create(&labels(name)).clone())
    }
    fn new_latency_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.latency.get_or_create(&labels(name)).clone())
    }
    fn new_work_duration_metric(&self, name: &str) -> Box<dyn HistogramMetric> {
        Box::new(self.work_duration.get_or_create(&labels(name)).clone())
    }
    fn new_unfinished_work_seconds_metric(&self, name: &str) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.unfinished_work.get_or_create(&labels(name)).clone())
    }
    fn new_longest_running_processor_seconds_metric(
        &self,
        name: &str,
    ) -> Box<dyn SettableGaugeMetric> {
        Box::new(self.longest_running.get_or_create(&labels(name)).clone())
    }
    fn new_retries_metric(&self, name: &str) -> Box<dyn CounterMetric> {
        Box::new(self.retries.get_or_create(&labels(name)).clone())
    }
    fn new_depth_by_priority_metric(&self, name: &str, priority: i32) -> Box<dyn GaugeMetric> {
        let labels = [
            ("name", name.to_owned()),
            ("priority", priority.to_string()),
        ];
        Box::new(self.depth_by_priority.get_or_create(&labels).clone())
    }
}

#[cfg(all(test, not(clientgo_loom)))]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use prometheus_client::registry::Registry;

    use super::PrometheusMetricsProvider;
    use crate::{Queue, QueueConfig};

    #[tokio::test(start_paused = true)]
    async fn exports_client_go_names_with_the_queue_name_label() {
        let mut registry = Registry::default();
        let provider = Arc::new(PrometheusMetricsProvider::new(&mut registry));
        let queue = Queue::with_config(QueueConfig::named("foos").with_metrics_provider(provider));
        queue.add("a");
        queue.add_after("b", Duration::from_millis(5));
        let item = queue.get().await.unwrap();
        // The unfinished-work gauges refresh at 0 and 500 ms: read between two refreshes.
        tokio::time::sleep(Duration::from_millis(750)).await;
        item.done();

        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for line in [
            r#"workqueue_depth{name="foos"} 1"#,
            r#"workqueue_adds_total{name="foos"} 2"#,
            r#"workqueue_retries_total{name="foos"} 1"#,
            r#"workqueue_queue_duration_seconds_count{name="foos"} 1"#,
            r#"workqueue_work_duration_seconds_count{name="foos"} 1"#,
            r#"workqueue_work_duration_seconds_bucket{le="10.0",name="foos"} 1"#,
            r#"workqueue_unfinished_work_seconds{name="foos"} 0.5"#,
            r#"workqueue_longest_running_processor_seconds{name="foos"} 0.5"#,
        ] {
            assert!(text.contains(line), "missing {line:?} in:\n{text}");
        }
    }
}
