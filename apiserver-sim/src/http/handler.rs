//! Request handling: authentication, faults, routing, and the verb handlers' HTTP side.
//!
//! Mirrors kube-apiserver's handler chain and `endpoints/handlers` (get.go, create.go,
//! update.go, patch.go, delete.go, watch.go) for what a client observes: bearer-token
//! authentication (401 Status), the verb chosen from method + path + `watch`, 404 for paths
//! and resources not served, 405 for methods a path does not take, 415 for unknown patch
//! types, 406 for an `Accept` header nothing can be served for, 400 for bodies that are not
//! JSON, 201 on create, Table and `PartialObjectMetadata` output when asked for
//! ([`super::output`]: every object answer, lists and watches), and a chunked JSON stream
//! for watches. Injected faults and
//! latency apply here, before the verb runs.

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Limited};
use serde_json::{Value, json};

use super::accept;
use super::body::{self, Body};
use super::discovery;
use super::output::Shape;
use super::route::{ResourcePath, Route, route};
use crate::errors::{self, ApiError, ApiResult};
use crate::faults::InjectedError;
use crate::patch;
use crate::pruning;
use crate::resources::ResourceInfo;
use crate::state::State;
use crate::store::StoredObject;
use crate::validation;
use crate::verbs::delete::{DeleteOptions, Deleted};
use crate::verbs::list::ListOptions;
use crate::verbs::update::Part;
use crate::verbs::{create, delete, list, update, watch};

/// Everything about a request the handlers need after routing.
struct Ctx {
    state: State,
    info: Arc<ResourceInfo>,
    path: ResourcePath,
    query: Vec<(String, String)>,
    shape: Shape,
    content_type: String,
    user_agent: String,
    body: Bytes,
}

impl Ctx {
    fn namespace(&self) -> &str {
        self.path.namespace.as_deref().unwrap_or("")
    }

    fn name(&self) -> &str {
        self.path.name.as_deref().unwrap_or("")
    }

    fn part(&self) -> Part {
        if self.path.subresource.is_some() {
            Part::Status
        } else {
            Part::Main
        }
    }

    /// `fieldManager`, `dryRun` and `force` of a write; `kind` names the options in 422s.
    fn write_options(&self, kind: &str) -> ApiResult<update::WriteOptions> {
        update::WriteOptions::parse(
            &self.query,
            &self.user_agent,
            self.part() == Part::Status,
            kind,
        )
    }
}

/// Handles one request; never fails (errors become Status responses).
pub async fn handle<B>(state: State, server_address: String, req: Request<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let method = req.method().clone();
    let uri_path = req.uri().path().to_owned();
    let yaml = req
        .headers()
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .is_some_and(accept::wants_yaml);
    let response = match handle_inner(state, &server_address, req).await {
        Ok(r) => r,
        Err(e) => body::error(&e),
    };
    // A 406 is written as JSON: the representation asked for is the one refused.
    let response = if yaml && response.status() != StatusCode::NOT_ACCEPTABLE {
        body::to_yaml(response)
    } else {
        response
    };
    tracing::debug!(%method, path = %uri_path, status = response.status().as_u16(), "request");
    response
}

