//! Turning a kubeconfig `server` or `proxy-url` string into an [`http::Uri`].
//!
//! Mirrors client-go `rest/url_utils.go` (`DefaultServerURL`), `clientcmd.ClientConfig` (query
//! and fragment dropped) and `clientcmd`'s `parseProxyURL`:
//! * A URL with a scheme is used as is; its path is kept as a prefix for every request (as
//!   behind Rancher's `/k8s/clusters/<id>`). Query and fragment are dropped.
//! * A bare `host:port` gets `http://`: when clientcmd decides whether the transport is TLS it
//!   has not yet merged any TLS setting, so a scheme-less server is plain HTTP and, as with any
//!   `http://` server, no credentials are sent to it.
//! * A bare host with a path is an error ("host must be a URL or a host:port pair").
//! * Proxy URLs must be `http`, `https` or `socks5`.
//!
//! Differences from client-go, and why:
//! * Schemes other than `http`/`https` for the server are rejected here; client-go accepts the
//!   string and fails on the first request.
//! * A server URL with user info (`https://user:pass@host`) is rejected, and error messages
//!   print URLs with user info replaced by `REDACTED`: credentials belong in the user entry.

use http::Uri;

/// Parses a server URL; the reason it is unusable otherwise.
pub(crate) fn parse_server(server: &str) -> Result<Uri, String> {
    let trimmed = strip_query_and_fragment(server);
    let with_scheme = if trimmed.contains("://") {
        trimmed.to_owned()
    } else {
        if trimmed.contains('/') {
            return Err("a server without a scheme must be a host:port pair".to_owned());
        }
        format!("http://{trimmed}")
    };
    let uri: Uri = with_scheme
        .parse()
        .map_err(|e: http::uri::InvalidUri| e.to_string())?;
    match uri.scheme_str() {
        Some(s) if s.eq_ignore_ascii_case("https") || s.eq_ignore_ascii_case("http") => {}
        Some(other) => {
            return Err(format!(
                "unsupported scheme {other:?}, must be https or http"
            ));
        }
        None => return Err("no scheme".to_owned()),
    }
    let authority = uri.authority().ok_or("no host")?;
    if authority.as_str().contains('@') {
        return Err("user info is not allowed in the server URL".to_owned());
    }
    if authority.host().is_empty() {
        return Err("no host".to_owned());
    }
    check_port(authority)?;
    Ok(uri)
}

/// Parses a proxy URL; the reason it is unusable otherwise.
pub(crate) fn parse_proxy(proxy: &str) -> Result<Uri, String> {
    let uri: Uri = proxy
        .parse()
        .map_err(|e: http::uri::InvalidUri| e.to_string())?;
    match uri.scheme_str() {
        Some("http" | "https" | "socks5") => {}
        Some(other) => {
            return Err(format!(
                "unsupported scheme {other:?}, must be http, https, or socks5"
            ));
        }
        None => return Err("no scheme (must be http, https, or socks5)".to_owned()),
    }
    match uri.authority() {
        Some(a) if !a.host().is_empty() => check_port(a).map(|()| uri),
        _ => Err("no host".to_owned()),
    }
}

/// `http::Uri` accepts any text after the host's colon; a port must be a number below 65536.
fn check_port(authority: &http::uri::Authority) -> Result<(), String> {
    let host_port = authority.as_str().rsplit('@').next().unwrap_or_default();
    let after_host = host_port.strip_prefix(authority.host()).unwrap_or_default();
    match after_host.strip_prefix(':') {
        None => Ok(()),
        Some(port) if port.parse::<u16>().is_ok() => Ok(()),
        // Not quoted: in a URL missing its host, the "port" may be a password.
        Some(_) => Err("the port is not a number from 0 to 65535".to_owned()),
    }
}

/// `url` with the user-info part of its authority replaced by `REDACTED`.
pub(crate) fn redact_userinfo(url: &str) -> String {
    let Some(scheme_end) = url.find("://") else {
        return url.to_owned();
    };
    let rest = &url[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}://REDACTED{}", &url[..scheme_end], &rest[at..]),
        None => url.to_owned(),
    }
}

fn strip_query_and_fragment(url: &str) -> &str {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    &url[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_with_scheme_keep_their_path() {
        let uri = parse_server("https://rancher.example:443/k8s/clusters/c-1?x=1#frag").unwrap();
        assert_eq!(
            uri.to_string(),
            "https://rancher.example:443/k8s/clusters/c-1"
        );
        let uri = parse_server("https://[2001:db8::1]:6443").unwrap();
        assert_eq!(uri.host(), Some("[2001:db8::1]"));
        assert_eq!(uri.port_u16(), Some(6443));
    }

    #[test]
    fn bare_host_port_is_plain_http() {
        assert_eq!(
            parse_server("10.0.0.1:8080").unwrap().to_string(),
            "http://10.0.0.1:8080/"
        );
        assert!(parse_server("10.0.0.1:8080/api").is_err());
    }

    #[test]
    fn unusable_servers_are_rejected() {
        assert!(
            parse_server("ftp://host")
                .unwrap_err()
                .contains("unsupported scheme")
        );
        assert!(parse_server("https://").is_err());
        assert!(parse_server("https://a b").is_err());
        assert!(
            parse_server("https://h:port")
                .unwrap_err()
                .contains("the port is not a number")
        );
        assert!(
            !parse_proxy("http://user:secret/")
                .unwrap_err()
                .contains("secret")
        );
        assert!(parse_server("https://h:65536").is_err());
        assert!(parse_proxy("http://p:x").is_err());
        let err = parse_server("https://admin:hunter2@host").unwrap_err();
        assert!(err.contains("user info"), "{err}");
    }

    #[test]
    fn proxy_schemes_follow_client_go() {
        assert!(parse_proxy("socks5://proxy:1080").is_ok());
        assert!(parse_proxy("http://user:pw@proxy:3128").is_ok());
        assert!(
            parse_proxy("ftp://proxy")
                .unwrap_err()
                .contains("http, https, or socks5")
        );
        assert!(parse_proxy("proxy:3128").is_err());
    }

    #[test]
    fn user_info_is_redacted() {
        assert_eq!(
            redact_userinfo("https://admin:hunter2@host:6443/p?q"),
            "https://REDACTED@host:6443/p?q"
        );
        assert_eq!(redact_userinfo("https://host/a@b"), "https://host/a@b");
        assert_eq!(redact_userinfo("host:1"), "host:1");
    }
}
