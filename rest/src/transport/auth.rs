//! The headers every request gets from the configuration: credentials, `User-Agent`,
//! `Impersonate-*`. client-go's round-tripper wrappers (`transport/round_trippers.go`,
//! `transport/token_source.go`, `plugin/pkg/client/auth/exec/exec.go`).
//!
//! | [`Auth`] | header |
//! |---|---|
//! | `Bearer(token)` | `Authorization: Bearer <token>` |
//! | `TokenFile(file)` | the same with the file's token, re-read when 50 s old ([`TokenFile::token`](crate::config::TokenFile::token)) |
//! | `Basic { username, password }` | `Authorization: Basic base64(username:password)` |
//! | `Exec(plugin)` | `Authorization: Bearer <token>` from the plugin's cached credential; its client certificate goes to TLS (see [`Transport`](super::Transport)) |
//! | `None` | nothing |
//!
//! As in client-go, a request that already has an `Authorization` header keeps it, a
//! `User-Agent` already set is kept, and impersonation headers are added only when the request
//! has no `Impersonate-User` of its own. Credential header values are marked sensitive (never
//! indexed by HPACK, hidden from `Debug`). After a 401, the exec credential the request used is
//! dropped ([`ExecAuthenticator::invalidate_if_current`]) so the next request runs the plugin
//! again; the failed request itself is not retried, as in client-go.

use std::sync::Arc;

use base64::Engine as _;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

use crate::config::{Auth, Config, ExecAuthenticator, ExecCredential, Impersonation};
use crate::error::Error;

/// Adds the configuration's headers to requests.
#[derive(Debug)]
pub(crate) struct Authenticator {
    auth: Auth,
    user_agent: HeaderValue,
    impersonation: Vec<(HeaderName, HeaderValue)>,
    /// The `Authorization` value of a credential that never changes (`Bearer`, `Basic`),
    /// made once rather than formatted for every request; `None` for the others, and for
    /// a credential that is not a valid header value (each request then fails as before).
    fixed_authorization: Option<HeaderValue>,
}

impl Authenticator {
    pub(crate) fn new(config: &Config) -> Result<Self, Error> {
        let user_agent =
            HeaderValue::from_str(&config.user_agent).map_err(|_| Error::InvalidConfig {
                field: "user_agent",
                reason: "not a valid header value".to_owned(),
            })?;
        let impersonation = match &config.impersonate {
            Some(imp) => impersonation_headers(imp)?,
            None => Vec::new(),
        };
        let fixed_authorization = match &config.auth {
            Auth::Bearer(token) => bearer(token.expose()).ok(),
            Auth::Basic { username, password } => basic(username, password.expose()).ok(),
            _ => None,
        };
        Ok(Authenticator {
            auth: config.auth.clone(),
            user_agent,
            impersonation,
            fixed_authorization,
        })
    }

    /// The exec authenticator, if the credential comes from a plugin.
    pub(crate) fn exec(&self) -> Option<&ExecAuthenticator> {
        match &self.auth {
            Auth::Exec(exec) => Some(exec),
            _ => None,
        }
    }

    /// Adds the headers; returns the exec credential used, if any.
    pub(crate) async fn apply(
        &self,
        headers: &mut HeaderMap,
    ) -> Result<Option<Arc<ExecCredential>>, Error> {
        if !headers.contains_key(http::header::USER_AGENT) {
            headers.insert(http::header::USER_AGENT, self.user_agent.clone());
        }
        if !self.impersonation.is_empty() && !headers.contains_key(IMPERSONATE_USER) {
            for (name, value) in &self.impersonation {
                headers.append(name.clone(), value.clone());
            }
        }
        let has_authorization = headers.contains_key(http::header::AUTHORIZATION);
        let mut used = None;
        let value = match (&self.fixed_authorization, &self.auth) {
            (Some(fixed), _) => Some(fixed.clone()),
            (None, Auth::None) => None,
            (None, Auth::Bearer(token)) => Some(bearer(token.expose())?),
            (None, Auth::TokenFile(file)) => Some(bearer(file.token()?.expose())?),
            (None, Auth::Basic { username, password }) => Some(basic(username, password.expose())?),
            (None, Auth::Exec(exec)) => {
                let credential = exec.credential().await?;
                let value = credential
                    .token
                    .as_ref()
                    .map(|token| bearer(token.expose()))
                    .transpose()?;
                used = Some(credential);
                value
            }
        };
        if let Some(value) = value {
            if !has_authorization {
                headers.insert(http::header::AUTHORIZATION, value);
            }
        }
        Ok(used)
    }

    /// Acts on a response: after a 401, drops the exec credential the request used.
    pub(crate) fn on_response(&self, status: StatusCode, used: Option<&Arc<ExecCredential>>) {
        if status != StatusCode::UNAUTHORIZED {
            return;
        }
        if let (Some(exec), Some(used)) = (self.exec(), used) {
            if exec.invalidate_if_current(used) {
                tracing::debug!(
                    command = %exec.config().command,
                    "the server refused the exec plugin's credential (401): the plugin runs again on the next request"
                );
            }
        }
    }
}

const IMPERSONATE_USER: &str = "impersonate-user";

fn bearer(token: &str) -> Result<HeaderValue, Error> {
    sensitive(&format!("Bearer {token}"))
}

fn basic(username: &str, password: &str) -> Result<HeaderValue, Error> {
    let encoded =
        base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"));
    sensitive(&format!("Basic {encoded}"))
}

