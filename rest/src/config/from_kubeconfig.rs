//! From a (merged) kubeconfig to a [`Config`]: choose the context, cluster and user, validate
//! them, read the files they name, and pick the credential.
//!
//! Mirrors client-go `tools/clientcmd/client_config.go` (`DirectClientConfig.ClientConfig`,
//! `getContext`/`getCluster`/`getAuthInfo`, `Namespace`) and the checks of `validation.go`
//! (`validateClusterInfo`, `validateAuthInfo`) for the chosen entries:
//! * Context: the explicit one, else `current-context`; it must exist. Cluster and user: the
//!   explicit ones, else the context's. Namespace: the explicit one, else the context's, else
//!   `default`.
//! * Credentials, CA, `insecure-skip-tls-verify` and `tls-server-name` are used only for an
//!   `https` server, as client-go applies them only when `IsConfigTransportTLS`.
//! * `token` wins over `tokenFile` as the first value but the file is kept and re-read
//!   (`TestPrecedenceTokenFile`); `tokenFile` alone is read now. `token` (or `tokenFile`) and
//!   `username`/`password` together is an error. An exec plugin is not used when a token,
//!   basic auth or a client certificate is configured (its `UpdateTransportConfig` steps aside).
//! * `*-data` and the matching file both set is an error (client-go: "… are both specified");
//!   so is a client certificate without a key, an exec stanza without command or apiVersion
//!   (or, for v1, without interactiveMode), and impersonated groups/uid/extra without `as`.
//!
//! Differences from client-go, and why:
//! * A context naming a cluster or user that does not exist is an error. client-go silently
//!   uses an empty user (anonymous requests) and reports an empty cluster as "no configuration
//!   has been provided"; a typo should not change who you are.
//! * `certificate-authority` together with `insecure-skip-tls-verify` is rejected here; client-go
//!   fails at transport construction with the same complaint.
//! * `auth-provider` is rejected: the in-tree providers were removed from client-go in 1.26.
//! * No interactive prompting for missing credentials, no `ClusterDefaults`/server override.

use std::path::{Path, PathBuf};

use super::auth::{Auth, Impersonation};
use super::error::{ConfigError, Origin, entry};
use super::exec::{EXEC_CLUSTER_EXTENSION, ExecAuthenticator, ExecClusterInfo, check_exec_config};
use super::kubeconfig::{AuthInfo, Cluster};
use super::loader::{LoadedKubeconfig, LoadingRules};
use super::secret::Secret;
use super::server_url::{parse_proxy, parse_server, redact_userinfo};
use super::tls::{TlsConfig, check_certificates, check_private_key};
use super::token_file::TokenFile;
use super::{Config, DEFAULT_NAMESPACE};

/// How to load a kubeconfig and what to choose in it (client-go's loading rules plus
/// `ConfigOverrides`: kubectl's `--kubeconfig`, `--context`, `--cluster`, `--user`, `-n`).
#[derive(Clone, Debug, Default)]
pub struct KubeconfigOptions {
    /// Which files to read; `None` means [`LoadingRules::from_env`] (`KUBECONFIG` or
    /// `~/.kube/config`).
    pub loading_rules: Option<LoadingRules>,
    /// Use this context instead of `current-context`.
    pub context: Option<String>,
    /// Use this cluster instead of the context's.
    pub cluster: Option<String>,
    /// Use this user instead of the context's.
    pub user: Option<String>,
    /// Use this namespace instead of the context's.
    pub namespace: Option<String>,
}

impl Config {
    /// Loads the kubeconfig as kubectl does and builds the configuration of the chosen context.
    pub fn from_kubeconfig(options: &KubeconfigOptions) -> Result<Config, ConfigError> {
        let rules = match &options.loading_rules {
            Some(rules) => rules.clone(),
            None => LoadingRules::from_env(),
        };
        let loaded = rules.load()?;
        Config::from_loaded_kubeconfig(&loaded, options)
    }

    /// Reads exactly one kubeconfig file (which must exist) and uses its `current-context`.
    pub fn from_kubeconfig_file(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        Config::from_kubeconfig(&KubeconfigOptions {
            loading_rules: Some(LoadingRules::explicit(path.as_ref())),
            ..KubeconfigOptions::default()
        })
    }

