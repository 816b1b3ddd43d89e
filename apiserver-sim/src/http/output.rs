//! The representation of an answer the `Accept` header negotiated ([`super::accept`]): an
//! object, a list or a watch's events as stored, as a Table ([`super::table`]) or as
//! `PartialObjectMetadata` ([`super::partial`]).
//!
//! Mirrors kube-apiserver 1.36.2's `transformObject` (`endpoints/handlers/response.go`) and
//! the watch encoder's transform: every object answer (get, create, update, patch, a delete
//! answering the object) is converted, Status answers are not; a Table watch writes its
//! column definitions with its first event only (bookmarks included, which are Tables of the
//! bookmark object too); a watch asking for `PartialObjectMetadataList` is answered 200 and
//! ends at its first event, which the real server fails to convert.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Response, StatusCode};
use serde_json::Value;

use super::accept::Output;
use super::body::{self, Body};
use super::{partial, table};
use crate::errors::ApiResult;
use crate::resources::ResourceInfo;
use crate::store::StoredObject;
use crate::verbs::watch::{Frames, Render};

/// The answer's representation for one request.
pub struct Shape {
    output: Output,
    info: Arc<ResourceInfo>,
    /// `includeObject` of a Table (validated when a Table is asked for).
    include: table::IncludeObject,
}

impl Shape {
    /// `include_object`: the request's `includeObject`, checked only for Tables.
    pub fn new(
        output: Output,
        info: Arc<ResourceInfo>,
        include_object: Option<&str>,
    ) -> ApiResult<Shape> {
        let include = match output {
            Output::Table(_) => table::IncludeObject::parse(include_object)?,
            _ => table::IncludeObject::default(),
        };
        Ok(Shape {
            output,
            info,
            include,
        })
    }

    fn tables(&self, version: &'static str) -> table::Tables {
        table::Tables::new(self.info.clone(), self.include, version)
    }

    /// An object answer (`json` as stored) with status `code`.
    pub fn object(&self, code: StatusCode, json: &[u8]) -> ApiResult<Response<Body>> {
        Ok(match self.output {
            Output::Table(version) => body::json(code, self.tables(version).object(json, true)),
            Output::PartialObjectMetadata(version) => {
                body::json(code, partial::object(json, version))
            }
            Output::PartialObjectMetadataList(_) => return Err(partial::not_a_list(&self.info)),
            Output::Object => body::json(code, Bytes::copy_from_slice(json)),
        })
    }

    /// A list answer in a conversion, or `None` for the plain list (`meta`: the list's
    /// metadata).
    pub fn list(
        &self,
        items: &[Arc<StoredObject>],
        meta: &Value,
    ) -> ApiResult<Option<Response<Body>>> {
        let jsons = items.iter().map(|o| o.json());
        let bytes = match self.output {
            Output::PartialObjectMetadata(_) => return Err(partial::is_a_list(&self.info)),
            Output::Table(version) => self.tables(version).list(jsons, meta.clone()),
            Output::PartialObjectMetadataList(version) => partial::list(jsons, meta, version),
            Output::Object => return Ok(None),
        };
        Ok(Some(body::json(StatusCode::OK, bytes)))
    }

    /// How a watch writes each event's object, and whether bookmarks go through it too.
    pub fn watch_render(&self) -> (Render, bool) {
        match self.output {
            Output::Table(version) => {
                let tables = self.tables(version);
                let first = AtomicBool::new(true);
                let render = Arc::new(move |json: &[u8]| {
                    tables.object(json, first.swap(false, Ordering::Relaxed))
                });
                (render, true)
            }
            Output::PartialObjectMetadata(version) => (
                Arc::new(move |json: &[u8]| partial::object(json, version)),
                true,
            ),
            Output::PartialObjectMetadataList(_) | Output::Object => {
                (Arc::new(|json: &[u8]| json.to_vec()), false)
            }
        }
    }

    /// The watch's body: its frames, or for `PartialObjectMetadataList` none, the stream
    /// ending at the first event.
    pub fn watch_body(&self, mut frames: Frames) -> Response<Body> {
        if !matches!(self.output, Output::PartialObjectMetadataList(_)) {
            return body::stream(frames);
        }
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            tokio::select! {
                _ = frames.recv() => {}
                () = tx.closed() => {}
            }
        });
        body::stream(rx)
    }
}
