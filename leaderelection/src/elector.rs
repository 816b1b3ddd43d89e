//! The election loop: client-go's `LeaderElector` (`tools/leaderelection/leaderelection.go`).
//!
//! [`LeaderElector::run`] tries to acquire the lease every `retry_period` (jittered); once it
//! holds it, it runs the caller's leader work and renews the lease every `retry_period`. It
//! ends when the caller cancels, when a renewal has not succeeded for `renew_deadline`, or when
//! the leader work returns:
//!
//! | client-go callback | here |
//! |---|---|
//! | `OnStartedLeading(ctx)` | the `lead` closure given to `run`, called with a [`CancellationToken`] |
//! | `OnStoppedLeading()` | `run` returning (it always returns, led or not) |
//! | `OnNewLeader(identity)` | [`LeaderElector::on_new_leader`] |
//!
//! ## Safety: never two leaders acting
//!
//! A candidate *acts* from the moment `lead` is called until its work is *fenced*: the work's
//! future returned or was dropped (so nothing it would still do, a write included, is ever
//! sent). The rules that keep two candidates from acting at once:
//!
//! * The *validity deadline*: a holder may act until `renew_deadline` after its last
//!   successful renewal (or the acquiring write) was *sent*, not answered: the server may
//!   have applied it at once and answered late, and the others count from when they saw it.
//!   The invariant: the validity deadline always precedes the earliest moment another
//!   candidate may take over, `lease_duration` after it *saw* that renewal (which it cannot
//!   see before it was sent), measured on its own clock. The margin, `lease_duration -
//!   renew_deadline` (5 s with the defaults), is what covers a write already on the wire when
//!   the deadline passes, and clocks running at slightly different rates. The deadline is
//!   published to [`Fence`]s ([`LeaderElector::fence`]).
//! * Every attempt to acquire or renew (a read and a write) is abandoned after
//!   [`LeaderElectionConfig::request_timeout`], shorter than the renew deadline, so one hung
//!   request cannot use up the renew deadline or keep a candidate from campaigning. No
//!   attempt starts at or after the deadline.
//! * The deadline is checked before every poll of the work. Each time `run`'s future is
//!   polled while leading, it checks, in this order: the deadline (passed: the lease is lost),
//!   the caller's cancel, the renewal (a due renewal is sent before the work runs), the
//!   deadline again, and only then polls the work. So after a stall past the deadline (the
//!   process frozen, the VM paused, the executor blocked by a long poll elsewhere) the first
//!   thing done on resuming is the fence: the work is not polled again, and no late renewal
//!   is started either. Once passed, the deadline never comes back: a renewal answered at or
//!   after it does not count, because watchers of the fence have already stopped.
//! * When the deadline passes (renewals failed for `renew_deadline`), the work is fenced at
//!   once: the published validity ends, its token is cancelled and its future dropped, in
//!   that order, with no wait. The lease is not released after a loss: the process is
//!   expected to exit, as kube-controller-manager does.
//! * Work that runs on other tasks or threads is not polled by the elector, and the elector's
//!   own task may be the one that stalled. Such work must either stop when the work's future
//!   is dropped (a `JoinSet`, not detached tasks) or check a [`Fence`] itself before each
//!   write (e.g. through `clientgo_workqueue::WorkerPool::fence`), or the fence does not
//!   reach it.
//! * On a clean shutdown (the caller cancels) the leader keeps renewing while its work drains,
//!   so a slow drain never overlaps a successor; the work gets at most `renew_deadline` to
//!   return, then it is dropped. Then, with `release_on_cancel`, the lease is released so
//!   another candidate takes over at once. The deadline is checked before every poll of the
//!   draining work too: a lease lost during the drain fences the work as above, and the
//!   result is [`Ended::Lost`].
//!
//! What a check cannot cover: a check and the write after it are not atomic, so a stall
//! between them (a freeze inside one poll of the work, or a poll that blocks for long) is
//! covered only by the margin, as with any lease.
//!
//! Validity is judged only from local observation times, never the remote timestamps, which
//! tolerates clock offsets between candidates (not clocks running at different rates beyond
//! what the margin absorbs).
//!
//! Where it differs from client-go: client-go's renewal gives up `renew_deadline` after the
//! start of the renewal round (up to `retry_period` after the last success), and counts the
//! lease from when the answer arrived; here the deadline runs from when the last successful
//! renewal was sent, stricter on both counts. client-go does not stop the leader's work
//! itself (kube-controller-manager exits the process), and its work learns of a loss only
//! when its context is cancelled, after the renew loop gave up: after a stall, whatever
//! work was ready runs first. Here `run` checks the deadline before every poll of the work,
//! fences it, and publishes the deadline ([`Fence`]) for work elsewhere; client-go has no
//! such deadline. Leader work that returns on its own ends the leadership (client-go would
//! keep renewing a lease nobody uses). `on_new_leader` is called inline and must be quick.

