//! The control plane's child processes: started so that they never outlive the test process,
//! logged to files, stopped on drop.
//!
//! controller-runtime's envtest stops its processes from `Stop()`, which a test must remember
//! to call; a test process that panics or exits early leaves etcd and kube-apiserver running.
//! Here each child is started with `PR_SET_PDEATHSIG = SIGKILL`, so the kernel kills it when
//! its parent goes away, whatever way the test process ends. The kernel ties that signal to
//! the *thread* that forked the child, and the test harness runs each test on a thread of its
//! own that ends with the test; so every child is forked by one spawner thread that lives as
//! long as the process (a child started by test A must survive A's thread when B shares the
//! control plane). Dropping a [`Process`] kills and reaps the child.

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, OnceLock, mpsc};

use crate::error::Error;

/// A supervised child process.
#[derive(Debug)]
pub(crate) struct Process {
    pub name: &'static str,
    pub log: PathBuf,
    child: Mutex<Option<Child>>,
}

struct SpawnRequest {
    command: Command,
    reply: mpsc::Sender<io::Result<Child>>,
}

/// The spawner thread's inbox; the thread lives until the process exits.
fn spawner() -> &'static Mutex<mpsc::Sender<SpawnRequest>> {
    static SPAWNER: OnceLock<Mutex<mpsc::Sender<SpawnRequest>>> = OnceLock::new();
    SPAWNER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SpawnRequest>();
        std::thread::Builder::new()
            .name("envtest-spawner".into())
            .spawn(move || {
                for mut request in rx {
                    let _ = request.reply.send(request.command.spawn());
                }
            })
            .expect("spawning the envtest spawner thread");
        Mutex::new(tx)
    })
}

impl Process {
    /// Starts `binary` with `args`, its output appended to `log`.
    pub fn start(
        name: &'static str,
        binary: &Path,
        args: &[String],
        log: PathBuf,
    ) -> Result<Process, Error> {
        let out = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
        let err = out
            .try_clone()
            .map_err(|e| Error::io(format!("opening {}", log.display()), e))?;
        let mut command = Command::new(binary);
        command
            .args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        let parent = std::process::id();
        // SAFETY: the closure runs in the child between fork and exec and calls only
        // async-signal-safe functions (prctl, getppid, _exit).
        unsafe {
            command.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent may have died between fork and prctl: then no signal will come.
                if libc::getppid() as u32 != parent {
                    libc::_exit(1);
                }
                Ok(())
            });
        }
        let (reply, answer) = mpsc::channel();
        let sent = spawner()
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .send(SpawnRequest { command, reply });
        let spawned = match sent {
            Ok(()) => answer
                .recv()
                .unwrap_or_else(|_| Err(io::Error::other("the spawner thread is gone"))),
            Err(_) => Err(io::Error::other("the spawner thread is gone")),
        };
        let child = spawned.map_err(|e| Error::io(format!("starting {}", binary.display()), e))?;
        tracing::debug!(component = name, pid = child.id(), "started");
        Ok(Process {
            name,
            log,
            child: Mutex::new(Some(child)),
        })
    }

    /// The child's pid, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.lock().as_ref().map(Child::id)
    }

    /// The exit status, if the child has exited.
    pub fn exited(&self) -> Option<String> {
        let mut guard = self.lock();
        let child = guard.as_mut()?;
        match child.try_wait() {
            Ok(Some(status)) => Some(status.to_string()),
            Ok(None) => None,
            Err(e) => Some(format!("unknown status ({e})")),
        }
    }

    /// Kills the child (SIGKILL) and reaps it. Idempotent.
    pub fn kill(&self) {
        if let Some(mut child) = self.lock().take() {
            let _ = child.kill();
            let _ = child.wait();
            tracing::debug!(component = self.name, "stopped");
        }
    }

    /// The last `lines` lines of the log.
    pub fn log_tail(&self, lines: usize) -> String {
        tail(&self.log, lines)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Child>> {
        self.child.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The last `lines` lines of a file (of its last 64 KiB), or why it could not be read.
pub(crate) fn tail(path: &Path, lines: usize) -> String {
    match fs::read(path) {
        Ok(content) => {
            let start = content.len().saturating_sub(64 << 10);
            let text = String::from_utf8_lossy(&content[start..]);
            let all: Vec<&str> = text.lines().collect();
            all[all.len().saturating_sub(lines)..].join("\n")
        }
        Err(e) => format!("(cannot read {}: {e})", path.display()),
    }
}
