//! Removing what legitimately differs between two servers that were sent the same requests:
//! uids, times, resourceVersions, generated-name suffixes, continue tokens' contents,
//! selfLink, and managedFields where a step is not about them.

use serde_json::{Map, Value};

/// Per-server values to replace wherever they appear (a generated name by its prefix and
/// `<suffix>`, a uid by `<uid>`), learnt from the server's earlier answers.
#[derive(Default)]
pub struct Volatile {
    replacements: Vec<(String, String)>,
}

impl Volatile {
    /// Replace `actual` by `stands_for` in every string from now on.
    pub fn learn(&mut self, actual: &str, stands_for: &str) {
        if !actual.is_empty() && !self.replacements.iter().any(|(a, _)| a == actual) {
            self.replacements
                .push((actual.to_owned(), stands_for.to_owned()));
        }
    }

    /// Learns the uids in `v` (objects, lists, watch events).
    pub fn learn_uids(&mut self, v: &Value) {
        match v {
            Value::Object(map) => {
                for (key, value) in map {
                    match (key.as_str(), value) {
                        ("uid", Value::String(uid)) => self.learn(uid, "<uid>"),
                        _ => self.learn_uids(value),
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|i| self.learn_uids(i)),
            _ => {}
        }
    }

    fn replace(&self, s: &str) -> String {
        let mut out = s.to_owned();
        for (actual, stands_for) in &self.replacements {
            if out.contains(actual.as_str()) {
                out = out.replace(actual.as_str(), stands_for);
            }
        }
        out
    }
}

/// Normalizes `v` in place. `keep_managed_fields`: keep `metadata.managedFields` (its times
/// still normalized) for steps about them.
pub fn normalize(v: &mut Value, volatile: &Volatile, keep_managed_fields: bool) {
    match v {
        Value::Object(map) => normalize_map(map, volatile, keep_managed_fields),
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| normalize(i, volatile, keep_managed_fields)),
        Value::String(s) => *s = normalize_string(s, volatile),
        _ => {}
    }
}

fn normalize_map(map: &mut Map<String, Value>, volatile: &Volatile, keep_mf: bool) {
    map.remove("selfLink");
    if !keep_mf {
        map.remove("managedFields");
    }
    for (key, value) in map.iter_mut() {
        match (key.as_str(), &*value) {
            ("uid", Value::String(_)) => *value = Value::from("<uid>"),
            ("resourceVersion", Value::String(s)) if !s.is_empty() => *value = Value::from("<rv>"),
            ("continue", Value::String(s)) if !s.is_empty() => *value = Value::from("<continue>"),
            _ => normalize(value, volatile, keep_mf),
        }
    }
}

fn normalize_string(s: &str, volatile: &Volatile) -> String {
    if is_time(s) {
        return "<time>".to_owned();
    }
    let s = volatile.replace(s);
    // Messages that quote resourceVersions ("too old resource version: 12 (40)",
    // preconditions): the numbers are the servers' own.
    let lower = s.to_ascii_lowercase();
    if lower.contains("resource version") || lower.contains("resourceversion") {
        return digits_replaced(&s);
    }
    s
}

/// `2026-12-01T15:35:13Z` or with fractional seconds (`...13.123456Z`).
fn is_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| r.clone().all(|i| b.get(i).is_some_and(u8::is_ascii_digit));
    b.len() >= 20
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && b[10] == b'T'
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19)
        && b[b.len() - 1] == b'Z'
        && (b.len() == 20 || (b[19] == b'.' && digits(20..b.len() - 1)))
}

fn digits_replaced(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str("<n>");
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_and_numbers_in_resource_version_messages() {
        assert!(is_time("2026-12-01T15:35:13Z"));
        assert!(is_time("2026-12-01T15:35:13.123456Z"));
        assert!(!is_time("2026-12-01"));
        assert_eq!(
            digits_replaced("too old resource version: 12 (40)"),
            "too old resource version: <n> (<n>)"
        );
    }
}
