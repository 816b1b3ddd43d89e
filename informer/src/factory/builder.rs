//! How a [`SharedInformerFactory`] is configured: client-go's `SharedInformerOption`s
//! (`WithNamespace`, `WithTweakListOptions`, `WithCustomResyncConfig`, `WithTransform`) as a
//! builder.
//!
//! Where it differs from client-go: a custom resync period is keyed by resource (group,
//! version, plural) rather than by Go type, so it applies to the typed, dynamic and metadata
//! informers of that resource alike; a transform is typed, so one is registered per object
//! type (a typed `T`, `DynamicObject` for every dynamic informer, `PartialObjectMetadata` for
//! every metadata informer) instead of one function over `interface{}`.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{GroupVersionResource, Resource};
use clientgo_rest::{ListParams, RestClient};

use super::SharedInformerFactory;
use super::tweak::TweakFn;
use crate::shared_informer::SharedInformerOptions;
use crate::transform::TransformFunc;

/// Builds a [`SharedInformerFactory`]; see [`SharedInformerFactory::builder`].
pub struct SharedInformerFactoryBuilder {
    pub(super) client: RestClient,
    pub(super) namespace: Option<String>,
    pub(super) default_resync: Duration,
    pub(super) custom_resync: HashMap<GroupVersionResource, Duration>,
    pub(super) tweak: Option<TweakFn>,
    pub(super) options: SharedInformerOptions,
    /// `TransformFunc<T>`s by `TypeId::of::<T>()`.
    pub(super) transforms: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl SharedInformerFactoryBuilder {
    pub(super) fn new(client: &RestClient) -> Self {
        SharedInformerFactoryBuilder {
            client: client.clone(),
            namespace: None,
            default_resync: Duration::ZERO,
            custom_resync: HashMap::new(),
            tweak: None,
            options: SharedInformerOptions::default(),
            transforms: HashMap::new(),
        }
    }

    /// Only objects of `namespace` (client-go's `WithNamespace`); all namespaces by default.
    /// Informers of cluster-scoped resources ignore it.
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = Some(namespace.into()).filter(|ns| !ns.is_empty());
        self
    }

    /// The resync period of every informer without a custom one (client-go's
    /// `defaultResync`); zero, the default, for none.
    pub fn default_resync(mut self, period: Duration) -> Self {
        self.default_resync = period;
        self
    }

    /// Edits the options of every list and watch of every informer (client-go's
    /// `WithTweakListOptions`), typically to set a label or field selector. A watch's options
    /// are shown to `tweak` as a [`ListParams`] with the watch's selectors and
    /// resourceVersion; what it sets in the selectors is what the watch asks for.
    ///
    /// The options are the REST client's [`ListParams`], so one tweak also serves a list made
    /// by hand with [`ResourceClient::list`](clientgo_rest::ResourceClient::list):
    ///
    /// ```no_run
    /// # fn example(client: &clientgo_rest::RestClient) {
    /// use clientgo_informer::SharedInformerFactory;
    /// use clientgo_rest::ListParams;
    ///
    /// fn web_only(options: &mut ListParams) {
    ///     options.label_selector = Some("app=web".into());
    /// }
    ///
    /// let factory = SharedInformerFactory::builder(client)
    ///     .tweak_list_options(web_only)
    ///     .build();
    /// let mut by_hand = ListParams::default();
    /// web_only(&mut by_hand); // for a `ResourceClient::list` of the same objects
    /// # }
    /// ```
    pub fn tweak_list_options(
        mut self,
        tweak: impl Fn(&mut ListParams) + Send + Sync + 'static,
    ) -> Self {
        self.tweak = Some(Arc::new(tweak));
        self
    }

    /// The resync period of the informers of `T`'s resource (client-go's
    /// `WithCustomResyncConfig`); see [`custom_resync_for`](Self::custom_resync_for).
    pub fn custom_resync<T: Resource>(self, period: Duration) -> Self {
        self.custom_resync_for(T::gvr(), period)
    }

    /// The resync period of the informers of `resource`: typed, dynamic and metadata alike.
    pub fn custom_resync_for(mut self, resource: GroupVersionResource, period: Duration) -> Self {
        self.custom_resync.insert(resource, period);
        self
    }

    /// A transform applied to every object of type `T` before it is cached (client-go's
    /// `WithTransform`), e.g. [`strip_managed_fields`](crate::strip_managed_fields). `T` is
    /// the type an informer caches: a typed resource, `DynamicObject` for every dynamic
    /// informer, `PartialObjectMetadata` for every metadata informer. A second transform for
    /// the same type replaces the first.
    pub fn transform<T: 'static>(
        mut self,
        transform: impl Fn(T) -> T + Send + Sync + 'static,
    ) -> Self {
        let transform: TransformFunc<T> = Arc::new(transform);
        self.transforms
            .insert(TypeId::of::<T>(), Arc::new(transform));
        self
    }

    /// The options every informer starts from (queue kind, reflector settings such as the
    /// page size or the watch-list switch, and any other per-informer setting). The factory
    /// sets each informer's `name` and `resync_period`. Call [`on_panic`](Self::on_panic)
    /// after it: these options carry a panic policy too.
    pub fn informer_options(mut self, options: SharedInformerOptions) -> Self {
        self.options = options;
        self
    }

    /// What a panic in a transform, an index function or a handler does in every informer
    /// of the factory (see [`PanicPolicy`](crate::PanicPolicy)): abort the process (the
    /// default) or stop the informer, which the next [`start`](SharedInformerFactory::start)
    /// runs again. One informer may differ:
    /// [`SharedIndexInformer::set_panic_policy`](crate::SharedIndexInformer::set_panic_policy).
    pub fn on_panic(mut self, policy: crate::PanicPolicy) -> Self {
        self.options.on_panic = policy;
        self
    }

    /// The factory.
    pub fn build(self) -> SharedInformerFactory {
        SharedInformerFactory::from_builder(self)
    }
}

impl fmt::Debug for SharedInformerFactoryBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedInformerFactoryBuilder")
            .field("namespace", &self.namespace)
            .field("default_resync", &self.default_resync)
            .field("custom_resync", &self.custom_resync)
            .field("tweak", &self.tweak.is_some())
            .field("options", &self.options)
            .field("transforms", &self.transforms.len())
            .finish_non_exhaustive()
    }
}
