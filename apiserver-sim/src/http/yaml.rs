//! YAML answers (`Accept: application/yaml`), written as kube-apiserver writes them.
//!
//! Mirrors kube-apiserver 1.36.2's YAML serializer: the JSON answer decoded by go-yaml v2 and
//! encoded again (`sigs.k8s.io/yaml.JSONToYAML`), so the text is go-yaml v2's: maps' keys in
//! its natural order (digit runs compared as numbers, non-letters before letters), two
//! spaces of indentation, sequences in a mapping not indented (`key:` then `- item`), `{}`
//! and `[]` for empty ones; a string that would read back as another type (`"true"`, `"y"`,
//! `"1"`, `"2026-01-01T00:00:00Z"`, `""`) double-quoted, one whose characters forbid the
//! plain style single-quoted (or double-quoted with escapes), one with line breaks as a
//! literal block (`|-`); plain and quoted scalars past column 80 folded at a space onto the
//! next line, indented; floats as Go's `strconv.FormatFloat(f, 'g', -1, 64)`.
//! Differences: keys longer than 128 characters are written as simple keys (go-yaml writes
//! them as `? key`).

use std::cmp::Ordering;

use serde_json::Value;

/// go-yaml's preferred line width.
const WIDTH: usize = 80;

/// The YAML document of `value`.
pub fn to_yaml(value: &Value) -> String {
    let mut w = Writer::default();
    match value {
        Value::Object(m) if !m.is_empty() => w.mapping(value, 0, false),
        Value::Array(a) if !a.is_empty() => w.sequence(value, 0, false),
        other => {
            w.node_inline(other, 0);
        }
    }
    if !w.out.ends_with('\n') {
        w.out.push('\n');
    }
    w.out
}

#[derive(Default)]
struct Writer {
    out: String,
    column: usize,
}

/// go-yaml v2's `keyList.Less` for string keys.
fn natural(a: &str, b: &str) -> Ordering {
    let (ar, br): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    for i in 0..ar.len().min(br.len()) {
        if ar[i] == br[i] {
            continue;
        }
        let (al, bl) = (ar[i].is_alphabetic(), br[i].is_alphabetic());
        if al && bl {
            return ar[i].cmp(&br[i]);
        }
        if al || bl {
            return if bl {
                Ordering::Less
            } else {
                Ordering::Greater
            };
        }
        let (mut an, mut bn) = (0i64, 0i64);
        if ar[i] == '0' || br[i] == '0' {
            let nonzero = ar[..i]
                .iter()
                .rev()
                .take_while(|c| c.is_ascii_digit())
                .any(|c| *c != '0');
            if nonzero {
                (an, bn) = (1, 1);
            }
        }
        let mut ai = i;
        while ai < ar.len() && ar[ai].is_ascii_digit() {
            an = an
                .wrapping_mul(10)
                .wrapping_add(i64::from(ar[ai] as u8 - b'0'));
            ai += 1;
        }
        let mut bi = i;
        while bi < br.len() && br[bi].is_ascii_digit() {
            bn = bn
                .wrapping_mul(10)
                .wrapping_add(i64::from(br[bi] as u8 - b'0'));
            bi += 1;
        }
        if an != bn {
            return an.cmp(&bn);
        }
        if ai != bi {
            return ai.cmp(&bi);
        }
        return ar[i].cmp(&br[i]);
    }
    ar.len().cmp(&br.len())
}

/// Whether go-yaml v2 would read `s`, unquoted, as something other than a string.
fn resolves_to_other(s: &str) -> bool {
    const SPECIAL: [&str; 31] = [
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON", "n", "N", "no",
        "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF", "", "~", "null", "Null",
        "NULL", ".nan", ".NaN", ".NAN", "<<",
    ];
    const INF: [&str; 9] = [
        ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
    ];
    if SPECIAL.contains(&s) || INF.contains(&s) {
        return true;
    }
    let first = s.chars().next().unwrap_or(' ');
    if first == '.' {
        return s.parse::<f64>().is_ok();
    }
    if !(first.is_ascii_digit() || first == '+' || first == '-') {
        return false;
    }
    let [timestamp, int, float, base60] = patterns();
    let plain = s.replace('_', "");
    timestamp.is_match(s) || int.is_match(&plain) || float.is_match(&plain) || base60.is_match(s)
}

