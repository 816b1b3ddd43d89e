//! [`ApiError`]: a non-2xx answer from the API server, as a `metav1.Status`, with the
//! predicates of apimachinery's `pkg/api/errors`.
//!
//! How a response becomes an `ApiError` follows client-go's `transformResponse` and
//! `Result.Error` (`rest/request.go`): when the body is a JSON `Status` of `kind: Status` with
//! `status: Failure`, that Status is the error, so the server's reason, message and details
//! win. Otherwise a Status is synthesised like `newUnstructuredResponseError` /
//! `errors.NewGenericServerResponse` do: the reason follows from the code (409 is
//! `AlreadyExists` for a POST and `Conflict` otherwise, 404 `NotFound`, 5xx `InternalError`, …),
//! the message names the resource and name when the request had them, the cause
//! `UnexpectedServerResponse` carries the body's text, and `Retry-After` becomes
//! `details.retryAfterSeconds`.
//!
//! The predicates match as apimachinery's do: by reason, falling back to the code when the
//! reason is not one of the known ones (`is_not_found`, `is_conflict`, `is_gone`, `is_invalid`,
//! `is_forbidden`, `is_unauthorized`, `is_timeout`, …); by reason or code unconditionally
//! (`is_too_many_requests`, `is_request_entity_too_large`); or by reason only
//! (`is_already_exists`, `is_resource_expired`, `is_server_timeout`).
//!
//! Difference from client-go: the synthesised message quotes the first 2 KiB of the body when
//! it is text, whatever the content type says (client-go quotes only `text/*` bodies and says
//! `unknown` for the others), because a proxy's JSON or HTML error page is worth seeing. Bodies
//! that are not UTF-8 text are still reported as `unknown`.

use std::fmt;

/// The longest wait a server's `Retry-After` (or a Status's `retryAfterSeconds`) can impose
/// (`retry::MAX_RETRY_AFTER`, which the retry module documents).
pub(crate) const MAX_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

use clientgo_apimachinery::{Status, StatusCause, StatusDetails, StatusReason};

/// The most of an unstructured error body that is kept (client-go's
/// `maxUnstructuredResponseTextBytes`).
pub const MAX_UNSTRUCTURED_BODY: usize = 2048;

/// The cause type of a synthesised error (`metav1.CauseTypeUnexpectedServerResponse`).
pub const CAUSE_UNEXPECTED_SERVER_RESPONSE: &str = "UnexpectedServerResponse";

/// An error answer from the API server (client-go's `errors.StatusError`).
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    /// The Status: as the server sent it, or synthesised from the response.
    pub status: Status,
    /// The HTTP status code of the response.
    pub http_code: u16,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.status, f)
    }
}

impl std::error::Error for ApiError {}

/// What the request was about, for synthesised messages.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestTarget<'a> {
    /// The HTTP method.
    pub method: &'a str,
    /// The API group (`""` for the core group).
    pub group: &'a str,
    /// The resource, e.g. `pods`.
    pub resource: &'a str,
    /// The object's name.
    pub name: &'a str,
}

impl ApiError {
    /// The error for a response with status `http_code`, headers' `content_type` and
    /// `retry_after` (seconds), and `body`. See the module documentation.
    pub fn from_response(
        http_code: u16,
        content_type: Option<&str>,
        retry_after: Option<i32>,
        body: &[u8],
        target: RequestTarget<'_>,
    ) -> ApiError {
        let json_like = content_type.is_none_or(|ct| media_type(ct).ends_with("json"));
        // A Status in protobuf (the answer to a request that accepted it), as JSON.
        let mut transcoded = Vec::new();
        let protobuf = content_type.is_some_and(clientgo_codec::protobuf::is_protobuf)
            && clientgo_codec::protobuf::object_to_json(body, &mut transcoded).is_ok();
        if json_like || protobuf {
            let json = if protobuf { &transcoded[..] } else { body };
            if let Ok(status) = serde_json::from_slice::<Status>(json) {
                // The kind is checked because any JSON object decodes as a Status.
                if status.kind == "Status" && status.is_failure() {
                    return ApiError { status, http_code };
                }
            }
        }
        ApiError {
            status: generic_status(http_code, body_text(body), retry_after, target),
            http_code,
        }
    }

    /// The Status's code, or the HTTP code when the Status has none.
    pub fn code(&self) -> i32 {
        if self.status.code != 0 {
            self.status.code
        } else {
            i32::from(self.http_code)
        }
    }

    /// The Status's reason.
    pub fn reason(&self) -> &StatusReason {
        &self.status.reason
    }

