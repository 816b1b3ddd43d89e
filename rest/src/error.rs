//! [`Error`]: everything a request can fail with, and the transport and decode errors in it.
//!
//! client-go returns plain `error` values: `*errors.StatusError` for API errors, `*url.Error`
//! wrapping whatever net/http or crypto/tls said for transport failures, and wrapped JSON errors
//! for bodies it could not decode. Here they are one enum so callers can `match` on the cause:
//!
//! | variant | when | client-go |
//! |---|---|---|
//! | [`Error::Api`] | the server answered with a non-2xx status | `*errors.StatusError` |
//! | [`Error::Transport`] | no usable answer: connect, TLS, I/O, timeout | `*url.Error` |
//! | [`Error::Decode`] | a 2xx body is not the expected type (for a list, see [`ListFailure`]) | decoder errors |
//! | [`Error::Config`] | a credential could not be obtained (exec plugin, token file) | exec / token source errors |
//! | [`Error::InvalidConfig`] | the configuration cannot make a transport | `transport.New` errors |
//! | [`Error::InvalidRequest`] | the request builder was misused | `RequestConstructionError` and friends |
//!
//! The error predicates of apimachinery's `errors` package (`is_not_found`, …) are methods of
//! [`ApiError`] and, for convenience, of [`Error`] (false for non-API errors).
//!
//! No message here ever contains a credential: URLs are built from scheme, host and path only
//! (never a `user:password@` part), transport errors describe what failed without request
//! headers, and credential errors come from [`ConfigError`], which redacts its own.

use std::fmt;

use crate::api_error::ApiError;
use crate::config::ConfigError;

/// A boxed error, as bodies and connectors produce them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Why a request failed. See the module documentation.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with an error status (client-go's `*errors.StatusError`).
    #[error(transparent)]
    Api(Box<ApiError>),
    /// The request got no usable answer.
    #[error(transparent)]
    Transport(Box<TransportError>),
    /// A successful response's body is not what was expected.
    #[error(transparent)]
    Decode(Box<DecodeError>),
    /// A credential could not be obtained (an exec plugin failed, a token file is unreadable).
    #[error("unable to obtain a credential: {0}")]
    Config(Box<ConfigError>),
    /// The configuration cannot be turned into a transport.
    #[error("invalid client configuration: {field}: {reason}")]
    InvalidConfig {
        /// The configuration field at fault, e.g. `tls.ca_pem`.
        field: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// The request was built wrongly (client-go's request construction errors).
    #[error("invalid request: {0}")]
    InvalidRequest(String),
}

impl From<ApiError> for Error {
    fn from(error: ApiError) -> Self {
        Error::Api(Box::new(error))
    }
}

impl From<TransportError> for Error {
    fn from(error: TransportError) -> Self {
        Error::Transport(Box::new(error))
    }
}

impl From<DecodeError> for Error {
    fn from(error: DecodeError) -> Self {
        Error::Decode(Box::new(error))
    }
}

impl From<ConfigError> for Error {
    fn from(error: ConfigError) -> Self {
        Error::Config(Box::new(error))
    }
}

macro_rules! delegate_predicates {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        impl Error {
            $(
                $(#[$doc])*
                pub fn $name(&self) -> bool {
                    self.api_error().is_some_and(ApiError::$name)
                }
            )*
        }
    };
}

delegate_predicates! {
    /// [`ApiError::is_not_found`]; false for non-API errors.
    is_not_found,
    /// [`ApiError::is_already_exists`]; false for non-API errors.
    is_already_exists,
    /// [`ApiError::is_conflict`]; false for non-API errors.
    is_conflict,
    /// [`ApiError::is_gone`]; false for non-API errors.
    is_gone,
    /// [`ApiError::is_resource_expired`]; false for non-API errors.
    is_resource_expired,
    /// [`ApiError::is_too_many_requests`]; false for non-API errors.
    is_too_many_requests,
    /// [`ApiError::is_invalid`]; false for non-API errors.
    is_invalid,
    /// [`ApiError::is_forbidden`]; false for non-API errors.
    is_forbidden,
    /// [`ApiError::is_unauthorized`]; false for non-API errors.
    is_unauthorized,
    /// [`ApiError::is_timeout`]; false for non-API errors.
    is_timeout,
    /// [`ApiError::is_server_timeout`]; false for non-API errors.
    is_server_timeout,
    /// [`ApiError::is_bad_request`]; false for non-API errors.
    is_bad_request,
    /// [`ApiError::is_service_unavailable`]; false for non-API errors.
    is_service_unavailable,
    /// [`ApiError::is_internal_error`]; false for non-API errors.
    is_internal_error,
}

impl Error {
    /// The API error, when the server answered with one.
    pub fn api_error(&self) -> Option<&ApiError> {
        match self {
            Error::Api(e) => Some(e),
            _ => None,
        }
    }

