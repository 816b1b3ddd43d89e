//! Waiting for a component to become ready: probe its health endpoint until it answers 200,
//! its process exits, or a bound passes; and picking free ports for it.
//!
//! Mirrors the readiness loop of controller-runtime's `internal/testing/process`
//! (`HealthCheck`, polled until a start timeout). Differences: a process that exits is
//! reported at once with its exit status instead of after the timeout, and every failure
//! carries the last lines of the component's log.

use std::net::{Ipv4Addr, SocketAddr, TcpListener};
use std::time::{Duration, Instant};

use crate::error::Error;
use crate::http::Endpoint;
use crate::process::Process;

/// How often readiness is probed while a component starts.
const PROBE_INTERVAL: Duration = Duration::from_millis(100);

/// A port on 127.0.0.1 that is free now (the OS picks it; the listener is closed at once).
pub(crate) fn free_addr() -> Result<SocketAddr, Error> {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .and_then(|l| l.local_addr())
        .map_err(|e| Error::io("picking a free port", e))
}

/// `Ok` when `path` answers 200, else what it answered.
pub(crate) fn probe(endpoint: &Endpoint, method: &str, path: &str) -> Result<(), String> {
    match endpoint.request(method, path, None) {
        Ok(r) if r.status == 200 => Ok(()),
        Ok(r) => Err(format!(
            "{path} answered {}: {}",
            r.status,
            r.body_snippet()
        )),
        Err(e) => Err(format!("{path}: {e}")),
    }
}

/// Probes until ready, the process exits, or `timeout` passes.
pub(crate) fn wait_ready(
    process: &Process,
    timeout: Duration,
    mut ready: impl FnMut() -> Result<(), String>,
) -> Result<(), Error> {
    let started = Instant::now();
    loop {
        if let Some(status) = process.exited() {
            return Err(Error::Exited {
                component: process.name,
                status,
                log: process.log.clone(),
                tail: process.log_tail(20),
            });
        }
        let last_probe = match ready() {
            Ok(()) => {
                tracing::debug!(component = process.name, after = ?started.elapsed(), "ready");
                return Ok(());
            }
            Err(why) => why,
        };
        if started.elapsed() >= timeout {
            process.kill();
            return Err(Error::NotReady {
                component: process.name,
                waited: timeout,
                last_probe,
                log: process.log.clone(),
                tail: process.log_tail(20),
            });
        }
        std::thread::sleep(PROBE_INTERVAL);
    }
}
