//! watch: a stream of events from a resourceVersion, with bookmarks, timeouts and
//! selectors, plus the injected stream faults.
//!
//! Mirrors the watch cache's `cacheWatcher` (`storage/cacher/cache_watcher.go`,
//! `cacher.go` `Watch`):
//! * `resourceVersion` unset or `"0"`, or `sendInitialEvents=true` (WatchList): synthetic
//!   ADDED events for the current state, then (with `allowWatchBookmarks`, as
//!   kube-apiserver 1.36.2 does in both cases) a BOOKMARK annotated
//!   `k8s.io/initial-events-end: "true"`, then changes; `N`: the changes after N from the
//!   history, or, when N is older than the history, HTTP 200 and one ERROR event with 410
//!   Expired "too old resource version: N (C)"; so too for a custom resource when N is older
//!   than its CRD (its watch cache's start); N in the future: nothing until the store passes
//!   it, then the changes after N;
//! * `allowWatchBookmarks`: a BOOKMARK ([`super::bookmark`]: the watched type's zero value
//!   carrying only a resourceVersion) every bookmark interval and once
//!   `bookmark_before_timeout` (2 s) before the timeout (none when the watch is shorter
//!   than that), each only when the resource (its own keyspace, as its watch cache) has
//!   been written since the watch started and since its watch cache started (the cacher
//!   sends none before);
//! * `timeoutSeconds` ends the stream cleanly; label and field selectors filter events, an
//!   object that stops matching is sent as DELETED and one that starts matching as ADDED;
//! * a watcher that falls behind the history gets the 410 ERROR event and is closed.
//!
//! Frames are JSON objects each followed by a newline. Differences: no per-watcher buffer
//! limit (a slow reader slows only its own task) and bookmarks carry the store's revision.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::errors::{self, ApiResult};
use crate::faults::WatchFault;
use crate::resources::ResourceInfo;
use crate::state::State;
use crate::store::{Event, EventType, ListRequest, StoreError, StoredObject};
use crate::verbs::list::{ListOptions, RvMatch, wait_for_rv};

/// Turns an object's JSON into the bytes embedded in a frame (identity, a Table row, or a
/// `PartialObjectMetadata`).
pub type Render = Arc<dyn Fn(&[u8]) -> Vec<u8> + Send + Sync>;

/// The body chunks of a watch response.
pub type Frames = mpsc::Receiver<Result<Bytes, io::Error>>;

fn frame(kind: &str, object: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(object.len() + 32);
    out.extend_from_slice(b"{\"type\":\"");
    out.extend_from_slice(kind.as_bytes());
    out.extend_from_slice(b"\",\"object\":");
    out.extend_from_slice(object);
    out.extend_from_slice(b"}\n");
    Bytes::from(out)
}

/// The ERROR frame for a status.
pub fn error_frame(err: &errors::ApiError) -> Bytes {
    frame(
        "ERROR",
        &serde_json::to_vec(&err.status).unwrap_or_default(),
    )
}

/// The revision a resource's watch cache started at: a custom resource's cache starts when
/// its CRD is served (kube-apiserver's apiextensions handler builds its storage, and the
/// cacher lists, then), at the CRD's revision here; built-ins' caches start with the
/// server, before any revision a client can name. A watch from an older revision is "too
/// old" (`watchCache.getAllEventsSinceLocked`), however long the history.
fn cache_start(state: &State, info: &ResourceInfo) -> u64 {
    if info.strategic_merge {
        return 0;
    }
    let crd = format!("{}.{}", info.plural, info.group);
    state
        .store
        .get(crate::crd::CRD_KEYSPACE, &crd)
        .map_or(0, |crd| crd.rv())
}

struct Watcher {
    state: State,
    info: Arc<ResourceInfo>,
    namespace: String,
    opts: ListOptions,
    render: Render,
    /// Whether bookmarks go through `render` too (they are sent as the watched kind if not).
    render_bookmarks: bool,
    tx: mpsc::Sender<Result<Bytes, io::Error>>,
}

/// Where a watch starts.
enum Start {
    /// Send the current state first (ADDED), then the end bookmark when bookmarks are
    /// allowed, then changes.
    Initial { end_bookmark: bool },
    /// Changes after this revision.
    After(u64),
}

/// Validates the request and starts the watch task; returns the frames to stream. Objects
/// are written through `render`; bookmarks carry the watched kind.
pub async fn watch(
    state: State,
    info: Arc<ResourceInfo>,
    namespace: String,
    opts: ListOptions,
    render: Render,
) -> ApiResult<Frames> {
    start(state, info, namespace, opts, render, false).await
}

/// [`watch`], with bookmarks written through `render` as well: a conversion the client asked
/// for (`PartialObjectMetadata`) applies to every event's object, as on the real server.
pub async fn watch_rendering_bookmarks(
    state: State,
    info: Arc<ResourceInfo>,
    namespace: String,
    opts: ListOptions,
    render: Render,
) -> ApiResult<Frames> {
    start(state, info, namespace, opts, render, true).await
}

