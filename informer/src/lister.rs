//! Typed read access to an informer's cache: client-go's generated listers and
//! `tools/cache/listers.go` (`ListAll`, `ListAllByNamespace`, `GenericLister`).
//!
//! A [`Lister`] reads the [`Indexer`]: `list(selector)` over everything,
//! `namespace(ns).list(selector)` through the namespace index, `get(name)` by key. Results are
//! the cached `Arc`s themselves, never copies; treat them as immutable.
//!
//! Where it differs from client-go, and why: `get` returns `Option` instead of a `NotFound`
//! API error (the cache is not the server; "not in the cache" is a normal answer, and a
//! reconciler usually treats it as "deleted"). Selectors are tested while the store's read
//! lock is held, so only matching objects are cloned out. A namespace lister over a store
//! without the namespace index falls back to a full scan, with a warning once.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use clientgo_apimachinery::Object;
use clientgo_apimachinery::labels::Selector;

use crate::store::{Indexer, NAMESPACE_INDEX, WaitForResourceVersionError};

/// Lists and gets cached objects of one type (client-go's typed `Lister`).
///
/// ```
/// use std::sync::Arc;
/// use clientgo_apimachinery::{DynamicObject, Object, ObjectKey, labels::Selector};
/// use clientgo_informer::{Indexer, Indexers, Lister};
///
/// let store = Arc::new(Indexer::with_indexers(Indexers::namespace()));
/// let mut web = DynamicObject::new("web").within("prod");
/// web.metadata.labels.insert("app".into(), "web".into());
/// store.add(Arc::new(web));
/// store.add(Arc::new(DynamicObject::new("db").within("prod")));
///
/// let lister = Lister::new(store);
/// let selector: Selector = "app=web".parse()?;
/// assert_eq!(lister.namespace("prod").list(&selector).len(), 1);
/// assert_eq!(lister.list(&Selector::everything()).len(), 2);
/// assert!(lister.namespace("prod").get("db").is_some());
/// assert!(lister.get_by_key(&ObjectKey::new("prod", "db")).is_some()); // a work queue's key
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Lister<T> {
    indexer: Arc<Indexer<T>>,
    warned: Arc<AtomicBool>,
}

impl<T> Clone for Lister<T> {
    fn clone(&self) -> Self {
        Lister {
            indexer: self.indexer.clone(),
            warned: self.warned.clone(),
        }
    }
}

impl<T: Object> Lister<T> {
    /// A lister over `indexer`.
    pub fn new(indexer: Arc<Indexer<T>>) -> Self {
        Lister {
            indexer,
            warned: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Every cached object whose labels match `selector`, in all namespaces (client-go's
    /// `ListAll`).
    pub fn list(&self, selector: &Selector) -> Vec<Arc<T>> {
        if selector.is_empty() {
            return self.indexer.list();
        }
        self.indexer
            .list_matching(|o| selector.matches(&o.labels()))
    }

    /// Every cached object, in all namespaces: `list(&Selector::everything())`.
    pub fn list_all(&self) -> Vec<Arc<T>> {
        self.indexer.list()
    }

    /// The cluster-scoped object `name`.
    pub fn get(&self, name: &str) -> Option<Arc<T>> {
        self.indexer.get_by_key(name)
    }

    /// The object `key` names, namespaced or not: an
    /// [`ObjectKey`](clientgo_apimachinery::ObjectKey) from the work queue, or
    /// its text (`namespace/name`, `name`).
    pub fn get_by_key<K: AsRef<str> + ?Sized>(&self, key: &K) -> Option<Arc<T>> {
        self.indexer.get_by_key(key.as_ref())
    }

    /// Waits until the cache has caught up to `resource_version` (of this lister's
    /// resource), at most `timeout`: the read-your-writes barrier after a write (see
    /// [`Indexer::wait_for_resource_version`]).
    pub async fn wait_for_resource_version(
        &self,
        resource_version: &str,
        timeout: Duration,
    ) -> Result<(), WaitForResourceVersionError> {
        self.indexer
            .wait_for_resource_version(resource_version, timeout)
            .await
    }

    /// A lister for one namespace (`""` lists every namespace).
    pub fn namespace(&self, namespace: &str) -> NamespaceLister<T> {
        NamespaceLister {
            lister: self.clone(),
            namespace: namespace.to_owned(),
        }
    }

    /// The store this lister reads.
    pub fn indexer(&self) -> &Arc<Indexer<T>> {
        &self.indexer
    }
}

impl<T: Object> fmt::Debug for Lister<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lister")
            .field("indexer", &self.indexer)
            .finish()
    }
}

/// Lists and gets cached objects of one namespace (client-go's typed `NamespaceLister`).
/// Clones are cheap and read the same cache.
pub struct NamespaceLister<T> {
    lister: Lister<T>,
    namespace: String,
}

impl<T> Clone for NamespaceLister<T> {
    fn clone(&self) -> Self {
        NamespaceLister {
            lister: self.lister.clone(),
            namespace: self.namespace.clone(),
        }
    }
}

impl<T: Object> NamespaceLister<T> {
    /// Every cached object of the namespace: `list(&Selector::everything())`.
    pub fn list_all(&self) -> Vec<Arc<T>> {
        self.list(&Selector::everything())
    }

    /// The namespace's cached objects whose labels match `selector` (client-go's
    /// `ListAllByNamespace`), found through the namespace index.
    pub fn list(&self, selector: &Selector) -> Vec<Arc<T>> {
        if self.namespace.is_empty() {
            return self.lister.list(selector);
        }
        let indexer = &self.lister.indexer;
        let matches = |o: &T| selector.is_empty() || selector.matches(&o.labels());
        match indexer.by_index_matching(NAMESPACE_INDEX, &self.namespace, matches) {
            Ok(objects) => objects,
            Err(_) => {
                if !self.lister.warned.swap(true, Ordering::Relaxed) {
                    tracing::warn!(
                        "the store has no {NAMESPACE_INDEX:?} index: namespace listers scan every object"
                    );
                }
                indexer.list_matching(|o| o.namespace() == self.namespace && matches(o))
            }
        }
    }

    /// The object `name` in this namespace.
    pub fn get(&self, name: &str) -> Option<Arc<T>> {
        let mut key = String::with_capacity(self.namespace.len() + 1 + name.len());
        key.push_str(&self.namespace);
        key.push('/');
        key.push_str(name);
        self.lister.indexer.get_by_key(&key)
    }

    /// The namespace.
    pub fn namespace(&self) -> &str {
        &self.namespace
    }

    /// [`Lister::wait_for_resource_version`]: the read-your-writes barrier after a write.
    pub async fn wait_for_resource_version(
        &self,
        resource_version: &str,
        timeout: Duration,
    ) -> Result<(), WaitForResourceVersionError> {
        self.lister
            .wait_for_resource_version(resource_version, timeout)
            .await
    }
}

impl<T: Object> fmt::Debug for NamespaceLister<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceLister")
            .field("namespace", &self.namespace)
            .finish()
    }
}
