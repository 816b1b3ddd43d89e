//! Exec plugin tests, ported from client-go `exec_test.go` (`TestRefreshCreds`, the round
//! tripper's 401 handling) with small shell scripts as plugins. Expiry is driven by a fake
//! clock, never by sleeping.

use super::*;
use crate::config::testutil::{
    CA_PEM, CLIENT_CERT_PEM, CLIENT_KEY_PEM, FakeClock, write, write_script,
};
use crate::config::{ExecEnvVar, RedactedArgs};
use std::path::Path;
use std::time::Duration;

/// Writes `$KUBERNETES_EXEC_INFO` to `$INFO_FILE`, counts runs in `$COUNT_FILE`, prints
/// `$OUTPUT_FILE`, writes `$STDERR_TEXT` to stderr and exits with `$EXIT_CODE`.
const PLUGIN: &str = r#"printf '%s' "$KUBERNETES_EXEC_INFO" > "$INFO_FILE"
echo run >> "$COUNT_FILE"
cat "$OUTPUT_FILE"
if [ -n "$STDERR_TEXT" ]; then printf '%s\n' "$STDERR_TEXT" >&2; fi
exit "${EXIT_CODE:-0}""#;

struct Plugin {
    dir: tempfile::TempDir,
    config: ExecConfig,
}

impl Plugin {
    fn new(api_version: &str, output: &str) -> Plugin {
        let dir = tempfile::tempdir().unwrap();
        let script = write_script(dir.path(), "plugin.sh", PLUGIN);
        let output_file = write(dir.path(), "output.json", output);
        let var = |name: &str, value: &Path| ExecEnvVar {
            name: name.to_owned(),
            value: Secret::new(value.display().to_string()),
        };
        let config = ExecConfig {
            command: script.display().to_string(),
            api_version: api_version.to_owned(),
            env: vec![
                var("INFO_FILE", &dir.path().join("info.json")),
                var("COUNT_FILE", &dir.path().join("count")),
                var("OUTPUT_FILE", &output_file),
            ],
            ..ExecConfig::default()
        };
        Plugin { dir, config }
    }

    fn env(mut self, name: &str, value: &str) -> Self {
        self.config.env.push(ExecEnvVar {
            name: name.to_owned(),
            value: Secret::from(value),
        });
        self
    }

    fn set_output(&self, output: &str) {
        write(self.dir.path(), "output.json", output);
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.dir.path().join("count"))
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn input(&self) -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.path().join("info.json")).unwrap())
            .unwrap()
    }

    fn authenticator(&self, clock: &FakeClock) -> ExecAuthenticator {
        self.authenticator_with(clock, None, || false)
    }

    fn authenticator_with(
        &self,
        clock: &FakeClock,
        cluster: Option<ExecClusterInfo>,
        tty: fn() -> bool,
    ) -> ExecAuthenticator {
        ExecAuthenticator::build(self.config.clone(), cluster, clock.clock(), tty).unwrap()
    }
}

fn token_output(api_version: &str, token: &str) -> String {
    serde_json::json!({"kind": "ExecCredential", "apiVersion": api_version, "status": {"token": token}}).to_string()
}

fn token_of(c: &ExecCredential) -> &str {
    c.token.as_ref().unwrap().expose()
}

#[tokio::test]
async fn v1beta1_token_and_its_input() {
    let plugin = Plugin::new(EXEC_API_V1BETA1, &token_output(EXEC_API_V1BETA1, "foo-bar"));
    let credential = plugin
        .authenticator(&FakeClock::new())
        .credential()
        .await
        .unwrap();
    assert_eq!(token_of(&credential), "foo-bar");
    assert_eq!(credential.expiration, None);
    assert_eq!(
        plugin.input(),
        serde_json::json!({"kind": "ExecCredential", "apiVersion": EXEC_API_V1BETA1, "spec": {"interactive": false}})
    );
}

#[tokio::test]
async fn v1_token_with_explicit_interactive_mode() {
    let mut plugin = Plugin::new(EXEC_API_V1, &token_output(EXEC_API_V1, "v1-token"));
    plugin.config.interactive_mode = Some("IfAvailable".to_owned());
    let credential = plugin
        .authenticator(&FakeClock::new())
        .credential()
        .await
        .unwrap();
    assert_eq!(token_of(&credential), "v1-token");
    assert_eq!(plugin.input()["apiVersion"], EXEC_API_V1);
}

