//! The reflector's WATCH loop and its event handling (client-go's `Reflector.watch`,
//! `handleWatch` and `retry_with_deadline.go`).
//!
//! Where it differs from client-go:
//!
//! * The stream is a typed [`Watch<T>`]: its failures are typed too. A broken connection, a
//!   stream cut inside an event or a stalled one ends the watch like a clean close (client-go's
//!   stream watcher ends silently on EOF-like and timeout errors); a frame that does not decode
//!   counts as an internal error (client-go's decoder turns it into an `ERROR` 500 event).
//! * Store calls cannot fail (client-go logs their errors and goes on).
//! * The periodic resync runs beside the watch in the same task (`select!`) instead of a
//!   goroutine; with an infallible [`ReflectorStore::resync`] it never ends the watch.
//! * Each event's resourceVersion is copied into one reused buffer: no allocation per event.
//! * Before each change reaches the store, the reflector waits while the store says it is
//!   full ([`ReflectorStore::has_room`]): the informer's queue is bounded. (In client-go the
//!   queue's lock, held while an item is processed, slowed the reflector the same way until
//!   `UnlockWhileProcessingFIFO`.)
//!
//! [`ReflectorStore::resync`]: crate::ReflectorStore::resync
//! [`ReflectorStore::has_room`]: crate::ReflectorStore::has_room

use std::time::Duration;

use clientgo_apimachinery::{Object, Status, WatchEvent};
use clientgo_rest::WatchParams;
use clientgo_watch::{Watch, WatchError};
use serde::de::DeserializeOwned;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::status::{FailureKind, ReflectorOperation};
use super::{Reflector, VERY_SHORT_WATCH, non_empty};
use crate::listwatch::{ListWatchError, ListerWatcher};
use crate::metrics::RelistReason;
use crate::shared_informer::journey;

/// How one watch stream ended.
#[derive(Debug)]
pub(super) enum WatchEnd {
    /// The stream ended (cleanly, or broken in an EOF-like way): re-watch.
    Closed,
    /// The reflector was cancelled.
    Cancelled,
    /// An `ERROR` event.
    Status(Box<Status>),
    /// The stream ended within a second with no event.
    VeryShort,
    /// The stream could not be decoded.
    Undecodable(WatchError),
}

impl WatchEnd {
    /// Whether this counts as an internal server error (an `ERROR` 500, or a stream that does
    /// not decode, which client-go's decoder reports as one).
    fn is_internal_error(&self) -> bool {
        match self {
            WatchEnd::Status(status) => ListWatchError::Status(status.clone()).is_internal_error(),
            WatchEnd::Undecodable(_) => true,
            WatchEnd::Closed | WatchEnd::Cancelled | WatchEnd::VeryShort => false,
        }
    }
}

/// A budget for answering internal errors by re-watching at once (client-go's
/// `retryWithDeadline`): retries are allowed for `max` from the first error of a series; a
/// series ends after a quiet `reset_after`.
#[derive(Debug)]
pub(super) struct RetryWithDeadline {
    max: Duration,
    reset_after: Duration,
    first: Option<Instant>,
    last: Option<Instant>,
}

impl RetryWithDeadline {
    pub(super) fn new(max: Duration, reset_after: Duration) -> Self {
        RetryWithDeadline {
            max,
            reset_after,
            first: None,
            last: None,
        }
    }

    /// Notes the end of a watch.
    pub(super) fn after(&mut self, retryable: bool) {
        if !retryable {
            return;
        }
        let now = Instant::now();
        if self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= self.reset_after)
        {
            self.first = None;
            self.last = None;
        }
        self.first.get_or_insert(now);
        self.last = Some(now);
    }

    /// Whether the last internal error may be answered by an immediate re-watch.
    pub(super) fn should_retry(&mut self) -> bool {
        if self.max.is_zero() {
            return false;
        }
        let within = self
            .first
            .is_some_and(|first| Instant::now().saturating_duration_since(first) <= self.max);
        if !within {
            self.first = None;
            self.last = None;
        }
        within
    }
}

