//! The reflector's LIST: which resourceVersion, which page size, and the fallback to a
//! consistent read (client-go's `Reflector.list` and `relistResourceVersion`).
//!
//! Where it differs from client-go: the list runs in the reflector's own task and is simply
//! dropped when the reflector is cancelled (client-go runs it in a goroutine, with a channel
//! to re-raise its panics); the list is typed, so there is no `Table` kind to reject and no
//! list accessor that can fail; and the items move into [`ReflectorStore::replace`]
//! unconverted (client-go copies them into a `[]interface{}` first).
//!
//! [`ReflectorStore::replace`]: crate::ReflectorStore::replace

use clientgo_apimachinery::{Object, ObjectList};
use clientgo_rest::ListParams;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::status::ReflectorOperation;
use super::{Reflector, non_empty};
use crate::listwatch::{ListWatchError, ListerWatcher};
use crate::pager::{DEFAULT_PAGE_SIZE, ListPager};

impl<T, L> Reflector<T, L>
where
    T: Object + DeserializeOwned + Send + 'static,
    L: ListerWatcher<T>,
{
    /// The page size for a list at `rv` (client-go's choice in `list`): the configured one;
    /// else 500 if the first list came back paginated (no watch cache: keep paging); else no
    /// paging for a specific version, so that the watch cache can serve it (it ignores the
    /// limit for `"0"` anyway, and `""` must page to spare etcd); else 500.
    fn list_page_size(&self, rv: &str) -> u32 {
        if let Some(size) = self.page_size {
            return size;
        }
        if self.sync.lock().paginated_result {
            return DEFAULT_PAGE_SIZE;
        }
        if !rv.is_empty() && rv != "0" {
            return 0;
        }
        DEFAULT_PAGE_SIZE
    }

    /// Counts a LIST about to be sent; returns when it starts.
    fn list_started(&self) -> Instant {
        if let Some(metrics) = &self.metrics {
            metrics.list_started();
        }
        Instant::now()
    }

    /// Lists the collection and replaces the store with it.
    pub(super) async fn list(&self) -> Result<(), ListWatchError> {
        let rv = self.relist_resource_version();
        let pager = ListPager::with_page_size(self.list_page_size(&rv));
        let options = ListParams {
            resource_version: non_empty(rv.clone()),
            ..ListParams::default()
        };
        let mut start = self.list_started();
        let mut result = pager.list(&self.lister_watcher, options).await;
        if let Err(error) = &result {
            if error.is_expired() || error.is_too_large_resource_version() {
                // The version is gone (compacted) or not there yet (this server's watch
                // cache is behind): relist from the newest state with a consistent read.
                // The pager has already fallen back to a full list for an expired continue
                // token; this covers the first page and unpaginated lists.
                tracing::debug!(
                    reflector = %self.name, resource_version = %rv, %error,
                    "resourceVersion unavailable, relisting with a consistent read"
                );
                self.failure.record_error(ReflectorOperation::List, error);
                self.set_resource_version_unavailable(true);
                let retry = ListParams {
                    resource_version: non_empty(self.relist_resource_version()),
                    ..ListParams::default()
                };
                start = self.list_started();
                result = pager.list(&self.lister_watcher, retry).await;
            }
        }
        let paged = match result {
            Ok(paged) => paged,
            Err(error) => {
                // The failure record logs it (once per kind, reminders rate-limited).
                tracing::debug!(reflector = %self.name, %error, "failed to list");
                self.failure.record_error(ReflectorOperation::List, &error);
                return Err(error);
            }
        };
        {
            let mut sync = self.sync.lock();
            // Only the first list tells whether there is a watch cache: a consistent list
            // ("") is paginated even with one.
            if rv == "0" && paged.paginated {
                sync.paginated_result = true;
            }
            sync.rv_unavailable = false;
        }
        let ObjectList {
            metadata, items, ..
        } = paged.list;
        tracing::debug!(
            reflector = %self.name, items = items.len(),
            resource_version = %metadata.resource_version, paginated = paged.paginated, "listed"
        );
        if let Some(metrics) = &self.metrics {
            metrics.listed(start.elapsed(), items.len());
        }
        crate::shared_informer::journey::listed("LIST", &items);
        self.store.replace(items, metadata.resource_version.clone());
        self.set_last_sync_resource_version(&metadata.resource_version);
        self.failure.clear();
        Ok(())
    }
}
