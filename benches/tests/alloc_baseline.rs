//! The informer's heap profile, checked against a committed baseline.
//!
//! What it measures: every allocation (count, bytes, and the peak of live bytes) that a
//! `SharedIndexInformer<Compact<ConfigMap>>` makes while it
//!
//! 1. lists 10,000 ConfigMaps of one namespace (`data.k` about 200 bytes, one label), decoded
//!    from JSON bytes with `serde_json::from_slice`,
//! 2. decodes a watch stream (16 KiB chunks) of 5,000 `MODIFIED` events (new `data.k`), then
//!    1,000 `DELETED` events, then an `ERROR` event carrying a 410 `Expired` Status,
//! 3. relists after that error and gets the final state, 9,000 ConfigMaps,
//!
//! while one event handler counts the notifications, until the handler and the store show the
//! final state and the informer is cancelled. The lister-watcher lives in memory and serves
//! bytes prepared before the measurement starts, so decoding is part of the profile and no
//! server or network is involved.
//!
//! Why: the informer is this project's memory-sensitive core (the cache, the queue, the
//! handlers' buffers, the decoders), and heap use regresses silently: an extra clone per
//! event or a buffer that is no longer reused shows in no functional test. The figures come
//! from `dhat`'s counting allocator, not from timings, so they are the same from run to run
//! and any change beyond the tolerance is a change in the code. The run is made deterministic:
//! a current-thread runtime with tokio's paused clock (the reflector's backoff before the
//! relist fires when everything else is idle, not after wall-clock time that depends on the
//! machine's speed), one blocking-pool thread for the handler's batches (a second one would
//! be spawned or not depending on timing), and bytes and chunking fixed in advance.
//!
//! The test fails when the allocation count, the bytes allocated or the peak exceed the
//! baseline (`benches/alloc-baseline.json`) by more than 10%; when they drop by more than
//! 10%, it passes and suggests refreshing the baseline. Refresh it with
//! `CLIENTGO_ALLOC_BASELINE=update cargo test -p clientgo-benches --test alloc_baseline`.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use clientgo_apimachinery::{Compact, ObjectList};
use clientgo_informer::{
    DeleteEvent, Indexers, ListWatchError, ListerWatcher, ResourceEventHandlerFuncs,
    SharedIndexInformer, SharedInformerOptions,
};
use clientgo_rest::{ListParams, WatchParams};
use clientgo_watch::Watch;
use http_body::{Body, Frame};
use k8s_openapi::api::core::v1::ConfigMap;
use serde::{Deserialize, Serialize};
use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

type Cm = Compact<ConfigMap>;

/// ConfigMaps in the first list.
const OBJECTS: usize = 10_000;
/// `MODIFIED` events: ConfigMaps `0..MODIFIED` get a new `data.k`.
const MODIFIED: usize = 5_000;
/// `DELETED` events: the last `DELETED` ConfigMaps go.
const DELETED: usize = 1_000;
/// ConfigMaps in the relist.
const REMAINING: usize = OBJECTS - DELETED;
/// The watch transport's chunk size.
const CHUNK: usize = 16 * 1024;
const NAMESPACE: &str = "alloc-baseline";
/// How long (on tokio's paused clock) the final state may take to show.
const WAIT_LIMIT: Duration = Duration::from_secs(600);
/// How far a figure may rise above the baseline, or fall below it before a refresh is
/// suggested.
const TOLERANCE: f64 = 0.10;
const BASELINE_FILE: &str = "alloc-baseline.json";
const BASELINE_ENV: &str = "CLIENTGO_ALLOC_BASELINE";
const REFRESH: &str =
    "CLIENTGO_ALLOC_BASELINE=update cargo test -p clientgo-benches --test alloc_baseline";

/// The scenario's figures (and the baseline file's content).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Figures {
    /// What was measured, for readers of the file.
    #[serde(default)]
    scenario: String,
    /// Allocations (dhat's `total_blocks`; a reallocation counts as one).
    total_blocks: u64,
    /// Bytes allocated in all (dhat's `total_bytes`).
    total_bytes: u64,
    /// The peak of live bytes above the starting point (dhat's `max_bytes`).
    max_bytes: u64,
}

