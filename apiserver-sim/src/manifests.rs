//! Seeding the simulator from manifest files, for `apiserver-sim --objects-from DIR`.
//!
//! This is what `kubectl create -f DIR` does against a real server, done in process before
//! the first request: every `*.json`, `*.yaml` and `*.yml` file of the directory (not its
//! subdirectories), in name order, may hold one object, several YAML documents separated by
//! `---`, or a `List` whose `items` are objects. Objects are created in dependency order:
//! CustomResourceDefinitions first (so their custom resources are served), then Namespaces,
//! then everything else. A namespaced object without a namespace goes to `default`.
//!
//! Any error stops the load and names the file, and the object within it, that failed.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::server::ApiServerSim;

/// Why a manifest directory could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ManifestError {
    /// The directory or a file in it could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// What could not be read.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A file is not valid JSON or YAML.
    #[error("{path}: not a valid manifest: {reason}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message, with its position.
        reason: String,
    },
    /// A document is not a Kubernetes object (no apiVersion or kind).
    #[error("{path}: document {index} has no apiVersion and kind")]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// The document's position in the file, from 1.
        index: usize,
    },
    /// The server has no resource for an object's apiVersion and kind.
    #[error("{path}: no resource serves {api_version} {kind}")]
    UnknownKind {
        /// The file.
        path: PathBuf,
        /// The object's apiVersion.
        api_version: String,
        /// The object's kind.
        kind: String,
    },
    /// The server refused to create an object.
    #[error("{path}: cannot create {kind} {name:?}: {message}")]
    Create {
        /// The file.
        path: PathBuf,
        /// The object's kind.
        kind: String,
        /// The object's name.
        name: String,
        /// The server's Status message.
        message: String,
    },
}

/// One object read from a file.
struct Manifest {
    path: PathBuf,
    object: Value,
}

impl Manifest {
    fn field(&self, name: &str) -> &str {
        self.object.get(name).and_then(Value::as_str).unwrap_or("")
    }

    /// CRDs first, then namespaces, then the rest.
    fn rank(&self) -> u8 {
        match self.field("kind") {
            "CustomResourceDefinition" => 0,
            "Namespace" => 1,
            _ => 2,
        }
    }
}

/// Reads every object of the manifest files in `dir`, in file-name order.
fn read_dir(dir: &Path) -> Result<Vec<Manifest>, ManifestError> {
    let read_error = |path: &Path| {
        let path = path.to_owned();
        move |source| ManifestError::Read { path, source }
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read_error(dir))? {
        let path = entry.map_err(read_error(dir))?.path();
        let is_manifest = path
            .extension()
            .and_then(|ext| ext.to_str())
            .is_some_and(|ext| matches!(ext, "json" | "yaml" | "yml"));
        if is_manifest && path.is_file() {
            files.push(path);
        }
    }
    files.sort();
    let mut manifests = Vec::new();
    for path in files {
        let text = std::fs::read_to_string(&path).map_err(read_error(&path))?;
        let documents = parse_documents(&text).map_err(|reason| ManifestError::Parse {
            path: path.clone(),
            reason,
        })?;
        for (index, document) in documents.into_iter().enumerate() {
            let is_object = document.get("apiVersion").is_some_and(Value::is_string)
                && document.get("kind").is_some_and(Value::is_string);
            if !is_object {
                return Err(ManifestError::NotAnObject {
                    path,
                    index: index + 1,
                });
            }
            let items = match document.get("items") {
                Some(Value::Array(items))
                    if document["kind"]
                        .as_str()
                        .is_some_and(|k| k.ends_with("List")) =>
                {
                    items.clone()
                }
                _ => vec![document],
            };
            manifests.extend(items.into_iter().map(|object| Manifest {
                path: path.clone(),
                object,
            }));
        }
    }
    Ok(manifests)
}

/// The documents of a JSON or (multi-document) YAML text; empty documents are skipped.
fn parse_documents(text: &str) -> Result<Vec<Value>, String> {
    let mut documents = Vec::new();
    for document in serde_norway::Deserializer::from_str(text) {
        let value = Value::deserialize(document).map_err(|error| error.to_string())?;
        if !value.is_null() {
            documents.push(value);
        }
    }
    Ok(documents)
}

impl ApiServerSim {
    /// Creates every object of the manifest files in `dir` (see the module docs); returns how
    /// many were created.
    pub fn load_manifests(&self, dir: &Path) -> Result<usize, ManifestError> {
        let mut manifests = read_dir(dir)?;
        manifests.sort_by_key(Manifest::rank);
        let count = manifests.len();
        for manifest in manifests {
            let (api_version, kind) = (manifest.field("apiVersion"), manifest.field("kind"));
            let Some(resource) = self.state().registry.by_kind(api_version, kind) else {
                return Err(ManifestError::UnknownKind {
                    path: manifest.path.clone(),
                    api_version: api_version.to_owned(),
                    kind: kind.to_owned(),
                });
            };
            let namespace = match manifest.object.pointer("/metadata/namespace") {
                Some(Value::String(namespace)) if resource.namespaced => namespace.clone(),
                _ if resource.namespaced => "default".to_owned(),
                _ => String::new(),
            };
            let name = manifest
                .object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned();
            let kind = kind.to_owned();
            let path = manifest.path.clone();
            self.create(
                &resource.group,
                &resource.version,
                &resource.plural,
                &namespace,
                manifest.object,
            )
            .map_err(|error| ManifestError::Create {
                path,
                kind,
                name,
                message: error.status.message.clone(),
            })?;
        }
        Ok(count)
    }
}
