//! Seeded multi-thread stress test of the store's consistency promise: a reader never sees
//! an index that disagrees with the objects, across updates, whole replaces and indexes
//! added while it runs. `STRESS_SEED=n` replays one seed; a failure prints its seed.
//!
//! The writer keeps `STABLE` objects in group "stable" (updated all the time, never moved)
//! and `MOVING` objects that hop between groups "x" and "y", and now and then replaces the
//! whole content with its model. Readers check, in single calls:
//! * `by_index("group", "stable")` always returns exactly the `STABLE` objects: an update
//!   (remove from old sets, add to new) is never seen half done, nor is a replace;
//! * every object `by_index` returns for "x" or "y" carries that label;
//! * `list()` always holds `STABLE + MOVING` objects;
//! * an index added mid-run answers consistently from the moment it exists.

mod cache_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use cache_support::{Obj, Rng, labeled, ns_obj, with_seeds};
use clientgo_apimachinery::Object;
use clientgo_informer::{Indexer, Indexers, label_index_func};

const STABLE: usize = 50;
const MOVING: usize = 50;
const WRITES: u64 = 20_000;

fn object(i: usize, group: &str, version: u64) -> Arc<Obj> {
    Arc::new(labeled(
        ns_obj(&format!("ns-{}", i % 4), &format!("o{i}"), version as i64),
        &[
            ("group", group),
            ("parity", if version % 2 == 0 { "even" } else { "odd" }),
        ],
    ))
}

fn check(store: &Indexer<Obj>, late_index: bool) -> Result<(), String> {
    let stable = store
        .by_index("group", "stable")
        .map_err(|e| e.to_string())?;
    if stable.len() != STABLE {
        return Err(format!("{} stable objects", stable.len()));
    }
    for group in ["x", "y"] {
        for o in store.by_index("group", group).map_err(|e| e.to_string())? {
            if o.labels().get("group") != Some(group) {
                return Err(format!(
                    "{} in {group} has group {}",
                    o.key(),
                    o.labels().get("group").unwrap_or_default()
                ));
            }
        }
    }
    let all = store.list();
    if all.len() != STABLE + MOVING {
        return Err(format!("{} objects listed", all.len()));
    }
    if late_index && store.has_index("parity") {
        for parity in ["even", "odd"] {
            for o in store
                .by_index("parity", parity)
                .map_err(|e| e.to_string())?
            {
                if o.labels().get("parity") != Some(parity) {
                    return Err(format!(
                        "{} in {parity} is {}",
                        o.key(),
                        o.labels().get("parity").unwrap_or_default()
                    ));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn store_readers_never_see_inconsistent_indexes() {
    with_seeds(4, |seed| {
        let store = Arc::new(Indexer::with_indexers(
            Indexers::namespace().with("group", label_index_func("group")),
        ));
        let mut model: Vec<Arc<Obj>> = (0..STABLE)
            .map(|i| object(i, "stable", 0))
            .chain((STABLE..STABLE + MOVING).map(|i| object(i, "x", 0)))
            .collect();
        store.replace(model.clone(), "1");
        let done = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (store, done) = (store.clone(), done.clone());
                std::thread::spawn(move || -> Result<u64, String> {
                    let mut checks = 0;
                    while !done.load(Ordering::Relaxed) {
                        check(&store, true)?;
                        checks += 1;
                    }
                    Ok(checks)
                })
            })
            .collect();
        let mut rng = Rng(seed);
        for version in 1..=WRITES {
            let i = rng.below((STABLE + MOVING) as u64) as usize;
            let group = if i < STABLE {
                "stable"
            } else if rng.below(2) == 0 {
                "x"
            } else {
                "y"
            };
            model[i] = object(i, group, version);
            store.update(model[i].clone());
            if rng.below(500) == 0 {
                store.replace(model.clone(), &version.to_string());
            }
            if version == WRITES / 2 {
                store
                    .add_indexers(Indexers::new().with("parity", label_index_func("parity")))
                    .unwrap();
            }
        }
        done.store(true, Ordering::Relaxed);
        for reader in readers {
            let checks = reader
                .join()
                .unwrap()
                .unwrap_or_else(|e| panic!("reader: {e}"));
            assert!(checks > 0);
        }
        check(&store, true).unwrap();
        assert!(store.has_index("parity"));
        for o in &model {
            assert_eq!(store.get_by_key(&o.key()).as_deref(), Some(&**o));
        }
    });
}
