//! The wire format of the Kubernetes API: what the REST client and the watch tools decode,
//! below both. client-go keeps these pieces in apimachinery (`util/framer`,
//! `runtime/serializer/json`, `watch.StreamWatcher`) and in `rest/watch` (the decoder);
//! here they are one crate that depends on the object model only, so that
//! `clientgo_rest::ResourceClient::watch` returns a typed [`Watch<T>`] and the watch tools
//! (`clientgo-watch`: the retry watcher) sit above the REST client.
//!
//! * [`json`]: JSON decoded as deep as kube-apiserver accepts, values kept bounded, and
//!   decode errors that never quote a value.
//! * [`json_scan`]: the byte classes and the string skipping shared by the scanners of list
//!   bodies (the REST client's list decoder) and watch bodies ([`Framer`]).
//! * [`protobuf`]: Kubernetes protobuf objects, lists and watch events turned into the JSON the
//!   server would have sent, for the kinds it knows; kube-apiserver writes protobuf several
//!   times faster.
//! * [`Framer`]: splits a watch response body into its JSON documents, across chunk
//!   boundaries, without copying a frame that arrived in one piece.
//! * [`Watch<T>`]: a stream of [`WatchEvent<T>`](clientgo_apimachinery::WatchEvent) decoded
//!   from a body, which tells a clean end (the server's timeout) from a failure (a reset
//!   connection, a truncated or malformed stream, a stall).
//!
//! ```
//! use bytes::Bytes;
//! use clientgo_apimachinery::{DynamicObject, Object, WatchEvent};
//! use clientgo_codec::Watch;
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

mod framer;
pub mod json;
pub mod json_scan;
pub mod protobuf;
mod stream;

pub use framer::{DEFAULT_MAX_FRAME, FrameError, Framer};
pub use stream::{BoxError, UndecodableHandler, Watch, WatchBody, WatchError};
