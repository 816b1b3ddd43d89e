//! When a request is sent again: client-go's `rest/with_retry.go` and the retry predicates of
//! `rest/request.go`, as pure functions the request loop consults.
//!
//! A request is sent again only when
//! * the response is **429 or 5xx and carries an integer `Retry-After`** (seconds; 0 allowed,
//!   negative counts as 0, more than [`MAX_RETRY_AFTER`] (60 s) counts as 60 s), which is the
//!   wait before the next attempt (client-go's `checkWait`);
//! * or the request failed in the transport in a way that is safe to repeat (a synthetic
//!   `Retry-After: 1`, as client-go treats it):
//!   - [`Request::send`](crate::Request::send) (client-go's `Do`): **GET only**, after a
//!     connection reset, a connection closed before the response (client-go's "probable EOF"),
//!     or a refused connection;
//!   - [`Request::watch`](crate::Request::watch): any method, after a reset or closed
//!     connection or a connect or TLS handshake timeout (client-go's `IsProbableEOF ||
//!     IsTimeout`);
//!   - [`Request::stream`](crate::Request::stream): never;
//!   - any of the three, whatever the method, when the server refused the request's HTTP/2
//!     stream (`REFUSED_STREAM`: it processed nothing), as Go's HTTP/2 transport sends such
//!     a request again below client-go;
//!
//! and at most [`DEFAULT_MAX_RETRIES`] times (so 11 round trips), unless the request sets its
//! own limit. Each retry waits, then passes the client's throttle again; the request's time
//! limit covers all of it.
//!
//! So a non-idempotent request whose body may have reached the server is sent again only when
//! the server itself answered that it should be (429/5xx with `Retry-After`). Request bodies
//! here are always in memory ([`Bytes`](bytes::Bytes)), so every body can be replayed; the
//! rule client-go has for streamed (`io.Reader`) bodies, never retried, has nothing to apply to.
//!
//! Differences from client-go: a refused connection is retried for GET (nothing reached the
//! server, and a restarting API server refuses connections for a moment); there is no backoff
//! manager (client-go's is off unless `KUBE_CLIENT_BACKOFF_BASE` is set); the server's wait is
//! capped at [`MAX_RETRY_AFTER`] (client-go waits whatever it is told, so a broken or hostile
//! server answering `Retry-After: 86400` parks a worker for a day). kube-apiserver asks for a
//! second or a few; the same cap applies to
//! [`ApiError::suggests_client_delay`](crate::ApiError::suggests_client_delay) and, in the
//! watch crate, to an `ERROR` event's `retryAfterSeconds`.

use std::time::Duration;

use http::{HeaderMap, Method, StatusCode};

use crate::error::TransportErrorKind;

/// The longest wait a server's `Retry-After` (or a Status's `retryAfterSeconds`) can impose:
/// 60 s. See the module documentation.
pub const MAX_RETRY_AFTER: Duration = crate::api_error::MAX_RETRY_AFTER;

/// client-go's default `maxRetries`.
pub const DEFAULT_MAX_RETRIES: u32 = 10;

/// The wait before retrying after a retryable transport error (client-go's synthetic
/// `Retry-After: 1`).
pub const TRANSPORT_ERROR_RETRY_WAIT: Duration = Duration::from_secs(1);

/// Which execution path a request takes; they retry differently.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `send`: the whole body is read (client-go's `Do`/`DoRaw`).
    Send,
    /// `stream`: the body is handed over unread.
    Stream,
    /// `watch`: a long-lived stream, not throttled on its first attempt.
    Watch,
}

/// The `Retry-After` header as whole seconds, if it is an integer (client-go's
/// `retryAfterSeconds`).
pub fn retry_after_seconds(headers: &HeaderMap) -> Option<i64> {
    let value = headers.get(http::header::RETRY_AFTER)?.to_str().ok()?;
    value.parse::<i64>().ok()
}

/// The wait the server asks for before a retry: only for 429 and 5xx with an integer
/// `Retry-After` (client-go's `checkWait`), at most [`MAX_RETRY_AFTER`].
pub fn retry_wait(status: StatusCode, headers: &HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds = retry_after_seconds(headers)?;
    Some(capped_retry_after(seconds))
}

/// `seconds` of a server's retry hint as a wait: negative is 0, more than
/// [`MAX_RETRY_AFTER`] is [`MAX_RETRY_AFTER`].
pub fn capped_retry_after(seconds: i64) -> Duration {
    Duration::from_secs(seconds.max(0).unsigned_abs()).min(MAX_RETRY_AFTER)
}

/// Whether a transport failure of `kind` may be retried for this request.
pub(crate) fn is_retryable_error(mode: Mode, method: &Method, kind: TransportErrorKind) -> bool {
    use TransportErrorKind as K;
    match mode {
        // A refused stream was not processed: sent again whatever the method, as Go's
        // HTTP/2 transport sends it (`canRetryError`), below client-go's retries.
        Mode::Send => {
            kind == K::StreamRefused
                || *method == Method::GET
                    && matches!(
                        kind,
                        K::ConnectionReset | K::ConnectionClosed | K::ConnectionRefused
                    )
        }
        Mode::Watch => matches!(
            kind,
            K::ConnectionReset
                | K::ConnectionClosed
                | K::ConnectTimeout
                | K::TlsHandshakeTimeout
                | K::StreamRefused
        ),
        Mode::Stream => kind == K::StreamRefused,
    }
}

/// Counts attempts and decides on the next one (client-go's `withRetry.IsNextRetry`).
#[derive(Debug)]
pub(crate) struct Retry {
    max_retries: u32,
    attempts: u32,
}

