//! Where events are written, and how: the [`EventSink`] trait, [`SinkError`], and the retry
//! rules of client-go's `recordToSink` / `recordEvent` (`tools/record/event.go`).
//!
//! An event first goes through the sink's [`EventCorrelator`]; a skipped one is dropped. Then
//! up to [`MAX_TRIES_PER_EVENT`] (12) tries, each of which:
//!
//! * for an event seen before (count > 1) PATCHes the stored event with the correlator's merge
//!   patch; if that says [`NotFound`](SinkError::NotFound) (the stored event expired), or for a
//!   new event, CREATEs it with its resourceVersion cleared;
//! * on success hands the server's copy to the correlator ([`EventCorrelator::update_state`]);
//! * on [`Rejected`](SinkError::Rejected), [`AlreadyExists`](SinkError::AlreadyExists) or a
//!   `NotFound` from the create, gives up (already-exists and a terminating namespace only at
//!   debug level, as client-go logs them at V(5));
//! * on [`Transport`](SinkError::Transport) sleeps and tries again: the first sleep is a random
//!   fraction of the sleep duration (default [`DEFAULT_SLEEP_DURATION`], 10 s), so that clients
//!   cut off together do not all come back at once; the later ones are the full duration.
//!
//! Shutting the broadcaster down ends the sleeps: an event then gets the try in progress and no
//! more.
//!
//! Where it differs from client-go: the sink is a trait of async methods that report the four
//! outcomes above as an enum, instead of Go errors whose type decides (`StatusError`,
//! `RequestConstructionError`: give up; anything else: retry). The REST client implements it
//! by mapping a 404 to `NotFound`, an `AlreadyExists` status to `AlreadyExists`, other API
//! errors and requests it cannot build to `Rejected`, and the rest to `Transport`. The random
//! first sleep comes from a small seeded generator, so tests can make it reproducible.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{Status, StatusReason};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::correlator::{EventCorrelator, count_patch};
use crate::event::Event;

/// Tries per event before it is given up.
pub const MAX_TRIES_PER_EVENT: u32 = 12;
/// The sleep between tries (the first one is a random fraction of it).
pub const DEFAULT_SLEEP_DURATION: Duration = Duration::from_secs(10);
/// The status cause type of a create refused because the namespace is being deleted.
pub const NAMESPACE_TERMINATING_CAUSE: &str = "NamespaceTerminating";

/// Any error, boxed.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Stores events: the API server's `events` resource, or anything standing in for it
/// (client-go's `EventSink`). It must write each event in the event's own namespace.
pub trait EventSink: Send + Sync + 'static {
    /// Creates the event; returns the server's copy.
    fn create(&self, event: &Event) -> impl Future<Output = Result<Event, SinkError>> + Send;
    /// Strategic merge patch of an existing event (count, lastTimestamp, message), named by
    /// `event`'s namespace and name; returns the server's copy.
    fn patch(
        &self,
        event: &Event,
        patch: &Value,
    ) -> impl Future<Output = Result<Event, SinkError>> + Send;
}

impl<S: EventSink> EventSink for Arc<S> {
    fn create(&self, event: &Event) -> impl Future<Output = Result<Event, SinkError>> + Send {
        (**self).create(event)
    }

    fn patch(
        &self,
        event: &Event,
        patch: &Value,
    ) -> impl Future<Output = Result<Event, SinkError>> + Send {
        (**self).patch(event, patch)
    }
}

/// Why a sink could not write an event; decides whether the write is retried.
#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    /// 404: a patched event no longer exists (it is then created), or the namespace is gone.
    #[error("{0}")]
    NotFound(Box<Status>),
    /// The event already exists: given up quietly.
    #[error("{0}")]
    AlreadyExists(Box<Status>),
    /// Any other answer from the server, or a request that cannot be built: given up.
    #[error("{0}")]
    Rejected(Box<Status>),
    /// The server could not be reached or answered nonsense: retried after a sleep.
    #[error("{0}")]
    Transport(BoxError),
}

impl SinkError {
    /// Classifies a failure Status from the server: code 404 is `NotFound`, reason
    /// `AlreadyExists` is `AlreadyExists`, anything else `Rejected`.
    pub fn from_status(status: Status) -> SinkError {
        if status.code == 404 {
            SinkError::NotFound(Box::new(status))
        } else if status.reason == StatusReason::AlreadyExists {
            SinkError::AlreadyExists(Box::new(status))
        } else {
            SinkError::Rejected(Box::new(status))
        }
    }

    /// The server's Status, unless this is a transport error.
    pub fn status(&self) -> Option<&Status> {
        match self {
            SinkError::NotFound(s) | SinkError::AlreadyExists(s) | SinkError::Rejected(s) => {
                Some(s)
            }
            SinkError::Transport(_) => None,
        }
    }
}

