//! Ports of client-go's `the_real_fifo_test.go` (non-atomic mode), each named after the test
//! it mirrors, and the atomic-mode tests (`TestRealFIFO_ReplaceAtomic`, `_ResyncAtomic`, ...).

mod cache_support;

use std::sync::Arc;
use std::time::Duration;

use cache_support::deltas::*;
use cache_support::{Obj, obj};
use clientgo_informer::{Delta, Deltas, RealFIFO, ReflectorStore};

fn fifo_with(objects: Vec<Obj>) -> RealFIFO<Obj> {
    RealFIFO::with_known_objects(Arc::new(Known(objects)))
}

async fn pop(f: &RealFIFO<Obj>) -> Deltas<Obj> {
    f.pop(|deltas, _| deltas).await.expect("queue closed")
}

async fn pop_value(f: &RealFIFO<Obj>) -> i64 {
    pop(f).await[0].object().expect("an object").value
}

/// Pops everything queued, one delta per pop.
async fn drain(f: &RealFIFO<Obj>) -> Vec<Delta<Obj>> {
    let mut all = Vec::new();
    while !f.is_empty() {
        let deltas = pop(f).await;
        assert_eq!(deltas.len(), 1, "a RealFIFO pops one delta at a time");
        all.extend(deltas);
    }
    all
}

// client-go: TestRealFIFO_basic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn real_fifo_basic() {
    let f = Arc::new(fifo_with(vec![]));
    const AMOUNT: i64 = 500;
    let producers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let f = f.clone();
            std::thread::spawn(move || {
                for i in 0..AMOUNT {
                    f.add(obj(&format!("{prefix}{i}"), i + 1));
                }
            })
        })
        .collect();
    let (mut last_a, mut last_b) = (0, 0);
    for _ in 0..AMOUNT * 2 {
        let deltas = pop(&f).await;
        let o = deltas[0].object().unwrap();
        let last = if o.metadata.name.starts_with('a') {
            &mut last_a
        } else {
            &mut last_b
        };
        assert!(o.value > *last, "{} out of order after {}", o.value, *last);
        *last = o.value;
    }
    for p in producers {
        p.join().unwrap();
    }
}

// client-go: TestRealFIFO_replaceWithDeleteDeltaIn.
#[tokio::test]
async fn real_fifo_replace_with_delete_delta_in() {
    let f = fifo_with(vec![obj("foo", 1)]);
    f.delete(obj("foo", 1));
    f.replace(vec![obj("foo", 2)], String::new());
    assert_eq!(
        drain(&f).await,
        [deleted(obj("foo", 1)), replaced(obj("foo", 2))]
    );
}

// client-go: TestRealFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue.
#[tokio::test]
async fn real_fifo_replace_makes_deletions_for_objects_only_in_queue() {
    let o = obj("foo", 2);
    let o2 = obj("foo", 3);
    type Ops = fn(&RealFIFO<Obj>);
    let table: Vec<(&str, Ops, Vec<Delta<Obj>>)> = vec![
        (
            "Added object should be deleted on Replace",
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![], "0".into());
            },
            vec![added(o.clone()), tombstone("foo", Some(o.clone()))],
        ),
        (
            "Deleted object should have only a single Delete",
            |f| {
                f.add(obj("foo", 2));
                f.delete(obj("foo", 2));
                f.replace(vec![], "0".into());
            },
            vec![added(o.clone()), deleted(o.clone())],
        ),
        (
            "Synced objects should have a single delete",
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![obj("foo", 2)], "0".into());
                f.replace(vec![obj("foo", 2)], "0".into());
                f.replace(vec![], "0".into());
            },
            vec![
                added(o.clone()),
                replaced(o.clone()),
                replaced(o.clone()),
                tombstone("foo", Some(o.clone())),
            ],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![], "0".into());
                f.replace(vec![], "1".into());
            },
            vec![added(o.clone()), tombstone("foo", Some(o.clone()))],
        ),
        (
            "Added and deleted and added object should be deleted",
            |f| {
                f.add(obj("foo", 2));
                f.delete(obj("foo", 2));
                f.add(obj("foo", 3));
                f.replace(vec![], "0".into());
            },
            vec![
                added(o.clone()),
                deleted(o.clone()),
                added(o2.clone()),
                tombstone("foo", Some(o2.clone())),
            ],
        ),
    ];
    for (name, operations, expected) in table {
        let f = fifo_with(vec![]);
        operations(&f);
        assert_eq!(drain(&f).await, expected, "{name}");
    }
}