async fn handle_inner<B>(
    state: State,
    server_address: &str,
    req: Request<B>,
) -> ApiResult<Response<Body>>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let r = route(req.uri().path());
    if r == Route::Health {
        return Ok(body::text(StatusCode::OK, "ok"));
    }
    if !super::auth::authorized(&state, &req) {
        return Err(errors::unauthorized());
    }
    let latency = state.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Route::Admin(action) = &r {
        let query = req.uri().query().unwrap_or("").to_owned();
        return super::admin::handle(&state, req.method(), action, &query);
    }
    let json_doc = |v: Value| {
        Ok(body::json(
            StatusCode::OK,
            serde_json::to_vec(&v).unwrap_or_default(),
        ))
    };
    if r == Route::NotFound {
        let mut segments = req.uri().path().split('/').skip(1);
        let group = match (segments.next(), segments.next()) {
            (Some("api"), _) => "",
            (Some("apis"), Some(group)) => group,
            _ => return Ok(page_not_found()),
        };
        return not_served(&state, group);
    }
    if req.method() != Method::GET && !matches!(r, Route::Resource(_)) {
        return Err(errors::method_not_allowed());
    }
    let path = match r {
        Route::Version => return json_doc(discovery::version(&state.config.git_version)),
        Route::CoreVersions => return json_doc(discovery::core_versions(server_address)),
        Route::Groups => return json_doc(discovery::groups(&state.registry)),
        Route::Group(g) => {
            return match discovery::group(&state.registry, &g) {
                Some(doc) => json_doc(doc),
                None => not_served(&state, &g),
            };
        }
        Route::GroupVersion(g, v) => {
            return match discovery::resources(&state.registry, &g, &v) {
                Some(doc) => json_doc(doc),
                None => not_served(&state, &g),
            };
        }
        Route::Health | Route::Admin(_) | Route::NotFound => return Err(errors::no_route()),
        Route::Resource(p) => p,
    };
    let Some(info) = state.registry.get(&path.group, &path.version, &path.plural) else {
        return not_served(&state, &path.group);
    };
    if (path.namespace.is_some() && !info.namespaced)
        || (info.namespaced && path.namespace.is_none() && path.name.is_some())
        || path
            .subresource
            .as_deref()
            .is_some_and(|s| s != "status" || !info.status_subresource)
        || (path.watch_prefix && req.method() != Method::GET)
    {
        return Err(errors::no_route());
    }
    let query: Vec<(String, String)> = req
        .uri()
        .query()
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let header = |h: header::HeaderName| {
        req.headers()
            .get(h)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let content_type = header(header::CONTENT_TYPE);
    let user_agent = header(header::USER_AGENT);
    let is_watch = path.watch_prefix
        || query
            .iter()
            .any(|(k, v)| k == "watch" && matches!(v.as_str(), "true" | "1" | "True" | "t"));
    let has_name = path.name.is_some();
    let verb = match (req.method().clone(), has_name) {
        (Method::GET, true) if is_watch => "watch",
        (Method::GET, true) => "get",
        (Method::GET, false) if is_watch => "watch",
        (Method::GET, false) => "list",
        (Method::POST, false) if path.subresource.is_none() => "create",
        (Method::PUT, true) => "update",
        (Method::PATCH, true) => "patch",
        (Method::DELETE, true) if path.subresource.is_none() => "delete",
        // Namespaces have no deletecollection (kube-apiserver 1.36.2 answers 405).
        (Method::DELETE, false) if info.group.is_empty() && info.plural == "namespaces" => {
            return Err(errors::method_not_allowed());
        }
        (Method::DELETE, false) => "deletecollection",
        _ => return Err(errors::method_not_allowed()),
    };
    let accept_header = header(header::ACCEPT);
    if info.strategic_merge && !accept::restful_accepts(&accept_header) {
        return Err(accept::restful_not_acceptable(
            matches!(verb, "list" | "watch") && !has_name,
        ));
    }
    let output = accept::negotiate(&accept_header)?;
    let include_object = query
        .iter()
        .find(|(k, _)| k == "includeObject")
        .map(|(_, v)| v.as_str());
    let shape = Shape::new(output, info.clone(), include_object)?;
    if verb == "watch" && accept::wants_yaml(&accept_header) {
        return Err(accept::watch_not_acceptable());
    }
    let name = path.name.as_deref();
    if let Some(delay) = state.faults.take_delay(verb, &info.plural, name) {
        tokio::time::sleep(delay).await;
    }
    state
        .requests
        .record(verb, &path, &header(header::USER_AGENT));
    let fault = state.faults.take(verb, &info.plural, name);
    if let Some(e) = fault.and_then(InjectedError::to_api_error) {
        return Err(e);
    }
    let max = state.config.max_body_bytes;
    let body = match Limited::new(req.into_body(), max).collect().await {
        Ok(c) => c.to_bytes(),
        Err(e) if e.to_string().contains("length limit exceeded") => {
            return Err(errors::too_large_body(max));
        }
        Err(e) => {
            return Err(errors::bad_request(format!(
                "error reading the request body: {e}"
            )));
        }
    };
    let ctx = Ctx {
        state,
        info,
        path,
        query,
        shape,
        content_type,
        user_agent,
        body,
    };
    let response = match verb {
        "get" => get(&ctx),
        "list" => list_handler(&ctx).await,
        "watch" => watch_handler(&ctx).await,
        "create" => create_handler(&ctx),
        "update" => update_handler(&ctx),
        "patch" => patch_handler(&ctx),
        "delete" => delete_handler(&ctx),
        _ => delete_collection_handler(&ctx),
    }?;
    if fault == Some(InjectedError::CutBody) {
        let status = response.status();
        let bytes = match response.into_body() {
            Body::Full(Some(b)) => b,
            _ => Bytes::new(),
        };
        return Ok(body::cut(status, bytes));
    }
    Ok(response)
}

