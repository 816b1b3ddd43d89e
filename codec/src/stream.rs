//! A watch as a stream of events: apimachinery's `StreamWatcher` over client-go's watch
//! decoder (`rest/watch/decoder.go`).
//!
//! [`Watch<T>`] reads a watch response body, splits it into frames with the
//! [`Framer`](crate::Framer), and decodes each frame into a [`WatchEvent<T>`]. It ends in one of
//! two ways, which it keeps apart:
//!
//! * cleanly (`None`): the server closed the body between events, as it does when
//!   `timeoutSeconds` runs out; the caller re-watches from its last resourceVersion;
//! * with an error (`Some(Err(..))`, then `None`): the connection failed, the body ended in the
//!   middle of an event, a frame was malformed or too large, an event did not decode, or no
//!   byte arrived within the idle timeout (a stalled watch).
//!
//! `ERROR` events from the server (a 410 Gone, say) are events, not stream errors: they come
//! out as [`WatchEvent::Error`] and the caller decides, as client-go's consumers do.
//!
//! Events nest up to kube-apiserver's 10,000 levels (see [`crate::json`]). An event that is
//! valid JSON but does not decode (its object is not a `T`, its type is unknown, it nests
//! deeper than that, or it builds a value deeper than
//! [`MAX_KEPT_DEPTH`](crate::json::MAX_KEPT_DEPTH)) ends the stream with
//! [`WatchError::Decode`], as any broken frame does; a consumer that relists afterwards (an
//! informer) gets past it, since the list leaves the undecodable object out and the new watch
//! starts after it. A consumer that can only re-watch from before the event would meet it
//! again forever: with [`Watch::skipping_undecodable`] such an event fails that event only
//! (it is skipped, logged as a warning without its content, counted in
//! [`Watch::undecodable_events`] and handed to the handler set with [`Watch::on_undecodable`])
//! and the stream goes on; the `RetryWatcher`'s REST source
//! (`clientgo_watch::ResourceWatchSource`) opens its watches that way. A frame that is not
//! valid JSON, or too large, always ends the stream: the body itself is broken.
//!
//! Where it differs from client-go: a frame that does not decode is skipped, or ends the
//! stream with a typed [`WatchError::Decode`], instead of a synthetic `ERROR` event with a
//! made-up Status; and the error never quotes the frame (it may hold a Secret: its message is
//! serde's reduced by [`crate::json::redacted_message`], and it is not chained as a
//! source). Stopping is dropping the `Watch` (or calling [`Watch::stop`]): the body is dropped
//! and the connection or HTTP/2 stream closes.

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use clientgo_apimachinery::WatchEvent;
use futures_core::Stream;
use http_body::Body;
use http_body_util::BodyExt;
use serde::de::DeserializeOwned;
use tokio::time::{Instant, Sleep};

use crate::framer::{DEFAULT_MAX_FRAME, FrameError, Framer};
use crate::protobuf::{LengthFramer, WireFormat};

/// The framer of the body's format; a protobuf body's events are turned into JSON in a
/// buffer kept from one event to the next.
enum Frames {
    Json(Framer),
    Protobuf(LengthFramer, Vec<u8>),
}

impl Frames {
    fn new(format: WireFormat, max_frame: usize) -> Self {
        match format {
            WireFormat::Json => Frames::Json(Framer::new(max_frame)),
            WireFormat::Protobuf => Frames::Protobuf(LengthFramer::new(max_frame), Vec::new()),
        }
    }

    fn format(&self) -> WireFormat {
        match self {
            Frames::Json(_) => WireFormat::Json,
            Frames::Protobuf(..) => WireFormat::Protobuf,
        }
    }

    fn max_frame(&self) -> usize {
        match self {
            Frames::Json(framer) => framer.max_frame(),
            Frames::Protobuf(framer, _) => framer.max_frame(),
        }
    }

    fn push(&mut self, chunk: Bytes) {
        match self {
            Frames::Json(framer) => framer.push(chunk),
            Frames::Protobuf(framer, _) => framer.push(chunk),
        }
    }

    fn next_frame(&mut self) -> Result<Option<Bytes>, FrameError> {
        match self {
            Frames::Json(framer) => framer.next_frame(),
            Frames::Protobuf(framer, _) => framer.next_frame(),
        }
    }

    fn in_frame(&self) -> bool {
        match self {
            Frames::Json(framer) => framer.in_frame(),
            Frames::Protobuf(framer, _) => framer.in_frame(),
        }
    }

    fn pending_len(&self) -> usize {
        match self {
            Frames::Json(framer) => framer.pending_len(),
            Frames::Protobuf(framer, _) => framer.pending_len(),
        }
    }
}

