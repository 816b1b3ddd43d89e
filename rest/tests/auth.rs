//! Exec plugins (a 401 makes the next request run the plugin again; client certificates from
//! a plugin, rotated), warning headers, and no secret in any error or log line.

mod support;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use clientgo_rest::config::{ExecAuthenticator, ExecConfig, Secret};
use clientgo_rest::{Auth, Config, RestClient, Warning, WarningHandler};
use support::{LogCapture, Pki, Reply, TestServer, status_json};

/// Writes an exec plugin that counts its runs in `count` and prints what `print` says (a shell
/// snippet run with `$n` set to the run number).
fn plugin(dir: &Path, print: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt as _;
    let path = dir.join("plugin.sh");
    let script = format!(
        "#!/bin/sh\nset -e\ndir=\"$(dirname \"$0\")\"\nn=$(( $(cat \"$dir/count\" 2>/dev/null || echo 0) + 1 ))\necho \"$n\" > \"$dir/count\"\n{print}\n"
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn runs(dir: &Path) -> u32 {
    std::fs::read_to_string(dir.join("count")).map_or(0, |s| s.trim().parse().unwrap())
}

fn exec_auth(command: &Path) -> Auth {
    let config = ExecConfig {
        command: command.to_string_lossy().into_owned(),
        api_version: "client.authentication.k8s.io/v1".into(),
        interactive_mode: Some("Never".into()),
        ..ExecConfig::default()
    };
    Auth::Exec(ExecAuthenticator::new(config, None).unwrap())
}

#[tokio::test]
async fn a_401_makes_the_next_request_run_the_plugin_again() {
    let dir = tempfile::tempdir().unwrap();
    let command = plugin(
        dir.path(),
        r#"printf '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"exec-token-%s"}}' "$n""#,
    );
    let server = TestServer::plain(|r, _| match r.header("authorization") {
        Some("Bearer exec-token-1") => {
            Reply::json(401, status_json(401, "Unauthorized", "Unauthorized"))
        }
        _ => Reply::json(200, "{}"),
    })
    .await;
    let mut config =
        Config::new(server.url("http").parse().unwrap()).allowing_insecure_credentials();
    config.qps = -1.0;
    config.auth = exec_auth(&command);
    let client = RestClient::new(&config).unwrap();

    let err = client.get().abs_path("/api").send().await.unwrap_err();
    assert!(err.is_unauthorized(), "{err}");
    assert_eq!(runs(dir.path()), 1);
    assert_eq!(server.count(), 1, "the refused request is not retried");

    client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(runs(dir.path()), 2, "the plugin ran again after the 401");
    assert_eq!(
        server.last().header("authorization"),
        Some("Bearer exec-token-2")
    );

    client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(runs(dir.path()), 2, "the new credential is cached");
}

#[tokio::test]
async fn client_certificates_from_a_plugin_are_presented_and_rotated() {
    let serving = Pki::new("serving-ca");
    let clients = Pki::new("client-ca");
    let dir = tempfile::tempdir().unwrap();
    for (n, user) in [(1, "first"), (2, "second")] {
        let (cert, key) = clients.client(user);
        let credential = serde_json::json!({
            "apiVersion": "client.authentication.k8s.io/v1",
            "kind": "ExecCredential",
            "status": {"clientCertificateData": cert, "clientKeyData": key},
        });
        std::fs::write(
            dir.path().join(format!("credential-{n}.json")),
            credential.to_string(),
        )
        .unwrap();
    }
    let command = plugin(dir.path(), r#"cat "$dir/credential-$n.json""#);
    let first_cert: Arc<Mutex<Option<Vec<u8>>>> = Arc::default();
    let seen_first = first_cert.clone();
    let server = TestServer::start(
        Some(serving.server_config(&["127.0.0.1"], &[b"h2", b"http/1.1"], Some(&clients))),
        move |r, i| {
            if i == 0 {
                *seen_first.lock().unwrap() = r.peer_cert.clone();
                return Reply::json(401, status_json(401, "Unauthorized", "Unauthorized"));
            }
            Reply::json(200, "{}")
        },
    )
    .await;
    let mut config = Config::new(server.url("https").parse().unwrap());
    config.tls.ca_pem = Some(serving.ca_pem.clone().into_bytes());
    config.auth = exec_auth(&command);
    let client = RestClient::new(&config).unwrap();

    let err = client.get().abs_path("/api").send().await.unwrap_err();
    assert!(err.is_unauthorized());
    client.get().abs_path("/api").send().await.unwrap();
    assert_eq!(runs(dir.path()), 2);
    let requests = server.requests();
    assert!(requests.iter().all(|r| r.client_cert));
    assert_ne!(
        requests[0].peer_cert, requests[1].peer_cert,
        "the rotated certificate is used"
    );
    assert_eq!(
        server.connections(),
        2,
        "a new connection for the new certificate"
    );
}

struct Collect(Arc<Mutex<Vec<Warning>>>);

impl WarningHandler for Collect {
    fn handle_warning(&self, warning: &Warning) {
        self.0.lock().unwrap().push(warning.clone());
    }
}

fn warning_server() -> impl Fn(&support::Recorded, usize) -> Reply + Send + Sync + 'static {
    |r, _| {
        let reply = if r.uri.contains("fail") {
            Reply::json(404, status_json(404, "NotFound", "nope"))
        } else {
            Reply::json(200, "{}")
        };
        reply
            .with_header(
                "warning",
                r#"299 - "extensions/v1beta1 Ingress is deprecated", 299 - "second one""#,
            )
            .with_header("warning", r#"299 - "a \"quoted\" word""#)
    }
}

#[tokio::test]
async fn warnings_reach_the_handler_in_order_for_every_response() {
    let server = TestServer::plain(warning_server()).await;
    let mut config =
        Config::new(server.url("http").parse().unwrap()).allowing_insecure_credentials();
    config.qps = -1.0;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let client = RestClient::builder(config)
        .warning_handler(Collect(seen.clone()))
        .build()
        .unwrap();
    client.get().abs_path("/ok").send().await.unwrap();
    client.get().abs_path("/fail").send().await.unwrap_err();
    let texts: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|w| w.text.clone())
        .collect();
    let one = [
        "extensions/v1beta1 Ingress is deprecated",
        "second one",
        "a \"quoted\" word",
    ];
    assert_eq!(texts, [one, one].concat());
}

#[test]
fn the_default_handler_logs_each_text_once() {
    let logs = LogCapture::default();
    let _guard = logs.install();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let server = TestServer::plain(warning_server()).await;
        let mut config =
            Config::new(server.url("http").parse().unwrap()).allowing_insecure_credentials();
        config.qps = -1.0;
        let client = RestClient::new(&config).unwrap();
        for _ in 0..3 {
            client.get().abs_path("/ok").send().await.unwrap();
        }
    });
    let text = logs.text();
    assert_eq!(
        text.matches("extensions/v1beta1 Ingress is deprecated")
            .count(),
        1,
        "{text}"
    );
    assert_eq!(text.matches("second one").count(), 1, "{text}");
}