/// The answer to a path nothing serves under `group`: a built-in group's own handler answers
/// a JSON 404 Status; anything else (an unknown group, a custom resource without its CRD or
/// version) falls through kube-apiserver's handler chain to its last handler, Go's
/// `http.NotFound`: `404 page not found` as `text/plain`.
fn not_served(state: &State, group: &str) -> ApiResult<Response<Body>> {
    let built_in = state
        .registry
        .all()
        .iter()
        .any(|r| r.strategic_merge && r.group == group);
    if built_in {
        Err(errors::no_route())
    } else {
        Ok(page_not_found())
    }
}

/// Go's `http.NotFound`.
fn page_not_found() -> Response<Body> {
    body::text(StatusCode::NOT_FOUND, "404 page not found\n")
}

fn get(ctx: &Ctx) -> ApiResult<Response<Body>> {
    let key = crate::store::object_key(ctx.namespace(), ctx.name());
    let obj = ctx
        .state
        .store
        .get(&ctx.info.keyspace(), &key)
        .ok_or_else(|| errors::not_found(&ctx.info.group, &ctx.info.plural, ctx.name()))?;
    ctx.shape.object(StatusCode::OK, obj.json())
}

fn list_json(info: &ResourceInfo, items: &[Arc<StoredObject>], meta: &Value) -> Vec<u8> {
    let total: usize = items.iter().map(|o| o.json().len() + 1).sum();
    let mut out = Vec::with_capacity(total + 256);
    out.extend_from_slice(b"{\"apiVersion\":");
    out.extend_from_slice(&serde_json::to_vec(&info.api_version()).unwrap_or_default());
    out.extend_from_slice(b",\"items\":[");
    for (i, o) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        // Items of built-in types carry no apiVersion/kind (typed lists); custom resources'
        // do (unstructured lists), as kube-apiserver writes them.
        if info.strategic_merge {
            o.write_without_type_meta(&mut out);
        } else {
            out.extend_from_slice(o.json());
        }
    }
    out.extend_from_slice(b"],\"kind\":");
    out.extend_from_slice(&serde_json::to_vec(&info.list_kind).unwrap_or_default());
    out.extend_from_slice(b",\"metadata\":");
    out.extend_from_slice(&serde_json::to_vec(meta).unwrap_or_default());
    out.push(b'}');
    out
}

