//! Typed helpers: get, list, create, update, update_status, patch, delete, delete_collection
//! and watch for one resource, typed (`T: Resource`) or dynamic ([`DynamicObject`] with an
//! [`ApiResource`] or a [`GroupVersionResource`] and a scope).
//!
//! This is what client-go's generated typed clients (`gentype.Client`) and its dynamic client
//! (`dynamic/simple.go`) do over a `rest.Request`: the same verbs, URLs, option parameters and
//! bodies. A [`ResourceClient`] knows its group, version, plural and scope, and the namespace it
//! works in: requests for a namespaced resource carry `namespaces/<ns>` (none when built with
//! [`ResourceClient::all`], which lists and watches across namespaces; as in client-go, a
//! create, or a get, update or delete by name, is then refused), those for a cluster-scoped
//! resource never do.
//!
//! A [`MetadataClient`] (`ResourceClient<PartialObjectMetadata>`, client-go's `metadata`
//! client) reads any resource as its metadata only: get and watch ask for
//! `Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json`,
//! list for `...;as=PartialObjectMetadataList;...`, and the server answers objects reduced to
//! `meta.k8s.io/v1` `PartialObjectMetadata` (a server that cannot, and falls back to the plain
//! JSON the header also accepts, answers whole objects, which decode to their metadata too).
//! client-go asks for protobuf first; a metadata client speaks JSON only. Creating or replacing an
//! object from its metadata alone would wipe the rest of it, so a metadata client refuses
//! `create`, `update` and `update_status` (client-go's metadata client has no such verbs);
//! patches and deletes work and answer partial objects.
//!
//! Requests for the resources [`clientgo_codec::protobuf`] reads (ConfigMaps, Secrets, Leases)
//! ask for their answers in protobuf (`Accept: application/vnd.kubernetes.protobuf,
//! application/json`), as client-go's clientsets do, unless
//! [`Config::accept_protobuf`](crate::Config::accept_protobuf) is off; the answer is read in
//! whichever format the server chose. Request bodies are JSON (client-go sends protobuf
//! there too), as is everything about other resources.
//!
//! Differences from client-go: `update` takes the name explicitly (so any serializable `T`
//! works, not only types with metadata); `delete` and `delete_collection` return what the
//! server returned ([`Deleted`]: the object or list when deletion is graceful or blocked by
//! finalizers, a `Status` when it is done), where client-go drops it.

use clientgo_codec::Watch;
use clientgo_codec::protobuf::{JsonPieces, ListItem, Piece, ProtobufError, WireFormat};
use std::any::Any;
use std::marker::PhantomData;

use clientgo_apimachinery::{
    ApiResource, DynamicObject, GroupVersionResource, ObjectList, PartialObjectMetadata, Resource,
    Status, TypeMeta,
};
use http::Method;
use http::header::ACCEPT;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::api_error::ApiError;
use crate::body::Body;
use crate::client::{Response, RestClient};
use crate::error::{DecodeError, Error, ListFailure};
use crate::list_decode::{ListBody, ListDecoder};
use crate::request::{
    DeleteParams, GetParams, ListParams, PatchParams, PatchType, PostParams, Request, WatchParams,
};

/// The requests of one resource, in one namespace or across all. See the module documentation.
pub struct ResourceClient<T> {
    client: RestClient,
    group: String,
    version: String,
    plural: String,
    /// `None` for a cluster-scoped resource; `Some("")` for all namespaces.
    namespace: Option<String>,
    /// Objects reduced to their metadata by the server (a [`MetadataClient`]).
    metadata_only: bool,
    _type: PhantomData<fn() -> T>,
}

/// A client of dynamic objects.
pub type DynamicClient = ResourceClient<DynamicObject>;

/// A client of any resource's objects reduced to their metadata (client-go's `metadata`
/// client); see the module documentation.
pub type MetadataClient = ResourceClient<PartialObjectMetadata>;

/// The `Accept` header of a metadata get, watch or patch: partial objects, or plain JSON from
/// a server that cannot reduce them (client-go's, without its protobuf alternative).
pub const PARTIAL_OBJECT_METADATA_ACCEPT: &str =
    "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// The `Accept` header of a metadata list or collection delete.
pub const PARTIAL_OBJECT_METADATA_LIST_ACCEPT: &str =
    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";

