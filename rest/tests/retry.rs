//! Retries, throttling and time limits. Timing is checked on tokio's paused clock with a
//! scripted `HttpClient` (no real I/O, so the clock only moves when every task waits on it);
//! the behaviour on real connections (resets, a stalled server) is checked against servers on
//! 127.0.0.1.

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use clientgo_rest::{
    Body, BoxFuture, Config, Error, HttpClient, RestClient, TransportError, TransportErrorKind,
};
use http::Method;
use prometheus_client::registry::Registry;
use support::{Reply, TestServer};
use tokio::time::Instant;

/// What the scripted client answers, in order; the last answer repeats.
#[derive(Clone, Debug)]
enum Answer {
    Status(u16, Option<&'static str>),
    Fail(TransportErrorKind),
}

#[derive(Default)]
struct Script {
    answers: Mutex<VecDeque<Answer>>,
    sent: Mutex<Vec<(Duration, Method)>>,
    start: Mutex<Option<Instant>>,
}

#[derive(Clone, Default)]
struct Scripted(Arc<Script>);

impl Scripted {
    fn new(answers: &[Answer]) -> Scripted {
        let script = Script::default();
        *script.answers.lock().unwrap() = answers.iter().cloned().collect();
        *script.start.lock().unwrap() = Some(Instant::now());
        Scripted(Arc::new(script))
    }

    /// When each attempt was made (since the script was made), and its method.
    fn sent(&self) -> Vec<(Duration, Method)> {
        self.0.sent.lock().unwrap().clone()
    }

    fn times(&self) -> Vec<Duration> {
        self.sent().into_iter().map(|(t, _)| t).collect()
    }
}

impl HttpClient for Scripted {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Body>, Error>> {
        let start = self.0.start.lock().unwrap().unwrap();
        self.0
            .sent
            .lock()
            .unwrap()
            .push((start.elapsed(), request.method().clone()));
        let answer = {
            let mut answers = self.0.answers.lock().unwrap();
            if answers.len() > 1 {
                answers.pop_front().unwrap()
            } else {
                answers.front().cloned().unwrap()
            }
        };
        Box::pin(async move {
            match answer {
                Answer::Status(code, retry_after) => {
                    let mut response = http::Response::new(clientgo_rest::body::full("{}"));
                    *response.status_mut() = http::StatusCode::from_u16(code).unwrap();
                    if let Some(ra) = retry_after {
                        response
                            .headers_mut()
                            .insert("retry-after", ra.parse().unwrap());
                    }
                    Ok(response)
                }
                Answer::Fail(kind) => Err(TransportError::new(
                    kind,
                    request.method().clone(),
                    request.uri().to_string(),
                    None,
                )
                .into()),
            }
        })
    }
}

fn client(script: &Scripted, qps: f32, burst: i32) -> RestClient {
    let mut config = Config::new("http://apiserver.test:6443".parse().unwrap());
    config.qps = qps;
    config.burst = burst;
    RestClient::builder(config)
        .http_client(script.clone())
        .build()
        .unwrap()
}

fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    use Answer::Status;
    let script = Scripted::new(&[
        Status(429, Some("3")),
        Status(503, Some("2")),
        Status(500, Some("0")),
        Status(200, None),
    ]);
    let response = client(&script, -1.0, 0)
        .get()
        .abs_path("/api")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status, 200);
    assert_eq!(script.times(), [secs(0), secs(3), secs(5), secs(5)]);
}

#[tokio::test(start_paused = true)]
async fn only_429_and_5xx_with_an_integer_retry_after_are_retried() {
    use Answer::Status;
    for answer in [
        Status(503, None),
        Status(500, Some("soon")),
        Status(404, Some("1")),
        Status(409, Some("0")),
    ] {
        let script = Scripted::new(&[answer.clone(), Status(200, None)]);
        let err = client(&script, -1.0, 0)
            .get()
            .abs_path("/api")
            .send()
            .await
            .unwrap_err();
        assert!(err.api_error().is_some(), "{answer:?}: {err}");
        assert_eq!(script.sent().len(), 1, "{answer:?}");
    }
}

