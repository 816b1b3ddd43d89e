//! API errors and results: `Status`, `StatusDetails`, `StatusCause`, `StatusReason`.
//!
//! Mirrors `metav1.Status` and friends in `k8s.io/apimachinery/pkg/apis/meta/v1/types.go`,
//! the object a server returns for a failed request and inside a watch `ERROR` event (e.g.
//! `410 Expired` when the requested resourceVersion is too old).
//!
//! [`StatusReason`] is an enum of the well-known reasons plus `Other(String)`, so callers
//! can `match` on it while unknown reasons from newer servers survive a round trip.
//! `Unknown` is Go's `StatusReasonUnknown` (the empty string, omitted on the wire).
//! [`Status`] implements `std::error::Error`, as `apierrors.StatusError` does in Go.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::meta::ListMeta;
use crate::serde_util::{is_zero_i32, null_default};

/// `Status.status` of a successful operation.
pub const STATUS_SUCCESS: &str = "Success";
/// `Status.status` of a failed operation.
pub const STATUS_FAILURE: &str = "Failure";

/// A machine-readable reason for a failure (`metav1.StatusReason`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub enum StatusReason {
    /// No reason given (the empty string).
    #[default]
    Unknown,
    /// 401: the request lacks valid credentials.
    Unauthorized,
    /// 403: the caller may not perform the action.
    Forbidden,
    /// 404: the object does not exist.
    NotFound,
    /// 409: the object already exists.
    AlreadyExists,
    /// 409: the update conflicts (stale resourceVersion).
    Conflict,
    /// 410: the resource is gone.
    Gone,
    /// 410: the requested resourceVersion is too old (watch/list must relist).
    Expired,
    /// 422: the object failed validation.
    Invalid,
    /// 500 with retry: the server could not finish in time.
    ServerTimeout,
    /// 504: the request timed out.
    Timeout,
    /// 429: rate limited.
    TooManyRequests,
    /// 400: the request is malformed.
    BadRequest,
    /// 405: the verb is not supported on this resource.
    MethodNotAllowed,
    /// 406: no acceptable response content type.
    NotAcceptable,
    /// 413: the request body is too large.
    RequestEntityTooLarge,
    /// 415: the request content type is not supported.
    UnsupportedMediaType,
    /// 500: the server failed.
    InternalError,
    /// 503: the server is unavailable.
    ServiceUnavailable,
    /// Any other reason, kept verbatim.
    Other(String),
}

impl StatusReason {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            StatusReason::Unknown => "",
            StatusReason::Unauthorized => "Unauthorized",
            StatusReason::Forbidden => "Forbidden",
            StatusReason::NotFound => "NotFound",
            StatusReason::AlreadyExists => "AlreadyExists",
            StatusReason::Conflict => "Conflict",
            StatusReason::Gone => "Gone",
            StatusReason::Expired => "Expired",
            StatusReason::Invalid => "Invalid",
            StatusReason::ServerTimeout => "ServerTimeout",
            StatusReason::Timeout => "Timeout",
            StatusReason::TooManyRequests => "TooManyRequests",
            StatusReason::BadRequest => "BadRequest",
            StatusReason::MethodNotAllowed => "MethodNotAllowed",
            StatusReason::NotAcceptable => "NotAcceptable",
            StatusReason::RequestEntityTooLarge => "RequestEntityTooLarge",
            StatusReason::UnsupportedMediaType => "UnsupportedMediaType",
            StatusReason::InternalError => "InternalError",
            StatusReason::ServiceUnavailable => "ServiceUnavailable",
            StatusReason::Other(s) => s,
        }
    }

    /// Parses a wire string; unknown strings become [`StatusReason::Other`].
    pub fn parse(s: &str) -> StatusReason {
        match s {
            "" => StatusReason::Unknown,
            "Unauthorized" => StatusReason::Unauthorized,
            "Forbidden" => StatusReason::Forbidden,
            "NotFound" => StatusReason::NotFound,
            "AlreadyExists" => StatusReason::AlreadyExists,
            "Conflict" => StatusReason::Conflict,
            "Gone" => StatusReason::Gone,
            "Expired" => StatusReason::Expired,
            "Invalid" => StatusReason::Invalid,
            "ServerTimeout" => StatusReason::ServerTimeout,
            "Timeout" => StatusReason::Timeout,
            "TooManyRequests" => StatusReason::TooManyRequests,
            "BadRequest" => StatusReason::BadRequest,
            "MethodNotAllowed" => StatusReason::MethodNotAllowed,
            "NotAcceptable" => StatusReason::NotAcceptable,
            "RequestEntityTooLarge" => StatusReason::RequestEntityTooLarge,
            "UnsupportedMediaType" => StatusReason::UnsupportedMediaType,
            "InternalError" => StatusReason::InternalError,
            "ServiceUnavailable" => StatusReason::ServiceUnavailable,
            other => StatusReason::Other(other.to_owned()),
        }
    }

    /// The HTTP code the API server pairs with this reason, if it has a fixed one.
    pub fn http_code(&self) -> Option<i32> {
        Some(match self {
            StatusReason::Unauthorized => 401,
            StatusReason::Forbidden => 403,
            StatusReason::NotFound => 404,
            StatusReason::AlreadyExists | StatusReason::Conflict => 409,
            StatusReason::Gone | StatusReason::Expired => 410,
            StatusReason::Invalid => 422,
            StatusReason::ServerTimeout | StatusReason::InternalError => 500,
            StatusReason::Timeout => 504,
            StatusReason::TooManyRequests => 429,
            StatusReason::BadRequest => 400,
            StatusReason::MethodNotAllowed => 405,
            StatusReason::NotAcceptable => 406,
            StatusReason::RequestEntityTooLarge => 413,
            StatusReason::UnsupportedMediaType => 415,
            StatusReason::ServiceUnavailable => 503,
            StatusReason::Unknown | StatusReason::Other(_) => return None,
        })
    }

    /// Whether this is [`StatusReason::Unknown`] (omitted on the wire).
    pub fn is_unknown(&self) -> bool {
        matches!(self, StatusReason::Unknown)
    }
}