async fn list_handler(ctx: &Ctx) -> ApiResult<Response<Body>> {
    let opts = ListOptions::parse(&ctx.info, &ctx.query, false, ctx.state.config.watch_list)?;
    let result = list::list(&ctx.state, &ctx.info, ctx.namespace(), &opts).await?;
    let rv = result.page.rv.to_string();
    let mut meta = json!({"resourceVersion": rv});
    if let Some(c) = &result.continue_token {
        meta["continue"] = json!(c);
        if let Some(n) = result.page.remaining {
            meta["remainingItemCount"] = json!(n);
        }
    }
    if let Some(converted) = ctx.shape.list(&result.page.items, &meta)? {
        return Ok(converted);
    }
    if !ctx.info.strategic_merge && result.continue_token.is_none() {
        // Custom resources' lists are unstructured, whose `continue` is never omitted.
        meta["continue"] = json!("");
    }
    let list = list_json(&ctx.info, &result.page.items, &meta);
    Ok(body::json(StatusCode::OK, list))
}

async fn watch_handler(ctx: &Ctx) -> ApiResult<Response<Body>> {
    let mut opts = ListOptions::parse(&ctx.info, &ctx.query, true, ctx.state.config.watch_list)?;
    if let Some(name) = &ctx.path.name {
        opts.fields = opts
            .fields
            .clone()
            .and(clientgo_apimachinery::fields::FieldRequirement {
                field: "metadata.name".into(),
                operator: clientgo_apimachinery::fields::FieldOperator::Equals,
                value: name.clone(),
            });
    }
    let (render, render_bookmarks) = ctx.shape.watch_render();
    let (state, info, namespace) = (
        ctx.state.clone(),
        ctx.info.clone(),
        ctx.namespace().to_owned(),
    );
    let frames = if render_bookmarks {
        watch::watch_rendering_bookmarks(state, info, namespace, opts, render).await?
    } else {
        watch::watch(state, info, namespace, opts, render).await?
    };
    Ok(ctx.shape.watch_body(frames))
}

fn decode_body(ctx: &Ctx) -> ApiResult<serde_json::Map<String, Value>> {
    let format = validation::body_format(&ctx.content_type)?;
    validation::decode_object(format, &ctx.body, &ctx.info.kind)
}

/// The body of a create or update, its unknown fields dropped (built-ins), and the
/// warnings they give (`fieldValidation`: 400 under `Strict`).
fn decode_pruned(
    ctx: &Ctx,
    options_kind: &str,
) -> ApiResult<(serde_json::Map<String, Value>, Vec<String>)> {
    let validation = pruning::FieldValidation::parse(&ctx.query, options_kind)?;
    let mut obj = decode_body(ctx)?;
    let problems = match pruning::root_type(&ctx.info) {
        None => pruning::custom_problems(&ctx.info, &mut obj),
        Some(ty) => {
            let pruned = pruning::prune(ty, &mut obj);
            match validation::body_format(&ctx.content_type)? {
                validation::BodyFormat::Json => {
                    pruning::body_problems(ty, &ctx.body).unwrap_or(pruned)
                }
                _ => pruned,
            }
        }
    };
    match validation {
        pruning::FieldValidation::Strict if !problems.is_empty() => {
            Err(pruning::strict_body_error(&ctx.info, &problems))
        }
        pruning::FieldValidation::Warn => Ok((obj, problems)),
        _ => Ok((obj, Vec::new())),
    }
}