    /// The server's Status, when the server answered with an error.
    pub fn status(&self) -> Option<&clientgo_apimachinery::Status> {
        self.api_error().map(|e| &e.status)
    }

    /// The transport error, when the request got no usable answer.
    pub fn transport_error(&self) -> Option<&TransportError> {
        match self {
            Error::Transport(e) => Some(e),
            _ => None,
        }
    }
}

/// What kind of transport failure happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TransportErrorKind {
    /// The TCP connection could not be made (DNS, unreachable, …).
    Connect,
    /// The server refused the TCP connection.
    ConnectionRefused,
    /// The TCP connection was not made within the connect timeout.
    ConnectTimeout,
    /// The TLS handshake failed (untrusted or mismatched certificate, client certificate
    /// refused, no common protocol, …).
    Tls,
    /// The TLS handshake did not finish within its timeout.
    TlsHandshakeTimeout,
    /// The connection was reset or broken while the request was in flight.
    ConnectionReset,
    /// The connection closed before a complete response arrived (client-go's "probable EOF").
    ConnectionClosed,
    /// The server refused the request's HTTP/2 stream (`REFUSED_STREAM`, as a server does
    /// with streams past its limit of concurrent ones): it did not process the request, so
    /// it may be sent again whatever its method, as Go's HTTP/2 transport does.
    StreamRefused,
    /// The request's time limit passed ([`Config::timeout`](crate::Config::timeout) or the
    /// request's own).
    Timeout,
    /// The server broke the HTTP protocol, or an HTTP/2 stream or connection failed.
    Protocol,
    /// Reading the response body failed.
    Body,
    /// The response body is larger than the client accepts
    /// ([`Config::max_response_bytes`](crate::Config::max_response_bytes)).
    TooLarge,
    /// Anything else.
    Other,
}

impl TransportErrorKind {
    fn describe(self) -> &'static str {
        match self {
            TransportErrorKind::Connect => "unable to connect",
            TransportErrorKind::ConnectionRefused => "connection refused",
            TransportErrorKind::ConnectTimeout => "timed out connecting",
            TransportErrorKind::Tls => "TLS handshake failed",
            TransportErrorKind::TlsHandshakeTimeout => "TLS handshake timed out",
            TransportErrorKind::ConnectionReset => "connection reset",
            TransportErrorKind::ConnectionClosed => {
                "connection closed before the response was complete"
            }
            TransportErrorKind::StreamRefused => "the server refused the request's stream",
            TransportErrorKind::Timeout => "request timed out",
            TransportErrorKind::Protocol => "HTTP protocol error",
            TransportErrorKind::Body => "error reading the response body",
            TransportErrorKind::TooLarge => "response body too large",
            TransportErrorKind::Other => "request failed",
        }
    }
}

/// A request that got no usable answer: which request, what failed, and the underlying error.
///
/// The URL is the request's, without any user-info part; no header is ever included.
#[derive(Debug)]
pub struct TransportError {
    kind: TransportErrorKind,
    method: http::Method,
    url: String,
    detail: Option<String>,
    source: Option<BoxError>,
}

impl TransportError {
    /// A transport error of `kind` for the request `method url`, caused by `source`.
    pub fn new(
        kind: TransportErrorKind,
        method: http::Method,
        url: impl Into<String>,
        source: Option<BoxError>,
    ) -> Self {
        TransportError {
            kind,
            method,
            url: url.into(),
            detail: None,
            source,
        }
    }

    /// Adds an explanation shown after the kind (e.g. a hint about the CA).
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// What failed.
    pub fn kind(&self) -> TransportErrorKind {
        self.kind
    }

    /// The request's method.
    pub fn method(&self) -> &http::Method {
        &self.method
    }

    /// The request's URL (scheme, host, path and query; never user-info).
    pub fn url(&self) -> &str {
        &self.url
    }
}

impl fmt::Display for TransportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}: {}", self.method, self.url, self.kind.describe())?;
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        if let Some(source) = &self.source {
            write!(f, ": {}", ErrorChain(source.as_ref()))?;
        }
        Ok(())
    }
}

impl std::error::Error for TransportError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// An error and its sources, `a: b: c`, skipping a source whose text its parent already shows.
pub(crate) struct ErrorChain<'a>(pub(crate) &'a (dyn std::error::Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut shown = self.0.to_string();
        f.write_str(&shown)?;
        let mut next = self.0.source();
        while let Some(error) = next {
            let text = error.to_string();
            if !shown.contains(&text) {
                write!(f, ": {text}")?;
                shown = text;
            }
            next = error.source();
        }
        Ok(())
    }
}

