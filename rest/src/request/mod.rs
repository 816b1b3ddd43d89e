//! The request builder: client-go's `rest.Request` (`rest/request.go`), minus the execution,
//! which lives in the crate's `execute` module.
//!
//! A [`Request`] is made by [`RestClient::request`](crate::RestClient::request) (or `get`,
//! `post`, `put`, `patch`, `delete`) and built by chaining. As in client-go, a builder mistake
//! is remembered and every later call is a no-op; the first mistake is returned by
//! [`Request::url`] and by the sending methods as [`Error::InvalidRequest`].
//!
//! The URL is assembled exactly as client-go's `Request.URL()` does:
//!
//! ```text
//! <server path> / <prefix: api/v1 | apis/<group>/<version>> [/namespaces/<ns>] [/<resource>] [/<name>] [/<subresource>] [/<suffix>] ? <params>
//! ```
//!
//! with Go's `path.Join` cleaning, `namespaces/<ns>` only when a non-empty namespace is set, the
//! resource lower-cased, name, subresource and suffix only when one of them is set, parameters
//! sorted by key (values of one key in the order added), and `timeout=<Go duration>` added when
//! the request has a time limit. Namespace, resource, name and subresource segments are checked
//! (not `.` or `..`, no `/` or `%`), each may be set once, and a name may not be empty. A
//! namespace explicitly set to `""` is refused for POST, and for GET, PUT and DELETE of a named
//! object (client-go's `requestPreflightCheck`).

mod params;
pub(crate) mod url;

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use serde::Serialize;

use crate::client::RestClient;
use crate::error::Error;

pub use params::{
    DeleteParams, GetParams, ListParams, PatchParams, PatchType, PostParams, Preconditions,
    PropagationPolicy, WatchParams,
};

/// The request builders of a client: each request starts from one of these.
impl RestClient {
    /// A request with `method`.
    pub fn request(&self, method: Method) -> Request {
        Request::new(self.clone(), method)
    }

    /// A GET request.
    pub fn get(&self) -> Request {
        self.request(Method::GET)
    }

    /// A POST request.
    pub fn post(&self) -> Request {
        self.request(Method::POST)
    }

    /// A PUT request.
    pub fn put(&self) -> Request {
        self.request(Method::PUT)
    }

    /// A DELETE request.
    pub fn delete(&self) -> Request {
        self.request(Method::DELETE)
    }

    /// A PATCH request whose body is a patch of `patch_type` (its `Content-Type` is set).
    pub fn patch(&self, patch_type: PatchType) -> Request {
        self.request(Method::PATCH).header(
            http::header::CONTENT_TYPE.as_str(),
            patch_type.content_type(),
        )
    }
}

/// The JSON media type, the only one this client speaks.
pub const JSON: &str = "application/json";

/// Headers whose values are credentials: never shown by `Debug`.
const CREDENTIAL_HEADERS: [&str; 5] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-auth-token",
];

/// A request being built. See the module documentation.
///
/// Its `Debug` shows the request without its credentials: the values of `Authorization`,
/// `Proxy-Authorization`, `Cookie`, `X-Auth-Token` and of any header marked sensitive
/// ([`HeaderValue::set_sensitive`]) are redacted, and the body is shown by its length only
/// (it may be a Secret being created).
#[derive(Clone)]
pub struct Request {
    pub(crate) client: RestClient,
    pub(crate) method: Method,
    path_prefix: String,
    subpath: String,
    namespace: Option<String>,
    pub(crate) group: String,
    pub(crate) resource: String,
    pub(crate) name: String,
    subresource: String,
    params: Vec<(String, String)>,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_retries: u32,
    error: Option<String>,
}

impl std::fmt::Debug for Request {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| {
                let secret = value.is_sensitive() || CREDENTIAL_HEADERS.contains(&name.as_str());
                let shown = if secret {
                    "<redacted>"
                } else {
                    value.to_str().unwrap_or("<not text>")
                };
                (name.as_str(), shown)
            })
            .collect();
        f.debug_struct("Request")
            .field("client", &self.client)
            .field("method", &self.method)
            .field("path_prefix", &self.path_prefix)
            .field("subpath", &self.subpath)
            .field("namespace", &self.namespace)
            .field("group", &self.group)
            .field("resource", &self.resource)
            .field("name", &self.name)
            .field("subresource", &self.subresource)
            .field("params", &self.params)
            .field("headers", &headers)
            .field("body", &format_args!("{} bytes", self.body.len()))
            .field("timeout", &self.timeout)
            .field("max_retries", &self.max_retries)
            .field("error", &self.error)
            .finish()
    }
}

