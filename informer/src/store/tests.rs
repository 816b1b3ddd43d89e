//! Unit tests of the store's size accounting (`keep_sizes`, `size_stats`), which is
//! crate-private: the informer turns it on with metrics.

use super::*;
use clientgo_apimachinery::{DynamicObject, ObjectMut};

fn object(name: &str, rv: &str, payload: &str) -> Arc<DynamicObject> {
    let mut o = DynamicObject::new(name)
        .within("ns")
        .with_field("data", serde_json::json!({ "payload": payload }));
    o.set_resource_version(rv.to_owned());
    Arc::new(o)
}

/// The estimate the tests use: the payload's length, so totals are easy to follow.
fn payload_len() -> ObjectSizeFn<DynamicObject> {
    Arc::new(|o: &DynamicObject| o.data["data"]["payload"].as_str().map_or(0, str::len))
}

fn total(store: &Indexer<DynamicObject>) -> Option<u64> {
    store.size_stats().1
}

#[test]
fn sizes_follow_every_write() {
    let store = Indexer::with_indexers(Indexers::namespace());
    store.add(object("before", "1", "xx"));
    assert_eq!(total(&store), None, "no sizes until asked");

    store.keep_sizes(payload_len());
    assert_eq!(total(&store), Some(2), "the stored objects are measured");
    store.keep_sizes(Arc::new(|_: &DynamicObject| 1_000));
    assert_eq!(total(&store), Some(2), "only the first estimator counts");

    store.add(object("a", "2", "aaaa"));
    store.update(object("a", "3", "a"));
    store.upsert_untracked(object("b", "4", "bbb"));
    assert_eq!(total(&store), Some(2 + 1 + 3));
    store.delete(&object("before", "5", ""));
    store.delete_key("ns/b");
    store.delete_key("ns/missing");
    assert_eq!(total(&store), Some(1));

    // A replace measures its content, a later duplicate replacing an earlier one.
    store.replace(
        vec![
            object("x", "6", "xxxxx"),
            object("y", "6", "yy"),
            object("x", "6", "x"),
        ],
        "6",
    );
    assert_eq!(store.size_stats(), (2, Some(1 + 2)));
    let (previous, deleted) = store.replace_with_diff(&[object("y", "7", "yyyyyyy")], "7");
    assert_eq!((previous.len(), deleted.len()), (1, 1));
    assert_eq!(store.size_stats(), (1, Some(7)));

    // Freed slots are reused with their new sizes.
    store.add(object("z", "8", "zzz"));
    store.delete_key("ns/z");
    store.add(object("w", "9", "w"));
    assert_eq!(store.size_stats(), (2, Some(7 + 1)));
}

#[test]
fn estimates_beyond_four_gib_are_clamped() {
    let store = Indexer::new();
    store.keep_sizes(Arc::new(|_: &DynamicObject| usize::MAX));
    store.add(object("a", "1", ""));
    assert_eq!(total(&store), Some(u64::from(u32::MAX)));
}
