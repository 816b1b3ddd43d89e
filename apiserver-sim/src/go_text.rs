//! Go's wording of what a request sent, for the messages kube-apiserver builds from it.
//!
//! kube-apiserver decodes bodies with Go's `encoding/json` and formats values with `fmt`, so
//! its error messages carry their text: `invalid character 'n' looking for beginning of
//! object key string`, `json: cannot unmarshal array into Go value of type ...`,
//! `map[image:busybox]`. Clients and people match on these messages, so the simulator words
//! them the same way:
//!
//! - [`json_syntax_error`]: the `SyntaxError` of `encoding/json`'s scanner (`checkValid`) for
//!   the first byte that breaks the grammar, ported state by state from `scanner.go`;
//! - [`json_type_name`]: the JSON type a Go `UnmarshalTypeError` names (`object`, `array`,
//!   `number`, `string`, `bool`);
//! - [`go_value`]: `fmt`'s `%v` of a value decoded into `interface{}` (maps with sorted keys);
//! - [`summarize`]: the apiserver's `summarizeData`, the excerpt of a body it could not
//!   decode (its first 30 bytes as text when it starts with `{`, else in hex), as the real
//!   server echoes it to the client that sent it.
//!
//! Differences: bodies serde_json refuses but Go accepts (invalid UTF-8 inside strings, lone
//! surrogate escapes, nesting past serde_json's 128 levels) get no Go message
//! ([`json_syntax_error`] answers `None`); callers then word the error themselves.

use serde_json::Value;

/// Where the scanner is inside the nesting of objects and arrays (Go's `parseState`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    ObjectKey,
    ObjectValue,
    ArrayValue,
}

/// The scanner's states (Go's `step` functions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    BeginValue,
    BeginValueOrEmpty,
    BeginStringOrEmpty,
    BeginString,
    EndValue,
    EndTop,
    InString,
    InStringEsc,
    /// After `\u` and this many hex digits.
    InStringEscU(u8),
    Neg,
    One,
    Zero,
    Dot,
    Dot0,
    E,
    ESign,
    E0,
    /// Inside a literal: its remaining bytes and its name.
    Literal(&'static [u8], &'static str),
}

struct Scanner {
    state: State,
    stack: Vec<Parse>,
    end_top: bool,
}

/// Go's `quoteChar`: a byte as a quoted character in an error message.
fn quote_char(c: u8) -> String {
    match c {
        b'\'' => "'\\''".to_owned(),
        b'"' => "'\"'".to_owned(),
        _ => {
            // strconv.Quote(string(rune(c))) without its double quotes.
            let r = char::from(c);
            let inner = match c {
                0x07 => "\\a".to_owned(),
                0x08 => "\\b".to_owned(),
                0x0c => "\\f".to_owned(),
                b'\n' => "\\n".to_owned(),
                b'\r' => "\\r".to_owned(),
                b'\t' => "\\t".to_owned(),
                0x0b => "\\v".to_owned(),
                b'\\' => "\\\\".to_owned(),
                0x20..=0x7e => r.to_string(),
                0x00..=0x1f | 0x7f => format!("\\x{c:02x}"),
                // Latin-1: C1 controls, the no-break space and the soft hyphen are not
                // printable to Go.
                0x80..=0xa0 | 0xad => format!("\\u{:04x}", u32::from(c)),
                _ => r.to_string(),
            };
            format!("'{inner}'")
        }
    }
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | b'\n')
}

type Step = Result<(), String>;

fn error(c: u8, context: &str) -> Step {
    Err(format!("invalid character {} {context}", quote_char(c)))
}

impl Scanner {
    fn new() -> Scanner {
        Scanner {
            state: State::BeginValue,
            stack: Vec::new(),
            end_top: false,
        }
    }

    fn pop(&mut self) {
        self.stack.pop();
        if self.stack.is_empty() {
            self.state = State::EndTop;
            self.end_top = true;
        } else {
            self.state = State::EndValue;
        }
    }