    /// The Status, with the HTTP code in place of a code it does not carry: what the
    /// predicates below test (client-go's `errors.Is*` look at the Status's code).
    fn coded(&self) -> std::borrow::Cow<'_, Status> {
        if self.status.code != 0 || self.http_code == 0 {
            return std::borrow::Cow::Borrowed(&self.status);
        }
        let mut status = self.status.clone();
        status.code = i32::from(self.http_code);
        std::borrow::Cow::Owned(status)
    }

    /// `NotFound`, or 404 with an unknown reason ([`Status::is_not_found`]).
    pub fn is_not_found(&self) -> bool {
        self.coded().is_not_found()
    }

    /// `AlreadyExists` (by reason only, as a 409 may be a conflict).
    pub fn is_already_exists(&self) -> bool {
        self.status.is_already_exists()
    }

    /// `Conflict`, or 409 with an unknown reason.
    pub fn is_conflict(&self) -> bool {
        self.coded().is_conflict()
    }

    /// `Gone`, or 410 with an unknown reason.
    pub fn is_gone(&self) -> bool {
        self.coded().is_gone()
    }

    /// `Expired` (by reason only): the resourceVersion is too old, relist.
    pub fn is_resource_expired(&self) -> bool {
        self.status.reason == StatusReason::Expired
    }

    /// `TooManyRequests` or 429, whatever the reason.
    pub fn is_too_many_requests(&self) -> bool {
        self.coded().is_too_many_requests()
    }

    /// `RequestEntityTooLarge` or 413, whatever the reason.
    pub fn is_request_entity_too_large(&self) -> bool {
        self.coded().is_request_entity_too_large()
    }

    /// `Invalid`, or 422 with an unknown reason.
    pub fn is_invalid(&self) -> bool {
        self.coded().is_invalid()
    }

    /// `Forbidden`, or 403 with an unknown reason.
    pub fn is_forbidden(&self) -> bool {
        self.coded().is_forbidden()
    }

    /// `Unauthorized`, or 401 with an unknown reason.
    pub fn is_unauthorized(&self) -> bool {
        self.coded().is_unauthorized()
    }

    /// `Timeout`, or 504 with an unknown reason.
    pub fn is_timeout(&self) -> bool {
        self.coded().is_timeout()
    }

    /// `ServerTimeout` (by reason only).
    pub fn is_server_timeout(&self) -> bool {
        self.status.is_server_timeout()
    }

    /// `BadRequest`, or 400 with an unknown reason.
    pub fn is_bad_request(&self) -> bool {
        self.coded().is_bad_request()
    }

    /// `MethodNotAllowed`, or 405 with an unknown reason.
    pub fn is_method_not_supported(&self) -> bool {
        self.coded().is_method_not_supported()
    }

    /// `ServiceUnavailable`, or 503 with an unknown reason.
    pub fn is_service_unavailable(&self) -> bool {
        self.coded().is_service_unavailable()
    }

    /// `InternalError`, or 500 with an unknown reason.
    pub fn is_internal_error(&self) -> bool {
        self.coded().is_internal_error()
    }

    /// How long the server asks the client to wait, if it says (client-go's
    /// `SuggestsClientDelay`: the Status's `retryAfterSeconds`), in seconds, at most
    /// [`MAX_RETRY_AFTER`](crate::retry::MAX_RETRY_AFTER)'s 60.
    pub fn suggests_client_delay(&self) -> Option<i32> {
        let cap = i32::try_from(MAX_RETRY_AFTER.as_secs()).unwrap_or(i32::MAX);
        self.status.retry_after_seconds().map(|s| s.min(cap))
    }

    /// Whether one of the Status's causes has this type (client-go's `HasStatusCause`).
    pub fn has_cause(&self, cause_type: &str) -> bool {
        self.status
            .details
            .as_ref()
            .is_some_and(|d| d.causes.iter().any(|c| c.reason == cause_type))
    }
}