const SCENARIO: &str = "SharedIndexInformer<Compact<ConfigMap>>, in-memory lister-watcher: \
    list 10,000 ConfigMaps (one namespace, data.k ~200 B, one label), watch 5,000 MODIFIED, \
    1,000 DELETED, ERROR 410 Expired, relist 9,000; one counting handler; \
    current-thread runtime, paused clock";

fn name(i: usize) -> String {
    format!("cm-{i:05}")
}

/// One ConfigMap as the API server writes it.
fn configmap(out: &mut String, i: usize, round: u32, resource_version: usize) {
    let _ = write!(
        out,
        concat!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","#,
            r#""namespace":"{ns}","uid":"00000000-0000-4000-8000-{i:012}","#,
            r#""resourceVersion":"{rv}","creationTimestamp":"2024-01-01T00:00:00Z","#,
            r#""labels":{{"app":"alloc-baseline"}}}},"data":{{"k":"round-{round}-object-{i:05}-{pad}"}}}}"#
        ),
        name = name(i),
        ns = NAMESPACE,
        i = i,
        rv = resource_version,
        round = round,
        pad = "x".repeat(170),
    );
}

/// A ConfigMapList of `items` (index, round, resourceVersion) at `resource_version`.
fn configmap_list(items: impl Iterator<Item = (usize, u32, usize)>, rv: usize) -> Bytes {
    let mut out = format!(
        r#"{{"apiVersion":"v1","kind":"ConfigMapList","metadata":{{"resourceVersion":"{rv}"}},"items":["#
    );
    for (n, (i, round, item_rv)) in items.enumerate() {
        if n > 0 {
            out.push(',');
        }
        configmap(&mut out, i, round, item_rv);
    }
    out.push_str("]}\n");
    Bytes::from(out)
}

/// What the lister-watcher serves, prepared before the measurement.
struct Recording {
    first_list: Bytes,
    watch_chunks: Vec<Bytes>,
    final_list: Bytes,
}

impl Recording {
    /// ConfigMap `i` is created at resourceVersion `i + 1`; the `MODIFIED` events take
    /// `OBJECTS + 1 ..`, the `DELETED` events the versions after them.
    fn new() -> Recording {
        let first_list = configmap_list((0..OBJECTS).map(|i| (i, 0, i + 1)), OBJECTS);

        let mut stream = String::new();
        let mut rv = OBJECTS;
        for i in 0..MODIFIED {
            rv += 1;
            stream.push_str(r#"{"type":"MODIFIED","object":"#);
            configmap(&mut stream, i, 1, rv);
            stream.push_str("}\n");
        }
        for i in REMAINING..OBJECTS {
            rv += 1;
            stream.push_str(r#"{"type":"DELETED","object":"#);
            configmap(&mut stream, i, 0, rv);
            stream.push_str("}\n");
        }
        let _ = writeln!(
            stream,
            concat!(
                r#"{{"type":"ERROR","object":{{"kind":"Status","apiVersion":"v1","metadata":{{}},"#,
                r#""status":"Failure","message":"too old resource version: {} ({})","#,
                r#""reason":"Expired","code":410}}}}"#
            ),
            OBJECTS,
            rv + 1,
        );
        let stream = Bytes::from(stream);
        let watch_chunks = (0..stream.len())
            .step_by(CHUNK)
            .map(|start| stream.slice(start..(start + CHUNK).min(stream.len())))
            .collect();

        let final_list = configmap_list(
            (0..REMAINING).map(|i| {
                if i < MODIFIED {
                    (i, 1, OBJECTS + 1 + i)
                } else {
                    (i, 0, i + 1)
                }
            }),
            rv,
        );
        Recording {
            first_list,
            watch_chunks,
            final_list,
        }
    }
}

/// Serves the first list, then the recorded watch stream, then the final state: every later
/// list gets the final state and every later watch stays open without events.
struct InMemory {
    recording: Arc<Recording>,
    lists: Arc<AtomicUsize>,
    watches: AtomicUsize,
}

impl ListerWatcher<Cm> for InMemory {
    async fn list(&self, _: &ListParams) -> Result<ObjectList<Cm>, ListWatchError> {
        let bytes = match self.lists.fetch_add(1, Ordering::Relaxed) {
            0 => &self.recording.first_list,
            _ => &self.recording.final_list,
        };
        serde_json::from_slice(bytes).map_err(|error| ListWatchError::Decode(Box::new(error)))
    }

    async fn watch(&self, _: &WatchParams) -> Result<Watch<Cm>, ListWatchError> {
        let chunks = match self.watches.fetch_add(1, Ordering::Relaxed) {
            0 => self.recording.watch_chunks.iter().cloned().collect(),
            _ => VecDeque::new(),
        };
        Ok(Watch::new(OpenBody(chunks)))
    }

    fn supports_watch_list(&self) -> bool {
        false
    }
}

/// A response body that hands out its chunks, then stays open (a watch with nothing more to
/// say).
struct OpenBody(VecDeque<Bytes>);

impl Body for OpenBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.0.pop_front() {
            Some(chunk) => Poll::Ready(Some(Ok(Frame::data(chunk)))),
            None => Poll::Pending,
        }
    }
}

