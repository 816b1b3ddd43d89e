//! A minimal blocking HTTP/1.0 client for the control plane's own probes and admin calls:
//! readiness (`/health`, `/readyz`, `/healthz`), namespaces and etcd compaction.
//!
//! Starting a control plane must not need an async runtime (a test binary shares one control
//! plane between tests that each run their own runtime), and the REST client under test must
//! not be the tool that decides whether the server is up. HTTP/1.0 with `Connection: close`
//! keeps the exchange to one request and one body read to its end, with no chunked encoding.
//! TLS is always verified against the control plane's own CA.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};
use rustls_pki_types::pem::PemObject;

/// The longest a probe or admin call may take, connect to last byte.
const IO_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest response read.
const MAX_RESPONSE: u64 = 16 << 20;

/// A response: status code and body.
#[derive(Debug)]
pub(crate) struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

impl Response {
    /// The body as text, shortened for an error message.
    pub fn body_snippet(&self) -> String {
        let text = String::from_utf8_lossy(&self.body);
        let text = text.trim();
        match text.char_indices().nth(300) {
            Some((cut, _)) => format!("{}...", &text[..cut]),
            None => text.to_owned(),
        }
    }
}

/// How to reach a server: plain HTTP, or TLS verified against a CA with a bearer token.
#[derive(Clone)]
pub(crate) enum Endpoint {
    Plain(SocketAddr),
    Tls {
        addr: SocketAddr,
        config: Arc<ClientConfig>,
        token: Option<String>,
    },
}

impl Endpoint {
    /// A TLS endpoint trusting only `ca_pem`.
    pub fn tls(addr: SocketAddr, ca_pem: &str, token: Option<String>) -> Result<Endpoint, String> {
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(ca_pem.as_bytes()) {
            let cert = cert.map_err(|e| format!("CA PEM: {e}"))?;
            roots.add(cert).map_err(|e| format!("CA: {e}"))?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Endpoint::Tls {
            addr,
            config: Arc::new(config),
            token,
        })
    }

    /// Sends one request and reads the whole response.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<&[u8]>,
    ) -> Result<Response, String> {
        let (addr, auth) = match self {
            Endpoint::Plain(addr) => (*addr, None),
            Endpoint::Tls { addr, token, .. } => (*addr, token.as_deref()),
        };
        let mut head = format!(
            "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nAccept: application/json\r\nConnection: close\r\n"
        );
        if let Some(token) = auth {
            head.push_str(&format!("Authorization: Bearer {token}\r\n"));
        }
        if let Some(body) = body {
            head.push_str(&format!(
                "Content-Type: application/json\r\nContent-Length: {}\r\n",
                body.len()
            ));
        }
        head.push_str("\r\n");
        let tcp = TcpStream::connect_timeout(&addr, IO_TIMEOUT).map_err(|e| e.to_string())?;
        tcp.set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| tcp.set_write_timeout(Some(IO_TIMEOUT)))
            .map_err(|e| e.to_string())?;
        let raw = match self {
            Endpoint::Plain(_) => exchange(tcp, head.as_bytes(), body),
            Endpoint::Tls { config, .. } => {
                let name = ServerName::IpAddress(addr.ip().into());
                let conn =
                    ClientConnection::new(config.clone(), name).map_err(|e| e.to_string())?;
                exchange(StreamOwned::new(conn, tcp), head.as_bytes(), body)
            }
        }
        .map_err(|e| e.to_string())?;
        parse(&raw)
    }
}

fn exchange(
    mut stream: impl Read + Write,
    head: &[u8],
    body: Option<&[u8]>,
) -> std::io::Result<Vec<u8>> {
    stream.write_all(head)?;
    if let Some(body) = body {
        stream.write_all(body)?;
    }
    stream.flush()?;
    let mut raw = Vec::new();
    match stream.take(MAX_RESPONSE).read_to_end(&mut raw) {
        Ok(_) => Ok(raw),
        // Go's server closes TLS without close_notify after an HTTP/1.0 response; what was
        // read is the whole response.
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && !raw.is_empty() => Ok(raw),
        Err(e) => Err(e),
    }
}

fn parse(raw: &[u8]) -> Result<Response, String> {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| "response without a complete header".to_owned())?;
    let head = std::str::from_utf8(&raw[..split]).map_err(|_| "response header is not UTF-8")?;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line: {}", head.lines().next().unwrap_or("")))?;
    Ok(Response {
        status,
        body: raw[split + 4..].to_vec(),
    })
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn parses_status_and_body() {
        let r = parse(b"HTTP/1.0 201 Created\r\nA: b\r\n\r\n{\"x\":1}").unwrap();
        assert_eq!(r.status, 201);
        assert_eq!(r.body, b"{\"x\":1}");
        assert!(parse(b"HTTP/1.0 200 OK\r\n").is_err());
        assert!(parse(b"garbage\r\n\r\n").is_err());
    }
}