    /// Builds the configuration from an already loaded kubeconfig (its `loading_rules` option
    /// is ignored). For a kubeconfig held in memory, wrap a
    /// [`Kubeconfig::parse`](super::Kubeconfig::parse) result in a [`LoadedKubeconfig`].
    pub fn from_loaded_kubeconfig(
        loaded: &LoadedKubeconfig,
        options: &KubeconfigOptions,
    ) -> Result<Config, ConfigError> {
        let kc = &loaded.kubeconfig;
        let files = || loaded.files.clone();
        let chosen = |v: &Option<String>| v.clone().filter(|s| !s.is_empty());

        let context_name = chosen(&options.context).or_else(|| kc.current_context.clone());
        let context = match &context_name {
            Some(name) => {
                Some(
                    kc.contexts
                        .get(name)
                        .ok_or_else(|| ConfigError::ContextNotFound {
                            name: name.clone(),
                            files: files(),
                        })?,
                )
            }
            None => None,
        };
        let (cluster_name, named_by) = match (chosen(&options.cluster), context) {
            (Some(name), _) => (name, None),
            (None, Some(ctx)) => match ctx.cluster.clone() {
                Some(name) => (name, context_name.clone()),
                None => {
                    return Err(ConfigError::ContextWithoutCluster {
                        file: ctx.origin.clone(),
                        context: context_name.clone().unwrap_or_default(),
                    });
                }
            },
            (None, None) => {
                return Err(ConfigError::EmptyConfig {
                    files: files(),
                    missing: loaded.missing.clone(),
                });
            }
        };
        let cluster =
            kc.clusters
                .get(&cluster_name)
                .ok_or_else(|| ConfigError::ClusterNotFound {
                    name: cluster_name.clone(),
                    context: named_by,
                    files: files(),
                })?;
        let user_name = match chosen(&options.user) {
            Some(name) => Some((name, None)),
            None => context
                .and_then(|c| c.user.clone())
                .map(|name| (name, context_name.clone())),
        };
        let (user_name, user) = match user_name {
            Some((name, named_by)) => {
                let user = kc
                    .users
                    .get(&name)
                    .ok_or_else(|| ConfigError::UserNotFound {
                        name: name.clone(),
                        context: named_by,
                        files: files(),
                    })?;
                (name, user.clone())
            }
            None => (String::new(), AuthInfo::default()),
        };
        let namespace = chosen(&options.namespace)
            .or_else(|| context.and_then(|c| c.namespace.clone()))
            .unwrap_or_else(|| DEFAULT_NAMESPACE.to_owned());

        build(&cluster_name, cluster, &user_name, &user, namespace)
    }
}

fn build(
    cluster_name: &str,
    cluster: &Cluster,
    user_name: &str,
    user: &AuthInfo,
    namespace: String,
) -> Result<Config, ConfigError> {
    let server = cluster
        .server
        .as_deref()
        .ok_or_else(|| ConfigError::NoServer {
            file: cluster.origin.clone(),
            cluster: cluster_name.to_owned(),
        })?;
    let origin = || format!("cluster {cluster_name:?} in {}", Origin(&cluster.origin));
    let cluster_url = parse_server(server).map_err(|reason| ConfigError::InvalidUrl {
        origin: origin(),
        field: "server",
        url: redact_userinfo(server),
        reason,
    })?;
    let proxy_url = match cluster.proxy_url.as_deref() {
        Some(proxy) => Some(
            parse_proxy(proxy).map_err(|reason| ConfigError::InvalidUrl {
                origin: origin(),
                field: "proxy-url",
                url: redact_userinfo(proxy),
                reason,
            })?,
        ),
        None => None,
    };
    validate_cluster(cluster_name, cluster)?;
    validate_user(user_name, user)?;

    let mut config = Config::new(cluster_url);
    config.default_namespace = namespace;
    config.proxy_url = proxy_url;
    config.disable_compression = cluster.disable_compression;
    config.impersonate = user.impersonate.clone().map(|name| Impersonation {
        user: name,
        uid: user.impersonate_uid.clone(),
        groups: user.impersonate_groups.clone(),
        extra: user.impersonate_user_extra.clone(),
    });
    if !config.is_tls() {
        if has_tls_or_credentials(cluster, user) {
            tracing::warn!(
                server = %config.cluster_url,
                cluster = cluster_name,
                user = user_name,
                "the server is plain http: the kubeconfig's credentials and TLS settings are not used"
            );
        }
        return Ok(config);
    }
    config.tls = tls(cluster_name, cluster, user_name, user)?;
    config.auth = auth(user_name, user, server, cluster, &config.tls)?;
    Ok(config)
}

