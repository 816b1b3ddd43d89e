//! Configuration from inside a pod: the API server from `KUBERNETES_SERVICE_HOST`/`PORT`, the
//! pod's service-account token, CA and namespace.
//!
//! Mirrors client-go `rest.InClusterConfig` and clientcmd's `inClusterClientConfig.Namespace`:
//! * Both `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT` must be set
//!   ([`ConfigError::NotInCluster`] otherwise); the server is `https://<host>:<port>`, an IPv6
//!   host in brackets.
//! * The token at `/var/run/secrets/kubernetes.io/serviceaccount/token` must be readable; the
//!   configuration keeps the file and re-reads it periodically ([`Auth::TokenFile`]), since
//!   projected tokens rotate (about hourly by default).
//! * `ca.crt` is used only if it holds a certificate; otherwise a warning is logged and the
//!   system roots are used, as client-go does.
//! * The namespace is `POD_NAMESPACE`, else the `namespace` file, else `default`.
//!
//! Every input is an [`InClusterEnv`] field, so tests need neither environment variables nor
//! `/var/run`.
//!
//! Difference from client-go: an empty token file is an error here (client-go would send
//! `Authorization: Bearer ` and get 401s).

use std::env;
use std::path::{Path, PathBuf};

use super::auth::Auth;
use super::error::ConfigError;
use super::server_url::parse_server;
use super::tls::check_certificates;
use super::token_file::{TokenFile, read_token};
use super::{Config, DEFAULT_NAMESPACE};

/// Where a pod's service-account credentials are mounted.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The inputs of in-cluster configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct InClusterEnv {
    /// `KUBERNETES_SERVICE_HOST`.
    pub service_host: Option<String>,
    /// `KUBERNETES_SERVICE_PORT`.
    pub service_port: Option<String>,
    /// `POD_NAMESPACE` (set through the downward API).
    pub pod_namespace: Option<String>,
    /// The service-account token file.
    pub token_path: PathBuf,
    /// The service-account CA file.
    pub ca_path: PathBuf,
    /// The service-account namespace file.
    pub namespace_path: PathBuf,
}

impl InClusterEnv {
    /// This process's environment variables and the standard service-account paths.
    pub fn from_process() -> Self {
        let var = |name| env::var(name).ok().filter(|v: &String| !v.is_empty());
        InClusterEnv {
            service_host: var("KUBERNETES_SERVICE_HOST"),
            service_port: var("KUBERNETES_SERVICE_PORT"),
            pod_namespace: var("POD_NAMESPACE"),
            ..InClusterEnv::with_service_account_dir(SERVICE_ACCOUNT_DIR)
        }
    }

    /// No environment variables, and the service-account files in `dir`.
    pub fn with_service_account_dir(dir: impl AsRef<Path>) -> Self {
        let dir = dir.as_ref();
        InClusterEnv {
            service_host: None,
            service_port: None,
            pod_namespace: None,
            token_path: dir.join("token"),
            ca_path: dir.join("ca.crt"),
            namespace_path: dir.join("namespace"),
        }
    }
}

impl Config {
    /// The configuration of the pod this process runs in (client-go's `InClusterConfig`).
    pub fn in_cluster() -> Result<Config, ConfigError> {
        Config::in_cluster_with(&InClusterEnv::from_process())
    }

    /// In-cluster configuration from the given inputs.
    pub fn in_cluster_with(env: &InClusterEnv) -> Result<Config, ConfigError> {
        let nonempty = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());
        let (Some(host), Some(port)) = (nonempty(&env.service_host), nonempty(&env.service_port))
        else {
            return Err(ConfigError::NotInCluster);
        };
        let host = if host.contains(':') && !host.starts_with('[') {
            format!("[{host}]")
        } else {
            host
        };
        let server = format!("https://{host}:{port}");
        let cluster_url = parse_server(&server).map_err(|reason| ConfigError::InvalidUrl {
            origin: "in-cluster environment (KUBERNETES_SERVICE_HOST, KUBERNETES_SERVICE_PORT)"
                .to_owned(),
            field: "server",
            url: server.clone(),
            reason,
        })?;

        let token = read_token(&env.token_path, "service-account token")?;
        let mut config = Config::new(cluster_url);
        config.auth = Auth::TokenFile(TokenFile::new(&env.token_path, Some(token)));
        config.tls.ca_pem = read_ca(&env.ca_path);
        config.default_namespace = namespace(env);
        tracing::debug!(server = %server, namespace = %config.default_namespace, "in-cluster configuration");
        Ok(config)
    }
}

fn read_ca(path: &Path) -> Option<Vec<u8>> {
    match std::fs::read(path) {
        Ok(pem) => match check_certificates(&pem) {
            Ok(_) => Some(pem),
            Err(reason) => {
                tracing::warn!(path = %path.display(), %reason, "in-cluster CA is not usable, using the system roots");
                None
            }
        },
        Err(error) => {
            tracing::warn!(path = %path.display(), %error, "in-cluster CA is not readable, using the system roots");
            None
        }
    }
}

