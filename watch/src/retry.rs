//! A watch that survives its connection: client-go's `tools/watch.RetryWatcher`.
//!
//! A single watch ends often: the server closes it when `timeoutSeconds` runs out, a proxy
//! drops an idle connection, the API server restarts. [`RetryWatcher`] opens a new watch from
//! the last resourceVersion it delivered each time, so the caller sees one stream of events
//! with no gap and no repeat, until something only a relist can fix happens:
//!
//! | what happens | what the retry watcher does |
//! |---|---|
//! | the watch ends cleanly | re-watches from the last resourceVersion (at most once a second) |
//! | the connection fails, or the watch cannot be opened | re-watches after a backoff (1 s doubling to 30 s, reset by the next event) |
//! | a `BOOKMARK` | advances the resourceVersion; not passed on |
//! | an `ERROR` event with a retry hint, or a 5xx | re-watches after the hint (at most [`MAX_RETRY_AFTER`], 60 s) or the backoff |
//! | `410 Gone` / `Expired` (event or response) | ends with [`RetryWatchError::Gone`]: the caller must relist |
//! | `401` / `403` | ends with [`RetryWatchError::Unauthorized`] / [`RetryWatchError::Forbidden`] |
//! | an event without a resourceVersion | ends with [`RetryWatchError::NoResourceVersion`] |
//!
//! It starts only from a real resourceVersion: `""` and `"0"` would make the server replay
//! synthetic events in no order, which a resuming watch cannot handle (client-go refuses them
//! too).
//!
//! Where it differs from client-go: client-go restarts at most once a second whatever the
//! error; here consecutive failures back off exponentially to 30 s (a server that keeps
//! failing is not hammered), and a 410 from the watch request itself ends the watcher like a
//! 410 event does (re-watching from the same expired resourceVersion could never succeed).
//! Terminal conditions are typed errors rather than a forwarded `ERROR` event.

use std::future::Future;
use std::time::Duration;

use clientgo_apimachinery::{Object, Status, StatusReason, WatchEvent};
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use clientgo_codec::{BoxError, Watch};

/// The shortest time between the starts of two watches after a clean end.
pub const MIN_RESTART_INTERVAL: Duration = Duration::from_secs(1);

/// The longest backoff between failed attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// The longest wait a server's retry hint (`retryAfterSeconds` of an `ERROR` event or of a
/// refused watch) can impose: the REST client's cap on `Retry-After`, 60 s, so that a
/// broken or hostile server cannot park the watcher for days.
pub const MAX_RETRY_AFTER: Duration = clientgo_rest::retry::MAX_RETRY_AFTER;

/// Why a watch could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum WatchStartError {
    /// The API server refused it with this Status.
    #[error("watch refused: {0}")]
    Status(Box<Status>),
    /// The request did not reach the server or got no answer.
    #[error("watch request failed: {0}")]
    Transport(#[source] BoxError),
}

/// Opens watches for a [`RetryWatcher`]: client-go's `WatcherWithContext`.
///
/// Implementations open a watch of one collection starting after `resource_version`, with
/// bookmarks allowed (`allowWatchBookmarks=true`).
pub trait WatchSource<T>: Send + Sync {
    /// Opens a watch from `resource_version`.
    fn watch(
        &self,
        resource_version: &str,
    ) -> impl Future<Output = Result<Watch<T>, WatchStartError>> + Send;
}

/// Why a [`RetryWatcher`] stopped.
#[derive(Debug, thiserror::Error)]
pub enum RetryWatchError {
    /// The starting resourceVersion was `""` or `"0"`.
    #[error("a retry watcher needs a concrete starting resourceVersion, not {0:?}")]
    InvalidResourceVersion(String),
    /// The resourceVersion is too old for the server: relist, then watch again.
    #[error("watch expired, relist needed: {0}")]
    Gone(Box<Status>),
    /// The server does not know who is asking.
    #[error("watch unauthorized: {0}")]
    Unauthorized(Box<Status>),
    /// The caller may not watch this collection.
    #[error("watch forbidden: {0}")]
    Forbidden(Box<Status>),
    /// An event came without the resourceVersion needed to resume after it.
    #[error("watch event without a resourceVersion")]
    NoResourceVersion,
}

/// A watch that re-opens itself from the last resourceVersion it delivered.
///
/// # Examples
///
/// ```no_run
/// # use clientgo_apimachinery::{DynamicObject, WatchEvent};
/// # use clientgo_watch::{RetryWatcher, WatchSource};
/// # async fn example(source: impl WatchSource<DynamicObject>) {
/// let mut watcher = RetryWatcher::new(source, "12345").expect("a concrete resourceVersion");
/// while let Some(event) = watcher.next().await {
///     match event {
///         Ok(WatchEvent::Added(object)) => println!("added {}", object.metadata.name),
///         Ok(_) => {}
///         Err(error) => eprintln!("watch ended: {error}"), // e.g. Gone: relist
///     }
/// }
/// # }
/// ```
pub struct RetryWatcher<T, S> {
    source: S,
    resource_version: String,
    watch: Option<Watch<T>>,
    /// No watch starts before this instant.
    not_before: Option<Instant>,
    last_start: Option<Instant>,
    failures: u32,
    done: bool,
}

impl<T, S> std::fmt::Debug for RetryWatcher<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RetryWatcher")
            .field("resource_version", &self.resource_version)
            .field("watching", &self.watch.is_some())
            .field("failures", &self.failures)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<T, S> RetryWatcher<T, S>