impl<T> Clone for ResourceClient<T> {
    fn clone(&self) -> Self {
        ResourceClient {
            client: self.client.clone(),
            group: self.group.clone(),
            version: self.version.clone(),
            plural: self.plural.clone(),
            namespace: self.namespace.clone(),
            metadata_only: self.metadata_only,
            _type: PhantomData,
        }
    }
}

impl<T> std::fmt::Debug for ResourceClient<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceClient")
            .field("group", &self.group)
            .field("version", &self.version)
            .field("plural", &self.plural)
            .field("namespace", &self.namespace)
            .field("metadata_only", &self.metadata_only)
            .finish_non_exhaustive()
    }
}

/// What a delete returned.
#[derive(Clone, Debug, PartialEq)]
pub enum Deleted<T> {
    /// The object (or list), still there: deletion is graceful or waits for finalizers.
    Object(T),
    /// A `Success` Status: it is gone.
    Status(Box<Status>),
}

impl<T: Resource> ResourceClient<T> {
    /// Requests in `namespace` (ignored for a cluster-scoped `T`).
    pub fn namespaced(client: &RestClient, namespace: &str) -> Self {
        Self::with_scope(
            client,
            T::GROUP,
            T::VERSION,
            T::PLURAL,
            T::NAMESPACED,
            Some(namespace),
        )
    }

    /// Requests in the configuration's namespace (ignored for a cluster-scoped `T`).
    pub fn default_namespaced(client: &RestClient) -> Self {
        Self::namespaced(client, client.default_namespace())
    }

    /// Requests across all namespaces (list, watch, delete_collection), or of a
    /// cluster-scoped `T`.
    pub fn all(client: &RestClient) -> Self {
        Self::with_scope(client, T::GROUP, T::VERSION, T::PLURAL, T::NAMESPACED, None)
    }
}

impl ResourceClient<DynamicObject> {
    /// Dynamic objects of `resource`, in `namespace` (`None`: all namespaces; ignored for
    /// cluster-scoped resources).
    pub fn from_api_resource(
        client: &RestClient,
        resource: &ApiResource,
        namespace: Option<&str>,
    ) -> Self {
        Self::with_scope(
            client,
            &resource.group,
            &resource.version,
            &resource.plural,
            resource.namespaced,
            namespace,
        )
    }

    /// Dynamic objects of `gvr`, namespaced or not, in `namespace` (`None`: all namespaces;
    /// ignored for cluster-scoped resources).
    pub fn dynamic(
        client: &RestClient,
        gvr: &GroupVersionResource,
        namespaced: bool,
        namespace: Option<&str>,
    ) -> Self {
        Self::with_scope(
            client,
            &gvr.group,
            &gvr.version,
            &gvr.resource,
            namespaced,
            namespace,
        )
    }
}

impl ResourceClient<PartialObjectMetadata> {
    /// The objects of `resource` reduced to their metadata, in `namespace` (`None`: all
    /// namespaces; ignored for cluster-scoped resources).
    pub fn metadata(client: &RestClient, resource: &ApiResource, namespace: Option<&str>) -> Self {
        Self::metadata_for(client, &resource.gvr(), resource.namespaced, namespace)
    }

    /// The objects of `gvr` reduced to their metadata, namespaced or not, in `namespace`
    /// (`None`: all namespaces; ignored for cluster-scoped resources).
    pub fn metadata_for(
        client: &RestClient,
        gvr: &GroupVersionResource,
        namespaced: bool,
        namespace: Option<&str>,
    ) -> Self {
        let mut this = Self::with_scope(
            client,
            &gvr.group,
            &gvr.version,
            &gvr.resource,
            namespaced,
            namespace,
        );
        this.metadata_only = true;
        this
    }
}

impl<T> ResourceClient<T> {
    fn with_scope(
        client: &RestClient,
        group: &str,
        version: &str,
        plural: &str,
        namespaced: bool,
        namespace: Option<&str>,
    ) -> Self {
        ResourceClient {
            client: client.clone(),
            group: group.to_owned(),
            version: version.to_owned(),
            plural: plural.to_owned(),
            namespace: namespaced.then(|| namespace.unwrap_or("").to_owned()),
            metadata_only: false,
            _type: PhantomData,
        }
    }