// client-go: TestRealFIFO_addUpdate.
#[tokio::test]
async fn real_fifo_add_update() {
    let f = fifo_with(vec![]);
    f.add(obj("foo", 10));
    f.update(obj("foo", 12));
    f.delete(obj("foo", 15));
    assert_eq!(f.len(), 3, "every event is queued");
    for expected in [10, 12, 15] {
        assert_eq!(pop_value(&f).await, expected);
    }
    f.close();
    assert!(f.pop(|d, _| d).await.is_none());
}

// client-go: TestRealFIFO_transformer.
#[tokio::test]
async fn real_fifo_transformer() {
    let f = fifo_with(vec![]).with_transform(|mut o: Obj| {
        o.transforms += 1;
        o
    });
    f.add(obj("foo", 10));
    f.add(obj("bar", 11));
    f.update(obj("foo", 12));
    f.delete(obj("foo", 15));
    f.replace(vec![], String::new());
    f.add(obj("bar", 16));
    f.replace(vec![], String::new());
    let x = |mut o: Obj| {
        o.transforms = 1;
        o
    };
    assert_eq!(
        drain(&f).await,
        [
            added(x(obj("foo", 10))),
            added(x(obj("bar", 11))),
            updated(x(obj("foo", 12))),
            deleted(x(obj("foo", 15))),
            tombstone("bar", Some(x(obj("bar", 11)))),
            added(x(obj("bar", 16))),
            tombstone("bar", Some(x(obj("bar", 16)))),
        ]
    );
}

// client-go: TestRealFIFO_enqueueingNoLister.
#[tokio::test]
async fn real_fifo_enqueueing_no_lister() {
    let f = fifo_with(vec![]);
    f.add(obj("foo", 10));
    f.update(obj("bar", 15));
    f.add(obj("qux", 17));
    f.delete(obj("qux", 18));
    f.delete(obj("baz", 20)); // a RealFIFO queues everything
    for expected in [10, 15, 17, 18, 20] {
        assert_eq!(pop_value(&f).await, expected);
    }
    assert!(f.is_empty());
}

// client-go: TestRealFIFO_enqueueingWithLister.
#[tokio::test]
async fn real_fifo_enqueueing_with_lister() {
    let f = fifo_with(foo_bar_baz());
    f.add(obj("foo", 10));
    f.update(obj("bar", 15));
    f.delete(obj("baz", 20));
    for expected in [10, 15, 20] {
        assert_eq!(pop_value(&f).await, expected);
    }
    assert!(f.is_empty());
}

// client-go: TestRealFIFO_addReplace.
#[tokio::test]
async fn real_fifo_add_replace() {
    let f = fifo_with(vec![]);
    f.add(obj("foo", 10));
    f.replace(vec![obj("foo", 15)], "0".into());
    assert_eq!(pop_value(&f).await, 10);
    assert_eq!(pop_value(&f).await, 15);
    assert!(f.is_empty());
}

// client-go: TestRealFIFO_ResyncNonExisting.
#[tokio::test]
async fn real_fifo_resync_non_existing() {
    let f = fifo_with(vec![obj("foo", 5)]);
    f.delete(obj("foo", 10));
    f.resync();
    assert_eq!(drain(&f).await, [deleted(obj("foo", 10))]);
}

// client-go: TestRealFIFO_Resync.
#[tokio::test]
async fn real_fifo_resync() {
    let f = fifo_with(vec![obj("foo", 5)]);
    f.resync();
    assert_eq!(drain(&f).await, [Delta::Sync(Arc::new(obj("foo", 5)))]);
}

// client-go: TestRealFIFO_DeleteExistingNonPropagated.
#[tokio::test]
async fn real_fifo_delete_existing_non_propagated() {
    let f = fifo_with(vec![]);
    f.add(obj("foo", 5));
    f.delete(obj("foo", 6));
    assert_eq!(
        drain(&f).await,
        [added(obj("foo", 5)), deleted(obj("foo", 6))]
    );
}

