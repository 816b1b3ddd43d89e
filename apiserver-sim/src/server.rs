//! The server: listener, TLS, HTTP/1.1 + HTTP/2 connections, and the [`ApiServerSim`] handle.
//!
//! Plays the role of kube-apiserver's secure serving (`server/secure_serving.go`): one
//! listener on `127.0.0.1:<port>`, HTTP/1.1 and HTTP/2 on every connection (ALPN with TLS,
//! prior knowledge or HTTP/1.1 without), and a graceful stop that ends open watches. The
//! handle also exposes what tests need: the URL, the CA, the token, a kubeconfig, the fault
//! switches, history compaction and direct object seeding.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::Value;
use tokio::net::TcpListener;
use tokio::sync::{Notify, Semaphore, watch};

use crate::config::SimConfig;
use crate::errors::ApiError;
use crate::faults::{Faults, WatchFault};
use crate::http::handler;
use crate::requests::Requests;
use crate::resources::Registry;
use crate::state::{SimState, State};
use crate::store::Store;
use crate::tls::{self, TlsMaterial};
use crate::{gc, verbs};

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// Binding the listener failed.
    #[error("binding {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// Generating or loading TLS material failed.
    #[error(transparent)]
    Tls(#[from] tls::TlsError),
}

/// A running API server; stops when dropped or on [`ApiServerSim::shutdown`].
#[derive(Debug)]
pub struct ApiServerSim {
    state: State,
    addr: SocketAddr,
    url: String,
    tls: Option<TlsMaterial>,
    shutdown_tx: watch::Sender<bool>,
}

impl ApiServerSim {
    /// Binds, starts serving and returns the handle.
    pub async fn start(config: SimConfig) -> Result<ApiServerSim, StartError> {
        let listener = TcpListener::bind(config.bind)
            .await
            .map_err(|source| StartError::Bind {
                addr: config.bind,
                source,
            })?;
        let addr = listener.local_addr().map_err(|source| StartError::Bind {
            addr: config.bind,
            source,
        })?;
        let tls = if config.tls {
            Some(tls::generate()?)
        } else {
            None
        };
        let acceptor = match &tls {
            Some(m) => Some(tokio_rustls::TlsAcceptor::from(tls::server_config(m)?)),
            None => None,
        };
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let scheme = if tls.is_some() { "https" } else { "http" };
        let url = format!("{scheme}://{addr}");
        let state = Arc::new(SimState {
            store: Store::new(config.history_size, 0),
            registry: Registry::with_builtins(),
            faults: Faults::default(),
            requests: Requests::default(),
            shutdown: shutdown_rx,
            gc_kick: Notify::new(),
            watch_slots: Arc::new(Semaphore::new(
                config.max_watches.min(Semaphore::MAX_PERMITS),
            )),
            connection_slots: Arc::new(Semaphore::new(
                config.max_connections.min(Semaphore::MAX_PERMITS),
            )),
            config,
        });
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let obj = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
            // kube-apiserver creates these itself, as manager "kube-apiserver".
            if let Err(e) = seed(&state, "", "v1", "namespaces", "", obj, "kube-apiserver") {
                tracing::warn!(error = %e, "creating namespace {ns}");
            }
        }
        tokio::spawn(gc::run(state.clone()));
        tokio::spawn(accept_loop(
            listener,
            acceptor,
            state.clone(),
            addr.to_string(),
        ));
        tracing::info!(%url, "apiserver-sim serving");
        Ok(ApiServerSim {
            state,
            addr,
            url,
            tls,
            shutdown_tx,
        })
    }

    /// The base URL, e.g. `http://127.0.0.1:39417`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The CA certificate (PEM) clients must trust, when serving TLS.
    pub fn ca_pem(&self) -> Option<&str> {
        self.tls.as_ref().map(|t| t.ca_pem.as_str())
    }

    /// The CA certificate (DER), when serving TLS.
    pub fn ca_der(&self) -> Option<&[u8]> {
        self.tls.as_ref().map(|t| t.ca_der.as_slice())
    }

    /// The bearer token required, if any.
    pub fn token(&self) -> Option<&str> {
        self.state.config.token.as_deref()
    }

    /// A kubeconfig (YAML) pointing at this server, with the CA and token inlined.
    pub fn kubeconfig(&self) -> String {
        use base64::Engine;
        let mut cluster = format!("    server: {}\n", self.url);
        if let Some(ca) = self.ca_pem() {
            let b64 = base64::engine::general_purpose::STANDARD.encode(ca);
            cluster.push_str(&format!("    certificate-authority-data: {b64}\n"));
        }
        let user = match self.token() {
            Some(t) => format!("    token: {t}\n"),
            None => "    {}\n".to_owned(),
        };
        let user = if user.trim() == "{}" {
            "  user: {}\n".to_owned()
        } else {
            format!("  user:\n{user}")
        };
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: sim\n  cluster:\n{cluster}users:\n- name: sim\n{user}contexts:\n- name: sim\n  context:\n    cluster: sim\n    user: sim\n    namespace: default\ncurrent-context: sim\n"
        )
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) to `path`, readable by its owner only (mode
    /// 0600 on Unix, as it holds the token): a new file is created with that mode, an
    /// existing one is truncated and set to it.
    pub fn write_kubeconfig(&self, path: &std::path::Path) -> std::io::Result<()> {
        use std::io::Write as _;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path)?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        file.write_all(self.kubeconfig().as_bytes())
    }

    /// The fault switches.
    pub fn faults(&self) -> &Faults {
        &self.state.faults
    }

    /// The log of API requests received (see [`crate::requests`]).
    pub fn requests(&self) -> &Requests {
        &self.state.requests
    }

    /// Ends every open watch cleanly; returns how many there were.
    pub fn close_all_watches(&self) -> usize {
        self.state.faults.watches(WatchFault::Close)
    }

    /// Compacts now, as kube-apiserver's own compactor: watches and exact reads (continue
    /// tokens too) before now get 410.
    pub fn compact(&self) {
        self.state.store.compact_now();
    }

    /// Compacts etcd from outside kube-apiserver (as `etcdctl compaction` or a test's
    /// control plane does): watches and reads of uncached resources (Events) before now get
    /// 410, but the watch caches' snapshots still serve exact lists and continue tokens of
    /// the others until kube-apiserver's compactor runs (every 5 minutes, compacting to the
    /// revision of its previous run).
    pub fn compact_etcd(&self) {
        self.state.store.compact_etcd();
    }

    /// The current resourceVersion (global revision).
    pub fn resource_version(&self) -> u64 {
        self.state.store.rev()
    }

    /// Number of stored objects and their approximate heap bytes.
    pub fn store_stats(&self) -> (usize, usize) {
        self.state.store.stats()
    }

    /// Creates an object directly (same rules as a POST without `fieldManager` or
    /// User-Agent: managedFields name the manager `unknown`), e.g. to seed a demo.
    pub fn create(
        &self,
        group: &str,
        version: &str,
        plural: &str,
        namespace: &str,
        obj: Value,
    ) -> Result<Value, ApiError> {
        seed(
            &self.state,
            group,
            version,
            plural,
            namespace,
            obj,
            "unknown",
        )
    }

    /// Stops serving: the listener closes and open watches end.
    pub fn shutdown(self) {
        drop(self);
    }

    /// The shared state (for in-crate tools such as the admin endpoint).
    pub fn state(&self) -> &State {
        &self.state
    }
}

