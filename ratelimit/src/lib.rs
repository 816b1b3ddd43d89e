//! Rate limiters for controllers, ported from client-go.
//!
//! Two families live here, as in client-go:
//!
//! * **Work queue rate limiters** (client-go `util/workqueue/default_rate_limiters.go`): a
//!   [`RateLimiter`] decides how long an item must wait before it is retried. They are what a
//!   rate-limited work queue consults on `add_rate_limited`.
//! * **The request throttle** (client-go `util/flowcontrol/throttle.go`): a token bucket that a
//!   REST client passes every request through, so one process never floods the API server.
//!
//! Time comes from [`tokio::time::Instant`], so tests drive every limiter with tokio's paused
//! clock instead of sleeping.
//!
//! | client-go | here |
//! |-----------|------|
//! | `TypedItemExponentialFailureRateLimiter` | [`ItemExponentialFailureRateLimiter`] |
//! | (none: kubernetes/kubernetes#132805) | [`ItemExponentialBackoffRateLimiter`] |
//! | `TypedItemFastSlowRateLimiter` | [`ItemFastSlowRateLimiter`] |
//! | `TypedBucketRateLimiter` | [`BucketRateLimiter`] |
//! | `TypedMaxOfRateLimiter` | [`MaxOfRateLimiter`] |
//! | `TypedWithMaxWaitRateLimiter` | [`WithMaxWaitRateLimiter`] |
//! | `DefaultTypedControllerRateLimiter` | [`default_controller_rate_limiter`] |
//! | `DefaultTypedItemBasedRateLimiter` | [`default_item_based_rate_limiter`] |
//! | `golang.org/x/time/rate.Limiter` | [`TokenBucket`] |
//! | `flowcontrol.NewTokenBucketRateLimiter` | [`Throttle`] |
//!
//! ```
//! use std::time::Duration;
//! use clientgo_ratelimit::{RateLimiter, Throttle, default_controller_rate_limiter};
//!
//! # async fn example() {
//! // A work queue's limiter: per-item exponential backoff and an overall token bucket.
//! let limiter = default_controller_rate_limiter::<String>();
//! let key = "default/web".to_string();
//! assert_eq!(limiter.when(&key), Duration::from_millis(5)); // first failure
//! assert_eq!(limiter.when(&key), Duration::from_millis(10)); // second failure
//! assert_eq!(limiter.num_requeues(&key), 2);
//! limiter.forget(&key); // it succeeded
//!
//! // A REST client's throttle: 5 requests per second, bursts of 10, shared by its clones.
//! let throttle = Throttle::new(5.0, 10);
//! let for_a_request = throttle.clone();
//! for_a_request.acquire().await;
//! assert!(throttle.try_acquire());
//! # }
//! # tokio::runtime::Builder::new_current_thread()
//! #     .enable_time()
//! #     .start_paused(true)
//! #     .build()
//! #     .unwrap()
//! #     .block_on(example());
//! ```

#![deny(missing_docs)]

mod backoff;
mod bucket;
mod exponential;
mod items;
mod limiters;
mod throttle;

use std::sync::Arc;
use std::time::Duration;

pub use backoff::ItemExponentialBackoffRateLimiter;
pub use bucket::{INFINITE_DELAY, Reservation, TokenBucket};
pub use exponential::ItemExponentialFailureRateLimiter;
pub use limiters::{
    BucketRateLimiter, ItemFastSlowRateLimiter, MaxOfRateLimiter, WithMaxWaitRateLimiter,
    default_controller_rate_limiter, default_item_based_rate_limiter,
};
pub use throttle::{DEFAULT_BURST, DEFAULT_QPS, Throttle, WouldExceedDeadline};

/// Decides how long an item waits before it is retried.
///
/// This is client-go's `TypedRateLimiter[T]`. [`when`](RateLimiter::when) is called each time an
/// item fails and is put back (it records the failure), [`forget`](RateLimiter::forget) when the
/// item succeeded and its history should be dropped, and
/// [`num_requeues`](RateLimiter::num_requeues) reports how many failures are on record.
///
/// Implementations are shared between the workers of a queue, so every method takes `&self` and
/// must be safe to call from many threads at once.
pub trait RateLimiter<T>: Send + Sync {
    /// Records a failure of `item` and returns how long it must wait before it is retried.
    fn when(&self, item: &T) -> Duration;
    /// Stops tracking `item`: its next failure starts from a clean history.
    fn forget(&self, item: &T);
    /// How many failures of `item` are on record.
    fn num_requeues(&self, item: &T) -> usize;
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Box<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }

    fn forget(&self, item: &T) {
        (**self).forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
}

impl<T, L: RateLimiter<T> + ?Sized> RateLimiter<T> for Arc<L> {
    fn when(&self, item: &T) -> Duration {
        (**self).when(item)
    }

    fn forget(&self, item: &T) {
        (**self).forget(item);
    }

    fn num_requeues(&self, item: &T) -> usize {
        (**self).num_requeues(item)
    }
}