    /// Whether the server is asked for objects reduced to their metadata.
    pub fn is_metadata_only(&self) -> bool {
        self.metadata_only
    }

    /// Asks for partial objects (`list`: a partial list) when this is a metadata client.
    fn accept(&self, request: Request, list: bool) -> Request {
        match (self.metadata_only, list) {
            (false, _) => request,
            (true, false) => request.header(ACCEPT.as_str(), PARTIAL_OBJECT_METADATA_ACCEPT),
            (true, true) => request.header(ACCEPT.as_str(), PARTIAL_OBJECT_METADATA_LIST_ACCEPT),
        }
    }

    /// Refuses a write of a whole object through a metadata client.
    fn writes_whole_objects(&self, verb: &str) -> Result<(), Error> {
        if self.metadata_only {
            return Err(Error::InvalidRequest(format!(
                "a metadata client cannot {verb} objects: it holds only their metadata (patch them instead)"
            )));
        }
        Ok(())
    }

    /// The client underneath.
    pub fn client(&self) -> &RestClient {
        &self.client
    }

    /// The namespace, `None` for a cluster-scoped resource, `Some("")` for all namespaces.
    pub fn namespace(&self) -> Option<&str> {
        self.namespace.as_deref()
    }

    /// A request for this resource (group, version, namespace, resource set).
    pub fn request(&self, method: Method) -> Request {
        let request = self
            .client
            .request(method)
            .group_version(&self.group, &self.version);
        let request = match &self.namespace {
            Some(namespace) => request.namespace(namespace),
            None => request,
        };
        request.resource(&self.plural)
    }

    /// Gets the object `name`.
    pub async fn get(&self, name: &str, params: &GetParams) -> Result<T, Error>
    where
        T: DeserializeOwned,
    {
        let request = params.apply(self.request(Method::GET).name(name));
        self.accept_objects(request, false).send().await?.json()
    }

    /// Lists the objects. The items are decoded one by one as the body arrives
    /// ([`ListDecoder`]); a `Failure` Status in place of the list is an [`Error::Api`], a
    /// `Success` one an empty list.
    ///
    /// An item that is valid JSON but not a `T` (or nests deeper than the server allows, or
    /// builds a value deeper than [`json::MAX_KEPT_DEPTH`](crate::json::MAX_KEPT_DEPTH), or is
    /// larger than [`Config::max_list_item_bytes`](crate::Config::max_list_item_bytes)) is left
    /// out of the list, logged as a warning and counted in
    /// `rest_client_undecodable_items_total`; the rest of the list is returned. Use
    /// [`list_partial`](Self::list_partial) to see those errors.
    pub async fn list(&self, params: &ListParams) -> Result<ObjectList<T>, Error>
    where
        T: DeserializeOwned + 'static,
    {
        Ok(self.list_partial(params).await?.list)
    }

    /// [`list`](Self::list), with the errors of the items left out.
    pub async fn list_partial(&self, params: &ListParams) -> Result<PartialList<T>, Error>
    where
        T: DeserializeOwned + 'static,
    {
        let request = self.accept_objects(params.apply(self.request(Method::GET)), true);
        let (body, undecodable) = list_body(request).await?;
        let list = match body {
            Deleted::Object(list) => list,
            Deleted::Status(status) => ObjectList {
                api_version: status.api_version,
                kind: status.kind,
                metadata: status.metadata,
                items: Vec::new(),
            },
        };
        Ok(PartialList { list, undecodable })
    }

    /// Creates `object`.
    pub async fn create(&self, object: &T, params: &PostParams) -> Result<T, Error>
    where
        T: Serialize + DeserializeOwned,
    {
        self.writes_whole_objects("create")?;
        let request = params.apply(self.request(Method::POST)).json(object);
        self.accept_objects(request, false).send().await?.json()
    }

    /// Replaces the object `name` with `object` (its `resourceVersion` guards against
    /// concurrent changes: a stale one is a conflict).
    pub async fn update(&self, name: &str, object: &T, params: &PostParams) -> Result<T, Error>
    where
        T: Serialize + DeserializeOwned,
    {
        self.writes_whole_objects("update")?;
        let request = params
            .apply(self.request(Method::PUT).name(name))
            .json(object);
        self.accept_objects(request, false).send().await?.json()
    }

