//! The queues as the recorder last saw them: depth, keys in flight (with their worker and
//! age) and keys waiting (in line, or for their backoff, with their failure count).
//!
//! This is what a controller's `/debug/queue` shows. It is rebuilt from the journey events
//! as they arrive, not read from the queue (the queue keeps no add times, worker names or
//! failure counts of its own, and its lock is not for debug pages): so it knows the keys
//! added since the recorder was installed, and a key's failures as its rate limiter last
//! reported them. client-go has no such view; its metrics give only the depth and ages.

use clientgo_journey::{AddOutcome, DoneOutcome, Stage};
use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use serde::Serialize;

use crate::record::{Entry, Fields};

/// Keys tracked per queue, at most: beyond it new keys are not shown (and counted).
const MAX_KEYS: usize = 100_000;

#[derive(Debug, Clone, Copy, PartialEq)]
enum State {
    /// In line since the time in `since`.
    Waiting,
    /// Handed to a worker; `dirty` when added again meanwhile.
    InFlight { dirty: bool },
    /// Waiting for a delayed add (a backoff, an `add_after`) due at this time.
    Delayed { ready: Duration },
}

#[derive(Debug)]
struct Key {
    state: State,
    since: Duration,
    worker: Option<Box<str>>,
    failures: u64,
    /// A retry's ready time, applied when the hold ends.
    retry_at: Option<Duration>,
}

#[derive(Debug, Default)]
struct Queue {
    depth: u64,
    keys: HashMap<Box<str>, Key>,
    untracked: u64,
}

/// The live view, updated under the recorder's lock.
#[derive(Debug, Default)]
pub(crate) struct Live {
    queues: BTreeMap<Box<str>, Queue>,
}

impl Live {
    /// A journey span opened: a reconcile names the worker holding its key.
    pub(crate) fn span_opened(&mut self, stage: &str, fields: &Fields) {
        if stage != Stage::Reconcile.name() {
            return;
        }
        let (Some(queue), Some(key)) = (fields.str("queue"), fields.str("key")) else {
            return;
        };
        let worker = fields.get("worker").map(|w| w.to_string().into_boxed_str());
        if let Some(key) = self
            .queues
            .get_mut(queue)
            .and_then(|queue| queue.keys.get_mut(key))
        {
            key.worker = worker;
        }
    }

    /// A journey event.
    pub(crate) fn event(&mut self, entry: &Entry) {
        let fields = &entry.fields;
        let (Some(name), Some(key)) = (fields.str("queue"), fields.str("key")) else {
            return;
        };
        let queue = match self.queues.get_mut(name) {
            Some(queue) => queue,
            None => self.queues.entry(name.into()).or_default(),
        };
        if let Some(depth) = fields.u64("depth") {
            queue.depth = depth;
        }
        let now = entry.at;
        let tracked = queue.keys.contains_key(key);
        if !tracked && queue.keys.len() >= MAX_KEYS {
            queue.untracked += 1;
            return;
        }
        let slot = || Key {
            state: State::Waiting,
            since: now,
            worker: None,
            failures: 0,
            retry_at: None,
        };
        match Stage::from_name(&entry.stage) {
            Some(Stage::Add) => {
                let key = queue.keys.entry(key.into()).or_insert_with(slot);
                let outcome = fields.str("outcome").and_then(AddOutcome::from_name);
                match (outcome, key.state) {
                    (Some(AddOutcome::Deferred), State::InFlight { .. }) => {
                        key.state = State::InFlight { dirty: true }
                    }
                    (_, State::Delayed { .. }) | (Some(AddOutcome::New), _) => {
                        key.state = State::Waiting;
                        key.since = now;
                    }
                    _ => {}
                }
            }
            Some(Stage::AddAfter | Stage::Backoff) => {
                let delay = Duration::from_micros(fields.u64("delay_us").unwrap_or(0));
                let key = queue.keys.entry(key.into()).or_insert_with(slot);
                if let Some(failures) = fields.u64("failures") {
                    key.failures = failures;
                }
                match key.state {
                    State::InFlight { .. } => key.retry_at = Some(now + delay),
                    State::Delayed { ready } if ready <= now + delay => {}
                    State::Waiting if tracked => {}
                    _ => {
                        key.state = State::Delayed { ready: now + delay };
                        key.since = now;
                    }
                }
            }
            Some(Stage::Get) => {
                let key = queue.keys.entry(key.into()).or_insert_with(slot);
                key.state = State::InFlight { dirty: false };
                key.since = now;
                key.worker = None;
            }
            Some(Stage::Done) => {
                let Some(held) = queue.keys.get_mut(key) else {
                    return;
                };
                let outcome = fields.str("outcome").and_then(DoneOutcome::from_name);
                if let Some(DoneOutcome::Forget | DoneOutcome::RequeueAfter) = outcome {
                    held.failures = 0;
                }
                held.worker = None;
                match (held.state, held.retry_at.take()) {
                    (State::InFlight { dirty: true }, _) => {
                        held.state = State::Waiting;
                        held.since = now;
                    }
                    (_, Some(ready)) => {
                        held.state = State::Delayed { ready };
                        held.since = now;
                    }
                    _ => {
                        queue.keys.remove(key);
                    }
                }
            }
            // The queue's view needs its own events only.
            Some(
                Stage::Watch
                | Stage::Listed
                | Stage::Applied
                | Stage::Handler
                | Stage::Reconcile
                | Stage::Http
                | Stage::Leader,
            )
            | None => {}
        }
    }