const TOKEN: &str = "tok-3f9a0b7c1d2e-SECRET";
const PASSWORD: &str = "pw-77aa88bb-SECRET";

/// Every way a request can fail or be logged, with credentials configured: nothing shows them.
#[test]
fn no_secret_reaches_an_error_or_a_log() {
    let logs = LogCapture::default();
    let _guard = logs.install();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let pki = Pki::new("cluster-ca");
    let (cert_pem, key_pem) = pki.client("alice");
    let key_body: String = key_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let mut texts: Vec<String> = Vec::new();
    runtime.block_on(async {
        let server = TestServer::plain(|r, i| match i % 4 {
            0 => Reply::json(401, status_json(401, "Unauthorized", "Unauthorized")),
            1 => Reply::json(500, "{}").with_header("retry-after", "0"),
            2 => Reply::Close,
            _ => Reply::text(403, "text/plain", &format!("forbidden for {}", r.uri)),
        })
        .await;
        let auths = [
            Auth::Bearer(Secret::from(TOKEN)),
            Auth::Basic {
                username: "admin".into(),
                password: Secret::from(PASSWORD),
            },
        ];
        for auth in auths {
            let mut config =
                Config::new(server.url("http").parse().unwrap()).allowing_insecure_credentials();
            config.auth = auth;
            config.qps = -1.0;
            config.tls.client_cert_pem = Some(cert_pem.clone().into_bytes());
            config.tls.client_key_pem = Some(Secret::new(key_pem.clone().into_bytes()));
            texts.push(format!("{config:?}"));
            let client = RestClient::new(&config).unwrap();
            texts.push(format!("{client:?}"));
            for _ in 0..4 {
                let request = client.post().abs_path("/api/v1/namespaces").body("{}");
                texts.push(format!("{request:?}"));
                if let Err(e) = request.send().await {
                    texts.push(e.to_string());
                    texts.push(format!("{e:?}"));
                }
            }
            // TLS failures with a client key configured.
            let mut tls = config.clone();
            tls.cluster_url = server.url("https").parse().unwrap();
            tls.tls.ca_pem = Some(pki.ca_pem.clone().into_bytes());
            let err = RestClient::new(&tls)
                .unwrap()
                .get()
                .abs_path("/api")
                .send()
                .await
                .unwrap_err();
            texts.push(err.to_string());
            texts.push(format!("{err:?}"));
        }
    });
    let logged = logs.text();
    assert!(
        logged.contains("error response"),
        "debug logging was on:\n{logged}"
    );
    texts.push(logged);
    let basic = "YWRtaW46cHctNzdhYTg4YmItU0VDUkVU"; // base64("admin:pw-77aa88bb-SECRET")
    for text in &texts {
        for secret in [
            TOKEN,
            PASSWORD,
            basic,
            &key_body[..40],
            "Authorization",
            "authorization",
        ] {
            assert!(!text.contains(secret), "{secret:?} found in:\n{text}");
        }
    }
}
