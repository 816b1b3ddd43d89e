//! Shutting down on SIGTERM or Ctrl-C: a [`CancellationToken`] cancelled on the first
//! signal; a second signal ends the process at once with exit code 1.
//!
//! Mirrors `signals.SetupSignalHandler` of kubernetes/sample-controller and
//! apiserver's `SetupSignalContext`, which every client-go controller's `main` starts with:
//! the first signal starts a graceful shutdown (informers stop, work queues drain), a second
//! one means the operator will not wait for it. Kubernetes sends SIGTERM to a pod's
//! containers on deletion, then SIGKILL after the grace period.
//!
//! Differences: the token is returned instead of a context, and it can be made a child of a
//! token the caller already has ([`shutdown_on_signal_with`]) so that tests or an embedding
//! program can stop the same tree without a signal.

use tokio_util::sync::CancellationToken;

/// A token cancelled on the first SIGTERM or SIGINT (Ctrl-C); a second signal exits the
/// process with code 1. Call it once, from within a tokio runtime, early in `main`.
///
/// ```no_run
/// # async fn example() {
/// let shutdown = clientgo::signals::shutdown_on_signal();
/// // factory.start(&shutdown); run_workers(..., shutdown.clone()).await; ...
/// shutdown.cancelled().await;
/// # }
/// ```
pub fn shutdown_on_signal() -> CancellationToken {
    shutdown_on_signal_with(CancellationToken::new())
}

/// As [`shutdown_on_signal`], cancelling `token` (which the caller may also cancel itself).
///
/// The handlers are installed before this returns, so a signal that arrives at any later
/// moment is caught.
pub fn shutdown_on_signal_with(token: CancellationToken) -> CancellationToken {
    let mut signals = Signals::install();
    let cancel = token.clone();
    tokio::spawn(async move {
        let first = signals.next().await;
        tracing::info!(
            signal = first,
            "shutting down; a second signal exits at once"
        );
        cancel.cancel();
        let second = signals.next().await;
        tracing::warn!(signal = second, "second signal: exiting with code 1");
        std::process::exit(1);
    });
    token
}

/// SIGTERM and SIGINT listeners, installed once and kept, so that no signal falls between
/// two listeners.
struct Signals {
    #[cfg(unix)]
    unix: Option<(tokio::signal::unix::Signal, tokio::signal::unix::Signal)>,
}

impl Signals {
    fn install() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let unix = signal(SignalKind::terminate())
                .and_then(|term| Ok((term, signal(SignalKind::interrupt())?)))
                .map_err(|error| {
                    tracing::warn!(%error, "cannot listen for SIGTERM; listening for Ctrl-C only")
                })
                .ok();
            Signals { unix }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// Waits for the next signal and names it.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        if let Some((term, int)) = &mut self.unix {
            tokio::select! {
                _ = term.recv() => return "SIGTERM",
                _ = int.recv() => return "SIGINT",
            }
        }
        match tokio::signal::ctrl_c().await {
            Ok(()) => "SIGINT",
            // No signal can be received: never report one.
            Err(_) => std::future::pending().await,
        }
    }
}
