//! Fault injection: scripted failures a test can switch on through the server handle.
//!
//! Nothing in kube-apiserver does this on purpose; the faults reproduce what clients meet in
//! real clusters: API priority and fairness rejecting with 429 + `Retry-After`, 500/503/504
//! from overloaded or restarting servers, slow responses, connections cut in the middle of
//! a list body or a watch frame, corrupted watch frames, watches that go silent, watches
//! ended by an `ERROR` event (a watcher dropped as too old, an etcd error), and watch
//! streams ending all at once (a server restart). Request faults are matched by verb and
//! resource and consumed one request at a time; stream faults act on the watches open now.
//!
//! A matched delay ([`Faults::delay_next`]) holds a request after routing, before it is
//! recorded in the request log and handled: the log shows when the server handled it, and a
//! request its client gives up on during the delay is never handled (the connection closes
//! and the handler is dropped), as a write that never reached the server.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::broadcast;

use crate::errors::{self, ApiError};

/// Which requests a fault applies to. `None` matches anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestMatch {
    /// Verb: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: Option<String>,
    /// Resource plural, e.g. `configmaps`.
    pub resource: Option<String>,
    /// The object's name, for requests to one object (get, update, patch, delete, a watch
    /// of one name).
    pub name: Option<String>,
}

impl RequestMatch {
    /// Matches every request.
    pub fn any() -> RequestMatch {
        RequestMatch::default()
    }

    /// Matches one verb on one resource.
    pub fn new(verb: &str, resource: &str) -> RequestMatch {
        RequestMatch {
            verb: Some(verb.to_owned()),
            resource: Some(resource.to_owned()),
            name: None,
        }
    }

    /// Matches only requests to the object named `name`.
    pub fn named(mut self, name: &str) -> RequestMatch {
        self.name = Some(name.to_owned());
        self
    }

    fn matches(&self, verb: &str, resource: &str, name: Option<&str>) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
            && self.name.as_deref().is_none_or(|n| Some(n) == name)
    }
}

/// The failure answered instead of the real response.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InjectedError {
    /// 429 TooManyRequests with `Retry-After: <secs>`.
    TooManyRequests {
        /// Seconds in `Retry-After`.
        retry_after: u32,
    },
    /// 500 InternalError.
    InternalError,
    /// 503 ServiceUnavailable with `Retry-After`.
    ServiceUnavailable {
        /// Seconds in `Retry-After`.
        retry_after: u32,
    },
    /// 504 Timeout with `Retry-After`.
    GatewayTimeout {
        /// Seconds in `Retry-After`.
        retry_after: u32,
    },
    /// 410 Expired: the requested resourceVersion is too old (as after a compaction).
    Expired,
    /// A list (or get) response whose body stops in the middle, then the connection drops.
    CutBody,
}

impl InjectedError {
    /// The error response, for the status-code faults.
    pub fn to_api_error(self) -> Option<ApiError> {
        match self {
            InjectedError::TooManyRequests { retry_after } => {
                Some(errors::too_many_requests(retry_after))
            }
            InjectedError::InternalError => Some(errors::internal("injected fault")),
            InjectedError::ServiceUnavailable { retry_after } => {
                Some(errors::service_unavailable(Some(retry_after)))
            }
            InjectedError::GatewayTimeout { retry_after } => {
                Some(errors::gateway_timeout(Some(retry_after)))
            }
            InjectedError::Expired => Some(errors::expired(
                "injected fault: the requested resourceVersion is too old",
            )),
            InjectedError::CutBody => None,
        }
    }
}

/// A command to every open watch stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchFault {
    /// End the stream cleanly (as on a server-side timeout or restart).
    Close,
    /// Write half a frame, then drop the connection.
    CutMidFrame,
    /// Write one frame that is not valid JSON, then keep streaming.
    MalformedFrame,
    /// Send nothing more (no events, no bookmarks) but keep the connection open.
    Stall,
    /// Send one `ERROR` event with this error's status, then end the stream, as the server
    /// does after any `ERROR` event. [`InjectedError::CutBody`] has no status: the stream
    /// just ends.
    Error(InjectedError),
}

#[derive(Debug)]
struct Delay {
    matcher: RequestMatch,
    delay: Duration,
    remaining: usize,
}

#[derive(Debug)]
struct Rule {
    matcher: RequestMatch,
    error: InjectedError,
    remaining: usize,
}

