//! Object validation shared by every resource: body decoding, type checks, names, metadata.
//!
//! Mirrors the parts of kube-apiserver every request goes through before storage:
//! the JSON decoder's type checks (`apiVersion`/`kind` against the URL),
//! `apimachinery/pkg/api/validation.ValidateObjectMeta` (DNS-1123 names, `generateName`,
//! label syntax) and `pkg/util/validation` messages, word for word, since kubectl prints
//! them. Metadata is decoded through clientgo-apimachinery's `ObjectMeta` so that a
//! mistyped field (`"labels": 3`) is a 400, as in the real server.
//!
//! Differences: per-type spec validation is not done (a Pod without containers is accepted);
//! only the CRD fields the server itself needs are checked (see [`crate::crd`]); custom
//! resources are checked against their schema ([`crate::schema`]).

use clientgo_apimachinery::ObjectMeta;
use serde_json::{Map, Value};

use crate::errors::{self, ApiResult, FieldError};
use crate::go_text;
use crate::resources::ResourceInfo;

const SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

fn is_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// Whether `s` is a DNS-1123 label (at most 63 characters).
pub fn is_dns1123_label(s: &str) -> bool {
    s.len() <= 63 && is_label(s)
}

/// Whether `s` is a DNS-1123 subdomain (at most 253 characters).
pub fn is_dns1123_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(is_label)
}

/// The field errors of a name (`metadata.name` or `metadata.namespace`).
pub fn name_errors(field: &str, name: &str, as_label: bool) -> Vec<FieldError> {
    let mut out = Vec::new();
    if as_label {
        if name.len() > 63 {
            out.push(FieldError::invalid(
                field,
                name,
                "must be no more than 63 characters",
            ));
        }
        if !is_label(name) {
            out.push(FieldError::invalid(field, name, LABEL_MSG));
        }
    } else {
        if name.len() > 253 {
            out.push(FieldError::invalid(
                field,
                name,
                "must be no more than 253 characters",
            ));
        }
        if !name.split('.').all(is_label) {
            out.push(FieldError::invalid(field, name, SUBDOMAIN_MSG));
        }
    }
    out
}

/// Go's type of the struct kube-apiserver first decodes a body into, to find its kind
/// (`runtime.SimpleMetaFactory.Interpret`), as `encoding/json` names it in its errors.
const FIND_KIND: &str = r#"struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" }"#;

/// The format of a create, update or delete body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyFormat {
    /// `application/json`, or no `Content-Type`.
    Json,
    /// `application/yaml`.
    Yaml,
}

/// The format of a body of `content_type`, as kube-apiserver's `NegotiateInputSerializer`
/// picks it (media type compared without case, parameters ignored); any other type is 415
/// with the real message, which also names protobuf. A protobuf body is 415 too (the
/// simulator decodes none), with a message naming only what it accepts.
pub fn body_format(content_type: &str) -> ApiResult<BodyFormat> {
    let media = content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    match media.as_str() {
        "" | "application/json" => Ok(BodyFormat::Json),
        "application/yaml" => Ok(BodyFormat::Yaml),
        "application/vnd.kubernetes.protobuf" => Err(errors::unsupported_media_type(&[
            "application/json",
            "application/yaml",
        ])),
        _ => Err(errors::unsupported_media_type(&[
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ])),
    }
}

/// Decodes a body that must be one object (`null` counts as an empty one); the error is
/// worded as kube-apiserver's decoder words it: `couldn't get version/kind; json parse
/// error: ` and `encoding/json`'s syntax error or the type error of the struct it reads the
/// kind with; `yaml: ...` for YAML that does not parse.
fn decode_map(format: BodyFormat, body: &[u8]) -> Result<Map<String, Value>, String> {
    let value = match format {
        BodyFormat::Json => serde_json::from_slice::<Value>(body).map_err(|e| {
            let why = go_text::json_syntax_error(body).unwrap_or_else(|| e.to_string());
            format!("couldn't get version/kind; json parse error: {why}")
        })?,
        // YAML is converted to JSON first: an empty document is `null`.
        BodyFormat::Yaml if body.iter().all(u8::is_ascii_whitespace) => Value::Null,
        BodyFormat::Yaml => {
            serde_norway::from_slice::<Value>(body).map_err(|e| format!("yaml: {e}"))?
        }
    };
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        other => Err(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type {FIND_KIND}",
            go_text::json_type_name(&other).unwrap_or("value")
        )),
    }
}

