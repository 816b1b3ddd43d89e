//! Ports of client-go's store and index tests (`thread_safe_store_test.go`, `index_test.go`,
//! `store_test.go`), plus the resourceVersion tracking and waiting.

mod cache_support;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cache_support::{Obj, labeled, ns_obj, obj, rv};
use clientgo_apimachinery::Object;
use clientgo_informer::{
    IndexError, IndexValues, Indexer, Indexers, InvalidResourceVersion, NAMESPACE_INDEX,
    ReflectorStore, WaitForResourceVersionError, label_index_func,
};

/// An index of `value`'s decimal digits split on nothing: one value, the number.
fn by_value() -> Indexers<Obj> {
    Indexers::new().with("by_val", |o: &Obj| IndexValues::from(o.value.to_string()))
}

/// client-go's test indexer of comma-separated values, on the `users` annotation.
fn by_user() -> Indexers<Obj> {
    Indexers::new().with("byUser", |o: &Obj| {
        o.annotations()
            .get("users")
            .map(|users| users.split(',').collect())
            .unwrap_or_default()
    })
}

fn with_users(name: &str, users: &str) -> Obj {
    let mut o = obj(name, 0);
    o.metadata
        .annotations
        .insert("users".to_owned(), users.to_owned());
    o
}

fn names(objects: &[Arc<Obj>]) -> BTreeSet<String> {
    objects.iter().map(|o| o.name().to_owned()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

// client-go: TestThreadSafeStoreDeleteRemovesEmptySetsFromIndex.
#[test]
fn thread_safe_store_delete_removes_empty_sets_from_index() {
    let store = Indexer::with_indexers(by_value());
    store.add(Arc::new(obj("testKey", 7)));
    assert_eq!(store.list_index_func_values("by_val"), ["7"]);
    assert_eq!(store.index_keys("by_val", "7").unwrap(), ["testKey"]);
    store.delete(&obj("testKey", 7));
    assert!(
        store.list_index_func_values("by_val").is_empty(),
        "empty set removed"
    );
    assert!(store.index_keys("by_val", "7").unwrap().is_empty());
}

// client-go: TestThreadSafeStoreAddKeepsNonEmptySetPostDeleteFromIndex.
#[test]
fn thread_safe_store_add_keeps_non_empty_set_post_delete_from_index() {
    let store =
        Indexer::with_indexers(Indexers::new().with("testIndexer", |_: &Obj| "testIndex".into()));
    store.add(Arc::new(obj("retain", 1)));
    store.add(Arc::new(obj("delete", 2)));
    assert_eq!(
        store.index_keys("testIndexer", "testIndex").unwrap().len(),
        2
    );
    store.delete_key("delete");
    assert_eq!(
        store.index_keys("testIndexer", "testIndex").unwrap(),
        ["retain"]
    );
    assert_eq!(store.list_index_func_values("testIndexer"), ["testIndex"]);
}

// client-go: TestThreadSafeStoreIndexingFunctionsWithMultipleValues.
#[test]
fn thread_safe_store_indexing_functions_with_multiple_values() {
    let store = Indexer::with_indexers(by_user());
    let keys = |value: &str| store.index_keys("byUser", value).unwrap();
    store.add(Arc::new(with_users("key1", "foo")));
    store.add(Arc::new(with_users("key2", "bar")));
    assert_eq!(keys("foo"), ["key1"]);
    assert_eq!(keys("bar"), ["key2"]);

    store.update(Arc::new(with_users("key2", "foo,bar")));
    assert_eq!(keys("foo"), ["key1", "key2"]);
    assert_eq!(keys("bar"), ["key2"]);

    store.update(Arc::new(with_users("key1", "foo,bar")));
    assert_eq!(keys("foo"), ["key1", "key2"]);
    assert_eq!(keys("bar"), ["key1", "key2"]);

    store.add(Arc::new(with_users("key3", "foo,bar,baz")));
    assert_eq!(keys("foo"), ["key1", "key2", "key3"]);
    assert_eq!(keys("bar"), ["key1", "key2", "key3"]);
    assert_eq!(keys("baz"), ["key3"]);

    store.update(Arc::new(with_users("key1", "foo")));
    assert_eq!(keys("foo"), ["key1", "key2", "key3"]);
    assert_eq!(keys("bar"), ["key2", "key3"]);

    store.update(Arc::new(with_users("key2", "bar")));
    assert_eq!(keys("foo"), ["key1", "key3"]);
    assert_eq!(keys("bar"), ["key2", "key3"]);

    store.delete_key("key1");
    assert_eq!(keys("foo"), ["key3"]);
    assert_eq!(keys("bar"), ["key2", "key3"]);
    assert_eq!(keys("baz"), ["key3"]);

    store.delete_key("key3");
    assert!(keys("foo").is_empty());
    assert_eq!(keys("bar"), ["key2"]);
    assert!(keys("baz").is_empty());
    assert_eq!(store.list_index_func_values("byUser"), ["bar"]);
}

// client-go: TestGetIndexFuncValues.
#[test]
fn get_index_func_values() {
    let store = Indexer::with_indexers(
        Indexers::new().with("testmodes", |o: &Obj| o.labels().get("foo").into()),
    );
    store.add(Arc::new(labeled(obj("one", 1), &[("foo", "bar")])));
    store.add(Arc::new(labeled(obj("two", 2), &[("foo", "bar")])));
    store.add(Arc::new(labeled(obj("tre", 3), &[("foo", "biz")])));
    assert_eq!(store.list_index_func_values("testmodes"), ["bar", "biz"]);
    assert!(store.list_index_func_values("no-such-index").is_empty());
}

// client-go: TestMultiIndexKeys.
#[test]
fn multi_index_keys() {
    let store = Indexer::with_indexers(by_user());
    let pod2 = with_users("two", "bert,oscar");
    store.add(Arc::new(with_users("one", "ernie,bert")));
    store.add(Arc::new(pod2.clone()));
    store.add(Arc::new(with_users("tre", "ernie,elmo")));
    for (user, expected) in [
        ("ernie", set(&["one", "tre"])),
        ("bert", set(&["one", "two"])),
        ("elmo", set(&["tre"])),
        ("oscar", set(&["two"])),
        ("elmo1", set(&[])),
    ] {
        assert_eq!(
            names(&store.by_index("byUser", user).unwrap()),
            expected,
            "{user}"
        );
    }

    store.delete(&with_users("tre", "ernie,elmo"));
    assert_eq!(
        names(&store.by_index("byUser", "ernie").unwrap()),
        set(&["one"])
    );
    assert!(store.by_index("byUser", "elmo").unwrap().is_empty());

    let mut copy_of_pod2 = pod2;
    copy_of_pod2
        .metadata
        .annotations
        .insert("users".into(), "oscar".into());
    store.update(Arc::new(copy_of_pod2));
    assert_eq!(
        names(&store.by_index("byUser", "bert").unwrap()),
        set(&["one"])
    );
}

// client-go: TestCache (doTestStore) and TestIndex (doTestIndex).
#[test]
fn cache_and_index() {
    let store = Indexer::with_indexers(by_value());
    store.add(Arc::new(obj("foo", 1)));
    assert_eq!(store.get(&obj("foo", 0)).unwrap().value, 1);
    store.update(Arc::new(obj("foo", 2)));
    assert_eq!(store.get_by_key("foo").unwrap().value, 2);
    store.delete(&obj("foo", 0));
    assert!(store.get(&obj("foo", 0)).is_none(), "found deleted item");

    store.add(Arc::new(obj("a", 10)));
    store.add(Arc::new(obj("c", 10)));
    store.add(Arc::new(obj("e", 30)));
    store.add(Arc::new(obj("g", 40)));
    assert_eq!(names(&store.list()), set(&["a", "c", "e", "g"]));
    assert_eq!(
        store.list_keys().into_iter().collect::<BTreeSet<_>>(),
        set(&["a", "c", "e", "g"])
    );

    // Index: the objects sharing a value with the given object.
    for (value, expected) in [(10, set(&["a", "c"])), (30, set(&["e"])), (40, set(&["g"]))] {
        let found = store.index("by_val", &obj("", value)).unwrap();
        assert_eq!(names(&found), expected, "{value}");
    }
    assert_eq!(
        store.index("nope", &obj("", 1)).unwrap_err(),
        IndexError::NoSuchIndex("nope".into())
    );
    assert_eq!(
        store.by_index("nope", "x").unwrap_err().to_string(),
        "index with name nope does not exist"
    );

    store.replace(vec![Arc::new(obj("foo", 5)), Arc::new(obj("bar", 5))], "9");
    assert_eq!(names(&store.list()), set(&["foo", "bar"]));
    assert_eq!(store.index_keys("by_val", "5").unwrap(), ["bar", "foo"]);
    assert!(
        store.index_keys("by_val", "10").unwrap().is_empty(),
        "indexes rebuilt"
    );
    assert_eq!(store.last_resource_version(), "9");
}

#[test]
fn index_deduplicates_objects_matching_several_values() {
    let store = Indexer::with_indexers(by_user());
    store.add(Arc::new(with_users("one", "ernie,bert")));
    store.add(Arc::new(with_users("two", "bert")));
    let found = store
        .index("byUser", &with_users("", "ernie,bert"))
        .unwrap();
    assert_eq!(found.len(), 2);
    assert_eq!(names(&found), set(&["one", "two"]));
}

#[test]
fn namespaced_and_cluster_scoped_keys() {
    let store = Indexer::with_indexers(Indexers::namespace());
    store.add(Arc::new(ns_obj("ns-a", "x", 1)));
    store.add(Arc::new(ns_obj("ns-b", "x", 2)));
    store.add(Arc::new(obj("x", 3)));
    assert_eq!(store.len(), 3);
    assert_eq!(store.get_by_key("ns-a/x").unwrap().value, 1);
    assert_eq!(store.get_by_key("ns-b/x").unwrap().value, 2);
    assert_eq!(store.get_by_key("x").unwrap().value, 3);
    assert!(store.get_by_key("ns-c/x").is_none());
    assert!(store.contains_key("ns-a/x") && !store.contains_key("ns-a/y"));
    assert_eq!(
        store.index_keys(NAMESPACE_INDEX, "ns-a").unwrap(),
        ["ns-a/x"]
    );
    assert_eq!(store.index_keys(NAMESPACE_INDEX, "").unwrap(), ["x"]);
    assert_eq!(store.delete_key("ns-b/x").unwrap().value, 2);
    assert_eq!(store.list_index_func_values(NAMESPACE_INDEX), ["", "ns-a"]);
}

#[test]
fn add_returns_the_replaced_object_and_update_of_unchanged_values_keeps_indexes() {
    let store = Indexer::with_indexers(Indexers::new().with("app", label_index_func("app")));
    assert!(
        store
            .add(Arc::new(labeled(obj("a", 1), &[("app", "web")])))
            .is_none()
    );
    let old = store
        .update(Arc::new(labeled(obj("a", 2), &[("app", "web")])))
        .unwrap();
    assert_eq!(old.value, 1);
    assert_eq!(store.by_index("app", "web").unwrap()[0].value, 2);
    store.update(Arc::new(obj("a", 3)));
    assert!(
        store.list_index_func_values("app").is_empty(),
        "label gone, not indexed"
    );
}

// client-go: TestIndexer's "adding an index later" and AddIndexers' conflict rule.
#[test]
fn add_indexers_indexes_existing_objects_and_rejects_conflicts() {
    let store = Indexer::with_indexers(Indexers::namespace());
    store.add(Arc::new(labeled(ns_obj("ns", "a", 1), &[("app", "web")])));
    store.add(Arc::new(labeled(ns_obj("ns", "b", 2), &[("app", "db")])));
    store
        .add_indexers(Indexers::new().with("app", label_index_func("app")))
        .unwrap();
    assert_eq!(store.index_keys("app", "web").unwrap(), ["ns/a"]);
    assert_eq!(store.index_names(), ["namespace", "app"]);

    let err = store
        .add_indexers(
            Indexers::new()
                .with("other", label_index_func("x"))
                .with("app", label_index_func("app")),
        )
        .unwrap_err();
    assert_eq!(err, IndexError::Conflict(vec!["app".into()]));
    assert!(!store.has_index("other"), "nothing added on conflict");

    // Indexes added later are maintained like the others.
    store.add(Arc::new(labeled(ns_obj("ns", "c", 3), &[("app", "web")])));
    assert_eq!(store.index_keys("app", "web").unwrap(), ["ns/a", "ns/c"]);
    store.replace(
        vec![Arc::new(labeled(ns_obj("ns", "d", 4), &[("app", "web")]))],
        "",
    );
    assert_eq!(store.index_keys("app", "web").unwrap(), ["ns/d"]);
}

// client-go: TestCacheWithTransformer (transform on add/update/replace, not delete).
#[test]
fn cache_with_transformer() {
    let store = Indexer::<Obj>::new().with_transform(|mut o| {
        o.transforms += 1;
        o
    });
    ReflectorStore::add(&store, obj("a", 1));
    ReflectorStore::update(&store, obj("a", 2));
    ReflectorStore::replace(&store, vec![obj("b", 3)], "5".into());
    let b = store.get_by_key("b").unwrap();
    assert_eq!((b.value, b.transforms), (3, 1));
    assert!(store.get_by_key("a").is_none());
    ReflectorStore::delete(&store, obj("b", 3));
    assert!(store.is_empty());
}

// client-go: TestThreadSafeStoreRV.
#[test]
fn thread_safe_store_rv() {
    let store = Indexer::<Obj>::new();
    assert_eq!(store.last_resource_version(), "");
    store.add(Arc::new(rv(obj("a", 1), 5)));
    assert_eq!(store.last_resource_version(), "5");
    store.update(Arc::new(rv(obj("a", 2), 7)));
    assert_eq!(store.last_resource_version(), "7");
    store.delete(&rv(obj("a", 2), 9));
    assert_eq!(store.last_resource_version(), "9");
    store.bookmark("12");
    assert_eq!(store.last_resource_version(), "12");
    store.replace(vec![Arc::new(rv(obj("b", 1), 3))], "20");
    assert_eq!(store.last_resource_version(), "20");
    store.add(Arc::new(obj("no-rv", 1)));
    assert_eq!(
        store.last_resource_version(),
        "20",
        "an object without RV records nothing"
    );
}

#[tokio::test(start_paused = true)]
async fn wait_for_resource_version_returns_once_the_store_caught_up() {
    let store = Arc::new(Indexer::<Obj>::new());
    store.bookmark("100");
    store
        .wait_for_resource_version("99", Duration::ZERO)
        .await
        .unwrap();
    store
        .wait_for_resource_version("100", Duration::ZERO)
        .await
        .unwrap();

    let writer = {
        let store = store.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(2)).await;
            store.add(Arc::new(rv(obj("a", 1), 150)));
            tokio::time::sleep(Duration::from_secs(2)).await;
            store.add(Arc::new(rv(obj("a", 2), 205)));
        })
    };
    let start = tokio::time::Instant::now();
    store
        .wait_for_resource_version("200", Duration::from_secs(10))
        .await
        .unwrap();
    assert_eq!(
        start.elapsed(),
        Duration::from_secs(4),
        "woken by the second write"
    );
    writer.await.unwrap();
}

