//! From kubeconfig to `Config`, the selection half: context, cluster, user and namespace
//! choice, URLs, in-memory kubeconfigs and `Config::infer` (client-go `client_config_test.go`,
//! `merged_client_builder_test.go`), with every error path. Credentials are tested in
//! `from_kubeconfig_auth_tests.rs`.

use super::*;
use crate::config::testutil::write;
use crate::config::{InClusterEnv, Kubeconfig};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use tempfile::TempDir;

/// A kubeconfig with context `clean` → cluster `clean` (https) and user `clean`, whose
/// entries are given as YAML flow mappings; `extra` is appended at top level.
pub(super) fn kubeconfig(cluster: &str, user: &str, extra: &str) -> String {
    format!(
        "clusters:\n- name: clean\n  cluster: {cluster}\n\
         users:\n- name: clean\n  user: {user}\n\
         contexts:\n- name: clean\n  context: {{cluster: clean, user: clean}}\n\
         current-context: clean\n{extra}"
    )
}

pub(super) const SERVER: &str = "{server: 'https://anything.com:8080'}";

pub(super) fn load(content: &str) -> (TempDir, Result<Config, ConfigError>) {
    load_with(content, KubeconfigOptions::default())
}

fn load_with(
    content: &str,
    mut options: KubeconfigOptions,
) -> (TempDir, Result<Config, ConfigError>) {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "config", content);
    options.loading_rules = Some(LoadingRules::explicit(path));
    let result = Config::from_kubeconfig(&options);
    (dir, result)
}

pub(super) fn error(content: &str) -> ConfigError {
    load(content).1.unwrap_err()
}

pub(super) fn b64(s: &str) -> String {
    STANDARD.encode(s)
}

#[test]
fn clean_token_config() {
    // TestCreateClean.
    let (_dir, config) = load(&kubeconfig(SERVER, "{token: the-token}", ""));
    let config = config.unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://anything.com:8080/");
    assert_eq!(config.default_namespace, "default");
    assert!(matches!(&config.auth, Auth::Bearer(t) if t.expose() == "the-token"));
    assert_eq!(config.tls, TlsConfig::default());
    assert_eq!(config.throttle(), Some((5.0, 10)));
}

#[test]
fn namespace_from_context_and_override() {
    // TestMergeContext / TestNamespaceOverride.
    let content =
        kubeconfig(SERVER, "{}", "").replace("user: clean}", "user: clean, namespace: ctx-ns}");
    assert_eq!(load(&content).1.unwrap().default_namespace, "ctx-ns");
    let options = KubeconfigOptions {
        namespace: Some("overridden-namespace".into()),
        ..Default::default()
    };
    assert_eq!(
        load_with(&content, options).1.unwrap().default_namespace,
        "overridden-namespace"
    );
}

#[test]
fn context_cluster_and_user_can_be_chosen() {
    let content = "\
clusters:
- {name: a, cluster: {server: 'https://a.example'}}
- {name: b, cluster: {server: 'https://b.example'}}
users:
- {name: ua, user: {token: token-a}}
- {name: ub, user: {token: token-b}}
contexts:
- {name: ctx-a, context: {cluster: a, user: ua, namespace: ns-a}}
- {name: ctx-b, context: {cluster: b, user: ub, namespace: ns-b}}
current-context: ctx-a
";
    let chosen = |o: KubeconfigOptions| load_with(content, o).1.unwrap();
    let config = chosen(KubeconfigOptions {
        context: Some("ctx-b".into()),
        ..Default::default()
    });
    assert_eq!(
        (config.cluster_url.host(), config.default_namespace.as_str()),
        (Some("b.example"), "ns-b")
    );
    let config = chosen(KubeconfigOptions {
        cluster: Some("b".into()),
        ..Default::default()
    });
    assert_eq!(config.cluster_url.host(), Some("b.example"));
    assert!(
        matches!(&config.auth, Auth::Bearer(t) if t.expose() == "token-a"),
        "user still from ctx-a"
    );
    let config = chosen(KubeconfigOptions {
        user: Some("ub".into()),
        ..Default::default()
    });
    assert_eq!(config.cluster_url.host(), Some("a.example"));
    assert!(matches!(&config.auth, Auth::Bearer(t) if t.expose() == "token-b"));
}

