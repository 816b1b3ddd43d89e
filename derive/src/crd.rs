//! The [`CustomResource`] trait and the CustomResourceDefinition of one version of a kind.
//!
//! Mirrors controller-tools' `crd/spec.go` and `crd/markers/crd.go` (the `+kubebuilder:resource`,
//! `printcolumn`, `subresource`, `storageversion` markers) and kube-derive's `crd()`. Where it
//! differs, and why: the CRD is a `serde_json::Value`, not k8s-openapi's
//! `CustomResourceDefinition` (a library may not pick k8s-openapi's Kubernetes version; decode
//! it with `serde_json::from_value` where a typed one is wanted); the description of the
//! resource is a `'static` [`ResourceInfo`] the derive writes, built into JSON here where it
//! can be unit-tested.

use serde_json::{Map, Value, json};

use crate::schema::CrdSchema;

/// An `additionalPrinterColumns` entry: a column of `kubectl get`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PrinterColumn {
    /// The column's header.
    pub name: &'static str,
    /// Its OpenAPI type: `integer`, `number`, `string`, `boolean` or `date`.
    pub type_: &'static str,
    /// A JSONPath into each object, e.g. `.spec.replicas`.
    pub json_path: &'static str,
    /// A human-readable description.
    pub description: Option<&'static str>,
    /// An OpenAPI format, e.g. `int32` or `date-time`.
    pub format: Option<&'static str>,
    /// 0: shown by default; higher: only with `-o wide`.
    pub priority: i32,
}

/// The `scale` subresource: where the replica counts and the label selector live.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scale {
    /// `specReplicasPath`, e.g. `.spec.replicas`.
    pub spec_replicas_path: &'static str,
    /// `statusReplicasPath`, e.g. `.status.replicas`.
    pub status_replicas_path: &'static str,
    /// `labelSelectorPath` (a string in status, for the HorizontalPodAutoscaler).
    pub label_selector_path: Option<&'static str>,
}

/// A CEL rule (`x-kubernetes-validations` entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ValidationRule {
    /// The CEL expression; `self` is the value the rule is attached to.
    pub rule: &'static str,
    /// The message when it fails.
    pub message: Option<&'static str>,
    /// A CEL expression computing the message.
    pub message_expression: Option<&'static str>,
    /// `FieldValueInvalid` (default), `FieldValueForbidden`, `FieldValueRequired` or
    /// `FieldValueDuplicate`.
    pub reason: Option<&'static str>,
    /// The field the error names, relative to the value, e.g. `.replicas`.
    pub field_path: Option<&'static str>,
    /// `optionalOldSelf`: a transition rule also evaluated on create.
    pub optional_old_self: bool,
}

impl ValidationRule {
    /// The `x-kubernetes-validations` entry.
    pub fn to_json(&self) -> Value {
        let mut rule = Map::new();
        rule.insert("rule".into(), self.rule.into());
        let optional = [
            ("message", self.message),
            ("messageExpression", self.message_expression),
            ("reason", self.reason),
            ("fieldPath", self.field_path),
        ];
        for (key, value) in optional {
            if let Some(value) = value {
                rule.insert(key.into(), value.into());
            }
        }
        if self.optional_old_self {
            rule.insert("optionalOldSelf".into(), true.into());
        }
        Value::Object(rule)
    }
}

/// Everything about one version of a custom resource but its schema: what
/// `#[resource(...)]` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResourceInfo {
    /// API group, e.g. `samplecontroller.k8s.io`.
    pub group: &'static str,
    /// Version, e.g. `v1alpha1`.
    pub version: &'static str,
    /// Kind, e.g. `Foo`.
    pub kind: &'static str,
    /// Plural resource name, e.g. `foos`.
    pub plural: &'static str,
    /// Singular name, e.g. `foo`.
    pub singular: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// `kubectl` short names.
    pub short_names: &'static [&'static str],
    /// Categories, e.g. `all`.
    pub categories: &'static [&'static str],
    /// `kubectl get` columns.
    pub printer_columns: &'static [PrinterColumn],
    /// The `scale` subresource, if any.
    pub scale: Option<Scale>,
    /// Whether the `status` subresource is on (a status type was given).
    pub status_subresource: bool,
    /// Field selectors (`selectableFields`), JSONPaths such as `.spec.color`.
    pub selectable_fields: &'static [&'static str],
    /// Whether this version is served.
    pub served: bool,
    /// Whether this version is the storage version.
    pub storage: bool,
    /// Whether this version is deprecated.
    pub deprecated: bool,
    /// The warning clients get when using a deprecated version.
    pub deprecation_warning: Option<&'static str>,
    /// CEL rules on the whole object (they can see `metadata.name`).
    pub validations: &'static [ValidationRule],
    /// Annotations of the CRD object, e.g. `api-approved.kubernetes.io` for `*.k8s.io` groups.
    pub annotations: &'static [(&'static str, &'static str)],
    /// Labels of the CRD object.
    pub labels: &'static [(&'static str, &'static str)],
    /// Whether `spec` is required (`false` with `#[resource(spec_default)]`).
    pub spec_required: bool,
    /// Descriptions longer than this are cut (controller-tools' `crd:maxDescLen`); `0`
    /// drops them.
    pub max_description_len: Option<usize>,
}

impl ResourceInfo {
    /// The CRD's name: `<plural>.<group>`.
    pub fn crd_name(&self) -> String {
        format!("{}.{}", self.plural, self.group)
    }