// client-go: TestRealFIFO_ReplaceMakesDeletions (deletions come before replacements).
#[tokio::test]
async fn real_fifo_replace_makes_deletions() {
    let f = fifo_with(foo_bar_baz());
    f.delete(obj("baz", 10));
    f.replace(vec![obj("foo", 5)], "0".into());
    assert_eq!(
        drain(&f).await,
        [
            deleted(obj("baz", 10)),
            tombstone("bar", Some(obj("bar", 6))),
            replaced(obj("foo", 5)),
        ]
    );

    let f = fifo_with(foo_bar_baz());
    f.add(obj("baz", 10));
    f.replace(vec![obj("foo", 5)], "0".into());
    assert_eq!(
        drain(&f).await,
        [
            added(obj("baz", 10)),
            tombstone("baz", Some(obj("baz", 10))),
            tombstone("bar", Some(obj("bar", 6))),
            replaced(obj("foo", 5)),
        ]
    );

    let f = fifo_with(foo_bar_baz());
    f.delete(obj("bar", 6));
    f.add(obj("bar", 100));
    f.replace(vec![obj("foo", 5)], "0".into());
    assert_eq!(
        drain(&f).await,
        [
            deleted(obj("bar", 6)),
            added(obj("bar", 100)),
            tombstone("bar", Some(obj("bar", 100))),
            tombstone("baz", Some(obj("baz", 7))),
            replaced(obj("foo", 5)),
        ]
    );

    let f = fifo_with(foo_bar_baz());
    f.replace(vec![obj("bar", 100), obj("foo", 5)], "0".into());
    f.replace(vec![obj("foo", 5)], "0".into());
    assert_eq!(
        drain(&f).await,
        [
            tombstone("baz", Some(obj("baz", 7))),
            replaced(obj("bar", 100)),
            replaced(obj("foo", 5)),
            tombstone("bar", Some(obj("bar", 100))),
            replaced(obj("foo", 5)),
        ]
    );

    let f = fifo_with(vec![]);
    f.add(obj("baz", 10));
    f.replace(vec![obj("foo", 5)], "0".into());
    assert_eq!(
        drain(&f).await,
        [
            added(obj("baz", 10)),
            tombstone("baz", Some(obj("baz", 10))),
            replaced(obj("foo", 5)),
        ]
    );
}

// client-go: TestRealFIFO_UpdateResyncRace.
#[tokio::test]
async fn real_fifo_update_resync_race() {
    let f = fifo_with(vec![obj("foo", 5)]);
    f.update(obj("foo", 6));
    f.resync();
    assert_eq!(drain(&f).await, [updated(obj("foo", 6))]);
}

// client-go: TestRealFIFO_HasSyncedCorrectOnDeletion.
#[tokio::test]
async fn real_fifo_has_synced_correct_on_deletion() {
    let f = fifo_with(foo_bar_baz());
    f.replace(vec![obj("foo", 5)], "0".into());
    for expected in [
        tombstone("bar", Some(obj("bar", 6))),
        tombstone("baz", Some(obj("baz", 7))),
        replaced(obj("foo", 5)),
    ] {
        assert!(!f.has_synced());
        let (deltas, initial) = f.pop(|d, initial| (d, initial)).await.unwrap();
        assert_eq!(deltas, [expected]);
        assert!(initial);
    }
    assert!(f.has_synced());
}

// client-go: TestRealFIFO_detectLineJumpers (every event in order).
#[tokio::test]
async fn real_fifo_detect_line_jumpers() {
    let f = fifo_with(vec![]);
    f.add(obj("foo", 10));
    f.add(obj("bar", 1));
    f.add(obj("foo", 11));
    f.add(obj("foo", 13));
    f.add(obj("zab", 30));
    assert_eq!(pop_value(&f).await, 10);
    f.add(obj("foo", 14));
    for expected in [1, 11, 13, 30, 14] {
        assert_eq!(pop_value(&f).await, expected);
    }
}

