//! Table output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, or `v1beta1`), as
//! kubectl asks; the header is read by [`super::accept`].
//!
//! Mirrors kube-apiserver 1.36.2's `asTable` (`endpoints/handlers/response.go`) over the
//! table convertors of the served types: the built-in printers of `pkg/printers/internalversion`
//! (`builtin.rs`: ConfigMaps, Secrets, Pods, Namespaces, Deployments, ReplicaSets, Leases; the
//! generic registry's default convertor, `Name` and `Created At`, for the others) and the
//! apiextensions-apiserver's convertor of a CRD's `additionalPrinterColumns` (`custom.rs`).
//! A Table carries the column definitions (on a watch, the first event only; later ones
//! `columnDefinitions: null`), the list's or object's `resourceVersion` (a list's `continue`
//! and `remainingItemCount` too), and one row per object whose `object` is
//! `PartialObjectMetadata` (`includeObject=Metadata`, the default), the whole object
//! (`Object`) or `null` (`None`); another `includeObject` is 400 `BadRequest`. Ages are
//! `duration.HumanDuration`'s (`5s`, `2m30s`, `3d`).

mod builtin;
mod custom;
mod pod;

use clientgo_apimachinery::Time;
use serde_json::{Map, Value, json};

use crate::errors::{self, ApiResult};
use crate::resources::ResourceInfo;

/// `includeObject`: `None`, `Metadata` (default) or `Object`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// `"object": null` in rows.
    None,
    /// `PartialObjectMetadata`.
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// The `includeObject` query parameter; another value is 400 with kube-apiserver
    /// 1.36.2's message.
    pub fn parse(value: Option<&str>) -> ApiResult<IncludeObject> {
        match value.unwrap_or("") {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            "None" => Ok(IncludeObject::None),
            other => Err(errors::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {}: must be 'Metadata', 'Object', 'None', or empty",
                serde_json::to_string(other).unwrap_or_default()
            ))),
        }
    }
}

