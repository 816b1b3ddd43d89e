//! The kubeconfig file model: clusters, users, contexts and `current-context`, read from YAML
//! or JSON.
//!
//! Mirrors client-go `tools/clientcmd/api/v1/types.go` (the file format) converted to the
//! map-keyed form of `tools/clientcmd/api/types.go` (what the loader merges), as
//! `clientcmd.Load` does: named lists become maps, `*-data` fields are base64-decoded, and
//! duplicate names inside one file are an error ("duplicate name … in list", client-go's
//! `TestDuplicate*Name`). An empty file is an empty config. `preferences` is ignored;
//! `extensions` are kept as JSON values (a cluster's `client.authentication.k8s.io/exec`
//! extension is handed to exec plugins).
//!
//! Parsing uses **serde_norway**, the maintained fork of the archived `serde_yaml`: it keeps the
//! 0.9 API, is dual-licensed MIT/Apache-2.0 like this project, is maintained together with its
//! own libyaml port (`unsafe-libyaml-norway`; `serde_yaml_ng` still depends on the archived
//! `unsafe-libyaml`), and is the fork most projects moved to. A file whose first non-blank
//! character is `{` is parsed as JSON with serde_json (YAML 1.2 is a superset of JSON, but
//! libyaml rejects some JSON, e.g. tab indentation).
//!
//! Differences from client-go, and why:
//! * String fields accept unquoted numbers and booleans as their text, as sigs.k8s.io/yaml
//!   does, but values are never echoed in errors (see [`Secret`]).
//! * Credentials (`token`, `password`, `client-key-data`, exec `env` values, auth-provider
//!   config values) are [`Secret`]s, so `Debug` output of a [`Kubeconfig`] shows none of them.
//! * `interactiveMode` and the exec `apiVersion` are kept as written and checked when the user
//!   is chosen (`client_config.go`), so a typo in a user nobody uses breaks nothing.
//! * `apiVersion`/`kind`, when present, must be `v1`/`Config`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use serde::{Deserialize, Deserializer};

use super::error::{ConfigError, entry, file_of};
use super::secret::{LenientString, Secret};

/// A kubeconfig: what one file holds, or several merged by the
/// [`LoadingRules`](super::LoadingRules).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Kubeconfig {
    /// Clusters by name.
    pub clusters: BTreeMap<String, Cluster>,
    /// Users (client-go's `AuthInfo`s) by name.
    pub users: BTreeMap<String, AuthInfo>,
    /// Contexts by name.
    pub contexts: BTreeMap<String, Context>,
    /// The context used when none is chosen.
    pub current_context: Option<String>,
    /// Top-level extensions by name.
    pub extensions: BTreeMap<String, serde_json::Value>,
}

/// How to reach one API server.
///
/// Its `Debug` replaces the user-info of `server` and `proxy-url`
/// (`http://user:password@proxy`) with `REDACTED`, and shows the CA data by its length.
#[derive(Clone, Default, PartialEq)]
pub struct Cluster {
    /// `server`: the API server URL (`https://host:port`, optionally with a path prefix).
    pub server: Option<String>,
    /// `tls-server-name`: the name to verify the server certificate against (and send as SNI).
    pub tls_server_name: Option<String>,
    /// `insecure-skip-tls-verify`: do not verify the server certificate.
    pub insecure_skip_tls_verify: bool,
    /// `certificate-authority`: a PEM file of CA certificates.
    pub certificate_authority: Option<PathBuf>,
    /// `certificate-authority-data`: PEM CA certificates (decoded from base64).
    pub certificate_authority_data: Option<Vec<u8>>,
    /// `proxy-url`: an `http`, `https` or `socks5` proxy for all requests to this cluster.
    pub proxy_url: Option<String>,
    /// `disable-compression`: do not ask the server for compressed responses.
    pub disable_compression: bool,
    /// `extensions` by name.
    pub extensions: BTreeMap<String, serde_json::Value>,
    /// The file this entry was read from (client-go's `LocationOfOrigin`).
    pub origin: Option<PathBuf>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let redact = |url: &Option<String>| url.as_deref().map(super::server_url::redact_userinfo);
        f.debug_struct("Cluster")
            .field("server", &redact(&self.server))
            .field("tls_server_name", &self.tls_server_name)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("certificate_authority", &self.certificate_authority)
            .field(
                "certificate_authority_data",
                &self
                    .certificate_authority_data
                    .as_ref()
                    .map(|d| format!("{} bytes", d.len())),
            )
            .field("proxy_url", &redact(&self.proxy_url))
            .field("disable_compression", &self.disable_compression)
            .field("extensions", &self.extensions)
            .field("origin", &self.origin)
            .finish()
    }
}

