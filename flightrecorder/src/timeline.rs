//! From recorded entries to journeys: which watch event put which key on the queue, how long
//! it waited, which worker reconciled it, what that reconcile wrote, and why it backed off.
//!
//! The links come from the journey spans: a queue `add` made inside a `handler` span was
//! caused by the change that handler was told of, and so by the `watch` event (or, for the
//! objects of a list, the `listed` event) with the same resource, key and resourceVersion; the next `get` of the key hands every change added
//! since the last one to one reconcile (several changes before one get: they coalesced); a
//! `reconcile` span opened after that get is the reconcile; the `http` spans inside it are
//! its requests. Both views (the Chrome trace and the HTML page) draw this one model.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use clientgo_journey::{AddOutcome, Stage};
use serde::Serialize;

use crate::record::Entry;

/// What happened at one step of a key's journey.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum StepKind {
    /// A watch event received by a reflector.
    Watch {
        /// The object's type.
        resource: String,
        /// `ADDED`, `MODIFIED`, `DELETED`.
        event_type: String,
        /// The object's key (a dependent's may differ from the queue key).
        object_key: String,
        /// The object's resourceVersion.
        rv: String,
    },
    /// An object of a list (LIST pages or a streaming list's initial events) as it replaced
    /// a reflector's cache: where a key present at startup (or after a relist) came from.
    Listed {
        /// The object's type.
        resource: String,
        /// `LIST` or `watch-list`.
        via: String,
        /// The object's key (a dependent's may differ from the queue key).
        object_key: String,
        /// The object's resourceVersion.
        rv: String,
    },
    /// The key added to the queue.
    Add {
        /// `new`, `coalesced` (it was already waiting) or `deferred` (being processed).
        outcome: String,
    },
    /// An add after a delay.
    AddAfter {
        /// The delay.
        delay_us: u64,
    },
    /// A retry after a backoff.
    Backoff {
        /// The backoff chosen.
        delay_us: u64,
        /// The key's failures so far.
        failures: u64,
    },
    /// A worker took the key.
    Get {
        /// Since the first add not yet handed out.
        waited_us: u64,
        /// Keys left in line.
        depth: u64,
    },
    /// The reconcile.
    Reconcile {
        /// The worker.
        worker: String,
        /// `ok`, `error`, `panic`, or empty when it had not ended.
        outcome: String,
    },
    /// A request (inside a reconcile: what it read or wrote).
    Request {
        /// The HTTP method.
        method: String,
        /// The resource.
        resource: String,
        /// `namespace/name`, or the path.
        target: String,
        /// The status code; 0 when none came.
        status: u64,
    },
    /// The hold ended.
    Done {
        /// `done`, `forget`, `retry`, `abandoned`.
        outcome: String,
    },
    /// A leader election transition.
    Leader {
        /// `acquired`, `lost`, `released`, `observed`.
        transition: String,
        /// Who.
        identity: String,
    },
}

impl StepKind {
    /// The step's short name: `watch`, `listed`, `add`, `add_after`, `backoff`, `get`,
    /// `reconcile`, `request`, `done`, `leader`.
    pub fn name(&self) -> &'static str {
        match self {
            StepKind::Watch { .. } => "watch",
            StepKind::Listed { .. } => "listed",
            StepKind::Add { .. } => "add",
            StepKind::AddAfter { .. } => "add_after",
            StepKind::Backoff { .. } => "backoff",
            StepKind::Get { .. } => "get",
            StepKind::Reconcile { .. } => "reconcile",
            StepKind::Request { .. } => "request",
            StepKind::Done { .. } => "done",
            StepKind::Leader { .. } => "leader",
        }
    }

    /// A one-line description.
    pub fn label(&self) -> String {
        match self {
            StepKind::Watch {
                resource,
                event_type,
                object_key,
                rv,
            } => format!("watch {event_type} {resource} {object_key} rv={rv}"),
            StepKind::Listed {
                resource,
                via,
                object_key,
                rv,
            } => format!("listed ({via}) {resource} {object_key} rv={rv}"),
            StepKind::Add { outcome } => format!("add ({outcome})"),
            StepKind::AddAfter { delay_us } => format!("add after {}", fmt_us(*delay_us)),
            StepKind::Backoff { delay_us, failures } => {
                format!("backoff {} (failure {failures})", fmt_us(*delay_us))
            }
            StepKind::Get { waited_us, depth } => {
                format!(
                    "get after waiting {} ({depth} left in line)",
                    fmt_us(*waited_us)
                )
            }
            StepKind::Reconcile { worker, outcome } => {
                format!("reconcile on {worker}: {outcome}")
            }
            StepKind::Request {
                method,
                resource,
                target,
                status,
            } => format!("{method} {resource} {target} → {status}"),
            StepKind::Done { outcome } => format!("done ({outcome})"),
            StepKind::Leader {
                transition,
                identity,
            } => format!("leader {transition}: {identity}"),
        }
    }
}

