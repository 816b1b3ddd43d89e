//! [`ControlPlane`]: etcd, kube-apiserver and optionally kube-controller-manager, started for
//! a test and stopped with it.
//!
//! Mirrors controller-runtime's `envtest.Environment` (`Start`, `Stop`, the generated
//! kubeconfig and admin user). Differences, and why:
//! * Stopping needs no call: dropping the control plane kills its processes and removes its
//!   directory, and the processes die with the test process whatever way it ends (see
//!   `process.rs`). A test binary usually shares one control plane through
//!   [`ControlPlane::shared`], stopped when the process exits.
//! * Starting is blocking and needs no async runtime, so tests with runtimes of their own can
//!   share it.
//! * Helpers tests need beyond what envtest offers: a fresh namespace per test, a forced etcd
//!   compaction (so that a reflector meets a real `410 Gone`), and restarting kube-apiserver
//!   on the same address while clients run.

use std::fs;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::assets::Binaries;
use crate::error::Error;
use crate::http::Endpoint;
use crate::pki::Pki;
use crate::process::Process;
use crate::readiness::{free_addr, probe, wait_ready};
use crate::workdir::{self, write_private};

/// How to start a [`ControlPlane`].
#[derive(Debug, Clone)]
pub struct ControlPlaneOptions {
    /// Also start kube-controller-manager (garbage collector, Deployment, ReplicaSet and
    /// Namespace controllers, ...). Without it nothing garbage-collects dependents and
    /// Deployments get no ReplicaSets.
    pub controller_manager: bool,
    /// Extra kube-apiserver flags (for example `--watch-cache=false`), after
    /// [`DEFAULT_APISERVER_ARGS`]. Flags in `CLIENTGO_ENVTEST_APISERVER_ARGS` (split on white
    /// space) are added after these.
    pub apiserver_args: Vec<String>,
    /// How long each component may take to become ready.
    pub start_timeout: Duration,
}

impl Default for ControlPlaneOptions {
    fn default() -> Self {
        ControlPlaneOptions {
            controller_manager: false,
            apiserver_args: Vec::new(),
            start_timeout: Duration::from_secs(120),
        }
    }
}

/// Flags every kube-apiserver of this crate gets beyond the essentials: PodTemplates are
/// served without the watch cache, straight from etcd, so that after [`ControlPlane::compact`]
/// a watch or list from an older resourceVersion of a PodTemplate meets a real `410 Expired`
/// (with the watch cache, kube-apiserver 1.36 keeps serving old versions from its own
/// history). Other resources keep the watch cache, and with it streaming lists.
pub const DEFAULT_APISERVER_ARGS: &[&str] = &["--watch-cache-sizes=podtemplates#0"];

/// A running control plane. See the module documentation.
#[derive(Debug)]
pub struct ControlPlane {
    dir: PathBuf,
    binaries: Binaries,
    pki: Pki,
    options: ControlPlaneOptions,
    etcd_addr: SocketAddr,
    apiserver_addr: SocketAddr,
    etcd: Process,
    apiserver: Mutex<Option<Process>>,
    controller_manager: Option<Process>,
}

/// How many times [`ControlPlane::start`] tries when a component loses its port.
pub const PORT_RACE_ATTEMPTS: u32 = 3;

impl ControlPlane {
    /// Finds the binaries, generates the PKI, starts etcd, kube-apiserver and (if asked)
    /// kube-controller-manager on free ports of 127.0.0.1, and waits until each is ready.
    /// Blocking; takes a few seconds.
    ///
    /// A port is picked free, then handed to its component, which binds it a moment later;
    /// in between, any outgoing connection on the machine (kube-apiserver's own to etcd
    /// among them) may take it as its ephemeral source port. A component that exits saying
    /// its address is in use is therefore started again, on new ports, up to
    /// [`PORT_RACE_ATTEMPTS`] times in all.
    pub fn start(options: ControlPlaneOptions) -> Result<ControlPlane, Error> {
        let binaries = Binaries::find(options.controller_manager)?;
        workdir::sweep_stale_dirs();
        let mut attempt = 1;
        loop {
            let dir = workdir::create()?;
            // From here on, a failure removes the directory and stops what was started (drop).
            let result = ControlPlane::start_in(dir.clone(), binaries.clone(), options.clone());
            let Err(error) = result else {
                return result;
            };
            let _ = fs::remove_dir_all(&dir);
            match &error {
                Error::Exited {
                    component, tail, ..
                } if tail.contains("address already in use") && attempt < PORT_RACE_ATTEMPTS => {
                    eprintln!(
                        "envtest: {component} lost its port to another socket (attempt {attempt}): starting again on new ports"
                    );
                    attempt += 1;
                }
                _ => return Err(error),
            }
        }
    }