impl fmt::Display for StatusReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl From<&str> for StatusReason {
    fn from(s: &str) -> StatusReason {
        StatusReason::parse(s)
    }
}

impl Serialize for StatusReason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for StatusReason {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<StatusReason, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = StatusReason;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a status reason string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<StatusReason, E> {
                Ok(StatusReason::parse(v))
            }
        }
        deserializer.deserialize_str(V)
    }
}

/// The result of an operation that returns no object, or of any failure (`metav1.Status`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Status {
    /// `v1` when set.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub api_version: String,
    /// `Status` when set.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub kind: String,
    /// List metadata (normally empty; always written, as Go writes it).
    #[serde(default, deserialize_with = "null_default")]
    pub metadata: ListMeta,
    /// [`STATUS_SUCCESS`] or [`STATUS_FAILURE`].
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub status: String,
    /// Human-readable description.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub message: String,
    /// Machine-readable reason.
    #[serde(
        default,
        skip_serializing_if = "StatusReason::is_unknown",
        deserialize_with = "null_default"
    )]
    pub reason: StatusReason,
    /// Extra data about the reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// Suggested HTTP status code; 0 when unset.
    #[serde(
        default,
        skip_serializing_if = "is_zero_i32",
        deserialize_with = "null_default"
    )]
    pub code: i32,
}

impl Status {
    /// A `Failure` status with the given code, reason and message.
    pub fn failure(code: i32, reason: StatusReason, message: impl Into<String>) -> Status {
        Status {
            api_version: "v1".to_owned(),
            kind: "Status".to_owned(),
            status: STATUS_FAILURE.to_owned(),
            message: message.into(),
            reason,
            code,
            ..Status::default()
        }
    }

    /// A `Failure` status whose code is the reason's usual HTTP code (500 if it has none).
    pub fn from_reason(reason: StatusReason, message: impl Into<String>) -> Status {
        let code = reason.http_code().unwrap_or(500);
        Status::failure(code, reason, message)
    }

    /// A `Success` status.
    pub fn success() -> Status {
        Status {
            api_version: "v1".to_owned(),
            kind: "Status".to_owned(),
            status: STATUS_SUCCESS.to_owned(),
            code: 200,
            ..Status::default()
        }
    }

    /// Whether `status` is `Failure`.
    pub fn is_failure(&self) -> bool {
        self.status == STATUS_FAILURE
    }

    /// The server's retry hint, if any.
    pub fn retry_after_seconds(&self) -> Option<i32> {
        self.details
            .as_ref()
            .map(|d| d.retry_after_seconds)
            .filter(|s| *s > 0)
    }

    /// The code the Status stands for: its `code`, or, for one without, its reason's (0 when
    /// neither says).
    pub fn effective_code(&self) -> i32 {
        if self.code != 0 {
            self.code
        } else {
            self.reason.http_code().unwrap_or(0)
        }
    }

    /// Whether client-go knows the reason (`knownReasons` of `k8s.io/apimachinery/pkg/api/errors`);
    /// for one it does not, the code decides what the error is.
    fn is_known_reason(&self) -> bool {
        match &self.reason {
            StatusReason::Unknown => false,
            StatusReason::Other(other) => other == "StoreReadError",
            _ => true,
        }
    }

    /// `reason`, or `code` with a reason client-go does not know.
    fn reason_or_unknown_code(&self, reason: &StatusReason, code: i32) -> bool {
        self.reason == *reason || (!self.is_known_reason() && self.effective_code() == code)
    }

