//! The REST client's part of a key's journey (see the `clientgo-flightrecorder` crate): one
//! `http` span per request, from the first throttle wait to the response (to the headers for
//! a watch or a stream), under the target `clientgo_rest::journey` at `TRACE` level.
//!
//! Its fields follow OpenTelemetry's HTTP semantic conventions, so that a program that adds
//! `tracing-opentelemetry` gets standard client spans: `http.request.method`, `url.path`
//! (the path only: a query may carry secrets), `server.address`, `server.port`,
//! `http.response.status_code`, `error.type`; and the Kubernetes request: `k8s.verb`,
//! `k8s.resource`, `k8s.namespace`, `k8s.name`, with the `retries` made and the time spent
//! in the client's throttle (`throttle_wait_us`). Never a header, a token or a body.
//! Numbers are recorded as `i64`: OpenTelemetry's attributes have no unsigned integer, and
//! `tracing-opentelemetry` exports a `u64` field as a string.
//! client-go has no spans of its own (its `rest` package logs and counts).

use clientgo_journey::{Stage, target};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tracing::Span;
use tracing::field::Empty;

use crate::request::Request;
use crate::retry::Mode;

/// A request's span, and what is recorded on it as the request goes.
pub(super) struct Journey {
    pub(super) span: Span,
    throttled_us: AtomicU64,
}

/// The Kubernetes verb of a request.
fn verb(request: &Request, mode: Mode) -> &'static str {
    let named = !request.name.is_empty();
    match (request.method.as_str(), mode, named) {
        (_, Mode::Watch, _) => "watch",
        ("GET", _, true) => "get",
        ("GET", _, false) => "list",
        ("POST", _, _) => "create",
        ("PUT", _, _) => "update",
        ("PATCH", _, _) => "patch",
        ("DELETE", _, true) => "delete",
        ("DELETE", _, false) => "deletecollection",
        _ => "",
    }
}

/// The namespace in a request's path (`.../namespaces/<ns>/<resource>...`).
fn namespace<'a>(request: &Request, path: &'a str) -> &'a str {
    if request.resource == "namespaces" {
        return "";
    }
    path.split_once("/namespaces/")
        .and_then(|(_, rest)| rest.split_once('/'))
        .map_or("", |(namespace, _)| namespace)
}

impl Journey {
    pub(super) fn new(request: &Request, mode: Mode, uri: &http::Uri) -> Journey {
        let span = tracing::trace_span!(target: target::REST, "http",
            stage = Stage::Http.name(),
            "http.request.method" = request.method.as_str(),
            "url.path" = uri.path(),
            "server.address" = uri.host().unwrap_or(""),
            "server.port" = uri.port_u16().map(i64::from),
            "k8s.verb" = verb(request, mode),
            "k8s.resource" = request.resource.as_str(),
            "k8s.namespace" = namespace(request, uri.path()),
            "k8s.name" = request.name.as_str(),
            "http.response.status_code" = Empty,
            "error.type" = Empty,
            retries = Empty,
            throttle_wait_us = Empty,
        );
        Journey {
            span,
            throttled_us: AtomicU64::new(0),
        }
    }

    /// Time spent waiting for the client's throttle.
    pub(super) fn throttled(&self, waited: Duration) {
        if self.span.is_disabled() {
            return;
        }
        let waited = u64::try_from(waited.as_micros()).unwrap_or(u64::MAX);
        let total = self.throttled_us.fetch_add(waited, Ordering::Relaxed) + waited;
        self.span
            .record("throttle_wait_us", i64::try_from(total).unwrap_or(i64::MAX));
    }

    /// The final response's status, and the retries it took.
    pub(super) fn responded(&self, status: u16, retries: u32) {
        self.span
            .record("http.response.status_code", i64::from(status));
        self.span.record("retries", i64::from(retries));
    }

    /// A request that ended without a response: `error.type` names the kind of failure.
    pub(super) fn failed(&self, kind: &dyn std::fmt::Debug, retries: u32) {
        if self.span.is_disabled() {
            return;
        }
        self.span.record("error.type", tracing::field::debug(kind));
        self.span.record("retries", i64::from(retries));
    }
}
