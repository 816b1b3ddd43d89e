use std::collections::BTreeMap;
use std::sync::Arc;

use clientgo_apimachinery::labels::Selector;
use clientgo_apimachinery::{Compact, ObjectMeta, Resource};
use serde::Deserialize;

use super::views::Views;
use super::*;
use crate::store::Indexers;

/// A kind with a typed field, so that a value of the wrong type fails the typed decode.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct Widget {
    metadata: ObjectMeta,
    #[serde(default)]
    spec: WidgetSpec,
}

#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
struct WidgetSpec {
    #[serde(default)]
    size: i64,
    #[serde(default)]
    tags: BTreeMap<String, String>,
}

clientgo_apimachinery::impl_object!(Widget);

impl Resource for Widget {
    const GROUP: &'static str = "example.com";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "Widget";
    const PLURAL: &'static str = "widgets";
    const NAMESPACED: bool = true;
}

fn lean(namespace: &str, name: &str, rv: &str, spec: &str) -> Arc<Compact<Widget>> {
    let json = format!(
        r#"{{"metadata":{{"name":"{name}","namespace":"{namespace}","resourceVersion":"{rv}","labels":{{"app":"{name}"}}}},"spec":{spec}}}"#
    );
    Arc::new(serde_json::from_str(&json).unwrap())
}

fn store() -> Arc<Indexer<Compact<Widget>>> {
    Arc::new(Indexer::with_indexers(Indexers::namespace()))
}

