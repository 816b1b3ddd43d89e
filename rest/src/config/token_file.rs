//! A bearer token kept in a file that rotates: read lazily, cached for 50 s, last good value
//! kept when a re-read fails.
//!
//! Mirrors client-go `transport/token_source.go` (`NewCachedFileTokenSource`:
//! `cachingTokenSource` over `fileTokenSource`) as `NewBearerAuthWithRefreshRoundTripper` uses
//! it: every token read gets a one-minute lifetime and is refreshed once within the ten-second
//! leeway, so the file is read again on the first request made 50 s or more after the previous
//! read. The token is the file's content with surrounding white space trimmed; an empty file
//! is an error. When a re-read fails, the last token read is used (and the read is tried again
//! on the next call); when there has never been a good read, the fallback token is used, which
//! is the inline `token` of a kubeconfig that sets both `token` and `tokenFile`, or the content
//! read when the configuration was built. Projected service-account tokens are rotated by the
//! kubelet well before they expire, which is why re-reading once a minute is enough.
//!
//! Difference from client-go: reads are synchronous `std::fs` reads of a small file, at most
//! once every 50 s per configuration, which is cheaper than handing them to a blocking pool.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use super::clock::Clock;
use super::error::ConfigError;
use super::secret::Secret;

/// How long a token read from the file is used before the file is read again (client-go's
/// one-minute expiry minus its ten-second leeway).
pub const TOKEN_FILE_REFRESH: Duration = Duration::from_secs(50);

/// A bearer token file, shared by clones (see the module documentation).
#[derive(Clone, Debug)]
pub struct TokenFile {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    path: PathBuf,
    fallback: Option<Secret<String>>,
    clock: Clock,
    cache: Mutex<Option<Cached>>,
}

#[derive(Debug)]
struct Cached {
    token: Secret<String>,
    read_at: SystemTime,
}

impl TokenFile {
    /// A token file, with an optional token to use while the file has never been read
    /// successfully.
    pub fn new(path: impl Into<PathBuf>, fallback: Option<Secret<String>>) -> Self {
        TokenFile::with_clock(path, fallback, Clock::system())
    }

    /// Like [`TokenFile::new`], with the given clock (for tests).
    pub fn with_clock(
        path: impl Into<PathBuf>,
        fallback: Option<Secret<String>>,
        clock: Clock,
    ) -> Self {
        TokenFile {
            inner: Arc::new(Inner {
                path: path.into(),
                fallback: fallback.filter(|t| !t.expose().is_empty()),
                clock,
                cache: Mutex::new(None),
            }),
        }
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.inner.path
    }

    /// The token to send now, re-reading the file if the cached token is 50 s old.
    ///
    /// Fails only when the file cannot be read (or is empty) and no token was ever read from
    /// it and no fallback was given.
    pub fn token(&self) -> Result<Secret<String>, ConfigError> {
        let inner = &*self.inner;
        let now = inner.clock.now();
        let mut cache = inner.cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(cached) = cache.as_ref() {
            let age = now.duration_since(cached.read_at).unwrap_or(Duration::ZERO);
            if age < TOKEN_FILE_REFRESH {
                return Ok(cached.token.clone());
            }
        }
        match read_token(&inner.path, "tokenFile") {
            Ok(token) => {
                *cache = Some(Cached {
                    token: token.clone(),
                    read_at: now,
                });
                Ok(token)
            }
            Err(err) => {
                if let Some(cached) = cache.as_ref() {
                    tracing::warn!(error = %err, "unable to rotate the bearer token, keeping the last one read");
                    Ok(cached.token.clone())
                } else if let Some(fallback) = &inner.fallback {
                    tracing::debug!(error = %err, "bearer token file unreadable, using the configured token");
                    Ok(fallback.clone())
                } else {
                    Err(err)
                }
            }
        }
    }
}

/// Reads a token file: content trimmed, empty is an error.
pub(crate) fn read_token(path: &Path, what: &'static str) -> Result<Secret<String>, ConfigError> {
    let content = std::fs::read_to_string(path).map_err(|source| ConfigError::ReadFile {
        what,
        path: path.to_path_buf(),
        source,
    })?;
    let token = content.trim();
    if token.is_empty() {
        return Err(ConfigError::EmptyFile {
            what,
            path: path.to_path_buf(),
        });
    }
    Ok(Secret::new(token.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::FakeClock;

    #[test]
    fn token_is_reread_after_50_seconds_not_before() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "first\n").unwrap();
        let clock = FakeClock::new();
        let file = TokenFile::with_clock(&path, None, clock.clock());

        assert_eq!(file.token().unwrap().expose(), "first");
        std::fs::write(&path, "second").unwrap();
        clock.advance(Duration::from_secs(49));
        assert_eq!(file.token().unwrap().expose(), "first", "cached for 50 s");
        clock.advance(Duration::from_secs(1));
        assert_eq!(file.token().unwrap().expose(), "second", "re-read at 50 s");
    }

    #[test]
    fn last_good_token_survives_a_failed_reread() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, "good").unwrap();
        let clock = FakeClock::new();
        let file = TokenFile::with_clock(&path, None, clock.clock());
        assert_eq!(file.token().unwrap().expose(), "good");

        std::fs::remove_file(&path).unwrap();
        clock.advance(TOKEN_FILE_REFRESH);
        assert_eq!(file.token().unwrap().expose(), "good");
        std::fs::write(&path, "   \n").unwrap();
        assert_eq!(
            file.token().unwrap().expose(),
            "good",
            "an empty file is a failed read"
        );
        std::fs::write(&path, "rotated").unwrap();
        assert_eq!(
            file.token().unwrap().expose(),
            "rotated",
            "retried on the next call"
        );
    }

    #[test]
    fn fallback_until_the_first_good_read_and_error_without_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        let with_fallback = TokenFile::new(&path, Some(Secret::from("inline")));
        assert_eq!(with_fallback.token().unwrap().expose(), "inline");
        std::fs::write(&path, "from-file").unwrap();
        assert_eq!(
            with_fallback.token().unwrap().expose(),
            "from-file",
            "the file wins once readable"
        );

        let missing = dir.path().join("missing");
        let err = TokenFile::new(&missing, None).token().unwrap_err();
        assert!(
            matches!(
                err,
                ConfigError::ReadFile {
                    what: "tokenFile",
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("missing"), "{err}");
    }
}
