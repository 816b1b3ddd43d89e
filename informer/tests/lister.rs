//! Ports of client-go's lister tests (`listers_test.go`: `TestListAll`, and the namespace
//! lister of `listers/generic_helpers.go`).

mod cache_support;

use std::collections::BTreeSet;
use std::sync::Arc;

use cache_support::{Obj, labeled, ns_obj, obj};
use clientgo_apimachinery::Object;
use clientgo_apimachinery::labels::Selector;
use clientgo_informer::{Indexer, Indexers, Lister};

fn keys(objects: &[Arc<Obj>]) -> BTreeSet<String> {
    objects.iter().map(|o| o.key()).collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn populated(indexers: Indexers<Obj>) -> Lister<Obj> {
    let store = Arc::new(Indexer::with_indexers(indexers));
    store.add(Arc::new(labeled(
        ns_obj("prod", "web", 1),
        &[("app", "web"), ("tier", "front")],
    )));
    store.add(Arc::new(labeled(ns_obj("prod", "db", 2), &[("app", "db")])));
    store.add(Arc::new(labeled(
        ns_obj("dev", "web", 3),
        &[("app", "web")],
    )));
    store.add(Arc::new(labeled(obj("node-1", 4), &[("zone", "a")])));
    Lister::new(store)
}

// client-go: TestListAll (everything, a label match, nothing matching).
#[test]
fn list_all() {
    let lister = populated(Indexers::namespace());
    assert_eq!(lister.list(&Selector::everything()).len(), 4);
    let web: Selector = "app=web".parse().unwrap();
    assert_eq!(keys(&lister.list(&web)), set(&["prod/web", "dev/web"]));
    let none: Selector = "app=none".parse().unwrap();
    assert!(lister.list(&none).is_empty());
    let cluster: Selector = "zone in (a,b)".parse().unwrap();
    assert_eq!(keys(&lister.list(&cluster)), set(&["node-1"]));
}

// client-go: ListAllByNamespace and the namespace lister's Get.
#[test]
fn namespace_lister() {
    for indexers in [Indexers::namespace(), Indexers::new()] {
        let indexed = !indexers.is_empty();
        let lister = populated(indexers);
        let prod = lister.namespace("prod");
        assert_eq!(
            keys(&prod.list(&Selector::everything())),
            set(&["prod/web", "prod/db"]),
            "{indexed}"
        );
        let front: Selector = "tier=front".parse().unwrap();
        assert_eq!(keys(&prod.list(&front)), set(&["prod/web"]));
        assert_eq!(prod.get("db").unwrap().value, 2);
        assert!(prod.get("nope").is_none());
        assert!(lister.namespace("dev").get("db").is_none());
        assert!(
            lister
                .namespace("empty")
                .list(&Selector::everything())
                .is_empty()
        );
        // "" means every namespace.
        assert_eq!(lister.namespace("").list(&Selector::everything()).len(), 4);
    }
}

#[test]
fn cluster_scoped_get_and_shared_objects() {
    let lister = populated(Indexers::namespace());
    let node = lister.get("node-1").unwrap();
    assert!(
        Arc::ptr_eq(&node, &lister.indexer().get_by_key("node-1").unwrap()),
        "no copy"
    );
    assert!(lister.get("prod/web").is_some(), "a key works too");
    assert!(lister.get("node-2").is_none());
}