    fn begin_value(&mut self, c: u8) -> Step {
        if is_space(c) {
            return Ok(());
        }
        self.state = match c {
            b'{' => {
                self.stack.push(Parse::ObjectKey);
                State::BeginStringOrEmpty
            }
            b'[' => {
                self.stack.push(Parse::ArrayValue);
                State::BeginValueOrEmpty
            }
            b'"' => State::InString,
            b'-' => State::Neg,
            b'0' => State::Zero,
            b'1'..=b'9' => State::One,
            b't' => State::Literal(b"rue", "true"),
            b'f' => State::Literal(b"alse", "false"),
            b'n' => State::Literal(b"ull", "null"),
            _ => return error(c, "looking for beginning of value"),
        };
        Ok(())
    }

    fn end_value(&mut self, c: u8) -> Step {
        let Some(top) = self.stack.last_mut() else {
            self.state = State::EndTop;
            self.end_top = true;
            return self.end_top_step(c);
        };
        if is_space(c) {
            self.state = State::EndValue;
            return Ok(());
        }
        match (*top, c) {
            (Parse::ObjectKey, b':') => {
                *top = Parse::ObjectValue;
                self.state = State::BeginValue;
            }
            (Parse::ObjectKey, _) => return error(c, "after object key"),
            (Parse::ObjectValue, b',') => {
                *top = Parse::ObjectKey;
                self.state = State::BeginString;
            }
            (Parse::ObjectValue, b'}') => self.pop(),
            (Parse::ObjectValue, _) => return error(c, "after object key:value pair"),
            (Parse::ArrayValue, b',') => self.state = State::BeginValue,
            (Parse::ArrayValue, b']') => self.pop(),
            (Parse::ArrayValue, _) => return error(c, "after array element"),
        }
        Ok(())
    }

    fn end_top_step(&mut self, c: u8) -> Step {
        if is_space(c) {
            Ok(())
        } else {
            error(c, "after top-level value")
        }
    }

