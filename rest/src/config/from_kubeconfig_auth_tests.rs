//! From kubeconfig to `Config`, the credential half: TLS material, tokens, basic auth, exec,
//! impersonation, and `Debug` output that never shows any of them (client-go
//! `client_config_test.go`: `TestCertificateData`, `TestBasicAuthData`, `TestBasicTokenFile`,
//! `TestPrecedenceTokenFile`, `TestFullImpersonateConfig`; `validation_test.go`).

use super::tests::{SERVER, b64, error, kubeconfig, load};
use super::*;
use crate::config::testutil::{CA_PEM, CLIENT_CERT_PEM, CLIENT_KEY_PEM, write};

#[test]
fn tls_material_from_data() {
    // TestCertificateData, TestTLSServerName, TestDisableCompression.
    let cluster = format!(
        "{{server: 'https://localhost:8443', certificate-authority-data: {}, tls-server-name: api.internal, disable-compression: true}}",
        b64(CA_PEM)
    );
    let user = format!(
        "{{client-certificate-data: {}, client-key-data: {}}}",
        b64(CLIENT_CERT_PEM),
        b64(CLIENT_KEY_PEM)
    );
    let config = load(&kubeconfig(&cluster, &user, "")).1.unwrap();
    assert_eq!(config.tls.ca_pem.as_deref(), Some(CA_PEM.as_bytes()));
    assert_eq!(
        config.tls.client_cert_pem.as_deref(),
        Some(CLIENT_CERT_PEM.as_bytes())
    );
    assert_eq!(
        config.tls.client_key_pem.as_ref().unwrap().expose(),
        CLIENT_KEY_PEM.as_bytes()
    );
    assert_eq!(config.tls.server_name.as_deref(), Some("api.internal"));
    assert!(config.disable_compression);
    assert!(matches!(config.auth, Auth::None));
}

#[test]
fn tls_material_from_relative_files() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "pki/ca.crt", CA_PEM);
    write(dir.path(), "pki/client.crt", CLIENT_CERT_PEM);
    write(dir.path(), "pki/client.key", CLIENT_KEY_PEM);
    let content = kubeconfig(
        "{server: 'https://h', certificate-authority: pki/ca.crt}",
        "{client-certificate: pki/client.crt, client-key: ./pki/client.key}",
        "",
    );
    let config = Config::from_kubeconfig_file(write(dir.path(), "config", content)).unwrap();
    assert_eq!(config.tls.ca_pem.as_deref(), Some(CA_PEM.as_bytes()));
    assert_eq!(
        config.tls.client_key_pem.as_ref().unwrap().expose(),
        CLIENT_KEY_PEM.as_bytes()
    );
}