async fn start(
    state: State,
    info: Arc<ResourceInfo>,
    namespace: String,
    opts: ListOptions,
    render: Render,
    render_bookmarks: bool,
) -> ApiResult<Frames> {
    let rv = match opts.resource_version.as_deref() {
        None => None,
        // A plain Go error in kube-apiserver 1.36.2: 500, its message, no reason.
        Some(s) => match crate::go_strconv::invalid_resource_version(s) {
            Some(e) => return Err(errors::unclassified(e)),
            None => s.parse::<u64>().ok(),
        },
    };
    // The initial events end with the annotated bookmark whenever bookmarks are allowed:
    // kube-apiserver 1.36.2 sends it after the ADDED events of a watch without a
    // resourceVersion (or from "0") too, not only with `sendInitialEvents=true`. A 1.21
    // server (no WatchList) knows no such bookmark.
    let end_bookmark = opts.allow_bookmarks && state.config.watch_list;
    let start = match (opts.send_initial_events, rv) {
        (Some(true), rv) => {
            if opts.rv_match == Some(RvMatch::NotOlderThan) {
                if let Some(n) = rv.filter(|n| *n > 0) {
                    wait_for_rv(&state, n).await?;
                }
            }
            Start::Initial { end_bookmark }
        }
        (Some(false), None | Some(0)) => Start::After(state.store.rev()),
        (None, None | Some(0)) => Start::Initial { end_bookmark },
        (_, Some(n)) => Start::After(n),
    };
    // Held by the watch's task until it ends (its client gone, its timeout, a fault).
    let slot = state
        .watch_slots
        .clone()
        .try_acquire_owned()
        .map_err(|_| errors::too_many_requests(1))?;
    let (tx, rx) = mpsc::channel(128);
    let watcher = Watcher {
        state,
        info,
        namespace,
        opts,
        render,
        render_bookmarks,
        tx,
    };
    tokio::spawn(async move {
        let _slot = slot;
        if let Err(e) = watcher.run(start).await {
            tracing::debug!(error = %e, "watch ended by the client");
        }
    });
    Ok(rx)
}