where
    T: Object + DeserializeOwned,
    S: WatchSource<T>,
{
    /// A retry watcher over `source`, starting after `resource_version`.
    pub fn new(source: S, resource_version: impl Into<String>) -> Result<Self, RetryWatchError> {
        let resource_version = resource_version.into();
        if resource_version.is_empty() || resource_version == "0" {
            return Err(RetryWatchError::InvalidResourceVersion(resource_version));
        }
        Ok(Self {
            source,
            resource_version,
            watch: None,
            not_before: None,
            last_start: None,
            failures: 0,
            done: false,
        })
    }

    /// The resourceVersion of the last event (or bookmark) seen: where a new watch starts.
    pub fn last_resource_version(&self) -> &str {
        &self.resource_version
    }

    /// Stops watching: the current watch is dropped and `next` returns `None`.
    pub fn stop(&mut self) {
        self.watch = None;
        self.done = true;
    }

    /// The next event (never a bookmark); `None` after [`stop`](RetryWatcher::stop) or once
    /// a terminal error has been returned.
    ///
    /// Cancel-safe: dropping the future loses no event and keeps the pending backoff.
    pub async fn next(&mut self) -> Option<Result<WatchEvent<T>, RetryWatchError>> {
        loop {
            if self.done {
                return None;
            }
            let Some(watch) = self.watch.as_mut() else {
                if let Err(error) = self.start().await {
                    return self.end(error);
                }
                continue;
            };
            match watch.next().await {
                None => {
                    tracing::debug!(rv = %self.resource_version, "watch ended, re-watching");
                    self.watch = None;
                    self.not_before = self.last_start.map(|start| start + MIN_RESTART_INTERVAL);
                }
                Some(Err(error)) => {
                    tracing::warn!(rv = %self.resource_version, %error, "watch failed, re-watching");
                    self.watch = None;
                    self.back_off(None);
                }
                Some(Ok(event)) => {
                    if let Some(result) = self.handle(event) {
                        return Some(result);
                    }
                }
            }
        }
    }

    fn end(&mut self, error: RetryWatchError) -> Option<Result<WatchEvent<T>, RetryWatchError>> {
        self.stop();
        Some(Err(error))
    }

    /// Opens the next watch once its backoff has passed; `Err` only for a terminal refusal.
    async fn start(&mut self) -> Result<(), RetryWatchError> {
        if let Some(not_before) = self.not_before {
            tokio::time::sleep_until(not_before).await;
        }
        self.not_before = None;
        self.last_start = Some(Instant::now());
        match self.source.watch(&self.resource_version).await {
            Ok(watch) => {
                self.watch = Some(watch);
                Ok(())
            }
            Err(WatchStartError::Status(status)) => match terminal(&status) {
                Some(make) => Err(make(status)),
                None => {
                    tracing::warn!(rv = %self.resource_version, %status, "watch refused, retrying");
                    self.back_off(status.retry_after_seconds());
                    Ok(())
                }
            },
            Err(WatchStartError::Transport(error)) => {
                tracing::warn!(rv = %self.resource_version, %error, "watch request failed, retrying");
                self.back_off(None);
                Ok(())
            }
        }
    }

    /// Handles one event: `Some` to deliver (or end), `None` to keep reading.
    fn handle(&mut self, event: WatchEvent<T>) -> Option<Result<WatchEvent<T>, RetryWatchError>> {
        match event {
            WatchEvent::Bookmark(bookmark) => {
                if bookmark.resource_version().is_empty() {
                    return self.end(RetryWatchError::NoResourceVersion);
                }
                self.resource_version = bookmark.resource_version().to_owned();
                None
            }
            WatchEvent::Error(status) => {
                if let Some(make) = terminal(&status) {
                    return self.end(make(status));
                }
                tracing::warn!(rv = %self.resource_version, %status, "watch error event, re-watching");
                self.watch = None;
                self.back_off(status.retry_after_seconds());
                None
            }
            change => {
                let resource_version = change.object().map_or("", Object::resource_version);
                if resource_version.is_empty() {
                    return self.end(RetryWatchError::NoResourceVersion);
                }
                self.resource_version = resource_version.to_owned();
                self.failures = 0;
                Some(Ok(change))
            }
        }
    }

    /// Delays the next start: the server's hint if it gave one (at most
    /// [`MAX_RETRY_AFTER`]), else 1 s doubling per consecutive failure up to [`MAX_BACKOFF`].
    fn back_off(&mut self, retry_after_seconds: Option<i32>) {
        let backoff = MIN_RESTART_INTERVAL
            .saturating_mul(1 << self.failures.min(5))
            .min(MAX_BACKOFF);
        self.failures = self.failures.saturating_add(1);
        let delay = retry_after_seconds
            .filter(|seconds| *seconds >= 0)
            .map_or(backoff, |seconds| {
                clientgo_rest::retry::capped_retry_after(i64::from(seconds))
            });
        self.not_before = Some(Instant::now() + delay);
    }
}

/// The terminal error a Status calls for, if any.
fn terminal(status: &Status) -> Option<fn(Box<Status>) -> RetryWatchError> {
    if status.is_resource_expired() || status.code == 410 {
        return Some(RetryWatchError::Gone);
    }
    match (&status.reason, status.code) {
        (StatusReason::Unauthorized, _) | (_, 401) => Some(RetryWatchError::Unauthorized),
        (StatusReason::Forbidden, _) | (_, 403) => Some(RetryWatchError::Forbidden),
        _ => None,
    }
}