    /// Replaces the status of the object `name` (the `status` subresource).
    pub async fn update_status(
        &self,
        name: &str,
        object: &T,
        params: &PostParams,
    ) -> Result<T, Error>
    where
        T: Serialize + DeserializeOwned,
    {
        self.writes_whole_objects("update the status of")?;
        let request = self.request(Method::PUT).name(name).subresource("status");
        let request = params.apply(request).json(object);
        self.accept_objects(request, false).send().await?.json()
    }

    /// Patches the object `name`. An [`Apply`](PatchType::Apply) patch needs
    /// `params.field_manager`.
    pub async fn patch<P: Serialize + ?Sized>(
        &self,
        name: &str,
        patch_type: PatchType,
        patch: &P,
        params: &PatchParams,
    ) -> Result<T, Error>
    where
        T: DeserializeOwned,
    {
        self.patch_request(name, None, patch_type, patch, params)?
            .send()
            .await?
            .json()
    }

    /// Patches the status of the object `name`.
    pub async fn patch_status<P: Serialize + ?Sized>(
        &self,
        name: &str,
        patch_type: PatchType,
        patch: &P,
        params: &PatchParams,
    ) -> Result<T, Error>
    where
        T: DeserializeOwned,
    {
        self.patch_request(name, Some("status"), patch_type, patch, params)?
            .send()
            .await?
            .json()
    }

    /// Server-side apply: `object` is what the field manager `params.field_manager` wants of
    /// the object `name` (the fields it sets, and nothing else); the server creates the object
    /// if it is missing, merges those fields into it otherwise, and records the manager as
    /// their owner. A field another manager owns with a different value is a 409 Conflict
    /// unless `params.force` takes it over. client-go's `Apply`; the same as
    /// [`patch`](Self::patch) with [`PatchType::Apply`]. Build `params` with
    /// [`PatchParams::apply`]: a controller applies with its own name and `force`, as the
    /// single writer of what it manages.
    ///
    /// `object` must carry `apiVersion`, `kind` and `metadata.name` (typed objects with
    /// `Default` fields serialize those defaults too, and so claim them: an apply object is
    /// usually a `serde_json::Value` or a type whose fields are `Option`s).
    pub async fn apply<P: Serialize + ?Sized>(
        &self,
        name: &str,
        object: &P,
        params: &PatchParams,
    ) -> Result<T, Error>
    where
        T: DeserializeOwned,
    {
        self.patch(name, PatchType::Apply, object, params).await
    }

    /// [`apply`](Self::apply) to the `status` subresource (client-go's `ApplyStatus`).
    pub async fn apply_status<P: Serialize + ?Sized>(
        &self,
        name: &str,
        object: &P,
        params: &PatchParams,
    ) -> Result<T, Error>
    where
        T: DeserializeOwned,
    {
        self.patch_status(name, PatchType::Apply, object, params)
            .await
    }

    fn patch_request<P: Serialize + ?Sized>(
        &self,
        name: &str,
        subresource: Option<&str>,
        patch_type: PatchType,
        patch: &P,
        params: &PatchParams,
    ) -> Result<Request, Error> {
        if patch_type == PatchType::Apply
            && params.field_manager.as_deref().is_none_or(str::is_empty)
        {
            return Err(Error::InvalidRequest(
                "an apply patch needs a field manager (PatchParams::field_manager)".to_owned(),
            ));
        }
        let mut request = self.request(Method::PATCH).name(name).header(
            http::header::CONTENT_TYPE.as_str(),
            patch_type.content_type(),
        );
        if let Some(subresource) = subresource {
            request = request.subresource(subresource);
        }
        Ok(self
            .accept_objects(params.apply_to(request), false)
            .json(patch))
    }

    /// Deletes the object `name`.
    pub async fn delete(&self, name: &str, params: &DeleteParams) -> Result<Deleted<T>, Error>
    where
        T: DeserializeOwned,
    {
        let request = params.apply(self.request(Method::DELETE).name(name));
        let response = self.accept_objects(request, false).send().await?;
        deleted(&response)
    }

    /// Deletes the objects `list` selects.
    pub async fn delete_collection(
        &self,
        params: &DeleteParams,
        list: &ListParams,
    ) -> Result<Deleted<ObjectList<T>>, Error>
    where
        T: DeserializeOwned + 'static,
    {
        let request = params.apply(list.apply(self.request(Method::DELETE)));
        Ok(list_body(self.accept_objects(request, true)).await?.0)
    }

