//! The byte-level scanning under [`ListDecoder`](super::ListDecoder): the class of each byte
//! outside strings, skipping strings a word at a time, and scanning one value across chunks
//! with its stack of open brackets.

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
pub(super) static CLASS: [u8; 256] = {
    const fn mark(mut table: [u8; 256], bytes: &[u8], class: u8) -> [u8; 256] {
        let mut i = 0;
        while i < bytes.len() {
            table[bytes[i] as usize] = class;
            i += 1;
        }
        table
    }
    let table = mark([BAD; 256], b" \t\r\n:,", GAP);
    let table = mark(table, b"-+.0123456789eEtrufalsn", SCALAR);
    let table = mark(table, b"\"", QUOTE);
    let table = mark(table, b"{[", OPEN);
    mark(table, b"}]", CLOSE)
};

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

/// The index of the first `"` or `\\` in `bytes` from `from` on.
///
/// Most strings of an object are short (keys, names, quantities): starting `memchr` for each
/// costs more than it saves, so the first 64 bytes are looked at 8 at a time (a word's bytes
/// compared at once, as serde_json does), and `memchr` skips the rest of a long string.
#[inline]
pub(super) fn quote_or_backslash(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    const WORDS: usize = 8;
    let rest = bytes.get(from..)?;
    let mut words = rest.chunks_exact(8);
    for (i, word) in words.by_ref().take(WORDS).enumerate() {
        let word = u64::from_le_bytes(word.try_into().unwrap_or_default());
        // A byte of `q` (`b`) is zero where `word` has a quote (a backslash). Zero bytes get
        // their high bit set; the lowest one flagged is exact (only bytes above a zero byte
        // may be flagged wrongly).
        let (q, b) = (word ^ QUOTES, word ^ BACKSLASHES);
        let found = (q.wrapping_sub(ONES) & !q | b.wrapping_sub(ONES) & !b) & HIGH;
        if found != 0 {
            return Some(from + i * 8 + found.trailing_zeros() as usize / 8);
        }
    }
    let done = rest.len() - words.remainder().len() - words.len() * 8;
    let tail = &rest[done..];
    let found = if done < WORDS * 8 {
        tail.iter().position(|&b| b == b'"' || b == b'\\')
    } else {
        memchr::memchr2(b'"', b'\\', tail)
    };
    found.map(|found| from + done + found)
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
