//! API errors as `metav1.Status` values, with the reasons, codes and messages the real
//! kube-apiserver uses.
//!
//! Mirrors `k8s.io/apimachinery/pkg/api/errors` (`NewNotFound`, `NewAlreadyExists`,
//! `NewConflict`, `NewInvalid`, `NewResourceExpired`, ...). The messages are built the same
//! way (`configmaps "x" not found`, `Operation cannot be fulfilled on ...`), because clients
//! and people match on them. [`ApiError`] wraps a [`Status`] plus the `Retry-After` header a
//! response must carry; every handler returns `Result<_, ApiError>` and the HTTP layer turns
//! the error into a JSON Status body with the matching HTTP code.

use clientgo_apimachinery::{Status, StatusCause, StatusDetails, StatusReason};

/// A failed request: the `Status` body and, for 429/5xx, the `Retry-After` seconds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The Status written as the response body (boxed: errors stay one pointer wide).
    pub status: Box<Status>,
    /// Seconds for the `Retry-After` header, if any.
    pub retry_after: Option<u32>,
}

impl From<Status> for ApiError {
    fn from(status: Status) -> ApiError {
        ApiError {
            status: Box::new(status),
            retry_after: None,
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.status.fmt(f)
    }
}

impl std::error::Error for ApiError {}

/// The result type of every handler.
pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    /// The HTTP status code of the response.
    pub fn code(&self) -> u16 {
        u16::try_from(self.status.code)
            .ok()
            .filter(|c| (100..600).contains(c))
            .unwrap_or(500)
    }

    fn with_details(mut self, details: StatusDetails) -> ApiError {
        self.status.details = Some(details);
        self
    }
}

fn details(group: &str, kind: &str, name: &str) -> StatusDetails {
    StatusDetails {
        name: name.to_owned(),
        group: group.to_owned(),
        kind: kind.to_owned(),
        ..StatusDetails::default()
    }
}

/// `resource` rendered as Go's `schema.GroupResource.String()`: `configmaps` or `deployments.apps`.
pub fn group_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_owned()
    } else {
        format!("{resource}.{group}")
    }
}

/// 404 `<resource> "<name>" not found`.
pub fn not_found(group: &str, resource: &str, name: &str) -> ApiError {
    let msg = format!("{} \"{name}\" not found", group_resource(group, resource));
    ApiError::from(Status::failure(404, StatusReason::NotFound, msg))
        .with_details(details(group, resource, name))
}

/// 404 for a path the server does not serve.
pub fn no_route() -> ApiError {
    let mut status = Status::failure(
        404,
        StatusReason::NotFound,
        "the server could not find the requested resource",
    );
    status.details = Some(StatusDetails::default());
    status.into()
}

/// 409 `<resource> "<name>" already exists`.
pub fn already_exists(group: &str, resource: &str, name: &str) -> ApiError {
    let msg = format!(
        "{} \"{name}\" already exists",
        group_resource(group, resource)
    );
    ApiError::from(Status::failure(409, StatusReason::AlreadyExists, msg))
        .with_details(details(group, resource, name))
}

/// 409 Conflict for a stale resourceVersion.
pub fn conflict_modified(group: &str, resource: &str, name: &str) -> ApiError {
    conflict(
        group,
        resource,
        name,
        "the object has been modified; please apply your changes to the latest version and try again",
    )
}

/// 409 `Operation cannot be fulfilled on <resource> "<name>": <why>`.
pub fn conflict(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    let msg = format!(
        "Operation cannot be fulfilled on {} \"{name}\": {why}",
        group_resource(group, resource)
    );
    ApiError::from(Status::failure(409, StatusReason::Conflict, msg))
        .with_details(details(group, resource, name))
}

