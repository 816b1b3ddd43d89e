//! The reflector's streaming list (KEP-3157, client-go's `Reflector.watchList`): a watch with
//! `sendInitialEvents=true` whose initial events replace the store once the bookmark annotated
//! `k8s.io/initial-events-end` arrives, after which the same watch goes on.
//!
//! Differences from client-go:
//!
//! * An attempt gives up when nothing arrives for
//!   [`initial_events_timeout`](super::ReflectorOptions::initial_events_timeout) (no initial
//!   event, no bookmark; and for opening the request). A server or proxy that ignores
//!   `sendInitialEvents` never sends the closing bookmark (an old server even streams a
//!   legacy "state, then changes" watch that looks healthy); then the reflector logs it once,
//!   turns streaming lists off for its lifetime and uses LIST+WATCH. The deadline measures
//!   lack of progress, not the whole stream, so a large collection streamed steadily is
//!   never cut off.
//! * A stream that closes before its bookmark is started over after a backoff delay
//!   (client-go starts over at once, which a server closing every stream turns into a tight
//!   loop).
//! * Each initial object goes through the store's transform as it arrives (as client-go's
//!   temporary store does), so the objects held until the bookmark are the transformed
//!   ones; [`ReflectorStore::replace_transformed`](crate::ReflectorStore::replace_transformed)
//!   does not transform them again. They are collected in a vector, keyed only if the server
//!   sends something other than `ADDED` before the bookmark (it should not), so no key is
//!   copied for a well-behaved stream.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use clientgo_apimachinery::{Object, Status, WatchEvent};
use clientgo_rest::WatchParams;
use clientgo_watch::{Watch, WatchError};
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::status::{FailureKind, ReflectorOperation};
use super::{Reflector, VERY_SHORT_WATCH, non_empty};
use crate::listwatch::{ListWatchError, ListerWatcher, RESOURCE_VERSION_MATCH_NOT_OLDER_THAN};
use crate::metrics::FallbackReason;

/// How often a streaming list that receives nothing says it is still waiting.
const QUIET_WARNING_INTERVAL: Duration = Duration::from_secs(10);

/// How a streaming list ended.
pub(super) enum WatchListEnd<T> {
    /// The reflector was cancelled.
    Cancelled,
    /// The store holds the initial state; the watch goes on from here.
    Synced(Watch<T>),
    /// It did not work out: fall back to LIST+WATCH.
    Failed,
}

/// How collecting the initial events ended.
enum Collected {
    /// The closing bookmark, at this resourceVersion.
    Done(String),
    Status(Box<Status>),
    /// The stream ended before the bookmark.
    Closed,
    /// Nothing arrived for the whole `initial_events_timeout`.
    NoProgress,
    VeryShort,
    Undecodable(WatchError),
}

/// The objects of the initial events, in arrival order.
pub(super) struct InitialObjects<T> {
    objects: Vec<T>,
    /// Key → position, built only when a non-`ADDED` event needs it.
    index: Option<HashMap<String, usize>>,
}

impl<T: Object> InitialObjects<T> {
    pub(super) fn new() -> Self {
        InitialObjects {
            objects: Vec::new(),
            index: None,
        }
    }

    fn index(&mut self) -> &mut HashMap<String, usize> {
        let objects = &self.objects;
        self.index.get_or_insert_with(|| {
            objects
                .iter()
                .enumerate()
                .map(|(i, object)| (object.key(), i))
                .collect()
        })
    }

    /// An `ADDED`: appended (or replacing an earlier one with its key, once keyed).
    pub(super) fn add(&mut self, object: T) {
        if self.index.is_none() {
            self.objects.push(object);
        } else {
            self.upsert(object);
        }
    }

    /// A `MODIFIED`: replaces the object with its key, or is appended.
    pub(super) fn upsert(&mut self, object: T) {
        let len = self.objects.len();
        let key = object.key();
        let slot = *self.index().entry(key).or_insert(len);
        if slot == len {
            self.objects.push(object);
        } else {
            self.objects[slot] = object;
        }
    }