#[test]
fn missing_context_cluster_or_user_is_an_error() {
    // TestCreateMissingContext and the stricter cluster/user rules.
    let base = kubeconfig(SERVER, "{}", "");
    let (dir, result) = load_with(
        &base,
        KubeconfigOptions {
            context: Some("not-present".into()),
            ..Default::default()
        },
    );
    let err = result.unwrap_err();
    assert!(
        matches!(&err, ConfigError::ContextNotFound { name, .. } if name == "not-present"),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains(&dir.path().join("config").display().to_string()),
        "{err}"
    );

    let err = error(&base.replace("current-context: clean", "current-context: gone"));
    assert!(
        matches!(&err, ConfigError::ContextNotFound { name, .. } if name == "gone"),
        "{err:?}"
    );

    let err = load_with(
        &base,
        KubeconfigOptions {
            cluster: Some("nope".into()),
            ..Default::default()
        },
    )
    .1
    .unwrap_err();
    assert!(
        matches!(&err, ConfigError::ClusterNotFound { context: None, .. }),
        "{err:?}"
    );
    let err = error(&base.replace("{cluster: clean,", "{cluster: typo,"));
    assert_eq!(
        err.to_string().split(" not found").next().unwrap(),
        "cluster \"typo\" (named by context \"clean\")"
    );

    let err = load_with(
        &base,
        KubeconfigOptions {
            user: Some("nobody".into()),
            ..Default::default()
        },
    )
    .1
    .unwrap_err();
    assert!(
        matches!(&err, ConfigError::UserNotFound { name, .. } if name == "nobody"),
        "{err:?}"
    );
    let err = error(&base.replace("user: clean}", "user: typo}"));
    assert!(
        matches!(&err, ConfigError::UserNotFound { context: Some(c), .. } if c == "clean"),
        "{err:?}"
    );

    let err = error(&base.replace("{cluster: clean, user: clean}", "{user: clean}"));
    assert!(
        matches!(err, ConfigError::ContextWithoutCluster { .. }),
        "{err:?}"
    );
    let err = error(&kubeconfig("{insecure-skip-tls-verify: true}", "{}", ""));
    assert!(matches!(err, ConfigError::NoServer { .. }), "{err:?}");
    assert!(
        err.to_string().contains("cluster \"clean\" has no server"),
        "{err}"
    );
}

