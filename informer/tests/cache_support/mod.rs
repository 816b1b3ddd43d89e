//! Shared test helpers: a small object type, a recording handler, a seeded generator and a
//! bounded wait on a condition.

#![allow(dead_code)] // each test binary uses part of this

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, ObjectMeta, Resource, impl_object};
use clientgo_informer::{DeleteEvent, ResourceEventHandler};
use parking_lot::Mutex;

/// client-go's `testFifoObject`: a name (the key, cluster-scoped) and a value.
#[derive(Debug, Clone, PartialEq, Default, serde::Serialize, serde::Deserialize)]
pub struct Obj {
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub value: i64,
    /// How many times a transform ran on this object.
    #[serde(default)]
    pub transforms: u32,
}
impl_object!(Obj);

/// A cluster-scoped object `name` with `value` (client-go's `mkFifoObj`).
pub fn obj(name: &str, value: i64) -> Obj {
    Obj {
        metadata: ObjectMeta::named(name),
        value,
        transforms: 0,
    }
}

/// A namespaced object.
pub fn ns_obj(namespace: &str, name: &str, value: i64) -> Obj {
    Obj {
        metadata: ObjectMeta::namespaced(namespace, name),
        value,
        transforms: 0,
    }
}

/// Sets the resourceVersion.
pub fn rv(mut o: Obj, resource_version: u64) -> Obj {
    o.metadata.resource_version = resource_version.to_string();
    o
}

/// Sets labels.
pub fn labeled(mut o: Obj, labels: &[(&str, &str)]) -> Obj {
    o.metadata.labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect::<BTreeMap<_, _>>();
    o
}

/// One recorded notification.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Add {
        key: String,
        value: i64,
        initial: bool,
    },
    Update {
        key: String,
        old: i64,
        new: i64,
    },
    Delete {
        key: String,
        value: Option<i64>,
        tombstone: bool,
    },
}

impl Event {
    pub fn key(&self) -> &str {
        match self {
            Event::Add { key, .. } | Event::Update { key, .. } | Event::Delete { key, .. } => key,
        }
    }
}

/// A handler recording what it is told.
#[derive(Default, Clone)]
pub struct Recorder {
    pub events: Arc<Mutex<Vec<Event>>>,
}

impl Recorder {
    pub fn take(&self) -> Vec<Event> {
        std::mem::take(&mut *self.events.lock())
    }
    pub fn len(&self) -> usize {
        self.events.lock().len()
    }
    pub fn snapshot(&self) -> Vec<Event> {
        self.events.lock().clone()
    }
}

fn key_of(o: &Obj) -> String {
    clientgo_informer::meta_namespace_key_func(o)
}

impl ResourceEventHandler<Obj> for Recorder {
    fn on_add(&self, object: &Arc<Obj>, is_in_initial_list: bool) {
        self.events.lock().push(Event::Add {
            key: key_of(object),
            value: object.value,
            initial: is_in_initial_list,
        });
    }
    fn on_update(&self, old: &Arc<Obj>, new: &Arc<Obj>) {
        self.events.lock().push(Event::Update {
            key: key_of(new),
            old: old.value,
            new: new.value,
        });
    }
    fn on_delete(&self, event: DeleteEvent<Obj>) {
        self.events.lock().push(Event::Delete {
            key: event.key(),
            value: event.object().map(|o| o.value),
            tombstone: event.is_tombstone(),
        });
    }
}

/// splitmix64: a small seedable generator.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The seeds of a stress test: `STRESS_SEED` to replay one, else 1..=count.
pub fn seeds(count: u64) -> Vec<u64> {
    match std::env::var("STRESS_SEED") {
        Ok(seed) => vec![seed.parse().expect("STRESS_SEED is a number")],
        Err(_) => (1..=count).collect(),
    }
}

/// Runs `test` once per seed, naming the seed if it panics.
pub fn with_seeds(count: u64, test: impl Fn(u64) + std::panic::RefUnwindSafe) {
    for seed in seeds(count) {
        if let Err(panic) = std::panic::catch_unwind(|| test(seed)) {
            eprintln!("stress test failed with STRESS_SEED={seed}");
            std::panic::resume_unwind(panic);
        }
    }
}

/// Waits (in tokio time, paused in tests) until `condition` holds, at most `limit`; panics
/// naming `what` otherwise. Not a sleep to wait for something: a bounded wait on a condition
/// that yields to the tasks that make it true.
pub async fn eventually(what: &str, limit: Duration, mut condition: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if condition() {
            return;
        }
        if tokio::time::Instant::now() >= deadline {
            panic!("timed out after {limit:?} waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// Lets every ready task run until none is left ready (tokio's paused clock: time does not
/// move while tasks run).
pub async fn settle() {
    for _ in 0..64 {
        tokio::task::yield_now().await;
    }
}

pub mod deltas;
pub mod informers;
mod lister_watcher;
mod source;
#[allow(unused_imports)]
pub use lister_watcher::FakeListerWatcher;
#[allow(unused_imports)]
pub use source::FakeSource;

/// A typed core ConfigMap (metadata and data), for typed informers against apiserver-sim.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ConfigMap {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub data: BTreeMap<String, String>,
}
impl_object!(ConfigMap);

impl Resource for ConfigMap {
    const GROUP: &'static str = "";
    const VERSION: &'static str = "v1";
    const KIND: &'static str = "ConfigMap";
    const PLURAL: &'static str = "configmaps";
    const NAMESPACED: bool = true;
}

/// The core ConfigMap resource, for tests against apiserver-sim.
pub fn config_maps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    }
}
