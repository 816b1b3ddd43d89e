//! Tests of the kubeconfig model: every field, YAML and JSON, and each bad-input case
//! (client-go `loader_test.go`: `TestNilOutMap`, `TestErrorReadingFile`, `TestLoadingEmptyMaps`,
//! `TestDuplicate*Name`).

use super::*;
use crate::config::testutil::{CA_PEM, CLIENT_CERT_PEM, CLIENT_KEY_PEM};
use base64::engine::general_purpose::STANDARD;

fn b64(s: &str) -> String {
    STANDARD.encode(s)
}

fn full_yaml() -> String {
    format!(
        r#"apiVersion: v1
kind: Config
preferences:
  colors: true
current-context: prod
clusters:
- name: prod
  cluster:
    server: https://prod.example:6443
    certificate-authority-data: {ca}
    tls-server-name: api.prod.internal
    proxy-url: socks5://proxy:1080
    disable-compression: true
    extensions:
    - name: client.authentication.k8s.io/exec
      extension:
        audience: prod
- name: dev
  cluster:
    server: https://dev.example
    certificate-authority: certs/ca.crt
    insecure-skip-tls-verify: false
users:
- name: cert-user
  user:
    client-certificate-data: {cert}
    client-key-data: {key}
- name: token-user
  user:
    token: s3cr3t-token
    tokenFile: token.txt
- name: basic-user
  user:
    username: admin
    password: hunter2
- name: exec-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./bin/get-token
      args: [--cluster, prod, --secret-arg]
      env:
      - name: PLUGIN_KEY
        value: env-secret-value
      installHint: install get-token
      provideClusterInfo: true
      interactiveMode: Never
- name: impersonator
  user:
    token: other-token
    as: jane
    as-uid: "1234"
    as-groups: [devs, ops]
    as-user-extra:
      scopes: [view]
- name: gcp-user
  user:
    auth-provider:
      name: gcp
      config:
        access-token: ya29.provider-secret
contexts:
- name: prod
  context:
    cluster: prod
    user: cert-user
    namespace: payments
- name: dev
  context: {{cluster: dev, user: token-user}}
extensions:
- name: my-extension
  extension: {{answer: 42}}
"#,
        ca = b64(CA_PEM),
        cert = b64(CLIENT_CERT_PEM),
        key = b64(CLIENT_KEY_PEM)
    )
}

#[test]
fn every_field_is_read() {
    let config = Kubeconfig::parse(full_yaml().as_bytes(), Some(Path::new("/k/config"))).unwrap();
    assert_eq!(config.current_context.as_deref(), Some("prod"));
    assert_eq!(
        config.extensions["my-extension"],
        serde_json::json!({"answer": 42})
    );

    let prod = &config.clusters["prod"];
    assert_eq!(prod.server.as_deref(), Some("https://prod.example:6443"));
    assert_eq!(
        prod.certificate_authority_data.as_deref(),
        Some(CA_PEM.as_bytes())
    );
    assert_eq!(prod.tls_server_name.as_deref(), Some("api.prod.internal"));
    assert_eq!(prod.proxy_url.as_deref(), Some("socks5://proxy:1080"));
    assert!(prod.disable_compression);
    assert_eq!(
        prod.extensions["client.authentication.k8s.io/exec"],
        serde_json::json!({"audience": "prod"})
    );
    assert_eq!(prod.origin.as_deref(), Some(Path::new("/k/config")));
    let dev = &config.clusters["dev"];
    assert_eq!(
        dev.certificate_authority.as_deref(),
        Some(Path::new("certs/ca.crt"))
    );
    assert!(!dev.insecure_skip_tls_verify);

    let cert = &config.users["cert-user"];
    assert_eq!(
        cert.client_certificate_data.as_deref(),
        Some(CLIENT_CERT_PEM.as_bytes())
    );
    assert_eq!(
        cert.client_key_data.as_ref().map(|k| k.expose().as_slice()),
        Some(CLIENT_KEY_PEM.as_bytes())
    );
    let token = &config.users["token-user"];
    assert_eq!(
        token.token.as_ref().map(|t| t.expose().as_str()),
        Some("s3cr3t-token")
    );
    assert_eq!(token.token_file.as_deref(), Some(Path::new("token.txt")));
    let basic = &config.users["basic-user"];
    assert_eq!(basic.username.as_deref(), Some("admin"));
    assert_eq!(
        basic.password.as_ref().map(|p| p.expose().as_str()),
        Some("hunter2")
    );

    let exec = config.users["exec-user"].exec.as_ref().unwrap();
    assert_eq!(exec.api_version, "client.authentication.k8s.io/v1");
    assert_eq!(exec.command, "./bin/get-token");
    assert_eq!(exec.args.0, ["--cluster", "prod", "--secret-arg"]);
    assert_eq!(exec.env[0].name, "PLUGIN_KEY");
    assert_eq!(exec.env[0].value.expose(), "env-secret-value");
    assert_eq!(exec.install_hint.as_deref(), Some("install get-token"));
    assert!(exec.provide_cluster_info);
    assert_eq!(exec.interactive_mode.as_deref(), Some("Never"));

    let imp = &config.users["impersonator"];
    assert_eq!(imp.impersonate.as_deref(), Some("jane"));
    assert_eq!(imp.impersonate_uid.as_deref(), Some("1234"));
    assert_eq!(imp.impersonate_groups, ["devs", "ops"]);
    assert_eq!(imp.impersonate_user_extra["scopes"], ["view"]);
    assert_eq!(
        config.users["gcp-user"]
            .auth_provider
            .as_ref()
            .unwrap()
            .name,
        "gcp"
    );

    let ctx = &config.contexts["prod"];
    assert_eq!(
        (
            ctx.cluster.as_deref(),
            ctx.user.as_deref(),
            ctx.namespace.as_deref()
        ),
        (Some("prod"), Some("cert-user"), Some("payments"))
    );
    assert_eq!(config.contexts["dev"].namespace, None);
}