impl Request {
    pub(crate) fn new(client: RestClient, method: Method) -> Request {
        let mut headers = HeaderMap::new();
        headers.insert(http::header::ACCEPT, HeaderValue::from_static(JSON));
        let inner = client.inner();
        Request {
            path_prefix: url::join(&["/", &inner.base_path]),
            timeout: inner.timeout,
            max_retries: inner.max_retries,
            client,
            method,
            subpath: String::new(),
            namespace: None,
            group: String::new(),
            resource: String::new(),
            name: String::new(),
            subresource: String::new(),
            params: Vec::new(),
            headers,
            body: Bytes::new(),
            error: None,
        }
    }

    fn fail(mut self, message: String) -> Self {
        if self.error.is_none() {
            self.error = Some(message);
        }
        self
    }

    /// The HTTP method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Sets the API group and version: the path prefix becomes `/api/<version>` for the core
    /// group (`""`) and `/apis/<group>/<version>` otherwise, after the server URL's own path.
    pub fn group_version(mut self, group: &str, version: &str) -> Self {
        if self.error.is_some() {
            return self;
        }
        let base = self.client.inner().base_path.clone();
        self.path_prefix = if group.is_empty() {
            url::join(&["/", &base, "api", version])
        } else {
            url::join(&["/", &base, "apis", group, version])
        };
        self.group = group.to_owned();
        self
    }

    /// Adds segments after the prefix, before the namespace (client-go's `Prefix`).
    pub fn prefix(mut self, segments: &[&str]) -> Self {
        if self.error.is_some() {
            return self;
        }
        let joined = url::join(segments);
        self.path_prefix = url::join(&[&self.path_prefix, &joined]);
        self
    }

    /// Adds segments at the end of the path (client-go's `Suffix`).
    pub fn suffix(mut self, segments: &[&str]) -> Self {
        if self.error.is_some() {
            return self;
        }
        let joined = url::join(segments);
        self.subpath = url::join(&[&self.subpath, &joined]);
        self
    }

    /// Replaces the path with `path` after the server URL's own path (client-go's `AbsPath`
    /// with one segment; a trailing slash is kept).
    pub fn abs_path(mut self, path: &str) -> Self {
        if self.error.is_some() {
            return self;
        }
        let base = self.client.inner().base_path.clone();
        self.path_prefix = url::join(&["/", &base, path]);
        if (base.len() > 1 || path.len() > 1) && path.ends_with('/') {
            self.path_prefix.push('/');
        }
        self
    }

    /// Sets the namespace; `namespaces/<ns>` goes into the path when it is not empty.
    pub fn namespace(mut self, namespace: &str) -> Self {
        if self.error.is_some() {
            return self;
        }
        if let Some(set) = &self.namespace {
            let message =
                format!("namespace already set to {set:?}, cannot change to {namespace:?}");
            return self.fail(message);
        }
        if let Some(why) = url::invalid_segment(namespace) {
            return self.fail(format!("invalid namespace {namespace:?}: {why}"));
        }
        self.namespace = Some(namespace.to_owned());
        self
    }

    /// Sets the namespace if `scoped` (client-go's `NamespaceIfScoped`).
    pub fn namespace_if_scoped(self, namespace: &str, scoped: bool) -> Self {
        if scoped {
            self.namespace(namespace)
        } else {
            self
        }
    }

    /// Sets the resource, e.g. `pods`.
    pub fn resource(mut self, resource: &str) -> Self {
        if self.error.is_some() {
            return self;
        }
        if !self.resource.is_empty() {
            let message = format!(
                "resource already set to {:?}, cannot change to {resource:?}",
                self.resource
            );
            return self.fail(message);
        }
        if let Some(why) = url::invalid_segment(resource) {
            return self.fail(format!("invalid resource {resource:?}: {why}"));
        }
        self.resource = resource.to_owned();
        self
    }

