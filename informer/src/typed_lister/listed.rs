//! [`Listed`]: one object of a lazy typed list, its lean form at hand and its typed form
//! decoded on first request.
//!
//! client-go's typed lister returns every listed object typed, because its cache holds them
//! typed. Over a lean cache, typing a list means decoding every object in it that no view
//! was kept for: for 100,000 Pods, seconds (benches/README.md, "Typed caches"). A `Listed`
//! list costs what the lean list costs, plus a look in the view cache per object; the
//! decode is paid only for the objects whose typed form is read, once each.

use std::fmt;
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use clientgo_apimachinery::{Compact, Object, Resource};
use serde::de::DeserializeOwned;

use super::{ViewError, decode};

/// One object of [`TypedLister::list_lazy`](super::TypedLister::list_lazy): the cached
/// lean object (read its metadata through `Deref`, e.g. `listed.labels()`), and its typed
/// form through [`typed`](Listed::typed).
///
/// ```
/// use std::sync::Arc;
/// use clientgo_apimachinery::{Compact, Object, labels::Selector};
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
/// for (name, owner) in [("a", "web"), ("b", "db")] {
///     let json = format!(r#"{{"metadata":{{"name":"{name}","namespace":"prod",
///         "resourceVersion":"1","annotations":{{"owner":"{owner}"}}}},"data":{{"k":"v"}}}}"#);
///     store.add(Arc::new(serde_json::from_str::<Compact<ConfigMap>>(&json)?));
/// }
/// let lister = TypedLister::new(store);
/// // Filter on the metadata, decode only what passes.
/// let web: Vec<Arc<ConfigMap>> = lister
///     .list_lazy(&Selector::everything())
///     .iter()
///     .filter(|o| o.annotations().get("owner") == Some("web"))
///     .filter_map(|o| o.typed().ok())
///     .collect();
/// assert_eq!(web.len(), 1);
/// assert_eq!(web[0].metadata.name, "a");
/// # Ok::<(), serde_json::Error>(())
/// ```
pub struct Listed<K> {
    lean: Arc<Compact<K>>,
    typed: OnceLock<Arc<K>>,
}

impl<K> Listed<K> {
    /// `lean`, with the view kept for it, if one is.
    pub(super) fn new(lean: Arc<Compact<K>>, view: Option<Arc<K>>) -> Self {
        let typed = OnceLock::new();
        if let Some(view) = view {
            let _ = typed.set(view);
        }
        Listed { lean, typed }
    }

    /// The cached lean object.
    pub fn lean(&self) -> &Arc<Compact<K>> {
        &self.lean
    }

    /// The cached lean object, owned.
    pub fn into_lean(self) -> Arc<Compact<K>> {
        self.lean
    }

    /// Whether the typed form is at hand (a view was kept, or it was decoded already).
    pub fn is_decoded(&self) -> bool {
        self.typed.get().is_some()
    }
}

impl<K: Resource + DeserializeOwned> Listed<K> {
    /// The typed object: the view kept for it, else decoded now (once: later calls return
    /// the same `Arc`). Objects decoded here are not added to the lister's view cache, so a
    /// pass over a long list does not push the hot objects out. An error if the object
    /// does not decode as `K` (see [`ViewError`]).
    pub fn typed(&self) -> Result<Arc<K>, ViewError> {
        if let Some(view) = self.typed.get() {
            return Ok(view.clone());
        }
        let view = Arc::new(decode(&self.lean)?);
        Ok(self.typed.get_or_init(|| view).clone())
    }
}

impl<K> Deref for Listed<K> {
    type Target = Compact<K>;

    fn deref(&self) -> &Compact<K> {
        &self.lean
    }
}

impl<K> Clone for Listed<K> {
    fn clone(&self) -> Self {
        Listed {
            lean: self.lean.clone(),
            typed: self.typed.clone(),
        }
    }
}

impl<K> fmt::Debug for Listed<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Listed")
            .field("key", &self.lean.key())
            .field("resource_version", &self.lean.resource_version())
            .field("decoded", &self.is_decoded())
            .finish()
    }
}