/// A splitmix64 generator: enough to spread first retries, and reproducible from a seed.
#[derive(Debug, Clone)]
pub(crate) struct Jitter(u64);

impl Jitter {
    pub(crate) fn new(seed: u64) -> Jitter {
        Jitter(seed)
    }

    /// A fraction in `[0, 1)`.
    pub(crate) fn next_fraction(&mut self) -> f64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        // The top 53 bits, scaled: exactly representable, strictly below one.
        (z >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Writes correlated events to one sink with client-go's retry rules.
#[derive(Debug)]
pub(crate) struct SinkWriter {
    pub(crate) sleep_duration: Duration,
    pub(crate) cancel: CancellationToken,
    pub(crate) jitter: Jitter,
}

impl SinkWriter {
    /// Correlates `event` and writes it, retrying as the module documentation says.
    pub(crate) async fn record_to_sink<S: EventSink>(
        &mut self,
        sink: &S,
        event: Event,
        correlator: &mut EventCorrelator,
    ) {
        let result = correlator.event_correlate(event);
        if result.skip {
            tracing::debug!(
                event = %result.event.metadata.name,
                object = %result.event.involved_object.name,
                reason = %result.event.reason,
                "Event skipped by the spam filter"
            );
            return;
        }
        let (mut event, patch) = (result.event, result.patch);
        let mut tries = 0;
        loop {
            if record_event(sink, &mut event, patch.as_ref(), correlator).await {
                return;
            }
            tries += 1;
            if tries >= MAX_TRIES_PER_EVENT {
                tracing::error!(
                    namespace = %event.metadata.namespace,
                    event = %event.metadata.name,
                    reason = %event.reason,
                    "Unable to write event (retry limit exceeded!)"
                );
                return;
            }
            let delay = if tries == 1 {
                self.sleep_duration.mul_f64(self.jitter.next_fraction())
            } else {
                self.sleep_duration
            };
            tokio::select! {
                biased;
                () = self.cancel.cancelled() => {
                    tracing::error!(
                        namespace = %event.metadata.namespace,
                        event = %event.metadata.name,
                        "Unable to write event (broadcaster is shut down)"
                    );
                    return;
                }
                () = tokio::time::sleep(delay) => {}
            }
        }
    }
}

/// One try at writing `event`: true when it is written or given up, false to retry.
async fn record_event<S: EventSink>(
    sink: &S,
    event: &mut Event,
    patch: Option<&Value>,
    correlator: &mut EventCorrelator,
) -> bool {
    let result = if event.count > 1 {
        // An event that arrives already counted has no patch from the correlator; the count
        // patch of itself is what client-go's placeholders would give.
        let computed;
        let patch = match patch {
            Some(patch) => patch,
            None => {
                computed = count_patch(event);
                &computed
            }
        };
        match sink.patch(event, patch).await {
            // The stored event is gone (events expire): create it again.
            Err(SinkError::NotFound(_)) => create(sink, event).await,
            other => other,
        }
    } else {
        create(sink, event).await
    };

    let err = match result {
        Ok(written) => {
            correlator.update_state(&written);
            return true;
        }
        Err(err) => err,
    };
    let (namespace, name) = (&event.metadata.namespace, &event.metadata.name);
    match &err {
        SinkError::Transport(_) => {
            tracing::warn!(%namespace, event = %name, error = %err,
                "Unable to write event (may retry after sleeping)");
            return false;
        }
        SinkError::AlreadyExists(_) => {
            tracing::debug!(%namespace, event = %name, error = %err,
                "Server rejected event (will not retry!)");
        }
        SinkError::NotFound(status) | SinkError::Rejected(status)
            if namespace_terminating(status) =>
        {
            tracing::debug!(%namespace, event = %name, error = %err,
                "Server rejected event (will not retry!)");
        }
        SinkError::NotFound(_) | SinkError::Rejected(_) => {
            tracing::error!(%namespace, event = %name, error = %err,
                "Server rejected event (will not retry!)");
        }
    }
    true
}

async fn create<S: EventSink>(sink: &S, event: &mut Event) -> Result<Event, SinkError> {
    // A create must not carry a resourceVersion.
    event.metadata.resource_version.clear();
    sink.create(event).await
}

fn namespace_terminating(status: &Status) -> bool {
    status.details.as_ref().is_some_and(|d| {
        d.causes
            .iter()
            .any(|c| c.reason == NAMESPACE_TERMINATING_CAUSE)
    })
}

#[cfg(test)]
#[path = "sink_tests.rs"]
mod tests;