    /// `NotFound`, or 404 with an unknown reason. (client-go's `errors.IsNotFound`.)
    pub fn is_not_found(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::NotFound, 404)
    }

    /// `Conflict`, or 409 with an unknown reason. (client-go's `errors.IsConflict`.)
    pub fn is_conflict(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::Conflict, 409)
    }

    /// `Gone`, or 410 with an unknown reason. (client-go's `errors.IsGone`.)
    pub fn is_gone(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::Gone, 410)
    }

    /// `Invalid`, or 422 with an unknown reason. (client-go's `errors.IsInvalid`.)
    pub fn is_invalid(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::Invalid, 422)
    }

    /// `Forbidden`, or 403 with an unknown reason. (client-go's `errors.IsForbidden`.)
    pub fn is_forbidden(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::Forbidden, 403)
    }

    /// `Unauthorized`, or 401 with an unknown reason. (client-go's `errors.IsUnauthorized`.)
    pub fn is_unauthorized(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::Unauthorized, 401)
    }

    /// `Timeout`, or 504 with an unknown reason. (client-go's `errors.IsTimeout`.)
    pub fn is_timeout(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::Timeout, 504)
    }

    /// `BadRequest`, or 400 with an unknown reason. (client-go's `errors.IsBadRequest`.)
    pub fn is_bad_request(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::BadRequest, 400)
    }

    /// `MethodNotAllowed`, or 405 with an unknown reason. (client-go's `errors.IsMethodNotSupported`.)
    pub fn is_method_not_supported(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::MethodNotAllowed, 405)
    }

    /// `ServiceUnavailable`, or 503 with an unknown reason. (client-go's `errors.IsServiceUnavailable`.)
    pub fn is_service_unavailable(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::ServiceUnavailable, 503)
    }

    /// `InternalError`, or 500 with an unknown reason. (client-go's `errors.IsInternalError`.)
    pub fn is_internal_error(&self) -> bool {
        self.reason_or_unknown_code(&StatusReason::InternalError, 500)
    }

    /// `AlreadyExists` (by reason only: a 409 may be a conflict).
    pub fn is_already_exists(&self) -> bool {
        self.reason == StatusReason::AlreadyExists
    }

    /// `TooManyRequests` or 429, whatever the reason.
    pub fn is_too_many_requests(&self) -> bool {
        self.reason == StatusReason::TooManyRequests || self.effective_code() == 429
    }

    /// `RequestEntityTooLarge` or 413, whatever the reason.
    pub fn is_request_entity_too_large(&self) -> bool {
        self.reason == StatusReason::RequestEntityTooLarge || self.effective_code() == 413
    }

    /// `ServerTimeout` (by reason only).
    pub fn is_server_timeout(&self) -> bool {
        self.reason == StatusReason::ServerTimeout
    }

    /// Whether a watch or list must restart from a fresh list: `410` with reason `Expired`
    /// or `Gone` (what client-go's reflector checks).
    pub fn is_resource_expired(&self) -> bool {
        matches!(self.reason, StatusReason::Expired | StatusReason::Gone)
            || (self.code == 410
                && matches!(self.reason, StatusReason::Unknown | StatusReason::Other(_)))
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = if self.message.is_empty() {
            "unknown error"
        } else {
            &self.message
        };
        write!(f, "{message}")?;
        match (self.reason.is_unknown(), self.code) {
            (true, 0) => Ok(()),
            (true, code) => write!(f, " (code {code})"),
            (false, 0) => write!(f, " ({})", self.reason),
            (false, code) => write!(f, " ({}, code {code})", self.reason),
        }
    }
}

impl std::error::Error for Status {}

/// Extra data about a [`Status`] (`metav1.StatusDetails`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusDetails {
    /// Name of the object concerned.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub name: String,
    /// Its API group.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub group: String,
    /// Its kind (or resource, for some errors).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub kind: String,
    /// Its uid.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub uid: String,
    /// Individual causes (e.g. one per invalid field).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_default"
    )]
    pub causes: Vec<StatusCause>,
    /// Seconds the client should wait before retrying; 0 when unset.
    #[serde(
        default,
        skip_serializing_if = "is_zero_i32",
        deserialize_with = "null_default"
    )]
    pub retry_after_seconds: i32,
}

