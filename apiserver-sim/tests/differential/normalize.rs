//! Removing what legitimately differs between two servers that were sent the same requests:
//! uids, times, resourceVersions, generated-name suffixes, continue tokens' contents,
//! selfLink, managedFields where a step is not about them, and the ages in a Table's cells
//! (`5s`: the two servers' clocks are read a moment apart).

use serde_json::{Map, Value, json};

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

/// A YAML answer: the value it encodes (normalized and compared as JSON answers are) and
/// its text, line by line, with times, uids, resourceVersions, ages and this server's
/// volatile names replaced (their lengths are the same on both servers, so the layout, line
/// folding included, is compared too).
pub fn yaml_body(body: &[u8], volatile: &Volatile) -> Value {
    let value = match serde_norway::from_slice::<Value>(body) {
        Ok(value) => value,
        Err(e) => return Value::from(format!("<not yaml: {e}>")),
    };
    let rules = [
        (
            r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z",
            "<time>",
        ),
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<uid>",
        ),
        (r#"resourceVersion: "[0-9]+""#, "resourceVersion: <rv>"),
        (r"^(\s*- )[0-9]+[smhdy]([0-9]+[smhd])?$", "${1}<age>"),
    ];
    let text = String::from_utf8_lossy(body);
    let lines: Vec<Value> = text
        .lines()
        .map(|line| {
            let mut line = volatile.replace(line);
            for (pattern, by) in rules {
                let re = regex::Regex::new(pattern).expect("a pattern");
                line = re.replace_all(&line, by).into_owned();
            }
            Value::from(line)
        })
        .collect();
    json!({ "yaml": value, "text": lines })
}

/// A Table's age cells (`0s`, `2m30s`, `3d`) as `<age>`.
fn normalize_ages(map: &mut Map<String, Value>) {
    let is_age = |s: &str| {
        let mut rest = s;
        let mut units = 0;
        while !rest.is_empty() {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            let unit = rest[digits..].chars().next();
            if digits == 0 || !matches!(unit, Some('s' | 'm' | 'h' | 'd' | 'y')) {
                return false;
            }
            rest = &rest[digits + 1..];
            units += 1;
        }
        units > 0
    };
    let rows = map.get_mut("rows").and_then(Value::as_array_mut);
    for row in rows.into_iter().flatten() {
        let cells = row.get_mut("cells").and_then(Value::as_array_mut);
        for cell in cells.into_iter().flatten() {
            if cell.as_str().is_some_and(is_age) {
                *cell = Value::from("<age>");
            }
        }
    }
}

fn normalize_map(map: &mut Map<String, Value>, volatile: &Volatile, keep_mf: bool) {
    map.remove("selfLink");
    if map.get("kind").and_then(Value::as_str) == Some("Table") {
        normalize_ages(map);
    }
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
