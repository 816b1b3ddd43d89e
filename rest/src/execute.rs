//! Sending a [`Request`]: throttling, retries, the time limit, metrics, warnings, and turning
//! the response into a result. client-go's `Request.request`, `Do`, `Stream` and `Watch`
//! (`rest/request.go`) with `withRetry` (`rest/with_retry.go`).
//!
//! Every path runs the same loop ([`attempts`]):
//!
//! 1. Wait for the client's throttle, except on the first attempt of a watch (watches are
//!    long-lived and client-go does not throttle them). The first wait is not bounded by the
//!    request's time limit: a throttled client does not time out before it sends anything.
//! 2. Start the time limit ([`Request::timeout`] or [`Config::timeout`](crate::Config::timeout)):
//!    from here it covers every attempt, every wait between them, and reading the body.
//! 3. Send; count the attempt in `rest_client_requests_total`.
//! 4. Retry as [`retry`](crate::retry) decides: wait (`Retry-After`, or 1 s after a transport
//!    error), pass the throttle again (bounded by the time limit), send again. The body of a
//!    discarded response is drained (2 KiB at most).
//!
//! Then, on the final response: its warnings go to the client's handler; a 2xx is the result;
//! anything else becomes an [`ApiError`]. `send` observes `rest_client_request_duration_seconds`
//! after reading the body; `stream` and `watch` after the headers. `send_chunks` (for lists,
//! decoded as they arrive) is `send` handing a 2xx body over chunk by chunk instead of
//! collecting it.
//!
//! Bounds (client-go has neither): a body read whole (`send`, `send_chunks`) may be at most
//! [`Config::max_response_bytes`](crate::Config::max_response_bytes) (1 GiB by default; more
//! is a [`TooLarge`](TransportErrorKind::TooLarge) error), and such a request waits at most
//! [`Config::read_idle_timeout`](crate::Config::read_idle_timeout) (2 minutes by default) for
//! its response headers and between two pieces of its body: a server that sends the headers
//! and then nothing, or nothing at all, fails the request with a
//! [`Timeout`](TransportErrorKind::Timeout) instead of hanging the worker (HTTP/2 would notice
//! a dead connection by its pings; HTTP/1.1 has none, and a live but stuck server answers
//! pings). Watches and `stream` are long and quiet by design and have neither bound.
//!
//! Difference from client-go: when a watch fails at the transport in a way it would retry and
//! the retries run out, client-go returns an empty, already closed watch instead of an error;
//! [`Request::watch`] does the same, returning an empty body (the caller sees the watch end
//! and starts a new one).

use std::time::Duration;

use bytes::Bytes;
use clientgo_codec::protobuf::WireFormat;
use http::{HeaderValue, StatusCode};
use tokio::time::Instant;
use tracing::Instrument;

use crate::api_error::{ApiError, RequestTarget};
use crate::body::{self, Body};
use crate::client::{ClientInner, Response, StreamResponse, format_of};
use crate::error::{Error, TransportError, TransportErrorKind};
use crate::request::Request;
use crate::retry::{self, Mode, Retry};
use crate::warnings::parse_warnings;

/// Throttle waits longer than this are logged at debug level (client-go's
/// `longThrottleLatency`).
const LONG_THROTTLE: Duration = Duration::from_millis(50);
/// Throttle waits longer than this are logged at info level, at most once per
/// [`THROTTLE_LOG_INTERVAL`] (client-go's `extraLongThrottleLatency`).
const EXTRA_LONG_THROTTLE: Duration = Duration::from_secs(1);
const THROTTLE_LOG_INTERVAL: Duration = Duration::from_secs(10);

mod journey;

impl Request {
    /// Sends the request and reads the whole response (client-go's `Do`/`DoRaw`).
    ///
    /// A 2xx response (200 to 206) is returned; any other status is an [`Error::Api`].
    pub async fn send(self) -> Result<Response, Error> {
        let start = Instant::now();
        let call = Call::new(self, Mode::Send)?;
        let span = call.journey.span.clone();
        let result = call.send().instrument(span).await;
        call.observe_latency(start);
        result
    }