    fn step(&mut self, c: u8) -> Step {
        match self.state {
            State::BeginValue => self.begin_value(c),
            State::BeginValueOrEmpty => {
                if is_space(c) {
                    Ok(())
                } else if c == b']' {
                    self.end_value(c)
                } else {
                    self.begin_value(c)
                }
            }
            State::BeginStringOrEmpty if is_space(c) => Ok(()),
            State::BeginStringOrEmpty if c == b'}' => {
                if let Some(top) = self.stack.last_mut() {
                    *top = Parse::ObjectValue;
                }
                self.end_value(c)
            }
            State::BeginStringOrEmpty | State::BeginString => {
                if is_space(c) {
                    Ok(())
                } else if c == b'"' {
                    self.state = State::InString;
                    Ok(())
                } else {
                    error(c, "looking for beginning of object key string")
                }
            }
            State::EndValue => self.end_value(c),
            State::EndTop => self.end_top_step(c),
            State::InString => {
                match c {
                    b'"' => self.state = State::EndValue,
                    b'\\' => self.state = State::InStringEsc,
                    0x00..=0x1f => return error(c, "in string literal"),
                    _ => {}
                }
                Ok(())
            }
            State::InStringEsc => {
                self.state = match c {
                    b'b' | b'f' | b'n' | b'r' | b't' | b'\\' | b'/' | b'"' => State::InString,
                    b'u' => State::InStringEscU(0),
                    _ => return error(c, "in string escape code"),
                };
                Ok(())
            }
            State::InStringEscU(n) => {
                if !c.is_ascii_hexdigit() {
                    return error(c, "in \\u hexadecimal character escape");
                }
                self.state = if n == 3 {
                    State::InString
                } else {
                    State::InStringEscU(n + 1)
                };
                Ok(())
            }
            State::Neg => {
                self.state = match c {
                    b'0' => State::Zero,
                    b'1'..=b'9' => State::One,
                    _ => return error(c, "in numeric literal"),
                };
                Ok(())
            }
            State::One if c.is_ascii_digit() => Ok(()),
            State::One | State::Zero => match c {
                b'.' => {
                    self.state = State::Dot;
                    Ok(())
                }
                b'e' | b'E' => {
                    self.state = State::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::Dot => {
                if !c.is_ascii_digit() {
                    return error(c, "after decimal point in numeric literal");
                }
                self.state = State::Dot0;
                Ok(())
            }
            State::Dot0 => match c {
                b'0'..=b'9' => Ok(()),
                b'e' | b'E' => {
                    self.state = State::E;
                    Ok(())
                }
                _ => self.end_value(c),
            },
            State::E if c == b'+' || c == b'-' => {
                self.state = State::ESign;
                Ok(())
            }
            State::E | State::ESign => {
                if !c.is_ascii_digit() {
                    return error(c, "in exponent of numeric literal");
                }
                self.state = State::E0;
                Ok(())
            }
            State::E0 if c.is_ascii_digit() => Ok(()),
            State::E0 => self.end_value(c),
            State::Literal(rest, name) => {
                if c != rest[0] {
                    return error(
                        c,
                        &format!("in literal {name} (expecting {})", quote_char(rest[0])),
                    );
                }
                self.state = if rest.len() == 1 {
                    State::EndValue
                } else {
                    State::Literal(&rest[1..], name)
                };
                Ok(())
            }
        }
    }

    /// Go's `eof`: the input ended.
    fn eof(&mut self) -> Step {
        if self.end_top {
            return Ok(());
        }
        self.step(b' ')?;
        if self.end_top {
            return Ok(());
        }
        Err("unexpected end of JSON input".to_owned())
    }
}

/// The message of Go's `encoding/json` for the first syntax error in `data`, or `None` when
/// Go's scanner accepts it.
pub fn json_syntax_error(data: &[u8]) -> Option<String> {
    let mut scanner = Scanner::new();
    for &c in data {
        if let Err(e) = scanner.step(c) {
            return Some(e);
        }
    }
    scanner.eof().err()
}

/// The JSON type of `v` as Go's `UnmarshalTypeError` names it (`null` has none: Go decodes
/// it into anything).
pub fn json_type_name(v: &Value) -> Option<&'static str> {
    match v {
        Value::Null => None,
        Value::Bool(_) => Some("bool"),
        Value::Number(_) => Some("number"),
        Value::String(_) => Some("string"),
        Value::Array(_) => Some("array"),
        Value::Object(_) => Some("object"),
    }
}

/// `fmt`'s `%v` of `v` decoded into `interface{}` by kube-apiserver (integers as `int64`,
/// other numbers as `float64`): `map[k:v ...]` with sorted keys, `[a b]`, `<nil>`.
pub fn go_value(v: &Value) -> String {
    let mut out = String::new();
    write_go_value(&mut out, v);
    out
}

fn write_go_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_f64().filter(|_| !n.is_i64() && !n.is_u64()) {
            Some(f) => out.push_str(&crate::go_strconv::format_float_v(f)),
            None => out.push_str(&n.to_string()),
        },
        Value::String(s) => out.push_str(s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                write_go_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push_str("map[");
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(' ');
                }
                out.push_str(k);
                out.push(':');
                write_go_value(out, &map[k]);
            }
            out.push(']');
        }
    }
}

