//! Typed reads over a lean cache: [`TypedLister`] reads an informer's
//! [`Compact<K>`](Compact) store and hands out typed `Arc<K>` views, decoded on first read
//! and kept for hot objects in a bounded cache.
//!
//! client-go's generated listers hand out the typed object the informer decoded when it
//! arrived: a `get` is a map lookup and a pointer read, and every cached object costs its
//! full typed size (client-go's typed Pod about 8.4 KB; k8s-openapi's `Pod` about 26.5 KB,
//! the S1openapi workload). Here the informer holds `Compact<K>` (about 3.1 KB per Pod:
//! metadata parsed, the rest kept as JSON text) and the lister builds `K` only for the
//! objects a controller reads.
//!
//! ## What to call
//!
//! | read | call | cost |
//! |---|---|---|
//! | one object, typed (a reconcile) | `lister.namespace(ns).get(name)` | read before and unchanged since: the store's lookup and a pointer comparison, no decode; else one decode, and the view is kept |
//! | a few objects, typed | a selector or a namespace: `lister.namespace(ns).list(&selector)` | the filter reads the lean metadata; each match not kept is decoded |
//! | many objects, some of them typed | [`list_lazy`](TypedLister::list_lazy), then [`Listed::typed`] on those you need | the lean list's cost; a decode for each `typed()` |
//! | metadata only (names, labels, owners) | [`lean`](TypedLister::lean) | the lean list's cost, never a decode |
//! | every object, typed | [`list`](TypedLister::list) | a decode per object not kept: seconds for 100,000 Pods |
//!
//! ## How a `get` finds its view
//!
//! The store replaces an object on every change (a new `Arc<Compact<K>>`) and never
//! changes one in place. So a view is kept with the lean object it was decoded from, and
//! found by that object's address (`views.rs`): a `get` looks the key up in the store (as
//! any lister does), then looks the object's address up among the views, and hands out the
//! view if it was decoded from this very object. No key string is built or compared twice,
//! no resourceVersion read. The view holds its lean object, so the address cannot be
//! reused by another object while the view is kept (a view outliving its object in the
//! store keeps up to one lean object alive until it is replaced or evicted).
//!
//! A `get` of an object not read before, or changed since, decodes it
//! ([`Compact::to_typed`]) and keeps the view, replacing the view of its previous version
//! or, once [`capacity`](TypedLister::with_capacity) views are kept, evicting the view read
//! least recently (CLOCK). `list` and `list_lazy` reuse the views kept and keep nothing
//! they decode, so a pass over many objects does not push the hot ones out.
//!
//! Handlers and indexes see the `Compact<K>` (its metadata is parsed), so events are never
//! decoded into `K` unless a handler asks for it.
//!
//! ## Why this form (measured, benches/README.md, "Typed caches")
//!
//! On S1's 100,000 Pods (2.9 KB of JSON each, with `managedFields`): resident bytes per Pod,
//! a reconcile's typed `get` of a hot Pod (wall and CPU time) and a typed list of all, on our
//! 2-core machine under a load average of 4.6 to 6.4 (bench-report, medians of 3):
//!
//! | option | bytes per Pod | hot `get` | list of 100,000 |
//! |---|---|---|---|
//! | k8s-openapi's `Pod` in the store (client-go's and kube-rs's form; S1openapi) | 26,559 | 280 ns, 237 ns CPU | 24 ms |
//! | the same, `managedFields` stripped by a transform | about 5,400 less | as above | as above |
//! | a "lean typed" form (`managedFields` raw, strings and maps sized to their content) | not built: code generated per kind | | |
//! | `Compact<Pod>` read through this lister, 1,024 views kept (S1typed) | 3,385 | 373 ns, 348 ns CPU, no decode | `list_lazy` 4.6 ms; `list` 4.5 s |
//!
//! client-go's typed Pod costs 8,432 bytes. Most of a typed Pod is its spec and status as a
//! tree of `Option`s, strings, vectors and maps, so stripping `managedFields` is far from
//! the goal (4,200), and the typed informer's default stays as client-go's (it keeps
//! `managedFields`; they are raw text in the lean form, hence cheap). The memory bound
//! comes from the lean store and the bounded view cache.
//!
//! The price is the cold read: a Pod not read before is decoded on its first `get` (25 µs on
//! an idle machine, 42 µs in the loaded run above), and a typed `list` of every object
//! decodes those not kept. The hot `get` is the store's lookup (most of its time, in a
//! profile) plus the view cache's read lock and `Arc` counts: about 110 ns of CPU over the
//! typed store's `get` in the loaded run. On an idle machine it is the other way round
//! (151 ns against the typed store's 215 ns): the lean store is a ninth of the typed one's
//! size, so its lookup touches fewer cold cache lines.
//!
//! ## Objects that do not decode as `K`
//!
//! The lean form checks that an object is JSON with parsable metadata; a typed decode can
//! still fail (a field of an unexpected type). client-go's typed informer never caches such
//! an object (its watch fails on it). Here [`get`](TypedNamespaceLister::get) and `list`
//! skip it and log it once per resourceVersion with its key and where the decode failed (no
//! field values); [`try_get`](TypedNamespaceLister::try_get) and [`Listed::typed`] return
//! the error.

