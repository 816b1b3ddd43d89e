//! Test servers and certificates for the REST client's integration tests: small hyper servers
//! on 127.0.0.1:0 (HTTP/1.1 and HTTP/2, plain or TLS, optionally requiring a client
//! certificate), a generated PKI, and a log capture.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{HeaderMap, Method, StatusCode, Version};
use http_body_util::{BodyExt as _, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::server::WebPkiClientVerifier;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A request as the server saw it.
#[derive(Clone, Debug)]
pub struct Recorded {
    pub method: Method,
    /// Path and query.
    pub uri: String,
    pub version: Version,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// The SNI the client sent (TLS only).
    pub sni: Option<String>,
    /// Whether the client presented a certificate (TLS only).
    pub client_cert: bool,
    /// The client's certificate (DER), if it presented one.
    pub peer_cert: Option<Vec<u8>>,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// What the server does with a request.
pub enum Reply {
    /// Answer.
    Respond {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: Bytes,
    },
    /// Close the connection without answering.
    Close,
    /// Never answer.
    Stall,
}

impl Reply {
    pub fn json(status: u16, body: impl Into<String>) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("content-type", "application/json".to_owned())],
            body: Bytes::from(body.into()),
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        if let Reply::Respond { headers, .. } = &mut self {
            headers.push((name, value.into()));
        }
        self
    }

    pub fn text(status: u16, content_type: &str, body: &str) -> Reply {
        Reply::Respond {
            status,
            headers: vec![("content-type", content_type.to_owned())],
            body: Bytes::from(body.to_owned()),
        }
    }
}

type Handler = dyn Fn(&Recorded, usize) -> Reply + Send + Sync;

/// A server on 127.0.0.1:0 that records requests and answers with a handler (given the request
/// and its index).
pub struct TestServer {
    pub addr: SocketAddr,
    requests: Arc<Mutex<Vec<Recorded>>>,
    connections: Arc<Mutex<usize>>,
    task: JoinHandle<()>,
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TestServer {
    pub async fn plain(
        handler: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
    ) -> TestServer {
        TestServer::start(None, handler).await
    }

    pub async fn start(
        tls: Option<Arc<rustls::ServerConfig>>,
        handler: impl Fn(&Recorded, usize) -> Reply + Send + Sync + 'static,
    ) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(Mutex::new(Vec::new()));
        let handler: Arc<Handler> = Arc::new(handler);
        let acceptor = tls.map(tokio_rustls::TlsAcceptor::from);
        let log = requests.clone();
        let connections = Arc::new(Mutex::new(0));
        let accepted = connections.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    return;
                };
                *accepted.lock().unwrap() += 1;
                let (handler, log, acceptor) = (handler.clone(), log.clone(), acceptor.clone());
                tokio::spawn(async move {
                    match acceptor {
                        None => serve(TokioIo::new(tcp), None, None, handler, log).await,
                        Some(acceptor) => {
                            let Ok(tls) = acceptor.accept(tcp).await else {
                                return;
                            };
                            let (_, session) = tls.get_ref();
                            let sni = session.server_name().map(str::to_owned);
                            let peer_cert = session
                                .peer_certificates()
                                .and_then(|c| c.first())
                                .map(|c| c.to_vec());
                            serve(TokioIo::new(tls), sni, peer_cert, handler, log).await;
                        }
                    }
                });
            }
        });
        TestServer {
            addr,
            requests,
            connections,
            task,
        }
    }

    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.requests.lock().unwrap().clone()
    }

    /// How many connections were accepted.
    pub fn connections(&self) -> usize {
        *self.connections.lock().unwrap()
    }

    pub fn count(&self) -> usize {
        self.requests.lock().unwrap().len()
    }

    pub fn last(&self) -> Recorded {
        self.requests().pop().expect("the server saw no request")
    }
}

async fn serve<I>(
    io: TokioIo<I>,
    sni: Option<String>,
    peer_cert: Option<Vec<u8>>,
    handler: Arc<Handler>,
    log: Arc<Mutex<Vec<Recorded>>>,
) where
    I: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
        let (handler, log, sni, peer_cert) =
            (handler.clone(), log.clone(), sni.clone(), peer_cert.clone());
        async move {
            let (parts, body) = request.into_parts();
            let body = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let recorded = Recorded {
                method: parts.method,
                uri: parts
                    .uri
                    .path_and_query()
                    .map(|p| p.to_string())
                    .unwrap_or_default(),
                version: parts.version,
                headers: parts.headers,
                body,
                sni,
                client_cert: peer_cert.is_some(),
                peer_cert,
            };
            let index = {
                let mut log = log.lock().unwrap();
                log.push(recorded.clone());
                log.len() - 1
            };
            match handler(&recorded, index) {
                Reply::Respond {
                    status,
                    headers,
                    body,
                } => {
                    let mut response = http::Response::new(Full::new(body));
                    *response.status_mut() = StatusCode::from_u16(status).unwrap();
                    for (name, value) in headers {
                        response.headers_mut().append(name, value.parse().unwrap());
                    }
                    Ok::<_, CloseConnection>(response)
                }
                Reply::Close => Err(CloseConnection),
                Reply::Stall => std::future::pending().await,
            }
        }
    });
    let _ = auto::Builder::new(TokioExecutor::new())
        .serve_connection(io, service)
        .await;
}