/// The fault state of one server.
#[derive(Debug)]
pub struct Faults {
    rules: Mutex<Vec<Rule>>,
    latency: Mutex<Duration>,
    delays: Mutex<Vec<Delay>>,
    delayed: AtomicUsize,
    injected: AtomicUsize,
    watch_tx: broadcast::Sender<TargetedWatchFault>,
}

/// A watch fault and the resource (plural) whose watches it is for; `None`: every watch.
pub type TargetedWatchFault = (Option<String>, WatchFault);

impl Default for Faults {
    fn default() -> Faults {
        let (watch_tx, _) = broadcast::channel(64);
        Faults {
            rules: Mutex::new(Vec::new()),
            latency: Mutex::new(Duration::ZERO),
            delays: Mutex::new(Vec::new()),
            delayed: AtomicUsize::new(0),
            injected: AtomicUsize::new(0),
            watch_tx,
        }
    }
}

impl Faults {
    /// Answers the next `count` requests matching `matcher` with `error`.
    pub fn fail_next(&self, count: usize, matcher: RequestMatch, error: InjectedError) {
        self.rules.lock().push(Rule {
            matcher,
            error,
            remaining: count,
        });
    }

    /// Removes every pending request fault, delay and the added latency.
    pub fn clear(&self) {
        self.rules.lock().clear();
        self.delays.lock().clear();
        *self.latency.lock() = Duration::ZERO;
    }

    /// Holds the next `count` requests matching `matcher` for `delay` before they are
    /// recorded and handled (`usize::MAX`: until [`clear`](Faults::clear)).
    pub fn delay_next(&self, count: usize, matcher: RequestMatch, delay: Duration) {
        self.delays.lock().push(Delay {
            matcher,
            delay,
            remaining: count,
        });
    }

    /// Consumes and returns the delay for this request (to the object `name`, if one), if
    /// one matches.
    pub fn take_delay(&self, verb: &str, resource: &str, name: Option<&str>) -> Option<Duration> {
        let mut delays = self.delays.lock();
        let i = delays
            .iter()
            .position(|d| d.remaining > 0 && d.matcher.matches(verb, resource, name))?;
        let rule = &mut delays[i];
        rule.remaining -= 1;
        let delay = rule.delay;
        if rule.remaining == 0 {
            delays.remove(i);
        }
        self.delayed.fetch_add(1, Ordering::Relaxed);
        Some(delay)
    }

    /// How many requests were answered with an injected error so far (a fault test checks
    /// that its faults fired).
    pub fn injected(&self) -> usize {
        self.injected.load(Ordering::Relaxed)
    }

    /// How many requests a matched delay has held so far.
    pub fn delayed(&self) -> usize {
        self.delayed.load(Ordering::Relaxed)
    }

    /// Delays every request by `latency` before it is handled.
    pub fn set_latency(&self, latency: Duration) {
        *self.latency.lock() = latency;
    }

    /// The added latency.
    pub fn latency(&self) -> Duration {
        *self.latency.lock()
    }

    /// Consumes and returns the fault for this request (to the object `name`, if one), if
    /// one matches; counted in [`injected`](Faults::injected).
    pub fn take(&self, verb: &str, resource: &str, name: Option<&str>) -> Option<InjectedError> {
        let mut rules = self.rules.lock();
        let i = rules
            .iter()
            .position(|r| r.remaining > 0 && r.matcher.matches(verb, resource, name))?;
        self.injected.fetch_add(1, Ordering::Relaxed);
        let rule = &mut rules[i];
        rule.remaining -= 1;
        let error = rule.error;
        if rule.remaining == 0 {
            rules.remove(i);
        }
        Some(error)
    }

    /// Sends `fault` to every open watch; returns how many watches received it.
    pub fn watches(&self, fault: WatchFault) -> usize {
        self.watch_tx.send((None, fault)).unwrap_or(0)
    }

    /// Sends `fault` to the open watches of one resource (its plural, e.g. `leases`) only;
    /// returns how many watches of any resource received it (the others ignore it), so 0
    /// means that no watch was open at all.
    pub fn watches_of(&self, resource: &str, fault: WatchFault) -> usize {
        self.watch_tx
            .send((Some(resource.to_owned()), fault))
            .unwrap_or(0)
    }

