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
///
/// Every request builds its path through here, and nearly every path is clean as joined
/// (`/api/v1`, `namespaces`, a checked name): such a path is returned as written, in one
/// allocation; only one with an empty, `.` or `..` segment goes through [`clean`].
pub(crate) fn join(parts: &[&str]) -> String {
    let mut joined = String::with_capacity(parts.iter().map(|p| p.len() + 1).sum());
    for part in parts.iter().filter(|p| !p.is_empty()) {
        // No separator where one side has a slash already: cleaning would collapse the two,
        // and `"/"` then `"api"` stays `/api`, clean as joined.
        if !joined.is_empty() && !joined.ends_with('/') && !part.starts_with('/') {
            joined.push('/');
        }
        joined.push_str(part);
    }
    if joined.is_empty() || is_clean(&joined) {
        return joined;
    }
    clean(&joined)
}

/// Whether Go's `path.Clean` would return `path` unchanged: `/`, or segments (after an
/// optional leading `/`) none of which is empty, `.` or `..`. (A relative path starting
/// with `..` is clean too, but rare enough to leave to [`clean`].)
fn is_clean(path: &str) -> bool {
    if path == "/" {
        return true;
    }
    let body = path.strip_prefix('/').unwrap_or(path).as_bytes();
    !body.is_empty()
        && body
            .split(|&b| b == b'/')
            .all(|segment| !matches!(segment, b"" | b"." | b".."))
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

/// Appends Go's `url.Values.Encode` of `params` to `out`: keys sorted, each key's values in
/// the order they were added.
pub(crate) fn push_query(out: &mut String, params: &[(&str, &str)]) {
    let mut order: Vec<usize> = (0..params.len()).collect();
    // A stable sort keeps the values of one key in insertion order.
    order.sort_by(|&a, &b| params[a].0.cmp(params[b].0));
    for (n, i) in order.into_iter().enumerate() {
        let (key, value) = params[i];
        if n > 0 {
            out.push('&');
        }
        push_query_escaped(out, key);
        out.push('=');
        push_query_escaped(out, value);
    }
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

    /// Go's `path.Join` as the definition reads: join every non-empty part, then clean.
    fn join_then_clean(parts: &[&str]) -> String {
        let parts: Vec<&str> = parts.iter().copied().filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            return String::new();
        }
        clean(&parts.join("/"))
    }

    #[test]
    fn join_agrees_with_join_then_clean_on_every_short_combination() {
        let pieces = [
            "", "/", "a", "b/c", ".", "..", "a/", "/b", "a//b", "./c", "../d", "e/..", "/.",
        ];
        let mut checked = 0;
        for x in pieces {
            for y in pieces {
                for z in pieces {
                    for parts in [&[x][..], &[x, y][..], &[x, y, z][..]] {
                        assert_eq!(join(parts), join_then_clean(parts), "{parts:?}");
                        checked += 1;
                    }
                }
            }
        }
        assert_eq!(checked, 3 * pieces.len().pow(3));
    }

    #[test]
    fn escaping_matches_go() {
        let mut path = String::new();
        push_escaped_path(&mut path, "/api/v1/namespaces/a b/pods/system:x?#");
        assert_eq!(path, "/api/v1/namespaces/a%20b/pods/system:x%3F%23");
        let mut query = String::new();
        push_query(
            &mut query,
            &[
                ("labelSelector", "app=web,tier!=db"),
                ("fieldSelector", "metadata.name=a b"),
                ("a", "~*"),
                ("labelSelector", "second"),
            ],
        );
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
