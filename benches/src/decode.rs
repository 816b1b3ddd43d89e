//! The decode workloads: D1 (a PodList of 10,000 pods from bytes into the objects a store
//! would hold) and W1 (a recorded watch stream of pod events through `Watch<T>`).
//!
//! Two forms of a pod are decoded:
//!
//! * [`LeanPod`], the form a cache holds: apimachinery's [`Compact<Pod>`](Compact)
//!   (metadata parsed with its strings packed, `managedFields` and everything else kept as
//!   raw JSON text, validated but not built into a tree; see `apimachinery/src/compact/`).
//!   This is the main figure. Because it leaves the spec and status undecoded, D1 also
//!   reports `typed_view_mb_per_s`: the cost of materializing k8s-openapi's typed `Pod`
//!   ([`Compact::to_typed`]) of all 10,000 pods, and `lean_then_view_mb_per_s`, both steps
//!   together.
//! * k8s-openapi's typed `Pod` (through the apimachinery crate's `k8s-openapi` feature), as
//!   client-go's typed decode and kube-rs do it: workload `D1typed`.
//!
//! `mb_per_s` times the first decode of the process, on a heap that has held no list yet: the
//! peers' harnesses time one decode per process, so this is the figure that compares with
//! theirs. The process then decodes `D1_ROUNDS - 1` more times, each list dropped before the
//! next: `warm_mb_per_s` is their median, the decode of a process whose allocator reuses the
//! memory a previous list freed (as a controller's relist does). No peer reports it.
//!
//! The first decode's kernel time and minor page faults are reported too
//! (`first_sys_ms`, `first_minor_faults`): the pages of a new heap are mapped and zeroed at
//! their first touch, a cost of the objects' size that every reader building them pays. For
//! the typed form, `clone_mb_per_s` then times a `clone` of the first list while it is still
//! alive (so onto fresh pages, as the first decode's objects went): the same objects built
//! with nothing read at all, the ceiling of any JSON reader that builds k8s-openapi's types,
//! and so of D1 typed's ratio to a peer building them (kube-rs). Its memory, freed with the
//! first list, is there for the warm decodes to reuse too.
//!
//! MB/s use the input size in 10^6 bytes, as the plan asks; `bytes_per_object` is the resident
//! memory the decoded list adds (after returning freed memory to the OS), per pod;
//! `peak_rss_kb` is the peak of the decodes (input bytes included), read before the clone and
//! before D1's typed views are built (`view_peak_rss_kb` is the peak with the views).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use clientgo_apimachinery::{Compact, ObjectList};
use clientgo_watch::Watch;
use http_body::{Body, Frame};
use k8s_openapi::api::core::v1::Pod;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::{median, pods, process};

/// D1's pod count.
pub const D1_PODS: usize = 10_000;
/// Timed decodes per D1 run (the median is reported).
const D1_ROUNDS: usize = 5;
/// W1's event count, the distinct pods among them and the transport's chunk size.
pub const W1_EVENTS: usize = 10_000;
const W1_PODS: usize = 2_000;
const W1_CHUNK: usize = 16 * 1024;

/// A pod as a cache holds it. See the module documentation.
pub type LeanPod = Compact<Pod>;

/// Decodes a PodList into lean pods, as the rest client decodes a response body.
pub fn decode_lean(bytes: &[u8]) -> ObjectList<LeanPod> {
    clientgo_rest::json::from_slice(bytes).expect("the PodList decodes as lean pods")
}

/// Decodes a PodList into k8s-openapi's typed pods, as the rest client decodes a response
/// body.
pub fn decode_typed(bytes: &[u8]) -> ObjectList<Pod> {
    clientgo_rest::json::from_slice(bytes).expect("the PodList decodes as typed pods")
}

fn mb_per_s(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / 1e6 / time.as_secs_f64()
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let out = f();
    (out, start.elapsed())
}