mod listed;
mod views;

use std::fmt;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use clientgo_apimachinery::labels::Selector;
use clientgo_apimachinery::{Compact, Object, Resource};
use parking_lot::{Mutex, RwLock};
use serde::de::DeserializeOwned;

use crate::lister::Lister;
use crate::store::Indexer;
use views::Views;

pub use listed::Listed;

/// How many typed views a [`TypedLister`] keeps by default.
///
/// About 27 MB for k8s-openapi Pods of the benchmark's shape, 270 bytes per object of a
/// 100,000-Pod cache; less for smaller kinds. A controller whose hot set is larger (many
/// objects reconciled again and again within seconds) gives its own with
/// [`TypedLister::with_capacity`].
pub const DEFAULT_VIEW_CAPACITY: usize = 1024;

/// A lister of typed `K` over a cache of [`Compact<K>`]. See the module documentation.
///
/// ```
/// use std::sync::Arc;
/// use clientgo_apimachinery::{Compact, labels::Selector};
/// use clientgo_informer::{Indexer, Indexers, TypedLister};
/// # #[derive(Debug, Clone, Default, serde::Deserialize)]
/// # pub struct ConfigMap {
/// #     pub metadata: clientgo_apimachinery::ObjectMeta,
/// #     pub data: Option<std::collections::BTreeMap<String, String>>,
/// # }
/// # clientgo_apimachinery::impl_object!(ConfigMap);
/// # impl clientgo_apimachinery::Resource for ConfigMap {
/// #     const GROUP: &'static str = "";
/// #     const VERSION: &'static str = "v1";
/// #     const KIND: &'static str = "ConfigMap";
/// #     const PLURAL: &'static str = "configmaps";
/// #     const NAMESPACED: bool = true;
/// # }
///
/// let store = Arc::new(Indexer::with_indexers(Indexers::namespace()));
/// let json = r#"{"metadata":{"name":"web","namespace":"prod","resourceVersion":"7"},
///     "data":{"k":"v"}}"#;
/// store.add(Arc::new(serde_json::from_str::<Compact<ConfigMap>>(json)?));
///
/// let lister = TypedLister::new(store);
/// let web: Arc<ConfigMap> = lister.namespace("prod").get("web").expect("cached");
/// assert_eq!(web.data.as_ref().unwrap()["k"], "v");
/// // Read again without a change: the same decoded object, no decode.
/// assert!(Arc::ptr_eq(&web, &lister.namespace("prod").get("web").unwrap()));
/// assert_eq!(lister.list(&Selector::everything()).len(), 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub struct TypedLister<K> {
    lean: Lister<Compact<K>>,
    shared: Arc<Shared<K>>,
}

/// What the clones of one lister share.
struct Shared<K> {
    views: RwLock<Views<K>>,
    hasher: foldhash::fast::RandomState,
    /// `(key, resourceVersion)` of the last object that did not decode, logged once.
    last_failure: Mutex<Option<(String, String)>>,
}

