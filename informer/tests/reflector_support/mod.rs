//! Test doubles for the reflector tests: a small object type, watch bodies the test feeds or
//! scripts, a scripted `ListerWatcher` that records the options of every call, a recording
//! `ReflectorStore`, and bounded waits on conditions (tokio's paused clock: no real sleeps).
//!
//! The body pattern is the watch crate's `tests/common` one, grown to script sleeps, resets
//! and hooks.

#![allow(dead_code)] // each test binary uses part of this

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use clientgo_apimachinery::{
    Bookmark, ListMeta, ObjectList, ObjectMeta, Status, StatusReason, WatchEvent, impl_object,
};
use clientgo_informer::{ListWatchError, ListerWatcher, ReflectorStore};
use clientgo_rest::{ListParams, WatchParams};
use clientgo_watch::Watch;
use http_body::{Body, Frame};
use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use tokio::sync::{Notify, mpsc};
use tokio::time::Sleep;

// ---------------------------------------------------------------------------------------
// Objects

/// A minimal namespaced object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pod {
    pub metadata: ObjectMeta,
}
impl_object!(Pod);

pub fn pod(name: &str, rv: &str) -> Pod {
    let mut metadata = ObjectMeta::namespaced("ns", name);
    metadata.resource_version = rv.to_owned();
    Pod { metadata }
}

/// Pods named `pod-<i>` at resourceVersion `<i>`.
pub fn pods(range: std::ops::Range<usize>) -> Vec<Pod> {
    range
        .map(|i| pod(&format!("pod-{i}"), &i.to_string()))
        .collect()
}

pub fn list(rv: &str, items: Vec<Pod>) -> ObjectList<Pod> {
    list_page(rv, "", items)
}

pub fn list_page(rv: &str, next: &str, items: Vec<Pod>) -> ObjectList<Pod> {
    ObjectList {
        metadata: ListMeta {
            resource_version: rv.to_owned(),
            continue_: next.to_owned(),
            ..ListMeta::default()
        },
        ..ObjectList::new(items)
    }
}

pub fn status(code: i32, reason: StatusReason, message: &str) -> ListWatchError {
    Status::failure(code, reason, message).into()
}

pub fn expired() -> ListWatchError {
    status(
        410,
        StatusReason::Expired,
        "The resourceVersion for the provided watch is too old.",
    )
}

pub fn too_many_requests() -> ListWatchError {
    status(429, StatusReason::TooManyRequests, "too many requests")
}

pub fn connection_refused() -> ListWatchError {
    ListWatchError::Transport(Box::new(std::io::Error::new(
        std::io::ErrorKind::ConnectionRefused,
        "connection refused",
    )))
}

pub fn error_event(error: ListWatchError) -> WatchEvent<Pod> {
    match error {
        ListWatchError::Status(status) => WatchEvent::Error(status),
        other => panic!("not a status: {other}"),
    }
}

pub fn end_bookmark(rv: &str) -> WatchEvent<Pod> {
    WatchEvent::Bookmark(Bookmark::new(rv).with_initial_events_end())
}

pub fn encode(event: &WatchEvent<Pod>) -> Bytes {
    let mut text = serde_json::to_vec(event).expect("events encode");
    text.push(b'\n');
    Bytes::from(text)
}

// ---------------------------------------------------------------------------------------
// Watch bodies

/// One step of a scripted body (a test double: size does not matter).
#[allow(clippy::large_enum_variant)]
pub enum Step {
    Event(WatchEvent<Pod>),
    Raw(&'static [u8]),
    Sleep(Duration),
    /// The connection resets.
    Fail,
    /// Runs this when the reflector has handled every event before it.
    Run(Box<dyn FnOnce() + Send>),
    /// Nothing more, ever.
    Hang,
}

/// A body that plays its steps, then ends cleanly.
pub struct ScriptBody {
    steps: VecDeque<Step>,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Body for ScriptBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        loop {
            if let Some(sleep) = self.sleep.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.sleep = None;
            }
            match self.steps.pop_front() {
                None => return Poll::Ready(None),
                Some(Step::Event(event)) => {
                    return Poll::Ready(Some(Ok(Frame::data(encode(&event)))));
                }
                Some(Step::Raw(bytes)) => {
                    return Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(bytes)))));
                }
                Some(Step::Sleep(d)) => self.sleep = Some(Box::pin(tokio::time::sleep(d))),
                Some(Step::Fail) => {
                    return Poll::Ready(Some(Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionReset,
                        "connection reset by peer",
                    ))));
                }
                Some(Step::Run(f)) => f(),
                Some(Step::Hang) => {
                    self.steps.push_front(Step::Hang);
                    return Poll::Pending;
                }
            }
        }
    }
}

