//! Each control plane's working directory (PKI, logs, etcd's data, kubeconfigs) under the
//! system's temporary directory, and the sweep of directories left by killed test processes.
//!
//! controller-runtime's envtest leaves its temporary directories behind when the test
//! process is killed; here the next control plane started on the machine removes every
//! directory whose owning process is gone.

use std::fs;
use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::pki::random_hex;

/// The name of every control plane's directory under the temporary directory starts with
/// this, followed by the pid of the process that owns it.
const DIR_PREFIX: &str = "clientgo-envtest-";

/// Removes the directories of control planes whose process is gone (a test process killed
/// with SIGKILL runs no destructor; its children died with it, its directory did not).
pub(crate) fn sweep_stale_dirs() {
    let Ok(entries) = fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
            .and_then(|pid| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// A new, empty working directory owned by this process.
pub(crate) fn create() -> Result<PathBuf, Error> {
    let dir = std::env::temp_dir().join(format!(
        "{DIR_PREFIX}{}-{}",
        std::process::id(),
        random_hex(4)?
    ));
    for sub in ["logs", "etcd"] {
        fs::create_dir_all(dir.join(sub))
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    Ok(dir)
}

/// Writes a file only its owner can read (kubeconfigs hold a client key).
pub(crate) fn write_private(path: &Path, content: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .and_then(|mut f| f.write_all(content))
        .map_err(|e| Error::io(format!("writing {}", path.display()), e))
}
