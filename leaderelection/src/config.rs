//! Leader election timing: client-go's `LeaderElectionConfig` durations and their validation.

use std::time::Duration;

/// How often a candidate acts, and how long a lease lasts.
///
/// client-go's customary values are the defaults: a lease lasts 15 s, a leader that cannot
/// renew for 10 s steps down, and candidates retry every 2 s. The 5 s between renew deadline
/// and lease duration is the margin that keeps two leaders from overlapping: a leader fences
/// its work no later than `renew_deadline` after it sent its last successful renewal, while
/// the others wait `lease_duration` after they last saw the lease change. Each attempt to
/// acquire or renew (a read and a write of the lease) is abandoned after
/// [`request_timeout`](LeaderElectionConfig::request_timeout), so one hung request cannot
/// use up the renew deadline.
#[derive(Debug, Clone)]
pub struct LeaderElectionConfig {
    /// A name for logs and metrics.
    pub name: String,
    /// How long others must wait after the lease last changed before taking it over.
    pub lease_duration: Duration,
    /// How long the leader keeps trying to renew before it gives up leadership.
    pub renew_deadline: Duration,
    /// How long candidates wait between attempts.
    pub retry_period: Duration,
    /// How long one attempt to acquire or renew may take before it is abandoned; `None`:
    /// half the renew deadline, as client-go sets the timeout of its leader-election client.
    /// Must be shorter than `renew_deadline`.
    pub request_timeout: Option<Duration>,
    /// Give the lease up (empty holder) when leadership ends, after the leader's work has
    /// stopped, so another candidate takes over at once instead of after `lease_duration`.
    pub release_on_cancel: bool,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        Self {
            name: String::new(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            request_timeout: None,
            release_on_cancel: false,
        }
    }
}

/// client-go's jitter factor for retries: waits are uniform in `[retry, 2.2 × retry)`.
pub const JITTER_FACTOR: f64 = 1.2;

/// A configuration client-go would refuse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A duration is zero.
    #[error("{0} must be greater than zero")]
    Zero(&'static str),
    /// The lease would expire before the leader gives up renewing.
    #[error("lease_duration ({lease:?}) must be greater than renew_deadline ({renew:?})")]
    LeaseNotLongerThanDeadline {
        /// The lease duration.
        lease: Duration,
        /// The renew deadline.
        renew: Duration,
    },
    /// Not even one jittered retry fits in the renew deadline.
    #[error("renew_deadline ({renew:?}) must be greater than 1.2 × retry_period ({retry:?})")]
    DeadlineTooShort {
        /// The renew deadline.
        renew: Duration,
        /// The retry period.
        retry: Duration,
    },
    /// An attempt could outlast the renew deadline.
    #[error("request_timeout ({request:?}) must be shorter than renew_deadline ({renew:?})")]
    RequestTimeoutTooLong {
        /// The request timeout.
        request: Duration,
        /// The renew deadline.
        renew: Duration,
    },
    /// The lock has no identity.
    #[error("the lock's identity is empty")]
    EmptyIdentity,
}

impl LeaderElectionConfig {
    /// The deadline of one acquire or renew attempt: `request_timeout`, or half the renew
    /// deadline.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout.unwrap_or(self.renew_deadline / 2)
    }

    /// Checks the durations as client-go's `NewLeaderElector` does, and that an attempt ends
    /// before the renew deadline.
    pub fn validate(&self) -> Result<(), ConfigError> {
        for (name, value) in [
            ("lease_duration", self.lease_duration),
            ("renew_deadline", self.renew_deadline),
            ("retry_period", self.retry_period),
        ] {
            if value.is_zero() {
                return Err(ConfigError::Zero(name));
            }
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(ConfigError::LeaseNotLongerThanDeadline {
                lease: self.lease_duration,
                renew: self.renew_deadline,
            });
        }
        if self.renew_deadline.as_secs_f64() <= JITTER_FACTOR * self.retry_period.as_secs_f64() {
            return Err(ConfigError::DeadlineTooShort {
                renew: self.renew_deadline,
                retry: self.retry_period,
            });
        }
        if let Some(request) = self.request_timeout {
            if request.is_zero() {
                return Err(ConfigError::Zero("request_timeout"));
            }
            if request >= self.renew_deadline {
                return Err(ConfigError::RequestTimeoutTooLong {
                    request,
                    renew: self.renew_deadline,
                });
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// client-go's `TestLeaderElectionConfigValidation`.
    #[test]
    fn validation() {
        assert_eq!(LeaderElectionConfig::default().validate(), Ok(()));
        let s = Duration::from_secs;
        let with = |lease, renew, retry| LeaderElectionConfig {
            lease_duration: s(lease),
            renew_deadline: s(renew),
            retry_period: s(retry),
            ..LeaderElectionConfig::default()
        };
        assert!(matches!(
            with(10, 10, 2).validate(),
            Err(ConfigError::LeaseNotLongerThanDeadline { .. })
        ));
        assert!(matches!(
            with(15, 2, 2).validate(),
            Err(ConfigError::DeadlineTooShort { .. })
        ));
        assert_eq!(
            with(15, 10, 0).validate(),
            Err(ConfigError::Zero("retry_period"))
        );
        assert_eq!(
            with(0, 10, 2).validate(),
            Err(ConfigError::Zero("lease_duration"))
        );
        assert_eq!(with(15, 10, 2).request_timeout(), s(5));
        let request = |timeout| LeaderElectionConfig {
            request_timeout: Some(timeout),
            ..LeaderElectionConfig::default()
        };
        assert!(matches!(
            request(s(10)).validate(),
            Err(ConfigError::RequestTimeoutTooLong { .. })
        ));
        assert_eq!(
            request(s(0)).validate(),
            Err(ConfigError::Zero("request_timeout"))
        );
        assert_eq!(request(s(3)).validate(), Ok(()));
    }
}