/// Parses a create or update body of a `kind` object as one object (`null` as an empty
/// one), else 400 with the message kube-apiserver's decoder gives (`transformDecodeError`):
/// `the object provided is unrecognized (must be of type <kind>): couldn't get
/// version/kind; json parse error: <Go's error> (<the body's first 30 bytes>)`.
pub fn decode_object(format: BodyFormat, body: &[u8], kind: &str) -> ApiResult<Map<String, Value>> {
    decode_map(format, body).map_err(|why| {
        errors::bad_request(format!(
            "the object provided is unrecognized (must be of type {kind}): {why} ({})",
            go_text::summarize(body, 30)
        ))
    })
}

/// Parses a DELETE body (DeleteOptions) as one object, else 400 worded as kube-apiserver
/// words it: `couldn't get version/kind; json parse error: <Go's error>`.
pub fn decode_options(format: BodyFormat, body: &[u8]) -> ApiResult<Map<String, Value>> {
    decode_map(format, body).map_err(errors::bad_request)
}

/// Checks (and fills in when absent) `apiVersion` and `kind`, decodes `metadata` through
/// `ObjectMeta` to reject mistyped fields, then applies the built-in defaults
/// ([`crate::defaults::on_decode`]), as kube-apiserver's decoder defaults every body it
/// decodes for a write.
pub fn check_type_and_meta(info: &ResourceInfo, obj: &mut Map<String, Value>) -> ApiResult<()> {
    let expected_version = info.api_version();
    match obj.get("apiVersion") {
        None | Some(Value::Null) => {
            obj.insert("apiVersion".into(), Value::String(expected_version));
        }
        Some(Value::String(v)) if *v == expected_version => {}
        Some(other) => {
            return Err(errors::bad_request(format!(
                "the API version in the data ({}) does not match the expected API version ({expected_version})",
                other.as_str().unwrap_or("")
            )));
        }
    }
    match obj.get("kind") {
        None | Some(Value::Null) => {
            obj.insert("kind".into(), Value::String(info.kind.clone()));
        }
        Some(Value::String(k)) if *k == info.kind => {}
        Some(other) => return Err(kind_mismatch(info, other.as_str().unwrap_or(""), obj)),
    }
    let meta = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    if !meta.is_object() {
        return Err(errors::bad_request("metadata must be a JSON object"));
    }
    let parsed: Result<ObjectMeta, _> = serde_json::from_value(meta.clone());
    if let Err(e) = parsed {
        return Err(errors::bad_request(format!("error decoding metadata: {e}")));
    }
    // Every ObjectMeta field is omitted when empty (`creationTimestamp` too: kube-apiserver
    // 1.36.2 writes a zero one as nothing), so a `null` decodes to the zero value and is
    // written as nothing, for custom resources as well.
    drop_nulls(meta);
    if let Some(labels) = meta.get("labels").and_then(Value::as_object) {
        let mut errs = Vec::new();
        for (k, v) in labels {
            let v = v.as_str().unwrap_or("");
            if clientgo_apimachinery::labels::Requirement::equals(k.clone(), v.to_owned()).is_err()
            {
                errs.push(FieldError::invalid(
                    "metadata.labels",
                    &format!("{k}={v}"),
                    "invalid label key or value",
                ));
            }
        }
        if !errs.is_empty() {
            let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
            return Err(errors::invalid(&info.group, &info.kind, name, &errs));
        }
    }
    if info.strategic_merge {
        // A built-in's top-level fields decode into Go struct fields: a `null` is their zero
        // value, which the encoder omits (`omitempty`) or writes again as the defaults do
        // (`status: {}`, a core Event's `eventTime: null`, ...).
        obj.retain(|_, v| !v.is_null());
    }
    crate::defaults::on_decode(info, obj);
    crate::schema::on_decode(info, obj);
    Ok(())
}

