//! Decoding JSON from the API server: objects nested as deep as the server accepts, and
//! error messages that never quote what was decoded.
//!
//! **Depth.** serde_json refuses anything nested deeper than 128 levels (its recursion limit,
//! there to keep its recursive descent off the end of the stack). kube-apiserver accepts
//! 10,000 ([`MAX_DEPTH`]): it decodes with `sigs.k8s.io/json`, whose scanner is Go's
//! `encoding/json` one, with its `maxNestingDepth` of 10,000; a custom resource with
//! `x-kubernetes-preserve-unknown-fields` can hold anything up to that. [`from_slice`] decodes
//! as serde_json does (same speed) and, only when that stops at the recursion limit, checks
//! that the value nests at most [`MAX_DEPTH`] levels and decodes it again with the limit off
//! and the stack grown on the heap as the descent needs it (`serde_stacker`, which goes on
//! in a new 2 MiB stack segment whenever less than 128 KiB is left), so no depth up to the
//! limit can overflow the thread's stack, however small. Deeper is an error, as it is on the
//! server.
//!
//! What the caller does with such a value is its own business, and recursive too:
//! serde_json's `Value` is dropped, cloned and serialized by recursion. Measured on a 2 MiB
//! thread stack (a tokio worker's default), a `Value` 1,000 levels deep survives all three in
//! a debug build and 1,500 does not; a release build survives 3,000 and not 10,000. Programs
//! that keep such objects (a cache of [`DynamicObject`](clientgo_apimachinery::DynamicObject)s
//! of a deep custom resource) should give their runtime larger worker stacks
//! (`tokio::runtime::Builder::thread_stack_size`) or decode into typed objects, which keep
//! only the fields they name (the rest is skipped without recursion).
//!
//! **Messages.** serde's messages quote the value that did not fit (``invalid type: string
//! "hunter2", expected u32``, ``unknown variant `x` ``), and a field of a Secret, a token in a
//! ConfigMap, may be that value. [`redacted_message`] keeps what helps (what kind of value
//! was found, what was expected, which field was missing) and drops the value itself; every
//! [`DecodeError`](crate::DecodeError) and the watch crate's decode errors use it.

use serde::de::{DeserializeOwned, IgnoredAny};

/// The deepest nesting decoded: kube-apiserver's (Go `encoding/json`'s `maxNestingDepth`).
pub const MAX_DEPTH: usize = 10_000;

/// Decodes `bytes` as serde_json does, but up to [`MAX_DEPTH`] levels deep instead of 128.
/// See the module documentation.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    match serde_json::from_slice(bytes) {
        Err(error) if is_recursion_limit(&error) => from_slice_deep(bytes),
        other => other,
    }
}

/// Whether `bytes` are one syntactically valid JSON value (of any depth up to
/// [`MAX_DEPTH`]), whatever type it was meant to be.
pub fn is_valid(bytes: &[u8]) -> bool {
    from_slice::<IgnoredAny>(bytes).is_ok()
}

fn is_recursion_limit(error: &serde_json::Error) -> bool {
    error.is_syntax() && error.to_string().starts_with("recursion limit exceeded")
}

fn from_slice_deep<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    if depth(bytes) > MAX_DEPTH {
        return Err(serde::de::Error::custom(format_args!(
            "nested deeper than {MAX_DEPTH} levels"
        )));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    deserializer.disable_recursion_limit();
    let stacker = serde_stacker::Deserializer {
        de: &mut deserializer,
        red_zone: 128 * 1024,
        stack_size: 2 * 1024 * 1024,
    };
    let value = T::deserialize(stacker)?;
    deserializer.end()?;
    Ok(value)
}

