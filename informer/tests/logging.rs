//! What a user reads when an informer cannot do its job: the first failure at WARN with its
//! cause and what to check, repeats held back (one WARN reminder a minute), the recovery at
//! INFO; the informer named as the user named it, never by its Rust type; no word of a
//! streaming-list fallback when the cause was something else. Paused clock.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use clientgo_apimachinery::{ApiResource, DynamicObject};
use clientgo_apiserver_sim::{ApiServerSim, SimConfig};
use clientgo_envtest::ControlPlane;
use clientgo_informer::{Indexers, ListWatch, SharedIndexInformer, SharedInformerOptions};
use clientgo_rest::config::{Auth, Config};
use clientgo_rest::{DynamicClient, PostParams, RestClient};
use parking_lot::Mutex;
use tokio_util::sync::CancellationToken;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.lock().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Captured {
    /// The captured lines at `level` or above (`WARN`, `INFO`, ...).
    fn lines(&self, level: &str) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock())
            .lines()
            .filter(|l| l.trim_start().starts_with(level))
            .map(str::to_owned)
            .collect()
    }
}

/// Captures this thread's log lines at INFO and above (the test's runtime runs every task on
/// this thread, so the default subscriber sees them).
fn capture() -> (Captured, tracing::subscriber::DefaultGuard) {
    capture_at(tracing::Level::INFO)
}

/// Captures this thread's log lines at `level` and above.
fn capture_at(level: tracing::Level) -> (Captured, tracing::subscriber::DefaultGuard) {
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .without_time()
        .with_target(false)
        .with_max_level(level)
        .finish();
    (captured, tracing::subscriber::set_default(subscriber))
}

fn widgets() -> ApiResource {
    ApiResource {
        group: "example.com".into(),
        version: "v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
        namespaced: true,
    }
}

fn informer(client: &RestClient) -> SharedIndexInformer<DynamicObject> {
    SharedIndexInformer::new(
        ListWatch::new(DynamicClient::from_api_resource(
            client,
            &widgets(),
            Some("default"),
        )),
        Indexers::default(),
        SharedInformerOptions {
            name: "widgets.v1.example.com".into(),
            ..SharedInformerOptions::default()
        },
    )
}

const CRD: &str = r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}"#;

#[tokio::test(start_paused = true)]
async fn a_resource_not_served_is_said_once_with_its_cause_then_the_recovery() {
    let (captured, _guard) = capture();

    let sim = ApiServerSim::start(SimConfig::default()).await.unwrap();
    let client = RestClient::new(&Config::new(sim.url().parse().unwrap())).unwrap();
    let informer = informer(&client);
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });

    // 50 s of failed attempts: the CRD is not installed.
    tokio::time::sleep(Duration::from_secs(50)).await;
    assert!(!informer.has_synced());
    let warnings = captured.lines("WARN");
    assert_eq!(
        warnings.len(),
        1,
        "one warning for 50 s of retries: {warnings:#?}"
    );
    let warning = &warnings[0];
    assert!(warning.contains("widgets.v1.example.com"), "{warning}");
    assert!(warning.contains("not found"), "{warning}");
    assert!(warning.contains("is its CRD installed?"), "{warning}");
    assert!(
        !warning.contains("DynamicObject"),
        "no Rust type: {warning}"
    );
    assert!(!warning.contains("falling back"), "{warning}");

    // The retries go on (backing off, with jitter, up to a minute apart): the next warning
    // is a reminder, at least a minute after the first.
    let mut waited = 0;
    while captured.lines("WARN").len() < 2 {
        assert!(waited < 300, "no reminder after 300 s");
        tokio::time::sleep(Duration::from_secs(1)).await;
        waited += 1;
    }
    let warnings = captured.lines("WARN");
    assert_eq!(warnings.len(), 2, "{warnings:#?}");
    assert!(warnings[1].contains("still failing"), "{}", warnings[1]);

    // The CRD is installed: the informer syncs and says it recovered.
    let crd: DynamicObject = serde_json::from_str(CRD).unwrap();
    let crds = DynamicClient::from_api_resource(
        &client,
        &ApiResource {
            group: "apiextensions.k8s.io".into(),
            version: "v1".into(),
            kind: "CustomResourceDefinition".into(),
            plural: "customresourcedefinitions".into(),
            namespaced: false,
        },
        None,
    );
    crds.create(&crd, &PostParams::default()).await.unwrap();
    for _ in 0..600 {
        if informer.has_synced() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        informer.has_synced(),
        "the informer syncs once the CRD is served"
    );
    let infos = captured.lines("INFO");
    assert!(
        infos
            .iter()
            .any(|l| l.contains("widgets.v1.example.com: recovered after")),
        "{infos:#?}"
    );
    assert_eq!(
        captured.lines("WARN").len(),
        2,
        "nothing more to warn about"
    );
    cancel.cancel();
    run.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_server_is_said_at_once_with_what_to_check() {
    let (captured, _guard) = capture();

    // A port nothing listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = Config::new(format!("http://127.0.0.1:{port}").parse().unwrap());
    let informer = informer(&RestClient::new(&config).unwrap());
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });
    tokio::time::sleep(Duration::from_secs(20)).await;
    let warnings = captured.lines("WARN");
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    assert!(
        warnings[0].contains("connection refused"),
        "{}",
        warnings[0]
    );
    assert!(
        warnings[0].contains("is the API server running and reachable?"),
        "{}",
        warnings[0]
    );
    assert!(captured.lines("ERROR").is_empty());
    cancel.cancel();
    run.await.unwrap();
}

