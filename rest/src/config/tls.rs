//! The TLS part of a [`Config`](super::Config): CA bundle, client certificate and key, and the
//! verification switches, all as PEM bytes ready for rustls.
//!
//! Mirrors client-go `rest.TLSClientConfig` after `transport.loadTLSFiles`: files named by the
//! kubeconfig have already been read, so the transport never touches the file system.
//! PEM is checked with `rustls-pki-types`' [`PemObject`] parser, the successor that rustls
//! recommends now that `rustls-pemfile` is archived: a CA must hold at least one
//! `CERTIFICATE` block, a key one `PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY` block.
//!
//! Differences from client-go, and why:
//! * Client certificate files are read once, when the configuration is built; client-go's
//!   transport can reload them as they rotate on disk (`transport/cert_rotation.go`). That
//!   belongs to the transport, which can re-read `client-certificate` files later if needed.
//! * `Debug` shows only the sizes of the PEM blobs (client-go's `String()` truncates certificate
//!   data and redacts key data).

use std::fmt;

use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use super::secret::Secret;

/// TLS settings for talking to the API server.
#[derive(Clone, Default, PartialEq)]
pub struct TlsConfig {
    /// CA certificates (PEM) to verify the server with; `None` means the system roots.
    pub ca_pem: Option<Vec<u8>>,
    /// Client certificate chain (PEM) presented to the server.
    pub client_cert_pem: Option<Vec<u8>>,
    /// The client certificate's private key (PEM).
    pub client_key_pem: Option<Secret<Vec<u8>>>,
    /// Skip verification of the server certificate (kubeconfig `insecure-skip-tls-verify`).
    pub insecure_skip_tls_verify: bool,
    /// The name to verify the server certificate against and to send as SNI, when it differs
    /// from the host of the server URL (kubeconfig `tls-server-name`).
    pub server_name: Option<String>,
}

impl TlsConfig {
    /// True when a client certificate and its key are set.
    pub fn has_client_cert(&self) -> bool {
        self.client_cert_pem.is_some() && self.client_key_pem.is_some()
    }
}

impl fmt::Debug for TlsConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TlsConfig")
            .field("ca_pem", &self.ca_pem.as_deref().map(Bytes))
            .field(
                "client_cert_pem",
                &self.client_cert_pem.as_deref().map(Bytes),
            )
            .field("client_key_pem", &self.client_key_pem)
            .field("insecure_skip_tls_verify", &self.insecure_skip_tls_verify)
            .field("server_name", &self.server_name)
            .finish()
    }
}

/// Shows a blob as its size.
pub(crate) struct Bytes<'a>(pub(crate) &'a [u8]);

impl fmt::Debug for Bytes<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} bytes>", self.0.len())
    }
}

/// Checks that `pem` holds at least one certificate; the reason otherwise.
pub(crate) fn check_certificates(pem: &[u8]) -> Result<usize, String> {
    let mut count = 0;
    for item in CertificateDer::pem_slice_iter(pem) {
        item.map_err(|e| describe(&e))?;
        count += 1;
    }
    if count == 0 {
        return Err("no PEM CERTIFICATE block found".to_owned());
    }
    Ok(count)
}

/// Checks that `pem` holds a private key; the reason otherwise.
pub(crate) fn check_private_key(pem: &[u8]) -> Result<(), String> {
    match PrivateKeyDer::from_pem_slice(pem) {
        Ok(_) => Ok(()),
        Err(pem::Error::NoItemsFound) => Err(
            "no PEM private key block (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY) found"
                .to_owned(),
        ),
        Err(e) => Err(describe(&e)),
    }
}

/// The parser's error without the line it quotes (which could be key material).
fn describe(e: &pem::Error) -> String {
    match e {
        pem::Error::MissingSectionEnd { .. } => "a PEM block has no END line".to_owned(),
        pem::Error::IllegalSectionStart { .. } => "a PEM BEGIN line is malformed".to_owned(),
        pem::Error::Base64Decode(_) => "a PEM block's body is not valid base64".to_owned(),
        pem::Error::NoItemsFound => "no PEM block of the expected kind found".to_owned(),
        pem::Error::SectionTooLarge => "a PEM block is larger than 256 MB".to_owned(),
        _ => "not valid PEM".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::testutil::{CA_PEM, CLIENT_CERT_PEM, CLIENT_KEY_PEM};

    #[test]
    fn certificates_and_keys_are_recognised() {
        assert_eq!(check_certificates(CA_PEM.as_bytes()), Ok(1));
        let bundle = format!("{CA_PEM}{CLIENT_CERT_PEM}");
        assert_eq!(check_certificates(bundle.as_bytes()), Ok(2));
        assert_eq!(check_private_key(CLIENT_KEY_PEM.as_bytes()), Ok(()));
    }

    #[test]
    fn wrong_or_broken_pem_is_described_without_its_content() {
        let err = check_certificates(CLIENT_KEY_PEM.as_bytes()).unwrap_err();
        assert!(err.contains("no PEM CERTIFICATE block"), "{err}");
        let err = check_private_key(CA_PEM.as_bytes()).unwrap_err();
        assert!(err.contains("no PEM private key"), "{err}");
        let err = check_certificates(b"just text").unwrap_err();
        assert!(err.contains("no PEM CERTIFICATE block"), "{err}");
        let truncated = &CLIENT_KEY_PEM[..CLIENT_KEY_PEM.len() - 30];
        let err = check_private_key(truncated.as_bytes()).unwrap_err();
        assert_eq!(err, "a PEM block has no END line");
    }

    #[test]
    fn debug_shows_sizes_not_material() {
        let tls = TlsConfig {
            ca_pem: Some(CA_PEM.as_bytes().to_vec()),
            client_cert_pem: Some(CLIENT_CERT_PEM.as_bytes().to_vec()),
            client_key_pem: Some(Secret::new(CLIENT_KEY_PEM.as_bytes().to_vec())),
            ..TlsConfig::default()
        };
        let shown = format!("{tls:?}");
        assert!(!shown.contains("BEGIN"), "{shown}");
        assert!(
            shown.contains(&format!("<{} bytes>", CA_PEM.len())),
            "{shown}"
        );
        assert!(tls.has_client_cert());
    }
}
