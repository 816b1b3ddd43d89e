//! Go's `strconv` wording: the errors of `ParseInt`/`ParseUint` and `Quote`, for the
//! messages kube-apiserver 1.36.2 builds from query parameters and resourceVersions it
//! cannot parse.

/// Go's `strconv.ParseInt(s, 10, 64)`, its error as Go words it.
pub fn parse_int(s: &str) -> Result<i64, String> {
    s.parse::<i64>()
        .map_err(|e| strconv_error("ParseInt", s, e.kind()))
}

/// Go's `strconv.ParseUint(s, 10, 64)` (no sign accepted), its error as Go words it.
pub fn parse_uint(s: &str) -> Result<u64, String> {
    if s.starts_with(['+', '-']) {
        return Err(strconv_error(
            "ParseUint",
            s,
            &std::num::IntErrorKind::InvalidDigit,
        ));
    }
    s.parse::<u64>()
        .map_err(|e| strconv_error("ParseUint", s, e.kind()))
}

fn strconv_error(func: &str, s: &str, kind: &std::num::IntErrorKind) -> String {
    use std::num::IntErrorKind::{NegOverflow, PosOverflow};
    let why = match kind {
        PosOverflow | NegOverflow => "value out of range",
        _ => "invalid syntax",
    };
    format!("strconv.{func}: parsing {}: {why}", go_quote(s))
}

/// Go's `strconv.Quote` of ASCII text (control characters escaped, other text as is).
pub fn go_quote(s: &str) -> String {
    let mut out = String::from('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The `resourceVersion: Invalid value: "<s>": strconv.ParseUint: ...` error kube-apiserver
/// 1.36.2 words for a list or watch `resourceVersion` it cannot parse.
pub fn invalid_resource_version(s: &str) -> Option<String> {
    let e = parse_uint(s).err()?;
    Some(format!(
        "resourceVersion: Invalid value: {}: {e}",
        go_quote(s)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_are_worded_as_go_words_them() {
        assert_eq!(parse_int("-3"), Ok(-3));
        assert_eq!(
            parse_int("abc").unwrap_err(),
            r#"strconv.ParseInt: parsing "abc": invalid syntax"#
        );
        assert_eq!(
            parse_int("").unwrap_err(),
            r#"strconv.ParseInt: parsing "": invalid syntax"#
        );
        assert_eq!(
            parse_int("99999999999999999999").unwrap_err(),
            r#"strconv.ParseInt: parsing "99999999999999999999": value out of range"#
        );
        assert_eq!(parse_uint("12"), Ok(12));
        assert_eq!(
            parse_uint("+1").unwrap_err(),
            r#"strconv.ParseUint: parsing "+1": invalid syntax"#
        );
        assert_eq!(
            parse_uint("-1").unwrap_err(),
            r#"strconv.ParseUint: parsing "-1": invalid syntax"#
        );
        assert_eq!(
            invalid_resource_version("abc").unwrap(),
            r#"resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax"#
        );
        assert_eq!(invalid_resource_version("7"), None);
        assert_eq!(go_quote("a\"b\n"), r#""a\"b\n""#);
    }
}