/// The service error that makes hyper close the connection without answering.
#[derive(Debug)]
pub struct CloseConnection;

impl std::fmt::Display for CloseConnection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("closing the connection without an answer")
    }
}

impl std::error::Error for CloseConnection {}

/// A server that resets (RST) the first `resets` connections after reading a request head,
/// then answers every request `200 {}` over HTTP/1.1. Returns the address and a counter of
/// connections accepted.
pub async fn resetting_server(resets: usize) -> (SocketAddr, Arc<Mutex<usize>>, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(Mutex::new(0usize));
    let counter = accepted.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((mut tcp, _)) = listener.accept().await else {
                return;
            };
            let n = {
                let mut c = counter.lock().unwrap();
                *c += 1;
                *c
            };
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut seen = Vec::new();
                loop {
                    let Ok(read) = tcp.read(&mut buf).await else {
                        return;
                    };
                    if read == 0 {
                        return;
                    }
                    seen.extend_from_slice(&buf[..read]);
                    if seen.windows(4).any(|w| w == b"\r\n\r\n") {
                        if n <= resets {
                            let _ = tcp.set_zero_linger();
                            drop(tcp);
                            return;
                        }
                        let response = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
                        if tcp.write_all(response).await.is_err() {
                            return;
                        }
                        seen.clear();
                    }
                }
            });
        }
    });
    (addr, accepted, task)
}

/// A CA that issues server and client certificates.
pub struct Pki {
    pub ca_pem: String,
    ca: rcgen::Certificate,
    ca_key: KeyPair,
}

impl Pki {
    pub fn new(name: &str) -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate().unwrap();
        let ca = params.self_signed(&ca_key).unwrap();
        Pki {
            ca_pem: ca.pem(),
            ca,
            ca_key,
        }
    }

    fn issue(&self, sans: &[&str], cn: &str, usage: ExtendedKeyUsagePurpose) -> (String, String) {
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>()).unwrap();
        params.distinguished_name.push(DnType::CommonName, cn);
        params.extended_key_usages = vec![usage];
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        let key = KeyPair::generate().unwrap();
        let cert = params.signed_by(&key, &self.ca, &self.ca_key).unwrap();
        (cert.pem(), key.serialize_pem())
    }

    /// A client certificate and key (PEM) for user `cn`.
    pub fn client(&self, cn: &str) -> (String, String) {
        self.issue(&[], cn, ExtendedKeyUsagePurpose::ClientAuth)
    }

    /// A server configuration with a certificate for `sans`, offering `alpn`, and requiring a
    /// client certificate from `client_ca` if given.
    pub fn server_config(
        &self,
        sans: &[&str],
        alpn: &[&[u8]],
        client_ca: Option<&Pki>,
    ) -> Arc<rustls::ServerConfig> {
        let (cert_pem, key_pem) =
            self.issue(sans, "kube-apiserver", ExtendedKeyUsagePurpose::ServerAuth);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap();
        let builder = match client_ca {
            None => builder.with_no_client_auth(),
            Some(ca) => {
                let mut roots = rustls::RootCertStore::empty();
                roots.add(ca.ca.der().clone()).unwrap();
                let verifier =
                    WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                        .build()
                        .unwrap();
                builder.with_client_cert_verifier(verifier)
            }
        };
        let cert = CertificateDer::from_pem_slice_compat(&cert_pem);
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
            KeyPair::from_pem(&key_pem).unwrap().serialize_der(),
        ));
        let mut config = builder.with_single_cert(vec![cert], key).unwrap();
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        Arc::new(config)
    }
}

trait FromPemCompat {
    fn from_pem_slice_compat(pem: &str) -> CertificateDer<'static>;
}

impl FromPemCompat for CertificateDer<'static> {
    fn from_pem_slice_compat(pem: &str) -> CertificateDer<'static> {
        use rustls::pki_types::pem::PemObject as _;
        CertificateDer::from_pem_slice(pem.as_bytes()).unwrap()
    }
}

/// Captures everything logged on this thread (use a current-thread runtime).
#[derive(Clone, Default)]
pub struct LogCapture(Arc<Mutex<Vec<u8>>>);

impl LogCapture {
    pub fn install(&self) -> tracing::subscriber::DefaultGuard {
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::TRACE)
            .with_ansi(false)
            .with_writer(self.clone())
            .finish();
        tracing::subscriber::set_default(subscriber)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for LogCapture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for LogCapture {
    type Writer = LogCapture;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

/// A kube-apiserver Status body.
pub fn status_json(code: u16, reason: &str, message: &str) -> String {
    serde_json::json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    })
    .to_string()
}

/// A dynamic client of ConfigMaps in `default`.
pub fn config_maps(client: &clientgo_rest::RestClient) -> clientgo_rest::DynamicClient {
    let resource = clientgo_apimachinery::ApiResource {
        group: String::new(),
        version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
        namespaced: true,
    };
    clientgo_rest::DynamicClient::from_api_resource(client, &resource, Some("default"))
}
