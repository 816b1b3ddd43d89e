//! The reflector's metric families and the per-reflector handles it records into.
//!
//! A reflector resolves its handles once, when it is built ([`ReflectorMetrics::new`]):
//! recording is then an atomic operation on a shared counter, gauge or histogram, with no
//! label lookup. The families count how many live reflectors use each name; when the last one
//! is dropped, the name's series are removed (client-go's reflector metrics leaked them).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Buckets of `reflector_list_duration_seconds` (those of the REST client's latencies).
const LIST_DURATION_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

/// Buckets of `reflector_watch_duration_seconds`: watches last 5 to 10 minutes when healthy.
const WATCH_DURATION_BUCKETS: [f64; 10] = [
    1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 450.0, 600.0, 900.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameLabel {
    name: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct NameReason {
    name: String,
    reason: &'static str,
}

/// Why a watch ended in a way that calls for a new list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RelistReason {
    /// 410 Gone/Expired: the resourceVersion was compacted away.
    Expired,
    /// The watch ended within a second without any event.
    ShortWatch,
    /// Another `ERROR` event, an undecodable stream, or a failed watch request.
    WatchError,
}

impl RelistReason {
    const ALL: [RelistReason; 3] = [
        RelistReason::Expired,
        RelistReason::ShortWatch,
        RelistReason::WatchError,
    ];

    fn label(self) -> &'static str {
        match self {
            RelistReason::Expired => "expired",
            RelistReason::ShortWatch => "short_watch",
            RelistReason::WatchError => "watch_error",
        }
    }
}

/// Why a streaming list was given up for LIST+WATCH.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FallbackReason {
    /// The server rejected the request or ended it with an error.
    Error,
    /// The closing bookmark did not arrive in time.
    Timeout,
    /// The stream ended within a second without any event.
    ShortWatch,
    /// The stream could not be decoded.
    Undecodable,
}

impl FallbackReason {
    const ALL: [FallbackReason; 4] = [
        FallbackReason::Error,
        FallbackReason::Timeout,
        FallbackReason::ShortWatch,
        FallbackReason::Undecodable,
    ];

    fn label(self) -> &'static str {
        match self {
            FallbackReason::Error => "error",
            FallbackReason::Timeout => "timeout",
            FallbackReason::ShortWatch => "short_watch",
            FallbackReason::Undecodable => "undecodable",
        }
    }
}

type HistogramFamily = Family<NameLabel, Histogram, fn() -> Histogram>;

fn list_duration_histogram() -> Histogram {
    Histogram::new(LIST_DURATION_BUCKETS)
}

fn watch_duration_histogram() -> Histogram {
    Histogram::new(WATCH_DURATION_BUCKETS)
}

/// 1, 4, 16, ... 262,144 items.
fn items_histogram() -> Histogram {
    Histogram::new(exponential_buckets(1.0, 4.0, 10))
}

/// The reflector families of one registry.
pub(crate) struct ReflectorFamilies {
    lists: Family<NameLabel, Counter>,
    list_duration: HistogramFamily,
    items_per_list: HistogramFamily,
    watches: Family<NameLabel, Counter>,
    short_watches: Family<NameLabel, Counter>,
    watch_duration: HistogramFamily,
    items_per_watch: HistogramFamily,
    last_resource_version: Family<NameLabel, Gauge>,
    relists: Family<NameReason, Counter>,
    watch_lists: Family<NameLabel, Counter>,
    watch_list_fallbacks: Family<NameReason, Counter>,
    /// How many live reflectors use each name.
    users: Mutex<HashMap<String, usize>>,
}

impl ReflectorFamilies {
    pub(crate) fn register(registry: &mut Registry) -> ReflectorFamilies {
        let families = ReflectorFamilies {
            lists: Family::default(),
            list_duration: Family::new_with_constructor(list_duration_histogram),
            items_per_list: Family::new_with_constructor(items_histogram),
            watches: Family::default(),
            short_watches: Family::default(),
            watch_duration: Family::new_with_constructor(watch_duration_histogram),
            items_per_watch: Family::new_with_constructor(items_histogram),
            last_resource_version: Family::default(),
            relists: Family::default(),
            watch_lists: Family::default(),
            watch_list_fallbacks: Family::default(),
            users: Mutex::new(HashMap::new()),
        };
        // prometheus-client appends `_total` to counters.
        registry.register(
            "reflector_lists",
            "Total number of API lists done by the reflectors",
            families.lists.clone(),
        );
        registry.register(
            "reflector_list_duration_seconds",
            "How long an API list takes to return and decode for the reflectors",
            families.list_duration.clone(),
        );
        registry.register(
            "reflector_items_per_list",
            "How many items an API list returns to the reflectors",
            families.items_per_list.clone(),
        );
        registry.register(
            "reflector_watches",
            "Total number of API watches done by the reflectors",
            families.watches.clone(),
        );
        registry.register(
            "reflector_short_watches",
            "Total number of short API watches done by the reflectors",
            families.short_watches.clone(),
        );
        registry.register(
            "reflector_watch_duration_seconds",
            "How long an API watch takes to return and decode for the reflectors",
            families.watch_duration.clone(),
        );
        registry.register(
            "reflector_items_per_watch",
            "How many items an API watch returns to the reflectors",
            families.items_per_watch.clone(),
        );
        registry.register(
            "reflector_last_resource_version",
            "Last resource version seen for the reflectors",
            families.last_resource_version.clone(),
        );
        registry.register(
            "reflector_relists",
            "Number of watches that ended in a way that calls for a new list, by reason",
            families.relists.clone(),
        );
        registry.register(
            "reflector_watch_lists",
            "Number of streaming list requests (sendInitialEvents) done by the reflectors",
            families.watch_lists.clone(),
        );
        registry.register(
            "reflector_watch_list_fallbacks",
            "Number of streaming lists given up for LIST and WATCH, by reason",
            families.watch_list_fallbacks.clone(),
        );
        families
    }