    /// Sets the object's name.
    pub fn name(mut self, name: &str) -> Self {
        if self.error.is_some() {
            return self;
        }
        if name.is_empty() {
            return self.fail("resource name may not be empty".to_owned());
        }
        if !self.name.is_empty() {
            let message = format!(
                "resource name already set to {:?}, cannot change to {name:?}",
                self.name
            );
            return self.fail(message);
        }
        if let Some(why) = url::invalid_segment(name) {
            return self.fail(format!("invalid resource name {name:?}: {why}"));
        }
        self.name = name.to_owned();
        self
    }

    /// Sets the subresource, e.g. `status`, `scale`, `log`.
    pub fn subresource(self, subresource: &str) -> Self {
        self.subresources(&[subresource])
    }

    /// Sets a subresource of several segments (client-go's `SubResource(parts...)`).
    pub fn subresources(mut self, parts: &[&str]) -> Self {
        if self.error.is_some() {
            return self;
        }
        let joined = url::join(parts);
        if !self.subresource.is_empty() {
            let message = format!(
                "subresource already set to {:?}, cannot change to {joined:?}",
                self.subresource
            );
            return self.fail(message);
        }
        for part in parts {
            if let Some(why) = url::invalid_segment(part) {
                return self.fail(format!("invalid subresource {part:?}: {why}"));
            }
        }
        self.subresource = joined;
        self
    }

    /// Adds a query parameter (additive: a key may have several values).
    pub fn param(mut self, key: &str, value: impl Into<String>) -> Self {
        if self.error.is_none() {
            self.params.push((key.to_owned(), value.into()));
        }
        self
    }

    /// `labelSelector`.
    pub fn label_selector(self, selector: &str) -> Self {
        self.param("labelSelector", selector)
    }

    /// `fieldSelector`.
    pub fn field_selector(self, selector: &str) -> Self {
        self.param("fieldSelector", selector)
    }

    /// `limit`: the most items per list page.
    pub fn limit(self, limit: i64) -> Self {
        self.param("limit", limit.to_string())
    }

    /// `continue`: the token of the next list page.
    pub fn continue_token(self, token: &str) -> Self {
        self.param("continue", token)
    }

    /// `resourceVersion`.
    pub fn resource_version(self, resource_version: &str) -> Self {
        self.param("resourceVersion", resource_version)
    }

