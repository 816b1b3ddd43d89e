//! Watches over the REST client: a [`WatchSource`] for [`RetryWatcher`] built on a
//! [`ResourceClient`] (whose own `watch` opens one typed [`Watch<T>`]), and [`WatchResource`],
//! which builds such a retry watcher in one call.
//!
//! This is where client-go's reflector meets `tools/watch`: `NewRetryWatcher` takes a
//! `WatcherWithContext` whose `Watch(options)` is the typed client's `Watch`, called with
//! `resourceVersion=<rv>` and `allowWatchBookmarks=true`. [`ResourceWatchSource`] is that, for
//! any `ResourceClient<T>` (typed, or [`DynamicClient`](clientgo_rest::DynamicClient)), with
//! the caller's [`WatchParams`] (selectors, `timeoutSeconds`) kept on every re-watch.
//!
//! Errors are split the way [`RetryWatcher`] acts on them: an API error (the server answered
//! with a Status: 410, 401, 403, 429, 5xx, ...) becomes [`WatchStartError::Status`], carrying
//! the HTTP code when the Status has none; anything else (no answer, a timeout, a credential
//! that could not be obtained, a request the builder refused) becomes
//! [`WatchStartError::Transport`] and is retried with backoff.
//!
//! Differences from client-go: `resourceVersionMatch` and `sendInitialEvents` are dropped from
//! the params on every watch the source opens (a resumed watch must start after the given
//! resourceVersion, never replay the state); an idle timeout can be set for the watches it
//! opens ([`ResourceWatchSource::with_idle_timeout`]), as a last line of defence when no
//! HTTP/2 ping can detect a dead connection (HTTP/1.1, or a proxy in between).

use std::time::Duration;

use clientgo_rest::{Error, ResourceClient, WatchParams};
use serde::de::DeserializeOwned;

use crate::retry::{RetryWatchError, RetryWatcher, WatchSource, WatchStartError};
use clientgo_codec::Watch;

/// A [`WatchSource`] over a [`ResourceClient`]. See the module documentation.
pub struct ResourceWatchSource<T> {
    client: ResourceClient<T>,
    params: WatchParams,
    idle_timeout: Option<Duration>,
}

impl<T> Clone for ResourceWatchSource<T> {
    fn clone(&self) -> Self {
        ResourceWatchSource {
            client: self.client.clone(),
            params: self.params.clone(),
            idle_timeout: self.idle_timeout,
        }
    }
}

impl<T> std::fmt::Debug for ResourceWatchSource<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceWatchSource")
            .field("client", &self.client)
            .field("params", &self.params)
            .field("idle_timeout", &self.idle_timeout)
            .finish()
    }
}

impl<T> ResourceWatchSource<T> {
    /// Watches of `client`'s resource with `params` (its `resource_version`,
    /// `resource_version_match` and `send_initial_events` are replaced on each watch).
    pub fn new(client: ResourceClient<T>, params: WatchParams) -> Self {
        ResourceWatchSource {
            client,
            params,
            idle_timeout: None,
        }
    }

    /// Ends each watch with a stall error when no byte arrives for `idle` (see
    /// [`Watch::with_idle_timeout`]; pick more than the server's bookmark interval).
    pub fn with_idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = Some(idle);
        self
    }

    /// The client.
    pub fn client(&self) -> &ResourceClient<T> {
        &self.client
    }

    /// The params of a watch from `resource_version`.
    fn params_from(&self, resource_version: &str) -> WatchParams {
        WatchParams {
            resource_version: Some(resource_version.to_owned()),
            resource_version_match: None,
            send_initial_events: None,
            allow_watch_bookmarks: true,
            ..self.params.clone()
        }
    }
}

impl<T> WatchSource<T> for ResourceWatchSource<T>
where
    T: DeserializeOwned + Send + 'static,
{
    async fn watch(&self, resource_version: &str) -> Result<Watch<T>, WatchStartError> {
        let params = self.params_from(resource_version);
        match self.client.watch(&params).await {
            Ok(watch) => {
                // A retry watcher re-watches from before an event that ended the watch, and
                // would meet an undecodable one again forever: skip it instead.
                let watch = watch.skipping_undecodable();
                Ok(match self.idle_timeout {
                    Some(idle) => watch.with_idle_timeout(idle),
                    None => watch,
                })
            }
            Err(error) => Err(start_error(error)),
        }
    }
}