    /// Sends the request as [`send`](Request::send) does (same throttling, retries, time limit,
    /// metrics, warnings and errors) but hands a 2xx body to `on_chunk` chunk by chunk as it
    /// arrives, with the body's format (from its `Content-Type`), instead of collecting it; an error from `on_chunk` stops the reading. The body
    /// is never sent again once it has started: a failure reading it is an error. Returns the
    /// response's status.
    pub(crate) async fn send_chunks<F>(self, on_chunk: &mut F) -> Result<StatusCode, Error>
    where
        F: FnMut(WireFormat, &[u8]) -> Result<(), Error>,
    {
        let start = Instant::now();
        let call = Call::new(self, Mode::Send)?;
        let span = call.journey.span.clone();
        let result = call.send_chunks(on_chunk).instrument(span).await;
        call.observe_latency(start);
        result
    }

    /// Sends the request and returns the response with its body unread (client-go's
    /// `Stream`). Retried only on 429/5xx with `Retry-After`, and after a transport error
    /// only when the server refused the HTTP/2 stream unprocessed.
    pub async fn stream(self) -> Result<StreamResponse, Error> {
        let start = Instant::now();
        let call = Call::new(self, Mode::Stream)?;
        let span = call.journey.span.clone();
        let result = call.stream().instrument(span).await;
        call.observe_latency(start);
        result
    }

    /// Opens a watch: sends the request and returns the body of its 200 response, a stream of
    /// watch events for `clientgo_codec::Watch` (client-go's `Watch`). Not throttled on the
    /// first attempt; see the module documentation for what happens when it cannot connect.
    pub async fn watch(self) -> Result<Body, Error> {
        Ok(self.watch_with_format().await?.1)
    }

    /// [`watch`](Self::watch), with the format of the body the server chose (from its
    /// `Content-Type`): JSON, or Kubernetes protobuf where the request's `Accept` allowed it.
    pub async fn watch_with_format(self) -> Result<(WireFormat, Body), Error> {
        let start = Instant::now();
        let call = Call::new(self, Mode::Watch)?;
        let span = call.journey.span.clone();
        let result = call.watch().instrument(span).await;
        call.observe_latency(start);
        result
    }
}

/// A request ready to be sent: everything the loop needs, computed once.
struct Call {
    request: Request,
    mode: Mode,
    url: String,
    uri: http::Uri,
    /// The request's journey span.
    journey: journey::Journey,
}

impl Call {
    fn new(request: Request, mode: Mode) -> Result<Call, Error> {
        request.preflight()?;
        let url = request.url()?;
        let uri = url
            .parse::<http::Uri>()
            .map_err(|e| Error::InvalidRequest(format!("the URL {url:?} is not valid: {e}")))?;
        let journey = journey::Journey::new(&request, mode, &uri);
        Ok(Call {
            request,
            mode,
            url,
            uri,
            journey,
        })
    }

    fn client(&self) -> &ClientInner {
        self.request.client.inner()
    }

    fn verb(&self) -> &str {
        self.request.method.as_str()
    }

    fn observe_latency(&self, start: Instant) {
        if let Some(metrics) = &self.client().metrics {
            metrics.observe_request(self.verb(), &self.client().authority, start.elapsed());
        }
    }

    fn timeout_error(&self, detail: &str) -> Error {
        TransportError::new(
            TransportErrorKind::Timeout,
            self.request.method.clone(),
            self.url.clone(),
            None,
        )
        .with_detail(detail)
        .into()
    }

    /// `body` bounded by the read idle timeout, if there is one.
    fn idle_bounded(&self, body: Body) -> Body {
        match self.client().read_idle_timeout {
            Some(idle) => {
                body::with_idle_timeout(body, idle, self.request.method.clone(), self.url.clone())
            }
            None => body,
        }
    }

    fn too_large_error(&self) -> Error {
        let limit = self.client().max_response_bytes;
        TransportError::new(
            TransportErrorKind::TooLarge,
            self.request.method.clone(),
            self.url.clone(),
            None,
        )
        .with_detail(format!(
            "the body is larger than {limit} bytes (Config::max_response_bytes)"
        ))
        .into()
    }

