//! URL pieces as client-go writes them: path segment checks (`IsValidPathSegmentName`), Go's
//! `path.Join` cleaning, Go's path and query escaping (`url.URL.EscapedPath`,
//! `url.Values.Encode`) and Go's `time.Duration.String` for the `timeout` parameter.
//!
//! Matching Go byte for byte matters: the API server sees the same URLs from this client as
//! from client-go, and audit logs, URL-template metrics and tests read the same.

use std::fmt::Write as _;
use std::time::Duration;

/// Why a path segment is refused, or `None` (client-go's `IsValidPathSegmentName`: not `.` or
/// `..`, and no `/` or `%`).
pub(crate) fn invalid_segment(segment: &str) -> Option<String> {
    if segment == "." || segment == ".." {
        return Some(format!("may not be '{segment}'"));
    }
    for bad in ['/', '%'] {
        if segment.contains(bad) {
            return Some(format!("may not contain '{bad}'"));
        }
    }
    None
}

/// Go's `path.Join` of `parts`: joined with `/`, empty parts skipped, then cleaned (`.`
/// removed, `..` resolved, slashes collapsed). Rooted when the first non-empty part is.
pub(crate) fn join(parts: &[&str]) -> String {
    let joined = parts
        .iter()
        .filter(|p| !p.is_empty())
        .copied()
        .collect::<Vec<_>>()
        .join("/");
    if joined.is_empty() {
        return String::new();
    }
    clean(&joined)
}

/// Go's `path.Clean`.
fn clean(path: &str) -> String {
    let rooted = path.starts_with('/');
    let mut out: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|last| *last != "..") {
                    out.pop();
                } else if !rooted {
                    out.push("..");
                }
            }
            other => out.push(other),
        }
    }
    let body = out.join("/");
    match (rooted, body.is_empty()) {
        (true, _) => format!("/{body}"),
        (false, true) => ".".to_owned(),
        (false, false) => body,
    }
}

/// Appends `path` escaped as Go's `url.URL.EscapedPath` does (`encodePath` mode).
pub(crate) fn push_escaped_path(out: &mut String, path: &str) {
    for &b in path.as_bytes() {
        let keep = b.is_ascii_alphanumeric()
            || matches!(
                b,
                b'-' | b'_'
                    | b'.'
                    | b'~'
                    | b'$'
                    | b'&'
                    | b'+'
                    | b','
                    | b'/'
                    | b':'
                    | b';'
                    | b'='
                    | b'@'
            );
        if keep {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// Appends `s` escaped as Go's `url.QueryEscape` does: space as `+`, all but unreserved
/// characters percent-encoded.
fn push_query_escaped(out: &mut String, s: &str) {
    for &b in s.as_bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else if b == b' ' {
            out.push('+');
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
}

/// Go's `url.Values.Encode`: keys sorted, each key's values in the order they were added.
pub(crate) fn encode_query(params: &[(String, String)]) -> String {
    let mut order: Vec<usize> = (0..params.len()).collect();
    // A stable sort keeps the values of one key in insertion order.
    order.sort_by(|&a, &b| params[a].0.cmp(&params[b].0));
    let mut out = String::new();
    for i in order {
        let (key, value) = &params[i];
        if !out.is_empty() {
            out.push('&');
        }
        push_query_escaped(&mut out, key);
        out.push('=');
        push_query_escaped(&mut out, value);
    }
    out
}

/// Go's `time.Duration.String`, e.g. `30s`, `5m17s`, `1h0m0s`, `1.5s`, `250ms`.
pub(crate) fn go_duration(d: Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".to_owned();
    }
    if nanos < 1_000 {
        return format!("{nanos}ns");
    }
    if nanos < 1_000_000 {
        return format!("{}µs", fraction(nanos, 1_000));
    }
    if nanos < 1_000_000_000 {
        return format!("{}ms", fraction(nanos, 1_000_000));
    }
    let secs = d.as_secs();
    let (hours, minutes, seconds) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let mut out = String::new();
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if hours > 0 || minutes > 0 {
        let _ = write!(out, "{minutes}m");
    }
    let sub = u128::from(seconds) * 1_000_000_000 + u128::from(d.subsec_nanos());
    let _ = write!(out, "{}s", fraction(sub, 1_000_000_000));
    out
}

/// `value / unit` with its fraction, trailing zeros dropped.
fn fraction(value: u128, unit: u128) -> String {
    let (whole, rest) = (value / unit, value % unit);
    if rest == 0 {
        return whole.to_string();
    }
    let width = unit.ilog10() as usize;
    let digits = format!("{rest:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_are_checked_like_client_go() {
        assert!(invalid_segment("web-1").is_none());
        assert!(invalid_segment("system:controller:x").is_none());
        assert_eq!(invalid_segment("a/b").unwrap(), "may not contain '/'");
        assert_eq!(invalid_segment("a%2Fb").unwrap(), "may not contain '%'");
        assert_eq!(invalid_segment("..").unwrap(), "may not be '..'");
        assert_eq!(invalid_segment(".").unwrap(), "may not be '.'");
        assert!(invalid_segment("..a").is_none());
    }

    #[test]
    fn join_cleans_like_go() {
        assert_eq!(join(&["/", "", "api/v1"]), "/api/v1");
        assert_eq!(join(&["/prefix/", "/api/v1/"]), "/prefix/api/v1");
        assert_eq!(join(&["/a", "..", "b"]), "/b");
        assert_eq!(join(&["/", ".."]), "/");
        assert_eq!(join(&["a", "./b"]), "a/b");
        assert_eq!(join(&[]), "");
    }

    #[test]
    fn escaping_matches_go() {
        let mut path = String::new();
        push_escaped_path(&mut path, "/api/v1/namespaces/a b/pods/system:x?#");
        assert_eq!(path, "/api/v1/namespaces/a%20b/pods/system:x%3F%23");
        let query = encode_query(&[
            ("labelSelector".into(), "app=web,tier!=db".into()),
            ("fieldSelector".into(), "metadata.name=a b".into()),
            ("a".into(), "~*".into()),
            ("labelSelector".into(), "second".into()),
        ]);
        assert_eq!(
            query,
            "a=~%2A&fieldSelector=metadata.name%3Da+b&labelSelector=app%3Dweb%2Ctier%21%3Ddb&labelSelector=second"
        );
    }

    #[test]
    fn durations_print_like_go() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(1), "1ns"),
            (Duration::from_nanos(1_500), "1.5µs"),
            (Duration::from_millis(250), "250ms"),
            (Duration::from_micros(1_500), "1.5ms"),
            (Duration::from_secs(30), "30s"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_secs(317), "5m17s"),
            (Duration::from_secs(300), "5m0s"),
            (Duration::from_secs(3600), "1h0m0s"),
            (
                Duration::from_secs(3600 * 72 + 180) + Duration::from_millis(500),
                "72h3m0.5s",
            ),
        ];
        for (d, text) in cases {
            assert_eq!(go_duration(d), text, "{d:?}");
        }
    }
}
