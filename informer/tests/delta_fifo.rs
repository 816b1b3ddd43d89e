//! Ports of client-go's `delta_fifo_test.go`, each named after the test it mirrors.

mod cache_support;

use std::sync::Arc;

use cache_support::deltas::*;
use cache_support::{Obj, obj};
use clientgo_informer::{
    DeleteEvent, Delta, DeltaFIFO, DeltaFIFOOptions, Deltas, KeyListerGetter, Queue, ReflectorStore,
};

fn known(objects: Vec<Obj>) -> Option<Arc<dyn KeyListerGetter<Obj>>> {
    Some(Arc::new(Known(objects)))
}

fn fifo() -> DeltaFIFO<Obj> {
    DeltaFIFO::new(DeltaFIFOOptions::default())
}

fn fifo_with(objects: Vec<Obj>) -> DeltaFIFO<Obj> {
    DeltaFIFO::new(DeltaFIFOOptions {
        known_objects: known(objects),
        ..DeltaFIFOOptions::default()
    })
}

async fn pop(f: &DeltaFIFO<Obj>) -> Deltas<Obj> {
    f.pop(|deltas, _| deltas).await.expect("queue closed")
}

/// The value of the newest delta's object (client-go's `testPop`).
async fn pop_value(f: &DeltaFIFO<Obj>) -> i64 {
    let deltas = pop(f).await;
    deltas
        .last()
        .and_then(Delta::object)
        .expect("an object")
        .value
}

// client-go: TestDeltaFIFO_basic.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delta_fifo_basic() {
    let f = Arc::new(fifo());
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

// client-go: TestDeltaFIFO_replaceWithDeleteDeltaIn.
#[tokio::test]
async fn delta_fifo_replace_with_delete_delta_in() {
    let f = fifo_with(vec![obj("foo", 1)]);
    f.delete(obj("foo", 1));
    f.replace(vec![obj("foo", 2)], String::new());
    assert_eq!(pop(&f).await, [deleted(obj("foo", 1)), sync(obj("foo", 2))]);
}

// client-go: TestDeltaFIFOW_ReplaceMakesDeletionsForObjectsOnlyInQueue.
#[tokio::test]
async fn delta_fifo_replace_makes_deletions_for_objects_only_in_queue() {
    let o = obj("foo", 2);
    let o2 = obj("foo", 3);
    type Ops = fn(&DeltaFIFO<Obj>);
    let table: Vec<(&str, bool, Ops, Vec<Delta<Obj>>)> = vec![
        (
            "Added object should be deleted on Replace",
            false,
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![], "0".into());
            },
            vec![added(o.clone()), tombstone("foo", Some(o.clone()))],
        ),
        (
            "Replaced object should have only a single Delete",
            true,
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![obj("foo", 2)], "0".into());
                f.replace(vec![], "0".into());
            },
            vec![
                added(o.clone()),
                replaced(o.clone()),
                tombstone("foo", Some(o.clone())),
            ],
        ),
        (
            "Deleted object should have only a single Delete",
            false,
            |f| {
                f.add(obj("foo", 2));
                f.delete(obj("foo", 2));
                f.replace(vec![], "0".into());
            },
            vec![added(o.clone()), deleted(o.clone())],
        ),
        (
            "Synced objects should have a single delete",
            false,
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![obj("foo", 2)], "0".into());
                f.replace(vec![obj("foo", 2)], "0".into());
                f.replace(vec![], "0".into());
            },
            vec![
                added(o.clone()),
                sync(o.clone()),
                sync(o.clone()),
                tombstone("foo", Some(o.clone())),
            ],
        ),
        (
            "Added objects should have a single delete on multiple Replaces",
            false,
            |f| {
                f.add(obj("foo", 2));
                f.replace(vec![], "0".into());
                f.replace(vec![], "1".into());
            },
            vec![added(o.clone()), tombstone("foo", Some(o.clone()))],
        ),
        (
            "Added and deleted and added object should be deleted",
            false,
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
    for (name, emit_replaced, operations, expected) in table {
        for known_objects in [known(vec![]), None] {
            let with_known = known_objects.is_some();
            let f = DeltaFIFO::new(DeltaFIFOOptions {
                known_objects,
                emit_delta_type_replaced: emit_replaced,
                transform: None,
            });
            operations(&f);
            assert_eq!(
                pop(&f).await,
                expected,
                "{name} (known objects: {with_known})"
            );
            assert!(f.is_empty(), "{name}: no extra deltas");
        }
    }
}

