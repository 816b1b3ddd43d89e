//! The factory's "tweak list options": client-go's `internalinterfaces.TweakListOptionsFunc`,
//! applied to every list and watch of an informer.
//!
//! In client-go each generated informer's `ListFunc` and `WatchFunc` pass the request's
//! `metav1.ListOptions` through the factory's tweak before sending it, which is how a factory
//! narrows all its informers to a label or field selector. [`Tweaked`] does the same around
//! any [`ListerWatcher`]: a list's [`ListParams`] go through the tweak as they are. A watch
//! takes [`WatchParams`] here; the tweak sees them as a [`ListParams`] carrying the watch's
//! selectors, resourceVersion and match, and what it leaves in the selectors is what the
//! watch asks for (the other fields have no meaning on a watch, or belong to the reflector:
//! its timeout, bookmarks and initial events are the reflector's to choose).

use std::fmt;
use std::sync::Arc;

use clientgo_apimachinery::ObjectList;
use clientgo_rest::{ListParams, WatchParams};
use clientgo_watch::Watch;

use crate::listwatch::{ListWatchError, ListerWatcher};

/// A closure that edits the options of every list and watch (client-go's
/// `TweakListOptionsFunc`).
pub(super) type TweakFn = Arc<dyn Fn(&mut ListParams) + Send + Sync>;

/// A [`ListerWatcher`] whose requests first go through a tweak.
pub(super) struct Tweaked<L> {
    inner: L,
    tweak: Option<TweakFn>,
}

impl<L> Tweaked<L> {
    pub(super) fn new(inner: L, tweak: Option<TweakFn>) -> Self {
        Tweaked { inner, tweak }
    }

    fn list_options(&self, options: &ListParams) -> ListParams {
        let mut options = options.clone();
        if let Some(tweak) = &self.tweak {
            tweak(&mut options);
        }
        options
    }

    fn watch_options(&self, options: &WatchParams) -> WatchParams {
        let Some(tweak) = &self.tweak else {
            return options.clone();
        };
        let mut seen = ListParams {
            label_selector: options.label_selector.clone(),
            field_selector: options.field_selector.clone(),
            resource_version: options.resource_version.clone(),
            resource_version_match: options.resource_version_match.clone(),
            ..ListParams::default()
        };
        tweak(&mut seen);
        WatchParams {
            label_selector: seen.label_selector,
            field_selector: seen.field_selector,
            ..options.clone()
        }
    }
}

impl<L: fmt::Debug> fmt::Debug for Tweaked<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tweaked")
            .field("inner", &self.inner)
            .field("tweak", &self.tweak.is_some())
            .finish()
    }
}

impl<T, L> ListerWatcher<T> for Tweaked<L>
where
    L: ListerWatcher<T>,
{
    async fn list(&self, options: &ListParams) -> Result<ObjectList<T>, ListWatchError> {
        let options = self.list_options(options);
        self.inner.list(&options).await
    }

    async fn watch(&self, options: &WatchParams) -> Result<Watch<T>, ListWatchError> {
        let options = self.watch_options(options);
        self.inner.watch(&options).await
    }

    fn supports_watch_list(&self) -> bool {
        self.inner.supports_watch_list()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tweaked(tweak: impl Fn(&mut ListParams) + Send + Sync + 'static) -> Tweaked<()> {
        Tweaked::new((), Some(Arc::new(tweak)))
    }

    #[test]
    fn lists_go_through_the_tweak_as_they_are() {
        let t = tweaked(|o| {
            o.label_selector = Some("app=web".into());
            o.limit = Some(7);
        });
        let asked = ListParams {
            resource_version: Some("0".into()),
            ..ListParams::default()
        };
        let sent = t.list_options(&asked);
        assert_eq!(sent.label_selector.as_deref(), Some("app=web"));
        assert_eq!(sent.limit, Some(7));
        assert_eq!(sent.resource_version.as_deref(), Some("0"));
    }

    #[test]
    fn watches_take_the_tweaked_selectors_only() {
        let t = tweaked(|o| {
            assert_eq!(
                o.resource_version.as_deref(),
                Some("12"),
                "the tweak sees the rv"
            );
            o.field_selector = Some("metadata.name=a".into());
            o.resource_version = Some("1".into());
        });
        let asked = WatchParams {
            resource_version: Some("12".into()),
            allow_watch_bookmarks: true,
            timeout_seconds: Some(300),
            ..WatchParams::default()
        };
        let sent = t.watch_options(&asked);
        assert_eq!(sent.field_selector.as_deref(), Some("metadata.name=a"));
        assert_eq!(sent.resource_version.as_deref(), Some("12"));
        assert!(sent.allow_watch_bookmarks);
        assert_eq!(sent.timeout_seconds, Some(300));
    }

    #[test]
    fn no_tweak_changes_nothing() {
        let t = Tweaked::new((), None);
        let list = ListParams {
            limit: Some(500),
            ..ListParams::default()
        };
        assert_eq!(t.list_options(&list), list);
        let watch = WatchParams {
            label_selector: Some("a=b".into()),
            ..WatchParams::default()
        };
        assert_eq!(t.watch_options(&watch), watch);
    }
}