#[test]
fn debug_output_hides_every_credential() {
    let config = Kubeconfig::parse(full_yaml().as_bytes(), None).unwrap();
    let shown = format!("{config:?}");
    for secret in [
        "s3cr3t-token",
        "hunter2",
        "env-secret-value",
        "--secret-arg",
        "ya29.provider-secret",
        "other-token",
        "PRIVATE KEY",
    ] {
        assert!(!shown.contains(secret), "{secret} leaked in {shown}");
    }
    assert!(shown.contains("PLUGIN_KEY"), "variable names stay visible");
}

#[test]
fn debug_redacts_proxy_urls_with_userinfo() {
    let yaml = r#"
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: https://server-user:server-pass@c.example:6443
    proxy-url: http://proxy-user:proxy-pass@proxy.example:3128
current-context: ""
"#;
    let config = Kubeconfig::parse(yaml.as_bytes(), None).unwrap();
    let cluster = &config.clusters["c"];
    let info = crate::config::ExecClusterInfo {
        server: cluster.server.clone().unwrap(),
        proxy_url: cluster.proxy_url.clone(),
        ..crate::config::ExecClusterInfo::default()
    };
    for shown in [
        format!("{config:?}"),
        format!("{cluster:?}"),
        format!("{info:?}"),
    ] {
        for secret in ["proxy-pass", "proxy-user", "server-pass", "server-user"] {
            assert!(!shown.contains(secret), "{secret} leaked in {shown}");
        }
        assert!(shown.contains("proxy.example:3128"), "{shown}");
        assert!(shown.contains("REDACTED"), "{shown}");
    }
}

#[test]
fn json_kubeconfig_is_read() {
    let json = r#"{
	"apiVersion": "v1", "kind": "Config",
	"clusters": [{"name": "c", "cluster": {"server": "https://c.example"}}],
	"users": [{"name": "u", "user": {"token": "t"}}],
	"contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
	"current-context": "x"
}"#;
    let config = Kubeconfig::parse(json.as_bytes(), None).unwrap();
    assert_eq!(
        config.clusters["c"].server.as_deref(),
        Some("https://c.example")
    );
    assert_eq!(config.current_context.as_deref(), Some("x"));
}

#[test]
fn empty_and_null_content_is_an_empty_config() {
    for content in [
        "",
        "  \n",
        "# only a comment\n",
        "---\n",
        "{}",
        "users: null\nclusters:\ncontexts: []\n",
    ] {
        let config = Kubeconfig::parse(content.as_bytes(), None).unwrap();
        assert!(config.is_empty(), "{content:?}");
    }
    let config = Kubeconfig::parse(b"current-context: any-context-value\n", None).unwrap();
    assert_eq!(config.current_context.as_deref(), Some("any-context-value"));
    assert!(config.clusters.is_empty() && config.users.is_empty() && config.contexts.is_empty());
}

#[test]
fn auth_provider_without_config_parses() {
    let yaml = "users:\n- name: production\n  user:\n    auth-provider:\n      name: gcp\n";
    let config = Kubeconfig::parse(yaml.as_bytes(), None).unwrap();
    assert_eq!(
        config.users["production"]
            .auth_provider
            .as_ref()
            .unwrap()
            .name,
        "gcp"
    );
}

#[test]
fn unquoted_scalars_are_strings() {
    let yaml = "clusters:\n- name: 0\n  cluster: {server: https://h}\nusers:\n- name: u\n  user: {token: 12345}\n";
    let config = Kubeconfig::parse(yaml.as_bytes(), None).unwrap();
    assert!(config.clusters.contains_key("0"));
    assert_eq!(config.users["u"].token.as_ref().unwrap().expose(), "12345");
}

#[test]
fn exec_args_are_lenient_and_never_quoted_in_errors() {
    let yaml = "users:\n- name: u\n  user:\n    exec: {command: c, args: [--port, 8080, true]}\n";
    let config = Kubeconfig::parse(yaml.as_bytes(), None).unwrap();
    assert_eq!(
        config.users["u"].exec.as_ref().unwrap().args.0,
        ["--port", "8080", "true"]
    );
    let yaml = "users:\n- name: u\n  user:\n    exec: {command: c, args: [{key: arg-secret}]}\n";
    let err = Kubeconfig::parse(yaml.as_bytes(), None).unwrap_err();
    assert!(!err.to_string().contains("arg-secret"), "{err}");
}

