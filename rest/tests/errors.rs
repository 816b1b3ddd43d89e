//! Error answers become `ApiError`s whose predicates match as apimachinery's do: Status bodies
//! as kube-apiserver sends them, and bodies that are not a Status.

mod support;

use clientgo_apimachinery::{ObjectMeta, StatusReason};
use clientgo_rest::{Config, Error, RestClient};
use support::{Reply, TestServer, status_json};

type Predicate = (&'static str, fn(&Error) -> bool);

const PREDICATES: [Predicate; 14] = [
    ("not_found", Error::is_not_found),
    ("already_exists", Error::is_already_exists),
    ("conflict", Error::is_conflict),
    ("gone", Error::is_gone),
    ("resource_expired", Error::is_resource_expired),
    ("too_many_requests", Error::is_too_many_requests),
    ("invalid", Error::is_invalid),
    ("forbidden", Error::is_forbidden),
    ("unauthorized", Error::is_unauthorized),
    ("timeout", Error::is_timeout),
    ("server_timeout", Error::is_server_timeout),
    ("bad_request", Error::is_bad_request),
    ("service_unavailable", Error::is_service_unavailable),
    ("internal_error", Error::is_internal_error),
];

struct Case {
    method: http::Method,
    reply: fn() -> Reply,
    expect: &'static [&'static str],
    reason: StatusReason,
    message: &'static str,
}

fn cases() -> Vec<Case> {
    use StatusReason as R;
    use http::Method as M;
    vec![
        Case {
            method: M::GET,
            reply: || {
                Reply::json(
                    404,
                    r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#,
                )
            },
            expect: &["not_found"],
            reason: R::NotFound,
            message: "configmaps \"x\" not found",
        },
        Case {
            method: M::POST,
            reply: || {
                Reply::json(
                    409,
                    status_json(409, "AlreadyExists", "configmaps \"x\" already exists"),
                )
            },
            expect: &["already_exists"],
            reason: R::AlreadyExists,
            message: "configmaps \"x\" already exists",
        },
        Case {
            method: M::PUT,
            reply: || {
                Reply::json(
                    409,
                    status_json(
                        409,
                        "Conflict",
                        "Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply your changes to the latest version and try again",
                    ),
                )
            },
            expect: &["conflict"],
            reason: R::Conflict,
            message: "Operation cannot be fulfilled on configmaps \"x\": the object has been modified; please apply your changes to the latest version and try again",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::json(
                    410,
                    status_json(
                        410,
                        "Expired",
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                    ),
                )
            },
            expect: &["resource_expired"],
            reason: R::Expired,
            message: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::json(
                    410,
                    status_json(410, "Gone", "too old resource version: 5 (100)"),
                )
            },
            expect: &["gone"],
            reason: R::Gone,
            message: "too old resource version: 5 (100)",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::json(429, r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":1},"code":429}"#)
                    .with_header("retry-after", "1")
            },
            expect: &["too_many_requests"],
            reason: R::TooManyRequests,
            message: "Too many requests, please try again later.",
        },
        Case {
            method: M::POST,
            reply: || {
                Reply::json(
                    422,
                    r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"ConfigMap \"BAD\" is invalid: metadata.name: Invalid value: \"BAD\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters","reason":"Invalid","details":{"name":"BAD","kind":"ConfigMap","causes":[{"reason":"FieldValueInvalid","message":"Invalid value: \"BAD\"","field":"metadata.name"}]},"code":422}"#,
                )
            },
            expect: &["invalid"],
            reason: R::Invalid,
            message: "ConfigMap \"BAD\" is invalid: metadata.name: Invalid value: \"BAD\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::json(
                    403,
                    status_json(
                        403,
                        "Forbidden",
                        "configmaps \"x\" is forbidden: User \"system:anonymous\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"prod\"",
                    ),
                )
            },
            expect: &["forbidden"],
            reason: R::Forbidden,
            message: "configmaps \"x\" is forbidden: User \"system:anonymous\" cannot get resource \"configmaps\" in API group \"\" in the namespace \"prod\"",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::json(
                    401,
                    r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#,
                )
            },
            expect: &["unauthorized"],
            reason: R::Unauthorized,
            message: "Unauthorized",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::json(
                    504,
                    status_json(
                        504,
                        "Timeout",
                        "Timeout: request did not complete within requested timeout - context deadline exceeded",
                    ),
                )
            },
            expect: &["timeout"],
            reason: R::Timeout,
            message: "Timeout: request did not complete within requested timeout - context deadline exceeded",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::json(
                    500,
                    r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"The list operation against pods could not be completed at this time, please try again.","reason":"ServerTimeout","details":{"name":"list","kind":"pods","retryAfterSeconds":2},"code":500}"#,
                )
            },
            expect: &["server_timeout"],
            reason: R::ServerTimeout,
            message: "The list operation against pods could not be completed at this time, please try again.",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::json(
                    400,
                    status_json(
                        400,
                        "BadRequest",
                        "Unable to find \"/v1, Resource=nope\" that match label selector \"\", field selector \"\": the server could not find the requested resource",
                    ),
                )
            },
            expect: &["bad_request"],
            reason: R::BadRequest,
            message: "Unable to find \"/v1, Resource=nope\" that match label selector \"\", field selector \"\": the server could not find the requested resource",
        },
        // Bodies that are not a Status: the reason comes from the code.
        Case {
            method: M::GET,
            reply: || Reply::text(404, "text/plain; charset=utf-8", "404 page not found\n"),
            expect: &["not_found"],
            reason: R::NotFound,
            message: "the server could not find the requested resource (get configmaps x)",
        },
        Case {
            method: M::GET,
            reply: || {
                Reply::text(
                    503,
                    "text/html",
                    "<html><body>upstream unavailable</body></html>",
                )
            },
            expect: &["service_unavailable"],
            reason: R::ServiceUnavailable,
            message: "the server is currently unable to handle the request (get configmaps x)",
        },
        Case {
            method: M::GET,
            reply: || Reply::text(502, "text/plain", "bad gateway"),
            expect: &["internal_error"],
            reason: R::InternalError,
            message: "an error on the server (\"bad gateway\") has prevented the request from succeeding (get configmaps x)",
        },
        Case {
            method: M::POST,
            reply: || Reply::json(409, r#"{"error":"duplicate"}"#),
            expect: &["already_exists"],
            reason: R::AlreadyExists,
            message: "the server reported a conflict (post configmaps x)",
        },
        Case {
            method: M::GET,
            reply: || Reply::text(403, "text/plain", "Forbidden by the proxy"),
            expect: &["forbidden"],
            reason: R::Forbidden,
            message: "Forbidden by the proxy (get configmaps x)",
        },
    ]
}