    fn start_in(
        dir: PathBuf,
        binaries: Binaries,
        options: ControlPlaneOptions,
    ) -> Result<ControlPlane, Error> {
        let pki = Pki::generate(&dir.join("pki"))?;
        let etcd_addr = free_addr()?;
        let peer_addr = free_addr()?;
        let apiserver_addr = free_addr()?;
        let etcd_url = format!("http://{etcd_addr}");
        let peer_url = format!("http://{peer_addr}");
        let etcd_args = [
            "--name=envtest".to_owned(),
            format!("--data-dir={}", dir.join("etcd").display()),
            format!("--listen-client-urls={etcd_url}"),
            format!("--advertise-client-urls={etcd_url}"),
            format!("--listen-peer-urls={peer_url}"),
            format!("--initial-advertise-peer-urls={peer_url}"),
            format!("--initial-cluster=envtest={peer_url}"),
            "--unsafe-no-fsync".to_owned(),
            "--log-level=warn".to_owned(),
        ];
        let etcd = Process::start(
            "etcd",
            &binaries.path("etcd"),
            &etcd_args,
            dir.join("logs/etcd.log"),
        )?;
        let etcd_endpoint = Endpoint::Plain(etcd_addr);
        wait_ready(&etcd, options.start_timeout, || {
            probe(&etcd_endpoint, "GET", "/health")
        })?;

        let mut cp = ControlPlane {
            dir,
            binaries,
            pki,
            options,
            etcd_addr,
            apiserver_addr,
            etcd,
            apiserver: Mutex::new(None),
            controller_manager: None,
        };
        cp.start_apiserver()?;
        cp.write_kubeconfig(
            &cp.kubeconfig_path(),
            "envtest-admin",
            &cp.pki.path("admin.crt"),
            &cp.pki.path("admin.key"),
        )?;
        if cp.options.controller_manager {
            cp.controller_manager = Some(cp.start_controller_manager()?);
        }
        Ok(cp)
    }

