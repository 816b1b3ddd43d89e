//! Go's `strconv` wording: the errors of `ParseInt`/`ParseUint`, `Quote`, and the shortest
//! float64 text of `FormatFloat(f, 'g', -1, 64)` and of `fmt`'s `%v`, for the messages and
//! answers kube-apiserver 1.36.2 builds.

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

/// `strconv.FormatFloat(f, 'g', -1, 64)`: the shortest text of `f`, in exponent form below
/// 1e-4 and from 1e6 (as kubectl's JSONPath printer and go-yaml write floats). NaN and the
/// infinities are Rust's words; callers that can meet them choose their own.
pub fn format_float_g(f: f64) -> String {
    shortest_float(f, 1e6)
}

/// `fmt`'s `%v` of a float64: as [`format_float_g`], but in exponent form only from 1e21.
pub fn format_float_v(f: f64) -> String {
    shortest_float(f, 1e21)
}

/// The shortest text of `f`, in Go's exponent form (`1e+21`, `1.5e-07`) below 1e-4 and from
/// `exponent_from`.
fn shortest_float(f: f64, exponent_from: f64) -> String {
    let abs = f.abs();
    if abs == 0.0 || (1e-4..exponent_from).contains(&abs) || !abs.is_finite() {
        return format!("{f}");
    }
    // Rust's `{:e}` is shortest too: `1e21`, `1.5e-7`; Go writes `1e+21`, `1.5e-07`.
    let text = format!("{f:e}");
    let (mantissa, exp) = text.split_once('e').unwrap_or((&text, "0"));
    let (sign, digits) = exp.strip_prefix('-').map_or(('+', exp), |d| ('-', d));
    format!("{mantissa}e{sign}{digits:0>2}")
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
    fn floats_are_written_as_go_writes_them() {
        assert_eq!(format_float_g(0.5), "0.5");
        assert_eq!(format_float_g(1e21), "1e+21");
        assert_eq!(format_float_g(1234567.5), "1.2345675e+06");
        assert_eq!(format_float_g(123456.5), "123456.5");
        assert_eq!(format_float_g(1.5e-7), "1.5e-07");
        assert_eq!(format_float_v(1234567.5), "1234567.5");
        assert_eq!(format_float_v(1e21), "1e+21");
        assert_eq!(format_float_v(1.5e-7), "1.5e-07");
    }

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