impl<T, L> Reflector<T, L>
where
    T: Object + DeserializeOwned + Send + 'static,
    L: ListerWatcher<T>,
{
    /// Watches from the last synced resourceVersion, re-opening the watch as long as no
    /// relist is needed. `stream` is a watch already open (the rest of a streaming list).
    ///
    /// Returns `Err` only for a watch request that failed for a reason other than a refused
    /// connection or a 429 (the round ends and the error handler sees it); `Ok` when
    /// cancelled or when a relist is needed.
    pub(super) async fn watch(
        &self,
        mut stream: Option<Watch<T>>,
        cancel: &CancellationToken,
    ) -> Result<(), ListWatchError> {
        let mut retry =
            RetryWithDeadline::new(self.max_internal_error_retry, Duration::from_secs(60));
        loop {
            // A server that ends every watch at once would otherwise keep this loop from
            // ever yielding to the runtime.
            tokio::task::consume_budget().await;
            if cancel.is_cancelled() {
                return Ok(());
            }
            // Started before the request: some proxies send no headers before the first event.
            let start = Instant::now();
            let (mut watch, hold_back) = match stream.take() {
                Some(watch) => (watch, false),
                None => {
                    let rv = self.last_sync_resource_version();
                    // Synthetic initial events of a watch from "" or "0" come in no order.
                    let hold_back = rv.is_empty() || rv == "0";
                    let options = WatchParams {
                        resource_version: non_empty(rv),
                        timeout_seconds: Some(self.watch_timeout_seconds()),
                        allow_watch_bookmarks: true,
                        ..WatchParams::default()
                    };
                    if let Some(metrics) = &self.metrics {
                        metrics.watch_started();
                    }
                    let opened = tokio::select! {
                        biased;
                        _ = cancel.cancelled() => return Ok(()),
                        opened = self.lister_watcher.watch(&options) => opened,
                    };
                    match opened {
                        Ok(watch) => (watch, hold_back),
                        Err(error) => {
                            self.failure.record_error(ReflectorOperation::Watch, &error);
                            if error.is_watch_retriable() {
                                // The server is overloaded or restarting: the watch can resume
                                // where it was, a relist would only add load.
                                tracing::debug!(reflector = %self.name, %error, "watch failed, backing off");
                                if !self.sleep_backoff(cancel).await {
                                    return Ok(());
                                }
                                continue;
                            }
                            self.count_relist(if error.is_expired() {
                                RelistReason::Expired
                            } else {
                                RelistReason::WatchError
                            });
                            return Err(error);
                        }
                    }
                }
            };
            let mut events = 0;
            let end = self
                .handle_watch(start, &mut watch, hold_back, &mut events, cancel)
                .await;
            if let Some(metrics) = &self.metrics {
                let short = matches!(end, WatchEnd::VeryShort);
                metrics.watch_ended(start.elapsed(), events, short);
            }
            // Never reused across iterations: dropping it closes the stream.
            drop(watch);
            retry.after(end.is_internal_error());
            match end {
                WatchEnd::Closed => {}
                WatchEnd::Cancelled => return Ok(()),
                WatchEnd::VeryShort => {
                    self.failure.record(
                        ReflectorOperation::Watch,
                        FailureKind::ServerSilent,
                        "watch closed within a second without any event".to_owned(),
                    );
                    // The failure record logs it (rate-limited).
                    tracing::debug!(
                        reflector = %self.name,
                        "watch closed within a second without any event, relisting after a backoff"
                    );
                    self.count_relist(RelistReason::ShortWatch);
                    return Ok(());
                }
                WatchEnd::Undecodable(error) => {
                    self.failure.record(
                        ReflectorOperation::Watch,
                        FailureKind::of_stream(&error),
                        error.to_string(),
                    );
                    if retry.should_retry() {
                        tracing::debug!(reflector = %self.name, %error, "re-watching after an undecodable stream");
                        continue;
                    }
                    tracing::debug!(reflector = %self.name, %error, "watch ended");
                    self.count_relist(RelistReason::WatchError);
                    return Ok(());
                }
                WatchEnd::Status(status) => {
                    let error = ListWatchError::Status(status);
                    self.failure.record_error(ReflectorOperation::Watch, &error);
                    if error.is_expired() {
                        // Not marked unavailable: a LIST at the last resourceVersion returns
                        // data at least that new; only if it says expired too does the
                        // reflector fall back to a consistent read.
                        tracing::debug!(reflector = %self.name, %error, "watch expired, relisting");
                        self.count_relist(RelistReason::Expired);
                        return Ok(());
                    }
                    if error.is_too_many_requests() {
                        tracing::debug!(reflector = %self.name, "watch throttled (429), backing off");
                        if !self.sleep_backoff(cancel).await {
                            return Ok(());
                        }
                        continue;
                    }
                    if error.is_internal_error() && retry.should_retry() {
                        tracing::debug!(reflector = %self.name, %error, "re-watching after an internal error");
                        continue;
                    }
                    tracing::debug!(reflector = %self.name, %error, "watch ended");
                    self.count_relist(RelistReason::WatchError);
                    return Ok(());
                }
            }
        }
    }

    fn count_relist(&self, reason: RelistReason) {
        if let Some(metrics) = &self.metrics {
            metrics.relist(reason);
        }
    }

    /// Feeds one watch's events to the store until it ends, counting them in `events`.
    async fn handle_watch(
        &self,
        start: Instant,
        watch: &mut Watch<T>,
        mut hold_back: bool,
        events: &mut u64,
        cancel: &CancellationToken,
    ) -> WatchEnd {
        // Reused for every event's resourceVersion: no allocation per event.
        let mut rv = String::new();
        loop {
            let next = tokio::select! {
                biased;
                _ = cancel.cancelled() => return WatchEnd::Cancelled,
                next = watch.next() => next,
            };
            let event = match next {
                None => break,
                Some(Ok(event)) => event,
                Some(Err(error @ (WatchError::Frame(_) | WatchError::Decode { .. }))) => {
                    return WatchEnd::Undecodable(error);
                }
                Some(Err(error)) => {
                    // A reset, truncated or stalled stream ends like a clean close.
                    tracing::debug!(reflector = %self.name, %error, "watch stream broke");
                    self.failure.record(
                        ReflectorOperation::Watch,
                        FailureKind::of_stream(&error),
                        error.to_string(),
                    );
                    break;
                }
            };
            // Back-pressure: the next change waits until the store has room for it.
            if !self.wait_for_room(cancel).await {
                return WatchEnd::Cancelled;
            }
            rv.clear();
            match event {
                WatchEvent::Added(object) => {
                    journey::watch_event("ADDED", &object);
                    rv.push_str(object.resource_version());
                    self.store.add(object);
                }
                WatchEvent::Modified(object) => {
                    journey::watch_event("MODIFIED", &object);
                    hold_back = false;
                    rv.push_str(object.resource_version());
                    self.store.update(object);
                }
                WatchEvent::Deleted(object) => {
                    journey::watch_event("DELETED", &object);
                    hold_back = false;
                    rv.push_str(object.resource_version());
                    self.store.delete(object);
                }
                WatchEvent::Bookmark(bookmark) => {
                    hold_back = false;
                    rv.push_str(bookmark.resource_version());
                    self.store.bookmark(&rv);
                }
                WatchEvent::Error(status) => return WatchEnd::Status(status),
            }
            if !hold_back {
                self.set_last_sync_resource_version(&rv);
            }
            *events += 1;
            self.failure.clear();
        }
        if start.elapsed() < VERY_SHORT_WATCH && *events == 0 {
            return WatchEnd::VeryShort;
        }
        tracing::trace!(reflector = %self.name, events = *events, "watch closed");
        WatchEnd::Closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // TestRetryWithDeadline.
    #[tokio::test(start_paused = true)]
    async fn retry_with_deadline() {
        let second = Duration::from_secs(1);
        let mut off = RetryWithDeadline::new(Duration::ZERO, Duration::from_secs(60));
        off.after(true);
        assert!(!off.should_retry());

        let mut retry = RetryWithDeadline::new(Duration::from_secs(3), Duration::from_secs(60));
        retry.after(false);
        assert!(!retry.should_retry(), "no internal error yet");
        for _ in 0..4 {
            retry.after(true);
            assert!(retry.should_retry());
            tokio::time::advance(second).await;
        }
        retry.after(true);
        assert!(
            !retry.should_retry(),
            "4 s after the first error of the series"
        );
        // The failed check ended the series: the next error starts a new one.
        retry.after(true);
        assert!(retry.should_retry());
        // A quiet minute ends a series too.
        tokio::time::advance(Duration::from_secs(2)).await;
        retry.after(true);
        assert!(retry.should_retry());
        tokio::time::advance(Duration::from_secs(60)).await;
        retry.after(true);
        tokio::time::advance(Duration::from_secs(3)).await;
        assert!(retry.should_retry(), "the series restarted 3 s ago");
    }
}