/// How to authenticate (kubeconfig `users[].user`, client-go's `AuthInfo`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AuthInfo {
    /// `client-certificate`: a PEM client certificate file.
    pub client_certificate: Option<PathBuf>,
    /// `client-certificate-data`: a PEM client certificate (decoded from base64).
    pub client_certificate_data: Option<Vec<u8>>,
    /// `client-key`: a PEM private key file.
    pub client_key: Option<PathBuf>,
    /// `client-key-data`: a PEM private key (decoded from base64).
    pub client_key_data: Option<Secret<Vec<u8>>>,
    /// `token`: a bearer token.
    pub token: Option<Secret<String>>,
    /// `tokenFile`: a file holding a bearer token, re-read as it rotates.
    pub token_file: Option<PathBuf>,
    /// `as`: the user to impersonate.
    pub impersonate: Option<String>,
    /// `as-uid`: the UID to impersonate.
    pub impersonate_uid: Option<String>,
    /// `as-groups`: the groups to impersonate.
    pub impersonate_groups: Vec<String>,
    /// `as-user-extra`: extra fields to impersonate.
    pub impersonate_user_extra: BTreeMap<String, Vec<String>>,
    /// `username` for basic authentication.
    pub username: Option<String>,
    /// `password` for basic authentication.
    pub password: Option<Secret<String>>,
    /// `auth-provider`: recognised so that it can be rejected with a clear error.
    pub auth_provider: Option<AuthProvider>,
    /// `exec`: a credential plugin.
    pub exec: Option<ExecConfig>,
    /// `extensions` by name.
    pub extensions: BTreeMap<String, serde_json::Value>,
    /// The file this entry was read from.
    pub origin: Option<PathBuf>,
}

/// A legacy `auth-provider` stanza (gcp, azure, oidc): not supported, kept to name it in the
/// error.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, expecting = "an auth-provider (a mapping)")]
pub struct AuthProvider {
    /// The provider's name.
    #[serde(deserialize_with = "string")]
    pub name: String,
    /// Its configuration (often holding tokens, hence secret).
    #[serde(deserialize_with = "null_default")]
    pub config: BTreeMap<String, Secret<String>>,
}

/// A credential plugin (kubeconfig `users[].user.exec`, client-go's `ExecConfig`).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, expecting = "an exec configuration (a mapping)")]
pub struct ExecConfig {
    /// `command`: the executable, looked up in `PATH` unless it contains a path separator
    /// (then it is resolved against the kubeconfig's directory).
    #[serde(deserialize_with = "string")]
    pub command: String,
    /// `args`: its arguments. They can hold secrets, so `Debug` shows only their number.
    #[serde(deserialize_with = "null_default")]
    pub args: RedactedArgs,
    /// `env`: extra environment variables.
    #[serde(deserialize_with = "null_default")]
    pub env: Vec<ExecEnvVar>,
    /// `apiVersion`: `client.authentication.k8s.io/v1` or `/v1beta1`.
    #[serde(rename = "apiVersion", deserialize_with = "string")]
    pub api_version: String,
    /// `installHint`: shown when the executable is not found.
    #[serde(rename = "installHint", deserialize_with = "opt_string")]
    pub install_hint: Option<String>,
    /// `provideClusterInfo`: pass the cluster's details in `KUBERNETES_EXEC_INFO`.
    #[serde(rename = "provideClusterInfo", deserialize_with = "null_default")]
    pub provide_cluster_info: bool,
    /// `interactiveMode`: `Never`, `IfAvailable` or `Always` (required for v1, defaults to
    /// `IfAvailable` for v1beta1).
    #[serde(rename = "interactiveMode", deserialize_with = "opt_string")]
    pub interactive_mode: Option<String>,
}

/// Exec plugin arguments; `Debug` prints only how many there are, as client-go's
/// `ExecConfig.String()` redacts them. Unquoted numbers and booleans are read as text, and
/// errors never quote an argument.
#[derive(Clone, Default, PartialEq)]
pub struct RedactedArgs(pub Vec<String>);

impl<'de> Deserialize<'de> for RedactedArgs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let args: Vec<Secret<String>> = Deserialize::deserialize(d)?;
        Ok(RedactedArgs(
            args.into_iter().map(Secret::into_inner).collect(),
        ))
    }
}

