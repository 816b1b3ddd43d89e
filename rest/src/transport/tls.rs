//! The rustls client configuration: trust, client certificate, protocols.
//!
//! Mirrors client-go's `transport.TLSConfigFor` (`transport/transport.go`):
//! * TLS 1.2 or 1.3, with rustls' `ring` provider only (no aws-lc build).
//! * Trust: the configuration's CA bundle and nothing else when it has one; otherwise the
//!   system's roots ([`rustls_native_certs`], read once per process), as Go uses the system
//!   pool.
//! * `insecure_skip_tls_verify`: **any server certificate is accepted** (see
//!   `AcceptAnyServerCert`); together with a CA it is an error, as in client-go.
//! * A client certificate and key when the configuration (or an exec plugin) gives them.
//! * ALPN `h2` then `http/1.1`: HTTP/2 when the server offers it, HTTP/1.1 otherwise.
//!
//! Errors describe what is wrong with the PEM without quoting it.

use std::sync::{Arc, OnceLock};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::config::TlsConfig;
use crate::error::Error;

/// A client certificate chain and its key, as PEM.
pub(crate) struct ClientIdentity<'a> {
    pub(crate) cert_pem: &'a [u8],
    pub(crate) key_pem: &'a [u8],
}

fn invalid(field: &'static str, reason: impl Into<String>) -> Error {
    Error::InvalidConfig {
        field,
        reason: reason.into(),
    }
}

/// The rustls configuration for `tls`, presenting `identity` if given.
pub(crate) fn client_config(
    tls: &TlsConfig,
    identity: Option<ClientIdentity<'_>>,
    http2: bool,
) -> Result<Arc<ClientConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| invalid("tls", format!("no usable TLS protocol version: {e}")))?;
    let builder = if tls.insecure_skip_tls_verify {
        if tls.ca_pem.is_some() {
            return Err(invalid(
                "tls.insecure_skip_tls_verify",
                "a CA bundle together with insecure-skip-tls-verify is not allowed",
            ));
        }
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyServerCert {
                algorithms: provider.signature_verification_algorithms,
            }))
    } else {
        let roots = match &tls.ca_pem {
            Some(pem) => Arc::new(roots_from_pem(pem)?),
            None => system_roots(),
        };
        builder.with_root_certificates(roots)
    };
    let mut config = match identity {
        None => builder.with_no_client_auth(),
        Some(identity) => {
            let chain = certificates(identity.cert_pem, "tls.client_cert_pem")?;
            let key = PrivateKeyDer::from_pem_slice(identity.key_pem).map_err(|_| {
                invalid(
                    "tls.client_key_pem",
                    "no usable PEM private key (PRIVATE KEY, RSA PRIVATE KEY or EC PRIVATE KEY)",
                )
            })?;
            builder.with_client_auth_cert(chain, key).map_err(|e| {
                invalid(
                    "tls.client_cert_pem",
                    format!("unusable client certificate or key: {e}"),
                )
            })?
        }
    };
    config.alpn_protocols = if http2 {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        vec![b"http/1.1".to_vec()]
    };
    Ok(Arc::new(config))
}

fn certificates(pem: &[u8], field: &'static str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| invalid(field, "not valid PEM"))?;
    if certs.is_empty() {
        return Err(invalid(field, "no PEM CERTIFICATE block found"));
    }
    Ok(certs)
}

fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    for cert in certificates(pem, "tls.ca_pem")? {
        roots
            .add(cert)
            .map_err(|e| invalid("tls.ca_pem", format!("unusable CA certificate: {e}")))?;
    }
    Ok(roots)
}

/// The system's trust store, read once per process.
fn system_roots() -> Arc<RootCertStore> {
    static ROOTS: OnceLock<Arc<RootCertStore>> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let found = rustls_native_certs::load_native_certs();
            for error in &found.errors {
                tracing::debug!(%error, "problem reading the system's root certificates");
            }
            let mut roots = RootCertStore::empty();
            let (added, ignored) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                tracing::warn!(
                    ignored,
                    "no system root certificates found: TLS servers can only be trusted through a configured CA"
                );
            }
            Arc::new(roots)
        })
        .clone()
}

/// `insecure-skip-tls-verify`: accepts **any** server certificate, whoever issued it and
/// whatever name it is for, so the connection is encrypted but the server is not
/// authenticated (anyone in the path can impersonate it). Handshake signatures are still
/// checked against the presented certificate, as Go's `InsecureSkipVerify` does.
#[derive(Debug)]
pub(crate) struct AcceptAnyServerCert {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for AcceptAnyServerCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The name to verify and send as SNI: the override, else the URL's host.
pub(crate) fn server_name(
    override_name: Option<&str>,
    host: &str,
) -> Result<ServerName<'static>, String> {
    let name = override_name.unwrap_or(host);
    let name = name.trim_start_matches('[').trim_end_matches(']');
    ServerName::try_from(name.to_owned())
        .map_err(|_| format!("{name:?} is not a valid TLS server name"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    #[test]
    fn ca_with_insecure_is_refused_and_bad_pem_is_described_without_content() {
        let tls = TlsConfig {
            ca_pem: Some(
                b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
            ),
            insecure_skip_tls_verify: true,
            ..TlsConfig::default()
        };
        let err = client_config(&tls, None, true).unwrap_err().to_string();
        assert!(err.contains("insecure-skip-tls-verify"), "{err}");

        let tls = TlsConfig {
            ca_pem: Some(b"garbage".to_vec()),
            ..TlsConfig::default()
        };
        let err = client_config(&tls, None, true).unwrap_err().to_string();
        assert!(err.contains("no PEM CERTIFICATE block"), "{err}");

        let key = Secret::new(
            b"-----BEGIN PRIVATE KEY-----\nc2VjcmV0LWtleQ==\n-----END PRIVATE KEY-----\n".to_vec(),
        );
        let tls = TlsConfig {
            insecure_skip_tls_verify: true,
            ..TlsConfig::default()
        };
        let identity = ClientIdentity {
            cert_pem: b"not a cert",
            key_pem: key.expose(),
        };
        let err = client_config(&tls, Some(identity), true)
            .unwrap_err()
            .to_string();
        assert!(!err.contains("c2VjcmV0LWtleQ"), "{err}");
    }

    #[test]
    fn server_names() {
        assert!(server_name(None, "[::1]").is_ok());
        assert!(server_name(None, "127.0.0.1").is_ok());
        assert!(server_name(Some("kubernetes.default.svc"), "10.0.0.1").is_ok());
        assert!(server_name(Some("bad name!"), "10.0.0.1").is_err());
    }
}