#[tokio::test]
async fn every_status_maps_to_its_predicate() {
    for (i, case) in cases().into_iter().enumerate() {
        let reply = case.reply;
        let server = TestServer::plain(move |_, _| reply()).await;
        let mut config = Config::new(server.url("http").parse().unwrap());
        config.qps = -1.0;
        let client = RestClient::new(&config).unwrap();
        let err = client
            .request(case.method.clone())
            .group_version("", "v1")
            .namespace("prod")
            .resource("configmaps")
            .name("x")
            .max_retries(0)
            .send()
            .await
            .unwrap_err();
        let status = err
            .status()
            .unwrap_or_else(|| panic!("case {i}: not an API error: {err}"));
        assert_eq!(status.reason, case.reason, "case {i}");
        assert_eq!(status.message, case.message, "case {i}");
        for (name, predicate) in PREDICATES {
            assert_eq!(
                predicate(&err),
                case.expect.contains(&name),
                "case {i} ({}): is_{name}",
                case.reason
            );
        }
    }
}

#[tokio::test]
async fn retry_hints_and_causes_survive() {
    let server = TestServer::plain(|_, _| {
        Reply::text(503, "text/plain", "overloaded").with_header("retry-after", "bogus")
    })
    .await;
    let mut config = Config::new(server.url("http").parse().unwrap());
    config.qps = -1.0;
    let client = RestClient::new(&config).unwrap();
    let err = client.get().abs_path("/healthz").send().await.unwrap_err();
    let api = err.api_error().unwrap();
    assert_eq!(api.http_code, 503);
    assert!(api.has_cause("UnexpectedServerResponse"));
    assert_eq!(
        api.status.details.as_ref().unwrap().causes[0].message,
        "overloaded"
    );
    assert_eq!(
        server.count(),
        1,
        "a non-integer Retry-After is not retried"
    );
}

#[tokio::test]
async fn a_body_of_the_wrong_type_is_a_decode_error_with_type_and_position() {
    let server = TestServer::plain(|_, _| Reply::json(200, "{\n  \"name\": 42\n}")).await;
    let mut config = Config::new(server.url("http").parse().unwrap());
    config.qps = -1.0;
    let client = RestClient::new(&config).unwrap();
    let response = client.get().abs_path("/x").send().await.unwrap();
    let err = response.json::<ObjectMeta>().unwrap_err();
    let Error::Decode(decode) = &err else {
        panic!("not a decode error: {err}");
    };
    assert!(
        decode.type_name.ends_with("ObjectMeta"),
        "{}",
        decode.type_name
    );
    assert_eq!(decode.line, 2);
    assert!(err.to_string().contains("line 2"), "{err}");
}