/// The deepest nesting of brackets in `bytes`, outside strings (stops counting past
/// [`MAX_DEPTH`]).
fn depth(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let (mut in_string, mut escaped) = (false, false);
    for &byte in bytes {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'{' | b'[' => {
                depth += 1;
                deepest = deepest.max(depth);
                if deepest > MAX_DEPTH {
                    break;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

/// serde_json's message for `error` without its position and without any value taken from
/// the input. See the module documentation.
pub fn redacted_message(error: &serde_json::Error) -> String {
    let text = error.to_string();
    let suffix = format!(" at line {} column {}", error.line(), error.column());
    let message = text.strip_suffix(&suffix).unwrap_or(&text);
    if !error.is_data() {
        // Syntax, end-of-input and I/O messages name what was expected, never the input.
        return message.to_owned();
    }
    for prefix in ["invalid type: ", "invalid value: "] {
        if let Some(rest) = message.strip_prefix(prefix) {
            // `<kind> <the value>, expected <what>`: the kind is the words before the value.
            let kind = rest.split(['`', '"', ',']).next().unwrap_or("").trim_end();
            let expected = rest.rfind(", expected ").map_or("", |at| &rest[at..]);
            return format!("{prefix}{kind}{expected}");
        }
    }
    for prefix in ["unknown variant `", "unknown field `"] {
        if let Some(rest) = message.strip_prefix(prefix) {
            let what = &prefix[..prefix.len() - 2];
            let after = rest
                .rfind("`, expected ")
                .or_else(|| rest.rfind("`, there are no "))
                .map_or(String::new(), |at| rest[at + 1..].to_owned());
            return format!("{what}{after}");
        }
    }
    // The type's own names: `missing field `spec``, `duplicate field `x``, lengths.
    if ["missing field `", "duplicate field `", "invalid length "]
        .iter()
        .any(|prefix| message.starts_with(prefix))
        || message.starts_with("nested deeper than ")
    {
        return message.to_owned();
    }
    "the value does not match the expected type (details withheld: they may quote the value)"
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    fn nested(depth: usize) -> String {
        format!("{}1{}", r#"{"a":"#.repeat(depth), "}".repeat(depth))
    }

    /// Objects as deep as kube-apiserver accepts decode, on a stack far smaller than their
    /// recursion would need; one level deeper is refused, as the server refuses it.
    #[test]
    fn objects_nested_up_to_the_servers_depth_decode_without_overflowing_the_stack() {
        let result = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(|| {
                let deep: Result<IgnoredAny, _> = from_slice(nested(MAX_DEPTH).as_bytes());
                let value: Result<serde_json::Value, _> = from_slice(nested(MAX_DEPTH).as_bytes());
                let ok = deep.is_ok() && value.is_ok();
                // Too deep to drop here: the caller's concern (see the module docs).
                std::mem::forget(value);
                let too_deep = from_slice::<serde_json::Value>(nested(MAX_DEPTH + 1).as_bytes());
                (ok, too_deep.map_err(|e| redacted_message(&e)))
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(result.0, "10,000 levels decode");
        let error = result.1.unwrap_err();
        assert_eq!(error, "nested deeper than 10000 levels");
        assert!(from_slice::<serde_json::Value>(nested(129).as_bytes()).is_ok());
        assert!(serde_json::from_slice::<serde_json::Value>(nested(129).as_bytes()).is_err());
    }

    #[test]
    fn the_depth_counts_brackets_outside_strings_only() {
        assert_eq!(depth(br#"{"a":[1,{"b":"[[[{{"}]}"#), 3);
        assert_eq!(depth(br#"["\"[[", "\\", []]"#), 2);
        assert_eq!(depth(b"7"), 0);
    }

    #[test]
    fn decode_errors_do_not_quote_field_values() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        #[serde(deny_unknown_fields)]
        struct Secretive {
            count: u32,
            mode: Mode,
            #[serde(default)]
            flag: bool,
        }
        #[derive(Debug, Deserialize)]
        enum Mode {
            On,
        }
        let cases = [
            (
                r#"{"count":"hunter2","mode":"On"}"#,
                "invalid type: string, expected u32",
            ),
            (
                r#"{"count":-4242,"mode":"On"}"#,
                "invalid value: integer, expected u32",
            ),
            (
                r#"{"count":1,"mode":"hunter2"}"#,
                "unknown variant, expected `On`",
            ),
            (
                r#"{"count":1,"mode":"On","hunter2":1}"#,
                "unknown field, expected one of `count`, `mode`, `flag`",
            ),
            (r#"{"count":1,"flag":true}"#, "missing field `mode`"),
            (
                r#"{"count":"a \", expected hunter2","mode":"On"}"#,
                "invalid type: string, expected u32",
            ),
        ];
        for (json, expected) in cases {
            let error = serde_json::from_str::<Secretive>(json).unwrap_err();
            assert!(error.to_string().contains("hunter2") || !json.contains("hunter2"));
            let message = redacted_message(&error);
            assert_eq!(message, expected, "{json}");
            assert!(!message.contains("hunter2") && !message.contains("4242"));
        }
        let syntax = serde_json::from_str::<Secretive>(r#"{"count":1,,}"#).unwrap_err();
        assert_eq!(redacted_message(&syntax), "key must be a string");
        let custom: serde_json::Error = serde::de::Error::custom("bad quantity \"hunter2\"");
        assert!(!redacted_message(&custom).contains("hunter2"));
    }
}
