//! Credentials never reach the logs: every code path that logs is driven with secrets in play
//! and everything logged, at every level, is searched for them.

use std::time::Duration;

use super::testutil::{
    CLIENT_CERT_PEM, CLIENT_KEY_PEM, FakeClock, LogCapture, write, write_script,
};
use super::*;
use base64::Engine as _;

const SECRETS: [&str; 6] = [
    "token-secret-1",
    "token-secret-2",
    "password-secret",
    "plugin-token-secret",
    "env-secret",
    "MIGHAgEAMBMGByqGSM49",
];

#[tokio::test]
async fn secrets_never_reach_the_logs() {
    let logs = LogCapture::default();
    let _guard = logs.install();
    let dir = tempfile::tempdir().unwrap();
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);

    // A token file whose re-read fails after a good read (warning), then a fallback (debug).
    let token_path = write(dir.path(), "token", "token-secret-1");
    let clock = FakeClock::new();
    let file = TokenFile::with_clock(&token_path, None, clock.clock());
    file.token().unwrap();
    std::fs::remove_file(&token_path).unwrap();
    clock.advance(TOKEN_FILE_REFRESH + Duration::from_secs(1));
    file.token().unwrap();
    TokenFile::new(&token_path, Some(Secret::from("token-secret-2")))
        .token()
        .unwrap();

    // Credentials configured for a plain-http server (warning), an exec plugin skipped for a
    // client certificate (debug), an exec plugin run that writes to stderr (debug).
    let plugin = write_script(
        dir.path(),
        "plugin.sh",
        r#"echo "using $PLUGIN_ENV" | sed 's/env-secret/[hidden]/' >&2
echo '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"plugin-token-secret"}}'"#,
    );
    let exec = format!(
        "exec: {{apiVersion: client.authentication.k8s.io/v1beta1, command: '{}', env: [{{name: PLUGIN_ENV, value: env-secret}}]}}",
        plugin.display()
    );
    let content = format!(
        "clusters:\n- {{name: http, cluster: {{server: 'http://h:8080'}}}}\n- {{name: https, cluster: {{server: 'https://h'}}}}\n\
         users:\n- {{name: basic, user: {{username: u, password: password-secret}}}}\n\
         - {{name: cert, user: {{client-certificate-data: {}, client-key-data: {}, {exec}}}}}\n\
         - {{name: exec, user: {{{exec}}}}}\n\
         contexts:\n- {{name: http, context: {{cluster: http, user: basic}}}}\n\
         - {{name: cert, context: {{cluster: https, user: cert}}}}\n\
         - {{name: exec, context: {{cluster: https, user: exec}}}}\n",
        b64(CLIENT_CERT_PEM),
        b64(CLIENT_KEY_PEM)
    );
    let path = write(dir.path(), "config", content);
    let options = |context: &str| KubeconfigOptions {
        loading_rules: Some(LoadingRules::explicit(&path)),
        context: Some(context.into()),
        ..KubeconfigOptions::default()
    };
    Config::from_kubeconfig(&options("http")).unwrap();
    Config::from_kubeconfig(&options("cert")).unwrap();
    let config = Config::from_kubeconfig(&options("exec")).unwrap();
    let Auth::Exec(authenticator) = &config.auth else {
        panic!("expected an exec plugin")
    };
    let credential = authenticator.credential().await.unwrap();
    assert_eq!(
        credential.token.as_ref().unwrap().expose(),
        "plugin-token-secret"
    );

    // In-cluster configuration with an unusable CA (warning).
    let sa = dir.path().join("sa");
    write(&sa, "token", "token-secret-1");
    write(&sa, "ca.crt", CLIENT_KEY_PEM);
    let env = InClusterEnv {
        service_host: Some("10.0.0.1".into()),
        service_port: Some("443".into()),
        ..InClusterEnv::with_service_account_dir(&sa)
    };
    Config::in_cluster_with(&env).unwrap();

    let text = logs.text();
    for expected in [
        "unable to rotate the bearer token",
        "plain http",
        "exec plugin not used",
        "wrote to stderr",
        "[hidden]",
        "in-cluster CA",
    ] {
        assert!(
            text.contains(expected),
            "expected a log line with {expected:?} in:\n{text}"
        );
    }
    for secret in SECRETS {
        assert!(!text.contains(secret), "{secret} was logged:\n{text}");
    }
}