// client-go: TestDeltaFIFO_addUpdate.
#[tokio::test]
async fn delta_fifo_add_update() {
    let f = fifo();
    f.add(obj("foo", 10));
    f.update(obj("foo", 12));
    f.delete(obj("foo", 15));
    assert_eq!(f.list_keys(), ["foo"]);
    assert_eq!(f.get_by_key("foo").unwrap().len(), 3);
    assert_eq!(pop_value(&f).await, 15);
    assert!(f.get_by_key("foo").is_none(), "item did not get removed");
    f.close();
    assert!(f.pop(|d, _| d).await.is_none(), "no second value");
}

// client-go: TestDeltaFIFO_transformer.
#[tokio::test]
async fn delta_fifo_transformer() {
    let f = DeltaFIFO::new(DeltaFIFOOptions {
        transform: Some(Arc::new(|mut o: Obj| {
            o.transforms += 1;
            o
        })),
        ..DeltaFIFOOptions::default()
    });
    f.add(obj("foo", 10));
    f.add(obj("bar", 11));
    f.update(obj("foo", 12));
    f.delete(obj("foo", 15));
    f.replace(vec![], String::new());
    f.add(obj("bar", 16));
    f.replace(vec![], String::new());
    assert_eq!(f.list_keys(), ["foo", "bar"]);

    let foo = pop(&f).await;
    let Some(Delta::Deleted(DeleteEvent::Object(last))) = foo.last() else {
        panic!("expected a regular deletion of foo, got {foo:?}");
    };
    assert_eq!((last.value, last.transforms), (15, 1));
    assert!(foo.iter().all(|d| d.object().unwrap().transforms == 1));

    let bar = pop(&f).await;
    let Some(Delta::Deleted(DeleteEvent::Tombstone(t))) = bar.last() else {
        panic!("expected a tombstone deletion of bar, got {bar:?}");
    };
    let o = t.object.as_ref().unwrap();
    assert_eq!((t.key.as_str(), o.value, o.transforms), ("bar", 16, 1));
}

// client-go: TestDeltaFIFO_enqueueingNoLister.
#[tokio::test]
async fn delta_fifo_enqueueing_no_lister() {
    let f = fifo();
    f.add(obj("foo", 10));
    f.update(obj("bar", 15));
    f.add(obj("qux", 17));
    f.delete(obj("qux", 18));
    // This delete does not enqueue anything because baz doesn't exist.
    f.delete(obj("baz", 20));
    for expected in [10, 15, 18] {
        assert_eq!(pop_value(&f).await, expected);
    }
    assert!(f.is_empty());
}

// client-go: TestDeltaFIFO_enqueueingWithLister.
#[tokio::test]
async fn delta_fifo_enqueueing_with_lister() {
    let f = fifo_with(foo_bar_baz());
    f.add(obj("foo", 10));
    f.update(obj("bar", 15));
    // This delete does enqueue the deletion, because "baz" is known.
    f.delete(obj("baz", 20));
    for expected in [10, 15, 20] {
        assert_eq!(pop_value(&f).await, expected);
    }
    assert!(f.is_empty());
}

// client-go: TestDeltaFIFO_addReplace.
#[tokio::test]
async fn delta_fifo_add_replace() {
    let f = fifo();
    f.add(obj("foo", 10));
    f.replace(vec![obj("foo", 15)], "0".into());
    assert_eq!(pop_value(&f).await, 15);
    assert!(f.get_by_key("foo").is_none());
    f.close();
    assert!(f.pop(|d, _| d).await.is_none());
}

// client-go: TestDeltaFIFO_ResyncNonExisting.
#[test]
fn delta_fifo_resync_non_existing() {
    let f = fifo_with(vec![obj("foo", 5)]);
    f.delete(obj("foo", 10));
    f.resync();
    assert_eq!(f.get_by_key("foo").unwrap(), [deleted(obj("foo", 10))]);
}

// client-go: TestDeltaFIFO_Resync.
#[test]
fn delta_fifo_resync() {
    let f = fifo_with(vec![obj("foo", 5)]);
    f.resync();
    assert_eq!(f.get_by_key("foo").unwrap(), [sync(obj("foo", 5))]);
}

// client-go: TestDeltaFIFO_DeleteExistingNonPropagated.
#[test]
fn delta_fifo_delete_existing_non_propagated() {
    let f = fifo_with(vec![]);
    f.add(obj("foo", 5));
    f.delete(obj("foo", 6));
    let deltas = f.get_by_key("foo").unwrap();
    assert_eq!(deltas.len(), 2);
    assert_eq!(deltas[1], deleted(obj("foo", 6)));
}