#[test]
fn a_second_read_without_a_change_is_the_same_view() {
    let store = store();
    store.add(lean("ns", "a", "1", r#"{"size":3}"#));
    let lister = TypedLister::new(store);
    let first = lister.namespace("ns").get("a").unwrap();
    assert_eq!(first.spec.size, 3);
    let second = lister.namespace("ns").get("a").unwrap();
    assert!(Arc::ptr_eq(&first, &second));
    assert_eq!(lister.views_kept(), (1, DEFAULT_VIEW_CAPACITY));
    assert!(lister.namespace("ns").get("absent").is_none());
    assert!(lister.namespace("other").get("a").is_none());
}

#[test]
fn a_change_is_decoded_again() {
    let store = store();
    store.add(lean("ns", "a", "1", r#"{"size":3}"#));
    let lister = TypedLister::new(store.clone());
    let old = lister.namespace("ns").get("a").unwrap();
    store.update(lean("ns", "a", "2", r#"{"size":4}"#));
    let new = lister.namespace("ns").get("a").unwrap();
    assert_eq!((old.spec.size, new.spec.size), (3, 4));
    assert!(Arc::ptr_eq(&new, &lister.namespace("ns").get("a").unwrap()));
    // The new view replaced the old one: still one kept.
    assert_eq!(lister.views_kept().0, 1);
    store.delete(&lean("ns", "a", "3", "{}"));
    assert!(lister.namespace("ns").get("a").is_none());
}

#[test]
fn clones_share_their_views() {
    let store = store();
    store.add(lean("ns", "a", "1", "{}"));
    let lister = TypedLister::new(store);
    let other = lister.clone();
    let view = lister.namespace("ns").get("a").unwrap();
    assert!(Arc::ptr_eq(&view, &other.namespace("ns").get("a").unwrap()));
}

#[test]
fn the_view_cache_is_bounded_and_keeps_what_is_read_again() {
    let store = store();
    for i in 0..10 {
        store.add(lean("ns", &format!("o{i}"), "1", "{}"));
    }
    let lister = TypedLister::with_capacity(store, 3);
    let ns = lister.namespace("ns");
    let hot = ns.get("o0").unwrap();
    for i in 1..10 {
        // o0 is read between every cold read: CLOCK gives it a second chance each pass.
        assert!(Arc::ptr_eq(&hot, &ns.get("o0").unwrap()), "round {i}");
        ns.get(&format!("o{i}")).unwrap();
        assert!(lister.views_kept().0 <= 3);
    }
    assert_eq!(lister.views_kept(), (3, 3));
    assert!(Arc::ptr_eq(&hot, &ns.get("o0").unwrap()));
}

#[test]
fn a_full_list_does_not_evict_the_hot_views() {
    let store = store();
    for i in 0..10 {
        store.add(lean("ns", &format!("o{i}"), "1", "{}"));
    }
    let lister = TypedLister::with_capacity(store, 2);
    let hot = lister.namespace("ns").get("o3").unwrap();
    let all = lister.list(&Selector::everything());
    assert_eq!(all.len(), 10);
    assert!(all.iter().any(|o| Arc::ptr_eq(o, &hot)));
    assert_eq!(lister.views_kept().0, 1);
    let selector: Selector = "app=o5".parse().unwrap();
    let matched = lister.namespace("ns").list(&selector);
    assert_eq!(matched.len(), 1);
    assert_eq!(matched[0].metadata.name, "o5");
    assert_eq!(lister.namespace("ns").list_all().len(), 10);
    assert!(lister.namespace("elsewhere").list_all().is_empty());
}

#[test]
fn capacity_zero_decodes_every_read() {
    let store = store();
    store.add(lean("ns", "a", "1", "{}"));
    let lister = TypedLister::with_capacity(store, 0);
    let first = lister.namespace("ns").get("a").unwrap();
    let second = lister.namespace("ns").get("a").unwrap();
    assert!(!Arc::ptr_eq(&first, &second));
    assert_eq!(first, second);
    assert_eq!(lister.views_kept(), (0, 0));
}

#[test]
fn objects_without_a_resource_version_are_kept_by_identity() {
    let store = store();
    store.add(lean("ns", "a", "", r#"{"size":1}"#));
    let lister = TypedLister::new(store.clone());
    let first = lister.namespace("ns").get("a").unwrap();
    assert!(Arc::ptr_eq(
        &first,
        &lister.namespace("ns").get("a").unwrap()
    ));
    // A new object under the same key, still without a resourceVersion: a new view.
    store.update(lean("ns", "a", "", r#"{"size":2}"#));
    let second = lister.namespace("ns").get("a").unwrap();
    assert_eq!((first.spec.size, second.spec.size), (1, 2));
    assert_eq!(lister.views_kept().0, 1);
}

#[test]
fn a_view_holds_its_object_until_the_view_goes() {
    let store = store();
    let old = lean("ns", "a", "1", "{}");
    let old_weak = Arc::downgrade(&old);
    store.add(old);
    let lister = TypedLister::new(store.clone());
    lister.namespace("ns").get("a").unwrap();
    store.update(lean("ns", "a", "2", "{}"));
    // Gone from the store, kept by its view: its address cannot be another object's.
    assert!(old_weak.upgrade().is_some());
    lister.namespace("ns").get("a").unwrap();
    assert!(
        old_weak.upgrade().is_none(),
        "the new version's view replaced it"
    );
}

#[test]
fn the_same_object_decoded_twice_is_kept_once() {
    let mut views = Views::new(4);
    let object = lean("ns", "a", "1", "{}");
    let (first, dropped) = views.insert(7, object.clone(), Arc::new(Widget::default()));
    assert!(dropped.is_none());
    // A reader that decoded the same object meanwhile gets the view kept first.
    let (second, dropped) = views.insert(7, object.clone(), Arc::new(Widget::default()));
    assert!(Arc::ptr_eq(&first, &second));
    assert!(dropped.is_some());
    assert_eq!(views.len(), 1);
    assert!(Arc::ptr_eq(&views.get(&object).unwrap(), &first));
    // An equal object that is another allocation is another object.
    assert!(views.get(&lean("ns", "a", "1", "{}")).is_none());
}

#[test]
fn a_lazy_list_decodes_what_is_read_once_and_keeps_nothing() {
    let store = store();
    for i in 0..5 {
        store.add(lean(
            "ns",
            &format!("o{i}"),
            "1",
            &format!(r#"{{"size":{i}}}"#),
        ));
    }
    store.add(lean("other", "x", "1", "{}"));
    let lister = TypedLister::with_capacity(store, 2);
    let hot = lister.namespace("ns").get("o3").unwrap();
    let listed = lister.list_lazy(&Selector::everything());
    assert_eq!(listed.len(), 6);
    for item in &listed {
        assert_eq!(item.is_decoded(), item.name() == "o3", "{item:?}");
    }
    let o3 = listed.iter().find(|o| o.name() == "o3").unwrap();
    assert!(Arc::ptr_eq(&o3.typed().unwrap(), &hot));
    let o1 = listed.iter().find(|o| o.name() == "o1").unwrap();
    let typed = o1.typed().unwrap();
    assert_eq!(typed.spec.size, 1);
    assert!(Arc::ptr_eq(&typed, &o1.typed().unwrap()), "decoded once");
    assert_eq!(lister.views_kept().0, 1, "a list's decodes are not kept");

    let selector: Selector = "app=o4".parse().unwrap();
    let matched = lister.namespace("ns").list_lazy(&selector);
    assert_eq!(matched.len(), 1);
    assert_eq!(matched[0].typed().unwrap().spec.size, 4);
    assert_eq!(
        lister
            .namespace("other")
            .list_lazy(&Selector::everything())
            .len(),
        1
    );
}

#[test]
fn cluster_scoped_gets() {
    let store = store();
    store.add(lean("", "global", "1", "{}"));
    let lister = TypedLister::new(store);
    let view = lister.get("global").unwrap();
    assert!(Arc::ptr_eq(&view, &lister.get("global").unwrap()));
    assert!(lister.try_get("absent").unwrap().is_none());
}

#[test]
fn an_object_that_does_not_decode_is_an_error_without_its_values() {
    let store = store();
    store.add(lean("ns", "bad", "9", r#"{"size":"secret-value"}"#));
    store.add(lean("ns", "good", "1", r#"{"size":1}"#));
    let lister = TypedLister::new(store);
    let error = lister.namespace("ns").try_get("bad").unwrap_err();
    assert_eq!(error.key, "ns/bad");
    assert_eq!(error.resource_version, "9");
    let message = error.to_string();
    assert!(!message.contains("secret-value"), "{message}");
    assert!(message.contains("Widget ns/bad"), "{message}");
    assert!(lister.namespace("ns").get("bad").is_none());
    let listed = lister.list(&Selector::everything());
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].metadata.name, "good");
}

#[test]
fn random_reads_and_changes_keep_the_views_consistent() {
    let seed = std::env::var("TYPED_LISTER_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x7e1e_5eed_u64);
    println!("TYPED_LISTER_SEED={seed}");
    // xorshift64*: enough to pick keys and operations.
    let mut state = seed | 1;
    let mut next = move |n: u64| {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    };
    let store = store();
    let lister = TypedLister::with_capacity(store.clone(), 5);
    let mut sizes = [None::<i64>; 20];
    let mut rv = 0;
    for step in 0..5_000 {
        let k = next(20) as usize;
        let name = format!("o{k}");
        match next(10) {
            0..=1 => {
                rv += 1;
                let size = next(1_000) as i64;
                store.update(lean(
                    "ns",
                    &name,
                    &rv.to_string(),
                    &format!(r#"{{"size":{size}}}"#),
                ));
                sizes[k] = Some(size);
            }
            2 => {
                store.delete(&lean("ns", &name, "", "{}"));
                sizes[k] = None;
            }
            _ => {
                let got = lister.namespace("ns").get(&name).map(|w| w.spec.size);
                assert_eq!(got, sizes[k], "step {step}, seed {seed}");
            }
        }
        lister.shared.views.read().check();
    }
    let listed = lister.list_lazy(&Selector::everything());
    assert_eq!(listed.len(), sizes.iter().flatten().count());
    for item in listed {
        let k: usize = item.name()[1..].parse().unwrap();
        assert_eq!(Some(item.typed().unwrap().spec.size), sizes[k]);
    }
}