#[test]
fn unreadable_referenced_files_name_kubeconfig_entry_field_and_path() {
    let (dir, result) = load(&kubeconfig(
        "{server: 'https://h', certificate-authority: missing-ca.crt}",
        "{}",
        "",
    ));
    let err = result.unwrap_err();
    let ConfigError::ReadReferencedFile { field, path, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(
        (*field, path.as_path()),
        (
            "certificate-authority",
            dir.path().join("missing-ca.crt").as_path()
        )
    );
    let msg = err.to_string();
    let kubeconfig_path = dir.path().join("config").display().to_string();
    assert!(
        msg.starts_with(&format!(
            "kubeconfig {kubeconfig_path}: cluster \"clean\": unable to read certificate-authority "
        )),
        "{msg}"
    );

    let err = error(&kubeconfig(
        SERVER,
        "{client-certificate: /no/cert, client-key: /no/key}",
        "",
    ));
    assert!(
        matches!(
            err,
            ConfigError::ReadReferencedFile {
                field: "client-certificate",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn bad_pem_names_the_field_and_never_the_key() {
    let cluster = format!(
        "{{server: 'https://h', certificate-authority-data: {}}}",
        b64("not a pem")
    );
    let err = error(&kubeconfig(&cluster, "{}", ""));
    assert!(
        matches!(
            err,
            ConfigError::Pem {
                field: "certificate-authority-data",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string()
            .contains("cluster \"clean\": certificate-authority-data: no PEM CERTIFICATE block"),
        "{err}"
    );

    let broken_key = CLIENT_KEY_PEM.replace("-----END PRIVATE KEY-----", "");
    let user = format!(
        "{{client-certificate-data: {}, client-key-data: {}}}",
        b64(CLIENT_CERT_PEM),
        b64(&broken_key)
    );
    let err = error(&kubeconfig(SERVER, &user, ""));
    assert!(
        matches!(
            err,
            ConfigError::Pem {
                field: "client-key-data",
                ..
            }
        ),
        "{err:?}"
    );
    let key_body = CLIENT_KEY_PEM.lines().nth(1).unwrap();
    assert!(
        !err.to_string().contains(key_body) && !format!("{err:?}").contains(key_body),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let ca = write(dir.path(), "ca.crt", CLIENT_KEY_PEM);
    let content = kubeconfig(
        &format!(
            "{{server: 'https://h', certificate-authority: {}}}",
            ca.display()
        ),
        "{}",
        "",
    );
    let err = Config::from_kubeconfig_file(write(dir.path(), "config", content)).unwrap_err();
    assert!(
        matches!(&err, ConfigError::Pem { path: Some(p), .. } if *p == ca),
        "{err:?}"
    );
    assert!(!err.to_string().contains(key_body), "{err}");
}

#[test]
fn conflicting_tls_settings_are_rejected() {
    let both_ca = format!(
        "{{server: 'https://h', certificate-authority: /x/ca, certificate-authority-data: {}}}",
        b64(CA_PEM)
    );
    let err = error(&kubeconfig(&both_ca, "{}", ""));
    assert!(
        err.to_string()
            .contains("certificate-authority-data and certificate-authority are both specified"),
        "{err}"
    );
    let insecure_ca = format!(
        "{{server: 'https://h', insecure-skip-tls-verify: true, certificate-authority-data: {}}}",
        b64(CA_PEM)
    );
    assert!(matches!(
        error(&kubeconfig(&insecure_ca, "{}", "")),
        ConfigError::Invalid {
            field: "insecure-skip-tls-verify",
            ..
        }
    ));
    let config = load(&kubeconfig(
        "{server: 'https://h', insecure-skip-tls-verify: true}",
        "{}",
        "",
    ))
    .1
    .unwrap();
    assert!(config.tls.insecure_skip_tls_verify);

    let cert = b64(CLIENT_CERT_PEM);
    let cases = [
        (
            format!("{{client-certificate: /c, client-certificate-data: {cert}, client-key: /k}}"),
            "client-certificate-data",
        ),
        (
            format!("{{client-certificate-data: {cert}, client-key: /k, client-key-data: {cert}}}"),
            "client-key-data",
        ),
        (format!("{{client-certificate-data: {cert}}}"), "client-key"),
    ];
    for (user, field) in cases {
        let err = error(&kubeconfig(SERVER, &user, ""));
        assert!(
            matches!(&err, ConfigError::Invalid { field: f, .. } if *f == field),
            "{user}: {err:?}"
        );
    }
}

#[test]
fn basic_auth_and_its_conflict_with_tokens() {
    // TestBasicAuthData, TestValidateMultipleMethodsAuthInfo.
    let config = load(&kubeconfig(
        SERVER,
        "{username: myuser, password: mypass}",
        "",
    ))
    .1
    .unwrap();
    assert!(
        matches!(&config.auth, Auth::Basic { username, password } if username == "myuser" && password.expose() == "mypass")
    );
    let err = error(&kubeconfig(
        SERVER,
        "{token: tok-secret, username: u, password: pw-secret}",
        "",
    ));
    let msg = err.to_string();
    assert!(msg.contains("more than one authentication method"), "{msg}");
    assert!(
        !msg.contains("tok-secret") && !msg.contains("pw-secret"),
        "{msg}"
    );
}

#[test]
fn token_file_alone_and_with_an_inline_token() {
    // TestBasicTokenFile and TestPrecedenceTokenFile.
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "token", "exampletoken\n");
    let path = write(
        dir.path(),
        "config",
        kubeconfig(SERVER, "{tokenFile: token}", ""),
    );
    let config = Config::from_kubeconfig_file(&path).unwrap();
    let Auth::TokenFile(file) = &config.auth else {
        panic!("{:?}", config.auth)
    };
    assert_eq!(file.path(), dir.path().join("token"));
    assert_eq!(file.token().unwrap().expose(), "exampletoken");

    let path = write(
        dir.path(),
        "config",
        kubeconfig(SERVER, "{token: expected, tokenFile: gone}", ""),
    );
    let config = Config::from_kubeconfig_file(&path).unwrap();
    let Auth::TokenFile(file) = &config.auth else {
        panic!("{:?}", config.auth)
    };
    assert_eq!(
        file.token().unwrap().expose(),
        "expected",
        "inline token while the file is unreadable"
    );
    write(dir.path(), "gone", "from-file");
    assert_eq!(
        file.token().unwrap().expose(),
        "from-file",
        "the file wins once readable"
    );
}

#[test]
fn unreadable_or_empty_token_file_is_an_error() {
    let err = error(&kubeconfig(SERVER, "{tokenFile: /no/such/token}", ""));
    assert!(
        matches!(
            err,
            ConfigError::ReadReferencedFile {
                field: "tokenFile",
                ..
            }
        ),
        "{err:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "token", " \n");
    let path = write(
        dir.path(),
        "config",
        kubeconfig(SERVER, "{tokenFile: token}", ""),
    );
    let err = Config::from_kubeconfig_file(path).unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Invalid {
                field: "tokenFile",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn exec_user_gets_an_authenticator_with_cluster_info() {
    let cluster = format!(
        "{{server: 'https://h:6443', certificate-authority-data: {}, extensions: [{{name: client.authentication.k8s.io/exec, extension: {{audience: x}}}}]}}",
        b64(CA_PEM)
    );
    let user = "{exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: get-token, provideClusterInfo: true, installHint: \"\\e[1mbold\"}}";
    let config = load(&kubeconfig(&cluster, user, "")).1.unwrap();
    let Auth::Exec(exec) = &config.auth else {
        panic!("{:?}", config.auth)
    };
    assert_eq!(exec.config().command, "get-token");
    assert_eq!(exec.config().install_hint.as_deref(), Some("U+001B[1mbold"));
    let info = exec.cluster_info().unwrap();
    assert_eq!(info.server, "https://h:6443");
    assert_eq!(
        info.certificate_authority_data.as_deref(),
        Some(CA_PEM.as_bytes())
    );
    assert_eq!(info.config, Some(serde_json::json!({"audience": "x"})));
}

#[test]
fn exec_steps_aside_for_a_token_or_a_client_certificate() {
    let exec = "exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: get-token}";
    let config = load(&kubeconfig(SERVER, &format!("{{token: t, {exec}}}"), ""))
        .1
        .unwrap();
    assert!(matches!(config.auth, Auth::Bearer(_)));
    let user = format!(
        "{{client-certificate-data: {}, client-key-data: {}, {exec}}}",
        b64(CLIENT_CERT_PEM),
        b64(CLIENT_KEY_PEM)
    );
    let config = load(&kubeconfig(SERVER, &user, "")).1.unwrap();
    assert!(matches!(config.auth, Auth::None));
    assert!(config.tls.has_client_cert());
}

#[test]
fn invalid_exec_and_auth_provider_name_the_user_and_file() {
    let (dir, result) = load(&kubeconfig(
        SERVER,
        "{exec: {apiVersion: client.authentication.k8s.io/v1, command: x}}",
        "",
    ));
    let err = result.unwrap_err();
    assert!(
        matches!(
            err,
            ConfigError::Invalid {
                field: "exec.interactiveMode",
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains(&format!(
            "kubeconfig {}: user \"clean\"",
            dir.path().join("config").display()
        )),
        "{err}"
    );
    let err = error(&kubeconfig(
        SERVER,
        "{exec: {apiVersion: client.authentication.k8s.io/v1beta1}}",
        "",
    ));
    assert!(
        matches!(
            err,
            ConfigError::Invalid {
                field: "exec.command",
                ..
            }
        ),
        "{err:?}"
    );
    let err = error(&kubeconfig(SERVER, "{exec: {command: x}}", ""));
    assert!(
        matches!(
            err,
            ConfigError::Invalid {
                field: "exec.apiVersion",
                ..
            }
        ),
        "{err:?}"
    );

    let err = error(&kubeconfig(
        SERVER,
        "{auth-provider: {name: gcp, config: {access-token: ya29.secret}}}",
        "",
    ));
    assert!(
        matches!(&err, ConfigError::AuthProviderUnsupported { provider, .. } if provider == "gcp"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("exec credential plugin") && !err.to_string().contains("ya29"),
        "{err}"
    );
}

#[test]
fn impersonation() {
    // TestFullImpersonateConfig and TestValidateAuthInfoImpersonate*.
    let user = "{token: t, as: alice, as-uid: abc123, as-groups: [group-1], as-user-extra: {some-key: [some-value]}}";
    let config = load(&kubeconfig(SERVER, user, "")).1.unwrap();
    let imp = config.impersonate.unwrap();
    assert_eq!(
        (imp.user.as_str(), imp.uid.as_deref()),
        ("alice", Some("abc123"))
    );
    assert_eq!(imp.groups, ["group-1"]);
    assert_eq!(imp.extra["some-key"], ["some-value"]);
    let err = error(&kubeconfig(SERVER, "{as-groups: [g]}", ""));
    assert!(
        matches!(err, ConfigError::Invalid { field: "as", .. }),
        "{err:?}"
    );
}

#[test]
fn debug_output_never_shows_credentials() {
    let dir = tempfile::tempdir().unwrap();
    let content = format!(
        "clusters:\n- {{name: c, cluster: {{server: 'https://h', proxy-url: 'http://proxyuser:proxy-pass@p:3128'}}}}\n\
         users:\n\
         - {{name: token, user: {{token: token-secret}}}}\n\
         - {{name: basic, user: {{username: admin, password: password-secret}}}}\n\
         - {{name: cert, user: {{client-certificate-data: {}, client-key-data: {}}}}}\n\
         - {{name: exec, user: {{exec: {{apiVersion: client.authentication.k8s.io/v1beta1, command: plugin, args: [arg-secret], env: [{{name: KEY, value: env-secret}}]}}}}}}\n\
         contexts:\n- {{name: token, context: {{cluster: c, user: token}}}}\n- {{name: basic, context: {{cluster: c, user: basic}}}}\n\
         - {{name: cert, context: {{cluster: c, user: cert}}}}\n- {{name: exec, context: {{cluster: c, user: exec}}}}\n",
        b64(CLIENT_CERT_PEM),
        b64(CLIENT_KEY_PEM)
    );
    let path = write(dir.path(), "config", content);
    let key_body = CLIENT_KEY_PEM.lines().nth(1).unwrap();
    for context in ["token", "basic", "cert", "exec"] {
        let options = KubeconfigOptions {
            loading_rules: Some(LoadingRules::explicit(&path)),
            context: Some(context.into()),
            ..Default::default()
        };
        let shown = format!("{:?}", Config::from_kubeconfig(&options).unwrap());
        for secret in [
            "token-secret",
            "password-secret",
            key_body,
            "arg-secret",
            "env-secret",
            "proxy-pass",
            "BEGIN",
        ] {
            assert!(!shown.contains(secret), "{context}: {secret} in {shown}");
        }
    }
}
