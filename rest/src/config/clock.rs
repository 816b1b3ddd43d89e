//! The wall clock used to judge credential expiry and token-file age, replaceable in tests.
//!
//! client-go stubs `time.Now` in the exec authenticator (`a.now`) and in the caching token
//! source (`ts.now`) for its tests; this is the same seam as a small cloneable value. It is a
//! wall clock ([`SystemTime`]) and not a monotonic one because exec plugins report expiry as an
//! RFC 3339 instant, which only a wall clock can be compared with.

use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;

/// A source of the current time. [`Clock::system`] (the default) reads the real clock.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl Clock {
    /// The real wall clock.
    pub fn system() -> Self {
        Clock(Arc::new(SystemTime::now))
    }

    /// A clock that calls `now` for the time (for tests and simulations).
    pub fn from_fn(now: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        Clock(Arc::new(now))
    }

    /// The current time.
    pub fn now(&self) -> SystemTime {
        (self.0)()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::system()
    }
}

impl fmt::Debug for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Clock")
    }
}