/// The apiserver's `summarizeData(data, max)`: `<empty>`, the first `max` bytes as text when
/// `data` starts with `{`, else in hex; ` ...` when cut. Bytes that are not UTF-8 become
/// U+FFFD one by one, as Go's JSON encoder writes them.
pub fn summarize(data: &[u8], max: usize) -> String {
    if data.is_empty() {
        return "<empty>".to_owned();
    }
    let cut = data.len() > max;
    let head = &data[..data.len().min(max)];
    let mut out = if data[0] == b'{' {
        let mut text = String::new();
        for chunk in head.utf8_chunks() {
            text.push_str(chunk.valid());
            text.extend(chunk.invalid().iter().map(|_| '\u{fffd}'));
        }
        text
    } else {
        head.iter().map(|b| format!("{b:02x}")).collect()
    };
    if cut {
        out.push_str(" ...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Each input with the message kube-apiserver 1.36.2 answered for it (observed through
    /// a create of a ConfigMap; the message quotes Go's `encoding/json`).
    #[test]
    fn syntax_errors_are_worded_as_go_words_them() {
        let cases: &[(&[u8], &str)] = &[
            (
                b"{not json",
                "invalid character 'n' looking for beginning of object key string",
            ),
            (b"{\"a\":", "unexpected end of JSON input"),
            (b"", "unexpected end of JSON input"),
            (
                b"xyz",
                "invalid character 'x' looking for beginning of value",
            ),
            (
                b"{\"a\":1} x",
                "invalid character 'x' after top-level value",
            ),
            (
                b"{\"a\":tru}",
                "invalid character '}' in literal true (expecting 'e')",
            ),
            (
                b"{\"a\":\"\\q\"}",
                "invalid character 'q' in string escape code",
            ),
            (
                b"{\"a\":1.}",
                "invalid character '}' after decimal point in numeric literal",
            ),
            (b"[1,2", "unexpected end of JSON input"),
            (b"{\"a\" 1}", "invalid character '1' after object key"),
            (
                b"{\"a\":\"1\",}",
                "invalid character '}' looking for beginning of object key string",
            ),
            (
                b"{\"a\":\"x\x01\"}",
                "invalid character '\\x01' in string literal",
            ),
            (b"{\"a\":-}", "invalid character '}' in numeric literal"),
            (
                b"{\"a\":1e}",
                "invalid character '}' in exponent of numeric literal",
            ),
            (
                b"{\"a\":\"\\u12x4\"}",
                "invalid character 'x' in \\u hexadecimal character escape",
            ),
            (
                b"{\"a\":01}",
                "invalid character '1' after object key:value pair",
            ),
            (
                b"nul",
                "invalid character ' ' in literal null (expecting 'l')",
            ),
            (b"[1 2]", "invalid character '2' after array element"),
        ];
        for (input, want) in cases {
            assert_eq!(
                json_syntax_error(input).as_deref(),
                Some(*want),
                "{}",
                String::from_utf8_lossy(input)
            );
        }
        for valid in [
            &b"{}"[..],
            b" [ ] ",
            b"{\"a\":[1,-2.5e+3,true,null,\"\\u00e9\"]}",
            b"0",
        ] {
            assert_eq!(json_syntax_error(valid), None);
        }
    }

    #[test]
    fn values_print_as_fmt_prints_them() {
        let v = json!({"n": 1.5, "i": 3, "b": true, "z": null, "l": [1, "x"], "m": {"q": "r"},
            "big": 1e21, "small": 1.5e-7});
        assert_eq!(
            go_value(&v),
            "map[b:true big:1e+21 i:3 l:[1 x] m:map[q:r] n:1.5 small:1.5e-07 z:<nil>]"
        );
        assert_eq!(quote_char(b'\''), "'\\''");
        assert_eq!(quote_char(b'\\'), "'\\\\'");
        assert_eq!(quote_char(0xc3), "'Ã'");
        assert_eq!(json_type_name(&json!([1])), Some("array"));
    }

    #[test]
    fn bodies_are_summarized_as_the_apiserver_does() {
        // Observed on kube-apiserver 1.36.2.
        assert_eq!(summarize(b"", 30), "<empty>");
        assert_eq!(summarize(b"xyz", 30), "78797a");
        assert_eq!(summarize(b"{not json", 30), "{not json");
        assert_eq!(
            summarize(br#"{"kind":"ConfigMap","apiVersion":"v1"}"#, 30),
            r#"{"kind":"ConfigMap","apiVersio ..."#
        );
        assert_eq!(summarize("{\"é".as_bytes(), 3), "{\"\u{fffd} ...");
    }
}
