//! Request metrics with client-go's Prometheus names, opt-in through
//! [`RestClientBuilder::metrics`](crate::RestClientBuilder::metrics).
//!
//! client-go exposes hooks (`tools/metrics/metrics.go`) that component-base fills with
//! Prometheus collectors (`component-base/metrics/prometheus/restclient`). This module is that
//! pair for `prometheus-client`, with the same names, labels and buckets:
//!
//! | metric | type | labels | observed |
//! |---|---|---|---|
//! | `rest_client_request_duration_seconds` | histogram | `verb`, `host` | once per call, throttle wait and retries included |
//! | `rest_client_requests_total` | counter | `code`, `method`, `host` | once per attempt (`code` is `<error>` without a response) |
//! | `rest_client_rate_limiter_duration_seconds` | histogram | `verb`, `host` | once per throttle wait |
//! | `rest_client_request_retries_total` | counter | `code`, `verb`, `host` | once per retry |
//! | `rest_client_undecodable_items_total` | counter | `host` | once per list item skipped because it did not decode (not in client-go, which fails the whole list) |
//!
//! `verb` and `method` are the HTTP method, `host` the server's `host:port`. A client built
//! without a registry holds no metrics and pays one branch per observation.

use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

/// Buckets of both latency histograms (component-base's restclient metrics).
pub const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct VerbHost {
    verb: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Host {
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeMethodHost {
    code: String,
    method: String,
    host: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeVerbHost {
    code: String,
    verb: String,
    host: String,
}

type LatencyFamily = Family<VerbHost, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    Histogram::new(LATENCY_BUCKETS)
}

/// The REST client's metric families, registered in a [`Registry`].
#[derive(Clone, Debug)]
pub struct Metrics {
    request_duration: LatencyFamily,
    requests: Family<CodeMethodHost, Counter>,
    rate_limiter_duration: LatencyFamily,
    retries: Family<CodeVerbHost, Counter>,
    undecodable_items: Family<Host, Counter>,
}

impl Metrics {
    /// Creates the families and registers them in `registry`.
    pub fn register(registry: &mut Registry) -> Metrics {
        let metrics = Metrics {
            request_duration: Family::new_with_constructor(latency_histogram),
            requests: Family::default(),
            rate_limiter_duration: Family::new_with_constructor(latency_histogram),
            retries: Family::default(),
            undecodable_items: Family::default(),
        };
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb, and host.",
            metrics.request_duration.clone(),
        );
        // prometheus-client appends `_total` to counters.
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host.",
            metrics.requests.clone(),
        );
        registry.register(
            "rest_client_rate_limiter_duration_seconds",
            "Client side rate limiter latency in seconds. Broken down by verb, and host.",
            metrics.rate_limiter_duration.clone(),
        );
        registry.register(
            "rest_client_request_retries",
            "Number of request retries, partitioned by status code, verb, and host.",
            metrics.retries.clone(),
        );
        registry.register(
            "rest_client_undecodable_items",
            "Number of list items skipped because they did not decode, partitioned by host.",
            metrics.undecodable_items.clone(),
        );
        metrics
    }

    pub(crate) fn count_undecodable_item(&self, host: &str) {
        self.undecodable_items
            .get_or_create(&Host {
                host: host.to_owned(),
            })
            .inc();
    }

    pub(crate) fn observe_request(&self, verb: &str, host: &str, latency: Duration) {
        self.request_duration
            .get_or_create(&VerbHost {
                verb: verb.to_owned(),
                host: host.to_owned(),
            })
            .observe(latency.as_secs_f64());
    }

    pub(crate) fn observe_rate_limiter(&self, verb: &str, host: &str, latency: Duration) {
        self.rate_limiter_duration
            .get_or_create(&VerbHost {
                verb: verb.to_owned(),
                host: host.to_owned(),
            })
            .observe(latency.as_secs_f64());
    }

    /// `code` is the status code, or `None` when there was no response.
    pub(crate) fn count_result(&self, code: Option<u16>, method: &str, host: &str) {
        self.requests
            .get_or_create(&CodeMethodHost {
                code: code_label(code),
                method: method.to_owned(),
                host: host.to_owned(),
            })
            .inc();
    }

    pub(crate) fn count_retry(&self, code: Option<u16>, verb: &str, host: &str) {
        self.retries
            .get_or_create(&CodeVerbHost {
                code: code_label(code),
                verb: verb.to_owned(),
                host: host.to_owned(),
            })
            .inc();
    }
}

fn code_label(code: Option<u16>) -> String {
    code.map_or_else(|| "<error>".to_owned(), |c| c.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_labels_follow_client_go() {
        let mut registry = Registry::default();
        let metrics = Metrics::register(&mut registry);
        metrics.observe_request("GET", "10.0.0.1:6443", Duration::from_millis(30));
        metrics.observe_rate_limiter("GET", "10.0.0.1:6443", Duration::ZERO);
        metrics.count_result(Some(200), "GET", "10.0.0.1:6443");
        metrics.count_result(None, "POST", "10.0.0.1:6443");
        metrics.count_retry(Some(429), "GET", "10.0.0.1:6443");
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        for expected in [
            r#"rest_client_request_duration_seconds_bucket{le="0.1",verb="GET",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_request_duration_seconds_bucket{le="0.025",verb="GET",host="10.0.0.1:6443"} 0"#,
            r#"rest_client_rate_limiter_duration_seconds_count{verb="GET",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_requests_total{code="200",method="GET",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_requests_total{code="<error>",method="POST",host="10.0.0.1:6443"} 1"#,
            r#"rest_client_request_retries_total{code="429",verb="GET",host="10.0.0.1:6443"} 1"#,
        ] {
            assert!(text.contains(expected), "{expected} missing from\n{text}");
        }
    }
}