async fn expect_pops(f: &DeltaFIFO<Obj>, expected: Vec<Vec<Delta<Obj>>>) {
    for (i, e) in expected.into_iter().enumerate() {
        assert_eq!(pop(f).await, e, "pop {i}");
    }
}

// client-go: TestDeltaFIFO_ReplaceMakesDeletions.
#[tokio::test]
async fn delta_fifo_replace_makes_deletions() {
    // With a pre-existing Delete.
    let f = fifo_with(foo_bar_baz());
    f.delete(obj("baz", 10));
    f.replace(vec![obj("foo", 5)], "0".into());
    expect_pops(
        &f,
        vec![
            vec![deleted(obj("baz", 10))],
            vec![sync(obj("foo", 5))],
            vec![tombstone("bar", Some(obj("bar", 6)))],
        ],
    )
    .await;

    // Starting with an Add instead of a Delete.
    let f = fifo_with(foo_bar_baz());
    f.add(obj("baz", 10));
    f.replace(vec![obj("foo", 5)], "0".into());
    expect_pops(
        &f,
        vec![
            vec![
                added(obj("baz", 10)),
                tombstone("baz", Some(obj("baz", 10))),
            ],
            vec![sync(obj("foo", 5))],
            vec![tombstone("bar", Some(obj("bar", 6)))],
        ],
    )
    .await;

    // Deleting and recreating the object in the queue, then deleting it by a Replace.
    let f = fifo_with(foo_bar_baz());
    f.delete(obj("bar", 6));
    f.add(obj("bar", 100));
    f.replace(vec![obj("foo", 5)], "0".into());
    expect_pops(
        &f,
        vec![
            vec![
                deleted(obj("bar", 6)),
                added(obj("bar", 100)),
                // The queue's object is newer than the store's: the tombstone carries it.
                tombstone("bar", Some(obj("bar", 100))),
            ],
            vec![sync(obj("foo", 5))],
            vec![tombstone("baz", Some(obj("baz", 7)))],
        ],
    )
    .await;

    // Syncing first, so the delete uses the latest version.
    let f = fifo_with(foo_bar_baz());
    f.replace(vec![obj("bar", 100), obj("foo", 5)], "0".into());
    f.replace(vec![obj("foo", 5)], "0".into());
    expect_pops(
        &f,
        vec![
            vec![
                sync(obj("bar", 100)),
                tombstone("bar", Some(obj("bar", 100))),
            ],
            vec![sync(obj("foo", 5)), sync(obj("foo", 5))],
            vec![tombstone("baz", Some(obj("baz", 7)))],
        ],
    )
    .await;

    // Without known objects.
    let f = fifo();
    f.add(obj("baz", 10));
    f.replace(vec![obj("foo", 5)], "0".into());
    expect_pops(
        &f,
        vec![
            vec![
                added(obj("baz", 10)),
                tombstone("baz", Some(obj("baz", 10))),
            ],
            vec![sync(obj("foo", 5))],
        ],
    )
    .await;
}

// client-go: TestDeltaFIFO_ReplaceMakesDeletionsReplaced.
#[tokio::test]
async fn delta_fifo_replace_makes_deletions_replaced() {
    let f = DeltaFIFO::new(DeltaFIFOOptions {
        known_objects: known(foo_bar_baz()),
        emit_delta_type_replaced: true,
        transform: None,
    });
    f.delete(obj("baz", 10));
    f.replace(vec![obj("foo", 6)], "0".into());
    expect_pops(
        &f,
        vec![
            vec![deleted(obj("baz", 10))],
            vec![replaced(obj("foo", 6))],
            vec![tombstone("bar", Some(obj("bar", 6)))],
        ],
    )
    .await;
}

// client-go: TestDeltaFIFO_ReplaceDeltaType.
#[tokio::test]
async fn delta_fifo_replace_delta_type() {
    let f = DeltaFIFO::new(DeltaFIFOOptions {
        known_objects: known(vec![obj("foo", 5)]),
        emit_delta_type_replaced: true,
        transform: None,
    });
    f.replace(vec![obj("foo", 5)], "0".into());
    assert_eq!(pop(&f).await, [replaced(obj("foo", 5))]);
}

// client-go: TestDeltaFIFO_UpdateResyncRace.
#[tokio::test]
async fn delta_fifo_update_resync_race() {
    let f = fifo_with(vec![obj("foo", 5)]);
    f.update(obj("foo", 6));
    f.resync();
    assert_eq!(pop(&f).await, [updated(obj("foo", 6))]);
    assert!(f.is_empty());
}