/// The media type of a `Content-Type` value, lower-cased, without parameters.
fn media_type(content_type: &str) -> String {
    content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// The first [`MAX_UNSTRUCTURED_BODY`] bytes of the body as trimmed text, or `unknown` when
/// they are not text.
fn body_text(body: &[u8]) -> String {
    let mut end = body.len().min(MAX_UNSTRUCTURED_BODY);
    // Do not cut a UTF-8 sequence in two.
    while end < body.len() && end > 0 && (body[end] & 0xC0) == 0x80 {
        end -= 1;
    }
    match std::str::from_utf8(&body[..end]) {
        Ok(text) if !text.chars().any(|c| c.is_control() && !c.is_whitespace()) => {
            text.trim().to_owned()
        }
        _ => "unknown".to_owned(),
    }
}

/// apimachinery's `NewGenericServerResponse` with `isUnexpectedResponse` set.
fn generic_status(
    code: u16,
    server_message: String,
    retry_after: Option<i32>,
    target: RequestTarget<'_>,
) -> Status {
    use StatusReason as R;
    let (reason, mut message) = match code {
        409 if target.method == "POST" => {
            (R::AlreadyExists, "the server reported a conflict".into())
        }
        409 => (R::Conflict, "the server reported a conflict".into()),
        404 => (
            R::NotFound,
            "the server could not find the requested resource".into(),
        ),
        400 => (
            R::BadRequest,
            "the server rejected our request for an unknown reason".into(),
        ),
        401 => (
            R::Unauthorized,
            "the server has asked for the client to provide credentials".into(),
        ),
        403 => (R::Forbidden, server_message.clone()),
        406 if server_message.is_empty() || server_message == "unknown" => (
            R::NotAcceptable,
            "the server was unable to respond with a content type that the client supports".into(),
        ),
        406 => (R::NotAcceptable, server_message.clone()),
        415 => (R::UnsupportedMediaType, server_message.clone()),
        405 => (
            R::MethodNotAllowed,
            "the server does not allow this method on the requested resource".into(),
        ),
        422 => (
            R::Invalid,
            "the server rejected our request due to an error in our request".into(),
        ),
        503 => (
            R::ServiceUnavailable,
            "the server is currently unable to handle the request".into(),
        ),
        504 => (
            R::Timeout,
            "the server was unable to return a response in the time allotted, but may still be \
             processing the request"
                .into(),
        ),
        429 => (
            R::TooManyRequests,
            "the server has received too many requests and has asked us to try again later".into(),
        ),
        500.. => (
            R::InternalError,
            format!(
                "an error on the server ({server_message:?}) has prevented the request from succeeding"
            ),
        ),
        _ => (
            R::Unknown,
            format!(
                "the server responded with the status code {code} but did not return more information"
            ),
        ),
    };
    let qualified = match (target.resource, target.group) {
        ("", _) => String::new(),
        (resource, "") => resource.to_owned(),
        (resource, group) => format!("{resource}.{group}"),
    };
    let verb = target.method.to_ascii_lowercase();
    match (qualified.is_empty(), target.name.is_empty()) {
        (false, false) => message = format!("{message} ({verb} {qualified} {})", target.name),
        (false, true) => message = format!("{message} ({verb} {qualified})"),
        _ => {}
    }
    let mut status = Status::failure(i32::from(code), reason, message);
    status.details = Some(StatusDetails {
        group: target.group.to_owned(),
        kind: target.resource.to_owned(),
        name: target.name.to_owned(),
        causes: vec![StatusCause {
            reason: CAUSE_UNEXPECTED_SERVER_RESPONSE.to_owned(),
            message: server_message,
            field: String::new(),
        }],
        retry_after_seconds: retry_after.unwrap_or(0).max(0),
        ..StatusDetails::default()
    });
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target<'a>(method: &'a str, resource: &'a str, name: &'a str) -> RequestTarget<'a> {
        RequestTarget {
            method,
            group: "",
            resource,
            name,
        }
    }

    #[test]
    fn a_status_in_protobuf_is_read_as_the_status() {
        // kube-apiserver 1.36.2's 404 for a ConfigMap GET that accepted protobuf.
        let body = include_bytes!("../../codec/tests/fixtures/protobuf/status404.pb");
        let error = ApiError::from_response(
            404,
            Some("application/vnd.kubernetes.protobuf"),
            None,
            body,
            target("GET", "configmaps", "nope"),
        );
        assert!(error.is_not_found());
        assert_eq!(error.status.message, r#"configmaps "nope" not found"#);
        assert_eq!(error.status.details.as_ref().unwrap().kind, "configmaps");
        // Damaged, it is a 404 all the same, its bytes not quoted.
        let error = ApiError::from_response(
            404,
            Some("application/vnd.kubernetes.protobuf"),
            None,
            &body[..body.len() - 10],
            target("GET", "configmaps", "nope"),
        );
        assert!(error.is_not_found());
        assert!(
            !error.status.message.contains("k8s"),
            "{}",
            error.status.message
        );
    }

    #[test]
    fn server_status_wins() {
        let body = br#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods \"web\" not found","reason":"NotFound","details":{"name":"web","kind":"pods"},"code":404}"#;
        let err = ApiError::from_response(
            404,
            Some("application/json"),
            None,
            body,
            target("GET", "pods", "web"),
        );
        assert_eq!(err.status.message, "pods \"web\" not found");
        assert!(err.is_not_found());
        assert!(!err.has_cause(CAUSE_UNEXPECTED_SERVER_RESPONSE));
        assert_eq!(
            err.to_string(),
            "pods \"web\" not found (NotFound, code 404)"
        );
    }

    #[test]
    fn non_status_bodies_are_synthesised_like_client_go() {
        let err = ApiError::from_response(
            404,
            Some("text/plain; charset=utf-8"),
            None,
            b"404 page not found\n",
            target("GET", "pods", "web"),
        );
        assert_eq!(err.status.reason, StatusReason::NotFound);
        assert_eq!(
            err.status.message,
            "the server could not find the requested resource (get pods web)"
        );
        assert!(err.has_cause(CAUSE_UNEXPECTED_SERVER_RESPONSE));
        let cause = &err.status.details.as_ref().unwrap().causes[0];
        assert_eq!(cause.message, "404 page not found");

        let post = ApiError::from_response(409, None, None, b"", target("POST", "pods", ""));
        assert!(post.is_already_exists() && !post.is_conflict());
        let put = ApiError::from_response(409, None, None, b"", target("PUT", "pods", "a"));
        assert!(put.is_conflict() && !put.is_already_exists());

        let err = ApiError::from_response(
            502,
            Some("text/html"),
            Some(3),
            b"<h1>Bad gateway</h1>",
            target("GET", "", ""),
        );
        assert!(err.is_internal_error());
        assert_eq!(
            err.status.message,
            "an error on the server (\"<h1>Bad gateway</h1>\") has prevented the request from succeeding"
        );
        assert_eq!(err.suggests_client_delay(), Some(3));

        let err = ApiError::from_response(418, None, None, &[0, 1, 2], target("GET", "", ""));
        assert_eq!(err.status.reason, StatusReason::Unknown);
        assert_eq!(
            err.status.details.as_ref().unwrap().causes[0].message,
            "unknown"
        );
    }

    #[test]
    fn a_suggested_client_delay_is_capped_at_max_retry_after() {
        let err =
            ApiError::from_response(503, None, Some(i32::MAX), b"", target("GET", "pods", ""));
        assert_eq!(err.suggests_client_delay(), Some(60));
    }

    #[test]
    fn a_json_status_with_success_or_another_kind_is_not_trusted() {
        let body = br#"{"kind":"Pod","status":"Failure","reason":"NotFound","code":404}"#;
        let err = ApiError::from_response(409, None, None, body, target("PUT", "pods", "a"));
        assert!(err.is_conflict());
        assert!(err.has_cause(CAUSE_UNEXPECTED_SERVER_RESPONSE));
    }

    #[test]
    fn long_bodies_are_cut_at_2_kib_on_a_character_boundary() {
        let body = "é".repeat(3000);
        let err = ApiError::from_response(
            500,
            Some("text/plain"),
            None,
            body.as_bytes(),
            target("GET", "", ""),
        );
        let cause = &err.status.details.as_ref().unwrap().causes[0].message;
        assert_eq!(cause.len(), 2048);
        assert!(cause.chars().all(|c| c == 'é'));
    }

    #[test]
    fn predicates_fall_back_to_the_code_only_for_unknown_reasons() {
        let with = |code: i32, reason: StatusReason| ApiError {
            status: Status::failure(code, reason, "x"),
            http_code: 200,
        };
        assert!(with(404, StatusReason::Unknown).is_not_found());
        assert!(with(404, StatusReason::Other("Custom".into())).is_not_found());
        assert!(!with(404, StatusReason::Forbidden).is_not_found());
        assert!(!with(404, StatusReason::Other("StoreReadError".into())).is_not_found());
        assert!(with(429, StatusReason::Forbidden).is_too_many_requests());
        assert!(!with(410, StatusReason::Unknown).is_resource_expired());
        assert!(with(410, StatusReason::Unknown).is_gone());
        assert!(with(410, StatusReason::Expired).is_resource_expired());
        assert!(!with(500, StatusReason::Unknown).is_server_timeout());
        assert!(with(500, StatusReason::ServerTimeout).is_server_timeout());
        assert!(with(504, StatusReason::Unknown).is_timeout());
        let coded_by_http = ApiError {
            status: Status::default(),
            http_code: 403,
        };
        assert!(coded_by_http.is_forbidden());
    }
}
