//! A token bucket: the primitive under [`BucketRateLimiter`](crate::BucketRateLimiter) and the
//! request [`Throttle`](crate::Throttle).
//!
//! This is a port of the `golang.org/x/time/rate.Limiter` semantics that client-go relies on:
//! the bucket starts full with `burst` tokens and refills continuously at `rate` tokens per
//! second, never beyond `burst`. [`TokenBucket::reserve`] always takes a token, going into debt
//! if the bucket is empty, and reports when that token will exist; [`TokenBucket::allow`] takes a
//! token only if one is there right now. The state is the same as Go's (a fractional token count,
//! the instant it was last brought up to date, and the instant of the latest reserved event), so
//! rounding never accumulates: every answer is derived from that state, not from earlier answers.
//!
//! Differences from Go, and why:
//!
//! * Time is [`tokio::time::Instant`], so tests drive the bucket with tokio's paused clock.
//! * A reservation that can never be honoured is `None` instead of an "not OK" reservation whose
//!   delay is `InfDuration`. That covers a zero burst with a finite rate (as in Go) and also a
//!   next token more than [`INFINITE_DELAY`] away, such as any debt on a zero rate, which Go
//!   grants with an unusable 292-year delay.
//! * Rates are sanitised instead of trusted: `f64::INFINITY` and `f64::MAX` (Go's `rate.Inf`)
//!   mean unlimited; zero, negative and NaN rates mean "never refills", which is what x/time/rate
//!   does with a non-positive limit. No input panics.
//! * Delays are rounded *up* to whole nanoseconds (Go truncates), so a caller that waits the
//!   reported delay never arrives a nanosecond before its token exists. A value within a few
//!   ulps of a whole nanosecond counts as that nanosecond, so that exact rates give exact delays:
//!   at 10 per second the 101st token of a 100-token burst is exactly 100 ms away.
//! * If callers race and an earlier `now` reaches the lock after a later one, the bucket keeps its
//!   later notion of time instead of stepping backwards (Go steps back and re-credits the gap).
//! * The rate and burst are fixed at construction (there is no `SetLimit`/`SetBurst`), which lets
//!   an unlimited bucket answer without taking its lock.

use std::fmt;
use std::time::Duration;

use parking_lot::Mutex;
use tokio::time::Instant;

/// The delay that stands for "never": Go's `rate.InfDuration`, `i64::MAX` nanoseconds (about 292
/// years).
///
/// [`BucketRateLimiter`](crate::BucketRateLimiter) returns it when its bucket can never grant a
/// token (a zero burst). Whoever schedules with it should add it to an instant with
/// [`Instant::checked_add`] rather than `+`.
pub const INFINITE_DELAY: Duration = Duration::from_nanos(i64::MAX as u64);

/// `INFINITE_DELAY` in nanoseconds, as a float (rounds up to 2^63).
const INFINITE_DELAY_NANOS: f64 = i64::MAX as f64;

/// A token bucket rate limiter, safe to share between threads: a port of
/// `golang.org/x/time/rate.Limiter`.
///
/// The bucket starts full with `burst` tokens and refills continuously at `rate` tokens per
/// second, never beyond `burst`. [`reserve`](Self::reserve) always takes a token, going into debt
/// if need be, and says when it may be used; [`allow`](Self::allow) takes one only if it is there
/// now. Where Go returns a "not OK" reservation with an infinite delay, this returns `None`.
/// Delays are rounded up to whole nanoseconds, so waiting the reported delay never arrives before
/// the token exists. Time is [`tokio::time::Instant`].
///
/// ```
/// use clientgo_ratelimit::TokenBucket;
///
/// // 10 tokens per second, bursts of up to 100.
/// let bucket = TokenBucket::new(10.0, 100);
/// for _ in 0..100 {
///     assert!(bucket.allow());
/// }
/// assert!(!bucket.allow()); // empty: `allow` never goes into debt
///
/// // `reserve` does go into debt and says how long to wait for the token.
/// let reservation = bucket.reserve().expect("a non-zero burst can always reserve");
/// assert!(reservation.delay() > std::time::Duration::ZERO);
/// ```
pub struct TokenBucket {
    limit: Limit,
    burst: u32,
    state: Mutex<State>,
}