/// What the handler was told.
#[derive(Default)]
struct Counts {
    adds: AtomicUsize,
    updates: AtomicUsize,
    deletes: AtomicUsize,
    changed: Notify,
}

impl Counts {
    fn bump(&self, counter: &AtomicUsize) {
        counter.fetch_add(1, Ordering::Relaxed);
        self.changed.notify_one();
    }

    /// (adds, updates, deletes)
    fn get(&self) -> (usize, usize, usize) {
        (
            self.adds.load(Ordering::Relaxed),
            self.updates.load(Ordering::Relaxed),
            self.deletes.load(Ordering::Relaxed),
        )
    }
}

/// The final state as the handler sees it: every object added by the first list, updated by
/// the watch and again by the relist, and the deletions.
const FINAL_COUNTS: (usize, usize, usize) = (OBJECTS, MODIFIED + REMAINING, DELETED);

/// Runs the scenario; returns the informer so that it is dropped after the figures are taken.
async fn scenario(recording: Arc<Recording>) -> SharedIndexInformer<Cm> {
    let lists = Arc::new(AtomicUsize::new(0));
    let informer = SharedIndexInformer::new(
        InMemory {
            recording,
            lists: lists.clone(),
            watches: AtomicUsize::new(0),
        },
        Indexers::namespace(),
        SharedInformerOptions {
            name: "alloc-baseline".into(),
            ..SharedInformerOptions::default()
        },
    );
    let counts = Arc::new(Counts::default());
    let handler = {
        let (on_add, on_update, on_delete) = (counts.clone(), counts.clone(), counts.clone());
        ResourceEventHandlerFuncs::new()
            .add_func(move |_: &Arc<Cm>, _| on_add.bump(&on_add.adds))
            .update_func(move |_: &Arc<Cm>, _: &Arc<Cm>| on_update.bump(&on_update.updates))
            .delete_func(move |_: DeleteEvent<Cm>| on_delete.bump(&on_delete.deletes))
    };
    informer
        .add_event_handler(handler)
        .expect("the handler registers");

    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });

    let deadline = tokio::time::Instant::now() + WAIT_LIMIT;
    let done = || {
        counts.get() == FINAL_COUNTS
            && informer.indexer().len() == REMAINING
            && lists.load(Ordering::Relaxed) == 2
    };
    loop {
        let changed = counts.changed.notified();
        if done() {
            break;
        }
        if tokio::time::timeout_at(deadline, changed).await.is_err() {
            let (adds, updates, deletes) = counts.get();
            panic!(
                "the informer did not reach the final state: the handler saw {adds} adds, \
                 {updates} updates and {deletes} deletes (expected {FINAL_COUNTS:?}), the store \
                 holds {} objects (expected {REMAINING}), {} list(s) (expected 2)",
                informer.indexer().len(),
                lists.load(Ordering::Relaxed),
            );
        }
    }
    cancel.cancel();
    run.await.expect("the informer stops");
    informer
}

fn check_final_state(informer: &SharedIndexInformer<Cm>) {
    let data_k = |i: usize| -> Option<String> {
        let cm = informer
            .indexer()
            .get_by_key(&format!("{NAMESPACE}/{}", name(i)))?;
        let data: Option<std::collections::BTreeMap<String, String>> =
            cm.field("data").expect("data decodes");
        data.and_then(|mut d| d.remove("k"))
    };
    assert!(data_k(0).is_some_and(|k| k.starts_with("round-1-")));
    assert!(data_k(MODIFIED).is_some_and(|k| k.starts_with("round-0-")));
    assert_eq!(data_k(REMAINING), None, "a deleted ConfigMap is gone");
    assert_eq!(
        informer.last_sync_resource_version(),
        (OBJECTS + MODIFIED + DELETED).to_string()
    );
}

