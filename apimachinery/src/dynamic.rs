//! Objects of any kind: [`DynamicObject`].
//!
//! Plays the role of `unstructured.Unstructured` in k8s.io/apimachinery, with one
//! difference: the metadata is typed ([`ObjectMeta`]), so the machinery reads names,
//! resource versions and labels without walking a JSON tree, and only the rest of the
//! object (`spec`, `status`, `data`, ...) is kept as JSON.
//!
//! Round trips are lossless for every top-level field: anything other than `apiVersion`,
//! `kind` and `metadata` is kept in [`DynamicObject::data`] exactly as decoded (as
//! `serde_json::Value`s; maps come out in sorted key order). Inside `metadata`, every field
//! Kubernetes defines is kept, `managedFields` byte for byte.
//!
//! Serde is implemented by hand: a derived `#[serde(flatten)]` would buffer the whole
//! object before decoding it, and would break the byte-preserving `managedFields`.

use std::fmt;

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::gvk::{GroupVersionError, GroupVersionKind};
use crate::meta::{ObjectMeta, TypeMeta};
use crate::resource::{ApiResource, Resource};

/// An object of any kind: type, typed metadata, and the rest as JSON.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DynamicObject {
    /// `apiVersion` and `kind`, when either is present.
    pub types: Option<TypeMeta>,
    /// `metadata`.
    pub metadata: ObjectMeta,
    /// Every other top-level field, e.g. `spec` and `status`.
    pub data: Map<String, Value>,
}

crate::impl_object!(DynamicObject);

impl DynamicObject {
    /// An object with only a name.
    pub fn new(name: impl Into<String>) -> DynamicObject {
        DynamicObject {
            metadata: ObjectMeta::named(name),
            ..DynamicObject::default()
        }
    }

    /// An object of the kind `resource` describes, with a name.
    pub fn for_resource(resource: &ApiResource, name: impl Into<String>) -> DynamicObject {
        DynamicObject {
            types: Some(TypeMeta::new(resource.api_version(), resource.kind.clone())),
            ..DynamicObject::new(name)
        }
    }

    /// Sets the namespace.
    pub fn within(mut self, namespace: impl Into<String>) -> DynamicObject {
        self.metadata.namespace = namespace.into();
        self
    }

    /// Sets a top-level field (e.g. `spec`).
    pub fn with_field(mut self, key: impl Into<String>, value: Value) -> DynamicObject {
        self.data.insert(key.into(), value);
        self
    }

    /// The object's group, version and kind, from `apiVersion` and `kind`.
    pub fn gvk(&self) -> Result<GroupVersionKind, GroupVersionError> {
        let types = self.types.as_ref().ok_or_else(|| GroupVersionError {
            input: String::new(),
            reason: "the object has no apiVersion",
        })?;
        types.gvk()
    }

    /// `apiVersion`, or `""`.
    pub fn api_version(&self) -> &str {
        self.types.as_ref().map_or("", |t| t.api_version.as_str())
    }

    /// `kind`, or `""`.
    pub fn kind(&self) -> &str {
        self.types.as_ref().map_or("", |t| t.kind.as_str())
    }

    /// Converts a typed object (through JSON).
    pub fn from_typed<K: Serialize>(object: &K) -> Result<DynamicObject, serde_json::Error> {
        serde_json::from_value(serde_json::to_value(object)?)
    }

    /// Converts into a typed object (through JSON), e.g. a k8s-openapi `Pod`.
    pub fn to_typed<K: serde::de::DeserializeOwned>(&self) -> Result<K, serde_json::Error> {
        serde_json::from_value(serde_json::to_value(self)?)
    }

    /// Whether `apiVersion` and `kind` are those of `K`.
    pub fn is_a<K: Resource>(&self) -> bool {
        self.kind() == K::KIND && self.api_version() == K::api_version()
    }
}

impl Serialize for DynamicObject {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let (api_version, kind) = match &self.types {
            Some(t) => (t.api_version.as_str(), t.kind.as_str()),
            None => ("", ""),
        };
        let mut map = serializer.serialize_map(None)?;
        if !api_version.is_empty() {
            map.serialize_entry("apiVersion", api_version)?;
        }
        if !kind.is_empty() {
            map.serialize_entry("kind", kind)?;
        }
        map.serialize_entry("metadata", &self.metadata)?;
        for (k, v) in &self.data {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

enum Key {
    ApiVersion,
    Kind,
    Metadata,
    Other(String),
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Key, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Key;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a field name")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                Ok(match v {
                    "apiVersion" => Key::ApiVersion,
                    "kind" => Key::Kind,
                    "metadata" => Key::Metadata,
                    other => Key::Other(other.to_owned()),
                })
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Key, E> {
                match v.as_str() {
                    "apiVersion" | "kind" | "metadata" => self.visit_str(&v),
                    _ => Ok(Key::Other(v)),
                }
            }
        }
        deserializer.deserialize_identifier(V)
    }
}