#[test]
fn v1_requires_interactive_mode_and_unknown_versions_are_refused() {
    let plugin = Plugin::new(EXEC_API_V1, "");
    let err = ExecAuthenticator::new(plugin.config.clone(), None).unwrap_err();
    assert!(matches!(err, ConfigError::ExecConfig { .. }), "{err:?}");
    assert!(err.to_string().contains("interactiveMode"), "{err}");

    let mut config = plugin.config.clone();
    config.api_version = "client.authentication.k8s.io/v1alpha1".to_owned();
    let err = ExecAuthenticator::new(config.clone(), None).unwrap_err();
    assert!(
        err.to_string().contains("v1alpha1\" is not supported"),
        "{err}"
    );
    config.api_version = EXEC_API_V1BETA1.to_owned();
    config.interactive_mode = Some("Sometimes".to_owned());
    assert!(ExecAuthenticator::new(config, None).is_err());
}

#[tokio::test]
async fn interactive_modes() {
    let mut plugin = Plugin::new(EXEC_API_V1BETA1, &token_output(EXEC_API_V1BETA1, "t"));
    let clock = FakeClock::new();
    // IfAvailable with a terminal: interactive.
    plugin
        .authenticator_with(&clock, None, || true)
        .credential()
        .await
        .unwrap();
    assert_eq!(plugin.input()["spec"]["interactive"], true);
    // Never, even with a terminal.
    plugin.config.interactive_mode = Some("Never".to_owned());
    plugin
        .authenticator_with(&clock, None, || true)
        .credential()
        .await
        .unwrap();
    assert_eq!(plugin.input()["spec"]["interactive"], false);
    // Always without a terminal: refused before running.
    plugin.config.interactive_mode = Some("Always".to_owned());
    let err = plugin
        .authenticator_with(&clock, None, || false)
        .credential()
        .await
        .unwrap_err();
    assert!(
        matches!(err, ConfigError::ExecNotInteractive { .. }),
        "{err:?}"
    );
    assert_eq!(plugin.runs(), 2);
}

#[tokio::test]
async fn client_certificate_credentials() {
    let output = serde_json::json!({"kind": "ExecCredential", "apiVersion": EXEC_API_V1BETA1,
        "status": {"clientCertificateData": CLIENT_CERT_PEM, "clientKeyData": CLIENT_KEY_PEM}});
    let plugin = Plugin::new(EXEC_API_V1BETA1, &output.to_string());
    let credential = plugin
        .authenticator(&FakeClock::new())
        .credential()
        .await
        .unwrap();
    assert!(credential.token.is_none());
    assert_eq!(
        credential.client_certificate_pem.as_deref(),
        Some(CLIENT_CERT_PEM.as_bytes())
    );
    assert_eq!(
        credential.client_key_pem.as_ref().unwrap().expose(),
        CLIENT_KEY_PEM.as_bytes()
    );
    let shown = format!("{credential:?}");
    assert!(
        !shown.contains("PRIVATE KEY") && !shown.contains("BEGIN"),
        "{shown}"
    );
}

#[tokio::test]
async fn cluster_info_is_sent_only_with_provide_cluster_info() {
    let cluster = ExecClusterInfo {
        server: "https://prod.example:6443".to_owned(),
        tls_server_name: Some("api.internal".to_owned()),
        certificate_authority_data: Some(b"baz".to_vec()),
        config: Some(serde_json::json!({"audience": "snorlax"})),
        ..ExecClusterInfo::default()
    };
    let mut plugin = Plugin::new(EXEC_API_V1BETA1, &token_output(EXEC_API_V1BETA1, "t"));
    let clock = FakeClock::new();
    plugin
        .authenticator_with(&clock, Some(cluster.clone()), || false)
        .credential()
        .await
        .unwrap();
    assert_eq!(
        plugin.input()["spec"],
        serde_json::json!({"interactive": false})
    );

    plugin.config.provide_cluster_info = true;
    plugin
        .authenticator_with(&clock, Some(cluster), || false)
        .credential()
        .await
        .unwrap();
    assert_eq!(
        plugin.input()["spec"]["cluster"],
        serde_json::json!({"server": "https://prod.example:6443", "tls-server-name": "api.internal",
            "certificate-authority-data": "YmF6", "config": {"audience": "snorlax"}})
    );
}