/// A watch that plays `steps`, then ends cleanly.
pub fn scripted(steps: Vec<Step>) -> Watch<Pod> {
    Watch::new(ScriptBody {
        steps: steps.into(),
        sleep: None,
    })
}

/// A watch that delivers `events` and then stays open.
pub fn open_with(events: Vec<WatchEvent<Pod>>) -> Watch<Pod> {
    let mut steps: Vec<Step> = events.into_iter().map(Step::Event).collect();
    steps.push(Step::Hang);
    scripted(steps)
}

/// A watch that ends at once.
pub fn closed() -> Watch<Pod> {
    scripted(vec![])
}

/// A body fed by the test through a [`Feed`].
pub struct FedBody(mpsc::UnboundedReceiver<Bytes>);

impl Body for FedBody {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        self.0
            .poll_recv(cx)
            .map(|chunk| chunk.map(|c| Ok(Frame::data(c))))
    }
}

/// The test's end of a fed watch: send events, end it by dropping every clone, see whether
/// the reflector stopped it.
#[derive(Clone)]
pub struct Feed(mpsc::UnboundedSender<Bytes>);

impl Feed {
    pub fn send(&self, event: WatchEvent<Pod>) {
        // The reflector may have stopped the watch already; that is for the test to check.
        let _ = self.0.send(encode(&event));
    }

    /// Whether the reflector dropped the watch.
    pub fn is_stopped(&self) -> bool {
        self.0.is_closed()
    }
}

/// A watch and the feed that drives it.
pub fn fed() -> (Watch<Pod>, Feed) {
    let (tx, rx) = mpsc::unbounded_channel();
    (Watch::new(FedBody(rx)), Feed(tx))
}

// ---------------------------------------------------------------------------------------
// ListerWatcher

type ListFn = Box<dyn FnMut(usize, &ListParams) -> Result<ObjectList<Pod>, ListWatchError> + Send>;
type WatchFn = Box<dyn FnMut(usize, &WatchParams) -> Result<Watch<Pod>, ListWatchError> + Send>;

struct Script {
    list: ListFn,
    watch: WatchFn,
    list_calls: Vec<ListParams>,
    watch_calls: Vec<WatchParams>,
}

/// A scripted `ListerWatcher`: each call is answered by the test's closure, given the call's
/// number (from 1) and options, and recorded.
#[derive(Clone)]
pub struct FakeLw {
    script: Arc<Mutex<Script>>,
    watch_list: bool,
    calls: Arc<Notify>,
}

impl FakeLw {
    pub fn new(
        list: impl FnMut(usize, &ListParams) -> Result<ObjectList<Pod>, ListWatchError> + Send + 'static,
        watch: impl FnMut(usize, &WatchParams) -> Result<Watch<Pod>, ListWatchError> + Send + 'static,
    ) -> Self {
        FakeLw {
            script: Arc::new(Mutex::new(Script {
                list: Box::new(list),
                watch: Box::new(watch),
                list_calls: Vec::new(),
                watch_calls: Vec::new(),
            })),
            watch_list: true,
            calls: Arc::new(Notify::new()),
        }
    }

    /// A client that cannot do streaming lists (client-go's fakes).
    pub fn without_watch_list(mut self) -> Self {
        self.watch_list = false;
        self
    }

    pub fn list_calls(&self) -> Vec<ListParams> {
        self.script.lock().list_calls.clone()
    }

    pub fn watch_calls(&self) -> Vec<WatchParams> {
        self.script.lock().watch_calls.clone()
    }

    /// The resourceVersion of each list call ("" when unset).
    pub fn list_rvs(&self) -> Vec<String> {
        self.list_calls()
            .into_iter()
            .map(|o| o.resource_version.unwrap_or_default())
            .collect()
    }

    /// Waits (bounded, in virtual time) until `n` watch calls were made.
    pub async fn wait_for_watch_calls(&self, n: usize) {
        let script = self.script.clone();
        wait_until(&self.calls, || script.lock().watch_calls.len() >= n).await;
    }