/// The refill rate after sanitising.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Limit {
    /// Every request is granted at once; the burst is ignored.
    Unlimited,
    /// Tokens per second: finite and `>= 0`.
    PerSecond(f64),
}

impl Limit {
    fn from_rate(rate: f64) -> Self {
        if rate >= f64::MAX {
            Limit::Unlimited
        } else if rate > 0.0 {
            Limit::PerSecond(rate)
        } else {
            // Zero, negative and NaN.
            Limit::PerSecond(0.0)
        }
    }
}

struct State {
    /// Tokens in the bucket as of `last`; negative while reservations are in debt.
    tokens: f64,
    /// When `tokens` was last brought up to date.
    last: Instant,
    /// When the latest reserved token becomes available (past or future).
    last_event: Instant,
}

impl TokenBucket {
    /// A bucket holding up to `burst` tokens, starting full and refilled at `rate` tokens per
    /// second.
    ///
    /// `f64::INFINITY` or `f64::MAX` make it unlimited (like Go's `rate.Inf`, the burst is then
    /// ignored). A zero, negative or NaN rate never refills: only the initial `burst` tokens are
    /// ever handed out. A zero burst with a finite rate grants nothing.
    pub fn new(rate: f64, burst: u32) -> Self {
        let now = Instant::now();
        Self {
            limit: Limit::from_rate(rate),
            burst,
            state: Mutex::new(State {
                tokens: f64::from(burst),
                last: now,
                last_event: now,
            }),
        }
    }

    /// A bucket that grants every request at once.
    pub fn unlimited() -> Self {
        Self::new(f64::INFINITY, 0)
    }

    /// The refill rate in tokens per second after sanitising: `f64::INFINITY` when unlimited,
    /// `0.0` for a rate given as zero, negative or NaN.
    pub fn rate(&self) -> f64 {
        match self.limit {
            Limit::Unlimited => f64::INFINITY,
            Limit::PerSecond(rate) => rate,
        }
    }

    /// The capacity of the bucket.
    pub fn burst(&self) -> u32 {
        self.burst
    }

    /// Whether every request is granted at once.
    pub fn is_unlimited(&self) -> bool {
        self.limit == Limit::Unlimited
    }

    /// Takes a token if one is available now; never goes into debt.
    pub fn allow(&self) -> bool {
        self.allow_at(Instant::now())
    }

    /// Like [`allow`](Self::allow), at the given instant.
    pub fn allow_at(&self, now: Instant) -> bool {
        self.reserve_within(now, Duration::ZERO).is_some()
    }