use clientgo_journey::{LeaderTransition, Stage, target};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use clientgo_apimachinery::MicroTime;
use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::config::{ConfigError, JITTER_FACTOR, LeaderElectionConfig};
use crate::fence::Fence;
use crate::record::{LeaderElectionRecord, Lock};

/// Why [`LeaderElector::run`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// The caller cancelled (before or during leadership).
    Cancelled,
    /// Renewals failed for `renew_deadline`: the lease may now go to another candidate.
    Lost,
    /// The leader work returned on its own.
    WorkFinished,
}

/// What this candidate last saw of the lease, and when.
#[derive(Debug, Default)]
struct Observed {
    record: Option<LeaderElectionRecord>,
    time: Option<Instant>,
    leading: bool,
}

/// The `on_new_leader` callback.
type NewLeaderCallback = Box<dyn Fn(&str) + Send + Sync>;

/// Runs leader election over a [`Lock`].
pub struct LeaderElector<L> {
    lock: L,
    config: LeaderElectionConfig,
    observed: Arc<Mutex<Observed>>,
    on_new_leader: Option<NewLeaderCallback>,
    /// The validity deadline published to [`Fence`]s: in the past while not leading.
    valid_until: watch::Sender<Instant>,
}

impl<L> std::fmt::Debug for LeaderElector<L> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .field("observed", &*self.observed.lock())
            .field("valid_until", &*self.valid_until.borrow())
            .finish_non_exhaustive()
    }
}

/// A health check for a running elector: client-go's `HealthzAdaptor`.
#[derive(Debug, Clone)]
pub struct HealthCheck {
    observed: Arc<Mutex<Observed>>,
    lease_duration: Duration,
}

/// The leader has not renewed for longer than it may.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed election to renew leadership on lease {name}: last renewed {since:?} ago")]
pub struct RenewalOverdue {
    /// The election's name.
    pub name: String,
    /// Time since the last successful renewal.
    pub since: Duration,
}