    /// Removes every series of `name`.
    fn remove(&self, name: &str) {
        let label = NameLabel {
            name: name.to_owned(),
        };
        self.lists.remove(&label);
        self.list_duration.remove(&label);
        self.items_per_list.remove(&label);
        self.watches.remove(&label);
        self.short_watches.remove(&label);
        self.watch_duration.remove(&label);
        self.items_per_watch.remove(&label);
        self.last_resource_version.remove(&label);
        self.watch_lists.remove(&label);
        for reason in RelistReason::ALL {
            self.relists.remove(&name_reason(name, reason.label()));
        }
        for reason in FallbackReason::ALL {
            self.watch_list_fallbacks
                .remove(&name_reason(name, reason.label()));
        }
    }
}

fn name_reason(name: &str, reason: &'static str) -> NameReason {
    NameReason {
        name: name.to_owned(),
        reason,
    }
}

/// What one reflector records into: handles resolved once, by name.
pub(crate) struct ReflectorMetrics {
    families: Arc<ReflectorFamilies>,
    name: String,
    lists: Counter,
    list_duration: Histogram,
    items_per_list: Histogram,
    watches: Counter,
    short_watches: Counter,
    watch_duration: Histogram,
    items_per_watch: Histogram,
    last_resource_version: Gauge,
    /// Indexed by [`RelistReason`] (declaration order, as in [`RelistReason::ALL`]).
    relists: [Counter; 3],
    watch_lists: Counter,
    /// Indexed by [`FallbackReason`] (declaration order, as in [`FallbackReason::ALL`]).
    watch_list_fallbacks: [Counter; 4],
}

impl ReflectorMetrics {
    pub(crate) fn new(families: Arc<ReflectorFamilies>, name: &str) -> ReflectorMetrics {
        // Under the users lock, so that a concurrent drop of the last user of the name
        // cannot remove the series between their creation and the count.
        let mut users = families.users.lock();
        *users.entry(name.to_owned()).or_default() += 1;
        let label = NameLabel {
            name: name.to_owned(),
        };
        let metrics = ReflectorMetrics {
            name: name.to_owned(),
            lists: families.lists.get_or_create_owned(&label),
            list_duration: families.list_duration.get_or_create_owned(&label),
            items_per_list: families.items_per_list.get_or_create_owned(&label),
            watches: families.watches.get_or_create_owned(&label),
            short_watches: families.short_watches.get_or_create_owned(&label),
            watch_duration: families.watch_duration.get_or_create_owned(&label),
            items_per_watch: families.items_per_watch.get_or_create_owned(&label),
            last_resource_version: families.last_resource_version.get_or_create_owned(&label),
            relists: RelistReason::ALL.map(|reason| {
                families
                    .relists
                    .get_or_create_owned(&name_reason(name, reason.label()))
            }),
            watch_lists: families.watch_lists.get_or_create_owned(&label),
            watch_list_fallbacks: FallbackReason::ALL.map(|reason| {
                families
                    .watch_list_fallbacks
                    .get_or_create_owned(&name_reason(name, reason.label()))
            }),
            families: families.clone(),
        };
        drop(users);
        metrics
    }

    /// A LIST request is about to be sent.
    pub(crate) fn list_started(&self) {
        self.lists.inc();
    }

    /// A list (or a streaming list) completed with `items` items after `elapsed`.
    pub(crate) fn listed(&self, elapsed: Duration, items: usize) {
        self.list_duration.observe(elapsed.as_secs_f64());
        self.items_per_list.observe(items as f64);
    }

    /// A WATCH request is about to be sent.
    pub(crate) fn watch_started(&self) {
        self.watches.inc();
    }

