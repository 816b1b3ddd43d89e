//! clientgo-rs's REST layer: client configuration, a hand-built HTTP transport, and the REST
//! client with client-go's request builder, retries, throttling, typed errors, warnings and
//! metrics.
//!
//! This crate ports client-go's `rest` and `transport` packages, and what they need from
//! `tools/clientcmd`, `plugin/pkg/client/auth/exec`, `tools/metrics` and apimachinery's
//! `pkg/api/errors`:
//!
//! | module | what | client-go |
//! |---|---|---|
//! | [`config`] | [`Config`]: kubeconfig, in-cluster, exec plugins, token files | `rest.Config`, `tools/clientcmd` |
//! | [`transport`] | hyper 1 + rustls: pooling, TLS, ALPN HTTP/2, keep-alive pings, credentials | `transport`, net/http |
//! | [`client`] | [`RestClient`]: one transport, one throttle, per-client settings | `rest.RESTClient` |
//! | [`request`] | [`Request`]: verb, namespace, resource, name, subresource, params, body | `rest.Request` |
//! | `execute` | sending: throttle, retries, time limit, metrics, warnings | `Request.Do`/`Stream`/`Watch` |
//! | [`resource_client`] | [`ResourceClient`]: get, list, create, update, patch, delete, watch; [`MetadataClient`] for metadata only | typed, dynamic and metadata clients |
//! | [`json`] | objects nested up to kube-apiserver's 10,000 levels, values built at most 512 deep; decode errors that never quote values | `sigs.k8s.io/json` |
//! | [`list_decode`] | [`ListDecoder`]: list responses decoded item by item as the body arrives | `Result.Into`, which decodes the whole body |
//! | [`error`], [`api_error`] | [`Error`], [`ApiError`] and its `is_not_found`-style predicates | `errors.StatusError` |
//! | [`retry`] | when a request is sent again | `rest/with_retry.go` |
//! | [`warnings`] | `Warning` headers and their [`WarningHandler`] | `rest/warnings.go` |
//! | [`metrics`] | `rest_client_*` Prometheus metrics | `tools/metrics` |
//! | [`body`] | the streaming [`Body`] of responses and watches | `io.ReadCloser` |
//! | [`discovery`] | [`DiscoveryClient`]: server version, groups, resources (aggregated or classic), cached | `discovery`, `discovery/cached/memory` |
//! | [`restmapper`] | [`RestMapper`]: a kind to its resource and scope and back, refreshed on a miss | `restmapper`, `meta.RESTMapper` |
//!
//! Logging goes through `tracing`; no token, password, private key, certificate or
//! `Authorization` header is ever logged or put in an error message.
//!
//! ```no_run
//! use clientgo_apimachinery::{ApiResource, DynamicObject};
//! use clientgo_rest::{Config, DynamicClient, ListParams, RestClient};
//!
//! # async fn example() -> Result<(), Box<dyn std::error::Error>> {
//! let config = Config::infer()?; // ~/.kube/config, $KUBECONFIG or the pod's service account
//! let client = RestClient::new(&config)?;
//!
//! // The request builder, as client-go's:
//! let response = client
//!     .get()
//!     .group_version("", "v1")
//!     .namespace("kube-system")
//!     .resource("pods")
//!     .limit(10)
//!     .send()
//!     .await?;
//! println!("{} bytes of pods", response.body.len());
//!
//! // Typed helpers (here for dynamic objects; any `T: Resource` works the same):
//! let config_maps = ApiResource {
//!     group: String::new(),
//!     version: "v1".into(),
//!     kind: "ConfigMap".into(),
//!     plural: "configmaps".into(),
//!     namespaced: true,
//! };
//! let api = DynamicClient::from_api_resource(&client, &config_maps, Some("default"));
//! match api.get("settings", &Default::default()).await {
//!     Ok(cm) => println!("found {}", cm.metadata.name),
//!     Err(e) if e.is_not_found() => println!("no such ConfigMap"),
//!     Err(e) => return Err(e.into()),
//! }
//! let all = api.list(&ListParams::default()).await?;
//! println!("{} ConfigMaps at resourceVersion {}", all.items.len(), all.resource_version());
//! # let _: Option<DynamicObject> = None;
//!
//! // From a kind, through discovery (a CRD created a moment ago resolves too):
//! let mapper = clientgo_rest::RestMapper::for_client(&client);
//! let gvk = clientgo_apimachinery::GroupVersionKind::new("apps", "v1", "Deployment");
//! let deployments = mapper.dynamic_client(&client, &gvk, Some("default")).await?;
//! println!("{} Deployments", deployments.list(&ListParams::default()).await?.items.len());
//! # Ok(()) }
//! ```
//!
//! # In a controller
//!
//! A controller reads through informers (`clientgo_informer`, whose crate docs show the
//! loop) and writes through this client. Its reconcile compares the cached object with the
//! one it wants and writes only a difference; an error, a 409 `Conflict` included (the object
//! changed after the cache saw it), sends the key back to the work queue, to be retried once
//! the cache has caught up:
//!
//! ```no_run
//! use clientgo_apimachinery::DynamicObject;
//! use clientgo_rest::{Error, PostParams, ResourceClient};
//!
//! async fn converge(
//!     api: &ResourceClient<DynamicObject>,
//!     cached: Option<&DynamicObject>, // from the lister
//!     desired: DynamicObject,
//! ) -> Result<(), Error> {
//!     match cached {
//!         None => {
//!             api.create(&desired, &PostParams::default()).await?;
//!         }
//!         Some(current) if current.data == desired.data => {} // up to date: no request
//!         Some(current) => {
//!             let mut updated = current.clone(); // keeps the resourceVersion: a guarded write
//!             updated.data = desired.data;
//!             api.update(&current.metadata.name, &updated, &PostParams::default()).await?;
//!         }
//!     }
//!     Ok(())
//! }
//! ```
//!
//! Complete controllers, runnable against the cluster of a kubeconfig, are the examples of
//! the `clientgo` crate (`clientgo/examples/`).