#[tokio::test]
async fn args_and_env_reach_the_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let script = write_script(
        dir.path(),
        "echo-token.sh",
        r#"printf '{"apiVersion":"client.authentication.k8s.io/v1beta1","kind":"ExecCredential","status":{"token":"%s-%s"}}' "$1" "$SECRET_PART""#,
    );
    let config = ExecConfig {
        command: script.display().to_string(),
        args: RedactedArgs(vec!["from-arg".to_owned()]),
        env: vec![ExecEnvVar {
            name: "SECRET_PART".to_owned(),
            value: Secret::from("from-env"),
        }],
        api_version: EXEC_API_V1BETA1.to_owned(),
        ..ExecConfig::default()
    };
    let auth = ExecAuthenticator::new(config, None).unwrap();
    assert_eq!(
        token_of(&auth.credential().await.unwrap()),
        "from-arg-from-env"
    );
    let shown = format!("{auth:?}");
    assert!(
        !shown.contains("from-env") && !shown.contains("from-arg"),
        "{shown}"
    );
}

#[tokio::test]
async fn credential_is_cached_until_it_expires() {
    let clock = FakeClock::new(); // 2030-01-01T00:00:00Z
    let output = |token: &str| {
        serde_json::json!({"kind": "ExecCredential", "apiVersion": EXEC_API_V1BETA1,
        "status": {"token": token, "expirationTimestamp": "2030-01-01T00:10:00Z"}})
        .to_string()
    };
    let plugin = Plugin::new(EXEC_API_V1BETA1, &output("first"));
    let auth = plugin.authenticator(&clock);

    let first = auth.credential().await.unwrap();
    assert_eq!(
        first.expiration,
        Some(clock.now() + Duration::from_secs(600))
    );
    plugin.set_output(&output("second"));
    clock.advance(Duration::from_secs(600));
    assert_eq!(
        token_of(&auth.credential().await.unwrap()),
        "first",
        "valid up to its expiry"
    );
    assert_eq!(plugin.runs(), 1);
    clock.advance(Duration::from_secs(1));
    assert!(auth.cached().is_none());
    assert_eq!(token_of(&auth.credential().await.unwrap()), "second");
    assert_eq!(plugin.runs(), 2);
}

#[tokio::test]
async fn credential_without_expiry_is_kept_and_expired_one_is_rerun() {
    let plugin = Plugin::new(EXEC_API_V1BETA1, &token_output(EXEC_API_V1BETA1, "forever"));
    let clock = FakeClock::new();
    let auth = plugin.authenticator(&clock);
    auth.credential().await.unwrap();
    clock.advance(Duration::from_secs(365 * 24 * 3600));
    auth.credential().await.unwrap();
    assert_eq!(plugin.runs(), 1);

    plugin.set_output(r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"old","expirationTimestamp":"2006-01-02T15:04:05Z"}}"#);
    let expired = plugin.authenticator(&clock);
    let credential = expired.credential().await.unwrap();
    assert_eq!(
        credential.expiration,
        Some(SystemTime::UNIX_EPOCH + Duration::from_secs(1_136_214_245))
    );
    expired.credential().await.unwrap();
    assert_eq!(
        plugin.runs(),
        3,
        "an already expired credential is fetched again on every call"
    );
}

#[tokio::test]
async fn invalidation_after_401_reruns_once() {
    let plugin = Plugin::new(
        EXEC_API_V1BETA1,
        &token_output(EXEC_API_V1BETA1, "rejected"),
    );
    let auth = plugin.authenticator(&FakeClock::new());
    let used = auth.credential().await.unwrap();
    plugin.set_output(&token_output(EXEC_API_V1BETA1, "fresh"));

    assert!(
        auth.invalidate_if_current(&used),
        "first 401 drops the credential"
    );
    let fresh = auth.credential().await.unwrap();
    assert_eq!(token_of(&fresh), "fresh");
    assert!(
        !auth.invalidate_if_current(&used),
        "a late 401 for the old credential is ignored"
    );
    assert_eq!(token_of(&auth.credential().await.unwrap()), "fresh");
    assert_eq!(plugin.runs(), 2);

    auth.invalidate();
    auth.credential().await.unwrap();
    assert_eq!(plugin.runs(), 3);
}

