//! Which kubeconfig files to read, and how several are merged into one.
//!
//! Mirrors client-go `tools/clientcmd/loader.go` (`ClientConfigLoadingRules`,
//! `NewDefaultClientConfigLoadingRules`, `Load`, `ResolveLocalPaths`), which is what kubectl
//! uses:
//!
//! * An **explicit path** (kubectl's `--kubeconfig`) wins outright: only that file is read, and
//!   it must exist.
//! * Otherwise the **precedence list**: the entries of `KUBECONFIG` split with the OS path-list
//!   separator (`:` on Unix, `;` on Windows), empty entries dropped and duplicates removed, or
//!   `~/.kube/config` when `KUBECONFIG` is unset or empty. Missing files in the list are
//!   skipped (a warning is logged when `KUBECONFIG` was set and none of its files exists); a
//!   file that exists but cannot be read or parsed is an error.
//! * **Merging**: the first file to define a cluster, user, context or extension name wins
//!   and its entry is taken whole (a later file's entry of the same name is ignored, even its
//!   fields the first one left empty); the first file to set `current-context` wins.
//! * **Relative paths** (`certificate-authority`, `client-certificate`, `client-key`,
//!   `tokenFile`, and an exec `command` that contains a path separator) are resolved against
//!   the directory of the file that defined the entry, and cleaned lexically as Go's
//!   `filepath.Join` does.
//!
//! Differences from client-go, and why:
//! * No migration rule copying the pre-2015 `~/.kube/.kubeconfig` to `~/.kube/config`: a
//!   library should not write into the user's home directory as a side effect of reading.
//! * The first unreadable or invalid file ends the load with its error, instead of an
//!   aggregate returned next to a partial merge.
//! * The home directory is `HOME` (`USERPROFILE` on Windows), as client-go's `homedir` does on
//!   Unix; with neither set, the default precedence list is empty.

use std::collections::BTreeMap;
use std::env;
use std::ffi::OsStr;
use std::io;
use std::path::{Component, Path, PathBuf};

use super::error::ConfigError;
use super::kubeconfig::Kubeconfig;

/// The environment variable holding the list of kubeconfig files.
pub const KUBECONFIG_ENV: &str = "KUBECONFIG";

/// Which kubeconfig files to read (client-go's `ClientConfigLoadingRules`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LoadingRules {
    /// A file named explicitly: if set, it is the only file read, and it must exist.
    pub explicit_path: Option<PathBuf>,
    /// Files to read and merge in order (ignored when `explicit_path` is set).
    pub precedence: Vec<PathBuf>,
    /// Log a warning when every file of `precedence` is missing (set when it came from
    /// `KUBECONFIG`).
    pub warn_if_all_missing: bool,
}

/// The result of [`LoadingRules::load`]: the merged kubeconfig and which files made it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LoadedKubeconfig {
    /// The merged kubeconfig, relative paths resolved.
    pub kubeconfig: Kubeconfig,
    /// The files read, in precedence order.
    pub files: Vec<PathBuf>,
    /// The files looked for that do not exist.
    pub missing: Vec<PathBuf>,
}

impl LoadingRules {
    /// kubectl's default rules, from this process's `KUBECONFIG` and home directory.
    pub fn from_env() -> Self {
        LoadingRules::from_env_values(
            env::var_os(KUBECONFIG_ENV).as_deref(),
            home_dir().as_deref(),
        )
    }

    /// kubectl's default rules for the given `KUBECONFIG` value and home directory (so tests
    /// need not change the process environment).
    pub fn from_env_values(kubeconfig: Option<&OsStr>, home: Option<&Path>) -> Self {
        match kubeconfig.filter(|v| !v.is_empty()) {
            Some(list) => {
                let mut precedence: Vec<PathBuf> = Vec::new();
                for path in env::split_paths(list) {
                    if !path.as_os_str().is_empty() && !precedence.contains(&path) {
                        precedence.push(path);
                    }
                }
                LoadingRules {
                    explicit_path: None,
                    precedence,
                    warn_if_all_missing: true,
                }
            }
            None => LoadingRules {
                explicit_path: None,
                precedence: home.map(default_kubeconfig_path).into_iter().collect(),
                warn_if_all_missing: false,
            },
        }
    }

    /// Rules that read exactly one file, which must exist (kubectl's `--kubeconfig`).
    pub fn explicit(path: impl Into<PathBuf>) -> Self {
        LoadingRules {
            explicit_path: Some(path.into()),
            ..LoadingRules::default()
        }
    }

    /// Rules that merge the given files in order, skipping missing ones.
    pub fn with_precedence(paths: impl IntoIterator<Item = impl Into<PathBuf>>) -> Self {
        LoadingRules {
            precedence: paths.into_iter().map(Into::into).collect(),
            ..LoadingRules::default()
        }
    }