    /// A receiver of watch faults, for one watch stream: it applies those whose resource is
    /// `None` or its own.
    pub fn subscribe_watch(&self) -> broadcast::Receiver<TargetedWatchFault> {
        self.watch_tx.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_consumed_in_order_and_matched() {
        let f = Faults::default();
        f.fail_next(
            2,
            RequestMatch::new("list", "pods"),
            InjectedError::InternalError,
        );
        assert_eq!(f.take("list", "configmaps", None), None);
        assert_eq!(
            f.take("list", "pods", None),
            Some(InjectedError::InternalError)
        );
        assert_eq!(
            f.take("list", "pods", None),
            Some(InjectedError::InternalError)
        );
        assert_eq!(f.take("list", "pods", None), None);
        assert_eq!(f.injected(), 2);
        // One object by name: the others of the resource go through.
        f.fail_next(
            1,
            RequestMatch::new("update", "leases").named("a"),
            InjectedError::InternalError,
        );
        assert_eq!(f.take("update", "leases", Some("b")), None);
        assert_eq!(f.take("update", "leases", None), None);
        assert_eq!(
            f.take("update", "leases", Some("a")),
            Some(InjectedError::InternalError)
        );
        assert_eq!(f.injected(), 3);
        let e = InjectedError::TooManyRequests { retry_after: 3 }
            .to_api_error()
            .unwrap();
        assert_eq!((e.code(), e.retry_after), (429, Some(3)));
        let e = InjectedError::Expired.to_api_error().unwrap();
        assert_eq!(e.code(), 410);
        assert_eq!(
            e.status.reason,
            clientgo_apimachinery::StatusReason::Expired
        );
        assert!(InjectedError::CutBody.to_api_error().is_none());
    }

    #[test]
    fn delays_are_consumed_matched_and_counted() {
        let f = Faults::default();
        let d = Duration::from_secs(3);
        f.delay_next(1, RequestMatch::new("update", "leases"), d);
        assert_eq!(f.take_delay("get", "leases", None), None);
        assert_eq!(f.take_delay("update", "leases", Some("x")), Some(d));
        assert_eq!(f.take_delay("update", "leases", None), None);
        f.delay_next(usize::MAX, RequestMatch::any(), d);
        assert_eq!(f.take_delay("list", "pods", None), Some(d));
        assert_eq!(f.delayed(), 2);
        f.clear();
        assert_eq!(f.take_delay("list", "pods", None), None);
    }

    /// Opens a watch of the default namespace's ConfigMaps from now, sends `fault` once the
    /// stream listens, and returns every frame the stream sent before it ended.
    async fn frames_after(fault: WatchFault) -> Vec<serde_json::Value> {
        let sim = crate::ApiServerSim::start(crate::SimConfig::default())
            .await
            .unwrap();
        let state = sim.state().clone();
        let info = state.registry.get("", "v1", "configmaps").unwrap();
        let opts = crate::verbs::list::ListOptions {
            watch: true,
            resource_version: Some(state.store.rev().to_string()),
            ..Default::default()
        };
        let render: crate::verbs::watch::Render = std::sync::Arc::new(|j: &[u8]| j.to_vec());
        let mut rx =
            crate::verbs::watch::watch(state.clone(), info, "default".into(), opts, render)
                .await
                .unwrap();
        let mut tries = 0;
        while state.faults.watches(fault) == 0 {
            tries += 1;
            assert!(tries < 1_000, "the watch never subscribed to faults");
            tokio::task::yield_now().await;
        }
        let mut frames = Vec::new();
        while let Some(chunk) = rx.recv().await {
            frames.push(serde_json::from_slice(&chunk.unwrap()).unwrap());
        }
        frames
    }

    #[tokio::test]
    async fn error_events_end_the_watch() {
        let frames = frames_after(WatchFault::Error(InjectedError::Expired)).await;
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_eq!(frames[0]["type"], "ERROR");
        assert_eq!(frames[0]["object"]["code"], 410);
        assert_eq!(frames[0]["object"]["reason"], "Expired");

        let frames = frames_after(WatchFault::Error(InjectedError::InternalError)).await;
        assert_eq!(frames.len(), 1, "{frames:?}");
        assert_eq!(frames[0]["object"]["code"], 500);

        let frames = frames_after(WatchFault::Error(InjectedError::CutBody)).await;
        assert!(frames.is_empty(), "no status to send: {frames:?}");
    }
}