/// go-yaml v2's timestamp formats, Go's `ParseInt(s, 0, 64)`, its float and base-60 forms.
fn patterns() -> &'static [regex::Regex; 4] {
    static PATTERNS: std::sync::OnceLock<[regex::Regex; 4]> = std::sync::OnceLock::new();
    PATTERNS.get_or_init(|| {
        [
            r"^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(([Tt][0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2}))|( [0-9]{1,2}:[0-9]{1,2}:[0-9]{1,2}(\.[0-9]+)?))?$",
            r"^[-+]?(0[xX][0-9a-fA-F]+|0[oO]?[0-7]+|0[bB][01]+|[1-9][0-9]*|0)$",
            r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$",
            r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$",
        ]
        .map(|p| regex::Regex::new(p).expect("a valid pattern"))
    })
}

fn printable(c: char) -> bool {
    matches!(c, '\n' | '\u{20}'..='\u{7E}' | '\u{A0}'..='\u{D7FF}')
        || (('\u{E000}'..='\u{FFFD}').contains(&c) && c != '\u{FEFF}')
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

#[derive(PartialEq, Eq, Clone, Copy)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// go-yaml's `yaml_emitter_analyze_scalar` and style selection, for a string in block
/// context (`key`: a simple key).
fn style(s: &str, key: bool) -> Style {
    let wanted = if s.contains('\n') {
        Style::Literal
    } else if resolves_to_other(s) {
        Style::Double
    } else {
        Style::Plain
    };
    let chars: Vec<char> = s.chars().collect();
    let (mut block_ind, mut special, mut line_breaks) = (false, false, false);
    let (mut leading_space, mut leading_break, mut trailing_space, mut trailing_break) =
        (false, false, false, false);
    let (mut break_space, mut space_break) = (false, false);
    let (mut prev_space, mut prev_break) = (false, false);
    if s.starts_with("---") || s.starts_with("...") {
        block_ind = true;
    }
    let blankz = |i: usize| {
        chars
            .get(i)
            .is_none_or(|c| matches!(c, ' ' | '\t') || is_break(*c))
    };
    let mut preceded_by_ws = true;
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_ws = blankz(i + 1);
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_ind = true,
                '?' | ':' | '-' if followed_by_ws => block_ind = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_ws => block_ind = true,
                '#' if preceded_by_ws => block_ind = true,
                _ => {}
            }
        }
        if !printable(c) {
            special = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= i + 1 == chars.len();
            break_space |= prev_break;
            (prev_space, prev_break) = (true, false);
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= i + 1 == chars.len();
            space_break |= prev_space;
            (prev_space, prev_break) = (false, true);
        } else {
            (prev_space, prev_break) = (false, false);
        }
        preceded_by_ws = blankz(i);
    }
    let mut plain_ok = !(leading_space || leading_break || trailing_space || trailing_break);
    let mut single_ok = true;
    let mut block_ok = !trailing_space;
    if break_space {
        plain_ok = false;
        single_ok = false;
    }
    if space_break || special {
        (plain_ok, single_ok, block_ok) = (false, false, false);
    }
    if line_breaks || block_ind {
        plain_ok = false;
    }
    match wanted {
        Style::Plain if !plain_ok || (s.is_empty() && key) => {
            if single_ok {
                Style::Single
            } else {
                Style::Double
            }
        }
        Style::Literal if !block_ok || key => Style::Double,
        other => other,
    }
}

/// A float as go-yaml writes it: `strconv.FormatFloat(f, 'g', -1, 64)`, and YAML's words
/// for NaN and the infinities.
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".to_owned();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf" } else { "-.inf" }.to_owned();
    }
    crate::go_strconv::format_float_g(f)
}

impl Writer {
    fn push(&mut self, s: &str) {
        for c in s.chars() {
            if c == '\n' {
                self.column = 0;
            } else {
                self.column += 1;
            }
            self.out.push(c);
        }
    }

    fn newline_indent(&mut self, indent: usize) {
        self.push("\n");
        self.push(&" ".repeat(indent));
    }