fn invalid(
    file: &Option<PathBuf>,
    entry: String,
    field: &'static str,
    reason: &str,
) -> ConfigError {
    ConfigError::Invalid {
        file: file.clone(),
        entry,
        field,
        reason: reason.to_owned(),
    }
}

fn validate_cluster(name: &str, cluster: &Cluster) -> Result<(), ConfigError> {
    let at = || entry("cluster", name);
    let has_ca =
        cluster.certificate_authority.is_some() || cluster.certificate_authority_data.is_some();
    if cluster.certificate_authority.is_some() && cluster.certificate_authority_data.is_some() {
        return Err(invalid(
            &cluster.origin,
            at(),
            "certificate-authority-data",
            "certificate-authority-data and certificate-authority are both specified; keep one",
        ));
    }
    if cluster.insecure_skip_tls_verify && has_ca {
        return Err(invalid(
            &cluster.origin,
            at(),
            "insecure-skip-tls-verify",
            "cannot be combined with a certificate authority: remove one or the other",
        ));
    }
    Ok(())
}

fn validate_user(name: &str, user: &AuthInfo) -> Result<(), ConfigError> {
    let at = || entry("user", name);
    let file = &user.origin;
    if let Some(provider) = &user.auth_provider {
        if user.exec.is_some() {
            return Err(invalid(
                file,
                at(),
                "auth-provider",
                "cannot be combined with exec",
            ));
        }
        return Err(ConfigError::AuthProviderUnsupported {
            file: file.clone(),
            user: name.to_owned(),
            provider: provider.name.clone(),
        });
    }
    let token = user.token.is_some() || user.token_file.is_some();
    let basic = user.username.is_some() || user.password.is_some();
    if token && basic {
        return Err(invalid(
            file,
            at(),
            "token",
            "more than one authentication method found (token, basicAuth); only one is allowed",
        ));
    }
    if user.client_certificate.is_some() || user.client_certificate_data.is_some() {
        if user.client_certificate.is_some() && user.client_certificate_data.is_some() {
            return Err(invalid(
                file,
                at(),
                "client-certificate-data",
                "client-certificate-data and client-certificate are both specified; keep one",
            ));
        }
        if user.client_key.is_some() && user.client_key_data.is_some() {
            return Err(invalid(
                file,
                at(),
                "client-key-data",
                "client-key-data and client-key are both specified; keep one",
            ));
        }
        if user.client_key.is_none() && user.client_key_data.is_none() {
            return Err(invalid(
                file,
                at(),
                "client-key",
                "client-key-data or client-key must be specified to use client-certificate",
            ));
        }
    }
    if let Some(exec) = &user.exec {
        check_exec_config(exec).map_err(|(field, reason)| invalid(file, at(), field, &reason))?;
    }
    let extras = user.impersonate_uid.is_some()
        || !user.impersonate_groups.is_empty()
        || !user.impersonate_user_extra.is_empty();
    if extras && user.impersonate.is_none() {
        return Err(invalid(
            file,
            at(),
            "as",
            "as-uid, as-groups or as-user-extra requires a user to impersonate (as)",
        ));
    }
    Ok(())
}

fn has_tls_or_credentials(cluster: &Cluster, user: &AuthInfo) -> bool {
    cluster.certificate_authority.is_some()
        || cluster.certificate_authority_data.is_some()
        || cluster.insecure_skip_tls_verify
        || cluster.tls_server_name.is_some()
        || user.token.is_some()
        || user.token_file.is_some()
        || user.username.is_some()
        || user.client_certificate.is_some()
        || user.client_certificate_data.is_some()
        || user.exec.is_some()
}

/// Data, or the content of the file, checked as PEM.
fn pem(
    data: Option<&[u8]>,
    path: Option<&PathBuf>,
    file: &Option<PathBuf>,
    at: &str,
    file_field: &'static str,
    data_field: &'static str,
    check: fn(&[u8]) -> Result<(), String>,
) -> Result<Option<Vec<u8>>, ConfigError> {
    let (bytes, field, path) = match (data, path) {
        (Some(data), _) => (data.to_vec(), data_field, None),
        (None, Some(path)) => {
            let bytes = std::fs::read(path).map_err(|source| ConfigError::ReadReferencedFile {
                file: file.clone(),
                entry: at.to_owned(),
                field: file_field,
                path: path.clone(),
                source,
            })?;
            (bytes, file_field, Some(path.clone()))
        }
        (None, None) => return Ok(None),
    };
    check(&bytes).map_err(|reason| ConfigError::Pem {
        file: file.clone(),
        entry: at.to_owned(),
        field,
        path,
        reason,
    })?;
    Ok(Some(bytes))
}

