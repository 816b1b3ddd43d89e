//! One HTTPS client per server: the same requests, byte for byte, to kube-apiserver and to
//! apiserver-sim (both with a CA of their own and a bearer token), a fresh HTTP/1.1
//! connection per request so that no connection state carries over between steps.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName};
use serde_json::Value;
use tokio::time::{Instant, timeout, timeout_at};

/// The `Accept` header of a step that sets none.
pub const JSON: &str = "application/json";

/// Bound on a single request and its body.
const REQUEST_BOUND: Duration = Duration::from_secs(15);

/// What a server answered to one request.
#[derive(Debug, Clone)]
pub struct Answer {
    pub status: u16,
    /// The media type without parameters (`application/json`, `text/plain`), or empty.
    pub content_type: String,
    pub body: Bytes,
    /// The `Warning` headers, in order.
    pub warnings: Vec<String>,
}

impl Answer {
    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or(Value::Null)
    }
}

/// A server the script talks to.
pub struct Server {
    /// `real` or `sim`.
    pub label: &'static str,
    addr: std::net::SocketAddr,
    tls: tokio_rustls::TlsConnector,
    token: String,
}

impl Server {
    /// A client for the server at `url` (`https://127.0.0.1:PORT`) whose serving certificate
    /// `ca_der` signed, authenticating with `token`.
    pub fn new(label: &'static str, url: &str, ca_der: Vec<u8>, token: &str) -> Server {
        let addr = url
            .strip_prefix("https://")
            .and_then(|a| a.parse().ok())
            .unwrap_or_else(|| panic!("{label}: not an https://IP:PORT url: {url}"));
        let mut roots = rustls::RootCertStore::empty();
        roots
            .add(CertificateDer::from(ca_der))
            .unwrap_or_else(|e| panic!("{label}: the CA: {e}"));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Server {
            label,
            addr,
            tls: tokio_rustls::TlsConnector::from(Arc::new(config)),
            token: token.to_owned(),
        }
    }

    async fn send(
        &self,
        method: &Method,
        path: &str,
        accept: &str,
        content_type: Option<&str>,
        body: Option<&[u8]>,
    ) -> hyper::Response<Incoming> {
        let label = self.label;
        let connect = async {
            let tcp = tokio::net::TcpStream::connect(self.addr).await?;
            let name = ServerName::try_from("localhost").expect("a server name");
            self.tls.connect(name, tcp).await
        };
        let tls = timeout(REQUEST_BOUND, connect)
            .await
            .unwrap_or_else(|_| panic!("{label}: connecting timed out"))
            .unwrap_or_else(|e| panic!("{label}: connecting: {e}"));
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .unwrap_or_else(|e| panic!("{label}: HTTP handshake: {e}"));
        tokio::spawn(connection);
        let mut request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header("host", "localhost")
            .header("accept", accept)
            .header("user-agent", "differential/v0.0.0")
            .header("authorization", format!("Bearer {}", self.token));
        if let Some(content_type) = content_type {
            request = request.header("content-type", content_type);
        }
        let request = request
            .body(Full::new(Bytes::copy_from_slice(body.unwrap_or_default())))
            .expect("a request");
        timeout(REQUEST_BOUND, sender.send_request(request))
            .await
            .unwrap_or_else(|_| panic!("{label}: {method} {path}: no answer in time"))
            .unwrap_or_else(|e| panic!("{label}: {method} {path}: {e}"))
    }

    /// Sends one request (`Accept: application/json`) and reads the whole answer.
    pub async fn request(
        &self,
        method: &Method,
        path: &str,
        content_type: Option<&str>,
        body: Option<&[u8]>,
    ) -> Answer {
        self.request_accepting(method, path, JSON, content_type, body)
            .await
    }