    /// Waits (bounded, in virtual time) until `n` list calls were made.
    pub async fn wait_for_list_calls(&self, n: usize) {
        let script = self.script.clone();
        wait_until(&self.calls, || script.lock().list_calls.len() >= n).await;
    }
}

impl ListerWatcher<Pod> for FakeLw {
    async fn list(&self, options: &ListParams) -> Result<ObjectList<Pod>, ListWatchError> {
        let result = {
            let mut script = self.script.lock();
            script.list_calls.push(options.clone());
            let n = script.list_calls.len();
            (script.list)(n, options)
        };
        self.calls.notify_waiters();
        result
    }

    async fn watch(&self, options: &WatchParams) -> Result<Watch<Pod>, ListWatchError> {
        let result = {
            let mut script = self.script.lock();
            script.watch_calls.push(options.clone());
            let n = script.watch_calls.len();
            (script.watch)(n, options)
        };
        self.calls.notify_waiters();
        result
    }

    fn supports_watch_list(&self) -> bool {
        self.watch_list
    }
}

// ---------------------------------------------------------------------------------------
// Store

/// What the reflector did to the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Add(String),
    Update(String),
    Delete(String),
    /// `name@rv` of each object, and the list's resourceVersion.
    Replace(Vec<String>, String),
    Resync,
    Bookmark(String),
}

fn tag(p: &Pod) -> String {
    format!("{}@{}", p.metadata.name, p.metadata.resource_version)
}

/// Records every call, and keeps the resulting state (name → resourceVersion).
#[derive(Default)]
pub struct RecordingStore {
    ops: Mutex<Vec<Op>>,
    items: Mutex<BTreeMap<String, String>>,
    changed: Notify,
}

impl RecordingStore {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub fn ops(&self) -> Vec<Op> {
        self.ops.lock().clone()
    }

    /// `name@rv` of everything stored, by name.
    pub fn items(&self) -> Vec<String> {
        self.items
            .lock()
            .iter()
            .map(|(name, rv)| format!("{name}@{rv}"))
            .collect()
    }

    pub fn len(&self) -> usize {
        self.items.lock().len()
    }

    fn record(&self, op: Op) {
        self.ops.lock().push(op);
        self.changed.notify_waiters();
    }

    /// Waits (bounded, in virtual time) until `condition` holds after some store call.
    pub async fn wait_for(&self, condition: impl Fn(&[Op]) -> bool) {
        wait_until(&self.changed, || condition(&self.ops.lock())).await;
    }
}

impl ReflectorStore<Pod> for RecordingStore {
    fn add(&self, object: Pod) {
        self.items.lock().insert(
            object.metadata.name.clone(),
            object.metadata.resource_version.clone(),
        );
        self.record(Op::Add(tag(&object)));
    }
    fn update(&self, object: Pod) {
        self.items.lock().insert(
            object.metadata.name.clone(),
            object.metadata.resource_version.clone(),
        );
        self.record(Op::Update(tag(&object)));
    }
    fn delete(&self, object: Pod) {
        self.items.lock().remove(&object.metadata.name);
        self.record(Op::Delete(tag(&object)));
    }
    fn replace(&self, objects: Vec<Pod>, resource_version: String) {
        let tags = objects.iter().map(tag).collect();
        *self.items.lock() = objects
            .into_iter()
            .map(|p| (p.metadata.name, p.metadata.resource_version))
            .collect();
        self.record(Op::Replace(tags, resource_version));
    }
    fn resync(&self) {
        self.record(Op::Resync);
    }
    fn bookmark(&self, resource_version: &str) {
        self.record(Op::Bookmark(resource_version.to_owned()));
    }
}

// ---------------------------------------------------------------------------------------
// Waiting

/// The longest a test waits for a condition, in (virtual) time.
pub const WAIT_LIMIT: Duration = Duration::from_secs(3600);

/// Waits until `condition` holds, re-checking whenever `notify` fires; panics after
/// [`WAIT_LIMIT`] of virtual time.
pub async fn wait_until(notify: &Notify, condition: impl Fn() -> bool) {
    let wait = async {
        loop {
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if condition() {
                return;
            }
            notified.await;
        }
    };
    tokio::time::timeout(WAIT_LIMIT, wait)
        .await
        .expect("condition not met within the wait limit");
}