/// D1 for one form: decode `D1_ROUNDS` times, report the first decode and the median of the
/// others (see the module documentation), memory, `first_extra` figures computed on the
/// first list while it is alive, and `extra` figures computed on a list decoded last.
fn d1_with<T>(
    decode: impl Fn(&[u8]) -> ObjectList<T>,
    first_extra: impl FnOnce(&ObjectList<T>, usize) -> Vec<(&'static str, Value)>,
    extra: impl FnOnce(&ObjectList<T>, usize) -> Vec<(&'static str, Value)>,
    form: &str,
) -> Value {
    let (input, source) = pods::podlist(D1_PODS);
    let before = process::resident_bytes_trimmed().unwrap_or(0);
    let usage = process::usage();
    let (list, first) = timed(|| decode(&input));
    let first_usage = process::usage() - usage;
    let after = process::resident_bytes_trimmed().unwrap_or(0);
    let pods = list.items.len();
    assert_eq!(pods, D1_PODS, "the PodList has {D1_PODS} pods");
    // The peak of the decode alone, before a clone or the typed views add theirs.
    let peak = process::peak_rss_kib().unwrap_or(0);
    let first_extras = first_extra(&list, input.len());
    drop(list);
    let mut warm = Vec::new();
    for _ in 1..D1_ROUNDS {
        let (list, time) = timed(|| decode(&input));
        warm.push(time.as_secs_f64());
        drop(list);
    }
    let time = first;
    let warm = Duration::from_secs_f64(median(&mut warm).unwrap_or(0.0));
    let extras = extra(&decode(&input), input.len());
    let mut figures = json!({
        "form": form,
        "source": source.as_str(),
        "pods": pods,
        "input_bytes": input.len(),
        "mb_per_s": mb_per_s(input.len(), time),
        "warm_mb_per_s": mb_per_s(input.len(), warm),
        "objects_per_s": pods as f64 / time.as_secs_f64(),
        "bytes_per_object": after.saturating_sub(before) / pods as u64,
        "peak_rss_kb": peak,
        "first_sys_ms": first_usage.system_s * 1e3,
        "first_minor_faults": first_usage.minor_faults,
    });
    for (key, value) in first_extras.into_iter().chain(extras) {
        figures[key] = value;
    }
    figures
}

/// D1, the lean form, with the cost of a typed view of every pod.
pub fn d1() -> Value {
    let mut figures = d1_with(
        decode_lean,
        |_, _| Vec::new(),
        |list, input| {
            let (views, view_time) = timed(|| {
                list.items
                    .iter()
                    .map(|p| p.to_typed().expect("the typed pod decodes"))
                    .collect::<Vec<Pod>>()
            });
            std::hint::black_box(&views);
            vec![
                ("typed_view_mb_per_s", json!(mb_per_s(input, view_time))),
                ("typed_view_ms", json!(view_time.as_secs_f64() * 1e3)),
                // Input, lean list and the 10,000 typed views, all alive at once.
                (
                    "view_peak_rss_kb",
                    json!(process::peak_rss_kib().unwrap_or(0)),
                ),
            ]
        },
        "lean",
    );
    // Both steps: what a consumer pays who needs a typed view of every pod.
    let decode_s = figures["input_bytes"].as_f64().unwrap_or(0.0)
        / 1e6
        / figures["mb_per_s"].as_f64().unwrap_or(f64::INFINITY);
    let view_s = figures["typed_view_ms"].as_f64().unwrap_or(0.0) / 1e3;
    let input = figures["input_bytes"].as_f64().unwrap_or(0.0);
    figures["lean_then_view_mb_per_s"] = json!(input / 1e6 / (decode_s + view_s));
    figures
}

/// D1 into k8s-openapi's typed `Pod`, with the ceiling of any reader building that type (see
/// the module documentation).
pub fn d1_typed() -> Value {
    d1_with(
        decode_typed,
        |list, input| {
            let usage = process::usage();
            let (copy, time) = timed(|| list.items.clone());
            let usage = process::usage() - usage;
            assert_eq!(copy.len(), list.items.len());
            drop(copy);
            vec![
                ("clone_mb_per_s", json!(mb_per_s(input, time))),
                ("clone_sys_ms", json!(usage.system_s * 1e3)),
                ("clone_minor_faults", json!(usage.minor_faults)),
            ]
        },
        |_, _| Vec::new(),
        "k8s-openapi Pod",
    )
}

/// A response body of recorded chunks.
pub struct Recorded(VecDeque<Bytes>);

impl Recorded {
    /// A body handing out `chunks` one by one.
    pub fn new(chunks: &[Bytes]) -> Recorded {
        Recorded(chunks.iter().cloned().collect())
    }
}

impl Body for Recorded {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Poll::Ready(self.0.pop_front().map(|b| Ok(Frame::data(b))))
    }
}

/// Decodes every event of `chunks` as `T`; returns how many there were.
pub async fn decode_watch<T: DeserializeOwned>(chunks: &[Bytes]) -> usize {
    let mut watch = Watch::<T>::new(Recorded::new(chunks));
    let mut events = 0;
    while let Some(event) = watch.next().await {
        std::hint::black_box(event.expect("every event decodes"));
        events += 1;
    }
    events
}

/// W1: the recorded stream through `Watch<LeanPod>` and `Watch<Pod>`.
pub fn w1() -> Value {
    let (chunks, total) = pods::watch_stream(W1_EVENTS, W1_PODS, W1_CHUNK);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let measure = |typed: bool| {
        let mut times = Vec::new();
        for _ in 0..D1_ROUNDS {
            let (events, time) = timed(|| {
                runtime.block_on(async {
                    if typed {
                        decode_watch::<Pod>(&chunks).await
                    } else {
                        decode_watch::<LeanPod>(&chunks).await
                    }
                })
            });
            assert_eq!(events, W1_EVENTS);
            times.push(time.as_secs_f64());
        }
        median(&mut times).unwrap_or(0.0)
    };
    let lean = measure(false);
    let typed = measure(true);
    json!({
        "events": W1_EVENTS,
        "stream_bytes": total,
        "chunk_bytes": W1_CHUNK,
        "events_per_s": W1_EVENTS as f64 / lean,
        "mb_per_s": total as f64 / 1e6 / lean,
        "typed_events_per_s": W1_EVENTS as f64 / typed,
        "typed_mb_per_s": total as f64 / 1e6 / typed,
        "peak_rss_kb": process::peak_rss_kib().unwrap_or(0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use clientgo_apimachinery::Object;

    #[test]
    fn lean_and_typed_forms_agree() {
        let bytes = pods::generate(50, 3);
        let lean = decode_lean(&bytes);
        let typed = decode_typed(&bytes);
        assert_eq!(lean.items.len(), 50);
        for (l, t) in lean.items.iter().zip(&typed.items) {
            assert_eq!(Some(l.name()), t.metadata.name.as_deref());
            assert!(l.metadata.managed_fields().is_some());
            assert_eq!(&l.to_typed().unwrap(), t);
        }
    }

    #[test]
    fn the_watch_stream_decodes_in_both_forms() {
        let (chunks, _) = pods::watch_stream(30, 10, 777);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        assert_eq!(runtime.block_on(decode_watch::<LeanPod>(&chunks)), 30);
        assert_eq!(runtime.block_on(decode_watch::<Pod>(&chunks)), 30);
    }
}
