//! The client-side request throttle of a REST client: client-go's
//! `flowcontrol.NewTokenBucketRateLimiter(qps, burst)` (`util/flowcontrol/throttle.go`).
//!
//! A [`Throttle`] is a [`TokenBucket`] shared by every request of one client: a request waits for
//! a token before it is sent, so a process never sends more than `qps` requests per second on
//! average, with bursts of up to `burst`.
//!
//! Differences from client-go (the type's docs give the details):
//!
//! * one concrete, cheaply cloned type instead of an interface with implementations and fakes,
//!   and no `Stop`: dropping the `acquire` future is how waiting ends;
//! * `qps <= 0` (or NaN) means unlimited, as a negative QPS does in `rest.Config`, because a
//!   zero-rate bucket would never refill;
//! * a zero burst counts as 1, where client-go's `Accept` would block forever;
//! * `acquire` is cancel-safe: a dropped future gives its reservation back, as x/time/rate's
//!   `Reservation.Cancel` does, so an abandoned request does not hold back the ones behind it.

use std::fmt;
use std::sync::Arc;

use tokio::time::Instant;

use crate::bucket::{Reservation, TokenBucket};

/// client-go's default QPS for a REST client when `rest.Config.QPS` is zero.
pub const DEFAULT_QPS: f32 = 5.0;

/// client-go's default burst for a REST client when `rest.Config.Burst` is zero.
pub const DEFAULT_BURST: u32 = 10;

/// Throttles the requests of a client to `qps` per second with bursts of up to `burst`: client-go's
/// `flowcontrol.NewTokenBucketRateLimiter(qps, burst)`.
///
/// Clones share one bucket: build one `Throttle` per client and clone it into every request.
/// [`acquire`](Self::acquire) is client-go's `Accept`, [`try_acquire`](Self::try_acquire) its
/// `TryAccept` and [`acquire_by`](Self::acquire_by) its `Wait(ctx)` for a context with a deadline.
/// Waiting happens on tokio's clock, so it needs a tokio runtime with the time driver enabled.
///
/// Where it differs from client-go:
///
/// * A `qps` of zero or less (or NaN) means unlimited. In client-go, `rest.Config` turns a zero
///   QPS into [`DEFAULT_QPS`] (and a zero burst into [`DEFAULT_BURST`]) before building the
///   limiter, and a negative QPS disables throttling. A zero-rate bucket would hand out its
///   first burst and then nothing ever again, which no client wants.
/// * A zero `burst` with a positive `qps` counts as 1, where client-go's `Accept` would block
///   forever (x/time/rate refuses every token when the burst is zero).
/// * Dropping an `acquire` future while it sleeps gives its token back, as x/time/rate's
///   `Reservation.Cancel` does, so an abandoned request does not hold back the ones behind it.
/// * There are no fakes: [`Throttle::unlimited`] is the always-accepting one, and a throttle that
///   never grants is a future that never completes.
///
/// ```
/// # async fn example() {
/// use clientgo_ratelimit::{DEFAULT_BURST, DEFAULT_QPS, Throttle};
///
/// let throttle = Throttle::new(DEFAULT_QPS, DEFAULT_BURST);
/// for _ in 0..DEFAULT_BURST {
///     throttle.acquire().await; // the bucket starts full: no waiting
/// }
/// assert!(!throttle.try_acquire()); // the next token is 200 ms away
/// throttle.acquire().await; // ...so this sleeps 200 ms
/// # }
/// # tokio::runtime::Builder::new_current_thread()
/// #     .enable_time()
/// #     .start_paused(true)
/// #     .build()
/// #     .unwrap()
/// #     .block_on(example());
/// ```
#[derive(Clone, Debug)]
pub struct Throttle {
    /// `None` when unlimited.
    bucket: Option<Arc<TokenBucket>>,
    qps: f32,
}

