//! Continue tokens as kube-apiserver 1.36.2 encodes and decodes them
//! (`apiserver/pkg/storage/continue.go`): base64url without padding of the JSON
//! `{"v":"meta.k8s.io/v1","rv":N,"start":"<key>"}`.
//!
//! Decoding answers the real server's 400 `invalid continue token: continue key is not
//! valid: ...` with Go's own wording of what failed: `encoding/base64`'s `illegal base64
//! data at input byte N`, `encoding/json`'s syntax and type errors, then the checks of
//! `DecodeContinue` (version, zero resourceVersion, empty start key, a start key that
//! `path.Clean` would change).

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Serialize;
use serde_json::Value;

use crate::errors::{self, ApiResult};
use crate::go_text;

#[derive(Debug, Serialize)]
struct ContinueToken<'a> {
    v: &'a str,
    rv: i64,
    start: &'a str,
}

/// Encodes a continue token as the real server does.
pub fn encode_continue(rv: i64, start: &str) -> String {
    let token = ContinueToken {
        v: "meta.k8s.io/v1",
        rv,
        start,
    };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

/// Go's `base64.RawURLEncoding.DecodeString` (not strict: newlines skipped, stray trailing
/// bits ignored), its error the offset Go reports.
fn go_raw_url_decode(s: &str) -> Result<Vec<u8>, String> {
    let illegal = |at: usize| format!("illegal base64 data at input byte {at}");
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits, mut pending) = (0u32, 0u32, Vec::new());
    for (i, c) in s.bytes().enumerate() {
        let d = match c {
            b'\r' | b'\n' => continue,
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return Err(illegal(i)),
        };
        pending.push(i);
        acc = (acc << 6) | u32::from(d);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
        if pending.len() == 4 {
            pending.clear();
        }
    }
    if pending.len() == 1 {
        return Err(illegal(pending[0]));
    }
    Ok(out)
}

/// Go's `path.Clean` of an absolute path.
fn clean_absolute(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            s => parts.push(s),
        }
    }
    format!("/{}", parts.join("/"))
}

/// What `json.Unmarshal` into `continueToken` answers for `data`, Go's message on failure.
fn unmarshal(data: &[u8]) -> Result<(String, i64, String), String> {
    if let Some(e) = go_text::json_syntax_error(data) {
        return Err(e);
    }
    let value: Value = serde_json::from_slice(data).map_err(|e| e.to_string())?;
    let Value::Object(fields) = value else {
        let kind = go_text::json_type_name(&value).unwrap_or("null");
        if kind == "null" {
            return Ok((String::new(), 0, String::new()));
        }
        return Err(format!(
            "json: cannot unmarshal {kind} into Go value of type storage.continueToken"
        ));
    };
    let field_error = |name: &str, v: &Value, ty: &str| {
        let what = match v {
            Value::Number(n) => format!("number {n}"),
            other => go_text::json_type_name(other).unwrap_or("null").to_owned(),
        };
        format!(
            "json: cannot unmarshal {what} into Go struct field continueToken.{name} of type {ty}"
        )
    };
    let (mut v, mut rv, mut start) = (String::new(), 0i64, String::new());
    let mut first_error = None;
    for (name, value) in &fields {
        match (name.as_str(), value) {
            (_, Value::Null) => {}
            ("v", Value::String(s)) => v.clone_from(s),
            ("start", Value::String(s)) => start.clone_from(s),
            ("rv", Value::Number(n)) if n.as_i64().is_some() => rv = n.as_i64().unwrap_or(0),
            ("v" | "start", other) => {
                first_error.get_or_insert_with(|| field_error(name, other, "string"));
            }
            ("rv", Value::Number(n)) => {
                first_error
                    .get_or_insert_with(|| field_error(name, &Value::Number(n.clone()), "int64"));
            }
            ("rv", other) => {
                first_error.get_or_insert_with(|| field_error(name, other, "int64"));
            }
            _ => {}
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok((v, rv, start)),
    }
}

/// Decodes a continue token into (revision, start key relative to the list's prefix);
/// 400 with the real server's message when it is not valid.
pub fn decode_continue(token: &str) -> ApiResult<(i64, String)> {
    let bad = |why: &str| {
        errors::bad_request(format!(
            "invalid continue token: continue key is not valid{why}"
        ))
    };
    let bytes = go_raw_url_decode(token).map_err(|e| bad(&format!(": {e}")))?;
    let (v, rv, start) = unmarshal(&bytes).map_err(|e| bad(&format!(": {e}")))?;
    if v != "meta.k8s.io/v1" {
        return Err(bad(&format!(
            ": server does not recognize this encoded version {v}"
        )));
    }
    if rv == 0 {
        return Err(bad(
            ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    if start.is_empty() {
        return Err(bad(": encoded start key empty (version meta.k8s.io/v1)"));
    }
    let key = if start.starts_with('/') {
        start.clone()
    } else {
        format!("/{start}")
    };
    if clean_absolute(&key) != key {
        return Err(bad(&format!(": {start}")));
    }
    Ok((rv, key[1..].to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(token: &str) -> String {
        decode_continue(token).unwrap_err().status.message
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = encode_continue(12, "ns/b\u{0}");
        assert_eq!(decode_continue(&t).unwrap(), (12, "ns/b\u{0}".to_owned()));
        let prefix = "invalid continue token: continue key is not valid: ";
        assert_eq!(
            message("!!!"),
            format!("{prefix}illegal base64 data at input byte 0")
        );
        assert_eq!(
            message("bm90anNvbg=="),
            format!("{prefix}illegal base64 data at input byte 10")
        );
        assert_eq!(
            message("abcde"),
            format!("{prefix}illegal base64 data at input byte 4")
        );
        assert_eq!(
            message("bm90anNvbg"),
            format!("{prefix}invalid character 'o' in literal null (expecting 'u')")
        );
        let enc = |s: &str| URL_SAFE_NO_PAD.encode(s.as_bytes());
        assert_eq!(
            message(&enc(r#"{"v":"x","rv":5,"start":"a"}"#)),
            format!("{prefix}server does not recognize this encoded version x")
        );
        assert_eq!(
            message(&enc(r#"{"v":"meta.k8s.io/v1","rv":"5","start":"a"}"#)),
            format!(
                "{prefix}json: cannot unmarshal string into Go struct field continueToken.rv of type int64"
            )
        );
        assert_eq!(
            message(&enc(r#"{"v":"meta.k8s.io/v1","rv":3,"start":"../x"}"#)),
            format!("{prefix}../x")
        );
        assert_eq!(
            message(&enc(r#"{"v":"meta.k8s.io/v1","rv":3}"#)),
            format!("{prefix}encoded start key empty (version meta.k8s.io/v1)")
        );
    }
}