    /// The `openAPIV3Schema` of this version: `apiVersion`, `kind`, `metadata`, `spec` and
    /// (when given) `status`, with `spec` required unless `spec_required` is off.
    pub fn schema(&self, spec: Value, status: Option<Value>) -> Value {
        let mut properties = Map::new();
        properties.insert("apiVersion".into(), json!({"type": "string"}));
        properties.insert("kind".into(), json!({"type": "string"}));
        properties.insert("metadata".into(), json!({"type": "object"}));
        properties.insert("spec".into(), spec);
        if let Some(status) = status {
            properties.insert("status".into(), status);
        }
        let mut schema = json!({"type": "object", "properties": properties});
        if self.spec_required {
            schema["required"] = json!(["spec"]);
        }
        if let Some(max) = self.max_description_len {
            limit_descriptions(&mut schema, max);
        }
        if !self.validations.is_empty() {
            schema["x-kubernetes-validations"] = self
                .validations
                .iter()
                .map(ValidationRule::to_json)
                .collect();
        }
        schema
    }

    /// The `versions[]` entry of this version, with `schema` as its `openAPIV3Schema`.
    pub fn version_entry(&self, schema: Value) -> Value {
        let mut version = json!({
            "name": self.version,
            "served": self.served,
            "storage": self.storage,
        });
        if self.deprecated {
            version["deprecated"] = true.into();
            if let Some(warning) = self.deprecation_warning {
                version["deprecationWarning"] = warning.into();
            }
        }
        let mut subresources = Map::new();
        if self.status_subresource {
            subresources.insert("status".into(), json!({}));
        }
        if let Some(scale) = &self.scale {
            let mut entry = json!({
                "specReplicasPath": scale.spec_replicas_path,
                "statusReplicasPath": scale.status_replicas_path,
            });
            if let Some(path) = scale.label_selector_path {
                entry["labelSelectorPath"] = path.into();
            }
            subresources.insert("scale".into(), entry);
        }
        if !subresources.is_empty() {
            version["subresources"] = Value::Object(subresources);
        }
        if !self.printer_columns.is_empty() {
            version["additionalPrinterColumns"] =
                self.printer_columns.iter().map(printer_column).collect();
        }
        if !self.selectable_fields.is_empty() {
            version["selectableFields"] = self
                .selectable_fields
                .iter()
                .map(|path| json!({"jsonPath": path}))
                .collect();
        }
        version["schema"] = json!({"openAPIV3Schema": schema});
        version
    }

    /// The whole CustomResourceDefinition (`apiextensions.k8s.io/v1`) with this one version.
    pub fn crd(&self, spec: Value, status: Option<Value>) -> Value {
        let mut metadata = json!({"name": self.crd_name()});
        if !self.annotations.is_empty() {
            metadata["annotations"] = pairs(self.annotations);
        }
        if !self.labels.is_empty() {
            metadata["labels"] = pairs(self.labels);
        }
        let mut names = json!({
            "kind": self.kind,
            "listKind": format!("{}List", self.kind),
            "plural": self.plural,
            "singular": self.singular,
        });
        if !self.short_names.is_empty() {
            names["shortNames"] = self.short_names.into();
        }
        if !self.categories.is_empty() {
            names["categories"] = self.categories.into();
        }
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": metadata,
            "spec": {
                "group": self.group,
                "names": names,
                "scope": if self.namespaced { "Namespaced" } else { "Cluster" },
                "versions": [self.version_entry(self.schema(spec, status))],
            },
        })
    }
}

/// Cuts every `description` (a string-valued key, not a property named so) to `max`
/// characters, dropping it at 0.
fn limit_descriptions(schema: &mut Value, max: usize) {
    match schema {
        Value::Object(map) => {
            if let Some(Value::String(text)) = map.get_mut("description") {
                if max == 0 {
                    map.remove("description");
                } else if let Some((cut, _)) = text.char_indices().nth(max) {
                    text.truncate(cut);
                }
            }
            map.values_mut().for_each(|v| limit_descriptions(v, max));
        }
        Value::Array(items) => items.iter_mut().for_each(|v| limit_descriptions(v, max)),
        _ => {}
    }
}

fn pairs(pairs: &[(&str, &str)]) -> Value {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::from(*v)))
        .collect::<Map<_, _>>()
        .into()
}

fn printer_column(column: &PrinterColumn) -> Value {
    let mut entry = json!({
        "name": column.name,
        "type": column.type_,
        "jsonPath": column.json_path,
    });
    if let Some(description) = column.description {
        entry["description"] = description.into();
    }
    if let Some(format) = column.format {
        entry["format"] = format.into();
    }
    if column.priority != 0 {
        entry["priority"] = column.priority.into();
    }
    entry
}

/// A custom resource: the root type `#[derive(CustomResource)]` generates from a spec type.
///
/// The root type also implements clientgo-apimachinery's `Resource`, `Object` and
/// `ObjectMut`, so the REST client, informers and listers take it as it is.
pub trait CustomResource: clientgo_apimachinery::Resource + Sized {
    /// The spec type (the one the derive is on).
    type Spec: CrdSchema;
    /// What `#[resource(...)]` says.
    const INFO: ResourceInfo;

    /// The status type's schema, when the resource has a status.
    fn status_schema() -> Option<serde_json::Value>;

    /// An object named `name` (no namespace) with `spec`, `apiVersion` and `kind` set.
    fn new(name: &str, spec: Self::Spec) -> Self;

    /// The `openAPIV3Schema` of this version.
    fn schema() -> Value {
        Self::INFO.schema(Self::Spec::crd_schema(), Self::status_schema())
    }

    /// The CustomResourceDefinition with this one version (merge several with
    /// [`merge_crds`](crate::merge_crds)).
    fn crd() -> Value {
        Self::INFO.crd(Self::Spec::crd_schema(), Self::status_schema())
    }

    /// The CRD's name: `<plural>.<group>`.
    fn crd_name() -> String {
        Self::INFO.crd_name()
    }
}
