//! [`RestClient`]: one transport, one throttle and the per-client settings, shared by every
//! request; client-go's `rest.RESTClient` and `rest.RESTClientFor`.
//!
//! A `RestClient` is cheap to clone (one `Arc`); clones share the connection pool, the
//! throttle (built from [`Config::throttle`]: 5 QPS and bursts of 10 by default, none for a
//! negative QPS), the warning handler and the metrics. Requests are built with
//! [`RestClient::request`] or the verb shortcuts and carry their own group and version, so one
//! client serves every API group (client-go makes one `RESTClient` per group version).
//!
//! The [`HttpClient`] trait is client-go's `HTTPClient` interface: what actually sends a
//! request. The default is the [`Transport`] built from the
//! configuration (TLS, credentials, user agent, impersonation); a test can put a fake in its
//! place with [`RestClientBuilder::http_client`], and then sees requests before any of that is
//! added.

use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use clientgo_codec::protobuf::WireFormat;
use clientgo_ratelimit::Throttle;
use http::{HeaderMap, StatusCode};
use prometheus_client::registry::Registry;
use serde::de::DeserializeOwned;
use tokio::time::Instant;

use crate::body::Body;
use crate::config::Config;
use crate::error::{DecodeError, Error};
pub use crate::http_client::{BoxFuture, HttpClient};
use crate::metrics::Metrics;
use crate::retry::DEFAULT_MAX_RETRIES;
use crate::transport::Transport;
use crate::warnings::{LogWarningsOnce, WarningHandler};

/// A REST client. See the module documentation.
#[derive(Clone)]
pub struct RestClient {
    inner: Arc<ClientInner>,
}

pub(crate) struct ClientInner {
    pub(crate) scheme: String,
    /// `host[:port]`, never with user-info.
    pub(crate) authority: String,
    pub(crate) base_path: String,
    pub(crate) http: Arc<dyn HttpClient>,
    pub(crate) throttle: Option<Throttle>,
    pub(crate) timeout: Option<Duration>,
    pub(crate) max_retries: u32,
    pub(crate) warnings: Arc<dyn WarningHandler>,
    pub(crate) metrics: Option<Metrics>,
    pub(crate) default_namespace: String,
    /// [`Config::max_response_bytes`].
    pub(crate) max_response_bytes: usize,
    /// [`Config::max_list_item_bytes`].
    pub(crate) max_list_item_bytes: usize,
    /// [`Config::accept_protobuf`].
    pub(crate) accept_protobuf: bool,
    /// [`Config::read_idle_timeout`].
    pub(crate) read_idle_timeout: Option<Duration>,
    /// When a long throttle wait was last logged at info level.
    pub(crate) throttle_logged: Mutex<Option<Instant>>,
}

impl fmt::Debug for RestClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RestClient")
            .field(
                "server",
                &format_args!(
                    "{}://{}{}",
                    self.inner.scheme, self.inner.authority, self.inner.base_path
                ),
            )
            .field("throttle", &self.inner.throttle)
            .field("timeout", &self.inner.timeout)
            .field("max_retries", &self.inner.max_retries)
            .field("metrics", &self.inner.metrics.is_some())
            .finish_non_exhaustive()
    }
}

impl RestClient {
    /// A client for `config`, with the default warning handler and no metrics.
    pub fn new(config: &Config) -> Result<RestClient, Error> {
        RestClient::builder(config.clone()).build()
    }

    /// A builder for a client of `config`.
    pub fn builder(config: Config) -> RestClientBuilder {
        RestClientBuilder {
            config,
            warnings: None,
            metrics: None,
            http: None,
            throttle: None,
            max_retries: DEFAULT_MAX_RETRIES,
        }
    }

    pub(crate) fn inner(&self) -> &ClientInner {
        &self.inner
    }

    /// The namespace of the configuration's context.
    pub fn default_namespace(&self) -> &str {
        &self.inner.default_namespace
    }

    /// The client's throttle, `None` when throttling is off.
    pub fn throttle(&self) -> Option<&Throttle> {
        self.inner.throttle.as_ref()
    }

    /// The server's `host:port`, as the metrics label it.
    pub fn host(&self) -> &str {
        &self.inner.authority
    }
}

/// Builds a [`RestClient`].
pub struct RestClientBuilder {
    config: Config,
    warnings: Option<Arc<dyn WarningHandler>>,
    metrics: Option<Metrics>,
    http: Option<Arc<dyn HttpClient>>,
    throttle: Option<Option<Throttle>>,
    max_retries: u32,
}

impl RestClientBuilder {
    /// Where response warnings go (default: [`LogWarningsOnce`]).
    pub fn warning_handler(mut self, handler: impl WarningHandler) -> Self {
        self.warnings = Some(Arc::new(handler));
        self
    }

    /// Registers the client's metrics in `registry` (see [`metrics`](crate::metrics)).
    pub fn metrics(mut self, registry: &mut Registry) -> Self {
        self.metrics = Some(Metrics::register(registry));
        self
    }