    /// Sends one request with this `Accept` header and reads the whole answer.
    pub async fn request_accepting(
        &self,
        method: &Method,
        path: &str,
        accept: &str,
        content_type: Option<&str>,
        body: Option<&[u8]>,
    ) -> Answer {
        let response = self.send(method, path, accept, content_type, body).await;
        let status = response.status().as_u16();
        let content_type = media_type(&response);
        let warnings = response
            .headers()
            .get_all(http::header::WARNING)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect();
        let body = timeout(REQUEST_BOUND, response.into_body().collect())
            .await
            .unwrap_or_else(|_| panic!("{}: {method} {path}: body not in time", self.label))
            .unwrap_or_else(|e| panic!("{}: {method} {path}: body: {e}", self.label))
            .to_bytes();
        Answer {
            status,
            content_type,
            body,
            warnings,
        }
    }

    /// Opens a watch with this `Accept` header; its events are read later with
    /// [`Watch::collect`].
    pub async fn watch(&self, path: &str, accept: &str) -> (Answer, Option<Watch>) {
        let response = self.send(&Method::GET, path, accept, None, None).await;
        let status = response.status().as_u16();
        let content_type = media_type(&response);
        if status != 200 {
            let body = timeout(REQUEST_BOUND, response.into_body().collect())
                .await
                .ok()
                .and_then(Result::ok)
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            let answer = Answer {
                status,
                content_type,
                body,
                warnings: Vec::new(),
            };
            return (answer, None);
        }
        let answer = Answer {
            status,
            content_type,
            body: Bytes::new(),
            warnings: Vec::new(),
        };
        let watch = Watch {
            body: response.into_body(),
            buf: Vec::new(),
            ended: false,
        };
        (answer, Some(watch))
    }
}

fn media_type(response: &hyper::Response<Incoming>) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_owned()
}

/// An open watch stream.
pub struct Watch {
    body: Incoming,
    buf: Vec<u8>,
    ended: bool,
}

/// When to stop reading a watch.
#[derive(Debug, Clone, Copy)]
pub enum Until {
    /// After this many events (BOOKMARKs not counted).
    Count(usize),
    /// After a `DELETED` event for the object of this name.
    Deleted(&'static str),
    /// When the stream ends (its `timeoutSeconds`, an ERROR): every event, BOOKMARKs
    /// included, then `<end>`.
    End,
}

impl Until {
    fn keeps_bookmarks(self) -> bool {
        matches!(self, Until::End)
    }
}

impl Watch {
    /// The events (BOOKMARKs left out unless `until` is [`Until::End`]) until `until` holds,
    /// the stream ends, or `bound` passes; a line `<timeout>` / `<end>` / `<not json>` stands
    /// for what cut the reading short (or, for [`Until::End`], for the end itself), so that
    /// it shows as a difference instead of hanging the check.
    pub async fn collect(&mut self, until: Until, bound: Duration) -> Vec<Value> {
        let deadline = Instant::now() + bound;
        let mut events = Vec::new();
        loop {
            let done = match until {
                Until::Count(n) => events.len() >= n,
                Until::Deleted(name) => events.iter().any(|e: &Value| {
                    e["type"] == "DELETED" && e["object"]["metadata"]["name"] == name
                }),
                Until::End => false,
            };
            if done {
                return events;
            }
            if let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buf.drain(..=pos).collect();
                match serde_json::from_slice::<Value>(&line) {
                    Ok(event) if event["type"] == "BOOKMARK" && !until.keeps_bookmarks() => {}
                    Ok(event) => events.push(event),
                    Err(_) => events.push(Value::from("<not json>")),
                }
                continue;
            }
            if self.ended {
                events.push(Value::from("<end>"));
                return events;
            }
            match timeout_at(deadline, self.body.frame()).await {
                Err(_) => {
                    events.push(Value::from("<timeout>"));
                    return events;
                }
                Ok(None) | Ok(Some(Err(_))) => self.ended = true,
                Ok(Some(Ok(frame))) => {
                    if let Ok(data) = frame.into_data() {
                        self.buf.extend_from_slice(&data);
                    }
                }
            }
        }
    }
}
