//! The timeline as Chrome Trace Event Format JSON, which Perfetto (ui.perfetto.dev) and
//! `chrome://tracing` open.
//!
//! Layout: process 1 holds one thread per worker, its reconciles as complete (`X`) events
//! with their requests nested inside; process 2 one thread per key, with the key's watch
//! events and listed objects (category `listed`), adds (coalesced ones named so), time
//! waiting in line, backoffs, gets and outcomes; process 3 the queue depths as counters;
//! process 4 the requests outside reconciles, leader election, and watch events and listed
//! objects that enqueued nothing. Flow events (`s` then `f`, bound to the enclosing slice)
//! draw an arrow from each watch event or listed object to the reconcile it caused. Times are microseconds since the recorder started.

use std::time::Duration;

use serde_json::{Value as Json, json};

use crate::timeline::{Step, StepKind, Timeline};

const WORKERS: u64 = 1;
const KEYS: u64 = 2;
const QUEUES: u64 = 3;
const CLIENT: u64 = 4;

fn ts(d: Duration) -> f64 {
    d.as_nanos() as f64 / 1000.0
}

fn meta(events: &mut Vec<Json>, pid: u64, tid: Option<u64>, name: &str) {
    match tid {
        None => events.push(json!({
            "ph": "M", "name": "process_name", "pid": pid, "tid": 0, "ts": 0,
            "args": {"name": name},
        })),
        Some(tid) => {
            events.push(json!({
                "ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "ts": 0,
                "args": {"name": name},
            }));
            events.push(json!({
                "ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "ts": 0,
                "args": {"sort_index": tid},
            }));
        }
    }
}

fn slice(pid: u64, tid: u64, cat: &str, name: String, at: Duration, dur: Duration) -> Json {
    json!({
        "ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid,
        "ts": ts(at), "dur": ts(dur),
    })
}

fn instant(pid: u64, tid: u64, cat: &str, name: String, at: Duration) -> Json {
    json!({
        "ph": "i", "s": "t", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts(at),
    })
}

/// A watch event's (or a listed object's) slice: a microsecond, so that a flow can start
/// from it.
fn watch_slice(pid: u64, tid: u64, step: &Step) -> Json {
    let mut event = slice(
        pid,
        tid,
        step.kind.name(),
        step.kind.label(),
        step.at,
        Duration::from_micros(1),
    );
    event["args"] = json!({"entry": step.entry});
    event
}

/// Writes the trace.
pub(crate) fn write(timeline: &Timeline) -> String {
    let mut events = Vec::new();
    meta(&mut events, WORKERS, None, "workers");
    meta(&mut events, KEYS, None, "keys");
    meta(&mut events, QUEUES, None, "queues");
    meta(&mut events, CLIENT, None, "client");

    for (lane, worker) in timeline.workers.iter().enumerate() {
        let tid = lane as u64 + 1;
        meta(
            &mut events,
            WORKERS,
            Some(tid),
            &format!("worker {}", worker.name),
        );
        for reconcile in &worker.slices {
            let mut event = slice(
                WORKERS,
                tid,
                "reconcile",
                format!("reconcile {}", reconcile.key),
                reconcile.at,
                reconcile.duration,
            );
            event["args"] = json!({
                "key": reconcile.key,
                "outcome": reconcile.outcome,
                "requests": reconcile.requests.len(),
            });
            events.push(event);
            for request in &reconcile.requests {
                events.push(slice(
                    WORKERS,
                    tid,
                    "http",
                    request.kind.label(),
                    request.at,
                    request.duration.unwrap_or_default(),
                ));
            }
        }
    }

    for (index, journey) in timeline.journeys.iter().enumerate() {
        let tid = index as u64 + 1;
        let name = if journey.queue.is_empty() {
            journey.key.clone()
        } else {
            format!("{}: {}", journey.queue, journey.key)
        };
        meta(&mut events, KEYS, Some(tid), &name);
        let mut waiting_since = None;
        for step in &journey.steps {
            match &step.kind {
                StepKind::Watch { .. } | StepKind::Listed { .. } => {
                    events.push(watch_slice(KEYS, tid, step))
                }
                StepKind::Add { outcome } => {
                    if outcome != "deferred" && waiting_since.is_none() {
                        waiting_since = Some(step.at);
                    }
                    events.push(instant(KEYS, tid, "queue", step.kind.label(), step.at));
                }
                StepKind::Get { .. } => {
                    if let Some(since) = waiting_since.take() {
                        events.push(slice(
                            KEYS,
                            tid,
                            "queue",
                            "waiting".into(),
                            since,
                            step.at.saturating_sub(since),
                        ));
                    }
                    events.push(instant(KEYS, tid, "queue", step.kind.label(), step.at));
                }
                StepKind::Backoff { delay_us, .. } | StepKind::AddAfter { delay_us } => {
                    events.push(slice(
                        KEYS,
                        tid,
                        "backoff",
                        step.kind.label(),
                        step.at,
                        Duration::from_micros(*delay_us),
                    ));
                }
                StepKind::Reconcile { .. } => events.push(slice(
                    KEYS,
                    tid,
                    "reconcile",
                    step.kind.label(),
                    step.at,
                    step.duration.unwrap_or_default(),
                )),
                StepKind::Done { .. } | StepKind::Leader { .. } => {
                    events.push(instant(KEYS, tid, "queue", step.kind.label(), step.at))
                }
                StepKind::Request { .. } => {}
            }
        }
    }

    for (flow_id, flow) in timeline.flows.iter().enumerate() {
        let id = flow_id as u64 + 1;
        events.push(json!({
            "ph": "s", "id": id, "cat": "journey", "name": "caused",
            "pid": KEYS, "tid": flow.journey as u64 + 1, "ts": ts(flow.from),
        }));
        events.push(json!({
            "ph": "f", "bp": "e", "id": id, "cat": "journey", "name": "caused",
            "pid": WORKERS, "tid": flow.worker as u64 + 1, "ts": ts(flow.to),
        }));
    }

    for (queue, points) in &timeline.depth {
        let name = if queue.is_empty() {
            "depth".to_owned()
        } else {
            format!("depth {queue}")
        };
        for &(at_us, depth) in points {
            events.push(json!({
                "ph": "C", "name": name, "pid": QUEUES, "tid": 0, "ts": at_us,
                "args": {"depth": depth},
            }));
        }
    }

    meta(&mut events, CLIENT, Some(1), "requests");
    meta(&mut events, CLIENT, Some(2), "leader election");
    meta(
        &mut events,
        CLIENT,
        Some(3),
        "watch events and listed objects that enqueued nothing",
    );
    for step in &timeline.client {
        match step.kind {
            StepKind::Request { .. } => events.push(slice(
                CLIENT,
                1,
                "http",
                step.kind.label(),
                step.at,
                step.duration.unwrap_or_default(),
            )),
            _ => events.push(instant(CLIENT, 2, "leader", step.kind.label(), step.at)),
        }
    }
    for step in &timeline.other_watches {
        events.push(watch_slice(CLIENT, 3, step));
    }

    json!({
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"producer": "clientgo-flightrecorder"},
    })
    .to_string()
}