    /// A watch stream ended after `elapsed`, having delivered `events` events.
    pub(crate) fn watch_ended(&self, elapsed: Duration, events: u64, short: bool) {
        self.watch_duration.observe(elapsed.as_secs_f64());
        self.items_per_watch.observe(events as f64);
        if short {
            self.short_watches.inc();
        }
    }

    /// The reflector synced to `resource_version`; ignored unless it is an integer.
    pub(crate) fn synced_to(&self, resource_version: &str) {
        if let Ok(rv) = resource_version.parse::<i64>() {
            self.last_resource_version.set(rv);
        }
    }

    /// A watch ended in a way that calls for a new list.
    pub(crate) fn relist(&self, reason: RelistReason) {
        self.relists[reason as usize].inc();
    }

    /// A streaming list request is about to be sent.
    pub(crate) fn watch_list_started(&self) {
        self.watch_lists.inc();
    }

    /// A streaming list was given up for LIST+WATCH.
    pub(crate) fn watch_list_fallback(&self, reason: FallbackReason) {
        self.watch_list_fallbacks[reason as usize].inc();
    }
}

impl Drop for ReflectorMetrics {
    fn drop(&mut self) {
        let mut users = self.families.users.lock();
        let last = match users.get_mut(&self.name) {
            Some(count) if *count > 1 => {
                *count -= 1;
                false
            }
            _ => true,
        };
        if last {
            users.remove(&self.name);
            self.families.remove(&self.name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scrape(registry: &Registry) -> String {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, registry).unwrap();
        text
    }

    #[test]
    fn names_labels_and_values_follow_client_go() {
        let mut registry = Registry::default();
        let families = Arc::new(ReflectorFamilies::register(&mut registry));
        let metrics = ReflectorMetrics::new(families, "pods");
        metrics.list_started();
        metrics.list_started();
        metrics.listed(Duration::from_millis(80), 3);
        metrics.watch_started();
        metrics.watch_ended(Duration::from_millis(200), 0, true);
        metrics.watch_started();
        metrics.watch_ended(Duration::from_secs(310), 7, false);
        metrics.synced_to("12345");
        metrics.synced_to("not-a-number");
        metrics.relist(RelistReason::Expired);
        metrics.relist(RelistReason::Expired);
        metrics.relist(RelistReason::ShortWatch);
        metrics.watch_list_started();
        metrics.watch_list_fallback(FallbackReason::Timeout);

        let text = scrape(&registry);
        for expected in [
            r#"reflector_lists_total{name="pods"} 2"#,
            r#"reflector_list_duration_seconds_count{name="pods"} 1"#,
            r#"reflector_list_duration_seconds_bucket{le="0.1",name="pods"} 1"#,
            r#"reflector_list_duration_seconds_bucket{le="0.025",name="pods"} 0"#,
            r#"reflector_items_per_list_sum{name="pods"} 3.0"#,
            r#"reflector_watches_total{name="pods"} 2"#,
            r#"reflector_short_watches_total{name="pods"} 1"#,
            r#"reflector_watch_duration_seconds_count{name="pods"} 2"#,
            r#"reflector_watch_duration_seconds_bucket{le="300.0",name="pods"} 1"#,
            r#"reflector_items_per_watch_sum{name="pods"} 7.0"#,
            r#"reflector_last_resource_version{name="pods"} 12345"#,
            r#"reflector_relists_total{name="pods",reason="expired"} 2"#,
            r#"reflector_relists_total{name="pods",reason="short_watch"} 1"#,
            r#"reflector_relists_total{name="pods",reason="watch_error"} 0"#,
            r#"reflector_watch_lists_total{name="pods"} 1"#,
            r#"reflector_watch_list_fallbacks_total{name="pods",reason="timeout"} 1"#,
            r#"reflector_watch_list_fallbacks_total{name="pods",reason="error"} 0"#,
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }
    }

    #[test]
    fn series_go_with_the_last_reflector_of_a_name() {
        let mut registry = Registry::default();
        let families = Arc::new(ReflectorFamilies::register(&mut registry));
        let first = ReflectorMetrics::new(families.clone(), "cms");
        let second = ReflectorMetrics::new(families.clone(), "cms");
        first.list_started();
        second.list_started();
        assert!(scrape(&registry).contains(r#"reflector_lists_total{name="cms"} 2"#));

        drop(first);
        let text = scrape(&registry);
        assert!(
            text.contains(r#"reflector_lists_total{name="cms"} 2"#),
            "still used by the second reflector:\n{text}"
        );
        drop(second);
        let text = scrape(&registry);
        assert!(
            !text.contains(r#"name="cms""#),
            "series left behind:\n{text}"
        );

        // A new reflector with the name starts from zero.
        let third = ReflectorMetrics::new(families, "cms");
        third.list_started();
        assert!(scrape(&registry).contains(r#"reflector_lists_total{name="cms"} 1"#));
    }
}