    /// Opens a watch (client-go's `Watch`): its events, decoded as `T` as they arrive, until
    /// the server ends it (`timeoutSeconds`) or it fails; see [`Watch`] for how each end is
    /// told apart. For a watch that resumes by itself, `clientgo_watch::RetryWatcher`.
    pub async fn watch(&self, params: &WatchParams) -> Result<Watch<T>, Error>
    where
        T: DeserializeOwned,
    {
        let request = self.accept_objects(params.apply(self.request(Method::GET)), false);
        let (format, body) = request.watch_with_format().await?;
        Ok(Watch::from_boxed(Box::pin(body)).with_format(format))
    }

    /// The `Accept` header of a request answered with objects: protobuf where
    /// [`Self::asks_protobuf`], otherwise as [`Self::accept`] sets it.
    fn accept_objects(&self, request: Request, list: bool) -> Request {
        if self.asks_protobuf() {
            request.header(ACCEPT.as_str(), clientgo_codec::protobuf::ACCEPT)
        } else {
            self.accept(request, list)
        }
    }

    /// Whether requests answered with objects ask for protobuf: the configuration allows it,
    /// the objects are whole (not reduced to their metadata) and the codec reads the
    /// resource's kind in it.
    fn asks_protobuf(&self) -> bool {
        !self.metadata_only
            && self.client.inner().accept_protobuf
            && clientgo_codec::protobuf::serves(&self.group, &self.version, &self.plural)
    }

    /// [`watch`](Self::watch)'s response body, undecoded (for a decoder of one's own), always
    /// asked for in JSON.
    pub async fn watch_body(&self, params: &WatchParams) -> Result<Body, Error> {
        let request = params.apply(self.request(Method::GET));
        self.accept(request, false).watch().await
    }
}

/// A list and the errors of the items left out of it because they did not decode (see
/// [`ResourceClient::list`]).
#[derive(Debug)]
#[non_exhaustive]
pub struct PartialList<T> {
    /// The items that decoded, with the list's metadata.
    pub list: ObjectList<T>,
    /// One error per item left out, each a [`ListFailure::Item`]
    /// or [`ListFailure::ItemTooLarge`] naming its index.
    pub undecodable: Vec<DecodeError>,
}

/// Sends `request` and decodes the list it answers as it arrives, or the Status in its place
/// (a `Failure` one is an error, as [`deleted`] makes it); items that do not decode are left
/// out, logged and counted, and their errors returned. Dynamic objects get the list's type
/// where they carry none ([`fill_item_types`]).
async fn list_body<T: DeserializeOwned + 'static>(
    request: Request,
) -> Result<(Deleted<ObjectList<T>>, Vec<DecodeError>), Error> {
    let client = request.client.clone();
    let inner = client.inner();
    let mut decoder = ListDecoder::<T>::new()
        .with_max_item_bytes(inner.max_list_item_bytes)
        .skipping_undecodable();
    // A protobuf list is decoded as it arrives too: each item as soon as it is in, straight
    // into `T` (client-go reads a list whole first).
    let mut protobuf: Option<(JsonPieces, u64)> = None;
    let mut scratch = Vec::new();
    let protobuf_error = |error: ListError, read: u64| match error {
        ListError::Protobuf(error) => Error::from(DecodeError::for_list(
            std::any::type_name::<T>(),
            ListFailure::Protobuf,
            error.to_string(),
            read,
        )),
        ListError::Other(error) => error,
    };
    let code = request
        .send_chunks(&mut |format, chunk: &[u8]| match format {
            WireFormat::Json => decoder.push(chunk).map_err(Error::from),
            WireFormat::Protobuf => {
                let (pieces, read) = protobuf.get_or_insert_with(|| (JsonPieces::new(), 0));
                *read += chunk.len() as u64;
                pieces
                    .push_pieces(chunk, |piece| match piece {
                        Piece::Json(json) => decoder.push(json).map_err(ListError::from),
                        Piece::Item(item) => push_item(&mut decoder, &item, &mut scratch),
                    })
                    .map_err(|error| protobuf_error(error, *read))
            }
        })
        .await?;
    if let Some((pieces, read)) = protobuf {
        pieces
            .finish(|json| decoder.push(json).map_err(ListError::from))
            .map_err(|error| protobuf_error(error, read))?;
    }
    let undecodable = decoder.take_skipped();
    for error in &undecodable {
        tracing::warn!(host = %inner.authority, %error, "left an undecodable item out of a list");
        if let Some(metrics) = &inner.metrics {
            metrics.count_undecodable_item(&inner.authority);
        }
    }
    let body = match decoder.finish()? {
        ListBody::List(mut list) => {
            fill_item_types(&mut list);
            Deleted::Object(list)
        }
        ListBody::Status(status) if status.is_failure() => {
            return Err(ApiError {
                status: *status,
                http_code: code.as_u16(),
            }
            .into());
        }
        ListBody::Status(status) => Deleted::Status(status),
    };
    Ok((body, undecodable))
}