impl std::fmt::Debug for RedactedArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{} redacted]", self.0.len())
    }
}

/// One environment variable for an exec plugin.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(default, expecting = "an environment variable (name, value)")]
pub struct ExecEnvVar {
    /// The variable's name.
    #[serde(deserialize_with = "string")]
    pub name: String,
    /// Its value (secret: plugins are often given keys this way).
    pub value: Secret<String>,
}

/// A cluster, user and namespace, chosen together by name.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// `cluster`: the cluster's name.
    pub cluster: Option<String>,
    /// `user`: the user's name.
    pub user: Option<String>,
    /// `namespace`: the default namespace.
    pub namespace: Option<String>,
    /// `extensions` by name.
    pub extensions: BTreeMap<String, serde_json::Value>,
    /// The file this entry was read from.
    pub origin: Option<PathBuf>,
}

impl Kubeconfig {
    /// Parses kubeconfig content (YAML or JSON). `origin` is the file it came from, recorded in
    /// every entry and named in errors; relative paths are *not* resolved here (the
    /// [`LoadingRules`](super::LoadingRules) do that).
    pub fn parse(content: &[u8], origin: Option<&Path>) -> Result<Kubeconfig, ConfigError> {
        let file = file_of(origin);
        let raw = parse_raw(content, &file)?;
        raw.into_model(&file)
    }

    /// Reads and parses one kubeconfig file (client-go's `LoadFromFile`).
    pub fn read(path: &Path) -> Result<Kubeconfig, ConfigError> {
        let content = std::fs::read(path).map_err(|source| ConfigError::ReadKubeconfig {
            path: path.to_path_buf(),
            source,
        })?;
        tracing::debug!(path = %path.display(), "kubeconfig read");
        Kubeconfig::parse(&content, Some(path))
    }

    /// True when nothing at all is configured.
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
            && self.users.is_empty()
            && self.contexts.is_empty()
            && self.current_context.is_none()
            && self.extensions.is_empty()
    }
}

fn parse_raw(content: &[u8], file: &Option<PathBuf>) -> Result<RawConfig, ConfigError> {
    let first = content.iter().find(|b| !b.is_ascii_whitespace());
    match first {
        None => Ok(RawConfig::default()),
        Some(b'{') => serde_json::from_slice(content).map_err(|e| ConfigError::Syntax {
            file: file.clone(),
            line: Some(e.line()),
            column: Some(e.column()),
            message: strip_location(&e.to_string()),
        }),
        Some(_) => serde_norway::from_slice::<Option<RawConfig>>(content)
            .map(Option::unwrap_or_default)
            .map_err(|e| {
                let location = e.location();
                ConfigError::Syntax {
                    file: file.clone(),
                    line: location.as_ref().map(|l| l.line()),
                    column: location.as_ref().map(|l| l.column()),
                    message: strip_location(&e.to_string()),
                }
            }),
    }
}

/// Drops the " at line X column Y" that both parsers append: the error shows it once, first.
fn strip_location(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message.to_owned(),
    }
}

#[derive(Default, Deserialize)]
#[serde(default, expecting = "a kubeconfig (a mapping)")]
struct RawConfig {
    #[serde(rename = "apiVersion", deserialize_with = "opt_string")]
    api_version: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    kind: Option<String>,
    #[serde(deserialize_with = "null_default")]
    clusters: Vec<NamedCluster>,
    #[serde(deserialize_with = "null_default")]
    users: Vec<NamedUser>,
    #[serde(deserialize_with = "null_default")]
    contexts: Vec<NamedContext>,
    #[serde(rename = "current-context", deserialize_with = "opt_string")]
    current_context: Option<String>,
    #[serde(deserialize_with = "null_default")]
    extensions: Vec<NamedExtension>,
}

#[derive(Default, Deserialize)]
#[serde(default, expecting = "a named cluster (name, cluster)")]
struct NamedCluster {
    #[serde(deserialize_with = "string")]
    name: String,
    #[serde(deserialize_with = "null_default")]
    cluster: RawCluster,
}

#[derive(Default, Deserialize)]
#[serde(default, expecting = "a named user (name, user)")]
struct NamedUser {
    #[serde(deserialize_with = "string")]
    name: String,
    #[serde(deserialize_with = "null_default")]
    user: RawUser,
}

