//! Where event timestamps and names come from: the [`Clock`] trait, [`SystemClock`] and
//! [`TokioClock`].
//!
//! Mirrors the `clock.PassiveClock` that client-go's recorder and correlator take (a real
//! clock in production, a fake one in tests). Here the clock answers one question only: what
//! wall-clock [`Time`] is it, for `firstTimestamp`, `lastTimestamp` and the `<hex nanos>` of
//! an event name.
//!
//! Where it differs from client-go: durations (the aggregation window, the spam filter's token
//! bucket, the write retries) are not measured with this clock but with tokio's
//! [`Instant`], which is monotonic and which tests pause and advance. [`TokioClock`] lets the
//! wall-clock timestamps follow that same paused clock, so a test drives all time from one
//! place.

use std::fmt;

use clientgo_apimachinery::Time;
use tokio::time::Instant;

/// A source of wall-clock time.
pub trait Clock: Send + Sync + 'static {
    /// The current time.
    fn now(&self) -> Time;
}

/// The system's wall clock ([`Time::now`]); the default.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Time {
        Time::now()
    }
}

/// Wall-clock time that advances with tokio's clock: a fixed start plus the time elapsed on
/// tokio's [`Instant`] since the clock was made.
///
/// Under a paused tokio clock (`#[tokio::test(start_paused = true)]`) it moves only when the
/// test advances time, so timestamps and event names are reproducible. Meant for tests; in
/// production use [`SystemClock`], which follows adjustments of the system clock.
#[derive(Clone, Copy)]
pub struct TokioClock {
    start_time: Time,
    start: Instant,
}

impl TokioClock {
    /// A clock that reads [`Time::now`] now and moves with tokio's clock from here on.
    pub fn new() -> TokioClock {
        TokioClock::starting_at(Time::now())
    }

    /// A clock that reads `start_time` now and moves with tokio's clock from here on.
    pub fn starting_at(start_time: Time) -> TokioClock {
        TokioClock {
            start_time,
            start: Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> TokioClock {
        TokioClock::new()
    }
}

impl fmt::Debug for TokioClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokioClock")
            .field("now", &self.now())
            .finish_non_exhaustive()
    }
}

impl Clock for TokioClock {
    fn now(&self) -> Time {
        // Past the year 9999 the clock stops rather than wrap or panic.
        self.start_time
            .checked_add(self.start.elapsed())
            .unwrap_or(self.start_time)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_paused_time() {
        let start = Time::from_unix_seconds(1_700_000_000).unwrap();
        let clock = TokioClock::starting_at(start);
        assert_eq!(clock.now(), start);
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(
            clock.now(),
            Time::from_unix(1_700_000_001, 500_000_000).unwrap()
        );
        assert!(format!("{clock:?}").contains("2023-11-14T22:13:21.5"));
    }

    #[test]
    fn system_clock_reads_the_wall_clock() {
        let before = Time::now();
        let now = SystemClock.now();
        assert!(now >= before);
    }
}