impl<K> Shared<K> {
    /// The hash of a key, computed before a lock is taken.
    fn key_hash(&self, namespace: &str, name: &str) -> u64 {
        let mut h = self.hasher.build_hasher();
        h.write(namespace.as_bytes());
        h.write_u8(0xff);
        h.write(name.as_bytes());
        h.finish()
    }
}

impl<K> Clone for TypedLister<K> {
    fn clone(&self) -> Self {
        TypedLister {
            lean: self.lean.clone(),
            shared: self.shared.clone(),
        }
    }
}

impl<K> TypedLister<K>
where
    K: Resource + Object + DeserializeOwned,
{
    /// A lister over `indexer` keeping up to [`DEFAULT_VIEW_CAPACITY`] views.
    pub fn new(indexer: Arc<Indexer<Compact<K>>>) -> Self {
        Self::with_capacity(indexer, DEFAULT_VIEW_CAPACITY)
    }

    /// A lister over `indexer` keeping up to `capacity` views (0: decode on every read).
    pub fn with_capacity(indexer: Arc<Indexer<Compact<K>>>, capacity: usize) -> Self {
        TypedLister {
            lean: Lister::new(indexer),
            shared: Arc::new(Shared {
                views: RwLock::new(Views::new(capacity)),
                hasher: foldhash::fast::RandomState::default(),
                last_failure: Mutex::new(None),
            }),
        }
    }

    /// Every cached object whose labels match `selector`, in all namespaces, typed: views
    /// kept are reused, the others decoded (and not kept). Decodes every object not read
    /// recently: for many objects, prefer [`list_lazy`](Self::list_lazy).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.typed_all(self.lean.list(selector))
    }

    /// Every cached object whose labels match `selector`, in all namespaces, each decoded
    /// only when its [`typed`](Listed::typed) form is asked for. As fast as the lean list.
    pub fn list_lazy(&self, selector: &Selector) -> Vec<Listed<K>> {
        self.listed_all(self.lean.list(selector))
    }

    /// The cluster-scoped object `name`, typed.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.or_log(self.try_get(name))
    }

    /// The cluster-scoped object `name`, typed; an error if it does not decode as `K`.
    pub fn try_get(&self, name: &str) -> Result<Option<Arc<K>>, ViewError> {
        self.try_get_in("", name)
    }

    /// A lister for one namespace (`""` lists every namespace). It borrows this lister and
    /// the namespace, so making one costs nothing: `lister.namespace(ns).get(name)` is the
    /// reconcile's hot path.
    pub fn namespace<'a>(&'a self, namespace: &'a str) -> TypedNamespaceLister<'a, K> {
        TypedNamespaceLister {
            typed: self,
            namespace,
        }
    }

    /// The lister of the lean objects themselves (metadata parsed, the rest as JSON text).
    pub fn lean(&self) -> &Lister<Compact<K>> {
        &self.lean
    }

    /// How many views are kept now, and at most.
    pub fn views_kept(&self) -> (usize, usize) {
        let views = self.shared.views.read();
        (views.len(), views.capacity())
    }

    fn try_get_in(&self, namespace: &str, name: &str) -> Result<Option<Arc<K>>, ViewError> {
        let Some(lean) = self.lean.indexer().get_in(namespace, name) else {
            return Ok(None);
        };
        self.view(lean).map(Some)
    }

    /// The typed view of `lean`: the one kept if it was decoded from this very object (the
    /// store replaces an object on every change), else decoded and kept.
    fn view(&self, lean: Arc<Compact<K>>) -> Result<Arc<K>, ViewError> {
        if let Some(view) = self.shared.views.read().get(&lean) {
            return Ok(view);
        }
        let view = Arc::new(decode(&lean)?);
        let key_hash = self.shared.key_hash(lean.namespace(), lean.name());
        let (view, dropped) = self.shared.views.write().insert(key_hash, lean, view);
        // What the insert replaced or evicted is freed after the lock is released.
        drop(dropped);
        Ok(view)
    }

    fn typed_all(&self, objects: Vec<Arc<Compact<K>>>) -> Vec<Arc<K>> {
        self.listed_all(objects)
            .into_iter()
            .filter_map(|listed| self.or_log(listed.typed().map(Some)))
            .collect()
    }

    fn listed_all(&self, objects: Vec<Arc<Compact<K>>>) -> Vec<Listed<K>> {
        let views = self.shared.views.read();
        objects
            .into_iter()
            .map(|lean| {
                let view = views.peek(&lean);
                Listed::new(lean, view)
            })
            .collect()
    }

    /// `None` for an object that does not decode, logged once per key and resourceVersion.
    fn or_log(&self, result: Result<Option<Arc<K>>, ViewError>) -> Option<Arc<K>> {
        match result {
            Ok(view) => view,
            Err(error) => {
                let seen = (error.key.clone(), error.resource_version.clone());
                let mut last = self.shared.last_failure.lock();
                if last.as_ref() != Some(&seen) {
                    tracing::warn!(%error, "skipping a cached object that does not decode");
                    *last = Some(seen);
                }
                None
            }
        }
    }
}

