//! Test helpers shared by the config modules: PEM fixtures, a settable clock, file writers.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::clock::Clock;

/// A self-signed CA certificate (test fixture).
pub(crate) const CA_PEM: &str = include_str!("../../testdata/ca.crt");
/// A client certificate signed by [`CA_PEM`] (test fixture).
pub(crate) const CLIENT_CERT_PEM: &str = include_str!("../../testdata/client.crt");
/// The private key of [`CLIENT_CERT_PEM`] (test fixture).
pub(crate) const CLIENT_KEY_PEM: &str = include_str!("../../testdata/client.key");

/// A clock that moves only when told to; starts at 2030-01-01T00:00:00Z.
#[derive(Clone)]
pub(crate) struct FakeClock(Arc<Mutex<SystemTime>>);

impl FakeClock {
    pub(crate) fn new() -> Self {
        FakeClock(Arc::new(Mutex::new(
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_893_456_000),
        )))
    }

    pub(crate) fn clock(&self) -> Clock {
        let now = self.0.clone();
        Clock::from_fn(move || *now.lock().unwrap())
    }

    pub(crate) fn now(&self) -> SystemTime {
        *self.0.lock().unwrap()
    }

    pub(crate) fn advance(&self, by: Duration) {
        *self.0.lock().unwrap() += by;
    }
}

/// Writes `content` to `dir/name` and returns the path.
pub(crate) fn write(dir: &Path, name: &str, content: impl AsRef<[u8]>) -> PathBuf {
    let path = dir.join(name);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    std::fs::write(&path, content).unwrap();
    path
}

/// Writes an executable shell script to `dir/name`.
///
/// The file is written by a `sh` child process, not by this (multi-threaded) test process: if
/// this process held the script open for writing while another test thread forked to spawn a
/// plugin, executing the script could fail with ETXTBSY ("text file busy").
pub(crate) fn write_script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::io::Write as _;
    let path = dir.join(name);
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg("cat > \"$1\" && chmod 755 \"$1\"")
        .arg("sh")
        .arg(&path)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(format!("#!/bin/sh\n{body}\n").as_bytes())
        .unwrap();
    drop(stdin);
    assert!(child.wait().unwrap().success());
    path
}

/// Collects, as text, every tracing event and span field (all levels) emitted on the current
/// thread while installed, for tests that check what reaches the logs.
///
/// A scoped (`set_default`) subscriber is not reliable when other test threads hit a callsite
/// first (tracing caches each callsite's interest), so one always-enabled global subscriber
/// is installed once and routes events to the buffer of the thread that installed a capture.
#[derive(Clone, Default)]
pub(crate) struct LogCapture(Arc<Mutex<String>>);

thread_local! {
    static CAPTURE: std::cell::RefCell<Option<Arc<Mutex<String>>>> =
        const { std::cell::RefCell::new(None) };
}

/// Stops capturing on drop.
pub(crate) struct CaptureGuard(());

impl Drop for CaptureGuard {
    fn drop(&mut self) {
        CAPTURE.with(|c| *c.borrow_mut() = None);
    }
}

impl LogCapture {
    pub(crate) fn install(&self) -> CaptureGuard {
        static GLOBAL: std::sync::Once = std::sync::Once::new();
        GLOBAL.call_once(|| {
            tracing::subscriber::set_global_default(GlobalCapture)
                .expect("no other global subscriber in these tests");
        });
        tracing::callsite::rebuild_interest_cache();
        CAPTURE.with(|c| *c.borrow_mut() = Some(self.0.clone()));
        CaptureGuard(())
    }

    pub(crate) fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }
}

fn append(record: impl FnOnce(&mut dyn tracing::field::Visit)) {
    CAPTURE.with(|c| {
        if let Some(buffer) = &*c.borrow() {
            let mut buffer = buffer.lock().unwrap();
            record(&mut TextVisitor(&mut buffer));
            buffer.push('\n');
        }
    });
}

struct TextVisitor<'a>(&'a mut String);

impl tracing::field::Visit for TextVisitor<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        use std::fmt::Write as _;
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

struct GlobalCapture;

impl tracing::Subscriber for GlobalCapture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        append(|v| span.record(v));
        tracing::span::Id::from_u64(1)
    }

    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        append(|v| values.record(v));
    }

    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}

    fn event(&self, event: &tracing::Event<'_>) {
        append(|v| event.record(v));
    }

    fn enter(&self, _: &tracing::span::Id) {}

    fn exit(&self, _: &tracing::span::Id) {}
}