impl<'de> Deserialize<'de> for DynamicObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<DynamicObject, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = DynamicObject;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a Kubernetes object (a JSON object)")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DynamicObject, A::Error> {
                let mut api_version: Option<String> = None;
                let mut kind: Option<String> = None;
                let mut metadata: Option<ObjectMeta> = None;
                let mut data = Map::new();
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::ApiVersion => {
                            if api_version.is_some() {
                                return Err(de::Error::duplicate_field("apiVersion"));
                            }
                            api_version =
                                Some(map.next_value::<Option<String>>()?.unwrap_or_default());
                        }
                        Key::Kind => {
                            if kind.is_some() {
                                return Err(de::Error::duplicate_field("kind"));
                            }
                            kind = Some(map.next_value::<Option<String>>()?.unwrap_or_default());
                        }
                        Key::Metadata => {
                            if metadata.is_some() {
                                return Err(de::Error::duplicate_field("metadata"));
                            }
                            metadata =
                                Some(map.next_value::<Option<ObjectMeta>>()?.unwrap_or_default());
                        }
                        Key::Other(k) => {
                            if data.contains_key(&k) {
                                return Err(de::Error::custom(format_args!(
                                    "duplicate field `{k}`"
                                )));
                            }
                            let v = map.next_value::<Value>()?;
                            data.insert(k, v);
                        }
                    }
                }
                let types = match (api_version, kind) {
                    (None, None) => None,
                    (a, k) => Some(TypeMeta {
                        api_version: a.unwrap_or_default(),
                        kind: k.unwrap_or_default(),
                    }),
                };
                Ok(DynamicObject {
                    types,
                    metadata: metadata.unwrap_or_default(),
                    data,
                })
            }
        }
        deserializer.deserialize_map(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Object;
    use serde_json::json;

    #[test]
    fn unknown_fields_round_trip_losslessly() {
        let input = json!({
            "apiVersion": "example.com/v1alpha1",
            "kind": "Widget",
            "metadata": {
                "name": "w", "namespace": "prod", "uid": "u-1", "resourceVersion": "42",
                "generation": 2, "labels": {"app": "w"},
                "managedFields": [{"manager": "m", "fieldsV1": {"f:spec": {}}}]
            },
            "spec": {"size": 3, "nested": {"list": [1, 2.5, "x", null, true], "empty": {}}},
            "status": {"ready": false},
            "extraTopLevel": [{"a": 1}],
            "weird": null
        });
        let obj: DynamicObject = serde_json::from_value(input.clone()).unwrap();
        assert_eq!(obj.key(), "prod/w");
        assert_eq!(obj.generation(), 2);
        assert_eq!(obj.kind(), "Widget");
        assert_eq!(obj.gvk().unwrap().group, "example.com");
        assert_eq!(obj.data["spec"]["size"], 3);
        assert!(obj.data.contains_key("weird"));
        assert_eq!(serde_json::to_value(&obj).unwrap(), input);

        // From text, too, and again through our own output.
        let text = serde_json::to_string(&input).unwrap();
        let obj2: DynamicObject = serde_json::from_str(&text).unwrap();
        assert_eq!(obj2, obj);
        let again: DynamicObject =
            serde_json::from_str(&serde_json::to_string(&obj2).unwrap()).unwrap();
        assert_eq!(again, obj);
    }

    #[test]
    fn managed_fields_are_kept_byte_for_byte() {
        let text = r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","managedFields":[{"manager":"z","apiVersion":"v1","fieldsV1":{"f:data":{}}}]},"data":{"a":"b"}}"#;
        let obj: DynamicObject = serde_json::from_str(text).unwrap();
        assert_eq!(
            obj.metadata.managed_fields.as_ref().unwrap().json(),
            r#"[{"manager":"z","apiVersion":"v1","fieldsV1":{"f:data":{}}}]"#
        );
        assert_eq!(serde_json::to_string(&obj).unwrap(), text);
    }

    #[test]
    fn missing_type_and_metadata() {
        let obj: DynamicObject = serde_json::from_str(r#"{"spec":{}}"#).unwrap();
        assert_eq!(obj.types, None);
        assert_eq!(obj.metadata, ObjectMeta::default());
        assert!(obj.gvk().is_err());
        assert_eq!(
            serde_json::to_string(&obj).unwrap(),
            r#"{"metadata":{},"spec":{}}"#
        );
        let obj: DynamicObject = serde_json::from_str(r#"{"kind":"X","metadata":null}"#).unwrap();
        assert_eq!(obj.types, Some(TypeMeta::new("", "X")));
    }

    #[test]
    fn malformed_objects_are_errors() {
        for (text, needle) in [
            ("[]", "invalid type: sequence, expected a Kubernetes object"),
            (
                r#"{"metadata":"x"}"#,
                "invalid type: string \"x\", expected struct ObjectMeta",
            ),
            (
                r#"{"kind":5}"#,
                "invalid type: integer `5`, expected a string",
            ),
            (r#"{"kind":"A","kind":"B"}"#, "duplicate field `kind`"),
            (
                r#"{"metadata":{"generation":"one"}}"#,
                "invalid type: string \"one\", expected i64",
            ),
            (r#"{"metadata":{}"#, "EOF while parsing"),
        ] {
            let err = serde_json::from_str::<DynamicObject>(text).unwrap_err();
            assert!(err.to_string().contains(needle), "{text}: {err}");
        }
    }

    #[test]
    fn builders_and_typed_conversion() {
        let ar = ApiResource {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
            namespaced: true,
        };
        let obj = DynamicObject::for_resource(&ar, "d")
            .within("ns")
            .with_field("spec", json!({"replicas": 2}));
        assert_eq!(obj.api_version(), "apps/v1");

        #[derive(Serialize, Deserialize, PartialEq, Debug)]
        struct Typed {
            #[serde(rename = "apiVersion")]
            api_version: String,
            kind: String,
            metadata: ObjectMeta,
            spec: Value,
        }
        let typed: Typed = obj.to_typed().unwrap();
        assert_eq!(typed.metadata.namespace, "ns");
        assert_eq!(DynamicObject::from_typed(&typed).unwrap(), obj);
    }
}
