//! The control plane's PKI: a CA, the API server's serving certificate, client certificates
//! for the admin and the controller-manager, the service-account signing key and a bearer
//! token, generated with rcgen and written with owner-only permissions.
//!
//! Mirrors what controller-runtime's envtest generates (`internal/testing/certs`) and what
//! kubeadm lays out, reduced to what a test control plane needs. Keys are ECDSA P-256, which
//! rcgen generates natively and kube-apiserver accepts everywhere (serving, client
//! certificates, service-account tokens signed ES256); the reference shell script uses RSA
//! through openssl, to the same effect.

use std::fs;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa,
    KeyPair, KeyUsagePurpose,
};

use crate::error::Error;

/// The files of a generated PKI, all PEM.
#[derive(Clone)]
pub(crate) struct Pki {
    pub dir: PathBuf,
    pub ca_pem: String,
    pub admin_cert_pem: String,
    pub admin_key_pem: String,
    pub token: String,
}

impl std::fmt::Debug for Pki {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pki")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Pki {
    pub fn path(&self, file: &str) -> PathBuf {
        self.dir.join(file)
    }

    /// Generates the PKI into `dir` (created if needed).
    pub fn generate(dir: &Path) -> Result<Pki, Error> {
        fs::create_dir_all(dir).map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
        let write = |name: &str, content: &str, secret: bool| -> Result<(), Error> {
            let path = dir.join(name);
            fs::write(&path, content)
                .and_then(|()| {
                    let mode = if secret { 0o600 } else { 0o644 };
                    fs::set_permissions(&path, fs::Permissions::from_mode(mode))
                })
                .map_err(|e| Error::io(format!("writing {}", path.display()), e))
        };

        let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(DnType::CommonName, "clientgo-envtest-ca");
        ca_params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca_key = KeyPair::generate()?;
        let ca = ca_params.self_signed(&ca_key)?;
        write("ca.crt", &ca.pem(), false)?;
        write("ca.key", &ca_key.serialize_pem(), true)?;
        let issuer = (&ca, &ca_key);

        let serving = [
            "127.0.0.1",
            "localhost",
            "kubernetes",
            "kubernetes.default",
            "kubernetes.default.svc",
            "kubernetes.default.svc.cluster.local",
            "10.0.0.1",
        ];
        let (cert, key) = leaf(issuer, "kube-apiserver", None, &serving, true)?;
        write("apiserver.crt", &cert, false)?;
        write("apiserver.key", &key, true)?;
        let (admin_cert, admin_key) =
            leaf(issuer, "envtest-admin", Some("system:masters"), &[], false)?;
        write("admin.crt", &admin_cert, false)?;
        write("admin.key", &admin_key, true)?;
        let (cm_cert, cm_key) = leaf(
            issuer,
            "system:kube-controller-manager",
            Some("system:masters"),
            &[],
            false,
        )?;
        write("controller-manager.crt", &cm_cert, false)?;
        write("controller-manager.key", &cm_key, true)?;
        let sa = KeyPair::generate()?;
        write("sa.key", &sa.serialize_pem(), true)?;
        write("sa.pub", &sa.public_key_pem(), false)?;

        let token = random_hex(32)?;
        write(
            "tokens.csv",
            &format!("{token},envtest-token-admin,envtest-token-admin-uid,\"system:masters\"\n"),
            true,
        )?;
        Ok(Pki {
            dir: dir.to_owned(),
            ca_pem: ca.pem(),
            admin_cert_pem: admin_cert,
            admin_key_pem: admin_key,
            token,
        })
    }
}

/// A certificate signed by the CA: a server certificate for `sans`, or a client certificate
/// whose organization (a Kubernetes group) is `org`. Returns (certificate, key) as PEM.
fn leaf(
    issuer: (&Certificate, &KeyPair),
    common_name: &str,
    org: Option<&str>,
    sans: &[&str],
    server: bool,
) -> Result<(String, String), Error> {
    let mut params =
        CertificateParams::new(sans.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())?;
    params
        .distinguished_name
        .push(DnType::CommonName, common_name);
    if let Some(org) = org {
        params
            .distinguished_name
            .push(DnType::OrganizationName, org);
    }
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![if server {
        ExtendedKeyUsagePurpose::ServerAuth
    } else {
        ExtendedKeyUsagePurpose::ClientAuth
    }];
    let key = KeyPair::generate()?;
    let cert = params.signed_by(&key, issuer.0, issuer.1)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// `bytes` random bytes from the kernel, as lowercase hex.
pub(crate) fn random_hex(bytes: usize) -> Result<String, Error> {
    let mut buf = vec![0u8; bytes];
    fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| Error::io("reading /dev/urandom", e))?;
    Ok(buf.iter().map(|b| format!("{b:02x}")).collect())
}