#[derive(Default, Deserialize)]
#[serde(default, expecting = "a named context (name, context)")]
struct NamedContext {
    #[serde(deserialize_with = "string")]
    name: String,
    #[serde(deserialize_with = "null_default")]
    context: RawContext,
}

#[derive(Default, Deserialize)]
#[serde(default, expecting = "a named extension (name, extension)")]
struct NamedExtension {
    #[serde(deserialize_with = "string")]
    name: String,
    extension: serde_json::Value,
}

#[derive(Default, Deserialize)]
#[serde(
    default,
    rename_all = "kebab-case",
    expecting = "a cluster (a mapping)"
)]
struct RawCluster {
    #[serde(deserialize_with = "opt_string")]
    server: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    tls_server_name: Option<String>,
    #[serde(deserialize_with = "null_default")]
    insecure_skip_tls_verify: bool,
    #[serde(deserialize_with = "opt_string")]
    certificate_authority: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    certificate_authority_data: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    proxy_url: Option<String>,
    #[serde(deserialize_with = "null_default")]
    disable_compression: bool,
    #[serde(deserialize_with = "null_default")]
    extensions: Vec<NamedExtension>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "kebab-case", expecting = "a user (a mapping)")]
struct RawUser {
    #[serde(deserialize_with = "opt_string")]
    client_certificate: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    client_certificate_data: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    client_key: Option<String>,
    client_key_data: Option<Secret<String>>,
    token: Option<Secret<String>>,
    #[serde(rename = "tokenFile", deserialize_with = "opt_string")]
    token_file: Option<String>,
    #[serde(rename = "as", deserialize_with = "opt_string")]
    impersonate: Option<String>,
    #[serde(rename = "as-uid", deserialize_with = "opt_string")]
    impersonate_uid: Option<String>,
    #[serde(rename = "as-groups", deserialize_with = "null_default")]
    impersonate_groups: Vec<String>,
    #[serde(rename = "as-user-extra", deserialize_with = "null_default")]
    impersonate_user_extra: BTreeMap<String, Vec<String>>,
    #[serde(deserialize_with = "opt_string")]
    username: Option<String>,
    password: Option<Secret<String>>,
    auth_provider: Option<AuthProvider>,
    exec: Option<ExecConfig>,
    #[serde(deserialize_with = "null_default")]
    extensions: Vec<NamedExtension>,
}

#[derive(Default, Deserialize)]
#[serde(default, expecting = "a context (a mapping)")]
struct RawContext {
    #[serde(deserialize_with = "opt_string")]
    cluster: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    user: Option<String>,
    #[serde(deserialize_with = "opt_string")]
    namespace: Option<String>,
    #[serde(deserialize_with = "null_default")]
    extensions: Vec<NamedExtension>,
}

impl RawConfig {
    fn into_model(self, file: &Option<PathBuf>) -> Result<Kubeconfig, ConfigError> {
        let header = |field: &'static str, value: &Option<String>, want: &str| match value {
            Some(v) if v != want => Err(ConfigError::Invalid {
                file: file.clone(),
                entry: "the file".to_owned(),
                field,
                reason: format!("is {v:?}, expected {want:?}"),
            }),
            _ => Ok(()),
        };
        header("apiVersion", &self.api_version, "v1")?;
        header("kind", &self.kind, "Config")?;

        let mut config = Kubeconfig {
            current_context: self.current_context,
            extensions: extensions(self.extensions, file, "extensions")?,
            ..Kubeconfig::default()
        };
        for named in self.clusters {
            let cluster = named.cluster.into_model(&named.name, file)?;
            insert_unique(&mut config.clusters, named.name, cluster, file, "clusters")?;
        }
        for named in self.users {
            let user = named.user.into_model(&named.name, file)?;
            insert_unique(&mut config.users, named.name, user, file, "users")?;
        }
        for named in self.contexts {
            let c = named.context;
            let context = Context {
                cluster: c.cluster,
                user: c.user,
                namespace: c.namespace,
                extensions: extensions(c.extensions, file, "contexts[].extensions")?,
                origin: file.clone(),
            };
            insert_unique(&mut config.contexts, named.name, context, file, "contexts")?;
        }
        Ok(config)
    }
}