/// A duration in microseconds, for people.
pub(crate) fn fmt_us(us: u64) -> String {
    if us >= 1_000_000 {
        format!("{:.2} s", us as f64 / 1e6)
    } else if us >= 1_000 {
        format!("{:.1} ms", us as f64 / 1e3)
    } else {
        format!("{us} µs")
    }
}

/// One step of a journey.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// When, since the recorder started.
    #[serde(rename = "at_us", serialize_with = "ser_us")]
    pub at: Duration,
    /// How long (reconciles and requests).
    #[serde(rename = "dur_us", serialize_with = "ser_opt_us")]
    pub duration: Option<Duration>,
    /// What.
    #[serde(flatten)]
    pub kind: StepKind,
    /// The recorded entry's id.
    pub entry: u64,
}

fn ser_us<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(micros(*d))
}

fn ser_opt_us<S: serde::Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
    match d {
        Some(d) => s.serialize_u64(micros(*d)),
        None => s.serialize_none(),
    }
}

pub(crate) fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// One key's journey through one queue.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Journey {
    /// The queue.
    pub queue: String,
    /// The key.
    pub key: String,
    /// Its steps, in time order.
    pub steps: Vec<Step>,
    /// Adds that coalesced into a waiting key.
    pub coalesced: usize,
    /// Backoffs.
    pub backoffs: usize,
}

/// A reconcile on a worker's lane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Slice {
    /// The journey (index in [`Timeline::journeys`]).
    pub journey: usize,
    /// The key.
    pub key: String,
    /// Start.
    #[serde(rename = "at_us", serialize_with = "ser_us")]
    pub at: Duration,
    /// Length.
    #[serde(rename = "dur_us", serialize_with = "ser_us")]
    pub duration: Duration,
    /// `ok`, `error`, `panic`, or empty.
    pub outcome: String,
    /// Its requests.
    pub requests: Vec<Step>,
    /// The recorded entry's id.
    pub entry: u64,
}

/// A worker and its reconciles.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WorkerLane {
    /// The worker's name.
    pub name: String,
    /// Its reconciles, in time order.
    pub slices: Vec<Slice>,
}

/// An arrow from a watch event (or a listed object) to the reconcile it caused.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Flow {
    /// The watch event's entry id.
    pub from_entry: u64,
    /// The journey it joined.
    pub journey: usize,
    /// The watch event's time.
    #[serde(rename = "from_us", serialize_with = "ser_us")]
    pub from: Duration,
    /// The worker lane of the reconcile.
    pub worker: usize,
    /// The reconcile's start.
    #[serde(rename = "to_us", serialize_with = "ser_us")]
    pub to: Duration,
}

/// Everything the views draw.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timeline {
    /// The end of the recording.
    #[serde(rename = "end_us", serialize_with = "ser_us")]
    pub end: Duration,
    /// One lane per worker.
    pub workers: Vec<WorkerLane>,
    /// One journey per queue and key, in order of first appearance.
    pub journeys: Vec<Journey>,
    /// Queue depth over time, per queue: (time in µs, depth).
    pub depth: Vec<(String, Vec<(u64, u64)>)>,
    /// Watch events to the reconciles they caused.
    pub flows: Vec<Flow>,
    /// Watch events and listed objects that put no key on a queue.
    pub other_watches: Vec<Step>,
    /// Requests outside reconciles (lists, watches, leases) and leader election.
    pub client: Vec<Step>,
}

fn text(entry: &Entry, name: &str) -> String {
    entry
        .fields
        .get(name)
        .map(|v| v.to_string())
        .unwrap_or_default()
}

fn step(entry: &Entry, kind: StepKind) -> Step {
    Step {
        at: entry.at,
        duration: entry.duration,
        kind,
        entry: entry.id,
    }
}

