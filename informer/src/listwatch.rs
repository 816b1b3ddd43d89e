//! What a reflector lists and watches through: [`ListerWatcher`] and its error
//! ([`ListWatchError`]). Its requests take the REST client's options, [`ListParams`] and
//! [`WatchParams`]: the same types [`ResourceClient::list`] and [`ResourceClient::watch`] take,
//! so options tweaked for an informer and options of a hand-made list are one vocabulary.
//!
//! Mirrors client-go's `tools/cache/listwatch.go` (`ListerWatcher`, `ListWatch`). The REST
//! client implements [`ListerWatcher`] for a collection through [`ListWatch`](crate::ListWatch)
//! (`GET …/<resource>` and `GET …/<resource>?watch=true`); tests implement it with scripted
//! fakes.
//!
//! Where it differs from client-go, and why:
//!
//! * Go passes one `metav1.ListOptions` to both calls; here a LIST takes the list half of it
//!   ([`ListParams`]) and a WATCH the watch half ([`WatchParams`]), so a watch cannot carry a
//!   `limit` or a `continue` token, and a list cannot ask for bookmarks or initial events.
//!   Each renders to exactly the query parameters the API server reads for that verb.
//! * client-go's `ToListWatcherWithWatchListSemantics` wrapper marks clients that cannot serve
//!   streaming lists; here that is the [`ListerWatcher::supports_watch_list`] method.
//! * Errors are one enum: the server's [`Status`] (a non-2xx answer), a transport failure, or
//!   a body that did not decode, with the predicates the reflector needs (apimachinery's
//!   `errors.IsResourceExpired`, `IsTooManyRequests`, ..., and `utilnet.IsConnectionRefused`).

use std::future::Future;

use clientgo_apimachinery::{ObjectList, Status};
use clientgo_rest::{ListParams, WatchParams};
use clientgo_watch::{BoxError, Watch};

#[cfg(doc)]
use clientgo_rest::ResourceClient;

/// `resourceVersionMatch=NotOlderThan`: the result is at least as new as `resourceVersion`.
pub const RESOURCE_VERSION_MATCH_NOT_OLDER_THAN: &str = "NotOlderThan";

/// `resourceVersionMatch=Exact`: the result is at exactly `resourceVersion`.
pub const RESOURCE_VERSION_MATCH_EXACT: &str = "Exact";

/// The status cause type a server sets when a requested resourceVersion is newer than
/// anything it has (`metav1.CauseTypeResourceVersionTooLarge`).
pub const CAUSE_RESOURCE_VERSION_TOO_LARGE: &str = "ResourceVersionTooLarge";

