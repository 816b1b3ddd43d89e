//! Test doubles shared by the integration tests: an in-memory event sink that behaves like the
//! API server's `events` resource (client-go's `testEventSink` with `OnCreateFactory` and
//! `OnPatchFactory`), a typed Pod, and `validate_event`.

#![allow(dead_code)] // each test file uses its own subset

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use clientgo_apimachinery::{ObjectMeta, Resource, Status, StatusReason, impl_object};
use clientgo_record::{
    BroadcasterOptions, CorrelatorOptions, Event, EventSink, SinkError, TokioClock,
};
use parking_lot::Mutex;
use serde_json::Value;
use tokio::sync::mpsc;

/// A bound on every wait, in tokio's (paused) time: long enough for any retry schedule, and
/// reached at once when a test is stuck with no timer left to fire.
pub const WAIT: Duration = Duration::from_secs(24 * 3600);

/// A write the sink performed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Create,
    Patch,
}

type Failure = Box<dyn Fn(Op, &Event, u32) -> Option<SinkError> + Send + Sync>;

/// An in-memory `events` resource: creates store, patches apply a JSON merge patch to the
/// stored event, both report on a channel. `fail` decides, per operation, event and attempt
/// number (per message), whether to fail instead.
pub struct FakeSink {
    store: Mutex<HashMap<String, Event>>,
    attempts: Mutex<HashMap<String, u32>>,
    next_resource_version: Mutex<u64>,
    written: mpsc::UnboundedSender<(Op, Event)>,
    fail: Option<Failure>,
    entered: AtomicU32,
    /// Bumped on every write started and every attempt, for [`FakeSink::wait_until`].
    changes: tokio::sync::watch::Sender<u64>,
    /// Held by a test to stall the sink inside a write.
    pub gate: tokio::sync::Mutex<()>,
}

impl FakeSink {
    pub fn new() -> (Arc<FakeSink>, mpsc::UnboundedReceiver<(Op, Event)>) {
        FakeSink::failing(None)
    }

    pub fn failing(fail: Option<Failure>) -> (Arc<FakeSink>, mpsc::UnboundedReceiver<(Op, Event)>) {
        let (written, receiver) = mpsc::unbounded_channel();
        let sink = FakeSink {
            store: Mutex::default(),
            attempts: Mutex::default(),
            next_resource_version: Mutex::new(1),
            written,
            fail,
            entered: AtomicU32::new(0),
            changes: tokio::sync::watch::Sender::new(0),
            gate: tokio::sync::Mutex::new(()),
        };
        (Arc::new(sink), receiver)
    }

    /// Tries so far for events with this message.
    pub fn attempts(&self, message: &str) -> u32 {
        self.attempts.lock().get(message).copied().unwrap_or(0)
    }

    /// Waits, within [`WAIT`], until `condition` holds. Waits on the sink's changes (never
    /// spins), so tokio's paused clock can move on to the next timer meanwhile.
    pub async fn wait_until(&self, condition: impl Fn(&FakeSink) -> bool) {
        let mut changes = self.changes.subscribe();
        tokio::time::timeout(WAIT, async {
            while !condition(self) {
                if changes.changed().await.is_err() {
                    return;
                }
            }
        })
        .await
        .expect("timed out waiting for the sink");
    }

    /// Writes started, including those waiting at the gate.
    pub fn entered(&self) -> u32 {
        self.entered.load(Ordering::SeqCst)
    }

    pub fn total_attempts(&self) -> u32 {
        self.attempts.lock().values().sum()
    }

    pub fn stored(&self) -> usize {
        self.store.lock().len()
    }

    /// Forgets every stored event, as the API server does when events expire.
    pub fn expire_all(&self) {
        self.store.lock().clear();
    }

