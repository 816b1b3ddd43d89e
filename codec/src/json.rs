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
//! What is built out of such input is bounded lower, at [`MAX_KEPT_DEPTH`] levels: serde_json's
//! `Value` (and any recursive type) is dropped, cloned, compared, printed and serialized by
//! recursion, so a value kept 10,000 levels deep would decode safely and then overflow the
//! stack of whatever thread drops it (measured on a 2 MiB thread stack, a tokio worker's
//! default: a debug build survives 1,000 levels and not 1,500, a release build 3,000 and not
//! 10,000). Past the bound the decode fails (`nested deeper than 512 levels where a value is
//! kept`), so a list or a watch that skips undecodable items leaves that object out and counts
//! it, as it does any other it cannot decode, and the process lives on. Only what is built is
//! counted (see `bounded`): a typed object, or object metadata, whose deep part is a field it
//! does not name skips that part and decodes, however deep it goes up to [`MAX_DEPTH`].
//! Where it differs from client-go: an unstructured informer there keeps an object 10,000
//! levels deep (Go's stacks grow); a dynamic informer here leaves out one deeper than 512.
//!
//! **Messages.** serde's messages quote the value that did not fit (``invalid type: string
//! "hunter2", expected u32``, ``unknown variant `x` ``), and a field of a Secret, a token in a
//! ConfigMap, may be that value. [`redacted_message`] keeps what helps (what kind of value
//! was found, what was expected, which field was missing) and drops the value itself; every
//! decode error of the REST client (`clientgo_rest::DecodeError`) and of the watch decoder
//! ([`WatchError::Decode`](crate::WatchError::Decode)) uses it.

mod bounded;

use serde::de::{DeserializeOwned, IgnoredAny};

/// The deepest nesting decoded: kube-apiserver's (Go `encoding/json`'s `maxNestingDepth`).
pub const MAX_DEPTH: usize = 10_000;

/// The deepest nesting of what a decode builds (a map inside a map ... counts one level each);
/// deeper parts of the input that are skipped may nest up to [`MAX_DEPTH`]. See the module
/// documentation.
pub const MAX_KEPT_DEPTH: usize = 512;