#[test]
fn no_current_context_is_an_empty_config() {
    let err = error(&kubeconfig(SERVER, "{}", "").replace("current-context: clean\n", ""));
    assert!(err.is_empty_config(), "{err:?}");
    assert!(
        err.to_string().contains("no current-context is set"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let options = KubeconfigOptions {
        loading_rules: Some(LoadingRules::with_precedence([dir.path().join("missing")])),
        ..Default::default()
    };
    let err = Config::from_kubeconfig(&options).unwrap_err();
    assert!(err.is_empty_config());
    assert!(
        err.to_string()
            .contains("no kubeconfig file found (looked for "),
        "{err}"
    );
}

#[test]
fn plain_http_servers_get_no_credentials_or_tls() {
    let cluster = "{server: 'http://insecure.example:8080', insecure-skip-tls-verify: true}";
    let config = load(&kubeconfig(cluster, "{token: t, tokenFile: /missing}", ""))
        .1
        .unwrap();
    assert!(!config.is_tls());
    assert!(matches!(config.auth, Auth::None));
    assert_eq!(config.tls, TlsConfig::default());
    let config = load(&kubeconfig("{server: 'localhost:8080'}", "{token: t}", ""))
        .1
        .unwrap();
    assert_eq!(config.cluster_url.to_string(), "http://localhost:8080/");
    assert!(matches!(config.auth, Auth::None));
}

#[test]
fn server_and_proxy_urls() {
    // TestCreateCleanWithPrefix and TestProxyURL.
    let config = load(&kubeconfig(
        "{server: 'https://anything.com:8080/foo/bar'}",
        "{}",
        "",
    ))
    .1
    .unwrap();
    assert_eq!(config.cluster_url.path(), "/foo/bar");
    for proxy in [
        "socks5://example.com",
        "https://example.com",
        "http://example.com",
    ] {
        let config = load(&kubeconfig(
            &format!("{{server: 'https://h', proxy-url: '{proxy}'}}"),
            "{}",
            "",
        ))
        .1
        .unwrap();
        assert_eq!(config.proxy_url.unwrap().to_string(), format!("{proxy}/"));
    }
    for proxy in [
        "socks6://example.com",
        "example.com",
        "chewbacca@example.com",
    ] {
        let err = error(&kubeconfig(
            &format!("{{server: 'https://h', proxy-url: '{proxy}'}}"),
            "{}",
            "",
        ));
        assert!(
            matches!(
                err,
                ConfigError::InvalidUrl {
                    field: "proxy-url",
                    ..
                }
            ),
            "{proxy}: {err:?}"
        );
    }
    let err = error(&kubeconfig("{server: 'https://admin:hunter2@h'}", "{}", ""));
    assert!(
        matches!(
            err,
            ConfigError::InvalidUrl {
                field: "server",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        !err.to_string().contains("hunter2") && err.to_string().contains("REDACTED"),
        "{err}"
    );
    let err = error(&kubeconfig("{server: 'ftp://h'}", "{}", ""));
    assert!(
        err.to_string().contains("cluster \"clean\" in kubeconfig "),
        "{err}"
    );
}

#[test]
fn in_memory_kubeconfig() {
    let kc = Kubeconfig::parse(kubeconfig(SERVER, "{token: t}", "").as_bytes(), None).unwrap();
    let loaded = LoadedKubeconfig {
        kubeconfig: kc,
        ..Default::default()
    };
    let config = Config::from_loaded_kubeconfig(&loaded, &KubeconfigOptions::default()).unwrap();
    assert_eq!(config.cluster_url.host(), Some("anything.com"));
    let err = Config::from_loaded_kubeconfig(
        &loaded,
        &KubeconfigOptions {
            context: Some("x".into()),
            ..Default::default()
        },
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "context \"x\" not found in the kubeconfig (no file was read)"
    );
}

fn in_cluster_env(dir: &std::path::Path) -> InClusterEnv {
    write(dir, "sa/token", "sa-token");
    InClusterEnv {
        service_host: Some("10.96.0.1".into()),
        service_port: Some("443".into()),
        ..InClusterEnv::with_service_account_dir(dir.join("sa"))
    }
}

#[test]
fn infer_prefers_a_usable_kubeconfig() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(dir.path(), "config", kubeconfig(SERVER, "{token: t}", ""));
    let options = KubeconfigOptions {
        loading_rules: Some(LoadingRules::with_precedence([path])),
        ..Default::default()
    };
    let config = Config::infer_with(&options, &in_cluster_env(dir.path())).unwrap();
    assert_eq!(config.cluster_url.host(), Some("anything.com"));
}

#[test]
fn infer_falls_back_to_in_cluster_without_a_kubeconfig() {
    // TestInClusterConfig (merged_client_builder_test.go): no kubeconfig, in-cluster possible.
    let dir = tempfile::tempdir().unwrap();
    let options = KubeconfigOptions {
        loading_rules: Some(LoadingRules::with_precedence([dir.path().join("absent")])),
        ..Default::default()
    };
    let config = Config::infer_with(&options, &in_cluster_env(dir.path())).unwrap();
    assert_eq!(config.cluster_url.to_string(), "https://10.96.0.1:443/");

    let err = Config::infer_with(
        &options,
        &InClusterEnv::with_service_account_dir(dir.path()),
    )
    .unwrap_err();
    let ConfigError::Infer {
        kubeconfig,
        in_cluster,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(kubeconfig.is_empty_config());
    assert!(matches!(**in_cluster, ConfigError::NotInCluster));
    let msg = err.to_string();
    assert!(
        msg.contains("no kubeconfig file found") && msg.contains("KUBERNETES_SERVICE_HOST"),
        "{msg}"
    );
}

#[test]
fn infer_reports_a_broken_kubeconfig_instead_of_falling_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        "config",
        kubeconfig(SERVER, "{}", "").replace("current-context: clean", "current-context: gone"),
    );
    let options = KubeconfigOptions {
        loading_rules: Some(LoadingRules::with_precedence([path])),
        ..Default::default()
    };
    let err = Config::infer_with(&options, &in_cluster_env(dir.path())).unwrap_err();
    assert!(
        matches!(err, ConfigError::ContextNotFound { .. }),
        "{err:?}"
    );
}