impl HealthCheck {
    /// Fails only while this candidate believes it leads and its last renewal is older than
    /// the lease duration plus `max_tolerable_expiry`: client-go's `Check`.
    pub fn check(&self, name: &str, max_tolerable_expiry: Duration) -> Result<(), RenewalOverdue> {
        let observed = self.observed.lock();
        match observed.time {
            Some(time) if observed.leading => {
                let since = time.elapsed();
                if since > self.lease_duration + max_tolerable_expiry {
                    return Err(RenewalOverdue {
                        name: name.to_owned(),
                        since,
                    });
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

impl<L: Lock> LeaderElector<L> {
    /// An elector over `lock`; refuses what client-go's `NewLeaderElector` refuses.
    pub fn new(lock: L, config: LeaderElectionConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        if lock.identity().is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        Ok(Self {
            lock,
            config,
            observed: Arc::default(),
            on_new_leader: None,
            valid_until: watch::Sender::new(Instant::now()),
        })
    }

    /// Calls `callback` with the holder's identity each time the observed holder changes
    /// (including the first observation, and this candidate becoming leader).
    pub fn on_new_leader(mut self, callback: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.on_new_leader = Some(Box::new(callback));
        self
    }

    /// A health check to export (e.g. on `/healthz`).
    pub fn health_check(&self) -> HealthCheck {
        HealthCheck {
            observed: self.observed.clone(),
            lease_duration: self.config.lease_duration,
        }
    }

    /// The validity deadline of this candidate's leadership, for leader work that runs on
    /// other tasks or threads (see [`Fence`]). Callable before [`run`](LeaderElector::run);
    /// every fence sees the updates of every run.
    pub fn fence(&self) -> Fence {
        Fence::new(self.valid_until.subscribe())
    }

    /// Whether this candidate holds the lease, as far as it knows.
    pub fn is_leader(&self) -> bool {
        let observed = self.observed.lock();
        observed.leading
    }

    /// The holder last observed, if any.
    pub fn leader(&self) -> Option<String> {
        let observed = self.observed.lock();
        observed
            .record
            .as_ref()
            .map(|record| record.holder_identity.clone())
            .filter(|holder| !holder.is_empty())
    }

    /// Campaigns until leader, then runs `lead` with a token cancelled when leadership ends,
    /// and returns once the leader work has been fenced (see the module docs).
    pub async fn run<F, Fut>(&self, cancel: CancellationToken, lead: F) -> Ended
    where
        F: FnOnce(CancellationToken) -> Fut,
        Fut: Future<Output = ()>,
    {
        let Some(acquired) = self.acquire(&cancel).await else {
            revoke(&self.valid_until);
            return Ended::Cancelled;
        };
        // Published before the work can run: the work may act from its first poll.
        self.valid_until
            .send_replace(acquired + self.config.renew_deadline);
        let name = &self.config.name;
        tracing::info!(election = %name, lock = %self.lock.describe(), "became leader");
        self.journey(LeaderTransition::Acquired, self.lock.identity());
        let leader_token = cancel.child_token();
        let mut work = FencedWork {
            valid_until: &self.valid_until,
            token: leader_token.clone(),
            work: Box::pin(lead(leader_token)),
        };
        let ended = self.hold(acquired, &cancel, &mut work).await;
        // The fence: the end of validity is published, the work's token cancelled and its
        // future dropped; whatever the work was doing, it does no more. (Dropping `run`'s
        // own future fences the same way.)
        drop(work);
        self.observed.lock().leading = false;
        let transition = if ended == Ended::Lost {
            LeaderTransition::Lost
        } else {
            LeaderTransition::Stopped
        };
        self.journey(transition, self.lock.identity());
        match ended {
            Ended::Lost => {
                tracing::warn!(election = %name, "failed to renew the lease: stopped leading")
            }
            _ => tracing::info!(election = %name, ?ended, "stopped leading"),
        }
        if self.config.release_on_cancel && ended != Ended::Lost {
            self.release().await;
        }
        revoke(&self.valid_until);
        ended
    }

    /// Drives the leader work while renewing the lease, and says why it stopped; the caller
    /// then fences the work. The lease was acquired by a write sent at `acquired`.
    ///
    /// One hand-written poll, in an order that matters, every time this future is polled:
    ///
    /// 1. The fence: if `renew_deadline` has passed since the last successful renewal was
    ///    sent, the lease is lost, and the work is not polled again. After a stall (the
    ///    process frozen, the VM paused, the executor blocked), this is the first thing done
    ///    on resuming, before anything the work would send. The clock is read each time; a
    ///    timer at the deadline only makes sure this future is woken then.
    /// 2. The caller's cancel (before the work, so work that returns because its token, a
    ///    child of `cancel`, was cancelled counts as cancelled): the work's token is cancelled
    ///    and it gets `renew_deadline` to drain, while renewals go on. During the drain, that
    ///    bound is checked here instead.
    /// 3. The renewal, before the work: a renewal that is due is sent first, and a successful
    ///    one moves the deadline (and the published validity) forward.
    /// 4. The fence again (the renewal's poll took time too), then the work.
    async fn hold<W: Future<Output = ()>>(
        &self,
        acquired: Instant,
        cancel: &CancellationToken,
        work: &mut FencedWork<'_, W>,
    ) -> Ended {
        let renew_deadline = self.config.renew_deadline;
        let lapsed = |last_renew: Instant| Instant::now() >= last_renew + renew_deadline;
        let mut last_renew = acquired;
        let mut renewal = Box::pin(self.renew(acquired));
        let mut cancelled = std::pin::pin!(cancel.cancelled());
        // Wakes this future at the deadline, whatever the renewal is waiting for.
        let mut lapse = std::pin::pin!(tokio::time::sleep_until(acquired + renew_deadline));
        // Set once the caller cancelled: when the drain must end.
        let mut drain: Option<Pin<Box<tokio::time::Sleep>>> = None;
        std::future::poll_fn(|cx| {
            if lapsed(last_renew) || lapse.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Ended::Lost);
            }
            if drain.is_none() && cancelled.as_mut().poll(cx).is_ready() {
                // A clean shutdown: keep the lease while the work drains, for a bounded time.
                work.token.cancel();
                drain = Some(Box::pin(tokio::time::sleep(renew_deadline)));
            }
            let drained = drain
                .as_mut()
                .is_some_and(|bound| bound.as_mut().poll(cx).is_ready());
            if drained {
                tracing::warn!(election = %self.config.name,
                    "the leader work did not stop within the renew deadline: dropped");
                return Poll::Ready(Ended::Cancelled);
            }
            loop {
                match renewal.as_mut().poll(cx) {
                    Poll::Ready(Some(sent)) => {
                        last_renew = sent;
                        self.valid_until.send_replace(sent + renew_deadline);
                        lapse.as_mut().reset(sent + renew_deadline);
                        renewal.set(self.renew(sent));
                    }
                    Poll::Ready(None) => return Poll::Ready(Ended::Lost),
                    Poll::Pending => break,
                }
            }
            if lapsed(last_renew) {
                return Poll::Ready(Ended::Lost);
            }
            match work.work.as_mut().poll(cx) {
                Poll::Ready(()) if drain.is_some() => Poll::Ready(Ended::Cancelled),
                Poll::Ready(()) => Poll::Ready(Ended::WorkFinished),
                Poll::Pending => Poll::Pending,
            }
        })
        .await
    }

    /// Tries every jittered retry period until the lease is ours, and returns when the
    /// winning write was sent; `None` if cancelled first.
    async fn acquire(&self, cancel: &CancellationToken) -> Option<Instant> {
        let mut jitter = Jitter::for_identity(self.lock.identity());
        let attempt_timeout = self.config.request_timeout();
        loop {
            if cancel.is_cancelled() {
                return None;
            }
            let attempt = tokio::time::timeout(attempt_timeout, self.try_acquire_or_renew());
            tokio::select! {
                () = cancel.cancelled() => return None,
                attempt = attempt => match attempt {
                    Ok(Some(sent)) => return Some(sent),
                    Ok(None) => {}
                    Err(_) => tracing::debug!(lock = %self.lock.describe(), "acquire attempt timed out"),
                },
            }
            let wait = jitter.wait(self.config.retry_period);
            tokio::select! {
                () = cancel.cancelled() => return None,
                () = tokio::time::sleep(wait) => {}
            }
        }
    }

    /// One renewal round: waits a retry period, then tries (each attempt bounded by the
    /// request timeout) until one succeeds, returning when its write was sent, or until
    /// `renew_deadline` after `last_renew` has passed (returning `None`).
    async fn renew(&self, last_renew: Instant) -> Option<Instant> {
        let deadline = last_renew + self.config.renew_deadline;
        if tokio::time::timeout_at(deadline, tokio::time::sleep(self.config.retry_period))
            .await
            .is_err()
        {
            return None;
        }
        loop {
            // A timeout polls what it bounds once even when already expired: no attempt (and
            // no write) starts at or after the deadline.
            if Instant::now() >= deadline {
                return None;
            }
            let attempt_deadline = deadline.min(Instant::now() + self.config.request_timeout());
            match tokio::time::timeout_at(attempt_deadline, self.try_acquire_or_renew()).await {
                Ok(Some(sent)) => return Some(sent),
                Ok(None) => {}
                Err(_) => {
                    tracing::debug!(lock = %self.lock.describe(), "renew attempt timed out")
                }
            }
            if Instant::now() >= deadline {
                return None;
            }
            let retry = tokio::time::sleep(self.config.retry_period);
            if tokio::time::timeout_at(deadline, retry).await.is_err() {
                return None;
            }
        }
    }

    /// client-go's `tryAcquireOrRenew`: if this candidate holds the lease afterwards, when
    /// the write that got or kept it was sent (the lease is counted from then).
    async fn try_acquire_or_renew(&self) -> Option<Instant> {
        let identity = self.lock.identity();
        let now = MicroTime::now();
        let lease_seconds = i32::try_from(self.config.lease_duration.as_secs()).unwrap_or(i32::MAX);

        // Fast path: still valid as leader, renew without reading first.
        let renewal = {
            let observed = self.observed.lock();
            match (&observed.record, observed.time) {
                (Some(record), Some(time))
                    if observed.leading
                        && record.holder_identity == identity
                        && time.elapsed() < self.config.lease_duration =>
                {
                    let mut record = record.clone();
                    record.renew_time = Some(now);
                    record.lease_duration_seconds = lease_seconds;
                    Some(record)
                }
                _ => None,
            }
        };
        if let Some(record) = renewal {
            let sent = Instant::now();
            match self.lock.update(&record).await {
                Ok(()) => {
                    self.observe(record, Some(sent));
                    return Some(sent);
                }
                Err(error) => {
                    tracing::debug!(%error, "fast-path renewal failed, reading the lease")
                }
            }
        }

        let desired = LeaderElectionRecord {
            holder_identity: identity.to_owned(),
            lease_duration_seconds: lease_seconds,
            acquire_time: Some(now),
            renew_time: Some(now),
            leader_transitions: 0,
        };
        let current = match self.lock.get().await {
            Ok(current) => current,
            Err(error) => {
                tracing::warn!(lock = %self.lock.describe(), %error, "cannot read the lease");
                return None;
            }
        };
        let Some(current) = current else {
            let sent = Instant::now();
            return match self.lock.create(&desired).await {
                Ok(()) => {
                    self.observe(desired, Some(sent));
                    Some(sent)
                }
                Err(error) => {
                    tracing::warn!(lock = %self.lock.describe(), %error, "cannot create the lease");
                    None
                }
            };
        };

        // Remember when the record last changed, on our clock.
        let observed_at = {
            let changed = self.observed.lock().record.as_ref() != Some(&current);
            if changed {
                self.observe(current.clone(), None);
            }
            self.observed.lock().time.unwrap_or_else(Instant::now)
        };
        let held_by_other =
            !current.holder_identity.is_empty() && current.holder_identity != identity;
        let valid_for =
            Duration::from_secs(u64::try_from(current.lease_duration_seconds).unwrap_or(0));
        if held_by_other && observed_at + valid_for > Instant::now() {
            return None;
        }

        let mut record = desired;
        if current.holder_identity == identity {
            record.acquire_time = current.acquire_time;
            record.leader_transitions = current.leader_transitions;
        } else {
            record.leader_transitions = current.leader_transitions.saturating_add(1);
        }
        let sent = Instant::now();
        match self.lock.update(&record).await {
            Ok(()) => {
                self.observe(record, Some(sent));
                Some(sent)
            }
            Err(error) => {
                tracing::debug!(lock = %self.lock.describe(), %error, "cannot update the lease");
                None
            }
        }
    }

    /// Records what was seen: a record this candidate wrote (`sent`: when its write was sent,
    /// the time it counts from), or another's, seen now. Tells `on_new_leader` when the holder
    /// changed.
    fn observe(&self, record: LeaderElectionRecord, sent: Option<Instant>) {
        let new_holder = {
            let mut observed = self.observed.lock();
            let previous = observed.record.as_ref().map(|r| r.holder_identity.clone());
            let holder = record.holder_identity.clone();
            observed.record = Some(record);
            observed.time = Some(sent.unwrap_or_else(Instant::now));
            if sent.is_some() {
                observed.leading = true;
            }
            (previous.as_deref() != Some(holder.as_str()) && !holder.is_empty()).then_some(holder)
        };
        if let Some(holder) = &new_holder {
            self.journey(LeaderTransition::Observed, holder);
        }
        if let (Some(holder), Some(callback)) = (new_holder, &self.on_new_leader) {
            callback(&holder);
        }
    }

    /// A transition for the flight recorder's timeline (target
    /// `clientgo_leaderelection::journey`, `TRACE`): `acquired`, `lost`, `stopped`,
    /// `released`, or `observed` (a new holder seen, `identity` is the holder).
    fn journey(&self, transition: LeaderTransition, identity: &str) {
        tracing::trace!(target: target::LEADERELECTION, stage = Stage::Leader.name(),
            lock = %self.lock.describe(), transition = transition.name(), identity);
    }

    /// Gives the lease up if we hold it: empty holder, one-second duration (client-go's
    /// `release`). Retries a conflict, within the renew deadline.
    async fn release(&self) {
        let identity = self.lock.identity();
        let attempt = async {
            for _ in 0..3 {
                let current = match self.lock.get().await {
                    Ok(Some(current)) => current,
                    Ok(None) => return,
                    Err(error) => {
                        tracing::warn!(%error, "cannot read the lease to release it");
                        return;
                    }
                };
                if current.holder_identity != identity {
                    return;
                }
                let now = MicroTime::now();
                let released = LeaderElectionRecord {
                    holder_identity: String::new(),
                    lease_duration_seconds: 1,
                    acquire_time: Some(now),
                    renew_time: Some(now),
                    leader_transitions: current.leader_transitions,
                };
                match self.lock.update(&released).await {
                    Ok(()) => {
                        self.observe(released, None);
                        tracing::info!(lock = %self.lock.describe(), "released the lease");
                        self.journey(LeaderTransition::Released, identity);
                        return;
                    }
                    Err(crate::record::LockError::Conflict) => continue,
                    Err(error) => {
                        tracing::warn!(%error, "cannot release the lease");
                        return;
                    }
                }
            }
        };
        if tokio::time::timeout(self.config.renew_deadline, attempt)
            .await
            .is_err()
        {
            tracing::warn!(lock = %self.lock.describe(), "releasing the lease timed out");
        }
    }
}

/// The leader work and what fences it. Dropping it (at the fence, or with `run`'s future)
/// first publishes the end of validity, then cancels the work's token, then drops the work's
/// future (fields drop after `drop`): watchers of a [`Fence`] learn the end no later than the
/// work itself.
struct FencedWork<'a, W> {
    valid_until: &'a watch::Sender<Instant>,
    token: CancellationToken,
    work: Pin<Box<W>>,
}

impl<W> Drop for FencedWork<'_, W> {
    fn drop(&mut self) {
        // Ends the validity now, never later (after a lapse it stays at the deadline that
        // passed), and tells the watchers even then.
        let now = Instant::now();
        self.valid_until
            .send_modify(|until| *until = (*until).min(now));
        self.token.cancel();
    }
}

/// Ends the published validity now if it had not ended (it has, normally: at the fence, or
/// `run` never led); tells the watchers only if it changed.
fn revoke(valid_until: &watch::Sender<Instant>) {
    let now = Instant::now();
    valid_until.send_if_modified(|until| {
        let lowered = *until > now;
        if lowered {
            *until = now;
        }
        lowered
    });
}

/// Jittered waits in `[period, (1 + JITTER_FACTOR) × period)`, from a generator seeded by the
/// candidate's identity (so a test run is reproducible, and candidates still spread out).
struct Jitter(u64);

impl Jitter {
    fn for_identity(identity: &str) -> Self {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        identity.hash(&mut hasher);
        Self(hasher.finish())
    }