#![deny(missing_docs)]

pub mod api_error;
pub mod body;
pub mod client;
pub mod config;
pub mod discovery;
pub mod error;
mod execute;
mod http_client;
pub mod list_decode;
pub mod metrics;
pub mod request;
pub mod resource_client;
pub mod restmapper;
pub mod retry;
pub mod transport;
pub mod warnings;

pub use api_error::ApiError;
pub use body::Body;
pub use client::{BoxFuture, HttpClient, Response, RestClient, RestClientBuilder, StreamResponse};
/// JSON as deep as the server allows, values kept bounded, messages that never quote a
/// value (the `clientgo-codec` crate's, where the watch decoder uses it too).
pub use clientgo_codec::json;
/// The byte scanner of list and watch bodies (the `clientgo-codec` crate's).
pub use clientgo_codec::json_scan;
pub use config::{Auth, Config, ConfigError, KubeconfigOptions, LoadingRules, TlsConfig};
pub use discovery::{
    ApiDiscovery, ApiGroup, DiscoveredResource, DiscoveryClient, FailedGroupVersion, ServerVersion,
    Subresource,
};
pub use error::{BoxError, DecodeError, Error, ListFailure, TransportError, TransportErrorKind};
pub use list_decode::{ListBody, ListDecoder};
pub use metrics::Metrics;
pub use request::{
    DeleteParams, GetParams, ListParams, PatchParams, PatchType, PostParams, Preconditions,
    PropagationPolicy, Request, WatchParams,
};
pub use resource_client::{
    Deleted, DynamicClient, MetadataClient, PARTIAL_OBJECT_METADATA_ACCEPT,
    PARTIAL_OBJECT_METADATA_LIST_ACCEPT, PartialList, ResourceClient,
};
pub use restmapper::{MappingError, RestMapper, StaticRestMapper};
pub use warnings::{LogWarningsOnce, NoWarnings, Warning, WarningHandler};
