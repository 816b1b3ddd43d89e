//! `Warning` response headers: parsing them and handing each to a [`WarningHandler`].
//!
//! The API server sends deprecation and validation warnings as RFC 7234 `Warning` headers,
//! `299 - "text"`, several per response, possibly several in one header separated by commas,
//! the text a quoted string with backslash escapes. This ports apimachinery's
//! `ParseWarningHeaders` (`pkg/util/net/http.go`) and client-go's `rest/warnings.go`: every
//! response's warnings go to the client's handler; malformed headers are skipped (and logged at
//! debug level), as client-go logs and skips them.
//!
//! The default handler, [`LogWarningsOnce`], logs each distinct text once at `warn` level, for
//! code 299 and non-empty text, like client-go's `WarningLogger` combined with the
//! deduplication of its `WarningWriter`. [`NoWarnings`] drops them.

use std::collections::HashSet;
use std::sync::Mutex;

use http::HeaderMap;

/// One warning (apimachinery's `net.WarningHeader`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Warning {
    /// The warn-code, 100 to 299 (the API server uses 299).
    pub code: u16,
    /// The warn-agent (the API server uses `-`).
    pub agent: String,
    /// The warning text, unescaped.
    pub text: String,
}

/// Receives the warnings of every response (client-go's `WarningHandler`).
pub trait WarningHandler: Send + Sync + 'static {
    /// Called once per warning, in header order.
    fn handle_warning(&self, warning: &Warning);
}

/// Drops warnings (client-go's `NoWarnings`).
#[derive(Clone, Copy, Debug, Default)]
pub struct NoWarnings;

impl WarningHandler for NoWarnings {
    fn handle_warning(&self, _: &Warning) {}
}

/// The default handler: logs each distinct warning text once with `tracing::warn!`, for code
/// 299 and non-empty text.
///
/// It remembers up to [`LogWarningsOnce::MAX_REMEMBERED`] texts; past that it forgets them all
/// and starts again, so a process that sees endless distinct warnings does not grow without
/// bound.
#[derive(Debug, Default)]
pub struct LogWarningsOnce {
    seen: Mutex<HashSet<String>>,
}

impl LogWarningsOnce {
    /// The most texts remembered.
    pub const MAX_REMEMBERED: usize = 4096;

    /// A handler that has logged nothing yet.
    pub fn new() -> Self {
        Self::default()
    }
}

impl WarningHandler for LogWarningsOnce {
    fn handle_warning(&self, warning: &Warning) {
        if warning.code != 299 || warning.text.is_empty() {
            return;
        }
        let mut seen = self.seen.lock().unwrap_or_else(|p| p.into_inner());
        if seen.contains(&warning.text) {
            return;
        }
        if seen.len() >= Self::MAX_REMEMBERED {
            seen.clear();
        }
        seen.insert(warning.text.clone());
        drop(seen);
        tracing::warn!(warning = %warning.text, "warning from the API server");
    }
}

/// Parses every `Warning` header of `headers`, skipping (and logging) malformed ones.
pub fn parse_warnings(headers: &HeaderMap) -> Vec<Warning> {
    let mut warnings = Vec::new();
    for value in headers.get_all(http::header::WARNING) {
        let Ok(mut header) = value.to_str() else {
            tracing::debug!("ignoring a Warning header that is not visible ASCII");
            continue;
        };
        while !header.is_empty() {
            match parse_warning(header) {
                Ok((warning, rest)) => {
                    warnings.push(warning);
                    header = rest;
                }
                Err(reason) => {
                    tracing::debug!(reason, "ignoring a malformed Warning header");
                    break;
                }
            }
        }
    }
    warnings
}