/// One field error of a 422 Invalid (`field.Error`).
#[derive(Debug, Clone)]
pub struct FieldError {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueForbidden`, ...
    pub reason: &'static str,
    /// The field path, e.g. `metadata.name`.
    pub field: String,
    /// The full message, e.g. `Invalid value: "x": ...`.
    pub detail: String,
}

impl FieldError {
    /// `Invalid value: "<value>": <why>`.
    pub fn invalid(field: &str, value: &str, why: &str) -> FieldError {
        FieldError {
            reason: "FieldValueInvalid",
            field: field.to_owned(),
            detail: format!("Invalid value: \"{value}\": {why}"),
        }
    }

    /// `Required value: <why>`.
    pub fn required(field: &str, why: &str) -> FieldError {
        FieldError {
            reason: "FieldValueRequired",
            field: field.to_owned(),
            detail: format!("Required value: {why}"),
        }
    }

    /// `Forbidden: <why>`.
    pub fn forbidden(field: &str, why: &str) -> FieldError {
        FieldError {
            reason: "FieldValueForbidden",
            field: field.to_owned(),
            detail: format!("Forbidden: {why}"),
        }
    }

    /// `Unsupported value: "<value>": supported values: ...`.
    pub fn unsupported(field: &str, value: &str, supported: &[&str]) -> FieldError {
        let list: Vec<String> = supported.iter().map(|s| format!("\"{s}\"")).collect();
        FieldError {
            reason: "FieldValueNotSupported",
            field: field.to_owned(),
            detail: format!(
                "Unsupported value: \"{value}\": supported values: {}",
                list.join(", ")
            ),
        }
    }
}

/// 422 `<Kind>.<group> "<name>" is invalid: <field>: <detail>[, ...]` (`errors.NewInvalid`).
pub fn invalid(group: &str, kind: &str, name: &str, errors: &[FieldError]) -> ApiError {
    let qualified = if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    };
    // `field.ErrorList.ToAggregate`: each distinct message once, in order.
    let mut parts: Vec<String> = Vec::new();
    for part in errors.iter().map(|e| format!("{}: {}", e.field, e.detail)) {
        if !parts.contains(&part) {
            parts.push(part);
        }
    }
    let joined = if parts.len() == 1 {
        parts[0].clone()
    } else {
        format!("[{}]", parts.join(", "))
    };
    let msg = format!("{qualified} \"{name}\" is invalid: {joined}");
    let mut d = details(group, kind, name);
    d.causes = errors
        .iter()
        .map(|e| StatusCause {
            reason: e.reason.to_owned(),
            message: e.detail.clone(),
            field: e.field.clone(),
        })
        .collect();
    ApiError::from(Status::failure(422, StatusReason::Invalid, msg)).with_details(d)
}

/// 422 for invalid list/watch options (`ListOptions.meta.k8s.io "" is invalid: ...`).
pub fn invalid_list_options(errors: &[FieldError]) -> ApiError {
    invalid("meta.k8s.io", "ListOptions", "", errors)
}

/// 400 BadRequest with a message.
pub fn bad_request(msg: impl Into<String>) -> ApiError {
    Status::failure(400, StatusReason::BadRequest, msg).into()
}

/// 410 Expired (`errors.NewResourceExpired`).
pub fn expired(msg: impl Into<String>) -> ApiError {
    Status::failure(410, StatusReason::Expired, msg).into()
}

/// 410 for an exact list at a compacted resourceVersion.
pub fn list_too_old() -> ApiError {
    expired("The resourceVersion for the provided list is too old.")
}

/// 410 for a watch start older than the event history (`too old resource version: X (Y)`).
pub fn watch_too_old(requested: u64, oldest_kept: u64) -> ApiError {
    expired(format!(
        "too old resource version: {requested} ({oldest_kept})"
    ))
}

/// 504 `Too large resource version` with the `ResourceVersionTooLarge` cause.
pub fn too_large_resource_version(requested: u64, current: u64) -> ApiError {
    let msg = format!("Too large resource version: {requested}, current: {current}");
    let mut status = Status::failure(504, StatusReason::Timeout, format!("Timeout: {msg}"));
    status.details = Some(StatusDetails {
        causes: vec![StatusCause {
            reason: "ResourceVersionTooLarge".to_owned(),
            message: "Too large resource version".to_owned(),
            field: String::new(),
        }],
        retry_after_seconds: 1,
        ..StatusDetails::default()
    });
    ApiError {
        status: Box::new(status),
        retry_after: Some(1),
    }
}

/// 405 MethodNotAllowed, with empty details as kube-apiserver 1.36.2 writes them.
pub fn method_not_allowed() -> ApiError {
    let mut status = Status::failure(
        405,
        StatusReason::MethodNotAllowed,
        "the server does not allow this method on the requested resource",
    );
    status.details = Some(StatusDetails::default());
    status.into()
}

/// 415 UnsupportedMediaType for a body format the endpoint does not accept.
pub fn unsupported_media_type(accepted: &[&str]) -> ApiError {
    Status::failure(
        415,
        StatusReason::UnsupportedMediaType,
        format!(
            "the body of the request was in an unknown format - accepted media types include: {}",
            accepted.join(", ")
        ),
    )
    .into()
}

/// 406 NotAcceptable for an `Accept` header the server cannot satisfy.
pub fn not_acceptable() -> ApiError {
    Status::failure(
        406,
        StatusReason::NotAcceptable,
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )
    .into()
}

/// 401 Unauthorized.
pub fn unauthorized() -> ApiError {
    Status::failure(401, StatusReason::Unauthorized, "Unauthorized").into()
}

/// 403 Forbidden with a message.
pub fn forbidden(group: &str, resource: &str, name: &str, why: &str) -> ApiError {
    let msg = format!(
        "{} \"{name}\" is forbidden: {why}",
        group_resource(group, resource)
    );
    ApiError::from(Status::failure(403, StatusReason::Forbidden, msg))
        .with_details(details(group, resource, name))
}

/// 403 for a create in a terminating namespace, with the `NamespaceTerminating` cause the
/// NamespaceLifecycle admission plugin of kube-apiserver 1.36.2 gives it.
pub fn namespace_terminating(group: &str, resource: &str, name: &str, namespace: &str) -> ApiError {
    let mut d = details(group, resource, name);
    d.causes = vec![StatusCause {
        reason: "NamespaceTerminating".to_owned(),
        message: format!("namespace {namespace} is being terminated"),
        field: "metadata.namespace".to_owned(),
    }];
    let why = format!(
        "unable to create new content in namespace {namespace} because it is being terminated"
    );
    let msg = format!(
        "{} \"{name}\" is forbidden: {why}",
        group_resource(group, resource)
    );
    ApiError::from(Status::failure(403, StatusReason::Forbidden, msg)).with_details(d)
}

/// 413 RequestEntityTooLarge.
pub fn too_large_body(limit: usize) -> ApiError {
    Status::failure(
        413,
        StatusReason::RequestEntityTooLarge,
        format!("Request entity too large: limit is {limit}"),
    )
    .into()
}

/// 500 InternalError `Internal error occurred: <msg>`.
pub fn internal(msg: impl std::fmt::Display) -> ApiError {
    let mut status = Status::failure(
        500,
        StatusReason::InternalError,
        format!("Internal error occurred: {msg}"),
    );
    status.details = Some(StatusDetails {
        causes: vec![StatusCause {
            message: msg.to_string(),
            ..StatusCause::default()
        }],
        ..StatusDetails::default()
    });
    status.into()
}

/// 500 for a failure that is not an API error (a plain Go `error` through
/// `ErrorToAPIStatus`): the message alone, no reason, no details.
pub fn unclassified(msg: impl Into<String>) -> ApiError {
    Status::failure(500, StatusReason::Unknown, msg).into()
}

/// 415 of a built-in resource's PATCH with a content type that is no patch type: go-restful
/// refuses it before the handler, with its own terse message and empty details.
pub fn unsupported_patch_type() -> ApiError {
    let mut status = Status::failure(
        415,
        StatusReason::UnsupportedMediaType,
        "415: Unsupported Media Type",
    );
    status.details = Some(StatusDetails::default());
    status.into()
}

/// 429 TooManyRequests with `Retry-After`.
pub fn too_many_requests(retry_after: u32) -> ApiError {
    let mut status = Status::failure(
        429,
        StatusReason::TooManyRequests,
        "Too many requests, please try again later.",
    );
    status.details = Some(StatusDetails {
        retry_after_seconds: i32::try_from(retry_after).unwrap_or(i32::MAX),
        ..StatusDetails::default()
    });
    ApiError {
        status: Box::new(status),
        retry_after: Some(retry_after),
    }
}

/// 503 ServiceUnavailable with `Retry-After`.
pub fn service_unavailable(retry_after: Option<u32>) -> ApiError {
    let mut err = ApiError::from(Status::failure(
        503,
        StatusReason::ServiceUnavailable,
        "The server is currently unable to handle the request",
    ));
    if let Some(secs) = retry_after {
        err.status.details = Some(StatusDetails {
            retry_after_seconds: i32::try_from(secs).unwrap_or(i32::MAX),
            ..StatusDetails::default()
        });
        err.retry_after = Some(secs);
    }
    err
}

/// 504 Timeout with `Retry-After`.
pub fn gateway_timeout(retry_after: Option<u32>) -> ApiError {
    let mut err = ApiError::from(Status::failure(
        504,
        StatusReason::Timeout,
        "Timeout: request did not complete within the allotted timeout",
    ));
    if let Some(secs) = retry_after {
        err.status.details = Some(StatusDetails {
            retry_after_seconds: i32::try_from(secs).unwrap_or(i32::MAX),
            ..StatusDetails::default()
        });
        err.retry_after = Some(secs);
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_match_the_real_server() {
        let e = conflict_modified("", "configmaps", "x");
        assert_eq!(
            e.status.message,
            "Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply your changes to the latest version and try again"
        );
        assert_eq!(e.code(), 409);
        let e = not_found("apps", "deployments", "web");
        assert_eq!(e.status.message, "deployments.apps \"web\" not found");
        let e = watch_too_old(1, 212);
        assert_eq!(e.status.message, "too old resource version: 1 (212)");
        assert_eq!(e.code(), 410);
        let e = invalid_list_options(&[FieldError::forbidden(
            "resourceVersionMatch",
            "resourceVersionMatch is forbidden for watch",
        )]);
        assert_eq!(
            e.status.message,
            "ListOptions.meta.k8s.io \"\" is invalid: resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch"
        );
    }
}