impl Throttle {
    /// A throttle allowing `qps` requests per second on average and bursts of `burst`.
    ///
    /// A `qps` of zero or less, NaN or infinity means unlimited, and a zero `burst` counts as 1
    /// (see the [type docs](Self) for why).
    pub fn new(qps: f32, burst: u32) -> Self {
        let bucket = (qps > 0.0 && qps.is_finite())
            .then(|| Arc::new(TokenBucket::new(f64::from(qps), burst.max(1))));
        Self { bucket, qps }
    }

    /// A throttle that never makes a request wait.
    pub fn unlimited() -> Self {
        Self {
            bucket: None,
            qps: f32::INFINITY,
        }
    }

    /// The QPS as configured (`f32::INFINITY` for [`unlimited`](Self::unlimited)).
    pub fn qps(&self) -> f32 {
        self.qps
    }

    /// Whether requests are never throttled.
    pub fn is_unlimited(&self) -> bool {
        self.bucket.is_none()
    }

    /// Takes a token if one is available now, without waiting.
    pub fn try_acquire(&self) -> bool {
        self.bucket.as_deref().is_none_or(TokenBucket::allow)
    }

    /// Waits until the request may be sent.
    ///
    /// The token is reserved when the future is first polled; the future then sleeps until the
    /// token exists. Dropping the future before that gives the token back (as far as reservations
    /// made after it allow). If the qps is so small that the next token is more than
    /// [`INFINITE_DELAY`](crate::INFINITE_DELAY) away, this never completes; use
    /// [`acquire_by`](Self::acquire_by) to bound the wait.
    pub async fn acquire(&self) {
        let Some(bucket) = self.bucket.as_deref() else {
            return;
        };
        match bucket.reserve() {
            Some(reservation) => wait_for(reservation).await,
            None => std::future::pending().await,
        }
    }

    /// Waits until the request may be sent, unless that would be after `deadline`.
    ///
    /// This is x/time/rate's `Wait` with a context deadline: if the token would not exist before
    /// `deadline`, it fails at once, without sleeping and without taking a token. A deadline that
    /// has already passed fails even when unlimited. Dropping the future while it sleeps gives
    /// the token back, like [`acquire`](Self::acquire).
    pub async fn acquire_by(&self, deadline: Instant) -> Result<(), WouldExceedDeadline> {
        let now = Instant::now();
        let max_wait = deadline
            .checked_duration_since(now)
            .ok_or(WouldExceedDeadline)?;
        let Some(bucket) = self.bucket.as_deref() else {
            return Ok(());
        };
        let reservation = bucket
            .reserve_within(now, max_wait)
            .ok_or(WouldExceedDeadline)?;
        wait_for(reservation).await;
        Ok(())
    }
}

/// Sleeps until the reservation's token exists, cancelling the reservation if dropped first.
async fn wait_for(reservation: Reservation<'_>) {
    let ready_at = reservation.ready_at();
    if ready_at <= Instant::now() {
        return;
    }
    let guard = CancelOnDrop(Some(reservation));
    tokio::time::sleep_until(ready_at).await;
    guard.disarm();
}

/// Cancels the reservation it holds when dropped, unless disarmed.
struct CancelOnDrop<'a>(Option<Reservation<'a>>);

impl CancelOnDrop<'_> {
    fn disarm(mut self) {
        // The token is used: dropping the reservation keeps it spent.
        self.0 = None;
    }
}

impl Drop for CancelOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(reservation) = self.0.take() {
            reservation.cancel();
        }
    }
}

/// The error of [`Throttle::acquire_by`]: no token would be available before the deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WouldExceedDeadline;

impl fmt::Display for WouldExceedDeadline {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("client rate limiter: waiting for a token would exceed the deadline")
    }
}