/// A successful response whose body is not the expected type.
///
/// `message` never quotes a value from the body (a field of a Secret may be it): serde's
/// message reduced by [`json::redacted_message`](crate::json::redacted_message).
///
/// For a body decoded whole, `message`, `line` and `column` are serde's and `body_len` is the
/// body's size. For a list decoded item by item ([`list_decode`](crate::list_decode)),
/// [`list`](DecodeError::list) says what failed; `body_len` is then how much of the body had
/// been read, and `line` and `column` are within the failing item (0 when not known).
#[derive(Debug)]
#[non_exhaustive]
pub struct DecodeError {
    /// The Rust type that was expected, e.g. `clientgo_apimachinery::ObjectList<Pod>` (for a
    /// list item that failed, the item's type).
    pub type_name: &'static str,
    /// serde's description, with its position; or what is wrong with a list's JSON.
    pub message: String,
    /// 1-based line of the error.
    pub line: usize,
    /// 1-based column of the error.
    pub column: usize,
    /// The size of the body.
    pub body_len: usize,
    /// What failed, when a list was decoded item by item.
    pub list: Option<ListFailure>,
}

/// What failed decoding a list item by item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListFailure {
    /// The body is not the JSON of a list: a byte that cannot be where it is, at `offset`
    /// from the start of the body (or a top-level key that is not a valid string).
    Syntax {
        /// The byte's offset in the body.
        offset: u64,
    },
    /// The body ended before the list did.
    Truncated,
    /// The item at `index` (from 0) is not of the expected type, or not valid JSON.
    Item {
        /// The item's index in `items`.
        index: usize,
    },
    /// The item at `index` is larger than the decoder's cap (`limit` bytes).
    ItemTooLarge {
        /// The item's index in `items`.
        index: usize,
        /// The cap, in bytes.
        limit: usize,
    },
    /// A member other than the items (`kind`, `apiVersion`, `metadata`, an `items` that is
    /// not an array, a repeated member) is not what a list has.
    Fields,
    /// The body is Kubernetes protobuf this client cannot read (malformed, or of a kind it
    /// has no schema for); `body_len` is the protobuf's size.
    Protobuf,
}

impl DecodeError {
    /// Describes `error`, which happened decoding `body_len` bytes as `T` (without quoting
    /// any value from the body: see [`json::redacted_message`](crate::json::redacted_message)).
    pub fn of<T>(error: &serde_json::Error, body_len: usize) -> Self {
        DecodeError {
            type_name: std::any::type_name::<T>(),
            message: crate::json::redacted_message(error),
            line: error.line(),
            column: error.column(),
            body_len,
            list: None,
        }
    }

    /// Describes `error`, which happened reading `body_len` bytes of protobuf as `T`.
    pub(crate) fn protobuf<T>(
        error: &clientgo_codec::protobuf::ProtobufError,
        body_len: usize,
    ) -> Self {
        DecodeError {
            type_name: std::any::type_name::<T>(),
            message: error.to_string(),
            line: 0,
            column: 0,
            body_len,
            list: None,
        }
    }

    /// A failure decoding a list item by item, after `body_len` bytes of the body.
    pub(crate) fn for_list(
        type_name: &'static str,
        failure: ListFailure,
        message: String,
        body_len: u64,
    ) -> Self {
        DecodeError {
            type_name,
            message,
            line: 0,
            column: 0,
            body_len: usize::try_from(body_len).unwrap_or(usize::MAX),
            list: Some(failure),
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (len, type_name, message) = (self.body_len, self.type_name, &self.message);
        match self.list {
            None => write!(
                f,
                "unable to decode the response body ({len} bytes) as {type_name}: {message} at line {} column {}",
                self.line, self.column
            ),
            Some(ListFailure::Item { index } | ListFailure::ItemTooLarge { index, .. }) => write!(
                f,
                "unable to decode item {index} of the list response as {type_name}: {message}"
            ),
            Some(_) => write!(
                f,
                "unable to decode the list response ({len} bytes read) as {type_name}: {message}"
            ),
        }
    }
}

impl std::error::Error for DecodeError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transport_error_names_the_request_and_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused by peer");
        let err = TransportError::new(
            TransportErrorKind::ConnectionRefused,
            http::Method::GET,
            "https://10.0.0.1:6443/api/v1/pods",
            Some(Box::new(io)),
        );
        assert_eq!(
            err.to_string(),
            "GET https://10.0.0.1:6443/api/v1/pods: connection refused: refused by peer"
        );
        let err: Error = err.into();
        assert!(!err.is_not_found());
        assert_eq!(
            err.transport_error().map(TransportError::kind),
            Some(TransportErrorKind::ConnectionRefused)
        );
    }

    #[test]
    fn decode_error_has_type_and_position() {
        let e = serde_json::from_str::<Vec<u32>>("[1, \"x\"]").unwrap_err();
        let err = DecodeError::of::<Vec<u32>>(&e, 8);
        assert_eq!((err.line, err.column), (1, 7));
        let text = err.to_string();
        assert!(text.contains("alloc::vec::Vec<u32>"), "{text}");
        assert!(text.contains("line 1 column 7"), "{text}");
    }

    #[test]
    fn error_is_small() {
        assert!(std::mem::size_of::<Error>() <= 40);
    }
}