/// Parses the first warning of `header` (`code SP agent SP "text" [SP "date"]`), returning it
/// and what follows the comma after it.
pub fn parse_warning(header: &str) -> Result<(Warning, &str), &'static str> {
    let header = header.trim();
    let mut parts = header.splitn(3, ' ');
    let (Some(code), Some(agent), Some(rest)) = (parts.next(), parts.next(), parts.next()) else {
        return Err("fewer than 3 segments");
    };
    let code_bytes = code.as_bytes();
    if code_bytes.len() != 3
        || !matches!(code_bytes[0], b'1' | b'2')
        || !code_bytes.iter().all(u8::is_ascii_digit)
    {
        return Err("code segment is not 3 digits between 100-299");
    }
    let code: u16 = code.parse().map_err(|_| "code segment is not a number")?;
    if agent.is_empty() {
        return Err("empty agent segment");
    }
    if agent.chars().any(char::is_control) {
        return Err("invalid agent");
    }
    if rest.is_empty() {
        return Err("empty text segment");
    }
    let (text, after) = parse_quoted(rest)?;
    if text.chars().any(char::is_control) {
        return Err("text contains control characters");
    }
    let mut remainder = after;
    if let Some(date) = after.strip_prefix('"') {
        let end = date.find('"').ok_or("unterminated date segment")?;
        remainder = date[end + 1..].trim();
    }
    if !remainder.is_empty() {
        match remainder.strip_prefix(',') {
            Some(next) => remainder = next.trim(),
            None => return Err("unexpected token after warn-date"),
        }
    }
    Ok((
        Warning {
            code,
            agent: agent.to_owned(),
            text,
        },
        remainder,
    ))
}

/// Parses a quoted string, unescaping `\x` to `x`; returns it and the trimmed rest.
fn parse_quoted(s: &str) -> Result<(String, &str), &'static str> {
    let Some(body) = s.strip_prefix('"') else {
        return Err("missing initial quote");
    };
    let mut text = String::new();
    let mut escaping = false;
    for (i, c) in body.char_indices() {
        match c {
            '"' if !escaping => return Ok((text, body[i + 1..].trim())),
            '\\' if !escaping => escaping = true,
            _ => {
                text.push(c);
                escaping = false;
            }
        }
    }
    Err("missing closing quote")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(values: &[&str]) -> Vec<Warning> {
        let mut headers = HeaderMap::new();
        for v in values {
            headers.append(http::header::WARNING, v.parse().unwrap());
        }
        parse_warnings(&headers)
    }

    #[test]
    fn several_warnings_per_header_and_per_response() {
        let warnings = parse_all(&[
            r#"299 - "v1beta1 is deprecated", 299 - "second""#,
            r#"299 - "with \"quotes\" and a \\ backslash" "Wed, 21 Oct 2015 07:28:00 GMT""#,
        ]);
        let texts: Vec<_> = warnings.iter().map(|w| w.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "v1beta1 is deprecated",
                "second",
                r#"with "quotes" and a \ backslash"#
            ]
        );
        assert!(warnings.iter().all(|w| w.code == 299 && w.agent == "-"));
    }

    #[test]
    fn malformed_headers_are_skipped() {
        for bad in [
            "299 -",
            r#"300 - "too high""#,
            r#"29 - "short""#,
            r#"299 - unquoted"#,
            r#"299 - "unterminated"#,
            r#"299 - "x" trailing"#,
            r#"299 - "x" "unterminated date"#,
        ] {
            assert!(parse_warning(bad).is_err(), "{bad}");
        }
        // The good warnings before a malformed one in the same header are kept.
        let warnings = parse_all(&[r#"299 - "ok", garbage"#, r#"199 agent "other""#]);
        let texts: Vec<_> = warnings.iter().map(|w| (w.code, w.text.as_str())).collect();
        assert_eq!(texts, [(299, "ok"), (199, "other")]);
    }

    #[test]
    fn the_default_handler_remembers_texts() {
        let handler = LogWarningsOnce::new();
        let warning = Warning {
            code: 299,
            agent: "-".into(),
            text: "deprecated".into(),
        };
        handler.handle_warning(&warning);
        handler.handle_warning(&warning);
        assert_eq!(handler.seen.lock().unwrap().len(), 1);
        handler.handle_warning(&Warning {
            code: 199,
            ..warning
        });
        assert_eq!(handler.seen.lock().unwrap().len(), 1, "only 299 is logged");
    }
}