/// A protobuf event's JSON is written to a buffer kept from one event to the next; past this
/// capacity (after an unusually large event) the buffer is let go.
const SCRATCH_KEPT: usize = 1 << 20;

/// A boxed error from the transport under a watch body.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A watch response body, boxed so that any transport's body fits.
pub type WatchBody = Pin<Box<dyn Body<Data = Bytes, Error = BoxError> + Send>>;

/// Why a watch ended other than cleanly (or, for [`WatchError::Decode`], why one event was
/// skipped).
#[derive(Debug)]
pub enum WatchError {
    /// Reading the body failed (connection reset, HTTP/2 stream error, ...).
    Transport(BoxError),
    /// The body ended in the middle of an event.
    Truncated {
        /// How many bytes of the unfinished event had arrived.
        pending: usize,
    },
    /// The body could not be split into events.
    Frame(FrameError),
    /// An event did not decode (a bad type, or an object that is not a `T`).
    ///
    /// Its `Display` never quotes the frame, and `source` is not chained as the error's
    /// source (serde's own message may quote a value): see the module documentation.
    Decode {
        /// The decoder's error, with the line and column where it failed.
        source: serde_json::Error,
        /// The size of the frame that failed.
        frame_len: usize,
    },
    /// No byte arrived for the idle timeout: the connection is presumed dead.
    Stalled {
        /// The idle timeout that ran out.
        idle: Duration,
    },
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchError::Transport(error) => write!(f, "watch connection failed: {error}"),
            WatchError::Truncated { pending } => write!(
                f,
                "watch stream ended inside an event ({pending} bytes of it received)"
            ),
            WatchError::Frame(error) => write!(f, "malformed watch stream: {error}"),
            WatchError::Decode { source, frame_len } => write!(
                f,
                "could not decode watch event ({frame_len} bytes): {} at line {} column {}",
                crate::json::redacted_message(source),
                source.line(),
                source.column()
            ),
            WatchError::Stalled { idle } => write!(f, "watch stalled: no data for {idle:?}"),
        }
    }
}

impl std::error::Error for WatchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            WatchError::Transport(error) => Some(error.as_ref()),
            WatchError::Frame(error) => Some(error),
            _ => None,
        }
    }
}

impl From<FrameError> for WatchError {
    fn from(error: FrameError) -> Self {
        WatchError::Frame(error)
    }
}

/// What [`Watch::on_undecodable`] is given for each event skipped.
pub type UndecodableHandler = Box<dyn Fn(&WatchError) + Send + Sync>;

/// A stream of watch events decoded from a response body.
///
/// Use [`next`](Watch::next), or the [`Stream`] implementation.
pub struct Watch<T> {
    body: Option<WatchBody>,
    frames: Frames,
    idle_timeout: Option<Duration>,
    idle: Option<Pin<Box<Sleep>>>,
    /// Skip an undecodable event (true) or end the stream on it (the default).
    skip_undecodable: bool,
    undecodable: u64,
    on_undecodable: Option<UndecodableHandler>,
    _event: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Watch<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("open", &self.body.is_some())
            .field("idle_timeout", &self.idle_timeout)
            .field("undecodable_events", &self.undecodable)
            .finish_non_exhaustive()
    }
}

impl<T: DeserializeOwned> Watch<T> {
    /// Decodes the events of `body`.
    pub fn new<B>(body: B) -> Self
    where
        B: Body<Data = Bytes> + Send + 'static,
        B::Error: Into<BoxError>,
    {
        Self::from_boxed(Box::pin(body.map_err(Into::into)))
    }

    /// Decodes the events of an already boxed body.
    pub fn from_boxed(body: WatchBody) -> Self {
        Self {
            body: Some(body),
            frames: Frames::new(WireFormat::Json, DEFAULT_MAX_FRAME),
            idle_timeout: None,
            idle: None,
            skip_undecodable: false,
            undecodable: 0,
            on_undecodable: None,
            _event: PhantomData,
        }
    }

    /// Skips an event that is valid JSON but does not decode, instead of ending the stream
    /// with [`WatchError::Decode`] (see the module documentation).
    pub fn skipping_undecodable(mut self) -> Self {
        self.skip_undecodable = true;
        self
    }

    /// Calls `handler` with the error of each event skipped because it did not decode (to
    /// count it in metrics, say); see [`skipping_undecodable`](Self::skipping_undecodable).
    pub fn on_undecodable(mut self, handler: impl Fn(&WatchError) + Send + Sync + 'static) -> Self {
        self.on_undecodable = Some(Box::new(handler));
        self
    }

    /// How many events have been skipped because they did not decode.
    pub fn undecodable_events(&self) -> u64 {
        self.undecodable
    }