/// A sensitive header value; the error never repeats it.
fn sensitive(value: &str) -> Result<HeaderValue, Error> {
    let mut value = HeaderValue::from_str(value).map_err(|_| Error::InvalidConfig {
        field: "auth",
        reason: "the credential contains characters not allowed in an HTTP header".to_owned(),
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// The `Impersonate-*` headers (client-go's `NewImpersonatingRoundTripper`).
fn impersonation_headers(imp: &Impersonation) -> Result<Vec<(HeaderName, HeaderValue)>, Error> {
    let invalid = |what: &str| Error::InvalidConfig {
        field: "impersonate",
        reason: format!("{what} is not a valid header value"),
    };
    let value = |v: &str, what: &str| HeaderValue::from_str(v).map_err(|_| invalid(what));
    let mut headers = Vec::new();
    if !imp.user.is_empty() {
        headers.push((
            HeaderName::from_static(IMPERSONATE_USER),
            value(&imp.user, "the user")?,
        ));
    }
    if let Some(uid) = imp.uid.as_deref().filter(|u| !u.is_empty()) {
        headers.push((
            HeaderName::from_static("impersonate-uid"),
            value(uid, "the uid")?,
        ));
    }
    for group in &imp.groups {
        headers.push((
            HeaderName::from_static("impersonate-group"),
            value(group, "a group")?,
        ));
    }
    for (key, values) in &imp.extra {
        let name = format!("impersonate-extra-{}", escape_header_key(key));
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid("an extra key"))?;
        for v in values {
            headers.push((name.clone(), value(v, "an extra value")?));
        }
    }
    Ok(headers)
}

/// client-go's `headerKeyEscape`: percent-encodes bytes that are not header token characters,
/// and `%` itself.
fn escape_header_key(key: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(key.len());
    for &b in key.as_bytes() {
        let token = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'!' | b'#'
                    | b'$'
                    | b'&'
                    | b'\''
                    | b'*'
                    | b'+'
                    | b'-'
                    | b'.'
                    | b'^'
                    | b'_'
                    | b'`'
                    | b'|'
                    | b'~'
            );
        if token {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Secret;

    fn config(auth: Auth) -> Config {
        let mut config = Config::new("https://k8s.example:6443".parse().unwrap());
        config.auth = auth;
        config
    }

    #[tokio::test]
    async fn each_variant_sets_its_header_and_respects_an_existing_one() {
        let cases = [
            (Auth::None, None),
            (Auth::Bearer(Secret::from("abc")), Some("Bearer abc")),
            (
                Auth::Basic {
                    username: "alice".into(),
                    password: Secret::from("s3cret"),
                },
                Some("Basic YWxpY2U6czNjcmV0"),
            ),
        ];
        for (auth, expected) in cases {
            let authenticator = Authenticator::new(&config(auth)).unwrap();
            let mut headers = HeaderMap::new();
            authenticator.apply(&mut headers).await.unwrap();
            let got = headers.get(http::header::AUTHORIZATION);
            assert_eq!(got.map(|v| v.to_str().unwrap()), expected);
            assert!(got.is_none_or(HeaderValue::is_sensitive));
            assert!(
                headers[http::header::USER_AGENT]
                    .to_str()
                    .unwrap()
                    .starts_with("clientgo-rs/")
            );

            let mut preset = HeaderMap::new();
            preset.insert(
                http::header::AUTHORIZATION,
                HeaderValue::from_static("Bearer mine"),
            );
            preset.insert(http::header::USER_AGENT, HeaderValue::from_static("me/1"));
            authenticator.apply(&mut preset).await.unwrap();
            assert_eq!(preset[http::header::AUTHORIZATION], "Bearer mine");
            assert_eq!(preset[http::header::USER_AGENT], "me/1");
        }
    }

    #[tokio::test]
    async fn impersonation_headers_as_client_go_writes_them() {
        let mut config = config(Auth::None);
        config.impersonate = Some(Impersonation {
            user: "jane".into(),
            uid: Some("1234".into()),
            groups: vec!["devs".into(), "ops".into()],
            extra: [(
                "scopes.example/with space%".to_owned(),
                vec!["a".to_owned(), "b".to_owned()],
            )]
            .into_iter()
            .collect(),
        });
        let authenticator = Authenticator::new(&config).unwrap();
        let mut headers = HeaderMap::new();
        authenticator.apply(&mut headers).await.unwrap();
        assert_eq!(headers["impersonate-user"], "jane");
        assert_eq!(headers["impersonate-uid"], "1234");
        let groups: Vec<_> = headers.get_all("impersonate-group").iter().collect();
        assert_eq!(groups, ["devs", "ops"]);
        let extra: Vec<_> = headers
            .get_all("impersonate-extra-scopes.example%2Fwith%20space%25")
            .iter()
            .collect();
        assert_eq!(extra, ["a", "b"]);

        let mut own = HeaderMap::new();
        own.insert("impersonate-user", HeaderValue::from_static("other"));
        authenticator.apply(&mut own).await.unwrap();
        assert_eq!(own["impersonate-user"], "other");
        assert!(own.get("impersonate-group").is_none());
    }

    #[tokio::test]
    async fn a_token_that_cannot_be_a_header_is_refused_without_being_quoted() {
        let authenticator =
            Authenticator::new(&config(Auth::Bearer(Secret::from("line\nbreak-secret")))).unwrap();
        let err = authenticator
            .apply(&mut HeaderMap::new())
            .await
            .unwrap_err()
            .to_string();
        assert!(!err.contains("break-secret"), "{err}");
    }
}