fn request(entry: &Entry) -> Step {
    let name = text(entry, "k8s.name");
    let namespace = text(entry, "k8s.namespace");
    let target = match (namespace.is_empty(), name.is_empty()) {
        (_, true) => text(entry, "url.path"),
        (true, false) => name,
        (false, false) => format!("{namespace}/{name}"),
    };
    step(
        entry,
        StepKind::Request {
            method: text(entry, "http.request.method"),
            resource: text(entry, "k8s.resource"),
            target,
            status: entry.fields.u64("http.response.status_code").unwrap_or(0),
        },
    )
}

/// Per journey: what the builder tracks between events.
#[derive(Default)]
struct Pending {
    /// The first add not yet handed out.
    first_add: Option<Duration>,
    /// Watch events added since the last get: (entry id, time).
    causes: Vec<(u64, Duration)>,
    /// The causes handed out by the last get, waiting for its reconcile.
    held: Vec<(u64, Duration)>,
}

impl Timeline {
    /// Builds the timeline of `entries` (in id order), recorded until `end`.
    pub fn build(entries: &[Entry], end: Duration) -> Timeline {
        let mut timeline = Timeline {
            end,
            ..Timeline::default()
        };
        let by_id: HashMap<u64, &Entry> = entries.iter().map(|e| (e.id, e)).collect();
        let mut children: HashMap<u64, Vec<&Entry>> = HashMap::new();
        for entry in entries {
            if let Some(parent) = entry.parent {
                children.entry(parent).or_default().push(entry);
            }
        }
        let mut journey_of: HashMap<(String, String), usize> = HashMap::new();
        let mut pending: Vec<Pending> = Vec::new();
        let mut workers: HashMap<String, usize> = HashMap::new();
        let mut depth: HashMap<String, usize> = HashMap::new();
        // (resource, key, rv) -> the latest watch event's (or listed object's) entry.
        let mut watches: HashMap<(String, String, String), &Entry> = HashMap::new();
        let mut linked: HashSet<u64> = HashSet::new();

        let mut journey = |timeline: &mut Timeline, pending: &mut Vec<Pending>, entry: &Entry| {
            let queue = text(entry, "queue");
            let key = text(entry, "key");
            *journey_of
                .entry((queue.clone(), key.clone()))
                .or_insert_with(|| {
                    timeline.journeys.push(Journey {
                        queue,
                        key,
                        ..Journey::default()
                    });
                    pending.push(Pending::default());
                    timeline.journeys.len() - 1
                })
        };
        let mut record_depth = |timeline: &mut Timeline, entry: &Entry| {
            let Some(d) = entry.fields.u64("depth") else {
                return;
            };
            let queue = text(entry, "queue");
            let index = *depth.entry(queue.clone()).or_insert_with(|| {
                timeline.depth.push((queue, Vec::new()));
                timeline.depth.len() - 1
            });
            timeline.depth[index].1.push((micros(entry.at), d));
        };

        for entry in entries {
            match Stage::from_name(&entry.stage) {
                Some(Stage::Watch | Stage::Listed) => {
                    let id = (
                        text(entry, "resource"),
                        text(entry, "key"),
                        text(entry, "rv"),
                    );
                    watches.insert(id, entry);
                }
                Some(Stage::Add) => {
                    record_depth(&mut timeline, entry);
                    let j = journey(&mut timeline, &mut pending, entry);
                    let outcome = text(entry, "outcome");
                    let cause = entry
                        .parent
                        .and_then(|parent| by_id.get(&parent))
                        .filter(|handler| &*handler.stage == Stage::Handler.name())
                        .and_then(|handler| {
                            let id = (
                                text(handler, "resource"),
                                text(handler, "key"),
                                text(handler, "rv"),
                            );
                            watches.get(&id).copied()
                        });
                    let journey = &mut timeline.journeys[j];
                    if let Some(watch) = cause {
                        if linked.insert(watch.id) {
                            journey.steps.push(watch_step(watch));
                        }
                        pending[j].causes.push((watch.id, watch.at));
                    }
                    if outcome == AddOutcome::Coalesced.name() {
                        journey.coalesced += 1;
                    }
                    if outcome != AddOutcome::Deferred.name() && pending[j].first_add.is_none() {
                        pending[j].first_add = Some(entry.at);
                    }
                    journey.steps.push(step(entry, StepKind::Add { outcome }));
                }
                Some(Stage::AddAfter | Stage::Backoff) => {
                    let j = journey(&mut timeline, &mut pending, entry);
                    let delay_us = entry.fields.u64("delay_us").unwrap_or(0);
                    let journey = &mut timeline.journeys[j];
                    let kind = if &*entry.stage == Stage::Backoff.name() {
                        journey.backoffs += 1;
                        StepKind::Backoff {
                            delay_us,
                            failures: entry.fields.u64("failures").unwrap_or(0),
                        }
                    } else {
                        StepKind::AddAfter { delay_us }
                    };
                    journey.steps.push(step(entry, kind));
                }
                Some(Stage::Get) => {
                    record_depth(&mut timeline, entry);
                    let j = journey(&mut timeline, &mut pending, entry);
                    let waited = pending[j]
                        .first_add
                        .take()
                        .map_or(0, |added| micros(entry.at.saturating_sub(added)));
                    pending[j].held = std::mem::take(&mut pending[j].causes);
                    timeline.journeys[j].steps.push(step(
                        entry,
                        StepKind::Get {
                            waited_us: waited,
                            depth: entry.fields.u64("depth").unwrap_or(0),
                        },
                    ));
                }
                Some(Stage::Done) => {
                    let j = journey(&mut timeline, &mut pending, entry);
                    let outcome = text(entry, "outcome");
                    timeline.journeys[j]
                        .steps
                        .push(step(entry, StepKind::Done { outcome }));
                }
                Some(Stage::Reconcile) => {
                    let j = journey(&mut timeline, &mut pending, entry);
                    let worker = text(entry, "worker");
                    let lane = *workers.entry(worker.clone()).or_insert_with(|| {
                        timeline.workers.push(WorkerLane {
                            name: worker.clone(),
                            slices: Vec::new(),
                        });
                        timeline.workers.len() - 1
                    });
                    let outcome = text(entry, "outcome");
                    let requests: Vec<Step> = children
                        .get(&entry.id)
                        .into_iter()
                        .flatten()
                        .filter(|child| &*child.stage == Stage::Http.name())
                        .map(|child| request(child))
                        .collect();
                    for (from_entry, from) in std::mem::take(&mut pending[j].held) {
                        timeline.flows.push(Flow {
                            from_entry,
                            journey: j,
                            from,
                            worker: lane,
                            to: entry.at,
                        });
                    }
                    let journey = &mut timeline.journeys[j];
                    journey.steps.push(step(
                        entry,
                        StepKind::Reconcile {
                            worker,
                            outcome: outcome.clone(),
                        },
                    ));
                    journey.steps.extend(requests.iter().cloned());
                    timeline.workers[lane].slices.push(Slice {
                        journey: j,
                        key: journey.key.clone(),
                        at: entry.at,
                        duration: entry.duration.unwrap_or_default(),
                        outcome,
                        requests,
                        entry: entry.id,
                    });
                }
                Some(Stage::Http) => {
                    let in_reconcile = entry
                        .parent
                        .and_then(|parent| by_id.get(&parent))
                        .is_some_and(|parent| &*parent.stage == Stage::Reconcile.name());
                    if !in_reconcile {
                        timeline.client.push(request(entry));
                    }
                }
                Some(Stage::Leader) => timeline.client.push(step(
                    entry,
                    StepKind::Leader {
                        transition: text(entry, "transition"),
                        identity: text(entry, "identity"),
                    },
                )),
                // What an applied change and a handler call caused is read from the `add`s
                // made inside them; other words are not the vocabulary's.
                Some(Stage::Applied | Stage::Handler) | None => {}
            }
        }
        for journey in &mut timeline.journeys {
            // Ids are taken as things happen (the queue's events under its lock): their order
            // is the order of cause and effect, which clock readings on two threads may not be.
            journey.steps.sort_by_key(|s| s.entry);
        }
        timeline.other_watches = entries
            .iter()
            .filter(|e| {
                matches!(
                    Stage::from_name(&e.stage),
                    Some(Stage::Watch | Stage::Listed)
                ) && !linked.contains(&e.id)
            })
            .map(watch_step)
            .collect();
        timeline
    }

    /// The journey of `key` (in any queue), if it has one.
    pub fn journey(&self, key: &str) -> Option<&Journey> {
        self.journeys.iter().find(|j| j.key == key)
    }
}

/// A `watch` or `listed` entry's step.
fn watch_step(entry: &Entry) -> Step {
    let (resource, object_key, rv) = (
        text(entry, "resource"),
        text(entry, "key"),
        text(entry, "rv"),
    );
    let kind = if &*entry.stage == "listed" {
        StepKind::Listed {
            resource,
            via: text(entry, "via"),
            object_key,
            rv,
        }
    } else {
        StepKind::Watch {
            resource,
            event_type: text(entry, "type"),
            object_key,
            rv,
        }
    };
    step(entry, kind)
}
