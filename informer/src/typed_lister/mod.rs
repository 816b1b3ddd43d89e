//! Typed reads over a lean cache: [`TypedLister`] reads an informer's
//! [`Compact<K>`](Compact) store and hands out typed `Arc<K>` views, decoded on first read
//! and kept for hot objects in a bounded cache, valid for one resourceVersion.
//!
//! client-go's generated listers hand out the typed object the informer decoded when it
//! arrived: a `get` is a pointer read, and every cached object costs its full typed size
//! (client-go's typed Pod about 8.4 KB; k8s-openapi's `Pod` about 26.5 KB, the S1typed
//! workload). Here the informer holds `Compact<K>` (about 3.1 KB per Pod: metadata parsed,
//! the rest kept as JSON text) and the lister builds `K` only for the objects a controller
//! reads:
//!
//! * a `get` of an object read before and unchanged since is a lookup in the store and one
//!   in the view cache, both under read locks, and an `Arc` clone: no decode;
//! * a `get` of an object not read before, or changed since (a new resourceVersion), decodes
//!   it ([`Compact::to_typed`]) and keeps the view, evicting the view read least recently
//!   (CLOCK, see `views.rs`) once [`capacity`](TypedLister::with_capacity) views are kept;
//! * `list` returns the kept views and decodes the others without keeping them, so a full
//!   list does not push the hot objects out.
//!
//! Handlers and indexes see the `Compact<K>` (its metadata is parsed), so events are never
//! decoded into `K` unless a handler asks for it.
//!
//! ## Why this form (measured, benches/README.md, "Typed caches")
//!
//! On S1's 100,000 Pods (2.9 KB of JSON each, with `managedFields`), resident bytes per Pod:
//! k8s-openapi's `Pod` in the store 26,552 (`S1openapi`); the same with `managedFields`
//! stripped about 5,400 less, still more than 23,000, as most of a Pod is its spec and status
//! as a tree of `Option`s, strings, vectors and maps; the lean `Compact<Pod>` 3,088 (`S1`);
//! and the lean store read through this lister, its 1,024 views kept, 3,381 (`S1typed`),
//! against client-go's 8,432. A "lean typed" form (`managedFields` raw, strings and maps sized
//! to their content) would need generated code for every kind. So the typed informer's
//! default stays as client-go's (it keeps `managedFields`; they are raw text in the lean form,
//! hence cheap), and the memory bound comes from the lean store and the bounded view cache.
//!
//! The price is the cold read: a Pod not read before is decoded on its first `get` (about
//! 17 µs on an idle core), and a typed `list` of every object decodes those not kept (seconds
//! for 100,000 Pods, where a typed store hands out pointers in milliseconds). Filter with a
//! selector or a namespace first (the filter reads the lean metadata), read the lean objects
//! through [`lean`](TypedLister::lean), or keep more views with
//! [`with_capacity`](TypedLister::with_capacity).
//!
//! ## Objects that do not decode as `K`
//!
//! The lean form checks that an object is JSON with parsable metadata; a typed decode can
//! still fail (a field of an unexpected type). client-go's typed informer never caches such
//! an object (its watch fails on it). Here [`get`](TypedNamespaceLister::get) and `list`
//! skip it and log it once per resourceVersion with its key and where the decode failed (no
//! field values); [`try_get`](TypedNamespaceLister::try_get) returns the error.
//!
//! Objects without a resourceVersion (built by hand, never from a server) are decoded on
//! every read: without one, a change cannot be told from the view kept.

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
    fn hash(&self, namespace: &str, name: &str) -> u64 {
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

    /// Every cached object whose labels match `selector`, in all namespaces, typed. Views
    /// kept are reused; the others are decoded and not kept.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.typed_all(self.lean.list(selector))
    }

    /// The cluster-scoped object `name`, typed.
    pub fn get(&self, name: &str) -> Option<Arc<K>> {
        self.or_log(self.try_get(name))
    }

    /// The cluster-scoped object `name`, typed; an error if it does not decode as `K`.
    pub fn try_get(&self, name: &str) -> Result<Option<Arc<K>>, ViewError> {
        self.lean.get(name).map(|o| self.view(&o)).transpose()
    }

    /// A lister for one namespace (`""` lists every namespace).
    pub fn namespace(&self, namespace: &str) -> TypedNamespaceLister<K> {
        TypedNamespaceLister {
            lean: self.lean.namespace(namespace),
            typed: self.clone(),
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

    /// The typed view of `object`: the kept one if it is of the same resourceVersion, else
    /// decoded and kept.
    fn view(&self, object: &Compact<K>) -> Result<Arc<K>, ViewError> {
        let rv = object.resource_version();
        let (namespace, name) = (object.namespace(), object.name());
        if rv.is_empty() {
            return Ok(Arc::new(decode(object)?));
        }
        let hash = self.shared.hash(namespace, name);
        let kept = self.shared.views.read().get(hash, namespace, name, rv);
        if let Some(view) = kept {
            return Ok(view);
        }
        let view = Arc::new(decode(object)?);
        // The view it replaces or evicts is freed after the lock is released.
        let dropped = self.shared.views.write().insert(hash, view.clone());
        drop(dropped);
        Ok(view)
    }

    fn typed_all(&self, objects: Vec<Arc<Compact<K>>>) -> Vec<Arc<K>> {
        let mut typed = Vec::with_capacity(objects.len());
        let mut cold = Vec::new();
        {
            let views = self.shared.views.read();
            for object in &objects {
                let (namespace, name) = (object.namespace(), object.name());
                let rv = object.resource_version();
                let kept = (!rv.is_empty())
                    .then(|| views.get(self.shared.hash(namespace, name), namespace, name, rv))
                    .flatten();
                match kept {
                    Some(view) => typed.push(view),
                    None => cold.push(object),
                }
            }
        }
        for object in cold {
            if let Some(view) = self.or_log(decode(object).map(|k| Some(Arc::new(k)))) {
                typed.push(view);
            }
        }
        typed
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

/// A [`TypedLister`] for one namespace (client-go's typed `NamespaceLister`).
pub struct TypedNamespaceLister<K> {
    lean: crate::lister::NamespaceLister<Compact<K>>,
    typed: TypedLister<K>,
}

impl<K> TypedNamespaceLister<K>
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
        self.lean.get(name).map(|o| self.typed.view(&o)).transpose()
    }

    /// The namespace's cached objects whose labels match `selector`, typed.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<K>> {
        self.typed.typed_all(self.lean.list(selector))
    }

    /// Every cached object of the namespace, typed.
    pub fn list_all(&self) -> Vec<Arc<K>> {
        self.list(&Selector::everything())
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        self.lean.namespace()
    }
}

impl<K> fmt::Debug for TypedNamespaceLister<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TypedNamespaceLister")
            .field("namespace", &self.lean.namespace())
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
