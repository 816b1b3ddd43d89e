//! Waiting for caches to sync, with a deadline and a reason: client-go's `WaitForCacheSync`
//! (`tools/cache/shared_informer.go`) and `WaitFor` (`synctrack`).
//!
//! A controller must not act before its caches hold the server's state, so it waits for
//! them at start-up. client-go polls `HasSynced` every 100 ms until a stop channel closes
//! and then says only "false"; a cache that can never sync (the resource is not served, the
//! credentials are refused) waits forever in silence. [`wait_for_cache_sync`] waits on the
//! informers' sync signals (no polling), gives up after a timeout, and returns a
//! [`CacheSyncError`] naming each cache that is not synced and why, from what its reflector
//! last saw.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::panics::InformerFailure;
use crate::processor::Registration;

/// Something that syncs: a [`SharedIndexInformer`](crate::SharedIndexInformer) or a
/// handler's [`Registration`] (client-go's `InformerSynced`/`DoneChecker`).
pub trait InformerSynced: Send + Sync {
    /// A name for messages.
    fn name(&self) -> String;
    /// Whether it has synced.
    fn has_synced(&self) -> bool;
    /// Waits until it has synced.
    fn wait_synced(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
    /// Why it has not synced (asked only when it has not).
    fn not_synced_reason(&self) -> NotSyncedReason;
}

/// Why a cache has not synced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotSyncedReason {
    /// The informer was never run.
    NotStarted,
    /// The informer stopped before syncing.
    Stopped,
    /// The informer stopped on a panic (see [`PanicPolicy::Stop`](crate::PanicPolicy::Stop));
    /// running it again rebuilds the cache from a relist.
    Failed(InformerFailure),
    /// The last list or watch failed (the reflector's last error: forbidden, not found,
    /// throttled, ...).
    Failing(String),
    /// No list has completed and no error was reported: the server has not answered.
    NoList,
    /// The list arrived (at this resourceVersion); its objects are still being applied.
    Processing {
        /// The list's resourceVersion.
        resource_version: String,
    },
    /// The informer has synced; this handler has not handled its initial objects yet.
    HandlerBehind {
        /// Notifications waiting in the handler's buffer.
        pending: usize,
    },
}

impl fmt::Display for NotSyncedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotSyncedReason::NotStarted => f.write_str("the informer was not started"),
            NotSyncedReason::Stopped => f.write_str("the informer stopped"),
            NotSyncedReason::Failed(failure) => write!(
                f,
                "the informer stopped because {failure}; run it again to rebuild the cache"
            ),
            NotSyncedReason::Failing(error) => write!(f, "{error}"),
            NotSyncedReason::NoList => f.write_str(
                "no list completed yet and no error reported: the server has not answered",
            ),
            NotSyncedReason::Processing { resource_version } => write!(
                f,
                "listed at resourceVersion {resource_version}; the objects are still being processed"
            ),
            NotSyncedReason::HandlerBehind { pending } => write!(
                f,
                "the handler has not handled its initial objects yet ({pending} notifications pending)"
            ),
        }
    }
}

/// Caches that did not sync in time.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CacheSyncError {
    /// How long the wait lasted.
    pub waited: Duration,
    /// Each cache not synced, by name, with the reason.
    pub not_synced: Vec<(String, NotSyncedReason)>,
}

impl fmt::Display for CacheSyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "caches not synced after {:?}: ", self.waited)?;
        for (i, (name, reason)) in self.not_synced.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{name}: {reason}")?;
        }
        Ok(())
    }
}

/// Waits until every one of `caches` has synced, at most `timeout` (client-go's
/// `WaitForCacheSync`, with a deadline and reasons).
///
/// ```no_run
/// # async fn example(pods: clientgo_informer::SharedIndexInformer<clientgo_apimachinery::DynamicObject>) {
/// use std::time::Duration;
/// use clientgo_informer::wait_for_cache_sync;
///
/// if let Err(error) = wait_for_cache_sync(&[&pods], Duration::from_secs(60)).await {
///     // e.g. "caches not synced after 60s: pods: list failed (forbidden): ..."
///     eprintln!("{error}");
/// }
/// # }
/// ```
pub async fn wait_for_cache_sync(
    caches: &[&dyn InformerSynced],
    timeout: Duration,
) -> Result<(), CacheSyncError> {
    let all = async {
        for cache in caches {
            cache.wait_synced().await;
        }
    };
    if tokio::time::timeout(timeout, all).await.is_ok() {
        return Ok(());
    }
    let not_synced: Vec<_> = caches
        .iter()
        .filter(|c| !c.has_synced())
        .map(|c| (c.name(), c.not_synced_reason()))
        .collect();
    if not_synced.is_empty() {
        return Ok(()); // synced at the last moment
    }
    Err(CacheSyncError {
        waited: timeout,
        not_synced,
    })
}

impl<T: Send + Sync + 'static> InformerSynced for Registration<T> {
    fn name(&self) -> String {
        format!("{} event handler {}", self.listener.owner, self.listener.id)
    }

    fn has_synced(&self) -> bool {
        Registration::has_synced(self)
    }

    fn wait_synced(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(Registration::wait_synced(self))
    }

    fn not_synced_reason(&self) -> NotSyncedReason {
        if let Some(failure) = self.listener.informer_failure() {
            return NotSyncedReason::Failed(failure);
        }
        if self.is_stopped() {
            return NotSyncedReason::Stopped;
        }
        if !self.listener.upstream_synced() {
            return NotSyncedReason::NoList;
        }
        NotSyncedReason::HandlerBehind {
            pending: self.pending(),
        }
    }
}