fn tls(
    cluster_name: &str,
    cluster: &Cluster,
    user_name: &str,
    user: &AuthInfo,
) -> Result<TlsConfig, ConfigError> {
    let certs = |pem: &[u8]| check_certificates(pem).map(|_| ());
    let cluster_at = entry("cluster", cluster_name);
    let ca_pem = pem(
        cluster.certificate_authority_data.as_deref(),
        cluster.certificate_authority.as_ref(),
        &cluster.origin,
        &cluster_at,
        "certificate-authority",
        "certificate-authority-data",
        certs,
    )?;
    let mut tls = TlsConfig {
        ca_pem,
        insecure_skip_tls_verify: cluster.insecure_skip_tls_verify,
        server_name: cluster.tls_server_name.clone(),
        ..TlsConfig::default()
    };
    if user.client_certificate.is_some() || user.client_certificate_data.is_some() {
        let user_at = entry("user", user_name);
        tls.client_cert_pem = pem(
            user.client_certificate_data.as_deref(),
            user.client_certificate.as_ref(),
            &user.origin,
            &user_at,
            "client-certificate",
            "client-certificate-data",
            certs,
        )?;
        let key_data = user.client_key_data.as_ref().map(|k| k.expose().as_slice());
        tls.client_key_pem = pem(
            key_data,
            user.client_key.as_ref(),
            &user.origin,
            &user_at,
            "client-key",
            "client-key-data",
            check_private_key,
        )?
        .map(Secret::new);
    }
    Ok(tls)
}

fn auth(
    user_name: &str,
    user: &AuthInfo,
    server: &str,
    cluster: &Cluster,
    tls: &TlsConfig,
) -> Result<Auth, ConfigError> {
    let at = || entry("user", user_name);
    if let Some(token) = &user.token {
        return Ok(match &user.token_file {
            Some(path) => Auth::TokenFile(TokenFile::new(path, Some(token.clone()))),
            None => Auth::Bearer(token.clone()),
        });
    }
    if let Some(path) = &user.token_file {
        let content =
            std::fs::read_to_string(path).map_err(|source| ConfigError::ReadReferencedFile {
                file: user.origin.clone(),
                entry: at(),
                field: "tokenFile",
                path: path.clone(),
                source,
            })?;
        let token = content.trim();
        if token.is_empty() {
            return Err(invalid(
                &user.origin,
                at(),
                "tokenFile",
                &format!("{} is empty", path.display()),
            ));
        }
        return Ok(Auth::TokenFile(TokenFile::new(
            path,
            Some(Secret::new(token.to_owned())),
        )));
    }
    if user.username.is_some() || user.password.is_some() {
        return Ok(Auth::Basic {
            username: user.username.clone().unwrap_or_default(),
            password: user.password.clone().unwrap_or_default(),
        });
    }
    if let Some(exec) = &user.exec {
        if tls.has_client_cert() {
            tracing::debug!(
                user = user_name,
                "client certificate configured: exec plugin not used"
            );
            return Ok(Auth::None);
        }
        let info = ExecClusterInfo {
            server: server.to_owned(),
            tls_server_name: tls.server_name.clone(),
            insecure_skip_tls_verify: tls.insecure_skip_tls_verify,
            certificate_authority_data: tls.ca_pem.clone(),
            proxy_url: cluster.proxy_url.clone(),
            disable_compression: cluster.disable_compression,
            config: cluster.extensions.get(EXEC_CLUSTER_EXTENSION).cloned(),
        };
        let authenticator =
            ExecAuthenticator::new(exec.clone(), Some(info)).map_err(|e| match e {
                ConfigError::ExecConfig { reason, .. } => {
                    invalid(&user.origin, at(), "exec", &reason)
                }
                other => other,
            })?;
        return Ok(Auth::Exec(authenticator));
    }
    Ok(Auth::None)
}

#[cfg(test)]
#[path = "from_kubeconfig_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "from_kubeconfig_auth_tests.rs"]
mod auth_tests;