    /// Refuses events larger than `bytes` (default [`DEFAULT_MAX_FRAME`], 64 MiB).
    pub fn with_max_frame(mut self, bytes: usize) -> Self {
        self.frames = Frames::new(self.frames.format(), bytes);
        self
    }

    /// Reads the body as `format` (JSON by default): protobuf bodies
    /// (`application/vnd.kubernetes.protobuf;stream=watch`) are split into length-prefixed
    /// frames and each event turned into JSON ([`crate::protobuf`]) before it is decoded.
    pub fn with_format(mut self, format: WireFormat) -> Self {
        self.frames = Frames::new(format, self.frames.max_frame());
        self
    }

    /// Ends the watch with [`WatchError::Stalled`] when no byte arrives for `idle`.
    ///
    /// Use a period longer than the server's bookmark interval (about a minute) when bookmarks
    /// are requested, since a quiet collection sends nothing else.
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }

    /// Stops the watch: the body is dropped and later calls to `next` return `None`.
    pub fn stop(&mut self) {
        self.body = None;
        self.idle = None;
    }

    /// The next event; `None` once the watch has ended (cleanly, or after an error).
    pub async fn next(&mut self) -> Option<Result<WatchEvent<T>, WatchError>> {
        std::future::poll_fn(|cx| self.poll_event(cx)).await
    }

    fn fail(&mut self, error: WatchError) -> Poll<Option<Result<WatchEvent<T>, WatchError>>> {
        self.stop();
        Poll::Ready(Some(Err(error)))
    }

    fn poll_event(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<WatchEvent<T>, WatchError>>> {
        loop {
            let Some(body) = self.body.as_mut() else {
                return Poll::Ready(None);
            };
            match self.frames.next_frame() {
                Err(error) => return self.fail(error.into()),
                Ok(Some(frame)) => {
                    let json: &[u8] = match &mut self.frames {
                        Frames::Json(_) => &frame,
                        Frames::Protobuf(_, scratch) => {
                            // Straight into `T`; an event that does not read so is read again
                            // through its JSON, for the same error (and skipping) as JSON.
                            if let Ok(event) = crate::protobuf::from_watch_event(&frame) {
                                return Poll::Ready(Some(Ok(event)));
                            }
                            if scratch.capacity() > SCRATCH_KEPT {
                                *scratch = Vec::new();
                            }
                            scratch.clear();
                            if let Err(error) =
                                crate::protobuf::watch_event_to_json(&frame, scratch)
                            {
                                return self.fail(WatchError::Frame(error.into()));
                            }
                            scratch
                        }
                    };
                    let source = match crate::json::from_slice(json) {
                        Ok(event) => return Poll::Ready(Some(Ok(event))),
                        Err(source) => source,
                    };
                    // Only a skipping watch needs to know whether the event is valid JSON.
                    let skippable = self.skip_undecodable && crate::json::is_valid(json);
                    let error = WatchError::Decode {
                        source,
                        frame_len: frame.len(),
                    };
                    if !skippable {
                        return self.fail(error);
                    }
                    self.undecodable += 1;
                    tracing::warn!(%error, "skipping a watch event that does not decode");
                    if let Some(handler) = &self.on_undecodable {
                        handler(&error);
                    }
                    continue;
                }
                Ok(None) => {}
            }
            match body.as_mut().poll_frame(cx) {
                Poll::Pending => {
                    if let Some(idle) = self.idle_timeout {
                        let sleep = self
                            .idle
                            .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                        if sleep.as_mut().poll(cx).is_ready() {
                            return self.fail(WatchError::Stalled { idle });
                        }
                    }
                    return Poll::Pending;
                }
                Poll::Ready(None) => {
                    self.stop();
                    if self.frames.in_frame() {
                        let pending = self.frames.pending_len();
                        return Poll::Ready(Some(Err(WatchError::Truncated { pending })));
                    }
                    return Poll::Ready(None);
                }
                Poll::Ready(Some(Err(error))) => return self.fail(WatchError::Transport(error)),
                Poll::Ready(Some(Ok(frame))) => {
                    // Trailers carry no events; data resets the idle clock.
                    if let Ok(data) = frame.into_data() {
                        if let (Some(sleep), Some(idle)) = (self.idle.as_mut(), self.idle_timeout) {
                            sleep.as_mut().reset(Instant::now() + idle);
                        }
                        if !data.is_empty() {
                            self.frames.push(data);
                        }
                    }
                }
            }
        }
    }
}

impl<T: DeserializeOwned> Stream for Watch<T> {
    type Item = Result<WatchEvent<T>, WatchError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.get_mut().poll_event(cx)
    }
}