/// Why a LIST or the start of a WATCH failed.
#[derive(Debug, thiserror::Error)]
pub enum ListWatchError {
    /// The API server answered with an error status (client-go's `*errors.StatusError`).
    #[error("{0}")]
    Status(Box<Status>),
    /// The request got no usable answer (connection refused or reset, TLS, timeout, ...).
    #[error("request failed: {0}")]
    Transport(#[source] BoxError),
    /// A successful response's body could not be decoded.
    #[error("unable to decode the response: {0}")]
    Decode(#[source] BoxError),
    /// The answers went on past a bound of the client's: a paginated list that kept returning
    /// continue tokens past [`ListPager`](crate::ListPager)'s item or page limit, or the same
    /// token twice.
    #[error("the list went past the client's bound: {0}")]
    TooLarge(String),
}

impl From<Status> for ListWatchError {
    fn from(status: Status) -> Self {
        ListWatchError::Status(Box::new(status))
    }
}

impl From<Box<Status>> for ListWatchError {
    fn from(status: Box<Status>) -> Self {
        ListWatchError::Status(status)
    }
}

impl ListWatchError {
    /// The server's Status, for [`ListWatchError::Status`].
    pub fn status(&self) -> Option<&Status> {
        match self {
            ListWatchError::Status(status) => Some(status),
            ListWatchError::Transport(_)
            | ListWatchError::Decode(_)
            | ListWatchError::TooLarge(_) => None,
        }
    }

    /// The Status's HTTP code (0 when it has none, or for a non-Status error).
    pub fn code(&self) -> i32 {
        self.status().map_or(0, Status::effective_code)
    }

    /// The requested resourceVersion is too old: `Expired`, `Gone`, or 410 with an unknown
    /// reason (client-go's reflector `isExpiredError`: `IsResourceExpired || IsGone`).
    pub fn is_expired(&self) -> bool {
        self.status().is_some_and(Status::is_resource_expired)
    }

    /// The requested resourceVersion is newer than the server's (client-go's
    /// `isTooLargeResourceVersionError`): the `ResourceVersionTooLarge` cause, or, as servers
    /// before 1.18.6 said it, a `Timeout` whose cause or message reads "Too large resource
    /// version".
    pub fn is_too_large_resource_version(&self) -> bool {
        let Some(status) = self.status() else {
            return false;
        };
        let causes = status.details.as_ref().map_or(&[][..], |d| &d.causes[..]);
        if causes
            .iter()
            .any(|c| c.reason == CAUSE_RESOURCE_VERSION_TOO_LARGE)
        {
            return true;
        }
        if !status.is_timeout() {
            return false;
        }
        const TOO_LARGE: &str = "Too large resource version";
        causes.iter().any(|c| c.message == TOO_LARGE) || status.message.contains(TOO_LARGE)
    }

    /// Rate limited: `TooManyRequests` or 429, whatever the reason.
    pub fn is_too_many_requests(&self) -> bool {
        self.status().is_some_and(Status::is_too_many_requests)
    }

    /// `Forbidden`, or 403 with an unknown reason.
    pub fn is_forbidden(&self) -> bool {
        self.status().is_some_and(Status::is_forbidden)
    }

    /// `Unauthorized`, or 401 with an unknown reason.
    pub fn is_unauthorized(&self) -> bool {
        self.status().is_some_and(Status::is_unauthorized)
    }

    /// `NotFound`, or 404 with an unknown reason (for a collection: the resource is not
    /// served, e.g. a CRD that is not installed).
    pub fn is_not_found(&self) -> bool {
        self.status().is_some_and(Status::is_not_found)
    }

    /// `InternalError`, or 500 with an unknown reason.
    pub fn is_internal_error(&self) -> bool {
        self.status().is_some_and(Status::is_internal_error)
    }

    /// The server refused the TCP connection (apimachinery's `utilnet.IsConnectionRefused`):
    /// an `io::Error` of kind `ConnectionRefused` anywhere in the transport error's chain, or
    /// a link of it that says "connection refused" (how the REST transport describes it).
    pub fn is_connection_refused(&self) -> bool {
        let ListWatchError::Transport(error) = self else {
            return false;
        };
        let mut next: Option<&(dyn std::error::Error + 'static)> = Some(error.as_ref());
        while let Some(error) = next {
            if let Some(io) = error.downcast_ref::<std::io::Error>() {
                if io.kind() == std::io::ErrorKind::ConnectionRefused {
                    return true;
                }
            }
            if error.to_string().contains("connection refused") {
                return true;
            }
            next = error.source();
        }
        false
    }

    /// Whether a failed watch request is retried after a backoff without relisting
    /// (client-go's `isWatchErrorRetriable`): connection refused or 429.
    pub fn is_watch_retriable(&self) -> bool {
        self.is_connection_refused() || self.is_too_many_requests()
    }
}

/// Lists and watches one collection: client-go's `cache.ListerWatcher`.
///
/// The returned futures may borrow `self` and the options. They must be `Send`, so that a
/// reflector's loop can run on any runtime thread.
pub trait ListerWatcher<T>: Send + Sync + 'static {
    /// Lists the collection (one page, when `options.limit` is set and positive).
    fn list(
        &self,
        options: &ListParams,
    ) -> impl Future<Output = Result<ObjectList<T>, ListWatchError>> + Send;

    /// Opens a watch of the collection.
    fn watch(
        &self,
        options: &WatchParams,
    ) -> impl Future<Output = Result<Watch<T>, ListWatchError>> + Send;

    /// Whether streaming lists (`sendInitialEvents=true`) may be tried; default true.
    fn supports_watch_list(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::{StatusCause, StatusDetails, StatusReason};

    fn status(code: i32, reason: StatusReason, message: &str) -> ListWatchError {
        Status::failure(code, reason, message).into()
    }

    fn with_cause(mut err: ListWatchError, reason: &str, message: &str) -> ListWatchError {
        if let ListWatchError::Status(s) = &mut err {
            s.details = Some(StatusDetails {
                causes: vec![StatusCause {
                    reason: reason.into(),
                    message: message.into(),
                    field: String::new(),
                }],
                ..StatusDetails::default()
            });
        }
        err
    }

    #[test]
    fn expired_and_gone() {
        assert!(status(410, StatusReason::Expired, "too old").is_expired());
        assert!(status(410, StatusReason::Gone, "gone").is_expired());
        assert!(status(410, StatusReason::Unknown, "?").is_expired());
        assert!(!status(500, StatusReason::InternalError, "x").is_expired());
        assert!(!ListWatchError::Transport("x".into()).is_expired());
    }

    #[test]
    fn too_large_resource_version_in_its_three_forms() {
        // 1.18.6 and later: the cause type.
        let err = with_cause(
            status(504, StatusReason::Timeout, "too large resource version"),
            CAUSE_RESOURCE_VERSION_TOO_LARGE,
            "",
        );
        assert!(err.is_too_large_resource_version());
        // 1.17.0 - 1.18.5: a Timeout with the cause message.
        let err = with_cause(
            status(504, StatusReason::Timeout, "too large resource version"),
            "",
            "Too large resource version",
        );
        assert!(err.is_too_large_resource_version());
        // Before 1.17: only the message.
        let err = status(504, StatusReason::Timeout, "Too large resource version");
        assert!(err.is_too_large_resource_version());
        // The message alone on another reason is not it.
        let err = status(
            500,
            StatusReason::InternalError,
            "Too large resource version",
        );
        assert!(!err.is_too_large_resource_version());
        assert!(!status(504, StatusReason::Timeout, "slow").is_too_large_resource_version());
    }

    #[test]
    fn reasons_and_codes() {
        assert!(status(429, StatusReason::TooManyRequests, "slow down").is_too_many_requests());
        assert!(status(429, StatusReason::Unknown, "").is_too_many_requests());
        assert!(status(403, StatusReason::Forbidden, "no").is_forbidden());
        assert!(status(403, StatusReason::Other("X".into()), "no").is_forbidden());
        assert!(!status(403, StatusReason::NotFound, "no").is_forbidden());
        assert!(status(404, StatusReason::NotFound, "").is_not_found());
        assert!(status(401, StatusReason::Unauthorized, "").is_unauthorized());
        assert!(status(500, StatusReason::InternalError, "").is_internal_error());
        assert_eq!(status(0, StatusReason::NotFound, "").code(), 404);
        assert_eq!(ListWatchError::Decode("bad".into()).code(), 0);
    }

    #[test]
    fn connection_refused_anywhere_in_the_chain() {
        #[derive(Debug, thiserror::Error)]
        #[error("GET https://api/pods: unable to connect")]
        struct Wrapper(#[source] std::io::Error);

        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "os error 111");
        let err = ListWatchError::Transport(Box::new(Wrapper(io)));
        assert!(err.is_connection_refused() && err.is_watch_retriable());
        let err = ListWatchError::Transport("GET https://api/pods: connection refused".into());
        assert!(err.is_connection_refused());
        let reset = std::io::Error::new(std::io::ErrorKind::ConnectionReset, "reset");
        let err = ListWatchError::Transport(Box::new(reset));
        assert!(!err.is_connection_refused() && !err.is_watch_retriable());
        assert_eq!(
            err.to_string(),
            "request failed: reset",
            "the transport error is named"
        );
    }
}