// client-go: TestDeltaFIFO_HasSyncedCorrectOnDeletion.
#[tokio::test]
async fn delta_fifo_has_synced_correct_on_deletion() {
    let f = fifo_with(foo_bar_baz());
    f.replace(vec![obj("foo", 5)], "0".into());
    for expected in [
        vec![sync(obj("foo", 5))],
        vec![tombstone("bar", Some(obj("bar", 6)))],
        vec![tombstone("baz", Some(obj("baz", 7)))],
    ] {
        assert!(!f.has_synced());
        let (deltas, initial) = f.pop(|d, initial| (d, initial)).await.unwrap();
        assert_eq!(deltas, expected);
        assert!(initial, "initial list item");
    }
    assert!(f.has_synced());
}

// client-go: TestDeltaFIFO_detectLineJumpers.
#[tokio::test]
async fn delta_fifo_detect_line_jumpers() {
    let f = fifo();
    f.add(obj("foo", 10));
    f.add(obj("bar", 1));
    f.add(obj("foo", 11));
    f.add(obj("foo", 13));
    f.add(obj("zab", 30));
    assert_eq!(pop_value(&f).await, 13);
    f.add(obj("foo", 14)); // foo does not jump back in line
    assert_eq!(pop_value(&f).await, 1);
    assert_eq!(pop_value(&f).await, 30);
    assert_eq!(pop_value(&f).await, 14);
}

// client-go: TestDeltaFIFO_KeyOf.
#[test]
fn delta_fifo_key_of() {
    assert_eq!(added(obj("A", 0)).key().as_deref(), Some("A"));
    assert_eq!(tombstone("B", None).key().as_deref(), Some("B"));
    assert_eq!(sync(obj("C", 0)).key().as_deref(), Some("C"));
    assert_eq!(
        tombstone("D", Some(obj("X", 0))).key().as_deref(),
        Some("D")
    );
    assert_eq!(Delta::<Obj>::SyncAll.key(), None);
}

// client-go: TestDeltaFIFO_HasSynced.
#[tokio::test]
async fn delta_fifo_has_synced() {
    type Action = fn(&DeltaFIFO<Obj>) -> Option<()>;
    let replace_ab: Action = |f| {
        f.replace(vec![obj("a", 1), obj("b", 2)], "0".into());
        None
    };
    let pop_one: Action = |_| Some(());
    let cases: Vec<(Vec<Action>, bool)> = vec![
        (vec![], false),
        (
            vec![|f| {
                f.add(obj("a", 1));
                None
            }],
            true,
        ),
        (
            vec![|f| {
                f.replace(vec![], "0".into());
                None
            }],
            true,
        ),
        (vec![replace_ab], false),
        (vec![replace_ab, pop_one], false),
        (vec![replace_ab, pop_one, pop_one], true),
        // Duplicate keys in a list (a broken server): one key, one pop.
        (
            vec![
                |f| {
                    f.replace(vec![obj("a", 1), obj("a", 2)], "0".into());
                    None
                },
                pop_one,
            ],
            true,
        ),
    ];
    for (i, (actions, expected)) in cases.into_iter().enumerate() {
        let f = fifo();
        for action in actions {
            if action(&f).is_some() {
                pop(&f).await;
            }
        }
        assert_eq!(f.has_synced(), expected, "case {i}");
    }
}

// client-go: TestDeltaFIFO_PopShouldUnblockWhenClosed.
#[tokio::test(start_paused = true)]
async fn delta_fifo_pop_should_unblock_when_closed() {
    let f = Arc::new(fifo_with(vec![obj("foo", 5)]));
    let pops: Vec<_> = (0..10)
        .map(|_| {
            let f = f.clone();
            tokio::spawn(async move { f.pop(|d, _| d).await })
        })
        .collect();
    cache_support::settle().await;
    f.close();
    for p in pops {
        let popped = tokio::time::timeout(std::time::Duration::from_millis(500), p)
            .await
            .expect("pop returned after close")
            .unwrap();
        assert!(popped.is_none());
    }
}

#[tokio::test]
async fn delta_fifo_wait_synced_and_queue_trait() {
    let f = fifo();
    f.replace(vec![obj("a", 1)], "1".into());
    assert!(!Queue::has_synced(&f));
    assert_eq!(Queue::len(&f), 1);
    Queue::pop(&f, |_, initial| assert!(initial)).await.unwrap();
    Queue::wait_synced(&f).await;
    assert!(Queue::is_empty(&f));
}