/// Waits (real time, at most 60 s) until `done` holds.
async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "waited 60 s for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Against kube-apiserver 1.36 with RBAC: a client without the right to list ConfigMaps gets
/// one WARN with the server's own words (who, which verb, which resource, where) and a hint,
/// the retries only at DEBUG, and an INFO line once a Role grants the right.
#[tokio::test]
async fn a_missing_rbac_right_is_said_once_with_the_servers_words_then_the_recovery() {
    let Some(cp) = ControlPlane::shared() else {
        return;
    };
    let (captured, _guard) = capture_at(tracing::Level::DEBUG);
    let namespace = cp.create_namespace("forbidden").unwrap();
    let token = cp.service_account_token(&namespace, "reader").unwrap();
    let admin =
        RestClient::new(&Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap()).unwrap();
    // The admin's kubeconfig, its client certificate swapped for the account's token.
    let mut config = Config::from_kubeconfig_file(cp.kubeconfig_path()).unwrap();
    config.tls.client_cert_pem = None;
    config.tls.client_key_pem = None;
    config.auth = Auth::Bearer(token.into());
    let client = RestClient::new(&config).unwrap();

    let configmaps = ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    let informer = SharedIndexInformer::new(
        ListWatch::new(DynamicClient::from_api_resource(
            &client,
            &configmaps,
            Some(&namespace),
        )),
        Indexers::default(),
        SharedInformerOptions {
            name: "configmaps".into(),
            ..SharedInformerOptions::default()
        },
    );
    let cancel = CancellationToken::new();
    let run = tokio::spawn({
        let (informer, cancel) = (informer.clone(), cancel.clone());
        async move { informer.run(cancel).await }
    });

    // Several failed attempts, one warning.
    wait_until("three failed attempts", || {
        captured
            .lines("DEBUG")
            .iter()
            .filter(|l| l.contains("still failing"))
            .count()
            >= 2
    })
    .await;
    let warnings = captured.lines("WARN");
    assert_eq!(warnings.len(), 1, "{warnings:#?}");
    let warning = &warnings[0];
    for words in [
        "configmaps: ",
        "(forbidden)",
        "configmaps is forbidden",
        // The streaming list (the default against 1.36) is a watch.
        "streaming list failed",
        "cannot watch resource \"configmaps\" in API group \"\" in the namespace",
        "check this client's RBAC rights to list and watch it",
    ] {
        assert!(warning.contains(words), "{words:?} not in {warning}");
    }
    assert!(
        warning.contains(&format!("system:serviceaccount:{namespace}:reader")),
        "who is refused: {warning}"
    );
    assert!(!warning.contains("falling back"), "{warning}");
    assert!(
        !warning.contains("DynamicObject"),
        "no Rust type: {warning}"
    );
    assert!(!informer.has_synced());

    // A Role and a RoleBinding grant the right: the informer syncs and says so.
    let rbac = |kind: &str, plural: &str| ApiResource {
        group: "rbac.authorization.k8s.io".into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        namespaced: true,
    };
    let role: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "read-configmaps"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"]}],
    }))
    .unwrap();
    let binding: DynamicObject = serde_json::from_value(serde_json::json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "reader-reads-configmaps"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-configmaps"},
        "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": namespace}],
    }))
    .unwrap();
    DynamicClient::from_api_resource(&admin, &rbac("Role", "roles"), Some(&namespace))
        .create(&role, &PostParams::default())
        .await
        .unwrap();
    DynamicClient::from_api_resource(
        &admin,
        &rbac("RoleBinding", "rolebindings"),
        Some(&namespace),
    )
    .create(&binding, &PostParams::default())
    .await
    .unwrap();
    wait_until("the sync once the right is granted", || {
        informer.has_synced()
    })
    .await;
    assert!(
        captured
            .lines("INFO")
            .iter()
            .any(|l| l.contains("configmaps: recovered after")),
        "{:#?}",
        captured.lines("INFO")
    );
    assert_eq!(
        captured.lines("WARN").len(),
        1,
        "nothing more to warn about"
    );
    cancel.cancel();
    run.await.unwrap();
}