impl Retry {
    pub(crate) fn new(max_retries: u32) -> Self {
        Retry {
            max_retries,
            attempts: 0,
        }
    }

    /// After a response: the wait before the next attempt, or `None` to keep this response.
    pub(crate) fn after_response(
        &mut self,
        status: StatusCode,
        headers: &HeaderMap,
    ) -> Option<Duration> {
        let wait = retry_wait(status, headers)?;
        self.take_attempt().then_some(wait)
    }

    /// After a transport error: the wait before the next attempt, or `None` to fail.
    pub(crate) fn after_error(&mut self, retryable: bool) -> Option<Duration> {
        if !retryable {
            return None;
        }
        self.take_attempt().then_some(TRANSPORT_ERROR_RETRY_WAIT)
    }

    /// How many retries have been granted.
    pub(crate) fn retries(&self) -> u32 {
        self.attempts
    }

    fn take_attempt(&mut self) -> bool {
        if self.attempts >= self.max_retries {
            return false;
        }
        self.attempts += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(retry_after: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(v) = retry_after {
            h.insert(http::header::RETRY_AFTER, v.parse().unwrap());
        }
        h
    }

    /// client-go's `TestCheckRetryHandles429And5xx` and the `checkWait` rules.
    #[test]
    fn only_429_and_5xx_with_an_integer_retry_after() {
        let secs = Duration::from_secs;
        for code in [429, 500, 501, 503, 504] {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(
                retry_wait(status, &headers(Some("0"))),
                Some(secs(0)),
                "{code}"
            );
            assert_eq!(
                retry_wait(status, &headers(Some("7"))),
                Some(secs(7)),
                "{code}"
            );
            assert_eq!(retry_wait(status, &headers(None)), None, "{code}");
            assert_eq!(
                retry_wait(status, &headers(Some("Fri, 31 Dec 1999 23:59:59 GMT"))),
                None,
                "an HTTP date is not honoured, as in client-go"
            );
        }
        assert_eq!(
            retry_wait(StatusCode::TOO_MANY_REQUESTS, &headers(Some("-3"))),
            Some(secs(0))
        );
        for code in [200, 404, 409, 410] {
            let status = StatusCode::from_u16(code).unwrap();
            assert_eq!(retry_wait(status, &headers(Some("1"))), None, "{code}");
        }
    }

    #[test]
    fn retry_after_is_capped_at_max_retry_after() {
        let status = StatusCode::SERVICE_UNAVAILABLE;
        assert_eq!(
            retry_wait(status, &headers(Some("86400"))),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(
            retry_wait(status, &headers(Some("9223372036854775807"))),
            Some(MAX_RETRY_AFTER)
        );
        assert_eq!(
            retry_wait(status, &headers(Some("60"))),
            Some(Duration::from_secs(60))
        );
        assert_eq!(capped_retry_after(i64::MIN), Duration::ZERO);
    }

    /// client-go's `TestRetryableConditions`, as far as this transport can fail.
    #[test]
    fn retryable_transport_errors_by_mode() {
        use TransportErrorKind as K;
        let get = Method::GET;
        let post = Method::POST;
        assert!(is_retryable_error(Mode::Send, &get, K::ConnectionReset));
        assert!(is_retryable_error(Mode::Send, &get, K::ConnectionClosed));
        assert!(is_retryable_error(Mode::Send, &get, K::ConnectionRefused));
        assert!(!is_retryable_error(Mode::Send, &get, K::Tls));
        assert!(!is_retryable_error(Mode::Send, &get, K::Timeout));
        for kind in [
            K::ConnectionReset,
            K::ConnectionClosed,
            K::ConnectionRefused,
        ] {
            assert!(!is_retryable_error(Mode::Send, &post, kind));
            assert!(!is_retryable_error(Mode::Send, &Method::PUT, kind));
            assert!(!is_retryable_error(Mode::Stream, &get, kind));
        }
        // A refused stream was never processed: any method, any mode.
        for method in [&get, &post, &Method::PUT, &Method::DELETE, &Method::PATCH] {
            for mode in [Mode::Send, Mode::Watch, Mode::Stream] {
                assert!(is_retryable_error(mode, method, K::StreamRefused));
            }
        }
        assert!(is_retryable_error(Mode::Watch, &get, K::ConnectionClosed));
        assert!(is_retryable_error(Mode::Watch, &get, K::ConnectTimeout));
        assert!(!is_retryable_error(Mode::Watch, &get, K::ConnectionRefused));
    }

    #[test]
    fn at_most_max_retries() {
        let mut retry = Retry::new(DEFAULT_MAX_RETRIES);
        let h = headers(Some("1"));
        for _ in 0..10 {
            assert!(
                retry
                    .after_response(StatusCode::SERVICE_UNAVAILABLE, &h)
                    .is_some()
            );
        }
        assert_eq!(
            retry.after_response(StatusCode::SERVICE_UNAVAILABLE, &h),
            None
        );
        assert_eq!(retry.retries(), 10);

        let mut retry = Retry::new(2);
        assert_eq!(retry.after_error(false), None, "not retryable");
        assert_eq!(retry.after_error(true), Some(TRANSPORT_ERROR_RETRY_WAIT));
        assert_eq!(retry.after_error(true), Some(TRANSPORT_ERROR_RETRY_WAIT));
        assert_eq!(retry.after_error(true), None);

        let mut never = Retry::new(0);
        assert_eq!(
            never.after_response(StatusCode::TOO_MANY_REQUESTS, &h),
            None
        );
    }
}