    /// A `DELETED`: removes the object with its key.
    pub(super) fn remove(&mut self, object: &T) {
        let Some(slot) = self.index().remove(&object.key()) else {
            return;
        };
        self.objects.swap_remove(slot);
        if let Some(moved) = self.objects.get(slot) {
            let key = moved.key();
            self.index().insert(key, slot);
        }
    }

    pub(super) fn into_vec(self) -> Vec<T> {
        self.objects
    }
}

impl<T, L> Reflector<T, L>
where
    T: Object + DeserializeOwned + Send + 'static,
    L: ListerWatcher<T>,
{
    /// Runs a streaming list; on success the store holds the initial state and the open watch
    /// is returned for [`watch`](Reflector::watch) to go on with.
    pub(super) async fn watch_list(&self, cancel: &CancellationToken) -> WatchListEnd<T> {
        loop {
            // A server that ends every watch at once would otherwise keep this loop from
            // ever yielding to the runtime.
            tokio::task::consume_budget().await;
            if cancel.is_cancelled() {
                return WatchListEnd::Cancelled;
            }
            let options = WatchParams {
                resource_version: non_empty(self.rewatch_resource_version()),
                resource_version_match: Some(RESOURCE_VERSION_MATCH_NOT_OLDER_THAN.to_owned()),
                send_initial_events: Some(true),
                allow_watch_bookmarks: true,
                timeout_seconds: Some(self.watch_timeout_seconds()),
                ..WatchParams::default()
            };
            if let Some(metrics) = &self.metrics {
                metrics.watch_list_started();
            }
            let start = Instant::now();
            let deadline = start + self.initial_events_timeout;
            let opened = tokio::select! {
                biased;
                _ = cancel.cancelled() => return WatchListEnd::Cancelled,
                _ = tokio::time::sleep_until(deadline) => return self.initial_events_timed_out(),
                opened = self.lister_watcher.watch(&options) => opened,
            };
            let mut watch = match opened {
                Ok(watch) => watch,
                Err(error) => match self.watch_list_retry(error, cancel).await {
                    Some(true) => continue,
                    Some(false) => return WatchListEnd::Failed,
                    None => return WatchListEnd::Cancelled,
                },
            };
            let mut initial = InitialObjects::new();
            let collected = tokio::select! {
                biased;
                _ = cancel.cancelled() => return WatchListEnd::Cancelled,
                collected = self.collect_initial_events(start, &mut watch, &mut initial) => collected,
            };
            let error = match collected {
                Collected::Done(rv) => {
                    let objects = initial.into_vec();
                    tracing::debug!(
                        reflector = %self.name, items = objects.len(), resource_version = %rv,
                        elapsed = ?start.elapsed(), "streaming list complete"
                    );
                    if let Some(metrics) = &self.metrics {
                        metrics.listed(start.elapsed(), objects.len());
                    }
                    self.set_resource_version_unavailable(false);
                    if !self.wait_for_room(cancel).await {
                        return WatchListEnd::Cancelled;
                    }
                    crate::shared_informer::journey::listed("watch-list", &objects);
                    self.store.replace_transformed(objects, rv.clone());
                    self.set_last_sync_resource_version(&rv);
                    self.failure.clear();
                    return WatchListEnd::Synced(watch);
                }
                // Started over after a backoff (client-go starts over at once: a server
                // that keeps closing the stream would get a new one in a tight loop).
                Collected::Closed => {
                    drop(watch);
                    if !self.sleep_backoff(cancel).await {
                        return WatchListEnd::Cancelled;
                    }
                    continue;
                }
                Collected::NoProgress => return self.initial_events_timed_out(),
                Collected::Status(status) => ListWatchError::Status(status),
                Collected::VeryShort => {
                    self.failure.record(
                        ReflectorOperation::WatchList,
                        FailureKind::ServerSilent,
                        "streaming list closed within a second without any event".to_owned(),
                    );
                    self.log_fallback(&"closed within a second without any event");
                    self.count_fallback(FallbackReason::ShortWatch);
                    return WatchListEnd::Failed;
                }
                Collected::Undecodable(error) => {
                    self.failure.record(
                        ReflectorOperation::WatchList,
                        FailureKind::of_stream(&error),
                        error.to_string(),
                    );
                    self.log_fallback(&error);
                    self.count_fallback(FallbackReason::Undecodable);
                    return WatchListEnd::Failed;
                }
            };
            drop(watch);
            match self.watch_list_retry(error, cancel).await {
                Some(true) => continue,
                Some(false) => return WatchListEnd::Failed,
                None => return WatchListEnd::Cancelled,
            }
        }
    }

    /// Decides what a streaming-list error leads to (client-go's
    /// `isErrorRetriableWithSideEffectsFn`): `Some(true)` to try again (after a backoff for a
    /// refused connection or a 429; at once, from `""`, for an unavailable resourceVersion),
    /// `Some(false)` to fall back to LIST+WATCH, `None` if cancelled while backing off.
    async fn watch_list_retry(
        &self,
        error: ListWatchError,
        cancel: &CancellationToken,
    ) -> Option<bool> {
        self.failure
            .record_error(ReflectorOperation::WatchList, &error);
        if error.is_watch_retriable() {
            tracing::debug!(reflector = %self.name, %error, "streaming list failed, backing off");
            return self.sleep_backoff(cancel).await.then_some(true);
        }
        if error.is_expired() || error.is_too_large_resource_version() {
            tracing::debug!(reflector = %self.name, %error, "resourceVersion unavailable, streaming from the newest state");
            self.set_resource_version_unavailable(true);
            return Some(true);
        }
        if lacks_watch_list(&error) {
            self.log_fallback(&error);
        } else {
            // Not the feature: the failure record has said what went wrong (forbidden, not
            // found, ...); LIST+WATCH will meet the same cause, or get past it.
            tracing::debug!(reflector = %self.name, %error, "streaming list failed, trying LIST+WATCH");
        }
        self.count_fallback(FallbackReason::Error);
        Some(false)
    }

    fn count_fallback(&self, reason: FallbackReason) {
        if let Some(metrics) = &self.metrics {
            metrics.watch_list_fallback(reason);
        }
    }

    fn log_fallback(&self, reason: &dyn std::fmt::Display) {
        tracing::warn!(
            reflector = %self.name, %reason,
            "streaming list failed, falling back to LIST+WATCH"
        );
    }

    /// No progress toward the closing bookmark in time: streaming lists are off from now on.
    fn initial_events_timed_out(&self) -> WatchListEnd<T> {
        let timeout = self.initial_events_timeout;
        self.failure.record(
            ReflectorOperation::WatchList,
            FailureKind::ServerSilent,
            format!("no progress toward the initial-events-end bookmark for {timeout:?}"),
        );
        self.count_fallback(FallbackReason::Timeout);
        if self.use_watch_list.swap(false, Ordering::Relaxed) {
            tracing::warn!(
                reflector = %self.name, ?timeout,
                "the server did not end the initial events of a streaming list in time \
                 (it may ignore sendInitialEvents); using LIST+WATCH from now on"
            );
        }
        WatchListEnd::Failed
    }

    /// Collects the initial events until the closing bookmark.
    async fn collect_initial_events(
        &self,
        start: Instant,
        watch: &mut Watch<T>,
        initial: &mut InitialObjects<T>,
    ) -> Collected {
        let mut events = 0u64;
        let mut last_event = start;
        let mut quiet =
            tokio::time::interval_at(start + QUIET_WARNING_INTERVAL, QUIET_WARNING_INTERVAL);
        // The deadline measures the time without progress, not the whole stream: a large
        // collection streamed steadily is never cut off. One timer, moved on after each event
        // (moving a timer later touches no timer wheel; a new one per event would).
        let stalled = tokio::time::sleep_until(start + self.initial_events_timeout);
        let mut stalled = std::pin::pin!(stalled);
        loop {
            // Biased, the stream first: an event that is ready is progress, whatever the
            // timers say, and an unbiased select draws a random number per event.
            let next = tokio::select! {
                biased;
                next = watch.next() => next,
                () = &mut stalled => return Collected::NoProgress,
                _ = quiet.tick() => {
                    let silent = last_event.elapsed();
                    if silent >= QUIET_WARNING_INTERVAL {
                        tracing::warn!(
                            reflector = %self.name, events, ?silent,
                            "still waiting for the bookmark that ends the initial events"
                        );
                    }
                    continue;
                }
            };
            let event = match next {
                None => break,
                Some(Ok(event)) => event,
                Some(Err(error @ (WatchError::Frame(_) | WatchError::Decode { .. }))) => {
                    return Collected::Undecodable(error);
                }
                Some(Err(error)) => {
                    tracing::debug!(reflector = %self.name, %error, "streaming list broke");
                    self.failure.record(
                        ReflectorOperation::WatchList,
                        FailureKind::of_stream(&error),
                        error.to_string(),
                    );
                    break;
                }
            };
            // Transformed as they arrive: until the bookmark, only the transformed objects
            // are held (client-go's temporary store has the transformer).
            match event {
                WatchEvent::Added(object) => initial.add(self.store.transform(object)),
                WatchEvent::Modified(object) => initial.upsert(self.store.transform(object)),
                WatchEvent::Deleted(object) => initial.remove(&object),
                WatchEvent::Bookmark(bookmark) => {
                    if bookmark.is_initial_events_end() {
                        return Collected::Done(bookmark.metadata.resource_version);
                    }
                }
                WatchEvent::Error(status) => return Collected::Status(status),
            }
            events += 1;
            last_event = Instant::now();
            stalled
                .as_mut()
                .reset(last_event + self.initial_events_timeout);
        }
        if start.elapsed() < VERY_SHORT_WATCH && events == 0 {
            return Collected::VeryShort;
        }
        Collected::Closed
    }
}

