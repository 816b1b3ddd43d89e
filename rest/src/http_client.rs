//! What sends a request: the [`HttpClient`] trait (client-go's `HTTPClient` interface) and
//! [`BoxFuture`]. The REST client holds one: by default the
//! [`Transport`](crate::transport::Transport) built from the configuration, which implements
//! it, or a test's fake given to
//! [`RestClientBuilder::http_client`](crate::RestClientBuilder::http_client). Its own module,
//! below the client and the transport, so that neither imports the other for it.

use std::future::Future;
use std::pin::Pin;

use bytes::Bytes;

use crate::body::Body;
use crate::error::Error;

/// A boxed, sendable future.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Sends one HTTP request and returns the response with its body unread (client-go's
/// `HTTPClient`). See the module documentation of [`client`](crate::client).
pub trait HttpClient: Send + Sync + 'static {
    /// Sends `request`. Transport failures are [`Error::Transport`]; a failure to obtain a
    /// credential is [`Error::Config`].
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Body>, Error>>;
}
