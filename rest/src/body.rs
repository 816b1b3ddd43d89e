//! Response bodies: the boxed [`Body`] every response carries, a deadline that bounds reading
//! it, and the bounded draining of bodies that are thrown away.
//!
//! [`Body`] is `http_body_util`'s `BoxBody<Bytes, BoxError>`, the type
//! `clientgo_codec::Watch::new` takes, so a [`Request::watch`](crate::Request::watch) stream
//! plugs into the watch decoder without this crate depending on the watch crate.
//!
//! client-go's `http.Client.Timeout` covers reading the body as well as getting the headers;
//! the deadline wrapper does the same (and the idle wrapper bounds each wait between frames,
//! see [`Config::read_idle_timeout`](crate::Config::read_idle_timeout)): past the deadline the next read fails with a
//! [`TransportError`] of kind [`Timeout`](TransportErrorKind::Timeout). Discarded bodies (of
//! responses that are retried) are read up to 2 KiB, as client-go's `readAndCloseResponseBody`
//! does, so that a small body leaves the connection reusable and a large one does not hold up
//! the retry.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::BodyExt as _;
use http_body_util::combinators::BoxBody;
use tokio::time::{Instant, Sleep};

use crate::error::{BoxError, TransportError, TransportErrorKind};

/// A response body: a stream of byte chunks that may fail.
pub type Body = BoxBody<Bytes, BoxError>;

/// An empty body.
pub fn empty() -> Body {
    http_body_util::Empty::new().map_err(|e| match e {}).boxed()
}

/// A body holding `bytes`.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    http_body_util::Full::new(bytes.into())
        .map_err(|e| match e {})
        .boxed()
}

/// Bounds reading `body` by `deadline`: after it, the next read fails with a timeout error
/// naming `method url`.
pub(crate) fn with_deadline(
    body: Body,
    deadline: Instant,
    method: http::Method,
    url: String,
) -> Body {
    TimedBody {
        body,
        sleep: Box::pin(tokio::time::sleep_until(deadline)),
        idle: None,
        request: Some((method, url)),
    }
    .boxed()
}

/// Bounds the wait for each frame of `body` by `idle`: when nothing arrives for that long,
/// the next read fails with a timeout error naming `method url`.
pub(crate) fn with_idle_timeout(
    body: Body,
    idle: std::time::Duration,
    method: http::Method,
    url: String,
) -> Body {
    TimedBody {
        body,
        sleep: Box::pin(tokio::time::sleep(idle)),
        idle: Some(idle),
        request: Some((method, url)),
    }
    .boxed()
}

/// A body whose reads fail once `sleep` ends: a deadline, or, with `idle`, a timer that each
/// frame restarts.
struct TimedBody {
    body: Body,
    sleep: Pin<Box<Sleep>>,
    idle: Option<std::time::Duration>,
    request: Option<(http::Method, String)>,
}

impl HttpBody for TimedBody {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        if let Poll::Ready(frame) = Pin::new(&mut this.body).poll_frame(cx) {
            if let Some(idle) = this.idle {
                this.sleep.as_mut().reset(Instant::now() + idle);
            }
            return Poll::Ready(frame);
        }
        if this.sleep.as_mut().poll(cx).is_ready() {
            let Some((method, url)) = this.request.take() else {
                return Poll::Ready(None);
            };
            let detail = match this.idle {
                Some(idle) => {
                    format!("no data from the server for {idle:?} while reading the response body")
                }
                None => "the time limit passed while reading the response body".to_owned(),
            };
            let error = TransportError::new(TransportErrorKind::Timeout, method, url, None)
                .with_detail(detail);
            return Poll::Ready(Some(Err(Box::new(error))));
        }
        Poll::Pending
    }

    fn is_end_stream(&self) -> bool {
        self.request.is_none() || self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// Reads and drops up to 2 KiB of `body`, then drops it.
pub(crate) async fn drain(mut body: Body) {
    const LIMIT: usize = 2048;
    let mut read = 0;
    while read <= LIMIT {
        match body.frame().await {
            Some(Ok(frame)) => read += frame.data_ref().map_or(0, Bytes::len),
            _ => return,
        }
    }
}

/// Reads the whole body.
#[cfg(test)]
pub(crate) async fn collect(body: Body) -> Result<Bytes, BoxError> {
    Ok(body.collect().await?.to_bytes())
}

/// Reads the whole body, failing with `Err(None)` as soon as it passes `limit` bytes.
pub(crate) async fn collect_limited(
    mut body: Body,
    limit: usize,
) -> Result<Bytes, Option<BoxError>> {
    let mut bytes = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame.map_err(Some)?.into_data() {
            if bytes.len().saturating_add(data.len()) > limit {
                return Err(None);
            }
            if bytes.is_empty() && body.is_end_stream() {
                return Ok(data);
            }
            bytes.extend_from_slice(&data);
        }
    }
    Ok(bytes.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A body that sends one chunk and then nothing, forever.
    struct Stalled(bool);

    impl HttpBody for Stalled {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            if std::mem::replace(&mut self.0, true) {
                Poll::Pending
            } else {
                Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"first")))))
            }
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_fails_at_the_deadline() {
        let body = with_deadline(
            Stalled(false).boxed(),
            Instant::now() + Duration::from_secs(5),
            http::Method::GET,
            "http://h/api".into(),
        );
        let start = Instant::now();
        let err = collect(body).await.unwrap_err();
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        let err = err.downcast::<TransportError>().unwrap();
        assert_eq!(err.kind(), TransportErrorKind::Timeout);
    }

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_fails_after_the_idle_timeout_not_before() {
        let start = Instant::now();
        let body = with_idle_timeout(
            Stalled(false).boxed(),
            Duration::from_secs(5),
            http::Method::GET,
            "http://h/api".into(),
        );
        let err = collect(body).await.unwrap_err();
        assert_eq!(start.elapsed(), Duration::from_secs(5));
        let err = err.downcast::<TransportError>().unwrap();
        assert_eq!(err.kind(), TransportErrorKind::Timeout);
    }

    #[tokio::test]
    async fn collect_limited_stops_past_the_limit() {
        assert_eq!(collect_limited(full("abc"), 3).await.unwrap(), "abc");
        assert!(matches!(collect_limited(full("abcd"), 3).await, Err(None)));
    }

    #[tokio::test]
    async fn full_and_empty() {
        assert_eq!(collect(full("abc")).await.unwrap(), "abc");
        assert!(collect(empty()).await.unwrap().is_empty());
    }
}