    /// The control plane shared by the tests of this test binary, started by the first call
    /// with `options` (later calls' options are ignored) and stopped when the process exits.
    ///
    /// Returns `None` when no binaries are found, after printing one line that says what to
    /// set, so that the calling test can skip itself:
    /// `let Some(cp) = ControlPlane::shared_with(..) else { return };`. With
    /// `CLIENTGO_ENVTEST_REQUIRED=1` (as CI sets it) missing binaries panic instead. Any other
    /// failure to start panics: it is a failure, not a reason to skip.
    pub fn shared_with(options: ControlPlaneOptions) -> Option<&'static ControlPlane> {
        static SHARED: OnceLock<Result<ControlPlane, String>> = OnceLock::new();
        static STOP_AT_EXIT: OnceLock<()> = OnceLock::new();
        extern "C" fn stop_shared() {
            if let Some(Ok(cp)) = SHARED.get() {
                cp.stop();
                let _ = fs::remove_dir_all(&cp.dir);
            }
        }
        let shared = SHARED.get_or_init(|| {
            let cp = ControlPlane::start(options).map_err(skip_or_panic)?;
            STOP_AT_EXIT.get_or_init(|| {
                // SAFETY: registering a plain `extern "C" fn` with no arguments.
                unsafe { libc::atexit(stop_shared) };
            });
            Ok(cp)
        });
        match shared {
            Ok(cp) => Some(cp),
            Err(why) => {
                print_skip(why);
                None
            }
        }
    }

    /// A control plane of the calling test's own (for tests that restart kube-apiserver or
    /// need other options than the shared one), with the skipping rules of
    /// [`ControlPlane::shared_with`]: `None` after one line when no binaries are found, a
    /// panic on any other failure or when `CLIENTGO_ENVTEST_REQUIRED=1`.
    pub fn start_or_skip(options: ControlPlaneOptions) -> Option<ControlPlane> {
        match ControlPlane::start(options).map_err(skip_or_panic) {
            Ok(cp) => Some(cp),
            Err(why) => {
                print_skip(&why);
                None
            }
        }
    }

    /// [`ControlPlane::shared_with`] with the default options (no controller-manager).
    pub fn shared() -> Option<&'static ControlPlane> {
        ControlPlane::shared_with(ControlPlaneOptions::default())
    }

    /// The kube-apiserver's URL, `https://127.0.0.1:PORT`.
    pub fn server_url(&self) -> String {
        format!("https://{}", self.apiserver_addr)
    }

    /// A kubeconfig for the admin user (client certificate, group `system:masters`), the CA
    /// embedded: `clientgo_rest::Config::from_kubeconfig_file(cp.kubeconfig_path())`.
    pub fn kubeconfig_path(&self) -> PathBuf {
        self.dir.join("kubeconfig")
    }

    /// The CA that signed the serving certificate, PEM.
    pub fn ca_pem(&self) -> &str {
        &self.pki.ca_pem
    }

    /// The admin user's client certificate and key, PEM.
    pub fn admin_client_cert(&self) -> (&str, &str) {
        (&self.pki.admin_cert_pem, &self.pki.admin_key_pem)
    }

    /// A bearer token of a user in group `system:masters`.
    pub fn token(&self) -> &str {
        &self.pki.token
    }

    /// The directory holding the PKI, logs, etcd's data and the kubeconfig.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where the binaries were found.
    pub fn binaries(&self) -> &Binaries {
        &self.binaries
    }

    /// etcd's client URL, `http://127.0.0.1:PORT`.
    pub fn etcd_url(&self) -> String {
        format!("http://{}", self.etcd_addr)
    }

    /// The pids of the running processes (etcd, kube-apiserver, kube-controller-manager).
    pub fn pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = self.etcd.pid().into_iter().collect();
        pids.extend(self.lock_apiserver().as_ref().and_then(Process::pid));
        pids.extend(self.controller_manager.as_ref().and_then(Process::pid));
        pids
    }

    /// Creates a namespace named `<prefix>-<random suffix>` and returns its name. Tests that
    /// share a control plane keep apart by working in namespaces of their own. Blocking.
    pub fn create_namespace(&self, prefix: &str) -> Result<String, Error> {
        let body = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"generateName": format!("{prefix}-")},
        });
        let created = self.admin_request("POST", "/api/v1/namespaces", Some(&body), 201)?;
        created["metadata"]["name"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| Error::Request {
                what: "creating a namespace".into(),
                detail: "the answer has no metadata.name".into(),
            })
    }

    /// Creates the ServiceAccount `name` in `namespace` and returns a bearer token for it (a
    /// TokenRequest, valid for an hour). The account has no RBAC rights: a client with this
    /// token meets the real server's 403 answers. Blocking.
    pub fn service_account_token(&self, namespace: &str, name: &str) -> Result<String, Error> {
        let account = serde_json::json!({
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": name},
        });
        let accounts = format!("/api/v1/namespaces/{namespace}/serviceaccounts");
        self.admin_request("POST", &accounts, Some(&account), 201)?;
        let request = serde_json::json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        });
        let answer = self.admin_request(
            "POST",
            &format!("{accounts}/{name}/token"),
            Some(&request),
            201,
        )?;
        answer["status"]["token"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| Error::Request {
                what: format!("a token for the service account {namespace}/{name}"),
                detail: "the answer has no status.token".into(),
            })
    }

    /// Compacts etcd's history up to its current revision and returns that revision: a watch
    /// or a list from an older resourceVersion then meets `410 Expired` for resources served
    /// without the watch cache (PodTemplates, see [`DEFAULT_APISERVER_ARGS`]), and for the
    /// others once the watch cache no longer holds that version. Blocking.
    ///
    /// A watch from resourceVersion N starts at revision N + 1: it meets 410 only if the
    /// compaction went past N + 1, so write at least twice after N before compacting.
    pub fn compact(&self) -> Result<u64, Error> {
        let etcd = Endpoint::Plain(self.etcd_addr);
        let call = |path: &str, body: serde_json::Value| -> Result<serde_json::Value, Error> {
            let what = format!("etcd {path}");
            let body = serde_json::to_vec(&body).map_err(|e| Error::Request {
                what: what.clone(),
                detail: e.to_string(),
            })?;
            let response =
                etcd.request("POST", path, Some(&body))
                    .map_err(|detail| Error::Request {
                        what: what.clone(),
                        detail,
                    })?;
            if response.status != 200 {
                return Err(Error::Request {
                    what,
                    detail: format!("{}: {}", response.status, response.body_snippet()),
                });
            }
            serde_json::from_slice(&response.body).map_err(|e| Error::Request {
                what,
                detail: e.to_string(),
            })
        };
        let range = call(
            "/v3/kv/range",
            serde_json::json!({"key": STANDARD.encode("compact_rev_key")}),
        )?;
        let revision = range["header"]["revision"]
            .as_str()
            .and_then(|r| r.parse::<u64>().ok())
            .ok_or_else(|| Error::Request {
                what: "etcd /v3/kv/range".into(),
                detail: "no header.revision in the answer".into(),
            })?;
        call(
            "/v3/kv/compaction",
            serde_json::json!({"revision": revision.to_string(), "physical": true}),
        )?;
        Ok(revision)
    }

    /// Kills kube-apiserver (SIGKILL, as a crash) and starts it again on the same address,
    /// waiting until it is ready. Clients see their connections fail and then recover.
    /// Blocking. Tests that restart should use a control plane of their own.
    pub fn restart_apiserver(&self) -> Result<(), Error> {
        if let Some(old) = self.lock_apiserver().take() {
            old.kill();
        }
        self.start_apiserver()
    }

    /// Stops every process. Dropping the control plane does this and also removes its
    /// directory.
    pub fn stop(&self) {
        if let Some(cm) = &self.controller_manager {
            cm.kill();
        }
        if let Some(apiserver) = self.lock_apiserver().as_ref() {
            apiserver.kill();
        }
        self.etcd.kill();
    }

    fn lock_apiserver(&self) -> std::sync::MutexGuard<'_, Option<Process>> {
        self.apiserver.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn start_apiserver(&self) -> Result<(), Error> {
        let pki = |f: &str| self.pki.path(f).display().to_string();
        let mut args = vec![
            "--bind-address=127.0.0.1".to_owned(),
            "--advertise-address=127.0.0.1".to_owned(),
            format!("--secure-port={}", self.apiserver_addr.port()),
            format!("--etcd-servers={}", self.etcd_url()),
            format!("--cert-dir={}", self.dir.join("pki").display()),
            format!("--tls-cert-file={}", pki("apiserver.crt")),
            format!("--tls-private-key-file={}", pki("apiserver.key")),
            format!("--client-ca-file={}", pki("ca.crt")),
            format!("--token-auth-file={}", pki("tokens.csv")),
            "--authorization-mode=RBAC".to_owned(),
            "--service-account-issuer=https://kubernetes.default.svc.cluster.local".to_owned(),
            format!("--service-account-key-file={}", pki("sa.pub")),
            format!("--service-account-signing-key-file={}", pki("sa.key")),
            "--service-cluster-ip-range=10.0.0.0/24".to_owned(),
            "--endpoint-reconciler-type=none".to_owned(),
            "--allow-privileged=true".to_owned(),
        ];
        args.extend(DEFAULT_APISERVER_ARGS.iter().map(|a| (*a).to_owned()));
        args.extend(self.options.apiserver_args.iter().cloned());
        if let Ok(extra) = std::env::var("CLIENTGO_ENVTEST_APISERVER_ARGS") {
            args.extend(extra.split_whitespace().map(str::to_owned));
        }
        let process = Process::start(
            "kube-apiserver",
            &self.binaries.path("kube-apiserver"),
            &args,
            self.dir.join("logs/kube-apiserver.log"),
        )?;
        let endpoint = self.apiserver_endpoint()?;
        wait_ready(&process, self.options.start_timeout, || {
            probe(&endpoint, "GET", "/readyz")
        })?;
        *self.lock_apiserver() = Some(process);
        Ok(())
    }

    fn start_controller_manager(&self) -> Result<Process, Error> {
        let kubeconfig = self.pki.path("controller-manager.kubeconfig");
        self.write_kubeconfig(
            &kubeconfig,
            "controller-manager",
            &self.pki.path("controller-manager.crt"),
            &self.pki.path("controller-manager.key"),
        )?;
        let pki = |f: &str| self.pki.path(f).display().to_string();
        let port = free_addr()?.port();
        let kubeconfig = kubeconfig.display().to_string();
        let args = vec![
            format!("--kubeconfig={kubeconfig}"),
            format!("--authentication-kubeconfig={kubeconfig}"),
            format!("--authorization-kubeconfig={kubeconfig}"),
            "--bind-address=127.0.0.1".to_owned(),
            format!("--secure-port={port}"),
            format!("--tls-cert-file={}", pki("apiserver.crt")),
            format!("--tls-private-key-file={}", pki("apiserver.key")),
            "--leader-elect=false".to_owned(),
            "--use-service-account-credentials=false".to_owned(),
            "--controllers=*,-root-ca-cert-publisher,-service-ca-certificate-publisher-controller"
                .to_owned(),
            format!("--service-account-private-key-file={}", pki("sa.key")),
            format!("--root-ca-file={}", pki("ca.crt")),
            format!("--cluster-signing-cert-file={}", pki("ca.crt")),
            format!("--cluster-signing-key-file={}", pki("ca.key")),
        ];
        let process = Process::start(
            "kube-controller-manager",
            &self.binaries.path("kube-controller-manager"),
            &args,
            self.dir.join("logs/kube-controller-manager.log"),
        )?;
        let endpoint = Endpoint::tls(
            SocketAddr::from((Ipv4Addr::LOCALHOST, port)),
            &self.pki.ca_pem,
            None,
        )
        .map_err(|detail| Error::Request {
            what: "kube-controller-manager probe".into(),
            detail,
        })?;
        wait_ready(&process, self.options.start_timeout, || {
            probe(&endpoint, "GET", "/healthz")
        })?;
        Ok(process)
    }

    fn apiserver_endpoint(&self) -> Result<Endpoint, Error> {
        Endpoint::tls(
            self.apiserver_addr,
            &self.pki.ca_pem,
            Some(self.pki.token.clone()),
        )
        .map_err(|detail| Error::Request {
            what: "kube-apiserver client".into(),
            detail,
        })
    }

    /// An admin request to kube-apiserver that must answer `expected`; the JSON answer.
    fn admin_request(
        &self,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
        expected: u16,
    ) -> Result<serde_json::Value, Error> {
        let what = format!("{method} {path}");
        let fail = |detail: String| Error::Request {
            what: what.clone(),
            detail,
        };
        let body = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| fail(e.to_string()))?;
        let response = self
            .apiserver_endpoint()?
            .request(method, path, body.as_deref())
            .map_err(fail)?;
        if response.status != expected {
            return Err(fail(format!(
                "{}: {}",
                response.status,
                response.body_snippet()
            )));
        }
        serde_json::from_slice(&response.body).map_err(|e| fail(e.to_string()))
    }

    fn write_kubeconfig(
        &self,
        path: &Path,
        user: &str,
        cert: &Path,
        key: &Path,
    ) -> Result<(), Error> {
        let read =
            |p: &Path| fs::read(p).map_err(|e| Error::io(format!("reading {}", p.display()), e));
        let content = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: envtest\n  cluster:\n    server: {server}\n    certificate-authority-data: {ca}\nusers:\n- name: {user}\n  user:\n    client-certificate-data: {cert}\n    client-key-data: {key}\ncontexts:\n- name: envtest\n  context: {{cluster: envtest, user: {user}}}\ncurrent-context: envtest\n",
            server = self.server_url(),
            ca = STANDARD.encode(self.pki.ca_pem.as_bytes()),
            cert = STANDARD.encode(read(cert)?),
            key = STANDARD.encode(read(key)?),
        );
        write_private(path, content.as_bytes())
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.stop();
        let _ = fs::remove_dir_all(&self.dir);
    }
}

/// Why a test skips (missing binaries, when skipping is allowed); panics on any other error.
fn skip_or_panic(error: Error) -> String {
    match error {
        Error::NoBinaries { .. } if !required() => error.to_string(),
        error => panic!("starting the envtest control plane: {error}"),
    }
}

/// Says a test is skipped on the process's own standard error: `eprintln!` in a test is
/// captured by the test harness and shown only when the test fails, so a skip would pass
/// unseen.
fn print_skip(why: &str) {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "envtest: skipping a test that needs a real control plane: {why}"
    );
}

/// True when missing binaries must fail rather than skip (`CLIENTGO_ENVTEST_REQUIRED=1`).
fn required() -> bool {
    std::env::var("CLIENTGO_ENVTEST_REQUIRED").is_ok_and(|v| v == "1" || v == "true")
}