// apimachinery's CompareResourceVersion refuses these; so does the wait, at once.
#[tokio::test(start_paused = true)]
async fn wait_for_resource_version_refuses_what_apimachinery_cannot_compare() {
    let store = Indexer::<Obj>::new();
    store.bookmark("10");
    for (rv, reason) in [
        ("", InvalidResourceVersion::Empty),
        ("0", InvalidResourceVersion::Zero),
        ("010", InvalidResourceVersion::LeadingZero),
        ("1e3", InvalidResourceVersion::NotDigits),
        ("-5", InvalidResourceVersion::NotDigits),
    ] {
        let start = tokio::time::Instant::now();
        let err = store
            .wait_for_resource_version(rv, Duration::from_secs(30))
            .await
            .unwrap_err();
        assert_eq!(
            err,
            WaitForResourceVersionError::Invalid {
                resource_version: rv.into(),
                reason,
            }
        );
        assert_eq!(
            start.elapsed(),
            Duration::ZERO,
            "{rv:?}: refused without waiting"
        );
    }
    // Larger than u64: compared by length, then digits.
    store.bookmark("100000000000000000000");
    store
        .wait_for_resource_version("99999999999999999999", Duration::ZERO)
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn wait_for_resource_version_times_out_with_a_clear_error() {
    let store = Indexer::<Obj>::new();
    store.bookmark("10");
    let err = store
        .wait_for_resource_version("11", Duration::from_secs(3))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        WaitForResourceVersionError::Timeout {
            wanted: "11".into(),
            reached: "10".into(),
            waited: Duration::from_secs(3),
        }
    );
    assert_eq!(
        err.to_string(),
        "timed out after 3s waiting for the cache to reach resourceVersion 11; it is at 10"
    );
    let err = store
        .wait_for_resource_version("abc", Duration::from_secs(3))
        .await
        .unwrap_err();
    assert_eq!(
        err,
        WaitForResourceVersionError::Invalid {
            resource_version: "abc".into(),
            reason: InvalidResourceVersion::NotDigits,
        }
    );
    let empty = Indexer::<Obj>::new();
    let err = empty
        .wait_for_resource_version("1", Duration::from_millis(5))
        .await
        .unwrap_err();
    assert!(
        err.to_string().ends_with("it is at no resourceVersion yet"),
        "{err}"
    );
}

