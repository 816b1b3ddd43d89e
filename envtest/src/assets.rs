//! Finding the control plane's binaries: `KUBEBUILDER_ASSETS`, else the project's xz archives
//! unpacked once into a cache directory.
//!
//! Mirrors controller-runtime's `envtest` asset lookup (`KUBEBUILDER_ASSETS` names a directory
//! holding `etcd`, `kube-apiserver` and, when wanted, `kube-controller-manager`). Where
//! controller-runtime's `setup-envtest` downloads the binaries, this crate never downloads: it
//! unpacks the xz archives the project keeps beside its repository (`shared/envtest/` in an
//! ancestor of the working directory or of this crate, or `CLIENTGO_ENVTEST_ARCHIVES`) into
//! `CLIENTGO_ENVTEST_CACHE` (default `~/.cache/clientgo-envtest`), under a directory named for
//! the versions, which is itself a valid `KUBEBUILDER_ASSETS` directory. Unpacking writes a
//! temporary file and renames it, so concurrent test binaries never see half a binary.

use std::fs;
use std::io::{self, BufReader, BufWriter};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::error::Error;

/// The versions of the archived binaries; also the cache directory's name, the same one the
/// reference start script uses, so both share one unpacked copy.
pub const ARCHIVED_VERSIONS: &str = "v1.36.2-etcd3.6.13";

/// Where the binaries of one control plane are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binaries {
    /// The directory holding them (a valid `KUBEBUILDER_ASSETS`).
    pub dir: PathBuf,
}

impl Binaries {
    /// The path of one binary (`etcd`, `kube-apiserver`, `kube-controller-manager`).
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Finds the binaries as described in the module documentation, unpacking the archives if
    /// needed. `with_controller_manager` also requires `kube-controller-manager`.
    pub fn find(with_controller_manager: bool) -> Result<Binaries, Error> {
        let needed: &[&'static str] = if with_controller_manager {
            &["etcd", "kube-apiserver", "kube-controller-manager"]
        } else {
            &["etcd", "kube-apiserver"]
        };
        if let Some(dir) = std::env::var_os("KUBEBUILDER_ASSETS").filter(|d| !d.is_empty()) {
            let dir = PathBuf::from(dir);
            for &binary in needed {
                if !is_executable(&dir.join(binary)) {
                    return Err(Error::MissingBinary { binary, dir });
                }
            }
            return Ok(Binaries { dir });
        }
        let candidates = archive_dirs();
        let Some(archives) = candidates
            .iter()
            .find(|d| needed.iter().all(|b| d.join(format!("{b}.xz")).is_file()))
        else {
            return Err(Error::NoBinaries {
                looked_in: candidates,
            });
        };
        let dir = cache_root().join(ARCHIVED_VERSIONS);
        fs::create_dir_all(&dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        for &binary in needed {
            let target = dir.join(binary);
            if !is_executable(&target) {
                unpack(&archives.join(format!("{binary}.xz")), &target)?;
            }
        }
        Ok(Binaries { dir })
    }
}

/// The directories that may hold the archives, in the order they are tried.
fn archive_dirs() -> Vec<PathBuf> {
    if let Some(dir) = std::env::var_os("CLIENTGO_ENVTEST_ARCHIVES").filter(|d| !d.is_empty()) {
        return vec![PathBuf::from(dir)];
    }
    let mut dirs = Vec::new();
    let starts = [
        std::env::current_dir().ok(),
        Some(PathBuf::from(env!("CARGO_MANIFEST_DIR"))),
    ];
    for start in starts.into_iter().flatten() {
        for ancestor in start.ancestors() {
            let dir = ancestor.join("shared").join("envtest");
            if !dirs.contains(&dir) {
                dirs.push(dir);
            }
        }
    }
    dirs
}

/// `CLIENTGO_ENVTEST_CACHE`, else `$HOME/.cache/clientgo-envtest`, else a directory under the
/// system's temporary directory.
fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("CLIENTGO_ENVTEST_CACHE").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
        Some(home) => Path::new(&home).join(".cache").join("clientgo-envtest"),
        None => std::env::temp_dir().join("clientgo-envtest"),
    }
}

fn is_executable(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Decodes `archive` into `target` through a temporary file and a rename.
fn unpack(archive: &Path, target: &Path) -> Result<(), Error> {
    let fail = |source: io::Error| Error::Unpack {
        archive: archive.to_owned(),
        source,
    };
    tracing::info!(archive = %archive.display(), target = %target.display(), "unpacking");
    let tmp = target.with_extension(format!("tmp.{}", std::process::id()));
    let result = (|| {
        let input = BufReader::new(fs::File::open(archive)?);
        let mut decoder = lzma_rust2::XzReader::new(input, true);
        let mut output = BufWriter::new(fs::File::create(&tmp)?);
        io::copy(&mut decoder, &mut output)?;
        let file = output.into_inner().map_err(|e| e.into_error())?;
        file.sync_all()?;
        fs::set_permissions(&tmp, fs::Permissions::from_mode(0o755))?;
        fs::rename(&tmp, target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.map_err(fail)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_archive_unpacks_to_an_executable() {
        let dir = tempdir();
        let archive = dir.join("tool.xz");
        // "#!/bin/sh\necho hi\n", compressed with `xz -c`.
        fs::write(&archive, include_bytes!("../testdata/tool.xz")).unwrap();
        let target = dir.join("tool");
        unpack(&archive, &target).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"#!/bin/sh\necho hi\n");
        assert!(is_executable(&target));
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_corrupt_archive_is_an_error_and_leaves_nothing() {
        let dir = tempdir();
        let archive = dir.join("bad.xz");
        fs::write(&archive, b"not xz at all").unwrap();
        let target = dir.join("bad");
        let err = unpack(&archive, &target).unwrap_err();
        assert!(matches!(err, Error::Unpack { .. }), "{err}");
        assert!(err.to_string().contains("bad.xz"), "{err}");
        assert_eq!(
            fs::read_dir(&dir).unwrap().count(),
            1,
            "only the archive is left"
        );
        fs::remove_dir_all(dir).unwrap();
    }

    fn tempdir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "clientgo-envtest-assets-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }
}
