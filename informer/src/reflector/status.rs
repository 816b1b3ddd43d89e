//! What went wrong last: the reflector's failure record, for telling a user why a cache is
//! not synced.
//!
//! client-go has no such record: its reflector logs each failure and hands list-and-watch
//! errors to the watch error handler, so `WaitForCacheSync` can only say "timed out". Here
//! every failed list, watch or streaming list is classified ([`FailureKind`]) and kept
//! ([`ReflectorFailure`]) until the store is next brought up to date (a successful list or
//! streaming list) or a watch delivers an event, so a caller waiting for the cache can report
//! "forbidden", "not found" (the resource is not served), "throttled" or "server silent"
//! instead of an endless wait.
//!
//! The record also decides what reaches the log, so that a reflector that cannot reach its
//! server, or may not list its resource, says so at once and does not flood the log: the
//! first failure and every change of its kind are logged at WARN with the cause and what to
//! check; repeats of the same kind at DEBUG, with one WARN reminder a minute; the first
//! success after failures at INFO. client-go logs every failed attempt (its
//! `DefaultWatchErrorHandler`), which is either silent (connection errors at high verbosity)
//! or ten lines a second for a missing RBAC right. Expired resourceVersions are routine (a
//! relist follows) and stay at DEBUG.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use clientgo_watch::WatchError;
use parking_lot::Mutex;

use crate::listwatch::ListWatchError;

/// The request that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReflectorOperation {
    /// A LIST (any page of it).
    List,
    /// A WATCH, or its stream.
    Watch,
    /// A streaming list (a watch with `sendInitialEvents=true`).
    WatchList,
}

impl fmt::Display for ReflectorOperation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ReflectorOperation::List => "list",
            ReflectorOperation::Watch => "watch",
            ReflectorOperation::WatchList => "streaming list",
        })
    }
}

/// What kind of failure it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FailureKind {
    /// 404: the resource is not served (a CRD not installed, a wrong group or version).
    NotFound,
    /// 403: the credentials may not list or watch this resource.
    Forbidden,
    /// 401: the server does not accept the credentials.
    Unauthorized,
    /// 429: the server (API priority and fairness) asks us to slow down.
    Throttled,
    /// 410: the resourceVersion is too old (a relist follows), or too new for the server.
    Expired,
    /// The server refused the connection.
    ConnectionRefused,
    /// No usable answer: connection reset, TLS, timeout.
    Transport,
    /// The server sent something that does not decode.
    Decode,
    /// The server stopped sending: a stalled watch, a watch that closed at once with
    /// nothing in it, or a streaming list without its closing bookmark.
    ServerSilent,
    /// A 5xx from the server.
    ServerError,
    /// Any other error status.
    Other,
}

impl FailureKind {
    /// Classifies a list or watch request error.
    pub fn of(error: &ListWatchError) -> FailureKind {
        match error {
            ListWatchError::Transport(_) if error.is_connection_refused() => {
                FailureKind::ConnectionRefused
            }
            ListWatchError::Transport(_) => FailureKind::Transport,
            // An answer that cannot be used as it is, like one that does not decode.
            ListWatchError::Decode(_) | ListWatchError::TooLarge(_) => FailureKind::Decode,
            ListWatchError::Status(_) if error.is_not_found() => FailureKind::NotFound,
            ListWatchError::Status(_) if error.is_forbidden() => FailureKind::Forbidden,
            ListWatchError::Status(_) if error.is_unauthorized() => FailureKind::Unauthorized,
            ListWatchError::Status(_) if error.is_too_many_requests() => FailureKind::Throttled,
            ListWatchError::Status(_)
                if error.is_expired() || error.is_too_large_resource_version() =>
            {
                FailureKind::Expired
            }
            ListWatchError::Status(_) if error.code() >= 500 => FailureKind::ServerError,
            ListWatchError::Status(_) => FailureKind::Other,
        }
    }

    /// Classifies the way a watch stream failed.
    pub(crate) fn of_stream(error: &WatchError) -> FailureKind {
        match error {
            WatchError::Transport(_) | WatchError::Truncated { .. } => FailureKind::Transport,
            WatchError::Frame(_) | WatchError::Decode { .. } => FailureKind::Decode,
            WatchError::Stalled { .. } => FailureKind::ServerSilent,
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailureKind::NotFound => "not found",
            FailureKind::Forbidden => "forbidden",
            FailureKind::Unauthorized => "unauthorized",
            FailureKind::Throttled => "throttled",
            FailureKind::Expired => "expired",
            FailureKind::ConnectionRefused => "connection refused",
            FailureKind::Transport => "transport error",
            FailureKind::Decode => "decode error",
            FailureKind::ServerSilent => "server silent",
            FailureKind::ServerError => "server error",
            FailureKind::Other => "error",
        })
    }
}

/// The last failure a reflector met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReflectorFailure {
    /// The request that failed.
    pub operation: ReflectorOperation,
    /// What kind of failure it was.
    pub kind: FailureKind,
    /// The error's text.
    pub message: String,
}

impl fmt::Display for ReflectorFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} failed ({}): {}",
            self.operation, self.kind, self.message
        )
    }
}

/// How often a failure that keeps repeating is logged again at WARN.
pub(crate) const REPEAT_WARNING_INTERVAL: Duration = Duration::from_secs(60);