    /// Takes a token, going into debt if the bucket is empty, and returns when it can be used.
    ///
    /// `None` means the token can never be granted: the burst is zero (and the rate finite), or
    /// the token is more than [`INFINITE_DELAY`] away (for example any debt on a zero rate). No
    /// token is taken then.
    #[must_use = "the token is taken either way; the reservation says when it may be used"]
    pub fn reserve(&self) -> Option<Reservation<'_>> {
        self.reserve_at(Instant::now())
    }

    /// Like [`reserve`](Self::reserve), at the given instant.
    #[must_use = "the token is taken either way; the reservation says when it may be used"]
    pub fn reserve_at(&self, now: Instant) -> Option<Reservation<'_>> {
        self.reserve_within(now, INFINITE_DELAY)
    }

    /// Takes a token only if it becomes available within `max_wait` of `now`.
    ///
    /// This is x/time/rate's `reserveN` with a `maxFutureReserve`, the building block of its
    /// `Wait(ctx)`: refusing up front is better than sleeping towards a deadline that will pass
    /// first. Nothing is taken when the answer is `None`.
    #[must_use = "the token is taken either way; the reservation says when it may be used"]
    pub fn reserve_within(&self, now: Instant, max_wait: Duration) -> Option<Reservation<'_>> {
        let rate = match self.limit {
            Limit::Unlimited => {
                return Some(Reservation {
                    bucket: self,
                    ready_at: now,
                    counted: false,
                });
            }
            Limit::PerSecond(rate) => rate,
        };
        if self.burst == 0 {
            return None;
        }

        let mut state = self.state.lock();
        let now = now.max(state.last);
        let tokens = self.refilled(rate, &state, now) - 1.0;
        let wait = if tokens < 0.0 {
            duration_from_tokens(rate, -tokens)?
        } else {
            Duration::ZERO
        };
        if wait > max_wait {
            return None;
        }
        let ready_at = now.checked_add(wait)?;

        state.tokens = tokens;
        state.last = now;
        state.last_event = ready_at;
        Some(Reservation {
            bucket: self,
            ready_at,
            counted: true,
        })
    }

    /// Tokens in the bucket now: negative while reservations are in debt, `f64::INFINITY` for an
    /// unlimited bucket.
    pub fn tokens(&self) -> f64 {
        self.tokens_at(Instant::now())
    }

    /// Like [`tokens`](Self::tokens), at the given instant.
    pub fn tokens_at(&self, now: Instant) -> f64 {
        match self.limit {
            Limit::Unlimited => f64::INFINITY,
            Limit::PerSecond(rate) => {
                let state = self.state.lock();
                self.refilled(rate, &state, now.max(state.last))
            }
        }
    }

    /// The token count at `now` (not before `state.last`), capped at the burst.
    fn refilled(&self, rate: f64, state: &State, now: Instant) -> f64 {
        let elapsed = now.saturating_duration_since(state.last);
        (state.tokens + tokens_from_duration(rate, elapsed)).min(f64::from(self.burst))
    }

    /// x/time/rate's `Reservation.CancelAt`: gives back as much of a reservation as the
    /// reservations made after it allow.
    fn cancel(&self, ready_at: Instant, now: Instant) {
        let Limit::PerSecond(rate) = self.limit else {
            return;
        };
        if ready_at < now {
            // Already usable: the token has been spent.
            return;
        }
        let mut state = self.state.lock();
        // Tokens reserved after this one were scheduled behind it; they stay spent.
        let reserved_after = state.last_event.saturating_duration_since(ready_at);
        let restore = 1.0 - tokens_from_duration(rate, reserved_after);
        if restore.is_nan() || restore <= 0.0 {
            return;
        }
        let now = now.max(state.last);
        state.tokens = (self.refilled(rate, &state, now) + restore).min(f64::from(self.burst));
        state.last = now;
        if ready_at == state.last_event {
            // This was the latest reservation: the one before it is now the latest event.
            let previous = duration_from_tokens(rate, 1.0).and_then(|d| ready_at.checked_sub(d));
            if let Some(previous) = previous.filter(|previous| *previous >= now) {
                state.last_event = previous;
            }
        }
    }
}

impl fmt::Debug for TokenBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenBucket")
            .field("rate", &self.rate())
            .field("burst", &self.burst)
            .finish_non_exhaustive()
    }
}

/// A token taken from a [`TokenBucket`], usable from [`ready_at`](Self::ready_at) on.
///
/// Dropping a reservation keeps the token spent; [`cancel`](Self::cancel) gives it back.
#[derive(Debug)]
pub struct Reservation<'a> {
    bucket: &'a TokenBucket,
    ready_at: Instant,
    /// False for unlimited buckets, which keep no account.
    counted: bool,
}

impl Reservation<'_> {
    /// The instant from which the token may be used.
    pub fn ready_at(&self) -> Instant {
        self.ready_at
    }

    /// How long to wait from now before using the token; zero means at once.
    pub fn delay(&self) -> Duration {
        self.delay_from(Instant::now())
    }

    /// How long to wait from `now` before using the token.
    pub fn delay_from(&self, now: Instant) -> Duration {
        self.ready_at.saturating_duration_since(now)
    }

    /// Gives the token back because it will not be used, as far as later reservations allow.
    pub fn cancel(self) {
        self.cancel_at(Instant::now());
    }

    /// Like [`cancel`](Self::cancel), at the given instant. Does nothing once the token is
    /// usable (`now > ready_at`).
    pub fn cancel_at(self, now: Instant) {
        if self.counted {
            self.bucket.cancel(self.ready_at, now);
        }
    }
}