impl RawCluster {
    fn into_model(self, name: &str, file: &Option<PathBuf>) -> Result<Cluster, ConfigError> {
        let at = || entry("cluster", name);
        Ok(Cluster {
            server: self.server,
            tls_server_name: self.tls_server_name,
            insecure_skip_tls_verify: self.insecure_skip_tls_verify,
            certificate_authority: self.certificate_authority.map(PathBuf::from),
            certificate_authority_data: decode(
                self.certificate_authority_data.as_deref(),
                file,
                at,
                "certificate-authority-data",
            )?,
            proxy_url: self.proxy_url,
            disable_compression: self.disable_compression,
            extensions: extensions(self.extensions, file, "clusters[].extensions")?,
            origin: file.clone(),
        })
    }
}

impl RawUser {
    fn into_model(self, name: &str, file: &Option<PathBuf>) -> Result<AuthInfo, ConfigError> {
        let at = || entry("user", name);
        let key = self.client_key_data.as_ref().map(|s| s.expose().as_str());
        Ok(AuthInfo {
            client_certificate: self.client_certificate.map(PathBuf::from),
            client_certificate_data: decode(
                self.client_certificate_data.as_deref(),
                file,
                at,
                "client-certificate-data",
            )?,
            client_key: self.client_key.map(PathBuf::from),
            client_key_data: decode(key, file, at, "client-key-data")?.map(Secret::new),
            token: self.token.filter(|t| !t.expose().is_empty()),
            token_file: self.token_file.map(PathBuf::from),
            impersonate: self.impersonate,
            impersonate_uid: self.impersonate_uid,
            impersonate_groups: self.impersonate_groups,
            impersonate_user_extra: self.impersonate_user_extra,
            username: self.username,
            password: self.password.filter(|p| !p.expose().is_empty()),
            auth_provider: self.auth_provider,
            exec: self.exec,
            extensions: extensions(self.extensions, file, "users[].extensions")?,
            origin: file.clone(),
        })
    }
}

fn insert_unique<T>(
    map: &mut BTreeMap<String, T>,
    name: String,
    value: T,
    file: &Option<PathBuf>,
    list: &'static str,
) -> Result<(), ConfigError> {
    if map.contains_key(&name) {
        return Err(ConfigError::DuplicateName {
            file: file.clone(),
            list,
            name,
        });
    }
    map.insert(name, value);
    Ok(())
}

fn extensions(
    list: Vec<NamedExtension>,
    file: &Option<PathBuf>,
    where_: &'static str,
) -> Result<BTreeMap<String, serde_json::Value>, ConfigError> {
    let mut map = BTreeMap::new();
    for named in list {
        insert_unique(&mut map, named.name, named.extension, file, where_)?;
    }
    Ok(map)
}

/// Decodes a `*-data` field as Go's `encoding/json` decodes a `[]byte`: standard alphabet with
/// padding, line breaks ignored. An empty string is no data.
fn decode(
    data: Option<&str>,
    file: &Option<PathBuf>,
    at: impl Fn() -> String,
    field: &'static str,
) -> Result<Option<Vec<u8>>, ConfigError> {
    let Some(data) = data.filter(|d| !d.is_empty()) else {
        return Ok(None);
    };
    let cleaned: Vec<u8> = data
        .bytes()
        .filter(|b| *b != b'\n' && *b != b'\r')
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(&cleaned)
        .map(Some)
        .map_err(|e| ConfigError::Base64 {
            file: file.clone(),
            entry: at(),
            field,
            reason: describe_base64_error(&e),
        })
}

/// The error without the offending byte (which `DecodeError`'s own message quotes).
fn describe_base64_error(e: &base64::DecodeError) -> String {
    use base64::DecodeError as E;
    match e {
        E::InvalidByte(offset, _) => format!("invalid character at offset {offset}"),
        E::InvalidLength(len) => format!("invalid length {len}"),
        E::InvalidLastSymbol(offset, _) => format!("invalid last character at offset {offset}"),
        E::InvalidPadding => "invalid padding".to_owned(),
    }
}

/// `null` (or a missing field, through `#[serde(default)]`) as the type's default.
fn null_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn opt_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    struct Opt;
    impl<'de> serde::de::Visitor<'de> for Opt {
        type Value = Option<String>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a string")
        }
        fn visit_none<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_any(LenientString { redact: false })
                .map(|s| Some(s).filter(|s| !s.is_empty()))
        }
    }
    d.deserialize_option(Opt)
}

fn string<'de, D: Deserializer<'de>>(d: D) -> Result<String, D::Error> {
    Ok(opt_string(d)?.unwrap_or_default())
}

#[cfg(test)]
#[path = "kubeconfig_tests.rs"]
mod tests;