    /// The view at `now`.
    pub(crate) fn view(&self, now: Duration) -> QueueView {
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let queues = self
            .queues
            .iter()
            .map(|(name, queue)| {
                let mut in_flight = Vec::new();
                let mut waiting = Vec::new();
                for (key, state) in &queue.keys {
                    let age_ms = ms(now.saturating_sub(state.since));
                    match state.state {
                        State::InFlight { dirty } => in_flight.push(InFlight {
                            key: key.to_string(),
                            worker: state.worker.as_ref().map(|w| w.to_string()),
                            age_ms,
                            added_again: dirty,
                        }),
                        State::Waiting => waiting.push(Waiting {
                            key: key.to_string(),
                            waited_ms: age_ms,
                            ready_in_ms: 0,
                            failures: state.failures,
                        }),
                        State::Delayed { ready } => waiting.push(Waiting {
                            key: key.to_string(),
                            waited_ms: age_ms,
                            ready_in_ms: ms(ready.saturating_sub(now)),
                            failures: state.failures,
                        }),
                    }
                }
                in_flight.sort_by(|a, b| b.age_ms.cmp(&a.age_ms).then(a.key.cmp(&b.key)));
                waiting.sort_by(|a, b| {
                    (a.ready_in_ms, std::cmp::Reverse(a.waited_ms), &a.key).cmp(&(
                        b.ready_in_ms,
                        std::cmp::Reverse(b.waited_ms),
                        &b.key,
                    ))
                });
                QueueState {
                    name: name.to_string(),
                    depth: queue.depth,
                    in_flight,
                    waiting,
                    untracked_keys: queue.untracked,
                }
            })
            .collect();
        QueueView { queues }
    }
}

/// Every queue the recorder has seen, as of now.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QueueView {
    /// One per queue name (an unnamed queue is `""`).
    pub queues: Vec<QueueState>,
}

/// One queue.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct QueueState {
    /// The queue's name.
    pub name: String,
    /// Keys in line, as the queue last reported.
    pub depth: u64,
    /// Keys held by workers, the longest-held first.
    pub in_flight: Vec<InFlight>,
    /// Keys waiting, in line (`ready_in_ms` 0) or for a delayed add, the soonest first.
    pub waiting: Vec<Waiting>,
    /// Keys not shown because the view was full.
    pub untracked_keys: u64,
}

/// A key held by a worker.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct InFlight {
    /// The key.
    pub key: String,
    /// The worker reconciling it, if its reconcile span says.
    pub worker: Option<String>,
    /// Since it was handed out.
    pub age_ms: u64,
    /// Added again while held: handed out again once done.
    pub added_again: bool,
}

/// A key waiting.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Waiting {
    /// The key.
    pub key: String,
    /// Since it started waiting.
    pub waited_ms: u64,
    /// Until its delayed add is due; 0 when in line.
    pub ready_in_ms: u64,
    /// Its failures, as its rate limiter last reported them.
    pub failures: u64,
}