#[tokio::test(start_paused = true)]
async fn at_most_ten_retries_then_the_last_answer() {
    let script = Scripted::new(&[Answer::Status(429, Some("1"))]);
    let start = Instant::now();
    let err = client(&script, -1.0, 0)
        .get()
        .abs_path("/api")
        .send()
        .await
        .unwrap_err();
    assert!(err.is_too_many_requests(), "{err}");
    assert_eq!(script.sent().len(), 11, "the first attempt and 10 retries");
    assert_eq!(start.elapsed(), secs(10));

    let script = Scripted::new(&[Answer::Status(503, Some("0"))]);
    let err = client(&script, -1.0, 0)
        .get()
        .abs_path("/api")
        .max_retries(2)
        .send()
        .await
        .unwrap_err();
    assert!(err.is_service_unavailable());
    assert_eq!(script.sent().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn transport_errors_are_retried_for_get_only() {
    use Answer::{Fail, Status};
    use TransportErrorKind as K;
    for kind in [
        K::ConnectionReset,
        K::ConnectionClosed,
        K::ConnectionRefused,
    ] {
        let script = Scripted::new(&[Fail(kind), Status(200, None)]);
        client(&script, -1.0, 0)
            .get()
            .abs_path("/api")
            .send()
            .await
            .unwrap();
        assert_eq!(
            script.times(),
            [secs(0), secs(1)],
            "{kind:?}: one retry after 1 s"
        );

        for method in [Method::POST, Method::PUT, Method::PATCH, Method::DELETE] {
            let script = Scripted::new(&[Fail(kind), Status(200, None)]);
            let err = client(&script, -1.0, 0)
                .request(method.clone())
                .abs_path("/api/v1/namespaces")
                .body("{}")
                .send()
                .await
                .unwrap_err();
            assert_eq!(err.transport_error().unwrap().kind(), kind);
            assert_eq!(
                script.sent().len(),
                1,
                "{method} is never sent twice after {kind:?}"
            );
        }
        // Streams retry only Retry-After answers.
        let script = Scripted::new(&[Fail(kind), Status(200, None)]);
        client(&script, -1.0, 0)
            .get()
            .abs_path("/logs")
            .stream()
            .await
            .unwrap_err();
        assert_eq!(script.sent().len(), 1);
    }
    // TLS failures are not retried.
    let script = Scripted::new(&[Fail(K::Tls), Status(200, None)]);
    client(&script, -1.0, 0)
        .get()
        .abs_path("/api")
        .send()
        .await
        .unwrap_err();
    assert_eq!(script.sent().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_post_told_to_retry_after_is_sent_again() {
    let script = Scripted::new(&[Answer::Status(429, Some("1")), Answer::Status(201, None)]);
    let response = client(&script, -1.0, 0)
        .post()
        .abs_path("/api/v1/namespaces")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert!(response.was_created());
    assert_eq!(script.sent().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn the_time_limit_covers_retries() {
    let script = Scripted::new(&[Answer::Status(429, Some("3"))]);
    let start = Instant::now();
    let err = client(&script, -1.0, 0)
        .get()
        .abs_path("/api")
        .timeout(secs(5))
        .send()
        .await
        .unwrap_err();
    assert_eq!(
        err.transport_error().unwrap().kind(),
        TransportErrorKind::Timeout,
        "{err}"
    );
    assert_eq!(start.elapsed(), secs(5));
    assert_eq!(script.times(), [secs(0), secs(3)]);
}

#[tokio::test(start_paused = true)]
async fn requests_are_throttled_to_qps_and_burst() {
    let script = Scripted::new(&[Answer::Status(200, None)]);
    let client = client(&script, 0.0, 0); // client-go's defaults: 5 QPS, burst 10
    for _ in 0..15 {
        client.get().abs_path("/api").send().await.unwrap();
    }
    let times = script.times();
    assert!(times[..10].iter().all(|t| t.is_zero()), "{times:?}");
    let ms = |m| Duration::from_millis(m);
    assert_eq!(times[10..], [ms(200), ms(400), ms(600), ms(800), ms(1000)]);

    // A negative QPS turns the throttle off.
    let script = Scripted::new(&[Answer::Status(200, None)]);
    let unthrottled = self::client(&script, -1.0, 0);
    assert!(unthrottled.throttle().is_none());
    for _ in 0..50 {
        unthrottled.get().abs_path("/api").send().await.unwrap();
    }
    assert!(script.times().iter().all(|t| t.is_zero()));
}

#[tokio::test(start_paused = true)]
async fn every_retry_passes_the_throttle_but_a_watch_starts_at_once() {
    let script = Scripted::new(&[
        Answer::Status(429, Some("0")),
        Answer::Status(429, Some("0")),
        Answer::Status(200, None),
    ]);
    let client = client(&script, 1.0, 1);
    client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(script.times(), [secs(0), secs(1), secs(2)]);

    // The bucket is empty now, but the first attempt of a watch is not throttled.
    let before = Instant::now();
    client
        .get()
        .abs_path("/api/v1/pods")
        .param("watch", "true")
        .watch()
        .await
        .unwrap();
    assert_eq!(before.elapsed(), Duration::ZERO);
}

#[tokio::test(start_paused = true)]
async fn a_watch_that_cannot_connect_ends_empty_after_its_retries() {
    let script = Scripted::new(&[Answer::Fail(TransportErrorKind::ConnectionClosed)]);
    let body = client(&script, -1.0, 0)
        .get()
        .abs_path("/api/v1/pods")
        .watch()
        .await
        .unwrap();
    assert_eq!(script.sent().len(), 11);
    let mut watch = clientgo_codec::Watch::<clientgo_apimachinery::DynamicObject>::new(body);
    assert!(
        watch.next().await.is_none(),
        "an empty watch that ends cleanly"
    );

    let script = Scripted::new(&[Answer::Fail(TransportErrorKind::ConnectionRefused)]);
    let err = client(&script, -1.0, 0)
        .get()
        .abs_path("/api/v1/pods")
        .watch()
        .await
        .unwrap_err();
    assert_eq!(
        err.transport_error().unwrap().kind(),
        TransportErrorKind::ConnectionRefused
    );
}

#[tokio::test(start_paused = true)]
async fn metrics_have_client_go_names_and_labels() {
    let script = Scripted::new(&[
        Answer::Status(429, Some("0")),
        Answer::Fail(TransportErrorKind::ConnectionReset),
        Answer::Status(200, None),
    ]);
    let mut config = Config::new("http://apiserver.test:6443".parse().unwrap());
    config.qps = 100.0;
    let mut registry = Registry::default();
    let client = RestClient::builder(config)
        .http_client(script.clone())
        .metrics(&mut registry)
        .build()
        .unwrap();
    client.get().abs_path("/api").send().await.unwrap();
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    for expected in [
        r#"rest_client_requests_total{code="429",method="GET",host="apiserver.test:6443"} 1"#,
        r#"rest_client_requests_total{code="<error>",method="GET",host="apiserver.test:6443"} 1"#,
        r#"rest_client_requests_total{code="200",method="GET",host="apiserver.test:6443"} 1"#,
        r#"rest_client_request_retries_total{code="429",verb="GET",host="apiserver.test:6443"} 1"#,
        r#"rest_client_request_duration_seconds_count{verb="GET",host="apiserver.test:6443"} 1"#,
        r#"rest_client_request_duration_seconds_sum{verb="GET",host="apiserver.test:6443"} 1.0"#,
        r#"rest_client_rate_limiter_duration_seconds_count{verb="GET",host="apiserver.test:6443"} 3"#,
        "# TYPE rest_client_request_duration_seconds histogram",
        "# TYPE rest_client_rate_limiter_duration_seconds histogram",
        "# TYPE rest_client_requests counter",
    ] {
        assert!(text.contains(expected), "{expected} missing from\n{text}");
    }
}

#[tokio::test]
async fn real_connections_reset_get_is_retried_post_is_not() {
    let (addr, accepted, task) = support::resetting_server(1).await;
    let mut config = Config::new(format!("http://{addr}").parse().unwrap());
    config.qps = -1.0;
    let client = RestClient::new(&config).unwrap();
    let post = client
        .post()
        .abs_path("/api/v1/namespaces")
        .body("{}")
        .send()
        .await
        .unwrap_err();
    let kind = post.transport_error().unwrap().kind();
    assert!(
        matches!(
            kind,
            TransportErrorKind::ConnectionReset | TransportErrorKind::ConnectionClosed
        ),
        "{post}"
    );
    assert_eq!(*accepted.lock().unwrap(), 1, "the POST was sent once");
    task.abort();

    let (addr, accepted, task) = support::resetting_server(1).await;
    let mut config = Config::new(format!("http://{addr}").parse().unwrap());
    config.qps = -1.0;
    let client = RestClient::new(&config).unwrap();
    let response = client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(response.body, "{}");
    assert_eq!(
        *accepted.lock().unwrap(),
        2,
        "reset once, then answered on a new connection"
    );
    task.abort();
}

#[tokio::test]
async fn real_retry_after_zero_is_retried_on_the_same_server() {
    let server = TestServer::plain(|_, i| {
        if i < 2 {
            Reply::json(503, "{}").with_header("retry-after", "0")
        } else {
            Reply::json(200, r#"{"ok":true}"#)
        }
    })
    .await;
    let mut config = Config::new(server.url("http").parse().unwrap());
    config.qps = -1.0;
    let client = RestClient::new(&config).unwrap();
    let response = client
        .put()
        .abs_path("/apis/x/v1/things/a")
        .body("{\"a\":1}")
        .send()
        .await
        .unwrap();
    assert_eq!(response.body, r#"{"ok":true}"#);
    let seen = server.requests();
    assert_eq!(seen.len(), 3);
    assert!(
        seen.iter().all(|r| r.body == "{\"a\":1}"),
        "the body is sent again each time"
    );
}

#[tokio::test]
async fn a_stalled_server_hits_the_time_limit() {
    let server = TestServer::plain(|_, _| Reply::Stall).await;
    let mut config = Config::new(server.url("http").parse().unwrap());
    config.qps = -1.0;
    config.timeout = Some(Duration::from_millis(300));
    let client = RestClient::new(&config).unwrap();
    let start = std::time::Instant::now();
    let err = client.get().abs_path("/api").send().await.unwrap_err();
    assert_eq!(
        err.transport_error().unwrap().kind(),
        TransportErrorKind::Timeout,
        "{err}"
    );
    assert!(start.elapsed() >= Duration::from_millis(300));
    assert_eq!(
        server.last().uri,
        "/api?timeout=300ms",
        "the limit is sent to the server too"
    );
    assert!(
        err.to_string()
            .contains("no response within the time limit"),
        "{err}"
    );
}
