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

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};

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
            ListWatchError::Decode(_) => FailureKind::Decode,
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

/// The shared record: written by the reflector's loop, read by anyone.
#[derive(Debug, Default)]
pub(crate) struct FailureRecord {
    last: Mutex<Option<ReflectorFailure>>,
    /// Whether `last` is set, so that clearing costs no lock on the event path.
    set: AtomicBool,
}

impl FailureRecord {
    pub(crate) fn record(&self, operation: ReflectorOperation, kind: FailureKind, message: String) {
        *self.last.lock() = Some(ReflectorFailure {
            operation,
            kind,
            message,
        });
        self.set.store(true, Ordering::Release);
    }

    pub(crate) fn record_error(&self, operation: ReflectorOperation, error: &ListWatchError) {
        self.record(operation, FailureKind::of(error), error.to_string());
    }

    pub(crate) fn clear(&self) {
        // A plain load first: this runs on every watch event, and is almost always a no-op.
        if self.set.load(Ordering::Acquire) && self.set.swap(false, Ordering::AcqRel) {
            *self.last.lock() = None;
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
