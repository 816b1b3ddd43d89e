//! The gauges read at scrape time: each informer's cache size and each handler's buffer
//! length.
//!
//! Informers register a weak reference to themselves ([`InformerSource`]); when the registry
//! is encoded, [`CacheCollector`] asks every informer still alive for its numbers. Nothing is
//! recorded on the event path, and an informer's series disappear when it is dropped. Two
//! informers with the same name (or two handlers with the same name on it) add up into one
//! series, as they would into a shared gauge.

use std::fmt;
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;

/// An informer, as the collector sees it.
pub(crate) trait InformerSource: Send + Sync {
    /// Reports the informer's cache and handlers into `snapshot`.
    fn snapshot(&self, snapshot: &SourceSnapshot);
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameHandler {
    name: String,
    handler: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameSource {
    name: String,
    source: String,
}

/// The numbers of one scrape.
#[derive(Default)]
pub(crate) struct SourceSnapshot {
    objects: Family<NameLabel, Gauge>,
    bytes: Family<NameLabel, Gauge>,
    buffers: Family<NameHandler, Gauge>,
    failed: Family<NameLabel, Gauge>,
    panics: Family<NameSource, Counter>,
}

impl SourceSnapshot {
    /// The cache of informer `name` holds `objects` objects of about `bytes` bytes (`None`:
    /// sizes are not kept).
    pub(crate) fn cache(&self, name: &str, objects: usize, bytes: Option<u64>) {
        let label = NameLabel {
            name: name.to_owned(),
        };
        self.objects
            .get_or_create(&label)
            .inc_by(i64::try_from(objects).unwrap_or(i64::MAX));
        if let Some(bytes) = bytes {
            self.bytes
                .get_or_create(&label)
                .inc_by(i64::try_from(bytes).unwrap_or(i64::MAX));
        }
    }

    /// Whether informer `name` stopped on a panic, and how many panics each source had.
    pub(crate) fn panics(&self, name: &str, failed: bool, counts: &[(&str, u64)]) {
        let label = NameLabel {
            name: name.to_owned(),
        };
        self.failed.get_or_create(&label).inc_by(i64::from(failed));
        for (source, count) in counts {
            let label = NameSource {
                name: name.to_owned(),
                source: (*source).to_owned(),
            };
            self.panics.get_or_create(&label).inc_by(*count);
        }
    }

    /// `pending` notifications wait for handler `handler` of informer `name`.
    pub(crate) fn handler(&self, name: &str, handler: &str, pending: usize) {
        let label = NameHandler {
            name: name.to_owned(),
            handler: handler.to_owned(),
        };
        self.buffers
            .get_or_create(&label)
            .inc_by(i64::try_from(pending).unwrap_or(i64::MAX));
    }
}

/// The informers that report into one registry.
#[derive(Default)]
pub(crate) struct Sources(Mutex<Vec<Weak<dyn InformerSource>>>);

impl Sources {
    pub(crate) fn add(&self, source: Weak<dyn InformerSource>) {
        let mut sources = self.0.lock();
        // Dropped informers leave with the next registration, or the next scrape.
        sources.retain(|s| s.strong_count() > 0);
        sources.push(source);
    }

    pub(crate) fn len(&self) -> usize {
        self.0.lock().len()
    }

    fn live(&self) -> Vec<Arc<dyn InformerSource>> {
        let mut sources = self.0.lock();
        sources.retain(|s| s.strong_count() > 0);
        sources.iter().filter_map(Weak::upgrade).collect()
    }
}

/// Encodes the cache and handler gauges of the live informers at each scrape.
pub(crate) struct CacheCollector {
    sources: Arc<Sources>,
}

impl CacheCollector {
    pub(crate) fn new(sources: Arc<Sources>) -> Self {
        CacheCollector { sources }
    }
}

impl fmt::Debug for CacheCollector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CacheCollector")
            .field("informers", &self.sources.len())
            .finish()
    }
}

impl Collector for CacheCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), fmt::Error> {
        let snapshot = SourceSnapshot::default();
        // Taken out of the lock first: an informer reports under its own locks.
        for source in self.sources.live() {
            source.snapshot(&snapshot);
        }
        let families: [(&str, &str, &dyn EncodeMetric, MetricType); 5] = [
            (
                "informer_cache_objects",
                "Number of objects in the informer's cache",
                &snapshot.objects,
                MetricType::Gauge,
            ),
            (
                "informer_cache_bytes",
                "Approximate size in bytes of the objects in the informer's cache, in their \
                 JSON form",
                &snapshot.bytes,
                MetricType::Gauge,
            ),
            (
                "informer_handler_buffer_length",
                "Number of notifications waiting in an event handler's buffer",
                &snapshot.buffers,
                MetricType::Gauge,
            ),
            (
                "informer_failed",
                "1 while the informer is stopped by a panic (PanicPolicy::Stop), else 0",
                &snapshot.failed,
                MetricType::Gauge,
            ),
            (
                "informer_panics",
                "Panics in the informer's transform, index functions, handlers or reflector",
                &snapshot.panics,
                MetricType::Counter,
            ),
        ];
        for (name, help, family, kind) in families {
            let metric = encoder.encode_descriptor(name, help, None, kind)?;
            family.encode(metric)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::registry::Registry;

    struct Fake {
        name: &'static str,
        objects: usize,
        handlers: Vec<(&'static str, usize)>,
    }

    impl InformerSource for Fake {
        fn snapshot(&self, snapshot: &SourceSnapshot) {
            snapshot.cache(self.name, self.objects, Some(self.objects as u64 * 100));
            for (handler, pending) in &self.handlers {
                snapshot.handler(self.name, handler, *pending);
            }
        }
    }

    fn scrape(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    }

    #[test]
    fn live_informers_are_read_at_scrape_time() {
        let mut registry = Registry::default();
        let sources = Arc::new(Sources::default());
        registry.register_collector(Box::new(CacheCollector::new(sources.clone())));
        let pods: Arc<dyn InformerSource> = Arc::new(Fake {
            name: "pods",
            objects: 3,
            handlers: vec![("0", 2), ("audit", 0)],
        });
        let more_pods: Arc<dyn InformerSource> = Arc::new(Fake {
            name: "pods",
            objects: 1,
            handlers: vec![("0", 5)],
        });
        sources.add(Arc::downgrade(&pods));
        sources.add(Arc::downgrade(&more_pods));

        let text = scrape(&registry);
        for expected in [
            "# TYPE informer_cache_objects gauge",
            r#"informer_cache_objects{name="pods"} 4"#,
            r#"informer_cache_bytes{name="pods"} 400"#,
            r#"informer_handler_buffer_length{name="pods",handler="0"} 7"#,
            r#"informer_handler_buffer_length{name="pods",handler="audit"} 0"#,
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }

        drop((pods, more_pods));
        let text = scrape(&registry);
        assert!(
            !text.contains(r#"name="pods""#),
            "series left behind:\n{text}"
        );
        assert_eq!(sources.len(), 0);
    }
}
