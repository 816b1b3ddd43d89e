//! How requests authenticate: [`Auth`], the one credential a transport attaches, and
//! [`Impersonation`].
//!
//! client-go's `rest.Config` holds `BearerToken`, `BearerTokenFile`, `Username`/`Password`,
//! `ExecProvider` and `AuthProvider` side by side and sorts them out while assembling the
//! transport (`transport/round_trippers.go`: bearer **or** basic, both is an error; the exec
//! authenticator steps aside when a token, basic auth or a client certificate is set). Here
//! that decision is made once, when the configuration is built, and its outcome is an enum the
//! transport matches on. A client certificate is not an `Auth` variant: it lives in
//! [`TlsConfig`](super::TlsConfig) and can accompany any of them.
//!
//! What the transport is expected to do with each variant (client-go's behaviour):
//! * [`Auth::Bearer`]: `Authorization: Bearer <token>` unless the request already has an
//!   `Authorization` header.
//! * [`Auth::TokenFile`]: the same with [`TokenFile::token`], which re-reads the file when the
//!   token it holds is 50 s old.
//! * [`Auth::Basic`]: `Authorization: Basic base64(username:password)`.
//! * [`Auth::Exec`]: the token of [`ExecAuthenticator::credential`], or its client certificate
//!   on new connections; on a 401 response, [`ExecAuthenticator::invalidate_if_current`] with
//!   the credential the request used, so that the next request runs the plugin again.

use std::collections::BTreeMap;

use super::exec::ExecAuthenticator;
use super::secret::Secret;
use super::token_file::TokenFile;

/// The credential a transport attaches to requests.
#[derive(Clone, Debug, Default)]
pub enum Auth {
    /// No credential (anonymous, or a client certificate alone).
    #[default]
    None,
    /// A fixed bearer token.
    Bearer(Secret<String>),
    /// A bearer token read from a file that is re-read periodically (it rotates: projected
    /// service-account tokens, `tokenFile`).
    TokenFile(TokenFile),
    /// HTTP basic authentication.
    Basic {
        /// The user name.
        username: String,
        /// The password.
        password: Secret<String>,
    },
    /// Credentials from an exec plugin, cached until they expire.
    Exec(ExecAuthenticator),
}

/// Act as another user (kubeconfig `as`, `as-uid`, `as-groups`, `as-user-extra`; the
/// `Impersonate-*` headers).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Impersonation {
    /// `Impersonate-User`.
    pub user: String,
    /// `Impersonate-Uid`.
    pub uid: Option<String>,
    /// `Impersonate-Group`, one header per group.
    pub groups: Vec<String>,
    /// `Impersonate-Extra-<key>`, one header per value.
    pub extra: BTreeMap<String, Vec<String>>,
}