/// Decodes `bytes` as serde_json does, but up to [`MAX_DEPTH`] levels deep instead of 128, of
/// which at most [`MAX_KEPT_DEPTH`] are built. See the module documentation.
pub fn from_slice<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, serde_json::Error> {
    // One UTF-8 check of the whole input (fast in std) lets serde_json read it as a `str`,
    // which skips its check of every string: a typed pod decodes about 13 % faster. Input
    // that is not UTF-8 is decoded as bytes, so its error (and position) is serde_json's.
    let decoded = match std::str::from_utf8(bytes) {
        Ok(text) => serde_json::from_str(text),
        Err(_) => serde_json::from_slice(bytes),
    };
    match decoded {
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
    let bounded = bounded::Bounded {
        de: stacker,
        levels: MAX_KEPT_DEPTH,
        bound: MAX_KEPT_DEPTH,
    };
    let value = T::deserialize(bounded)?;
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
    /// recursion would need, where their deep part is skipped; one level deeper is refused, as
    /// the server refuses it.
    #[test]
    fn objects_nested_up_to_the_servers_depth_decode_without_overflowing_the_stack() {
        #[derive(Deserialize)]
        struct Named {
            name: String,
        }
        let (skipped, named, kept, too_deep) = std::thread::Builder::new()
            .stack_size(1024 * 1024)
            .spawn(|| {
                let deep = nested(MAX_DEPTH);
                let skipped = from_slice::<IgnoredAny>(deep.as_bytes()).is_ok();
                let object = format!(r#"{{"spec":{deep},"name":"x"}}"#);
                let named = from_slice::<Named>(object[..].as_bytes()).map(|n| n.name);
                let kept = from_slice::<serde_json::Value>(deep.as_bytes()).map(|_| ());
                let too_deep = from_slice::<serde_json::Value>(nested(MAX_DEPTH + 1).as_bytes());
                let too_deep = too_deep.map(|_| ());
                (
                    skipped,
                    named.ok(),
                    kept.map_err(|e| redacted_message(&e)),
                    too_deep,
                )
            })
            .unwrap()
            .join()
            .unwrap();
        assert!(skipped, "10,000 levels decode when skipped");
        assert_eq!(
            named.as_deref(),
            Some("x"),
            "a typed object skips its deep field"
        );
        assert_eq!(
            kept.unwrap_err(),
            "nested deeper than 512 levels where a value is kept"
        );
        let error = too_deep.unwrap_err();
        assert_eq!(redacted_message(&error), "nested deeper than 10000 levels");
        assert!(from_slice::<serde_json::Value>(nested(129).as_bytes()).is_ok());
        assert!(serde_json::from_slice::<serde_json::Value>(nested(129).as_bytes()).is_err());
    }

    /// A value as deep as a decode keeps is safe to use on a tokio worker's default stack
    /// (2 MiB): dropped, cloned, compared, printed and serialized, each by recursion. One
    /// level deeper is not built.
    #[test]
    fn a_value_at_the_kept_depth_survives_every_recursive_use_on_a_worker_stack() {
        let outcome = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(|| {
                let array = format!(
                    "{}1{}",
                    "[".repeat(MAX_KEPT_DEPTH),
                    "]".repeat(MAX_KEPT_DEPTH)
                );
                let mut lengths = Vec::new();
                for text in [nested(MAX_KEPT_DEPTH), array] {
                    let value: serde_json::Value = from_slice(text.as_bytes()).unwrap();
                    let copy = value.clone();
                    assert!(copy == value);
                    let printed = format!("{value:?}{value}");
                    let written = serde_json::to_vec(&value).unwrap();
                    lengths.push((printed.len() > written.len(), written.len() == text.len()));
                    drop((value, copy));
                }
                let refused = [
                    nested(MAX_KEPT_DEPTH + 1),
                    format!(
                        "{}1{}",
                        "[".repeat(MAX_KEPT_DEPTH + 1),
                        "]".repeat(MAX_KEPT_DEPTH + 1)
                    ),
                ]
                .map(|text| from_slice::<serde_json::Value>(text.as_bytes()).is_err());
                (lengths, refused)
            })
            .unwrap()
            .join()
            .unwrap();
        assert_eq!(outcome.0, [(true, true), (true, true)]);
        assert_eq!(outcome.1, [true, true]);
    }

    /// The bound counts what is built whatever its type: enums, options, newtypes and
    /// sequences inside a typed object.
    #[test]
    fn the_kept_depth_counts_levels_inside_typed_objects() {
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Outer {
            inner: Option<Vec<Wrapper>>,
        }
        #[derive(Debug, Deserialize)]
        #[allow(dead_code)]
        struct Wrapper(serde_json::Value);
        let within = format!(r#"{{"inner":[{}]}}"#, nested(MAX_KEPT_DEPTH - 2));
        let beyond = format!(r#"{{"inner":[{}]}}"#, nested(MAX_KEPT_DEPTH - 1));
        // Padded past 128 levels elsewhere so that both take the deep path.
        let pad = format!(r#","skip":{}}}"#, nested(200));
        let within = format!("{}{pad}", &within[..within.len() - 1]);
        let beyond = format!("{}{pad}", &beyond[..beyond.len() - 1]);
        assert!(from_slice::<Outer>(within.as_bytes()).is_ok());
        let error = from_slice::<Outer>(beyond.as_bytes()).unwrap_err();
        assert!(redacted_message(&error).contains("where a value is kept"));
    }

    #[test]
    fn input_that_is_not_utf8_is_a_syntax_error_at_its_position() {
        #[derive(Debug, Deserialize)]
        struct Named {
            name: String,
        }
        let mut bytes = br#"{"name":"ab"}"#.to_vec();
        bytes[10] = 0xff;
        let ours = from_slice::<Named>(&bytes).unwrap_err();
        let theirs = serde_json::from_slice::<Named>(&bytes).unwrap_err();
        assert!(ours.is_syntax());
        assert_eq!(ours.to_string(), theirs.to_string());
        assert_eq!((ours.line(), ours.column()), (1, 11));
        let named = from_slice::<Named>("{\"name\":\"\u{e9}t\u{e9}\"}".as_bytes()).unwrap();
        assert_eq!(named.name, "\u{e9}t\u{e9}");
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
