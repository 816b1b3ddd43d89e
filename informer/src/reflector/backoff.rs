//! The reflector's backoff and its source of jitter.
//!
//! Mirrors apimachinery's `wait.Backoff{Duration: 800ms, Factor: 2, Jitter: 1, Cap: 30s}`
//! behind `DelayWithReset(clock, 2*time.Minute)`, the delay function client-go's reflector
//! waits on between two list-and-watch attempts and before re-opening a watch after a refused
//! connection or a 429. Each delay is the current step plus up to `jitter` times itself, so the
//! sequence is [0.8, 1.6), [1.6, 3.2), ... up to [30, 60) s; the step doubles until it reaches
//! the cap and stays there.
//!
//! The state goes back to the first step when more than `reset_interval` has passed since the
//! last reset (checked each time a delay is taken), as client-go does: a server that fails
//! now and then, never for two minutes on end, is retried promptly. Note that this is "two
//! minutes since the last reset", not "two minutes since the last success".
//!
//! Where it differs from client-go: `Steps` is not modelled (with a factor of 2 the cap is
//! reached long before client-go's 38 steps run out), and the jitter comes from a small
//! splitmix64 generator seeded from the standard library's per-process random hasher keys,
//! rather than a crate: the numbers only spread clients apart, they guard no secret.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::Duration;

use tokio::time::Instant;

/// The reflector's backoff parameters (apimachinery's `wait.Backoff` plus the reset interval).
///
/// The default is client-go's: 800 ms, doubling, jitter 1.0, capped at 30 s, reset after
/// 2 minutes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BackoffConfig {
    /// The first step.
    pub initial: Duration,
    /// Each step is the previous one times this (values ≤ 1 keep the step constant).
    pub factor: f64,
    /// Each delay is its step plus a uniformly random part of up to `jitter × step`.
    pub jitter: f64,
    /// The largest step (before jitter); zero for no cap.
    pub cap: Duration,
    /// The steps start over when this much time has passed since they last did; zero starts
    /// them over on every delay.
    pub reset_interval: Duration,
}

impl Default for BackoffConfig {
    fn default() -> Self {
        BackoffConfig {
            initial: Duration::from_millis(800),
            factor: 2.0,
            jitter: 1.0,
            cap: Duration::from_secs(30),
            reset_interval: Duration::from_secs(120),
        }
    }
}

/// splitmix64: a tiny, fast, well-mixed generator, enough for jitter.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator seeded from the process's random hasher keys (distinct per instance).
    pub(crate) fn from_entropy() -> Self {
        SplitMix64(RandomState::new().hash_one(0x5eed_u64))
    }

    #[cfg(test)]
    pub(crate) fn seeded(seed: u64) -> Self {
        SplitMix64(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub(crate) fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// `d × factor`, saturating instead of panicking on absurd values.
fn scale(d: Duration, factor: f64) -> Duration {
    Duration::try_from_secs_f64(d.as_secs_f64() * factor).unwrap_or(Duration::MAX)
}

/// The running state of a [`BackoffConfig`]: client-go's `backoffManager`.
#[derive(Debug)]
pub(crate) struct BackoffState {
    config: BackoffConfig,
    step: Duration,
    last_reset: Instant,
    rng: SplitMix64,
}

impl BackoffState {
    pub(crate) fn new(config: BackoffConfig, rng: SplitMix64) -> Self {
        BackoffState {
            config,
            step: config.initial,
            last_reset: Instant::now(),
            rng,
        }
    }

    /// The next delay to wait, advancing the steps.
    pub(crate) fn next_delay(&mut self) -> Duration {
        let now = Instant::now();
        if self.config.reset_interval.is_zero() {
            self.step = self.config.initial;
        } else if now.saturating_duration_since(self.last_reset) > self.config.reset_interval {
            self.step = self.config.initial;
            self.last_reset = now;
        }
        let step = self.step;
        if self.config.factor > 0.0 {
            let mut next = scale(step, self.config.factor);
            if !self.config.cap.is_zero() && next > self.config.cap {
                next = self.config.cap;
            }
            self.step = next;
        }
        if self.config.jitter > 0.0 {
            step.saturating_add(scale(step, self.config.jitter * self.rng.next_f64()))
        } else {
            step
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(d: Duration) -> f64 {
        d.as_secs_f64() * 1000.0
    }

    #[tokio::test(start_paused = true)]
    async fn client_go_sequence_grows_then_flattens_in_jittered_ranges() {
        let mut b = BackoffState::new(BackoffConfig::default(), SplitMix64::seeded(7));
        let bases = [
            800.0, 1600.0, 3200.0, 6400.0, 12800.0, 25600.0, 30000.0, 30000.0,
        ];
        for base in bases {
            let d = ms(b.next_delay());
            assert!(
                d >= base && d < 2.0 * base,
                "{d} not in [{base}, {})",
                2.0 * base
            );
        }
    }

    #[tokio::test(start_paused = true)]
    async fn steps_start_over_once_the_reset_interval_has_passed_since_the_last_reset() {
        let config = BackoffConfig {
            jitter: 0.0,
            ..BackoffConfig::default()
        };
        let mut b = BackoffState::new(config, SplitMix64::seeded(1));
        assert_eq!(b.next_delay(), Duration::from_millis(800));
        assert_eq!(b.next_delay(), Duration::from_millis(1600));
        tokio::time::advance(Duration::from_secs(120)).await;
        // Exactly the interval is not "more than" it.
        assert_eq!(b.next_delay(), Duration::from_millis(3200));
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(b.next_delay(), Duration::from_millis(800));
        assert_eq!(b.next_delay(), Duration::from_millis(1600));
        // Measured from the reset, not from the last delay.
        tokio::time::advance(Duration::from_secs(121)).await;
        assert_eq!(b.next_delay(), Duration::from_millis(800));
    }

    #[tokio::test(start_paused = true)]
    async fn zero_reset_interval_always_gives_the_first_step() {
        let config = BackoffConfig {
            jitter: 0.0,
            reset_interval: Duration::ZERO,
            ..BackoffConfig::default()
        };
        let mut b = BackoffState::new(config, SplitMix64::seeded(1));
        for _ in 0..3 {
            assert_eq!(b.next_delay(), Duration::from_millis(800));
        }
    }

    #[tokio::test(start_paused = true)]
    async fn absurd_parameters_saturate_instead_of_panicking() {
        let config = BackoffConfig {
            initial: Duration::MAX,
            factor: 1e300,
            jitter: 1e300,
            cap: Duration::ZERO,
            reset_interval: Duration::MAX,
        };
        let mut b = BackoffState::new(config, SplitMix64::seeded(3));
        assert_eq!(b.next_delay(), Duration::MAX);
        assert_eq!(b.next_delay(), Duration::MAX);
    }

    #[test]
    fn splitmix_is_uniform_enough_and_in_range() {
        let mut rng = SplitMix64::seeded(42);
        let mut buckets = [0u32; 10];
        for _ in 0..10_000 {
            let x = rng.next_f64();
            assert!((0.0..1.0).contains(&x));
            buckets[(x * 10.0) as usize] += 1;
        }
        assert!(
            buckets.iter().all(|&n| (800..1200).contains(&n)),
            "{buckets:?}"
        );
        let (mut a, mut b) = (SplitMix64::from_entropy(), SplitMix64::from_entropy());
        assert_ne!(a.next_u64(), b.next_u64(), "instances are seeded apart");
    }
}