#[test]
fn syntax_errors_name_the_file_and_line() {
    let path = Path::new("/home/me/.kube/config");
    let err =
        Kubeconfig::parse(b"clusters:\n- name: a\n  cluster: [unclosed\n", Some(path)).unwrap_err();
    let ConfigError::Syntax { line, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(line.is_some(), "{err}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("kubeconfig /home/me/.kube/config: line "),
        "{msg}"
    );

    let err = Kubeconfig::parse(b"bogus value", Some(path)).unwrap_err();
    assert!(err.to_string().contains("/home/me/.kube/config"), "{err}");

    let err = Kubeconfig::parse(b"{\"clusters\": [}", Some(path)).unwrap_err();
    assert!(
        matches!(err, ConfigError::Syntax { line: Some(1), .. }),
        "{err:?}"
    );
}

#[test]
fn wrong_types_do_not_echo_secret_values() {
    let err = Kubeconfig::parse(
        b"users:\n- name: u\n  user:\n    password: [hunter2]\n",
        None,
    )
    .unwrap_err();
    assert!(!err.to_string().contains("hunter2"), "{err}");
    assert!(err.to_string().contains("line 4"), "{err}");
}

#[test]
fn unknown_api_version_or_kind_is_rejected() {
    let err = Kubeconfig::parse(b"apiVersion: v2\nkind: Config\n", None).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Invalid {
                field: "apiVersion",
                ..
            }
        ),
        "{err}"
    );
    let err = Kubeconfig::parse(b"apiVersion: v1\nkind: Pod\n", None).unwrap_err();
    assert!(err.to_string().contains("\"Pod\""), "{err}");
}

#[test]
fn duplicate_names_are_rejected() {
    let cases = [
        (
            "clusters",
            "clusters:\n- name: a\n  cluster: {server: x}\n- name: a\n  cluster: {server: y}\n",
        ),
        (
            "users",
            "users:\n- name: a\n  user: {token: x}\n- name: a\n  user: {}\n",
        ),
        (
            "contexts",
            "contexts:\n- name: a\n  context: {}\n- name: a\n  context: {}\n",
        ),
        (
            "extensions",
            "extensions:\n- name: a\n  extension: {bytes: test}\n- name: a\n  extension: {}\n",
        ),
    ];
    for (list, yaml) in cases {
        let err = Kubeconfig::parse(yaml.as_bytes(), Some(Path::new("/f"))).unwrap_err();
        match &err {
            ConfigError::DuplicateName { list: l, name, .. } => {
                assert_eq!((*l, name.as_str()), (list, "a"))
            }
            other => panic!("{list}: {other:?}"),
        }
        assert_eq!(
            err.to_string(),
            format!("kubeconfig /f: duplicate name \"a\" in {list}")
        );
    }
}

#[test]
fn bad_base64_names_file_entry_and_field_without_the_data() {
    let cases = [
        (
            "clusters:\n- name: c\n  cluster: {certificate-authority-data: 'not base64!'}\n",
            "cluster \"c\"",
            "certificate-authority-data",
        ),
        (
            "users:\n- name: u\n  user: {client-certificate-data: '%%%%'}\n",
            "user \"u\"",
            "client-certificate-data",
        ),
        (
            "users:\n- name: u\n  user: {client-key-data: 'c2VjcmV0LWtleQ=x'}\n",
            "user \"u\"",
            "client-key-data",
        ),
    ];
    for (yaml, entry, field) in cases {
        let err = Kubeconfig::parse(yaml.as_bytes(), Some(Path::new("/k/config"))).unwrap_err();
        let ConfigError::Base64 {
            entry: e, field: f, ..
        } = &err
        else {
            panic!("{err:?}")
        };
        assert_eq!((e.as_str(), *f), (entry, field));
        let msg = err.to_string();
        assert!(
            msg.starts_with(&format!(
                "kubeconfig /k/config: {entry}: {field} is not valid base64"
            )),
            "{msg}"
        );
        assert!(
            !msg.contains("c2VjcmV0") && !msg.contains('%') && !msg.contains("!"),
            "{msg}"
        );
    }
}

#[test]
fn base64_with_line_breaks_is_accepted() {
    let encoded = b64(CA_PEM);
    let wrapped: Vec<&str> = encoded
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let yaml = format!(
        "clusters:\n- name: c\n  cluster:\n    certificate-authority-data: |\n      {}\n",
        wrapped.join("\n      ")
    );
    let config = Kubeconfig::parse(yaml.as_bytes(), None).unwrap();
    assert_eq!(
        config.clusters["c"].certificate_authority_data.as_deref(),
        Some(CA_PEM.as_bytes())
    );
}

#[test]
fn read_names_an_unreadable_file() {
    let dir = tempfile::tempdir().unwrap();
    let err = Kubeconfig::read(&dir.path().join("absent")).unwrap_err();
    assert!(matches!(err, ConfigError::ReadKubeconfig { .. }));
    assert!(err.to_string().contains("absent"), "{err}");
}