/// Hands a protobuf list's item to `decoder`: read straight into `T` when it reads so and is
/// within the decoder's cap (in protobuf bytes), else as its JSON, so that the decoder gives
/// it the error (or skips it) as it would in a JSON list.
fn push_item<T: DeserializeOwned>(
    decoder: &mut ListDecoder<T>,
    item: &ListItem<'_>,
    scratch: &mut Vec<u8>,
) -> Result<(), ListError> {
    if item.len() <= decoder.max_item_bytes()
        && let Ok(decoded) = item.decode::<T>()
    {
        return decoder.push_decoded(decoded).map_err(ListError::from);
    }
    scratch.clear();
    item.write_json(scratch)?;
    let pushed = decoder.push(scratch).map_err(ListError::from);
    if scratch.capacity() > SCRATCH_KEPT {
        *scratch = Vec::new();
    }
    pushed
}

/// The largest buffer kept for the JSON of a protobuf list's items that do not read straight.
const SCRATCH_KEPT: usize = 1 << 20;

/// What stopped a protobuf list on its way to the list decoder.
enum ListError {
    /// The protobuf could not be read.
    Protobuf(ProtobufError),
    /// The decoder refused its JSON.
    Other(Error),
}

impl From<ProtobufError> for ListError {
    fn from(error: ProtobufError) -> Self {
        ListError::Protobuf(error)
    }
}

impl From<DecodeError> for ListError {
    fn from(error: DecodeError) -> Self {
        ListError::Other(error.into())
    }
}

/// Gives the items of a list of [`DynamicObject`]s that carry neither `apiVersion` nor `kind`
/// the list's `apiVersion` and its `kind` without `List`, as client-go's unstructured list
/// decoder does: kube-apiserver writes the items of built-in types' lists without them (only
/// custom resources' items carry them). Other item types are left alone: typed ones know
/// their type, and `serde_json::Value` items are what the server sent.
fn fill_item_types<T: 'static>(list: &mut ObjectList<T>) {
    let Some(list) = (list as &mut dyn Any).downcast_mut::<ObjectList<DynamicObject>>() else {
        return;
    };
    let kind = list.kind.strip_suffix("List").unwrap_or(&list.kind);
    for item in list.items.iter_mut().filter(|i| i.types.is_none()) {
        item.types = Some(TypeMeta::new(list.api_version.clone(), kind));
    }
}

/// The object, or the Status a delete answered with.
fn deleted<T: DeserializeOwned>(response: &Response) -> Result<Deleted<T>, Error> {
    #[derive(Deserialize)]
    struct Kind<'a> {
        #[serde(borrow, default)]
        kind: Option<std::borrow::Cow<'a, str>>,
    }
    let body = response.json_body::<T>()?;
    let is_status = serde_json::from_slice::<Kind<'_>>(&body)
        .ok()
        .and_then(|k| k.kind)
        .is_some_and(|k| k == "Status");
    if !is_status {
        return crate::json::from_slice(&body)
            .map(Deleted::Object)
            .map_err(|e| DecodeError::of::<T>(&e, body.len()).into());
    }
    let status: Status =
        crate::json::from_slice(&body).map_err(|e| DecodeError::of::<Status>(&e, body.len()))?;
    if status.is_failure() {
        return Err(ApiError {
            status,
            http_code: response.status.as_u16(),
        }
        .into());
    }
    Ok(Deleted::Status(Box::new(status)))
}