    /// A scalar or empty collection after `key:` or `-` (a space first).
    fn node_inline(&mut self, v: &Value, indent: usize) -> bool {
        match v {
            Value::Null => self.push("null"),
            Value::Bool(b) => self.push(if *b { "true" } else { "false" }),
            Value::Number(n) => match (n.as_i64(), n.as_u64()) {
                (Some(i), _) => self.push(&i.to_string()),
                (_, Some(u)) => self.push(&u.to_string()),
                _ => self.push(&go_float(n.as_f64().unwrap_or(0.0))),
            },
            Value::String(s) => self.string(s, indent, false),
            Value::Object(m) if m.is_empty() => self.push("{}"),
            Value::Array(a) if a.is_empty() => self.push("[]"),
            _ => return false,
        }
        true
    }

    fn string(&mut self, s: &str, indent: usize, key: bool) {
        let folds = !key;
        let chars: Vec<char> = s.chars().collect();
        match style(s, key) {
            Style::Plain => {
                let mut spaces = false;
                for (i, &c) in chars.iter().enumerate() {
                    if c == ' ' {
                        let next_space = chars.get(i + 1) == Some(&' ');
                        if folds && !spaces && self.column > WIDTH && !next_space {
                            self.newline_indent(indent);
                        } else {
                            self.push(" ");
                        }
                        spaces = true;
                    } else {
                        self.push(c.encode_utf8(&mut [0; 4]));
                        spaces = false;
                    }
                }
            }
            Style::Single => {
                self.push("'");
                let mut spaces = false;
                for (i, &c) in chars.iter().enumerate() {
                    if c == ' ' {
                        let fold = folds
                            && !spaces
                            && self.column > WIDTH
                            && i > 0
                            && i + 1 < chars.len()
                            && chars.get(i + 1) != Some(&' ');
                        if fold {
                            self.newline_indent(indent);
                        } else {
                            self.push(" ");
                        }
                        spaces = true;
                    } else {
                        if c == '\'' {
                            self.push("'");
                        }
                        self.push(c.encode_utf8(&mut [0; 4]));
                        spaces = false;
                    }
                }
                self.push("'");
            }
            Style::Double => self.double_quoted(&chars, indent, folds),
            Style::Literal => self.literal(s, indent),
        }
    }