impl Watcher {
    async fn send(&self, bytes: Bytes) -> Result<(), io::Error> {
        self.tx
            .send(Ok(bytes))
            .await
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "client gone"))
    }

    fn in_scope(&self, obj: &StoredObject) -> bool {
        (self.namespace.is_empty() || obj.namespace() == self.namespace) && self.opts.matches(obj)
    }

    fn object_frame(&self, kind: &str, obj: &StoredObject) -> Bytes {
        frame(kind, &(self.render)(obj.json()))
    }

    fn bookmark_frame(&self, rv: u64, initial_end: bool) -> Bytes {
        let object = super::bookmark::object(&self.info, rv, initial_end);
        if self.render_bookmarks {
            frame("BOOKMARK", &(self.render)(&object))
        } else {
            frame("BOOKMARK", &object)
        }
    }

    /// The frame an event becomes for this watcher, if any.
    fn convert(&self, e: &Event) -> Option<Bytes> {
        let cur = self.in_scope(&e.object);
        match e.kind {
            EventType::Added => cur.then(|| self.object_frame("ADDED", &e.object)),
            EventType::Deleted => cur.then(|| self.object_frame("DELETED", &e.object)),
            EventType::Modified => {
                let before = e.prev.as_ref().is_some_and(|p| self.in_scope(p));
                match (before, cur) {
                    (true, true) => Some(self.object_frame("MODIFIED", &e.object)),
                    (false, true) => Some(self.object_frame("ADDED", &e.object)),
                    (true, false) => {
                        // The previous version, stamped with the event's revision.
                        let prev = e.prev.as_ref()?;
                        let mut v = prev.to_value();
                        v["metadata"]["resourceVersion"] = Value::String(e.rv.to_string());
                        let json = serde_json::to_vec(&v).unwrap_or_default();
                        Some(frame("DELETED", &(self.render)(&json)))
                    }
                    (false, false) => None,
                }
            }
        }
    }

    /// Whether the resource's watch cache has processed a write since it started: the
    /// cacher sends no bookmark before (`dispatchEvents`: "never send a bookmark event if we
    /// did not see an event here"), periodic and pre-timeout ones alike.
    fn cache_progressed(&self) -> bool {
        let start = cache_start(&self.state, &self.info);
        self.state
            .store
            .last_write(&self.info.keyspace())
            .is_some_and(|rev| rev > start)
    }

    /// Whether the resource was written after `rv`: its watch cache's resourceVersion only
    /// moves with its own events, and kube-apiserver 1.36.2 sends a watcher no bookmark
    /// before the cache has moved past where the watch started (a Pod watch while only
    /// ConfigMaps are written gets none).
    fn written_since(&self, rv: u64) -> bool {
        self.state
            .store
            .last_write(&self.info.keyspace())
            .is_some_and(|rev| rev > rv)
    }

    fn next_bookmark(&self, now: Instant, deadline: Instant) -> Instant {
        let cfg = &self.state.config;
        let periodic = now + cfg.bookmark_interval;
        let before_deadline = deadline
            .checked_sub(cfg.bookmark_before_timeout)
            .unwrap_or(deadline);
        if before_deadline > now && before_deadline < periodic {
            before_deadline
        } else {
            periodic
        }
    }

    async fn run(self, start: Start) -> Result<(), io::Error> {
        let cfg = &self.state.config;
        let timeout = match self.opts.timeout_seconds {
            Some(s) if s > 0 => Duration::from_secs(s),
            _ => cfg.default_watch_timeout,
        };
        // A `timeoutSeconds` too large for a deadline (up to i64::MAX is accepted) means no
        // limit the watch could outlive: a year from now.
        let now = Instant::now();
        let deadline = now
            .checked_add(timeout)
            .unwrap_or_else(|| now + Duration::from_secs(365 * 24 * 3600));
        let mut rev_rx = self.state.store.subscribe();
        let mut faults = self.state.faults.subscribe_watch();
        let mut shutdown = self.state.shutdown.clone();
        let ks = self.info.keyspace();
        let mut pos = match start {
            Start::After(n) if n < cache_start(&self.state, &self.info) => {
                let oldest = cache_start(&self.state, &self.info);
                return self
                    .send(error_frame(&errors::watch_too_old(n, oldest)))
                    .await;
            }
            Start::After(n) => n,
            Start::Initial { end_bookmark } => {
                let prefix = if self.namespace.is_empty() {
                    String::new()
                } else {
                    format!("{}/", self.namespace)
                };
                let req = ListRequest {
                    keyspace: &ks,
                    prefix: &prefix,
                    at: None,
                    start: "",
                    limit: 0,
                    count_remaining: false,
                    cached: true,
                };
                let page = match self.state.store.list(req, &|o| self.opts.matches(o)) {
                    Ok(p) => p,
                    Err(e) => {
                        return self.send(error_frame(&errors::internal(e))).await;
                    }
                };
                for obj in &page.items {
                    self.send(self.object_frame("ADDED", obj)).await?;
                }
                if end_bookmark {
                    self.send(self.bookmark_frame(page.rv, true)).await?;
                }
                page.rv
            }
        };
        // The cacher sends a watcher no bookmark that would not move it past where it
        // started (`cacheWatcher.process`: only events newer than its resourceVersion): none
        // at all while a start in the future has not been reached.
        let start_rv = pos;
        let mut next_bookmark = self.next_bookmark(Instant::now(), deadline);
        let mut stalled = false;
        loop {
            if !stalled {
                match self.state.store.events_after(&ks, pos) {
                    Ok((events, rev)) => {
                        for e in &events {
                            if let Some(f) = self.convert(e) {
                                self.send(f).await?;
                            }
                        }
                        // A start in the future stays there until the store catches up.
                        pos = pos.max(rev);
                    }
                    Err(StoreError::Compacted { compacted }) => {
                        return self
                            .send(error_frame(&errors::watch_too_old(pos, compacted)))
                            .await;
                    }
                    Err(e) => return self.send(error_frame(&errors::internal(e))).await,
                }
            }
            tokio::select! {
                changed = rev_rx.changed() => {
                    if changed.is_err() {
                        return Ok(());
                    }
                }
                () = tokio::time::sleep_until(next_bookmark), if self.opts.allow_bookmarks && !stalled => {
                    if pos > start_rv && self.cache_progressed() && self.written_since(start_rv) {
                        self.send(self.bookmark_frame(pos, false)).await?;
                    }
                    next_bookmark = self.next_bookmark(Instant::now(), deadline);
                }
                () = tokio::time::sleep_until(deadline) => return Ok(()),
                fault = faults.recv() => match fault {
                    Ok((Some(resource), _)) if resource != self.info.plural => {}
                    Ok((_, WatchFault::Close)) => return Ok(()),
                    Ok((_, WatchFault::CutMidFrame)) => {
                        self.send(Bytes::from_static(b"{\"type\":\"MODIFIED\",\"object\":{\"kind\":")).await?;
                        let _ = self.tx.send(Err(io::Error::new(io::ErrorKind::ConnectionAborted, "injected: stream cut"))).await;
                        return Ok(());
                    }
                    Ok((_, WatchFault::MalformedFrame)) => {
                        self.send(Bytes::from_static(b"{\"type\":\"ADDED\",\"object\":{this is not json}\n")).await?;
                    }
                    Ok((_, WatchFault::Stall)) => stalled = true,
                    Ok((_, WatchFault::Error(e))) => {
                        return match e.to_api_error() {
                            Some(e) => self.send(error_frame(&e)).await,
                            None => Ok(()),
                        };
                    }
                    Err(_) => {}
                },
                () = self.tx.closed() => return Ok(()),
                _ = shutdown.changed() => return Ok(()),
            }
        }
    }
}