/// Whether a streaming list failed because the server does not serve streaming lists: a
/// server before Kubernetes 1.27, or with the WatchList feature off, refuses
/// `resourceVersionMatch` on a watch (422 Invalid) or the request (400 Bad Request).
fn lacks_watch_list(error: &ListWatchError) -> bool {
    matches!(error, ListWatchError::Status(_)) && matches!(error.code(), 400 | 422)
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::{DynamicObject, ObjectMut};

    fn obj(name: &str, rv: &str) -> DynamicObject {
        let mut o = DynamicObject::new(name).within("ns");
        o.set_resource_version(rv.to_owned());
        o
    }

    fn names(initial: InitialObjects<DynamicObject>) -> Vec<String> {
        initial
            .into_vec()
            .iter()
            .map(|o| format!("{}@{}", o.name(), o.resource_version()))
            .collect()
    }

    #[test]
    fn added_events_are_kept_in_order_without_an_index() {
        let mut initial = InitialObjects::new();
        initial.add(obj("a", "1"));
        initial.add(obj("b", "2"));
        assert!(initial.index.is_none());
        assert_eq!(names(initial), ["a@1", "b@2"]);
    }

    #[test]
    fn modified_and_deleted_events_are_applied_by_key() {
        let mut initial = InitialObjects::new();
        initial.add(obj("a", "1"));
        initial.add(obj("b", "2"));
        initial.add(obj("c", "3"));
        initial.upsert(obj("a", "4"));
        initial.remove(&obj("a", "5"));
        initial.add(obj("b", "6"));
        initial.upsert(obj("d", "7"));
        initial.remove(&obj("zzz", "8"));
        assert_eq!(names(initial), ["c@3", "b@6", "d@7"]);
    }
}
