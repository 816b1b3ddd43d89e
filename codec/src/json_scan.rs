//! Byte-level JSON scanning shared by the two places that find JSON values without parsing
//! them: the list decoder here (one list item at a time) and the watch framer of
//! `clientgo-watch` (one event at a time).
//!
//! client-go has no counterpart: it runs `encoding/json`'s scanner over every byte. Here a
//! value's extent is found first, by classing the bytes outside strings with a table and
//! skipping strings a word at a time, and it is decoded once, from its own bytes.
//!
//! Both scanners build their own class table with [`byte_classes`] (they need different
//! classes) and skip strings with [`quote_or_backslash`].

/// A table giving each byte the class of the first group that lists it, `default` otherwise.
///
/// Built at compile time: `static CLASS: [u8; 256] = byte_classes(0, &[(b"{", 1), ...]);`.
pub const fn byte_classes(default: u8, groups: &[(&[u8], u8)]) -> [u8; 256] {
    let mut table = [default; 256];
    let mut group = groups.len();
    // Later groups first, so that an earlier group wins where two list the same byte.
    while group > 0 {
        group -= 1;
        let (bytes, class) = groups[group];
        let mut i = 0;
        while i < bytes.len() {
            table[bytes[i] as usize] = class;
            i += 1;
        }
    }
    table
}

/// The index of the first `"` or `\\` in `bytes` at or after `from`.
///
/// Most strings of an object are short (keys, names, quantities), and starting `memchr` for
/// each costs more than it saves: the first `SHORT` bytes are looked at 8 at a time (a word's
/// bytes compared at once, as serde_json does), and `memchr` skips the rest of a long string.
/// The watch framer uses 32 and the list decoder 64, the values each was tuned with.
#[inline]
pub fn quote_or_backslash<const SHORT: usize>(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::from_ne_bytes([1; 8]);
    const HIGH: u64 = u64::from_ne_bytes([0x80; 8]);
    const QUOTES: u64 = u64::from_ne_bytes([b'"'; 8]);
    const BACKSLASHES: u64 = u64::from_ne_bytes([b'\\'; 8]);
    let rest = bytes.get(from..)?;
    let mut words = rest.chunks_exact(8);
    for (i, word) in words.by_ref().take(SHORT / 8).enumerate() {
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
    let found = if done < SHORT / 8 * 8 {
        tail.iter().position(|&b| b == b'"' || b == b'\\')
    } else {
        memchr::memchr2(b'"', b'\\', tail)
    };
    found.map(|found| from + done + found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<const SHORT: usize>() {
        for len in 0..160 {
            for at in 0..=len {
                for special in [b'"', b'\\'] {
                    let mut bytes = vec![b'a'; len];
                    if at < len {
                        bytes[at] = special;
                        // A second one after it must not be reported first.
                        if at + 1 < len {
                            bytes[at + 1] = b'"';
                        }
                    }
                    for from in [0, 1, 9, 33, at.saturating_sub(9), at] {
                        let expected = bytes
                            .iter()
                            .enumerate()
                            .skip(from)
                            .find(|(_, b)| matches!(b, b'"' | b'\\'))
                            .map(|(i, _)| i);
                        assert_eq!(
                            quote_or_backslash::<SHORT>(&bytes, from),
                            expected,
                            "len {len}, special at {at}, from {from}"
                        );
                    }
                }
            }
        }
        // Bytes just above and below the two, and high bytes, are not mistaken for them.
        let near = [b'!', b'#', b'[', b']', 0x80, 0xff, 0xa2, 0xdc, 0x00, 0x01];
        assert_eq!(quote_or_backslash::<SHORT>(&near, 0), None);
        assert_eq!(quote_or_backslash::<SHORT>(&near, near.len() + 1), None);
    }

    #[test]
    fn finds_the_first_quote_or_backslash_at_every_position() {
        check::<32>();
        check::<64>();
        check::<0>();
    }

    #[test]
    fn an_earlier_group_wins() {
        static TABLE: [u8; 256] = byte_classes(9, &[(b"ab", 1), (b"bc", 2)]);
        assert_eq!(
            [
                TABLE[b'a' as usize],
                TABLE[b'b' as usize],
                TABLE[b'c' as usize]
            ],
            [1, 1, 2]
        );
        assert_eq!(TABLE[b'z' as usize], 9);
    }
}