fn decode<K: Resource + DeserializeOwned>(object: &Compact<K>) -> Result<K, ViewError> {
    object.to_typed().map_err(|error| ViewError {
        kind: K::KIND,
        key: object.key(),
        resource_version: object.resource_version().to_owned(),
        line: error.line(),
        column: error.column(),
        category: match error.classify() {
            serde_json::error::Category::Io => "I/O",
            serde_json::error::Category::Syntax => "syntax",
            serde_json::error::Category::Data => "a field of an unexpected type or value",
            serde_json::error::Category::Eof => "truncated JSON",
        },
    })
}

impl<K> fmt::Debug for TypedLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let views = self.shared.views.read();
        f.debug_struct("TypedLister")
            .field("kind", &std::any::type_name::<K>())
            .field("views", &views.len())
            .field("capacity", &views.capacity())
            .finish()
    }
}

/// A [`TypedLister`] for one namespace (client-go's typed `NamespaceLister`), borrowing the
/// lister and the namespace.
pub struct TypedNamespaceLister<'a, K> {
    typed: &'a TypedLister<K>,
    namespace: &'a str,
}

impl<K> Clone for TypedNamespaceLister<'_, K> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<K> Copy for TypedNamespaceLister<'_, K> {}

impl<'a, K> TypedNamespaceLister<'a, K>
where
    K: Resource + Object + DeserializeOwned,
{
    /// The object `name` in this namespace, typed: no decode when it was read before and has
    /// not changed since.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.typed.or_log(self.try_get(name))
    }

    /// The object `name` in this namespace, typed; an error if it does not decode as `K`.
    pub fn try_get(&self, name: &str) -> Result<Option<Arc<K>>, ViewError> {
        self.typed.try_get_in(self.namespace, name)
    }

    /// The namespace's cached objects whose labels match `selector`, typed (see
    /// [`TypedLister::list`]).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.typed.typed_all(self.lean_list(selector))
    }

    /// The namespace's cached objects whose labels match `selector`, each decoded only when
    /// its [`typed`](Listed::typed) form is asked for.
    pub fn list_lazy(&self, selector: &Selector) -> Vec<Listed<K>> {
        self.typed.listed_all(self.lean_list(selector))
    }

    /// Every cached object of the namespace, typed.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.list(&Selector::everything())
    }

    /// The namespace.
    pub fn namespace(&self) -> &'a str {
        self.namespace
    }

    fn lean_list(&self, selector: &Selector) -> Vec<Arc<Compact<K>>> {
        self.typed.lean.namespace(self.namespace).list(selector)
    }
}

impl<K> fmt::Debug for TypedNamespaceLister<'_, K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedNamespaceLister")
            .field("namespace", &self.namespace)
            .finish()
    }
}

/// A cached object did not decode as its typed kind. Says which object and where the JSON
/// did not fit, never the values in it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "cached {kind} {key} (resourceVersion {resource_version}) does not decode: {category} at line {line}, column {column}"
)]
pub struct ViewError {
    /// The kind (`K::KIND`).
    pub kind: &'static str,
    /// The object's key, `namespace/name`.
    pub key: String,
    /// The object's resourceVersion.
    pub resource_version: String,
    /// Where in the object's JSON text the decode failed.
    pub line: usize,
    /// The column of that line.
    pub column: usize,
    /// What failed, in words.
    pub category: &'static str,
}

#[cfg(test)]
mod tests;