// client-go: TestRealFIFO_HasSynced.
#[tokio::test]
async fn real_fifo_has_synced() {
    let f = fifo_with(vec![]);
    assert!(!f.has_synced());
    let f = fifo_with(vec![]);
    f.add(obj("a", 1));
    assert!(f.has_synced(), "an event before any list");
    let f = fifo_with(vec![]);
    f.replace(vec![], "0".into());
    assert!(f.has_synced(), "an empty list");
    let f = fifo_with(vec![]);
    f.replace(vec![obj("a", 1), obj("b", 2)], "0".into());
    assert!(!f.has_synced());
    pop(&f).await;
    assert!(!f.has_synced());
    pop(&f).await;
    assert!(f.has_synced());
    // Duplicate keys: every event is delivered, so both must be popped.
    let f = fifo_with(vec![]);
    f.replace(vec![obj("a", 1), obj("a", 2)], "0".into());
    pop(&f).await;
    assert!(!f.has_synced());
    pop(&f).await;
    assert!(f.has_synced());
}

// client-go: TestRealFIFO_PopShouldUnblockWhenClosed.
#[tokio::test(start_paused = true)]
async fn real_fifo_pop_should_unblock_when_closed() {
    for f in [
        Arc::new(fifo_with(vec![obj("foo", 5)])),
        Arc::new(RealFIFO::new()),
    ] {
        let pops: Vec<_> = (0..10)
            .map(|_| {
                let f = f.clone();
                tokio::spawn(async move { f.pop(|d, _| d).await })
            })
            .collect();
        cache_support::settle().await;
        f.close();
        for p in pops {
            let popped = tokio::time::timeout(Duration::from_millis(500), p)
                .await
                .expect("pop returned after close")
                .unwrap();
            assert!(popped.is_none());
        }
    }
}

// client-go: TestRealFIFO_ReplaceAtomic / _ReplaceAtomicPop.
#[tokio::test]
async fn real_fifo_replace_atomic() {
    let f = RealFIFO::<Obj>::new();
    assert!(f.is_atomic());
    f.replace(vec![obj("a", 1), obj("b", 2)], "10".into());
    f.add(obj("c", 3));
    f.replace(vec![obj("c", 4)], "20".into());
    assert_eq!(f.len(), 3, "one delta per relist");
    assert!(!f.has_synced());
    let (deltas, initial) = f.pop(|d, initial| (d, initial)).await.unwrap();
    assert!(initial);
    assert_eq!(
        deltas,
        [Delta::ReplacedAll {
            objects: vec![Arc::new(obj("a", 1)), Arc::new(obj("b", 2))],
            resource_version: "10".into(),
        }]
    );
    assert!(f.has_synced(), "the initial population was one delta");
    let (deltas, initial) = f.pop(|d, initial| (d, initial)).await.unwrap();
    assert_eq!((deltas, initial), (vec![added(obj("c", 3))], false));
    let deltas = pop(&f).await;
    assert!(
        matches!(&deltas[0], Delta::ReplacedAll { resource_version, .. } if resource_version == "20")
    );
}

// client-go: TestRealFIFO_ResyncAtomic, and bookmarks (EmitDeltaTypeBookmark).
#[tokio::test]
async fn real_fifo_resync_atomic_and_bookmarks() {
    let f = RealFIFO::<Obj>::new().with_transform(|mut o| {
        o.transforms += 1;
        o
    });
    f.resync();
    f.bookmark("42");
    f.update(obj("a", 1));
    assert_eq!(
        drain(&f).await,
        [
            Delta::SyncAll,
            Delta::Bookmark {
                resource_version: "42".into()
            },
            updated(Obj {
                transforms: 1,
                ..obj("a", 1)
            }),
        ]
    );
    // A non-atomic queue has no bookmark deltas.
    let f = fifo_with(vec![]);
    f.bookmark("1");
    assert!(f.is_empty());
}

// The atomic queue processes with its lock released: a reflector can push while an item is
// being processed, and the synced flag waits for the end of processing.
#[tokio::test]
async fn real_fifo_unlocks_while_processing_and_syncs_after_processing() {
    let f = RealFIFO::<Obj>::new();
    f.replace(vec![obj("a", 1)], "1".into());
    f.pop(|_, initial| {
        assert!(initial);
        f.add(obj("b", 2)); // would deadlock if the lock were held
        assert!(!f.has_synced(), "not synced before processing returns");
    })
    .await
    .unwrap();
    assert!(f.has_synced());
    assert_eq!(pop_value(&f).await, 2);
}
