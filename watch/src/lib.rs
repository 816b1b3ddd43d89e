//! Kubernetes watch streams: client-go's `tools/watch`, in Rust, with the decoder beneath it.
//!
//! * [`Framer`] and [`Watch<T>`], re-exported from `clientgo-codec` (below the REST client,
//!   which returns a `Watch<T>` from its watches): the framer splits a watch body into its
//!   JSON documents; a `Watch<T>` is the stream of
//!   [`WatchEvent<T>`](clientgo_apimachinery::WatchEvent) decoded from a body, which tells a
//!   clean end (the server's timeout) from a failure (a reset connection, a truncated or
//!   malformed stream, a stall).
//! * [`RetryWatcher`]: re-opens the watch from the last resourceVersion it delivered, through
//!   any [`WatchSource`], until only a relist can help (410 Gone).
//! * [`ResourceWatchSource`] and [`WatchResource`]: the REST client's link, watches of a
//!   `clientgo_rest::ResourceClient` (typed or dynamic) as a [`WatchSource`] or a [`Watch<T>`].
//!
//! ```
//! use bytes::Bytes;
//! use clientgo_apimachinery::{DynamicObject, Object, WatchEvent};
//! use clientgo_watch::Watch;
//! use http_body_util::Full;
//!
//! # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
//! let body = Full::new(Bytes::from_static(
//!     br#"{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}}
//! {"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9"}}}
//! "#,
//! ));
//! let mut watch = Watch::<DynamicObject>::new(body);
//! let Some(Ok(WatchEvent::Added(cm))) = watch.next().await else { panic!() };
//! assert_eq!(cm.key(), "ns/a");
//! let Some(Ok(WatchEvent::Bookmark(mark))) = watch.next().await else { panic!() };
//! assert_eq!(mark.resource_version(), "9");
//! assert!(watch.next().await.is_none(), "the body ended cleanly");
//! # });
//! ```

#![deny(missing_docs)]

mod rest_source;
mod retry;

pub use clientgo_codec::{BoxError, UndecodableHandler, Watch, WatchBody, WatchError};
pub use clientgo_codec::{DEFAULT_MAX_FRAME, FrameError, Framer};
pub use rest_source::{ResourceWatchSource, WatchResource, start_error};
pub use retry::{
    MAX_BACKOFF, MAX_RETRY_AFTER, MIN_RESTART_INTERVAL, RetryWatchError, RetryWatcher, WatchSource,
    WatchStartError,
};