fn namespace(env: &InClusterEnv) -> String {
    if let Some(ns) = env.pod_namespace.as_deref().filter(|ns| !ns.is_empty()) {
        return ns.to_owned();
    }
    std::fs::read_to_string(&env.namespace_path)
        .ok()
        .map(|content| content.trim().to_owned())
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::CA_PEM;

    fn service_account(token: &str, ca: Option<&str>, ns: Option<&str>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("token"), token).unwrap();
        if let Some(ca) = ca {
            std::fs::write(dir.path().join("ca.crt"), ca).unwrap();
        }
        if let Some(ns) = ns {
            std::fs::write(dir.path().join("namespace"), ns).unwrap();
        }
        dir
    }

    fn env(dir: &Path, host: &str, port: &str) -> InClusterEnv {
        InClusterEnv {
            service_host: Some(host.to_owned()),
            service_port: Some(port.to_owned()),
            ..InClusterEnv::with_service_account_dir(dir)
        }
    }

    fn bearer(config: &Config) -> String {
        match &config.auth {
            Auth::TokenFile(file) => file.token().unwrap().expose().clone(),
            other => panic!("expected a token file, got {other:?}"),
        }
    }

    #[test]
    fn in_cluster_config_reads_the_service_account() {
        let dir = service_account("sa-token\n", Some(CA_PEM), Some("team-a\n"));
        let config = Config::in_cluster_with(&env(dir.path(), "10.96.0.1", "443")).unwrap();
        assert_eq!(config.cluster_url.to_string(), "https://10.96.0.1:443/");
        assert_eq!(config.default_namespace, "team-a");
        assert_eq!(config.tls.ca_pem.as_deref(), Some(CA_PEM.as_bytes()));
        assert_eq!(bearer(&config), "sa-token");
        assert!(!format!("{config:?}").contains("sa-token"));
    }

    #[test]
    fn ipv6_host_is_bracketed() {
        let dir = service_account("t", Some(CA_PEM), None);
        let config = Config::in_cluster_with(&env(dir.path(), "fd00:10:96::1", "443")).unwrap();
        assert_eq!(
            config.cluster_url.to_string(),
            "https://[fd00:10:96::1]:443/"
        );
    }

    #[test]
    fn rotated_token_is_picked_up_from_the_file() {
        let dir = service_account("old", None, None);
        let config = Config::in_cluster_with(&env(dir.path(), "10.96.0.1", "443")).unwrap();
        let Auth::TokenFile(file) = &config.auth else {
            panic!("expected a token file");
        };
        assert_eq!(file.path(), dir.path().join("token"));
        // The first request reads the file (the value read at construction is the fallback).
        std::fs::write(dir.path().join("token"), "rotated").unwrap();
        assert_eq!(file.token().unwrap().expose(), "rotated");
    }

    #[test]
    fn namespace_precedence_pod_namespace_then_file_then_default() {
        let dir = service_account("t", None, Some("from-file"));
        let mut e = env(dir.path(), "h", "1");
        e.pod_namespace = Some("from-env".to_owned());
        assert_eq!(
            Config::in_cluster_with(&e).unwrap().default_namespace,
            "from-env"
        );
        e.pod_namespace = None;
        assert_eq!(
            Config::in_cluster_with(&e).unwrap().default_namespace,
            "from-file"
        );
        std::fs::remove_file(dir.path().join("namespace")).unwrap();
        assert_eq!(
            Config::in_cluster_with(&e).unwrap().default_namespace,
            "default"
        );
    }

    #[test]
    fn unusable_ca_is_skipped_not_fatal() {
        let dir = service_account("t", Some("not a certificate"), None);
        let config = Config::in_cluster_with(&env(dir.path(), "h", "1")).unwrap();
        assert!(config.tls.ca_pem.is_none());
        std::fs::remove_file(dir.path().join("ca.crt")).unwrap();
        let config = Config::in_cluster_with(&env(dir.path(), "h", "1")).unwrap();
        assert!(config.tls.ca_pem.is_none());
    }

    #[test]
    fn not_in_cluster_without_host_and_port() {
        let dir = service_account("t", None, None);
        let mut e = env(dir.path(), "h", "1");
        e.service_port = None;
        assert!(matches!(
            Config::in_cluster_with(&e),
            Err(ConfigError::NotInCluster)
        ));
        e.service_port = Some("1".to_owned());
        e.service_host = Some(String::new());
        let err = Config::in_cluster_with(&e).unwrap_err();
        assert!(err.to_string().contains("KUBERNETES_SERVICE_HOST"), "{err}");
    }

    #[test]
    fn unreadable_or_empty_token_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let err = Config::in_cluster_with(&env(dir.path(), "h", "1")).unwrap_err();
        assert!(matches!(
            err,
            ConfigError::ReadFile {
                what: "service-account token",
                ..
            }
        ));
        assert!(
            err.to_string()
                .contains(&dir.path().join("token").display().to_string())
        );
        std::fs::write(dir.path().join("token"), " \n").unwrap();
        let err = Config::in_cluster_with(&env(dir.path(), "h", "1")).unwrap_err();
        assert!(matches!(err, ConfigError::EmptyFile { .. }), "{err}");
    }

    #[test]
    fn bad_port_is_a_url_error() {
        let dir = service_account("t", None, None);
        let err = Config::in_cluster_with(&env(dir.path(), "h", "not-a-port")).unwrap_err();
        assert!(matches!(err, ConfigError::InvalidUrl { .. }), "{err}");
    }
}