impl std::error::Error for WouldExceedDeadline {}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    use tokio::sync::mpsc;
    use tokio::task::JoinSet;
    use tokio::time::{advance, timeout};

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// client-go's `TestMultithreadedThrottling`, on the paused clock.
    #[tokio::test(start_paused = true)]
    async fn multithreaded_throttling() {
        // 100 qps and no burst to speak of.
        let throttle = Throttle::new(100.0, 1);
        let taken = Arc::new(AtomicUsize::new(0));
        let (done_tx, mut done_rx) = mpsc::unbounded_channel();

        let start = Instant::now();
        // Take the initial token so that every token counted comes from the refill.
        throttle.acquire().await;

        let mut herd = JoinSet::new();
        for _ in 0..10 {
            let (throttle, taken, done_tx) = (throttle.clone(), taken.clone(), done_tx.clone());
            herd.spawn(async move {
                loop {
                    throttle.acquire().await;
                    if taken.fetch_add(1, Ordering::SeqCst) + 1 == 100 {
                        let _ = done_tx.send(());
                    }
                }
            });
        }
        done_rx.recv().await.unwrap();
        let elapsed = start.elapsed();
        herd.shutdown().await;

        assert!(elapsed >= 990 * MS, "100 tokens in {elapsed:?}");
        // On the paused clock the 100th refilled token is exactly one second in.
        assert_eq!(elapsed, Duration::from_secs(1));
    }

    /// client-go's `TestBasicThrottle`.
    #[tokio::test(start_paused = true)]
    async fn basic_throttle() {
        let throttle = Throttle::new(1.0, 3);
        for _ in 0..3 {
            assert!(throttle.try_acquire());
        }
        assert!(!throttle.try_acquire());
    }

    /// client-go's `TestIncrementThrottle`.
    #[tokio::test(start_paused = true)]
    async fn increment_throttle() {
        let throttle = Throttle::new(1.0, 1);
        assert!(throttle.try_acquire());
        assert!(!throttle.try_acquire());
        advance(Duration::from_secs(2)).await;
        assert!(throttle.try_acquire());
    }

    /// client-go's `TestThrottle`.
    #[tokio::test(start_paused = true)]
    async fn throttle_waits_for_the_rate() {
        let throttle = Throttle::new(10.0, 5);
        let start = Instant::now();
        // Five tokens at once, then the other eleven take 100 ms each.
        for _ in 0..16 {
            throttle.acquire().await;
        }
        let elapsed = start.elapsed();
        assert!(
            elapsed >= Duration::from_secs(1),
            "finished too early: {elapsed:?}"
        );
        assert_eq!(elapsed, 1100 * MS);
    }

    /// client-go's `TestWait`.
    #[tokio::test(start_paused = true)]
    async fn acquire_by_refuses_at_once_when_the_deadline_is_too_close() {
        let throttle = Throttle::new(0.0001, 1);
        let start = Instant::now();
        assert_eq!(
            throttle.acquire_by(start + Duration::from_secs(1)).await,
            Ok(())
        );
        assert_eq!(
            throttle.acquire_by(start + Duration::from_secs(1)).await,
            Err(WouldExceedDeadline)
        );
        // It refused without sleeping...
        assert_eq!(start.elapsed(), Duration::ZERO);
        // ...and without taking a token: the next one is due 1 / qps (a hair over 10 000 s, as
        // 0.0001 is not exact in f32) after the first.
        advance(Duration::from_secs(10_001)).await;
        assert!(throttle.try_acquire());
    }

    #[tokio::test(start_paused = true)]
    async fn acquire_by_waits_when_the_deadline_allows() {
        let throttle = Throttle::new(10.0, 1);
        let start = Instant::now();
        assert!(throttle.try_acquire());
        assert_eq!(throttle.acquire_by(start + 100 * MS).await, Ok(()));
        assert_eq!(start.elapsed(), 100 * MS);
        // A deadline already in the past fails, even when unlimited.
        let past = Instant::now() - MS;
        assert_eq!(throttle.acquire_by(past).await, Err(WouldExceedDeadline));
        assert_eq!(
            Throttle::unlimited().acquire_by(past).await,
            Err(WouldExceedDeadline)
        );
        assert_eq!(
            Throttle::unlimited().acquire_by(Instant::now()).await,
            Ok(())
        );
    }

    /// client-go's `TestRatePrecisionBug`: a qps of about 0.97 checked every 2 s never refuses.
    #[tokio::test(start_paused = true)]
    async fn rate_precision_bug() {
        let qps = 1e9_f32 / 1_031_425_000_f32;
        let throttle = Throttle::new(qps, 1);
        for step in 0..60 {
            assert!(throttle.try_acquire(), "refused after {} s", step * 2);
            advance(Duration::from_secs(2)).await;
        }
    }

    /// client-go's `TestAlwaysFake`.
    #[tokio::test(start_paused = true)]
    async fn unlimited_always_accepts() {
        let throttle = Throttle::unlimited();
        assert!(throttle.is_unlimited());
        assert_eq!(throttle.qps(), f32::INFINITY);
        let start = Instant::now();
        for _ in 0..10_000 {
            assert!(throttle.try_acquire());
            throttle.acquire().await;
        }
        assert_eq!(start.elapsed(), Duration::ZERO);
    }

    /// client-go's `TestNeverFake`, as far as it applies: a throttle with no token in sight keeps
    /// `acquire` pending until the future is dropped, which gives the token back.
    #[tokio::test(start_paused = true)]
    async fn pending_acquire_ends_when_dropped() {
        let throttle = Throttle::new(0.001, 1);
        assert!(throttle.try_acquire());
        assert!(!throttle.try_acquire());
        assert!(
            timeout(Duration::from_secs(10), throttle.acquire())
                .await
                .is_err()
        );
        // Had the abandoned reservation been kept, the bucket would be at -1 + 1.5 tokens now.
        advance(Duration::from_secs(1490)).await;
        assert!(throttle.try_acquire());
    }

    #[tokio::test(start_paused = true)]
    async fn dropped_acquire_gives_its_token_back() {
        let throttle = Throttle::new(1.0, 1);
        throttle.acquire().await;
        let start = Instant::now();
        assert!(timeout(500 * MS, throttle.acquire()).await.is_err());
        assert!(!throttle.try_acquire());
        advance(500 * MS).await;
        // Without the cancel the next token would only exist 2 s after `start`.
        assert_eq!(start.elapsed(), Duration::from_secs(1));
        assert!(throttle.try_acquire());
    }

    #[tokio::test(start_paused = true)]
    async fn clones_share_the_bucket() {
        let throttle = Throttle::new(1.0, 1);
        let clone = throttle.clone();
        assert!(throttle.try_acquire());
        assert!(!clone.try_acquire());
    }

    #[tokio::test(start_paused = true)]
    async fn non_positive_qps_disables_and_zero_burst_counts_as_one() {
        for qps in [0.0, -1.0, f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let throttle = Throttle::new(qps, 0);
            assert!(throttle.is_unlimited(), "qps {qps}");
            assert!(throttle.try_acquire());
            throttle.acquire().await;
        }
        assert_eq!(Throttle::new(-1.0, 10).qps(), -1.0);

        let throttle = Throttle::new(5.0, 0);
        assert!(!throttle.is_unlimited());
        assert_eq!(throttle.qps(), 5.0);
        assert!(throttle.try_acquire());
        assert!(!throttle.try_acquire());
        let start = Instant::now();
        throttle.acquire().await;
        assert_eq!(start.elapsed(), 200 * MS);
    }

    #[test]
    fn acquire_futures_are_send() {
        fn assert_send<F: Send>(_: F) {}
        let throttle = Throttle::new(1.0, 1);
        assert_send(throttle.acquire());
        assert_send(throttle.acquire_by(Instant::now()));
    }

    #[test]
    fn error_message() {
        assert_eq!(
            WouldExceedDeadline.to_string(),
            "client rate limiter: waiting for a token would exceed the deadline"
        );
    }
}