/// `response` with one `Warning` header per warning (each once).
fn with_warnings(mut response: Response<Body>, warnings: &[String]) -> Response<Body> {
    let mut seen = std::collections::HashSet::new();
    for w in warnings.iter().filter(|w| seen.insert(w.as_str())) {
        if let Ok(value) = http::HeaderValue::from_str(&pruning::warning_header(w)) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

fn create_handler(ctx: &Ctx) -> ApiResult<Response<Body>> {
    let opts = ctx.write_options("CreateOptions")?;
    let (obj, warnings) = decode_pruned(ctx, "CreateOptions")?;
    let write = update::Write {
        record: Some(&opts.writer),
        dry_run: opts.dry_run,
    };
    let created = create::create_as(&ctx.state, &ctx.info, ctx.namespace(), obj, write)?;
    let response = ctx.shape.object(StatusCode::CREATED, created.json())?;
    Ok(with_warnings(response, &warnings))
}

fn update_handler(ctx: &Ctx) -> ApiResult<Response<Body>> {
    let opts = ctx.write_options("UpdateOptions")?;
    let (obj, warnings) = decode_pruned(ctx, "UpdateOptions")?;
    let write = update::Write {
        record: Some(&opts.writer),
        dry_run: opts.dry_run,
    };
    let updated = update::update_as(
        &ctx.state,
        &ctx.info,
        ctx.namespace(),
        ctx.name(),
        ctx.part(),
        write,
        obj,
    )?;
    let response = ctx.shape.object(StatusCode::OK, updated.object.json())?;
    Ok(with_warnings(response, &warnings))
}

fn patch_handler(ctx: &Ctx) -> ApiResult<Response<Body>> {
    let opts = ctx.write_options("PatchOptions")?;
    let patched = patch::patch(
        &ctx.state,
        &ctx.info,
        ctx.namespace(),
        ctx.name(),
        ctx.part(),
        &ctx.content_type,
        &ctx.body,
        &opts,
    )?;
    let code = if patched.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let response = ctx.shape.object(code, patched.object.json())?;
    Ok(with_warnings(response, &patched.warnings))
}

fn delete_options(ctx: &Ctx) -> ApiResult<DeleteOptions> {
    let mut opts: DeleteOptions = if ctx.body.iter().all(u8::is_ascii_whitespace) {
        DeleteOptions::default()
    } else {
        let format = validation::body_format(&ctx.content_type)?;
        let options = validation::decode_options(format, &ctx.body)?;
        serde_json::from_value(Value::Object(options))
            .map_err(|e| errors::bad_request(format!("error decoding DeleteOptions: {e}")))?
    };
    for (k, v) in &ctx.query {
        match k.as_str() {
            "propagationPolicy" => opts.propagation_policy = Some(v.clone()),
            "orphanDependents" => opts.orphan_dependents = Some(v == "true"),
            "dryRun" if !v.is_empty() => opts.dry_run.push(v.clone()),
            "gracePeriodSeconds" => {
                opts.grace_period_seconds = Some(v.parse().map_err(|_| {
                    errors::bad_request(format!("invalid value for gracePeriodSeconds: {v:?}"))
                })?);
            }
            _ => {}
        }
    }
    Ok(opts)
}

fn delete_handler(ctx: &Ctx) -> ApiResult<Response<Body>> {
    let opts = delete_options(ctx)?;
    match delete::delete(&ctx.state, &ctx.info, ctx.namespace(), ctx.name(), &opts)? {
        Deleted::Pending(obj) | Deleted::Gone(obj) => ctx.shape.object(StatusCode::OK, obj.json()),
        Deleted::Removed(obj) => {
            let mut details =
                json!({"name": obj.name(), "kind": ctx.info.plural, "uid": obj.uid()});
            if !ctx.info.group.is_empty() {
                details["group"] = ctx.info.group.clone().into();
            }
            let status = json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                "details": details
            });
            Ok(body::json(
                StatusCode::OK,
                serde_json::to_vec(&status).unwrap_or_default(),
            ))
        }
    }
}

fn delete_collection_handler(ctx: &Ctx) -> ApiResult<Response<Body>> {
    let opts = delete_options(ctx)?;
    let list_opts = ListOptions::parse(&ctx.info, &ctx.query, false, ctx.state.config.watch_list)?;
    let deleted = delete::delete_collection(&ctx.state, &ctx.info, ctx.namespace(), &opts, &|o| {
        list_opts.matches(o)
    })?;
    let meta = json!({"resourceVersion": ctx.state.store.rev().to_string()});
    Ok(body::json(
        StatusCode::OK,
        list_json(&ctx.info, &deleted, &meta),
    ))
}

/// Makes an [`ApiError`] response (used by the server for requests it cannot route).
pub fn error_response(e: &ApiError) -> Response<Body> {
    body::error(e)
}