#[tokio::test]
async fn concurrent_callers_share_one_run() {
    let plugin = Plugin::new(EXEC_API_V1BETA1, &token_output(EXEC_API_V1BETA1, "shared"));
    let auth = plugin.authenticator(&FakeClock::new());
    let clone = auth.clone();
    let (a, b, c) = tokio::join!(auth.credential(), auth.credential(), clone.credential());
    assert!(Arc::ptr_eq(&a.unwrap(), &b.unwrap()));
    assert_eq!(token_of(&c.unwrap()), "shared");
    assert_eq!(plugin.runs(), 1);
}

async fn failure(plugin: &Plugin) -> ConfigError {
    plugin
        .authenticator(&FakeClock::new())
        .credential()
        .await
        .unwrap_err()
}

#[tokio::test]
async fn missing_executable_shows_the_install_hint() {
    let mut plugin = Plugin::new(EXEC_API_V1BETA1, "");
    plugin.config.command = plugin
        .dir
        .path()
        .join("does-not-exist")
        .display()
        .to_string();
    plugin.config.install_hint = Some("brew install \x1b[1mthing\x1b[0m\nthen retry".to_owned());
    let err = failure(&plugin).await;
    assert!(matches!(err, ConfigError::ExecNotFound { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.contains("does-not-exist") && msg.contains("not found"),
        "{msg}"
    );
    assert!(
        msg.contains("brew install U+001B[1mthingU+001B[0m\nthen retry"),
        "{msg}"
    );

    plugin.config.command = "clientgo-rs-no-such-plugin-in-path".to_owned();
    assert!(matches!(
        failure(&plugin).await,
        ConfigError::ExecNotFound { .. }
    ));
}

#[tokio::test]
async fn failing_plugin_reports_exit_code_and_stderr_but_not_stdout() {
    let plugin = Plugin::new(
        EXEC_API_V1BETA1,
        &token_output(EXEC_API_V1BETA1, "stdout-token"),
    )
    .env("EXIT_CODE", "73")
    .env("STDERR_TEXT", "error: login required");
    let err = failure(&plugin).await;
    let ConfigError::ExecFailed {
        command,
        status,
        stderr,
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(command.ends_with("plugin.sh"));
    assert!(status.contains("73"), "{status}");
    assert_eq!(stderr, "error: login required");
    let msg = err.to_string();
    assert!(
        msg.contains("73") && msg.contains("login required") && !msg.contains("stdout-token"),
        "{msg}"
    );
}

#[test]
fn stderr_excerpt_keeps_the_last_kib() {
    let long = format!("{}THE END", "é".repeat(1000));
    let excerpt = stderr_excerpt(long.as_bytes());
    assert!(
        excerpt.starts_with('…') && excerpt.ends_with("THE END"),
        "{excerpt}"
    );
    assert!(excerpt.len() <= 1024 + '…'.len_utf8());
}

#[tokio::test]
async fn bad_output_is_a_typed_error_that_never_quotes_the_output() {
    let v = EXEC_API_V1BETA1;
    let cases: Vec<(String, &str)> = vec![
        ("token: secret-in-yaml-not-json".to_owned(), "ExecBadJson"),
        (r#"{"kind":"ExecCredential","apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"secret-but-truncated""#.to_owned(), "ExecBadJson"),
        (r#"["secret-in-array"]"#.to_owned(), "(output)"),
        (r#"{"kind":"ExecCredential","status":{"token":"secret-no-version"}}"#.to_owned(), "ExecWrongType"),
        (token_output(EXEC_API_V1, "secret-wrong-version"), "ExecWrongType"),
        (format!(r#"{{"kind":"Secret","apiVersion":"{v}","status":{{"token":"secret-wrong-kind"}}}}"#), "ExecWrongType"),
        (format!(r#"{{"kind":"ExecCredential","apiVersion":"{v}"}}"#), "status"),
        (format!(r#"{{"kind":"ExecCredential","apiVersion":"{v}","status":{{}}}}"#), "status"),
        (format!(r#"{{"kind":"ExecCredential","apiVersion":"{v}","status":{{"token":12345678}}}}"#), "status.token"),
        (format!(r#"{{"kind":"ExecCredential","apiVersion":"{v}","status":{{"clientCertificateData":{}}}}}"#, serde_json::json!(CLIENT_CERT_PEM)), "status.clientKeyData"),
        (format!(r#"{{"kind":"ExecCredential","apiVersion":"{v}","status":{{"clientKeyData":{}}}}}"#, serde_json::json!(CLIENT_KEY_PEM)), "status.clientCertificateData"),
        (format!(r#"{{"kind":"ExecCredential","apiVersion":"{v}","status":{{"clientCertificateData":"foo","clientKeyData":"secret-bar"}}}}"#), "status.clientCertificateData"),
        (format!(r#"{{"kind":"ExecCredential","apiVersion":"{v}","status":{{"clientCertificateData":{},"clientKeyData":{}}}}}"#, serde_json::json!(CLIENT_CERT_PEM), serde_json::json!(CA_PEM)), "status.clientKeyData"),
        (format!(r#"{{"kind":"ExecCredential","apiVersion":"{v}","status":{{"token":"secret-t","expirationTimestamp":"tomorrow"}}}}"#), "status.expirationTimestamp"),
    ];
    for (output, expected) in cases {
        let plugin = Plugin::new(v, &output);
        let err = failure(&plugin).await;
        let kind = match &err {
            ConfigError::ExecBadJson { .. } => "ExecBadJson",
            ConfigError::ExecWrongType { .. } => "ExecWrongType",
            ConfigError::ExecInvalidCredential { field, .. } => field,
            other => panic!("{output}: unexpected {other:?}"),
        };
        assert_eq!(kind, expected, "{output}: {err}");
        let msg = err.to_string();
        assert!(msg.contains("plugin.sh"), "names the plugin: {msg}");
        for leak in ["secret", "12345678", "-----BEGIN"] {
            assert!(!msg.contains(leak), "{output}: {msg}");
        }
    }
}

#[test]
fn control_characters_are_escaped() {
    assert_eq!(escape_control_chars("a\x1b[1mb\tc\n"), "aU+001B[1mb\tc\n");
}

/// Prints `$OUTPUT_FILE` unless `$HANG_FILE` exists, in which case it hangs (as `sleep`, so
/// that killing the plugin kills the sleep), after writing `$STDERR_BYTES` bytes to stderr.
const SLOW_PLUGIN: &str = r#"if [ -n "$STDERR_BYTES" ]; then head -c "$STDERR_BYTES" /dev/zero >&2; fi
if [ -e "$HANG_FILE" ]; then exec sleep 1000; fi
cat "$OUTPUT_FILE""#;

fn slow_plugin(dir: &Path, output: &str) -> ExecConfig {
    let script = write_script(dir, "slow.sh", SLOW_PLUGIN);
    let output_file = write(dir, "output.json", output);
    let var = |name: &str, value: String| ExecEnvVar {
        name: name.to_owned(),
        value: Secret::new(value),
    };
    ExecConfig {
        command: script.display().to_string(),
        api_version: EXEC_API_V1BETA1.to_owned(),
        args: RedactedArgs(vec!["--secret-arg=arg-secret-value".into()]),
        env: vec![
            var("OUTPUT_FILE", output_file.display().to_string()),
            var("HANG_FILE", dir.join("hang").display().to_string()),
            var("SECRET_ENV", "env-secret-value".to_owned()),
        ],
        ..ExecConfig::default()
    }
}

/// Real time, not tokio's paused clock: the plugin is a real process, and tokio would move a
/// paused clock past the time limit while it starts. So the limit is small (300 ms) where the
/// plugin hangs, and large (30 s, never reached) where it answers.
#[tokio::test]
async fn a_hung_exec_plugin_times_out_with_an_error_naming_the_command_only() {
    let dir = tempfile::tempdir().unwrap();
    let config = slow_plugin(dir.path(), &token_output(EXEC_API_V1BETA1, "after-hang"));
    write(dir.path(), "hang", "");
    let auth =
        ExecAuthenticator::build(config.clone(), None, FakeClock::new().clock(), || false).unwrap();
    auth.set_timeout(Duration::from_millis(300));
    let waiter = auth.clone();
    // One caller runs the plugin, the other waits for that run: both end at the limit.
    let (running, waiting) = tokio::time::timeout(Duration::from_secs(60), async {
        tokio::join!(auth.credential(), waiter.credential())
    })
    .await
    .expect("both calls end");
    for error in [running.unwrap_err(), waiting.unwrap_err()] {
        assert!(
            matches!(error, ConfigError::ExecTimeout { ref command, .. } if *command == config.command),
            "{error}"
        );
        let text = error.to_string();
        assert!(text.contains(&config.command), "{text}");
        assert!(text.contains("300ms"), "{text}");
        assert!(!text.contains("arg-secret-value") && !text.contains("env-secret-value"));
    }
    // The lock is free again: a plugin that answers now gives a credential.
    std::fs::remove_file(dir.path().join("hang")).unwrap();
    auth.set_timeout(Duration::from_secs(30));
    assert_eq!(token_of(&auth.credential().await.unwrap()), "after-hang");
}

#[tokio::test]
async fn exec_plugin_output_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    // Megabytes of standard error are drained (the plugin is not blocked) and dropped.
    let mut config = slow_plugin(dir.path(), &token_output(EXEC_API_V1BETA1, "noisy"));
    config.env.push(ExecEnvVar {
        name: "STDERR_BYTES".into(),
        value: Secret::from("5000000"),
    });
    let auth = ExecAuthenticator::build(config, None, FakeClock::new().clock(), || false).unwrap();
    assert_eq!(token_of(&auth.credential().await.unwrap()), "noisy");

    // More standard output than a credential can be is refused.
    let big = format!("{{\"padding\":\"{}\"}}", "x".repeat(MAX_EXEC_STDOUT + 1));
    let config = slow_plugin(dir.path(), &big);
    let auth =
        ExecAuthenticator::build(config.clone(), None, FakeClock::new().clock(), || false).unwrap();
    let error = auth.credential().await.unwrap_err();
    assert!(
        matches!(error, ConfigError::ExecOutputTooLarge { limit, .. } if limit == MAX_EXEC_STDOUT),
        "{error}"
    );
    assert!(error.to_string().contains(&config.command));
}

#[tokio::test]
async fn read_capped_keeps_the_tail_or_refuses() {
    let data: &[u8] = b"0123456789";
    assert_eq!(
        read_capped(Some(data), 4, true).await.unwrap().unwrap(),
        b"6789"
    );
    assert!(read_capped(Some(data), 4, false).await.unwrap().is_none());
    assert_eq!(
        read_capped(Some(data), 10, false).await.unwrap().unwrap(),
        data
    );
}

/// A plugin that leaves a grandchild holding its standard error, then hangs: at the time
/// limit the plugin is killed, and the task reading its standard error is aborted rather than
/// left waiting for a pipe the grandchild keeps open. Real time (see the test above).
#[tokio::test]
async fn a_timed_out_plugin_leaves_no_reader_behind_when_a_grandchild_holds_its_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let pid_file = dir.path().join("grandchild.pid");
    let script = write_script(
        dir.path(),
        "leaky.sh",
        &format!(
            "sleep 30 >&2 &\necho $! > {}\nexec sleep 1000",
            pid_file.display()
        ),
    );
    let config = ExecConfig {
        command: script.display().to_string(),
        api_version: EXEC_API_V1BETA1.to_owned(),
        ..ExecConfig::default()
    };
    let auth = ExecAuthenticator::build(config, None, FakeClock::new().clock(), || false).unwrap();
    auth.set_timeout(Duration::from_millis(300));
    let error = auth.credential().await.unwrap_err();
    assert!(matches!(error, ConfigError::ExecTimeout { .. }), "{error}");
    // The grandchild still holds the pipe; the reader is gone (an abort takes a moment).
    let mut readers = auth.stderr_readers();
    for _ in 0..100 {
        if readers == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
        readers = auth.stderr_readers();
    }
    let grandchild = std::fs::read_to_string(&pid_file).unwrap();
    let alive = std::process::Command::new("kill")
        .args(["-0", grandchild.trim()])
        .status()
        .unwrap()
        .success();
    let _ = std::process::Command::new("kill")
        .arg(grandchild.trim())
        .status();
    assert!(
        alive,
        "the grandchild should still hold the pipe when the run ends"
    );
    assert_eq!(
        readers, 0,
        "a standard-error reader outlived its timed-out run"
    );
}
