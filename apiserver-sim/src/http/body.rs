//! Response bodies and helpers: JSON, Status errors, streamed chunks.
//!
//! kube-apiserver writes every response as JSON with `Content-Type: application/json`,
//! errors as a `metav1.Status` with the HTTP code of `Status.code`, and watches as a
//! chunked body; `Accept: application/yaml` gets whole bodies as YAML ([`to_yaml`]).
//! [`Body`] covers both a full body and a channel-fed stream (used for watches
//! and for the "cut in the middle" faults, which end the stream with an error so the
//! connection drops mid-body).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Response, StatusCode, header};
use hyper::body::Frame;
use tokio::sync::mpsc;

use crate::errors::ApiError;

/// A response body: all at once, or streamed from a channel.
#[derive(Debug)]
pub enum Body {
    /// The whole body.
    Full(Option<Bytes>),
    /// Chunks from a channel; an `Err` aborts the response.
    Stream(mpsc::Receiver<Result<Bytes, io::Error>>),
}

impl hyper::body::Body for Body {
    type Data = Bytes;
    type Error = io::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, io::Error>>> {
        match self.get_mut() {
            Body::Full(b) => Poll::Ready(b.take().map(|b| Ok(Frame::data(b)))),
            Body::Stream(rx) => rx.poll_recv(cx).map(|o| o.map(|r| r.map(Frame::data))),
        }
    }

    fn is_end_stream(&self) -> bool {
        matches!(self, Body::Full(None))
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        match self {
            Body::Full(Some(b)) => hyper::body::SizeHint::with_exact(b.len() as u64),
            Body::Full(None) => hyper::body::SizeHint::with_exact(0),
            Body::Stream(_) => hyper::body::SizeHint::default(),
        }
    }
}

/// A JSON response.
pub fn json(code: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Body::Full(Some(body.into())));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A Status error response (with `Retry-After` when the error has one).
pub fn error(err: &ApiError) -> Response<Body> {
    let code = StatusCode::from_u16(err.code()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json(code, serde_json::to_vec(&err.status).unwrap_or_default());
    if let Some(secs) = err.retry_after {
        r.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    r
}

/// A streamed JSON response (watch): chunked, `Content-Type: application/json`.
pub fn stream(rx: mpsc::Receiver<Result<Bytes, io::Error>>) -> Response<Body> {
    let mut r = Response::new(Body::Stream(rx));
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// A JSON response whose body stops halfway, then the connection drops.
pub fn cut(code: StatusCode, body: Bytes) -> Response<Body> {
    let (tx, rx) = mpsc::channel(2);
    let half = body.slice(..body.len() / 2);
    tokio::spawn(async move {
        let _ = tx.send(Ok(half)).await;
        // Let the head and the first half reach the client before the connection drops.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let _ = tx
            .send(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "injected: body cut",
            )))
            .await;
    });
    let mut r = Response::new(Body::Stream(rx));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(body.len()));
    r
}

/// The response re-encoded as YAML (`Content-Type: application/yaml`) when it is a whole
/// JSON body, as kube-apiserver answers `Accept: application/yaml` (in go-yaml v2's layout,
/// [`super::yaml`]); other responses as they are.
pub fn to_yaml(response: Response<Body>) -> Response<Body> {
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes() == b"application/json");
    let (mut parts, body) = response.into_parts();
    let Body::Full(Some(bytes)) = body else {
        return Response::from_parts(parts, body);
    };
    let yaml = is_json
        .then(|| serde_json::from_slice::<serde_json::Value>(&bytes).ok())
        .flatten()
        .map(|v| super::yaml::to_yaml(&v));
    match yaml {
        Some(text) => {
            parts.headers.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/yaml"),
            );
            parts.headers.remove(header::CONTENT_LENGTH);
            Response::from_parts(parts, Body::Full(Some(Bytes::from(text))))
        }
        None => Response::from_parts(parts, Body::Full(Some(bytes))),
    }
}

/// A plain-text response (health checks).
pub fn text(code: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::Full(Some(Bytes::from_static(body.as_bytes()))));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}