    fn attempt(&self, op: Op, event: &Event) -> Result<(), SinkError> {
        let attempt = {
            let mut attempts = self.attempts.lock();
            let n = attempts.entry(event.message.clone()).or_insert(0);
            *n += 1;
            *n
        };
        self.changes.send_modify(|n| *n += 1);
        match self.fail.as_ref().and_then(|fail| fail(op, event, attempt)) {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    fn key(event: &Event) -> String {
        format!("{}/{}", event.metadata.namespace, event.metadata.name)
    }

    fn resource_version(&self) -> String {
        let mut next = self.next_resource_version.lock();
        *next += 1;
        next.to_string()
    }
}

impl EventSink for FakeSink {
    async fn create(&self, event: &Event) -> Result<Event, SinkError> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        self.changes.send_modify(|n| *n += 1);
        let _gate = self.gate.lock().await;
        self.attempt(Op::Create, event)?;
        let key = FakeSink::key(event);
        let mut store = self.store.lock();
        if store.contains_key(&key) {
            return Err(SinkError::from_status(Status::from_reason(
                StatusReason::AlreadyExists,
                format!("events {key:?} already exists"),
            )));
        }
        let mut created = event.clone();
        created.metadata.resource_version = self.resource_version();
        store.insert(key, created.clone());
        let _ = self.written.send((Op::Create, created.clone()));
        Ok(created)
    }

    async fn patch(&self, event: &Event, patch: &Value) -> Result<Event, SinkError> {
        self.entered.fetch_add(1, Ordering::SeqCst);
        self.changes.send_modify(|n| *n += 1);
        let _gate = self.gate.lock().await;
        self.attempt(Op::Patch, event)?;
        let key = FakeSink::key(event);
        let mut store = self.store.lock();
        let Some(stored) = store.get(&key) else {
            return Err(SinkError::from_status(Status::from_reason(
                StatusReason::NotFound,
                format!("events {key:?} not found"),
            )));
        };
        let mut json = serde_json::to_value(stored).map_err(|e| SinkError::Transport(e.into()))?;
        apply_merge_patch(&mut json, patch);
        let mut patched: Event =
            serde_json::from_value(json).map_err(|e| SinkError::Transport(e.into()))?;
        patched.metadata.resource_version = self.resource_version();
        store.insert(key, patched.clone());
        let _ = self.written.send((Op::Patch, patched.clone()));
        Ok(patched)
    }
}

/// RFC 7386 JSON merge patch (what a strategic merge patch without lists amounts to).
pub fn apply_merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                apply_merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

/// Waits, within [`WAIT`], for the sink's next write.
pub async fn next_write(written: &mut mpsc::UnboundedReceiver<(Op, Event)>) -> (Op, Event) {
    tokio::time::timeout(WAIT, written.recv())
        .await
        .expect("timed out waiting for a write")
        .expect("the sink is gone")
}

/// Options for reproducible tests: timestamps follow tokio's clock, the random first retry
/// sleep is seeded.
pub fn test_options() -> BroadcasterOptions {
    let clock = Arc::new(TokioClock::new());
    BroadcasterOptions {
        clock: clock.clone(),
        correlator: CorrelatorOptions {
            clock,
            ..CorrelatorOptions::default()
        },
        seed: Some(2024),
        ..BroadcasterOptions::default()
    }
}

/// A minimal typed Pod, as a controller's own types implement the traits.
pub struct Pod {
    pub metadata: ObjectMeta,
}

impl_object!(Pod);

impl Resource for Pod {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Pod";
    const PLURAL: &'static str = "pods";
    const NAMESPACED: bool = true;
}

pub fn pod(namespace: &str, name: &str, uid: &str) -> Pod {
    let mut metadata = ObjectMeta::namespaced(namespace, name);
    metadata.uid = uid.into();
    Pod { metadata }
}

/// client-go's `validateEvent`: timestamps set and equal exactly when the count is 1, the name
/// starts with the expected one, and the rest equals `expected` (server-set metadata and the
/// reporting controller aside).
pub fn validate_event(actual: &Event, expected: &Event) {
    let (first, last) = (actual.first_timestamp, actual.last_timestamp);
    assert!(
        first.is_some() && last.is_some(),
        "timestamps not set: {actual:?}"
    );
    if expected.count > 1 {
        assert_ne!(
            first, last,
            "a counted event must have moved lastTimestamp: {actual:?}"
        );
    } else {
        assert_eq!(
            first, last,
            "a single occurrence has equal timestamps: {actual:?}"
        );
    }
    assert!(
        actual.metadata.name.starts_with(&expected.metadata.name),
        "name {:?} does not start with {:?}",
        actual.metadata.name,
        expected.metadata.name
    );
    let normalized = Event {
        metadata: ObjectMeta {
            name: expected.metadata.name.clone(),
            namespace: actual.metadata.namespace.clone(),
            annotations: actual.metadata.annotations.clone(),
            ..ObjectMeta::default()
        },
        first_timestamp: expected.first_timestamp,
        last_timestamp: expected.last_timestamp,
        reporting_controller: expected.reporting_controller.clone(),
        ..actual.clone()
    };
    assert_eq!(&normalized, expected);
}
