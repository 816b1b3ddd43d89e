//! Manual shared informers for tests: build, start, stop, and wait for a handler's view.

use std::collections::BTreeSet;
use std::time::Duration;

use clientgo_informer::{Indexers, QueueKind, SharedIndexInformer, SharedInformerOptions};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use super::{Obj, Recorder, eventually};

pub const WAIT: Duration = Duration::from_secs(10);

pub fn informer(resync: Duration) -> SharedIndexInformer<Obj> {
    informer_with(resync, QueueKind::RealFifo)
}

pub fn informer_with(resync: Duration, queue: QueueKind) -> SharedIndexInformer<Obj> {
    SharedIndexInformer::new_manual(
        Indexers::namespace(),
        SharedInformerOptions {
            name: "pods".into(),
            resync_period: resync,
            queue,
            ..SharedInformerOptions::default()
        },
    )
}

pub fn start(informer: &SharedIndexInformer<Obj>) -> (CancellationToken, JoinHandle<()>) {
    let cancel = CancellationToken::new();
    let task = {
        let informer = informer.clone();
        let cancel = cancel.clone();
        tokio::spawn(async move { informer.run(cancel).await })
    };
    (cancel, task)
}

pub async fn stop(cancel: CancellationToken, task: JoinHandle<()>) {
    cancel.cancel();
    task.await.unwrap();
}

pub fn names(recorder: &Recorder) -> BTreeSet<String> {
    recorder
        .snapshot()
        .iter()
        .map(|e| e.key().to_owned())
        .collect()
}

pub fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Waits until `recorder` saw exactly the objects `expected`, then lets stragglers arrive
/// and checks again (client-go's `testListener.ok`).
pub async fn ok(recorder: &Recorder, expected: &[&str]) {
    let expected = set(expected);
    eventually("the expected objects", WAIT, || names(recorder) == expected).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(names(recorder), expected, "no straggler");
}