/// How a failed watch request is reported to a [`RetryWatcher`].
pub fn start_error(error: Error) -> WatchStartError {
    match error {
        Error::Api(api) => {
            let code = api.code();
            let mut status = api.status;
            if status.code == 0 {
                status.code = code;
            }
            WatchStartError::Status(Box::new(status))
        }
        other => WatchStartError::Transport(Box::new(other)),
    }
}

/// A watch that re-opens itself, straight from a [`ResourceClient`]:
/// `client.retry_watcher(params, rv)` (one typed watch is `client.watch(&params)`).
pub trait WatchResource<T> {
    /// A [`RetryWatcher`] from `resource_version` with `params`' selectors and timeout.
    fn retry_watcher(
        &self,
        params: WatchParams,
        resource_version: &str,
    ) -> Result<RetryWatcher<T, ResourceWatchSource<T>>, RetryWatchError>;
}

impl<T> WatchResource<T> for ResourceClient<T>
where
    T: clientgo_apimachinery::Object + DeserializeOwned + Send + 'static,
{
    fn retry_watcher(
        &self,
        params: WatchParams,
        resource_version: &str,
    ) -> Result<RetryWatcher<T, ResourceWatchSource<T>>, RetryWatchError> {
        RetryWatcher::new(
            ResourceWatchSource::new(self.clone(), params),
            resource_version,
        )
    }
}

#[cfg(test)]
mod tests {
    use clientgo_apimachinery::{Status, StatusReason};
    use clientgo_rest::ApiError;
    use clientgo_rest::{TransportError, TransportErrorKind};

    use super::*;

    #[test]
    fn api_errors_are_statuses_and_the_rest_transport_errors() {
        let gone = ApiError {
            status: Status::failure(410, StatusReason::Expired, "too old resource version"),
            http_code: 410,
        };
        let WatchStartError::Status(status) = start_error(gone.into()) else {
            panic!("not a status")
        };
        assert_eq!((status.code, status.is_resource_expired()), (410, true));

        let mut coded = Status::from_reason(StatusReason::Unknown, "proxy error");
        coded.code = 0;
        let proxy = ApiError {
            status: coded,
            http_code: 502,
        };
        let WatchStartError::Status(status) = start_error(proxy.into()) else {
            panic!("not a status")
        };
        assert_eq!(
            status.code, 502,
            "the HTTP code fills in a Status without one"
        );

        let reset = TransportError::new(
            TransportErrorKind::ConnectionReset,
            http::Method::GET,
            "http://h/api/v1/pods?watch=true",
            None,
        );
        let error = start_error(reset.into());
        assert!(matches!(error, WatchStartError::Transport(_)));
        assert!(error.to_string().contains("connection reset"), "{error}");
        let refused = start_error(Error::InvalidRequest("bad".into()));
        assert!(matches!(refused, WatchStartError::Transport(_)));
    }

    #[test]
    fn every_watch_resumes_from_the_given_version_with_bookmarks() {
        let config = clientgo_rest::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = clientgo_rest::RestClient::new(&config).unwrap();
        let resource = clientgo_apimachinery::ApiResource {
            version: "v1".into(),
            kind: "ConfigMap".into(),
            plural: "configmaps".into(),
            namespaced: true,
            ..Default::default()
        };
        let params = WatchParams {
            label_selector: Some("app=web".into()),
            resource_version_match: Some("NotOlderThan".into()),
            send_initial_events: Some(true),
            timeout_seconds: Some(300),
            ..WatchParams::default()
        };
        let source = ResourceWatchSource::new(
            clientgo_rest::DynamicClient::from_api_resource(&client, &resource, Some("ns")),
            params,
        );
        let params = source.params_from("42");
        assert_eq!(params.resource_version.as_deref(), Some("42"));
        assert!(params.allow_watch_bookmarks);
        assert_eq!(params.resource_version_match, None);
        assert_eq!(params.send_initial_events, None);
        assert_eq!(params.label_selector.as_deref(), Some("app=web"));
        assert_eq!(params.timeout_seconds, Some(300));
    }
}