impl Drop for ApiServerSim {
    fn drop(&mut self) {
        self.shutdown_tx.send_replace(true);
    }
}

fn seed(
    state: &State,
    group: &str,
    version: &str,
    plural: &str,
    namespace: &str,
    obj: Value,
    manager: &str,
) -> Result<Value, ApiError> {
    let info = state
        .registry
        .get(group, version, plural)
        .ok_or_else(crate::errors::no_route)?;
    let Value::Object(map) = obj else {
        return Err(crate::errors::bad_request(
            "the object must be a JSON object",
        ));
    };
    let writer = crate::managed_fields::Writer {
        manager: manager.to_owned(),
        status: false,
    };
    let write = verbs::update::Write {
        record: Some(&writer),
        dry_run: false,
    };
    let created = verbs::create::create_as(state, &info, namespace, map, write)?;
    Ok(created.to_value())
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    state: State,
    address: String,
) {
    let mut shutdown = state.shutdown.clone();
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
            _ = shutdown.changed() => return,
        };
        // Past the cap the connection is closed at once: the client sees it reset, rather
        // than the server taking one more task and buffer set.
        let Ok(slot) = state.connection_slots.clone().try_acquire_owned() else {
            tracing::warn!(%peer, limit = state.config.max_connections, "too many connections: closing a new one");
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let address = address.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _slot = slot;
            match acceptor {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(tls) => serve(TokioIo::new(tls), state, address).await,
                    Err(e) => tracing::debug!(%peer, error = %e, "TLS handshake failed"),
                },
                None => serve(TokioIo::new(stream), state, address).await,
            }
        });
    }
}

async fn serve<I>(io: I, state: State, address: String)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let mut shutdown = state.shutdown.clone();
    let header_read_timeout = state.config.header_read_timeout;
    let service = service_fn(move |req: hyper::Request<Incoming>| {
        let state = state.clone();
        let address = address.clone();
        async move { Ok::<_, Infallible>(handler::handle(state, address, req).await) }
    });
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_read_timeout);
    let conn = builder.serve_connection(io, service);
    tokio::select! {
        result = conn => if let Err(e) = result {
            tracing::debug!(error = %e, "connection ended with an error");
        },
        _ = shutdown.changed() => {}
    }
}