    /// The files that [`load`](Self::load) looks at, in order (client-go's
    /// `GetLoadingPrecedence`).
    pub fn loading_precedence(&self) -> Vec<PathBuf> {
        match &self.explicit_path {
            Some(path) => vec![path.clone()],
            None => self.precedence.clone(),
        }
    }

    /// Reads and merges the kubeconfig files. See the module documentation for the rules.
    pub fn load(&self) -> Result<LoadedKubeconfig, ConfigError> {
        if let Some(path) = &self.explicit_path {
            if let Err(e) = std::fs::metadata(path) {
                if e.kind() == io::ErrorKind::NotFound {
                    return Err(ConfigError::KubeconfigNotFound { path: path.clone() });
                }
            }
        }
        let mut loaded = LoadedKubeconfig::default();
        let mut configs = Vec::new();
        for path in self.loading_precedence() {
            if path.as_os_str().is_empty() {
                continue;
            }
            let content = match std::fs::read(&path) {
                Ok(content) => content,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    tracing::debug!(path = %path.display(), "kubeconfig not found, skipped");
                    loaded.missing.push(path);
                    continue;
                }
                Err(source) => return Err(ConfigError::ReadKubeconfig { path, source }),
            };
            let mut config = Kubeconfig::parse(&content, Some(&path))?;
            resolve_relative_paths(&mut config, &path);
            tracing::debug!(path = %path.display(), "kubeconfig loaded");
            configs.push(config);
            loaded.files.push(path);
        }
        if self.warn_if_all_missing && configs.is_empty() && !loaded.missing.is_empty() {
            tracing::warn!(
                missing = ?loaded.missing,
                "none of the kubeconfig files named by {KUBECONFIG_ENV} exists"
            );
        }
        loaded.kubeconfig = merge(configs);
        Ok(loaded)
    }
}

/// `~/.kube/config` for the given home directory.
pub fn default_kubeconfig_path(home: &Path) -> PathBuf {
    home.join(".kube").join("config")
}

fn home_dir() -> Option<PathBuf> {
    let home = env::var_os("HOME").filter(|h| !h.is_empty());
    #[cfg(windows)]
    let home = home.or_else(|| env::var_os("USERPROFILE").filter(|h| !h.is_empty()));
    home.map(PathBuf::from)
}

/// First definition of each name wins; first `current-context` wins.
fn merge(configs: Vec<Kubeconfig>) -> Kubeconfig {
    fn take_new<T>(into: &mut BTreeMap<String, T>, from: BTreeMap<String, T>) {
        for (name, value) in from {
            into.entry(name).or_insert(value);
        }
    }
    let mut merged = Kubeconfig::default();
    for config in configs {
        take_new(&mut merged.clusters, config.clusters);
        take_new(&mut merged.users, config.users);
        take_new(&mut merged.contexts, config.contexts);
        take_new(&mut merged.extensions, config.extensions);
        if merged.current_context.is_none() {
            merged.current_context = config.current_context;
        }
    }
    merged
}

/// Resolves the file references of every entry against the directory of `file`.
pub(crate) fn resolve_relative_paths(config: &mut Kubeconfig, file: &Path) {
    let dir = file.parent().unwrap_or(Path::new(""));
    let base = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
    for cluster in config.clusters.values_mut() {
        resolve(&mut cluster.certificate_authority, &base);
    }
    for user in config.users.values_mut() {
        resolve(&mut user.client_certificate, &base);
        resolve(&mut user.client_key, &base);
        resolve(&mut user.token_file, &base);
        if let Some(exec) = &mut user.exec {
            // Only a command with a separator is a path; a bare name is looked up in PATH.
            if exec.command.contains(std::path::MAIN_SEPARATOR) {
                let mut command = Some(PathBuf::from(&exec.command));
                resolve(&mut command, &base);
                if let Some(command) = command {
                    exec.command = command.to_string_lossy().into_owned();
                }
            }
        }
    }
}

fn resolve(path: &mut Option<PathBuf>, base: &Path) {
    if let Some(p) = path {
        if !p.as_os_str().is_empty() && !p.is_absolute() {
            *p = clean(&base.join(&*p));
        }
    }
}

/// Lexical clean like Go's `filepath.Clean`: drops `.` and folds `dir/..`.
fn clean(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                let folded =
                    matches!(out.components().next_back(), Some(Component::Normal(_))) && out.pop();
                if !folded && !matches!(out.components().next_back(), Some(Component::RootDir)) {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
#[path = "loader_tests.rs"]
mod tests;