#[test]
fn freed_slots_are_reused_and_replace_keeps_the_last_duplicate() {
    let store = Indexer::with_indexers(by_value());
    for round in 0..3 {
        for i in 0..100 {
            store.add(Arc::new(obj(&format!("o{i}"), round)));
        }
        for i in 0..100 {
            if i % 2 == 0 {
                store.delete_key(&format!("o{i}"));
            }
        }
        assert_eq!(store.len(), 50);
        assert_eq!(
            store
                .index_keys("by_val", &round.to_string())
                .unwrap()
                .len(),
            50
        );
    }
    store.replace(vec![Arc::new(obj("d", 1)), Arc::new(obj("d", 2))], "");
    assert_eq!(store.len(), 1);
    assert_eq!(store.get_by_key("d").unwrap().value, 2);
    assert_eq!(store.list_index_func_values("by_val"), ["2"]);
}

/// A write to a store, for tests that try several.
type Write = Box<dyn Fn(&Indexer<Obj>)>;

/// What the store holds, indexes included: `(key@value list, by_val values, second index
/// values, resourceVersion)`.
fn store_state(store: &Indexer<Obj>) -> (Vec<String>, Vec<String>, Vec<String>, String) {
    let mut objects: Vec<String> = store
        .list()
        .iter()
        .map(|o| format!("{}@{}", o.key(), o.value))
        .collect();
    objects.sort();
    (
        objects,
        store.list_index_func_values("by_val"),
        store.list_index_func_values("tens"),
        store.last_resource_version(),
    )
}