/// One cause of a failure (`metav1.StatusCause`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusCause {
    /// Machine-readable cause type, e.g. `FieldValueInvalid`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub reason: String,
    /// Human-readable description.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub message: String,
    /// The field concerned, e.g. `spec.replicas`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "null_default"
    )]
    pub field: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expired_status_from_a_server() {
        let text = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}"#;
        let st: Status = serde_json::from_str(text).unwrap();
        assert_eq!(st.reason, StatusReason::Expired);
        assert_eq!(st.code, 410);
        assert!(st.is_failure() && st.is_resource_expired());
        assert_eq!(
            st.to_string(),
            "too old resource version: 1 (2) (Expired, code 410)"
        );
        assert_eq!(
            serde_json::to_string(&st).unwrap(),
            r#"{"apiVersion":"v1","kind":"Status","metadata":{},"status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}"#
        );
    }

    #[test]
    fn details_and_causes_round_trip() {
        let text = r#"{"metadata":{},"status":"Failure","message":"Pod \"x\" is invalid","reason":"Invalid","details":{"name":"x","kind":"pods","causes":[{"reason":"FieldValueRequired","message":"Required value","field":"spec.containers"}],"retryAfterSeconds":2},"code":422}"#;
        let st: Status = serde_json::from_str(text).unwrap();
        assert_eq!(
            st.details.as_ref().unwrap().causes[0].field,
            "spec.containers"
        );
        assert_eq!(st.retry_after_seconds(), Some(2));
        assert_eq!(serde_json::to_string(&st).unwrap(), text);
    }

    #[test]
    fn reasons_round_trip_including_unknown_strings() {
        for r in [
            "NotFound",
            "AlreadyExists",
            "Conflict",
            "Gone",
            "Expired",
            "Invalid",
            "Forbidden",
            "Unauthorized",
            "TooManyRequests",
            "Timeout",
            "ServerTimeout",
            "BadRequest",
            "MethodNotAllowed",
            "NotAcceptable",
            "UnsupportedMediaType",
            "InternalError",
            "ServiceUnavailable",
            "RequestEntityTooLarge",
            "SomethingNew",
        ] {
            let reason = StatusReason::parse(r);
            assert_eq!(reason.as_str(), r);
            assert_eq!(reason.http_code().is_none(), r == "SomethingNew", "{r}");
            let json = serde_json::to_string(&reason).unwrap();
            assert_eq!(serde_json::from_str::<StatusReason>(&json).unwrap(), reason);
        }
        assert_eq!(
            StatusReason::from("Whatever"),
            StatusReason::Other("Whatever".into())
        );
        let st: Status = serde_json::from_str(r#"{"reason":null}"#).unwrap();
        assert!(st.reason.is_unknown());
    }

    #[test]
    fn constructors() {
        let st = Status::from_reason(StatusReason::NotFound, "pods \"x\" not found");
        assert_eq!(st.code, 404);
        assert_eq!(st.kind, "Status");
        assert!(!st.is_resource_expired());
        let ok = Status::success();
        assert!(!ok.is_failure());
        let err: Box<dyn std::error::Error> = Box::new(st);
        assert_eq!(err.to_string(), "pods \"x\" not found (NotFound, code 404)");
        assert!(serde_json::from_str::<Status>(r#"{"code":"x"}"#).is_err());
    }

    /// client-go's `errors.Is*`: the reason decides; an unknown reason lets the code decide;
    /// a Status without a code stands for its reason's.
    #[test]
    fn the_predicates_read_the_reason_then_for_an_unknown_one_the_code() {
        let with = |code: i32, reason: StatusReason| Status::failure(code, reason, "x");
        assert!(with(404, StatusReason::NotFound).is_not_found());
        assert!(with(0, StatusReason::NotFound).is_not_found());
        assert_eq!(with(0, StatusReason::NotFound).effective_code(), 404);
        assert!(with(404, StatusReason::Unknown).is_not_found());
        assert!(with(404, StatusReason::Other("Custom".into())).is_not_found());
        // A known reason is not overridden by the code.
        assert!(!with(404, StatusReason::Forbidden).is_not_found());
        assert!(!with(500, StatusReason::Other("StoreReadError".into())).is_internal_error());
        assert!(with(500, StatusReason::Unknown).is_internal_error());
        // By reason only, or by reason or code whatever the reason.
        assert!(!with(409, StatusReason::Unknown).is_already_exists());
        assert!(with(409, StatusReason::Unknown).is_conflict());
        assert!(with(429, StatusReason::Forbidden).is_too_many_requests());
        assert!(with(413, StatusReason::BadRequest).is_request_entity_too_large());
        assert!(!with(500, StatusReason::Unknown).is_server_timeout());
        for (code, test) in [
            (410, Status::is_gone as fn(&Status) -> bool),
            (422, Status::is_invalid),
            (403, Status::is_forbidden),
            (401, Status::is_unauthorized),
            (504, Status::is_timeout),
            (400, Status::is_bad_request),
            (405, Status::is_method_not_supported),
            (503, Status::is_service_unavailable),
        ] {
            assert!(test(&with(code, StatusReason::Unknown)), "{code}");
            assert!(!test(&with(code + 1, StatusReason::Unknown)), "{code} + 1");
        }
    }
}