    fn wait(&mut self, period: Duration) -> Duration {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        let unit = ((z ^ (z >> 31)) >> 11) as f64 / (1u64 << 53) as f64;
        period.mul_f64(1.0 + JITTER_FACTOR * unit)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// client-go's `TestLeaderElectionHealthChecker`: only a leader that has not renewed for
    /// longer than the lease plus the tolerance is unhealthy.
    #[tokio::test(start_paused = true)]
    async fn health_check_fails_only_for_an_overdue_leader() {
        let observed = Arc::new(Mutex::new(Observed::default()));
        let health = HealthCheck {
            observed: observed.clone(),
            lease_duration: Duration::from_secs(15),
        };
        assert!(health.check("x", Duration::ZERO).is_ok(), "never led");
        {
            let mut state = observed.lock();
            state.leading = true;
            state.time = Some(Instant::now());
        }
        tokio::time::advance(Duration::from_secs(16)).await;
        assert!(
            health.check("x", Duration::from_secs(5)).is_ok(),
            "within tolerance"
        );
        let overdue = health.check("x", Duration::from_secs(0)).unwrap_err();
        assert_eq!(overdue.since, Duration::from_secs(16));
        observed.lock().leading = false;
        assert!(
            health.check("x", Duration::ZERO).is_ok(),
            "a follower is healthy"
        );
    }

    #[test]
    fn jitter_stays_in_client_go_window() {
        let mut jitter = Jitter::for_identity("a");
        let period = Duration::from_secs(2);
        for _ in 0..1000 {
            let wait = jitter.wait(period);
            assert!(wait >= period && wait < period.mul_f64(2.2), "{wait:?}");
        }
    }
}