/// Removes the `null` members of an object (an ObjectMeta's, whose fields are all omitted
/// when empty).
pub(crate) fn drop_nulls(v: &mut Value) {
    if let Some(map) = v.as_object_mut() {
        map.retain(|_, member| !member.is_null());
    }
}

/// The answer to a body of another kind. For a custom resource, 422 `kind: Invalid value:
/// "X": must be <Kind>`; for a built-in, the decoder's 400, worded as kube-apiserver 1.36
/// words it (a kind of the same group version cannot be converted, any other kind is not
/// registered; the sim knows only the kinds it serves).
fn kind_mismatch(info: &ResourceInfo, kind: &str, obj: &Map<String, Value>) -> errors::ApiError {
    if !info.strategic_merge {
        let name = obj
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let why = format!("must be {}", info.kind);
        return errors::invalid(
            &info.group,
            kind,
            name,
            &[FieldError::invalid("kind", kind, &why)],
        );
    }
    let known = crate::resources::builtins()
        .iter()
        .any(|r| r.group == info.group && r.version == info.version && r.kind == kind);
    let reason = if known {
        let internal = match info.group.as_str() {
            "" | "events.k8s.io" => "core",
            group => group.split('.').next().unwrap_or(group),
        };
        format!(
            "converting ({}.{kind}) to ({internal}.{}): unknown conversion",
            info.version, info.kind
        )
    } else {
        format!(
            "no kind {kind:?} is registered for version {:?} in scheme \"pkg/api/legacyscheme/scheme.go:30\"",
            info.api_version()
        )
    };
    errors::bad_request(format!(
        "{kind} in version {:?} cannot be handled as a {}: {reason}",
        info.version, info.kind
    ))
}

/// The `metadata` object of a checked object.
pub fn meta_mut(obj: &mut Map<String, Value>) -> &mut Map<String, Value> {
    let entry = obj
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    match entry {
        Value::Object(m) => m,
        _ => unreachable!("metadata was just made an object"),
    }
}

/// A string field of `metadata`, or `""`.
pub fn meta_str<'a>(obj: &'a Map<String, Value>, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(is_dns1123_subdomain("a.b-c.d"));
        assert!(!is_dns1123_subdomain("Bad_Name"));
        assert!(!is_dns1123_subdomain("-a"));
        assert!(!is_dns1123_subdomain(""));
        assert!(is_dns1123_label("kube-system"));
        assert!(!is_dns1123_label("a.b"));
        let e = name_errors("metadata.name", "Bad", false);
        assert_eq!(e.len(), 1);
        assert!(
            e[0].detail
                .starts_with("Invalid value: \"Bad\": a lowercase RFC 1123 subdomain")
        );
    }

    #[test]
    fn type_checks() {
        let info = crate::resources::builtins().remove(1); // configmaps
        let mut o = decode_object(
            BodyFormat::Json,
            br#"{"metadata":{"name":"x"}}"#,
            "ConfigMap",
        )
        .unwrap();
        check_type_and_meta(&info, &mut o).unwrap();
        assert_eq!(o["kind"], "ConfigMap");
        let mut o = decode_object(
            BodyFormat::Json,
            br#"{"apiVersion":"apps/v1","metadata":{}}"#,
            "ConfigMap",
        )
        .unwrap();
        assert_eq!(check_type_and_meta(&info, &mut o).unwrap_err().code(), 400);
        let mut o = decode_object(
            BodyFormat::Json,
            br#"{"metadata":{"labels":3}}"#,
            "ConfigMap",
        )
        .unwrap();
        assert_eq!(check_type_and_meta(&info, &mut o).unwrap_err().code(), 400);
        // The messages kube-apiserver 1.36.2 answered to these bodies.
        let e = decode_object(BodyFormat::Json, b"[1]", "ConfigMap").unwrap_err();
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.status.message,
            r#"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\"apiVersion,omitempty\""; Kind string "json:\"kind,omitempty\"" } (5b315d)"#
        );
        let e = decode_object(BodyFormat::Json, b"{not json", "Widget").unwrap_err();
        assert_eq!(
            e.status.message,
            "the object provided is unrecognized (must be of type Widget): couldn't get version/kind; json parse error: invalid character 'n' looking for beginning of object key string ({not json)"
        );
    }
}