/// Go's `duration.HumanDuration` of `seconds` (negative: in the future).
pub fn human_duration(seconds: i64) -> String {
    match seconds {
        ..-1 => return "<invalid>".to_owned(),
        -1 => return "0s".to_owned(),
        0..120 => return format!("{seconds}s"),
        _ => {}
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    let days = hours / 24;
    let years = days / 365;
    // A unit and its remainder in the next smaller unit, the remainder left out when 0.
    let two = |major: i64, unit: char, minor: i64, minor_unit: char| {
        if minor == 0 {
            format!("{major}{unit}")
        } else {
            format!("{major}{unit}{minor}{minor_unit}")
        }
    };
    if hours < 8 {
        two(hours, 'h', minutes % 60, 'm')
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 192 {
        two(days, 'd', hours % 24, 'h')
    } else if hours < 17_520 {
        format!("{days}d")
    } else if hours < 70_080 {
        two(years, 'y', days % 365, 'd')
    } else {
        format!("{years}y")
    }
}

/// The age of an RFC 3339 time (`translateTimestampSince`): `<unknown>` when there is none.
pub fn age(time: Option<&str>) -> String {
    match time.and_then(|t| Time::parse(t).ok()) {
        Some(t) => human_duration(Time::now().unix_seconds() - t.unix_seconds()),
        None => "<unknown>".to_owned(),
    }
}

/// Tables of one resource, as one request asks for them.
pub struct Tables {
    columns: Vec<Value>,
    info: std::sync::Arc<ResourceInfo>,
    include: IncludeObject,
    version: &'static str,
}

impl Tables {
    /// Tables of `info`'s objects in `meta.k8s.io/<version>`, rows carrying `include`.
    pub fn new(
        info: std::sync::Arc<ResourceInfo>,
        include: IncludeObject,
        version: &'static str,
    ) -> Tables {
        let columns = if info.strategic_merge {
            builtin::columns(&info.kind)
        } else {
            custom::columns(&info)
        };
        Tables {
            columns,
            info,
            include,
            version,
        }
    }

    fn row(&self, obj: &Value) -> Value {
        let (cells, conditions) = if self.info.strategic_merge {
            builtin::cells(&self.info.kind, obj)
        } else {
            (custom::cells(&self.info, obj), None)
        };
        let object = match self.include {
            IncludeObject::None => Value::Null,
            IncludeObject::Metadata => super::partial::reduce(&obj["metadata"], self.version),
            IncludeObject::Object => obj.clone(),
        };
        let mut row = Map::new();
        row.insert("cells".into(), Value::Array(cells));
        if let Some(conditions) = conditions {
            row.insert("conditions".into(), conditions);
        }
        row.insert("object".into(), object);
        Value::Object(row)
    }

    fn table(&self, rows: Vec<Value>, metadata: Value, headers: bool) -> Vec<u8> {
        let columns = if headers {
            Value::Array(self.columns.clone())
        } else {
            Value::Null
        };
        let table = json!({
            "kind": "Table",
            "apiVersion": format!("meta.k8s.io/{}", self.version),
            "metadata": metadata,
            "columnDefinitions": columns,
            "rows": rows,
        });
        serde_json::to_vec(&table).unwrap_or_default()
    }

    /// The Table of one object (its JSON); `headers: false` for a watch's later events.
    pub fn object(&self, json: &[u8], headers: bool) -> Vec<u8> {
        let obj: Value = serde_json::from_slice(json).unwrap_or(Value::Null);
        let mut metadata = Map::new();
        if let Some(rv) = obj["metadata"]["resourceVersion"].as_str() {
            metadata.insert("resourceVersion".into(), rv.into());
        }
        self.table(vec![self.row(&obj)], Value::Object(metadata), headers)
    }

    /// The Table of a list's items with the list's `metadata`.
    pub fn list<'a>(&self, items: impl Iterator<Item = &'a [u8]>, metadata: Value) -> Vec<u8> {
        let rows = items
            .map(|json| self.row(&serde_json::from_slice(json).unwrap_or(Value::Null)))
            .collect();
        self.table(rows, metadata, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations_as_go_writes_them() {
        let cases = [
            (-5, "<invalid>"),
            (-1, "0s"),
            (5, "5s"),
            (150, "2m30s"),
            (180, "3m"),
            (900, "15m"),
            (3 * 3600 + 60, "3h1m"),
            (10 * 3600, "10h"),
            (3 * 86_400, "3d"),
            (3 * 86_400 + 3600, "3d1h"),
            (30 * 86_400, "30d"),
            (3 * 365 * 86_400 + 86_400, "3y1d"),
            (10 * 365 * 86_400, "10y"),
        ];
        for (seconds, text) in cases {
            assert_eq!(human_duration(seconds), text, "{seconds}");
        }
    }

    #[test]
    fn include_object() {
        assert_eq!(IncludeObject::parse(None).unwrap(), IncludeObject::Metadata);
        assert_eq!(
            IncludeObject::parse(Some("None")).unwrap(),
            IncludeObject::None
        );
        let e = IncludeObject::parse(Some("x")).unwrap_err();
        assert_eq!(e.status.code, 400);
    }

    #[test]
    fn a_configmap_table() {
        let info = crate::resources::builtins()
            .into_iter()
            .find(|r| r.kind == "ConfigMap")
            .unwrap();
        let tables = Tables::new(std::sync::Arc::new(info), IncludeObject::Metadata, "v1");
        let obj = br#"{"metadata":{"name":"a","resourceVersion":"7","creationTimestamp":"2020-01-01T00:00:00Z"},"data":{"x":"1"},"binaryData":{"y":""}}"#;
        let t: Value = serde_json::from_slice(&tables.object(obj, true)).unwrap();
        assert_eq!(t["rows"][0]["cells"][0], "a");
        assert_eq!(t["rows"][0]["cells"][1], 2);
        assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(t["columnDefinitions"][1]["name"], "Data");
        assert_eq!(t["metadata"]["resourceVersion"], "7");
        let later: Value = serde_json::from_slice(&tables.object(obj, false)).unwrap();
        assert!(later["columnDefinitions"].is_null());
    }
}