    /// Reads the whole body, at most the client's maximum.
    async fn read_whole(&self, body: Body) -> Result<Bytes, Error> {
        let body = self.idle_bounded(body);
        body::collect_limited(body, self.client().max_response_bytes)
            .await
            .map_err(|e| match e {
                Some(e) => self.body_error(e),
                None => self.too_large_error(),
            })
    }

    async fn send(&self) -> Result<Response, Error> {
        let (response, deadline) = self.attempts().await?;
        let (parts, body) = response.into_parts();
        let bytes = self.within(deadline, self.read_whole(body)).await?;
        self.handle_warnings(&parts.headers);
        if is_success(parts.status) {
            tracing::debug!(verb = self.verb(), url = %self.url, status = parts.status.as_u16(), bytes = bytes.len(), "response");
            Ok(Response {
                status: parts.status,
                headers: parts.headers,
                body: bytes,
            })
        } else {
            Err(self.api_error(parts.status, &parts.headers, &bytes))
        }
    }

    async fn send_chunks<F>(&self, on_chunk: &mut F) -> Result<StatusCode, Error>
    where
        F: FnMut(WireFormat, &[u8]) -> Result<(), Error>,
    {
        let (response, deadline) = self.attempts().await?;
        let (parts, body) = response.into_parts();
        if !is_success(parts.status) {
            let bytes = self.within(deadline, self.read_whole(body)).await?;
            self.handle_warnings(&parts.headers);
            return Err(self.api_error(parts.status, &parts.headers, &bytes));
        }
        self.handle_warnings(&parts.headers);
        let format = format_of(&parts.headers);
        let read = async {
            use http_body_util::BodyExt as _;
            let mut body = self.idle_bounded(body);
            let mut len = 0usize;
            let limit = self.client().max_response_bytes;
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| self.body_error(e))?;
                if let Some(data) = frame.data_ref() {
                    len = len.saturating_add(data.len());
                    if len > limit {
                        return Err(self.too_large_error());
                    }
                    on_chunk(format, data)?;
                }
            }
            Ok(len)
        };
        let len = self.within(deadline, read).await?;
        tracing::debug!(verb = self.verb(), url = %self.url, status = parts.status.as_u16(), bytes = len, "response");
        Ok(parts.status)
    }

    /// Runs `read` (of a response body) within the time limit.
    async fn within<R>(
        &self,
        deadline: Option<Instant>,
        read: impl Future<Output = Result<R, Error>>,
    ) -> Result<R, Error> {
        match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, read).await.map_err(|_| {
                self.timeout_error("the time limit passed while reading the response body")
            })?,
            None => read.await,
        }
    }

    async fn stream(&self) -> Result<StreamResponse, Error> {
        let (response, deadline) = self.attempts().await?;
        self.handle_warnings(response.headers());
        if is_success(response.status()) {
            let (parts, body) = response.into_parts();
            return Ok(StreamResponse {
                status: parts.status,
                headers: parts.headers,
                body: self.bounded(body, deadline),
            });
        }
        Err(self.error_response(response, deadline).await)
    }

    async fn watch(&self) -> Result<(WireFormat, Body), Error> {
        let (response, deadline) = match self.attempts().await {
            Ok(outcome) => outcome,
            Err(Error::Transport(e))
                if retry::is_retryable_error(Mode::Watch, &self.request.method, e.kind()) =>
            {
                tracing::debug!(url = %self.url, error = %e, "watch could not be opened; returning an empty watch");
                return Ok((WireFormat::Json, body::empty()));
            }
            Err(e) => return Err(e),
        };
        self.handle_warnings(response.headers());
        if response.status() == StatusCode::OK {
            let (parts, body) = response.into_parts();
            return Ok((format_of(&parts.headers), self.bounded(body, deadline)));
        }
        Err(self.error_response(response, deadline).await)
    }

    /// A response body that fails once the request's deadline passes, if it has one.
    fn bounded(&self, body: Body, deadline: Option<Instant>) -> Body {
        match deadline {
            Some(deadline) => body::with_deadline(
                body,
                deadline,
                self.request.method.clone(),
                self.url.clone(),
            ),
            None => body,
        }
    }

    /// Reads (a bounded amount of) an error response and turns it into an [`ApiError`].
    async fn error_response(
        &self,
        response: http::Response<Body>,
        deadline: Option<Instant>,
    ) -> Error {
        let (parts, body) = response.into_parts();
        // Read by hand rather than through `http_body_util::Limited`: its `Into<BoxError>`
        // bound made the futures of `stream` and `watch` impossible to prove `Send` (rustc's
        // higher-ranked auto-trait limitation), so they could not be spawned or used as a
        // watch source. Same result: the body, or nothing if it fails or passes 64 KiB.
        let read = async {
            use http_body_util::BodyExt as _;
            const LIMIT: usize = 64 * 1024;
            let mut body = body;
            let mut bytes = bytes::BytesMut::new();
            while let Some(frame) = body.frame().await {
                let Ok(frame) = frame else {
                    return Bytes::new();
                };
                if let Ok(data) = frame.into_data() {
                    if bytes.len() + data.len() > LIMIT {
                        return Bytes::new();
                    }
                    bytes.extend_from_slice(&data);
                }
            }
            bytes.freeze()
        };
        let bytes = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, read)
                .await
                .unwrap_or_default(),
            None => read.await,
        };
        self.api_error(parts.status, &parts.headers, &bytes)
    }

    fn api_error(&self, status: StatusCode, headers: &http::HeaderMap, body: &[u8]) -> Error {
        let content_type = headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        let retry_after =
            retry::retry_after_seconds(headers).map(|s| i32::try_from(s).unwrap_or(i32::MAX));
        let request = &self.request;
        let error = ApiError::from_response(
            status.as_u16(),
            content_type,
            retry_after,
            body,
            RequestTarget {
                method: request.method.as_str(),
                group: &request.group,
                resource: &request.resource,
                name: &request.name,
            },
        );
        tracing::debug!(verb = self.verb(), url = %self.url, status = status.as_u16(), error = %error, "error response");
        error.into()
    }

    fn body_error(&self, error: crate::error::BoxError) -> Error {
        match error.downcast::<TransportError>() {
            Ok(transport) => Error::Transport(transport),
            Err(other) => TransportError::new(
                TransportErrorKind::Body,
                self.request.method.clone(),
                self.url.clone(),
                Some(other),
            )
            .into(),
        }
    }

    fn handle_warnings(&self, headers: &http::HeaderMap) {
        if !headers.contains_key(http::header::WARNING) {
            return;
        }
        let handler = &self.client().warnings;
        for warning in parse_warnings(headers) {
            handler.handle_warning(&warning);
        }
    }

    /// Throttle, send, retry. Returns the final response and the deadline it is bound by.
    async fn attempts(&self) -> Result<(http::Response<Body>, Option<Instant>), Error> {
        if self.mode != Mode::Watch {
            self.throttle(None).await?;
        }
        // A limit too far away to represent is no limit.
        let deadline = self
            .request
            .timeout
            .and_then(|t| Instant::now().checked_add(t));
        let attempts = self.attempts_after_first_throttle(deadline);
        let response = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline, attempts)
                .await
                .map_err(|_| self.timeout_error("no response within the time limit"))??,
            None => attempts.await?,
        };
        Ok((response, deadline))
    }

    async fn attempts_after_first_throttle(
        &self,
        deadline: Option<Instant>,
    ) -> Result<http::Response<Body>, Error> {
        let client = self.client();
        let method = &self.request.method;
        let mut retry = Retry::new(self.request.max_retries);
        let mut wait: Option<Duration> = None;
        loop {
            if let Some(wait) = wait.take() {
                tokio::time::sleep(wait).await;
                self.throttle(deadline).await?;
            }
            let send = client.http.send(self.http_request());
            let result = match (self.mode, client.read_idle_timeout) {
                (Mode::Send, Some(idle)) => match tokio::time::timeout(idle, send).await {
                    Ok(result) => result,
                    Err(_) => Err(self.timeout_error(&format!(
                        "no response headers from the server within {idle:?}"
                    ))),
                },
                _ => send.await,
            };
            match result {
                Ok(response) => {
                    let status = response.status();
                    self.count_result(Some(status.as_u16()));
                    let Some(next_wait) = retry.after_response(status, response.headers()) else {
                        self.journey.responded(status.as_u16(), retry.retries());
                        return Ok(response);
                    };
                    self.count_retry(Some(status.as_u16()));
                    tracing::debug!(
                        verb = self.verb(), url = %self.url, status = status.as_u16(),
                        retry = retry.retries(), wait = ?next_wait,
                        "retrying: the server asked to retry after a while"
                    );
                    body::drain(response.into_body()).await;
                    wait = Some(next_wait);
                }
                Err(Error::Transport(error)) => {
                    self.count_result(None);
                    let retryable = retry::is_retryable_error(self.mode, method, error.kind());
                    let Some(next_wait) = retry.after_error(retryable) else {
                        self.journey.failed(&error.kind(), retry.retries());
                        return Err(Error::Transport(error));
                    };
                    self.count_retry(None);
                    tracing::debug!(
                        verb = self.verb(), url = %self.url, error = %error,
                        retry = retry.retries(), wait = ?next_wait,
                        "retrying after a transport error"
                    );
                    wait = Some(next_wait);
                }
                Err(other) => {
                    self.count_result(None);
                    return Err(other);
                }
            }
        }
    }

    fn http_request(&self) -> http::Request<Bytes> {
        let mut request = http::Request::new(self.request.body.clone());
        *request.method_mut() = self.request.method.clone();
        *request.uri_mut() = self.uri.clone();
        *request.headers_mut() = self.request.headers.clone();
        if !self.request.body.is_empty()
            && !request.headers().contains_key(http::header::CONTENT_TYPE)
        {
            request.headers_mut().insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(crate::request::JSON),
            );
        }
        request
    }

    async fn throttle(&self, deadline: Option<Instant>) -> Result<(), Error> {
        let client = self.client();
        let Some(throttle) = &client.throttle else {
            return Ok(());
        };
        let start = Instant::now();
        match deadline {
            Some(deadline) => throttle.acquire_by(deadline).await.map_err(|_| {
                self.timeout_error(
                    "waiting for the client-side rate limiter would pass the time limit",
                )
            })?,
            None => throttle.acquire().await,
        }
        let waited = start.elapsed();
        self.journey.throttled(waited);
        if let Some(metrics) = &client.metrics {
            metrics.observe_rate_limiter(self.verb(), &client.authority, waited);
        }
        if waited > LONG_THROTTLE {
            tracing::debug!(delay = ?waited, verb = self.verb(), url = %self.url, "waited for client-side throttling, not priority and fairness");
            if waited > EXTRA_LONG_THROTTLE && self.may_log_throttle() {
                tracing::info!(delay = ?waited, verb = self.verb(), url = %self.url, "waited for client-side throttling, not priority and fairness");
            }
        }
        Ok(())
    }

    fn may_log_throttle(&self) -> bool {
        let mut last = self
            .client()
            .throttle_logged
            .lock()
            .unwrap_or_else(|p| p.into_inner());
        let now = Instant::now();
        if last.is_some_and(|at| now.duration_since(at) < THROTTLE_LOG_INTERVAL) {
            return false;
        }
        *last = Some(now);
        true
    }

    fn count_result(&self, code: Option<u16>) {
        if let Some(metrics) = &self.client().metrics {
            metrics.count_result(code, self.verb(), &self.client().authority);
        }
    }

    fn count_retry(&self, code: Option<u16>) {
        if let Some(metrics) = &self.client().metrics {
            metrics.count_retry(code, self.verb(), &self.client().authority);
        }
    }
}

/// 200 to 206, as client-go counts success.
fn is_success(status: StatusCode) -> bool {
    (200..=206).contains(&status.as_u16())
}