    /// `resourceVersionMatch`: `Exact` or `NotOlderThan`.
    pub fn resource_version_match(self, r#match: &str) -> Self {
        self.param("resourceVersionMatch", r#match)
    }

    /// `timeoutSeconds`: the server-side limit of a list or watch.
    pub fn timeout_seconds(self, seconds: i64) -> Self {
        self.param("timeoutSeconds", seconds.to_string())
    }

    /// `allowWatchBookmarks`.
    pub fn allow_watch_bookmarks(self, allow: bool) -> Self {
        self.param("allowWatchBookmarks", allow.to_string())
    }

    /// `sendInitialEvents` (streaming lists).
    pub fn send_initial_events(self, send: bool) -> Self {
        self.param("sendInitialEvents", send.to_string())
    }

    /// `dryRun=All`: the server validates and answers but persists nothing.
    pub fn dry_run(self) -> Self {
        self.param("dryRun", "All")
    }

    /// `fieldManager`.
    pub fn field_manager(self, manager: &str) -> Self {
        self.param("fieldManager", manager)
    }

    /// `propagationPolicy`.
    pub fn propagation_policy(self, policy: PropagationPolicy) -> Self {
        self.param("propagationPolicy", policy.as_str())
    }

    /// Sets a header, replacing any value it had (client-go's `SetHeader`).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        if self.error.is_some() {
            return self;
        }
        match (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            (Ok(name), Ok(value)) => {
                self.headers.insert(name, value);
                self
            }
            // The value is not quoted: it could be a credential.
            _ => self.fail(format!("invalid header {name:?} or its value")),
        }
    }

    /// Sets the body, sent as is.
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        if self.error.is_none() {
            self.body = body.into();
        }
        self
    }

    /// Sets the body to `value` as JSON, with `Content-Type: application/json` unless a
    /// content type is already set (a patch's).
    pub fn json<T: Serialize + ?Sized>(mut self, value: &T) -> Self {
        if self.error.is_some() {
            return self;
        }
        match serde_json::to_vec(value) {
            Ok(bytes) => {
                self.headers
                    .entry(http::header::CONTENT_TYPE)
                    .or_insert(HeaderValue::from_static(JSON));
                self.body = Bytes::from(bytes);
                self
            }
            Err(e) => self.fail(format!("unable to encode the body as JSON: {e}")),
        }
    }

    /// Limits the whole request (throttle waits after the first, retries, and reading the
    /// body) to `timeout`, and sends it as the `timeout` parameter. Replaces the client's
    /// [`Config::timeout`](crate::Config::timeout); a zero duration removes the limit.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout).filter(|t| !t.is_zero());
        self
    }

    /// The most retries (client-go's `MaxRetries`; default 10, 0 for none).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// The path (unescaped), as client-go's `URL().Path`.
    pub fn path(&self) -> String {
        let namespace = self.namespace.as_deref().filter(|ns| !ns.is_empty());
        let named =
            !self.name.is_empty() || !self.subpath.is_empty() || !self.subresource.is_empty();
        if namespace.is_none() && self.resource.is_empty() && !named {
            // The prefix alone, as written (with a trailing slash `abs_path` kept).
            return self.path_prefix.clone();
        }
        // Joining in one step cleans as joining piece by piece would (Go's `path.Clean` of
        // a joined path does not depend on how its pieces were grouped).
        let (namespaces, namespace) = match namespace {
            Some(ns) => ("namespaces", ns),
            None => ("", ""),
        };
        let resource = lowercase(&self.resource);
        url::join(&[
            &self.path_prefix,
            namespaces,
            namespace,
            &resource,
            &self.name,
            &self.subresource,
            &self.subpath,
        ])
    }

    /// The path and query (`/api/v1/…?…`), escaped, or the builder's first mistake.
    pub fn path_and_query(&self) -> Result<String, Error> {
        let mut out = String::new();
        self.push_path_and_query(&mut out)?;
        Ok(out)
    }

    /// Appends the path and query to `out`, or fails with the builder's first mistake.
    fn push_path_and_query(&self, out: &mut String) -> Result<(), Error> {
        if let Some(error) = &self.error {
            return Err(Error::InvalidRequest(error.clone()));
        }
        url::push_escaped_path(out, &self.path());
        let timeout = self.timeout.map(url::go_duration);
        let mut params: Vec<(&str, &str)> = self
            .params
            .iter()
            .filter(|(k, _)| timeout.is_none() || k != "timeout")
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        if let Some(timeout) = &timeout {
            params.push(("timeout", timeout));
        }
        if !params.is_empty() {
            out.push('?');
            url::push_query(out, &params);
        }
        Ok(())
    }

    /// The full URL, or the builder's first mistake.
    pub fn url(&self) -> Result<String, Error> {
        let inner = self.client.inner();
        let mut out = String::with_capacity(
            inner.scheme.len() + inner.authority.len() + 3 + self.path_prefix.len() + 96,
        );
        out.push_str(&inner.scheme);
        out.push_str("://");
        out.push_str(&inner.authority);
        self.push_path_and_query(&mut out)?;
        Ok(out)
    }

    /// client-go's `requestPreflightCheck`.
    pub(crate) fn preflight(&self) -> Result<(), Error> {
        if self.namespace.as_deref() != Some("") {
            return Ok(());
        }
        let refuse = |m: &str| Err(Error::InvalidRequest(m.to_owned()));
        match self.method {
            Method::POST => refuse("an empty namespace may not be set during creation"),
            Method::GET | Method::PUT | Method::DELETE if !self.name.is_empty() => {
                refuse("an empty namespace may not be set when a resource name is provided")
            }
            _ => Ok(()),
        }
    }
}

/// `s` in ASCII lower case, borrowed when it already is (resource names nearly always are).
fn lowercase(s: &str) -> std::borrow::Cow<'_, str> {
    if s.bytes().any(|b| b.is_ascii_uppercase()) {
        std::borrow::Cow::Owned(s.to_ascii_lowercase())
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

#[cfg(test)]
#[path = "request_tests.rs"]
mod tests;