    /// Records into metrics already registered (to share them between clients).
    pub fn with_metrics(mut self, metrics: Metrics) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// Replaces the throttle built from the configuration (`None`: no throttling), e.g. to
    /// share one between clients.
    pub fn throttle(mut self, throttle: Option<Throttle>) -> Self {
        self.throttle = Some(throttle);
        self
    }

    /// The default number of retries of each request (default 10).
    pub fn max_retries(mut self, retries: u32) -> Self {
        self.max_retries = retries;
        self
    }

    /// Sends requests with `client` instead of a transport built from the configuration.
    pub fn http_client(mut self, client: impl HttpClient) -> Self {
        self.http = Some(Arc::new(client));
        self
    }

    /// Builds the client (and its transport: this reads the system trust store when the
    /// configuration names no CA).
    pub fn build(self) -> Result<RestClient, Error> {
        let config = self.config;
        let uri = &config.cluster_url;
        let invalid = |reason: &str| Error::InvalidConfig {
            field: "cluster_url",
            reason: reason.to_owned(),
        };
        let scheme = match uri.scheme_str() {
            Some(s @ ("http" | "https")) => s.to_owned(),
            Some(_) => return Err(invalid("the scheme must be http or https")),
            None => return Err(invalid("the URL has no scheme")),
        };
        let authority = uri
            .authority()
            .ok_or_else(|| invalid("the URL has no host"))?;
        let authority = match authority.port() {
            Some(port) => format!("{}:{port}", authority.host()),
            None => authority.host().to_owned(),
        };
        let http = match self.http {
            Some(http) => http,
            None => Arc::new(Transport::new(&config)?),
        };
        let throttle = self.throttle.unwrap_or_else(|| {
            config
                .throttle()
                .map(|(qps, burst)| Throttle::new(qps, burst))
        });
        Ok(RestClient {
            inner: Arc::new(ClientInner {
                scheme,
                authority,
                base_path: uri.path().trim_end_matches('/').to_owned(),
                http,
                throttle,
                timeout: config.timeout.filter(|t| !t.is_zero()),
                max_retries: self.max_retries,
                warnings: self
                    .warnings
                    .unwrap_or_else(|| Arc::new(LogWarningsOnce::new())),
                metrics: self.metrics,
                default_namespace: config.default_namespace.clone(),
                max_response_bytes: config.max_response_bytes,
                max_list_item_bytes: config.max_list_item_bytes,
                accept_protobuf: config.accept_protobuf,
                read_idle_timeout: config.read_idle_timeout.filter(|t| !t.is_zero()),
                throttle_logged: Mutex::new(None),
            }),
        })
    }
}

/// A complete response: status, headers and body.
#[derive(Clone, Debug)]
pub struct Response {
    /// The status code (2xx).
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

impl Response {
    /// Decodes the body as JSON (nested up to [`json::MAX_DEPTH`](crate::json::MAX_DEPTH)
    /// levels); a body in Kubernetes protobuf (`Content-Type:
    /// application/vnd.kubernetes.protobuf`, the answer to a request that accepted it) is
    /// read straight into `T` as if from the JSON the server would have sent
    /// ([`clientgo_codec::protobuf::from_object`]).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        if format_of(&self.headers) == WireFormat::Protobuf {
            return clientgo_codec::protobuf::from_object(&self.body)
                .map_err(|e| DecodeError::protobuf::<T>(&e, self.body.len()).into());
        }
        let body = self.json_body::<T>()?;
        crate::json::from_slice(&body).map_err(|e| DecodeError::of::<T>(&e, body.len()).into())
    }

    /// The body as JSON: as it came, or made from its protobuf.
    pub(crate) fn json_body<T>(&self) -> Result<std::borrow::Cow<'_, [u8]>, Error> {
        if format_of(&self.headers) == WireFormat::Json {
            return Ok(std::borrow::Cow::Borrowed(&self.body));
        }
        let mut json = Vec::with_capacity(self.body.len() * 3 / 2);
        clientgo_codec::protobuf::object_to_json(&self.body, &mut json)
            .map_err(|e| DecodeError::protobuf::<T>(&e, self.body.len()))?;
        Ok(std::borrow::Cow::Owned(json))
    }

    /// Whether the server answered 201 Created (client-go's `WasCreated`).
    pub fn was_created(&self) -> bool {
        self.status == StatusCode::CREATED
    }
}

/// The format of a response body, from its `Content-Type`.
pub(crate) fn format_of(headers: &HeaderMap) -> WireFormat {
    WireFormat::of(
        headers
            .get(http::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok()),
    )
}

/// A successful response whose body is still streaming.
#[derive(Debug)]
pub struct StreamResponse {
    /// The status code (2xx).
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body, bounded by the request's time limit if it has one.
    pub body: Body,
}

impl StreamResponse {
    /// The body.
    pub fn into_body(self) -> Body {
        self.body
    }
}