fn measure() -> Figures {
    // Testing mode writes no profile file; only the counts are read, so backtraces are kept
    // to the fewest frames dhat allows, for speed.
    let _profiler = dhat::Profiler::builder()
        .testing()
        .trim_backtraces(Some(4))
        .build();
    let recording = Arc::new(Recording::new());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        // The handler's batches run on the blocking pool; with more than one thread allowed,
        // a batch handed over before the previous thread is idle again spawns another, as
        // timing has it.
        .max_blocking_threads(1)
        .thread_keep_alive(Duration::from_secs(3600))
        .build()
        .expect("a tokio runtime");
    // That thread is started now: what starting a thread costs (more when the test harness
    // captures output) is not the informer's.
    runtime
        .block_on(async { tokio::task::spawn_blocking(|| ()).await })
        .expect("the blocking pool runs a task");

    let start = dhat::HeapStats::get();
    let informer = runtime.block_on(scenario(recording.clone()));
    let end = dhat::HeapStats::get();

    assert!(
        end.max_bytes > start.max_bytes,
        "the peak was reached while the input was prepared, not during the scenario"
    );
    check_final_state(&informer);
    drop(informer);
    drop(runtime);
    Figures {
        scenario: SCENARIO.to_owned(),
        total_blocks: end.total_blocks - start.total_blocks,
        total_bytes: end.total_bytes - start.total_bytes,
        max_bytes: end.max_bytes.saturating_sub(start.curr_bytes) as u64,
    }
}

fn baseline_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(BASELINE_FILE)
}

/// `(name, measured, baseline)` for each figure.
fn pairs(measured: &Figures, baseline: &Figures) -> [(&'static str, u64, u64); 3] {
    [
        ("total_blocks", measured.total_blocks, baseline.total_blocks),
        ("total_bytes", measured.total_bytes, baseline.total_bytes),
        ("max_bytes", measured.max_bytes, baseline.max_bytes),
    ]
}

#[test]
fn informer_allocations_stay_within_the_baseline() {
    let figures = measure();
    println!(
        "{}",
        serde_json::json!({
            "total_blocks": figures.total_blocks,
            "total_bytes": figures.total_bytes,
            "max_bytes": figures.max_bytes,
        })
    );

    let path = baseline_path();
    match std::env::var(BASELINE_ENV).as_deref() {
        Ok("update") => {
            let mut json = serde_json::to_string_pretty(&figures).expect("figures serialize");
            json.push('\n');
            std::fs::write(&path, json)
                .unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
            println!("wrote the baseline {}", path.display());
            return;
        }
        Ok(other) => panic!("{BASELINE_ENV}={other:?}: the only value understood is `update`"),
        Err(_) => {}
    }

    let text = std::fs::read_to_string(&path).unwrap_or_else(|error| {
        panic!(
            "cannot read the baseline {}: {error}; create it with `{REFRESH}`",
            path.display()
        )
    });
    let baseline: Figures = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("the baseline {} is not valid: {error}", path.display()));

    let mut over = Vec::new();
    for (figure, now, base) in pairs(&figures, &baseline) {
        let change = (now as f64 - base as f64) / (base.max(1) as f64);
        let line = format!(
            "{figure}: {now} now, {base} in the baseline ({:+.1}%)",
            change * 100.0
        );
        if change > TOLERANCE {
            over.push(line);
        } else if change < -TOLERANCE {
            println!(
                "note: {line}, more than {:.0}% below; refresh the baseline with `{REFRESH}` \
                 and commit {}",
                TOLERANCE * 100.0,
                path.display()
            );
        }
    }
    assert!(
        over.is_empty(),
        "the informer's heap profile grew more than {:.0}% over the baseline {}:\n  {}\n\
         If the growth is intended, refresh the baseline with `{REFRESH}` and commit the file.",
        TOLERANCE * 100.0,
        path.display(),
        over.join("\n  "),
    );
}