/// Tokens accumulated over `elapsed` at `rate` tokens per second.
///
/// Whole seconds and the nanosecond remainder are scaled separately, as x/time/rate did for
/// golang/go#34861, so that a long idle period does not blur the fractional part.
fn tokens_from_duration(rate: f64, elapsed: Duration) -> f64 {
    elapsed.as_secs() as f64 * rate + f64::from(elapsed.subsec_nanos()) * rate / 1e9
}

/// The time needed to accumulate `tokens` (> 0) at `rate`, rounded up to a whole nanosecond.
///
/// `None` when that is beyond [`INFINITE_DELAY`], which includes any positive amount at a zero
/// rate.
fn duration_from_tokens(rate: f64, tokens: f64) -> Option<Duration> {
    let nanos = tokens / rate * 1e9;
    // Also rejects NaN and infinity.
    if !(0.0..=INFINITE_DELAY_NANOS).contains(&nanos) {
        return None;
    }
    // Round up, but let float noise of a few ulps around a whole nanosecond count as that
    // nanosecond: 3/10 s is 300 ms, not 300 ms + 1 ns.
    let nearest = nanos.round();
    let whole = if (nanos - nearest).abs() <= 4.0 * f64::EPSILON * nanos {
        nearest
    } else {
        nanos.ceil()
    };
    // `whole` is at most 2^63, which fits a u64; `min` undoes the rounding of i64::MAX to 2^63.
    Some(Duration::from_nanos(whole as u64).min(INFINITE_DELAY))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    const MS: Duration = Duration::from_millis(1);

    fn delay_of(bucket: &TokenBucket, now: Instant) -> Option<Duration> {
        bucket.reserve_at(now).map(|r| r.delay_from(now))
    }

    #[test]
    fn debt_delays_are_exact_multiples_of_the_interval() {
        let bucket = TokenBucket::new(10.0, 1);
        let now = Instant::now();
        assert_eq!(delay_of(&bucket, now), Some(Duration::ZERO));
        for k in 1..=100_000u32 {
            assert_eq!(
                delay_of(&bucket, now),
                Some(k * 100 * MS),
                "reservation {k}"
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn starts_full_then_reservations_go_into_debt() {
        let bucket = TokenBucket::new(10.0, 100);
        for _ in 0..100 {
            assert_eq!(bucket.reserve().map(|r| r.delay()), Some(Duration::ZERO));
        }
        // The 101st reservation waits 100 ms, the 102nd 200 ms.
        let reservation = bucket.reserve().unwrap();
        assert_eq!(reservation.delay(), 100 * MS);
        assert_eq!(bucket.reserve().map(|r| r.delay()), Some(200 * MS));
        assert_eq!(bucket.tokens(), -2.0);

        tokio::time::advance(40 * MS).await;
        assert_eq!(reservation.delay(), 60 * MS);
        tokio::time::advance(60 * MS).await;
        assert_eq!(reservation.delay(), Duration::ZERO);
        assert_eq!(bucket.tokens(), -1.0);
    }

    #[test]
    fn allow_takes_a_token_only_when_one_is_there() {
        let bucket = TokenBucket::new(1.0, 1);
        let t0 = Instant::now();
        assert!(bucket.allow_at(t0));
        assert!(!bucket.allow_at(t0));
        assert!(!bucket.allow_at(t0 + 999 * MS));
        // The refusals did not go into debt.
        assert!(bucket.allow_at(t0 + 1000 * MS));
    }

    #[test]
    fn refill_is_continuous_and_capped_at_the_burst() {
        let bucket = TokenBucket::new(2.0, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(bucket.allow_at(t0));
        }
        assert_eq!(bucket.tokens_at(t0 + 250 * MS), 0.5);
        assert_eq!(bucket.tokens_at(t0 + 1000 * MS), 2.0);
        assert_eq!(bucket.tokens_at(t0 + Duration::from_secs(100)), 3.0);
        assert_eq!(
            bucket.tokens_at(t0 + Duration::from_secs(10_000_000_000)),
            3.0
        );
    }

    #[test]
    fn zero_burst_with_a_finite_rate_grants_nothing() {
        let bucket = TokenBucket::new(10.0, 0);
        let now = Instant::now();
        assert!(bucket.reserve_at(now).is_none());
        assert!(!bucket.allow_at(now));
        assert!(!bucket.allow_at(now + Duration::from_secs(3600)));
    }

    #[test]
    fn unlimited_buckets_grant_everything_at_once() {
        let now = Instant::now();
        for bucket in [
            TokenBucket::unlimited(),
            TokenBucket::new(f64::INFINITY, 0),
            TokenBucket::new(f64::MAX, 0),
        ] {
            assert!(bucket.is_unlimited());
            assert_eq!(bucket.rate(), f64::INFINITY);
            for _ in 0..1000 {
                assert!(bucket.allow_at(now));
                assert_eq!(delay_of(&bucket, now), Some(Duration::ZERO));
            }
            assert_eq!(bucket.tokens_at(now), f64::INFINITY);
        }
    }

    #[test]
    fn zero_negative_and_nan_rates_never_refill() {
        for rate in [0.0, -0.0, -5.0, f64::NEG_INFINITY, f64::NAN] {
            let bucket = TokenBucket::new(rate, 2);
            let t0 = Instant::now();
            assert_eq!(bucket.rate(), 0.0, "rate {rate}");
            assert!(bucket.allow_at(t0));
            assert_eq!(delay_of(&bucket, t0), Some(Duration::ZERO));
            assert!(bucket.reserve_at(t0).is_none(), "rate {rate}");
            assert!(!bucket.allow_at(t0 + Duration::from_secs(1_000_000)));
            assert_eq!(bucket.tokens_at(t0 + Duration::from_secs(1_000_000)), 0.0);
        }
    }

    #[test]
    fn extreme_rates_and_bursts_do_not_panic() {
        // Tiny rates: the second token is past the infinite delay, so it is refused.
        for rate in [1e-300, f64::MIN_POSITIVE, 5e-324] {
            let bucket = TokenBucket::new(rate, 1);
            let t0 = Instant::now();
            assert!(bucket.allow_at(t0));
            assert!(bucket.reserve_at(t0).is_none());
            assert!(!bucket.allow_at(t0 + Duration::from_secs(1 << 40)));
        }
        // 2^30 seconds (about 34 years) is still a representable wait.
        let bucket = TokenBucket::new(1.0 / f64::from(1u32 << 30), 1);
        let t0 = Instant::now();
        assert!(bucket.allow_at(t0));
        assert_eq!(delay_of(&bucket, t0), Some(Duration::from_secs(1 << 30)));
        // Huge rate and burst: refill overflows to infinity and is capped at the burst.
        let bucket = TokenBucket::new(1e300, u32::MAX);
        let t0 = Instant::now();
        assert!((0..1000).all(|_| bucket.allow_at(t0)));
        let later = t0 + Duration::from_secs(1 << 40);
        assert_eq!(bucket.tokens_at(later), f64::from(u32::MAX));
    }

    #[test]
    fn an_earlier_instant_after_a_later_one_is_harmless() {
        let bucket = TokenBucket::new(1.0, 1);
        let t0 = Instant::now();
        assert_eq!(
            delay_of(&bucket, t0 + Duration::from_secs(10)),
            Some(Duration::ZERO)
        );
        // Time does not run backwards inside the bucket: the next token is due at t0 + 11 s.
        let reservation = bucket.reserve_at(t0).unwrap();
        assert_eq!(reservation.ready_at(), t0 + Duration::from_secs(11));
        assert!(!bucket.allow_at(t0 + Duration::from_secs(5)));
    }

    /// `TestRatePrecisionBug`-style: sequential reservations at awkward rates neither drift nor
    /// hand a token out before it exists.
    #[test]
    fn sequential_reservations_do_not_drift() {
        let rates = [
            3.0,
            7.0,
            0.1,
            333.3,
            1.0 / 1.031425,
            f64::from(1e9f32 / 1.031_425e9_f32),
            123_456.789,
        ];
        for rate in rates {
            let bucket = TokenBucket::new(rate, 1);
            let t0 = Instant::now();
            assert!(bucket.allow_at(t0));
            let mut now = t0;
            let steps = 10_000u32;
            for _ in 0..steps {
                now = bucket.reserve_at(now).unwrap().ready_at();
                // Waiting exactly the reported delay always finds the token paid for.
                assert!(bucket.tokens_at(now) >= -1e-9, "rate {rate}");
            }
            let ideal = f64::from(steps) / rate;
            let actual = now.duration_since(t0).as_secs_f64();
            assert!(
                (actual - ideal).abs() < 2e-9 * ideal.max(1.0),
                "rate {rate}: {actual} s after {steps} tokens, ideally {ideal} s"
            );
        }
    }

    #[test]
    fn cancel_gives_the_token_back() {
        let bucket = TokenBucket::new(1.0, 1);
        let t0 = Instant::now();
        assert!(bucket.allow_at(t0));
        let reservation = bucket.reserve_at(t0).unwrap();
        assert_eq!(reservation.delay_from(t0), Duration::from_secs(1));
        reservation.cancel_at(t0 + 500 * MS);
        assert_eq!(bucket.tokens_at(t0 + 500 * MS), 0.5);
        // Without the cancel the next token would only be free at t0 + 2 s.
        assert!(bucket.allow_at(t0 + Duration::from_secs(1)));

        // Once the token is usable, cancelling does nothing.
        let reservation = bucket.reserve_at(t0).unwrap(); // usable at t0 + 2 s
        reservation.cancel_at(t0 + 2001 * MS);
        assert!(!bucket.allow_at(t0 + 2001 * MS));
        // Neither does cancelling an unlimited reservation.
        let unlimited = TokenBucket::unlimited();
        unlimited.reserve_at(t0).unwrap().cancel_at(t0);
        assert!(unlimited.allow_at(t0));
    }

    #[test]
    fn cancel_keeps_tokens_reserved_after_it_spent() {
        let bucket = TokenBucket::new(1.0, 1);
        let t0 = Instant::now();
        assert!(bucket.allow_at(t0));
        let first = bucket.reserve_at(t0).unwrap(); // usable at t0 + 1 s
        let second = bucket.reserve_at(t0).unwrap(); // usable at t0 + 2 s
        // `second` was scheduled behind `first`, so cancelling `first` restores nothing...
        first.cancel_at(t0);
        assert_eq!(bucket.tokens_at(t0), -2.0);
        // ...but cancelling the latest one does, and moves the last event back.
        second.cancel_at(t0);
        assert_eq!(bucket.tokens_at(t0), -1.0);
        assert_eq!(delay_of(&bucket, t0), Some(Duration::from_secs(2)));
    }

    #[test]
    fn concurrent_reservations_are_all_counted() {
        const THREADS: u32 = 8;
        const PER_THREAD: u32 = 500;
        const BURST: u32 = 10;
        let bucket = Arc::new(TokenBucket::new(100.0, BURST));
        let now = Instant::now();
        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let bucket = Arc::clone(&bucket);
                std::thread::spawn(move || {
                    (0..PER_THREAD)
                        .map(|_| delay_of(&bucket, now).unwrap())
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        let mut delays: Vec<Duration> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        delays.sort();
        let expected: Vec<Duration> = (0..THREADS * PER_THREAD)
            .map(|k| (k + 1).saturating_sub(BURST) * 10 * MS)
            .collect();
        assert_eq!(delays, expected);
    }

    #[test]
    fn duration_from_tokens_rounds_up_but_not_float_noise() {
        assert_eq!(duration_from_tokens(10.0, 3.0), Some(300 * MS));
        assert_eq!(
            duration_from_tokens(3.0, 1.0),
            Some(Duration::from_nanos(333_333_334))
        );
        assert_eq!(duration_from_tokens(0.0, 1.0), None);
        assert_eq!(duration_from_tokens(1e-300, 1.0), None);
        assert_eq!(duration_from_tokens(1.0, f64::NAN), None);
        assert_eq!(
            duration_from_tokens(2.0, 18.4e9),
            Some(Duration::from_secs(9_200_000_000))
        );
        assert_eq!(duration_from_tokens(1.0, 9.3e9), None);
    }
}