    fn double_quoted(&mut self, chars: &[char], indent: usize, folds: bool) {
        self.push("\"");
        let mut spaces = false;
        for (i, &c) in chars.iter().enumerate() {
            if !printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                let escaped = match c {
                    '\0' => "\\0".to_owned(),
                    '\u{7}' => "\\a".to_owned(),
                    '\u{8}' => "\\b".to_owned(),
                    '\t' => "\\t".to_owned(),
                    '\n' => "\\n".to_owned(),
                    '\u{b}' => "\\v".to_owned(),
                    '\u{c}' => "\\f".to_owned(),
                    '\r' => "\\r".to_owned(),
                    '\u{1b}' => "\\e".to_owned(),
                    '"' => "\\\"".to_owned(),
                    '\\' => "\\\\".to_owned(),
                    '\u{85}' => "\\N".to_owned(),
                    '\u{A0}' => "\\_".to_owned(),
                    '\u{2028}' => "\\L".to_owned(),
                    '\u{2029}' => "\\P".to_owned(),
                    c if (c as u32) <= 0xFF => format!("\\x{:02X}", c as u32),
                    c if (c as u32) <= 0xFFFF => format!("\\u{:04X}", c as u32),
                    c => format!("\\U{:08X}", c as u32),
                };
                self.push(&escaped);
                spaces = false;
            } else if c == ' ' {
                if folds && !spaces && self.column > WIDTH && i != 0 && i + 1 != chars.len() {
                    self.newline_indent(indent);
                    if chars.get(i + 1) == Some(&' ') {
                        self.push("\\");
                    }
                } else {
                    self.push(" ");
                }
                spaces = true;
            } else {
                self.push(c.encode_utf8(&mut [0; 4]));
                spaces = false;
            }
        }
        self.push("\"");
    }

    fn literal(&mut self, s: &str, indent: usize) {
        self.push("|");
        if s.starts_with([' ', '\n']) {
            self.push("2");
        }
        let chomp = if !s.ends_with('\n') {
            "-"
        } else if s == "\n" || s.ends_with("\n\n") {
            "+"
        } else {
            ""
        };
        self.push(chomp);
        let body = s.strip_suffix('\n').unwrap_or(s);
        for line in body.split('\n') {
            self.push("\n");
            if !line.is_empty() {
                self.push(&" ".repeat(indent));
                self.push(line);
            }
        }
    }

    /// A non-empty mapping whose keys go at `indent`; `inline`: its first key goes where the
    /// writer is (after `- `).
    fn mapping(&mut self, v: &Value, indent: usize, inline: bool) {
        let Some(map) = v.as_object() else { return };
        let mut keys: Vec<&String> = map.keys().collect();
        keys.sort_by(|a, b| natural(a, b));
        for (i, key) in keys.into_iter().enumerate() {
            if i > 0 || !inline {
                if !self.out.is_empty() {
                    self.push("\n");
                }
                self.push(&" ".repeat(indent));
            }
            self.string(key, indent + 2, true);
            self.push(":");
            let value = &map[key];
            match value {
                Value::Object(m) if !m.is_empty() => self.mapping(value, indent + 2, false),
                Value::Array(a) if !a.is_empty() => self.sequence(value, indent, false),
                scalar => {
                    self.push(" ");
                    self.node_inline(scalar, indent + 2);
                }
            }
        }
    }

    /// A non-empty sequence whose `-` go at `indent`.
    fn sequence(&mut self, v: &Value, indent: usize, inline: bool) {
        let Some(items) = v.as_array() else { return };
        for (i, item) in items.iter().enumerate() {
            if i > 0 || !inline {
                if !self.out.is_empty() {
                    self.push("\n");
                }
                self.push(&" ".repeat(indent));
            }
            self.push("- ");
            match item {
                Value::Object(m) if !m.is_empty() => self.mapping(item, indent + 2, true),
                Value::Array(a) if !a.is_empty() => self.sequence(item, indent + 2, true),
                scalar => {
                    self.node_inline(scalar, indent + 2);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn as_kube_apiserver_1_36_2_writes_it() {
        let long = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa aaaaaaaaaaaaaaaaaaaaaaaaaaa";
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "data": {"e": "", "k": "v", "long": long, "n": "1", "t": "true"},
            "metadata": {"creationTimestamp": "2026-12-02T15:52:32Z", "labels": {"x": "y"},
                "managedFields": [{"fieldsV1": {"f:data": {".": {}, "f:e": {}}}, "manager": "curl"}],
                "name": "yy", "resourceVersion": "409"}});
        let expected = "apiVersion: v1
data:
  e: \"\"
  k: v
  long: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
    aaaaaaaaaaaaaaaaaaaaaaaaaaa
  \"n\": \"1\"
  t: \"true\"
kind: ConfigMap
metadata:
  creationTimestamp: \"2026-12-02T15:52:32Z\"
  labels:
    x: \"y\"
  managedFields:
  - fieldsV1:
      f:data:
        .: {}
        f:e: {}
    manager: curl
  name: yy
  resourceVersion: \"409\"
";
        assert_eq!(to_yaml(&cm), expected);
    }

    #[test]
    fn styles() {
        assert_eq!(to_yaml(&json!({"a": "x: y"})), "a: 'x: y'\n");
        assert_eq!(to_yaml(&json!({"a": "it's"})), "a: it's\n");
        assert_eq!(to_yaml(&json!({"a": "- x"})), "a: '- x'\n");
        assert_eq!(to_yaml(&json!({"a": "a\nb"})), "a: |-\n  a\n  b\n");
        assert_eq!(to_yaml(&json!({"a": "tab\there"})), "a: \"tab\\there\"\n");
        assert_eq!(to_yaml(&json!({"a": 0.5, "b": 1e21})), "a: 0.5\nb: 1e+21\n");
        assert_eq!(
            to_yaml(&json!({"a": [[1, 2], {"b": 1}]})),
            "a:\n- - 1\n  - 2\n- b: 1\n"
        );
        assert_eq!(natural("a10", "a9"), Ordering::Greater);
        assert_eq!(natural(".", "f:a"), Ordering::Less);
    }
}