/// The shared record: written by the reflector's loop, read by anyone.
#[derive(Debug, Default)]
pub(crate) struct FailureRecord {
    /// The reflector's name, for the log.
    name: String,
    last: Mutex<Option<ReflectorFailure>>,
    /// Whether `last` is set, so that clearing costs no lock on the event path.
    set: AtomicBool,
    log: Mutex<LogState>,
}

/// What was last logged at WARN, and what has been held back since.
#[derive(Debug, Default)]
struct LogState {
    /// The kind of the failures being reported, and when they were last logged at WARN.
    reported: Option<(FailureKind, Instant)>,
    /// Failures since the last WARN line.
    held_back: u64,
    /// Failures since the last success.
    failures: u64,
}

/// What to check, for the failures a user can do something about.
fn hint(kind: FailureKind) -> &'static str {
    match kind {
        FailureKind::Forbidden => " (check this client's RBAC rights to list and watch it)",
        FailureKind::NotFound => " (the resource is not served: is its CRD installed?)",
        FailureKind::Unauthorized => " (the server does not accept this client's credentials)",
        FailureKind::ConnectionRefused => " (is the API server running and reachable?)",
        _ => "",
    }
}

impl FailureRecord {
    pub(crate) fn named(name: &str) -> Self {
        FailureRecord {
            name: name.to_owned(),
            ..FailureRecord::default()
        }
    }

    pub(crate) fn record(&self, operation: ReflectorOperation, kind: FailureKind, message: String) {
        self.log_failure(operation, kind, &message);
        *self.last.lock() = Some(ReflectorFailure {
            operation,
            kind,
            message,
        });
        self.set.store(true, Ordering::Release);
    }

    fn log_failure(&self, operation: ReflectorOperation, kind: FailureKind, message: &str) {
        let name = &self.name;
        if kind == FailureKind::Expired {
            tracing::debug!(reflector = %name, %operation, %message, "resourceVersion expired");
            return;
        }
        let now = Instant::now();
        let mut log = self.log.lock();
        log.failures += 1;
        match log.reported {
            Some((reported, at))
                if reported == kind && now.duration_since(at) < REPEAT_WARNING_INTERVAL =>
            {
                log.held_back += 1;
                tracing::debug!(reflector = %name, %operation, %kind, %message, "still failing");
            }
            Some((reported, _)) if reported == kind => {
                let repeats = std::mem::take(&mut log.held_back);
                log.reported = Some((kind, now));
                tracing::warn!(
                    "{name}: {operation} still failing ({kind}, {repeats} more time(s) in the \
                     last minute): {message}{}",
                    hint(kind)
                );
            }
            _ => {
                log.held_back = 0;
                log.reported = Some((kind, now));
                tracing::warn!(
                    "{name}: {operation} failed ({kind}): {message}{}",
                    hint(kind)
                );
            }
        }
    }

    pub(crate) fn record_error(&self, operation: ReflectorOperation, error: &ListWatchError) {
        self.record(operation, FailureKind::of(error), error.to_string());
    }

    pub(crate) fn clear(&self) {
        // A plain load first: this runs on every watch event, and is almost always a no-op.
        if self.set.load(Ordering::Acquire) && self.set.swap(false, Ordering::AcqRel) {
            *self.last.lock() = None;
            let mut log = self.log.lock();
            if log.reported.is_some() {
                tracing::info!(
                    "{}: recovered after {} failed attempt(s)",
                    self.name,
                    log.failures
                );
            }
            *log = LogState::default();
        }
    }

    pub(crate) fn get(&self) -> Option<ReflectorFailure> {
        self.last.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::{Status, StatusReason};

    fn kind(code: i32, reason: StatusReason) -> FailureKind {
        FailureKind::of(&Status::failure(code, reason, "x").into())
    }

    #[test]
    fn classification() {
        assert_eq!(kind(404, StatusReason::NotFound), FailureKind::NotFound);
        assert_eq!(kind(403, StatusReason::Forbidden), FailureKind::Forbidden);
        assert_eq!(
            kind(401, StatusReason::Unauthorized),
            FailureKind::Unauthorized
        );
        assert_eq!(
            kind(429, StatusReason::TooManyRequests),
            FailureKind::Throttled
        );
        assert_eq!(kind(410, StatusReason::Expired), FailureKind::Expired);
        assert_eq!(
            kind(503, StatusReason::ServiceUnavailable),
            FailureKind::ServerError
        );
        assert_eq!(kind(422, StatusReason::Invalid), FailureKind::Other);
        let refused = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        assert_eq!(
            FailureKind::of(&ListWatchError::Transport(Box::new(refused))),
            FailureKind::ConnectionRefused
        );
        assert_eq!(
            FailureKind::of(&ListWatchError::Decode("bad json".into())),
            FailureKind::Decode
        );
        let stalled = WatchError::Stalled {
            idle: std::time::Duration::from_secs(1),
        };
        assert_eq!(FailureKind::of_stream(&stalled), FailureKind::ServerSilent);
    }

    #[test]
    fn record_clear_and_display() {
        let record = FailureRecord::default();
        assert_eq!(record.get(), None);
        let error = Status::failure(403, StatusReason::Forbidden, "pods is forbidden").into();
        record.record_error(ReflectorOperation::List, &error);
        assert_eq!(
            record.get().unwrap().to_string(),
            "list failed (forbidden): pods is forbidden (Forbidden, code 403)"
        );
        record.clear();
        assert_eq!(record.get(), None);
        record.clear();
    }
}