// An index function that panics on some object: every write calls all index functions
// before it changes anything, so the panic leaves objects, every index and the
// resourceVersion as they were (client-go's store panics half-way through an update).
#[test]
fn an_index_function_panic_leaves_the_store_as_it_was() {
    // The second index panics on the value 13: the first index would be updated before it.
    let indexers = by_value().with("tens", |o: &Obj| {
        assert_ne!(o.value, 13, "index function bug");
        IndexValues::from((o.value / 10).to_string())
    });
    let store = Indexer::with_indexers(indexers);
    store.add(Arc::new(rv(obj("a", 1), 5)));
    store.add(Arc::new(rv(obj("b", 21), 6)));
    let before = store_state(&store);
    let writes: [(&str, Write); 4] = [
        (
            "add",
            Box::new(|s| drop(s.add(Arc::new(rv(obj("c", 13), 7))))),
        ),
        (
            "update",
            Box::new(|s| drop(s.update(Arc::new(rv(obj("a", 13), 8))))),
        ),
        (
            "replace",
            Box::new(|s| s.replace(vec![Arc::new(obj("a", 2)), Arc::new(obj("z", 13))], "9")),
        ),
        (
            "add_indexers",
            Box::new(|s| {
                let more = Indexers::new()
                    .with("ok", |o: &Obj| IndexValues::from(o.name()))
                    .with("bad", |_: &Obj| -> IndexValues<'_> {
                        panic!("index function bug")
                    });
                let _ = s.add_indexers(more);
            }),
        ),
    ];
    for (what, write) in &writes {
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(&store)));
        assert!(
            panicked.is_err(),
            "{what}: the index function did not panic"
        );
        assert_eq!(store_state(&store), before, "{what} changed the store");
        assert_eq!(store.index_names(), ["by_val", "tens"], "{what}");
    }
    // A deletion whose index function panics: it panics only from now on.
    static BROKEN: AtomicBool = AtomicBool::new(false);
    let store = Indexer::with_indexers(Indexers::new().with("flaky", |o: &Obj| {
        assert!(!BROKEN.load(Ordering::Relaxed), "index function bug");
        IndexValues::from(o.name())
    }));
    store.add(Arc::new(rv(obj("a", 1), 5)));
    BROKEN.store(true, Ordering::Relaxed);
    for (what, write) in [
        (
            "delete",
            Box::new(|s: &Indexer<Obj>| drop(s.delete(&rv(obj("a", 1), 6))))
                as Box<dyn Fn(&Indexer<Obj>)>,
        ),
        (
            "delete_key",
            Box::new(|s: &Indexer<Obj>| drop(s.delete_key("a"))),
        ),
    ] {
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| write(&store)));
        assert!(
            panicked.is_err(),
            "{what}: the index function did not panic"
        );
        BROKEN.store(false, Ordering::Relaxed);
        assert_eq!(store.len(), 1, "{what}");
        assert_eq!(store.index_keys("flaky", "a").unwrap(), ["a"], "{what}");
        assert_eq!(store.last_resource_version(), "5", "{what}");
        BROKEN.store(true, Ordering::Relaxed);
    }
}
