//! TLS serving: a generated CA and a serving certificate for `localhost` / `127.0.0.1`.
//!
//! Plays the role of kube-apiserver's self-signed serving certificate
//! (`--cert-dir` with generated certs), but with a separate CA so that clients verify the
//! chain for real, as they do with a cluster CA from a kubeconfig. Keys are ECDSA P-256;
//! the server offers HTTP/2 and HTTP/1.1 through ALPN.

use std::sync::Arc;

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, KeyPair,
    KeyUsagePurpose,
};
use rustls::ServerConfig;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA and a serving certificate signed by it. Its `Debug` leaves out the private key.
#[derive(Clone)]
pub struct TlsMaterial {
    /// The CA certificate, PEM.
    pub ca_pem: String,
    /// The CA certificate, DER.
    pub ca_der: Vec<u8>,
    /// The serving certificate, DER.
    pub cert_der: Vec<u8>,
    /// The serving key, PKCS#8 DER.
    pub key_der: Vec<u8>,
}

impl std::fmt::Debug for TlsMaterial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsMaterial")
            .field("ca_pem", &self.ca_pem)
            .field("cert_der", &format_args!("{} bytes", self.cert_der.len()))
            .field("key_der", &"<redacted>")
            .finish_non_exhaustive()
    }
}

/// Why TLS setup failed.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// Certificate generation failed.
    #[error("generating certificates: {0}")]
    Generate(#[from] rcgen::Error),
    /// rustls refused the configuration.
    #[error("configuring TLS: {0}")]
    Config(#[from] rustls::Error),
}

/// Generates a CA and a serving certificate for `localhost`, `127.0.0.1` and `::1`.
pub fn generate() -> Result<TlsMaterial, TlsError> {
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "apiserver-sim-ca");
    ca_params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    let ca_key = KeyPair::generate()?;
    let ca = ca_params.self_signed(&ca_key)?;
    let mut params = CertificateParams::new(vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ])?;
    params
        .distinguished_name
        .push(DnType::CommonName, "kube-apiserver");
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, &ca, &ca_key)?;
    Ok(TlsMaterial {
        ca_pem: ca.pem(),
        ca_der: ca.der().to_vec(),
        cert_der: cert.der().to_vec(),
        key_der: key.serialize_der(),
    })
}

/// The rustls server configuration for `material`, offering `h2` and `http/1.1`.
pub fn server_config(material: &TlsMaterial) -> Result<Arc<ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(material.cert_der.clone())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(material.key_der.clone())),
        )?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

#[cfg(test)]
mod tests {
    #[test]
    fn generates_a_usable_config() {
        let m = super::generate().unwrap();
        assert!(m.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
        super::server_config(&m).unwrap();
    }

    #[test]
    fn debug_leaves_out_the_private_key() {
        let m = super::generate().unwrap();
        let text = format!("{m:?}");
        assert!(text.contains("<redacted>"), "{text}");
        let key_bytes = format!("{:?}", m.key_der);
        assert!(!text.contains(&key_bytes[1..key_bytes.len() - 1]), "{text}");
    }
}
