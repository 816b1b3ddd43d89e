//! The byte-level scanning under [`ListDecoder`](super::ListDecoder): the class of each byte
//! outside strings, skipping strings a word at a time, and scanning one value across chunks
//! with its stack of open brackets.

use crate::json_scan::{self, byte_classes};

/// A byte JSON never has outside strings.
const BAD: u8 = 0;
/// Whitespace, `:` and `,`.
pub(super) const GAP: u8 = 1;
/// A byte of a number or of `true`, `false` or `null`.
pub(super) const SCALAR: u8 = 2;
pub(super) const QUOTE: u8 = 3;
pub(super) const OPEN: u8 = 4;
pub(super) const CLOSE: u8 = 5;

/// The class of each byte outside strings.
pub(super) static CLASS: [u8; 256] = byte_classes(
    BAD,
    &[
        (b" \t\r\n:,", GAP),
        (b"-+.0123456789eEtrufalsn", SCALAR),
        (b"\"", QUOTE),
        (b"{[", OPEN),
        (b"}]", CLOSE),
    ],
);

pub(super) fn is_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\r' | b'\n')
}

/// Where the scan of one value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Scan {
    /// Outside strings, inside the brackets on the stack.
    Nested,
    /// In a string (after a backslash when `escaped`).
    Str { escaped: bool },
    /// In a number or literal that is the whole value.
    Scalar,
}

/// The index of the first `"` or `\\` in `bytes` from `from` on, its first 64 bytes a word at
/// a time.
#[inline]
pub(super) fn quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    json_scan::quote_or_backslash::<64>(bytes, from)
}

/// Scans the value in progress from `pos`: `Ok(Some(end))` when it ends in `bytes` (just
/// before `end`), `Ok(None)` when it goes on past them, `Err(at)` at a byte out of place.
pub(super) fn scan_value(
    scan: &mut Scan,
    stack: &mut Vec<u8>,
    bytes: &[u8],
    mut pos: usize,
) -> Result<Option<usize>, usize> {
    let len = bytes.len();
    match *scan {
        Scan::Scalar => {
            let rest = &bytes[pos..];
            return Ok(rest
                .iter()
                .position(|&b| CLASS[usize::from(b)] != SCALAR)
                .map(|found| pos + found));
        }
        Scan::Str { escaped } => match skip_string(bytes, pos + usize::from(escaped)) {
            Ok(end) if stack.is_empty() => {
                *scan = Scan::Nested;
                return Ok(Some(end));
            }
            Ok(end) => pos = end,
            Err(reached) => {
                *scan = Scan::Str {
                    escaped: reached > len,
                };
                return Ok(None);
            }
        },
        Scan::Nested => {}
    }
    while pos < len {
        let byte = bytes[pos];
        pos += 1;
        match CLASS[usize::from(byte)] {
            GAP | SCALAR => {}
            QUOTE => match skip_string(bytes, pos) {
                Ok(end) => pos = end,
                Err(reached) => {
                    *scan = Scan::Str {
                        escaped: reached > len,
                    };
                    return Ok(None);
                }
            },
            OPEN => stack.push(byte),
            CLOSE => {
                let opener = if byte == b'}' { b'{' } else { b'[' };
                if stack.pop() != Some(opener) {
                    return Err(pos - 1);
                }
                if stack.is_empty() {
                    *scan = Scan::Nested;
                    return Ok(Some(pos));
                }
            }
            _ => return Err(pos - 1),
        }
    }
    *scan = Scan::Nested;
    Ok(None)
}

/// Skips the rest of a string from `pos`: `Ok` just past its closing quote, or `Err` with how
/// far it got when `bytes` end first (past their end when they end with a backslash).
fn skip_string(bytes: &[u8], mut pos: usize) -> Result<usize, usize> {
    loop {
        match quote_or_backslash(bytes, pos) {
            None => return Err(pos),
            Some(found) if bytes[found] == b'"' => return Ok(found + 1),
            Some(found) => pos = found + 2,
        }
    }
}
