//! RFC 3339 text to and from [`Time`]: the parser and the calendar arithmetic.
//!
//! Calendar conversions use Howard Hinnant's `days_from_civil` / `civil_from_days`
//! algorithms (proleptic Gregorian calendar, exact for every year we accept). The parser
//! walks the bytes once and reports the first problem with its byte offset; it never
//! panics and never allocates unless it fails.

use super::{SECS_PER_DAY, Time, TimeError};

/// Parses an RFC 3339 timestamp (see [`Time::parse`]).
pub(super) fn parse(input: &str) -> Result<Time, TimeError> {
    Parser { input, pos: 0 }.parse()
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The inverse of [`days_from_civil`]: (year, month, day).
pub(super) fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if y % 4 == 0 && (y % 100 != 0 || y % 400 == 0) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

struct Parser<'a> {
    input: &'a str,
    pos: usize,
}

impl Parser<'_> {
    fn err(&self, position: usize, reason: &'static str) -> TimeError {
        TimeError::Parse {
            input: self.input.to_owned(),
            position,
            reason,
        }
    }

    fn peek(&self) -> Option<u8> {
        self.input.as_bytes().get(self.pos).copied()
    }

    fn digits(&mut self, n: usize, reason: &'static str) -> Result<i64, TimeError> {
        let mut v = 0i64;
        for _ in 0..n {
            match self.peek() {
                Some(c @ b'0'..=b'9') => {
                    v = v * 10 + i64::from(c - b'0');
                    self.pos += 1;
                }
                _ => return Err(self.err(self.pos, reason)),
            }
        }
        Ok(v)
    }

    fn expect(&mut self, accepted: &[u8], reason: &'static str) -> Result<u8, TimeError> {
        match self.peek() {
            Some(c) if accepted.contains(&c) => {
                self.pos += 1;
                Ok(c)
            }
            _ => Err(self.err(self.pos, reason)),
        }
    }

    fn parse(mut self) -> Result<Time, TimeError> {
        let year = self.digits(4, "expected a 4-digit year")?;
        self.expect(b"-", "expected '-' after the year")?;
        let month_at = self.pos;
        let month = self.digits(2, "expected a 2-digit month")?;
        self.expect(b"-", "expected '-' after the month")?;
        let day_at = self.pos;
        let day = self.digits(2, "expected a 2-digit day")?;
        self.expect(b"Tt", "expected 'T' between date and time")?;
        let hour_at = self.pos;
        let hour = self.digits(2, "expected a 2-digit hour")?;
        self.expect(b":", "expected ':' after the hour")?;
        let minute_at = self.pos;
        let minute = self.digits(2, "expected 2-digit minutes")?;
        self.expect(b":", "expected ':' after the minutes")?;
        let second_at = self.pos;
        let second = self.digits(2, "expected 2-digit seconds")?;

        let mut nanos = 0u32;
        if self.peek() == Some(b'.') {
            self.pos += 1;
            let start = self.pos;
            let mut scale = 100_000_000u32;
            while let Some(c @ b'0'..=b'9') = self.peek() {
                nanos += u32::from(c - b'0') * scale;
                scale /= 10;
                self.pos += 1;
            }
            if self.pos == start {
                return Err(self.err(start, "expected digits after '.'"));
            }
        }

        let offset_at = self.pos;
        let offset = match self.expect(b"Zz+-", "expected 'Z' or a '+hh:mm'/'-hh:mm' offset")? {
            b'Z' | b'z' => 0,
            sign => {
                let oh = self.digits(2, "expected a 2-digit offset hour")?;
                self.expect(b":", "expected ':' in the offset")?;
                let om = self.digits(2, "expected 2-digit offset minutes")?;
                if oh > 23 || om > 59 {
                    return Err(self.err(offset_at, "offset out of range"));
                }
                let secs = oh * 3600 + om * 60;
                if sign == b'-' { -secs } else { secs }
            }
        };
        if self.pos != self.input.len() {
            return Err(self.err(self.pos, "unexpected text after the timestamp"));
        }

        if !(1..=12).contains(&month) {
            return Err(self.err(month_at, "month out of range"));
        }
        if day < 1 || day > days_in_month(year, month) {
            return Err(self.err(day_at, "day out of range"));
        }
        if hour > 23 {
            return Err(self.err(hour_at, "hour out of range"));
        }
        if minute > 59 {
            return Err(self.err(minute_at, "minute out of range"));
        }
        if second > 59 {
            return Err(self.err(second_at, "second out of range"));
        }
        let secs =
            days_from_civil(year, month, day) * SECS_PER_DAY + hour * 3600 + minute * 60 + second
                - offset;
        Time::from_unix(secs, nanos)
            .map_err(|_| self.err(offset_at, "instant outside years 0000..=9999"))
    }
}

#[cfg(test)]
mod tests {
    use super::super::{MAX_SECS, MIN_SECS};
    use super::*;

    fn t(s: &str) -> Time {
        Time::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn round_trip_many_days() {
        let mut secs = MIN_SECS;
        while secs <= MAX_SECS {
            let x = Time::from_unix(secs, 0).unwrap();
            assert_eq!(t(&x.to_string()), x);
            secs += 86_400 * 97 + 3_661;
        }
    }

    #[test]
    fn fuzz_never_panics_and_round_trips() {
        // Mutate valid timestamps one character at a time, with characters from this
        // alphabet, at positions chosen by the random strings' lengths.
        let alphabet = [
            "0", "1", "2", "5", "9", "-", "T", ":", ".", "Z", "+", "z", "é", " ",
        ];
        let seeds = [
            "2024-01-02T03:04:05Z",
            "1999-12-31T23:59:59.123456+05:30",
            "2000-02-29T00:00:00-00:01",
        ];
        let (mut parsed, mut rejected) = (0, 0);
        for (i, noise) in crate::labels::tests::random_strings(&alphabet, 30_000, 3)
            .iter()
            .enumerate()
        {
            let seed = seeds[i % seeds.len()];
            let at = (i * 7) % seed.len();
            let input = format!("{}{noise}{}", &seed[..at], &seed[at + 1..]);
            match Time::parse(&input) {
                Ok(x) => {
                    parsed += 1;
                    assert_eq!(Time::parse(&x.to_rfc3339_nanos()), Ok(x), "{input:?}");
                }
                Err(TimeError::Parse { position, .. }) => {
                    rejected += 1;
                    assert!(position <= input.len(), "{input:?}");
                }
                Err(e) => panic!("{input:?}: {e}"),
            }
            for end in 0..input.len() {
                if input.is_char_boundary(end) {
                    assert!(
                        Time::parse(&input[..end]).is_err() || end >= 19,
                        "{input:?}"
                    );
                }
            }
        }
        assert!(parsed > 1_000 && rejected > 1_000, "{parsed} / {rejected}");
    }

    #[test]
    fn malformed_input_is_a_typed_error() {
        let cases = [
            ("", 0, "expected a 4-digit year"),
            ("2024", 4, "expected '-' after the year"),
            ("2024-1-02T03:04:05Z", 6, "expected a 2-digit month"),
            ("2024-13-02T03:04:05Z", 5, "month out of range"),
            ("2024-01-32T03:04:05Z", 8, "day out of range"),
            (
                "2024-01-02 03:04:05Z",
                10,
                "expected 'T' between date and time",
            ),
            ("2024-01-02T24:04:05Z", 11, "hour out of range"),
            ("2024-01-02T03:60:05Z", 14, "minute out of range"),
            ("2024-01-02T03:04:60Z", 17, "second out of range"),
            (
                "2024-01-02T03:04:05",
                19,
                "expected 'Z' or a '+hh:mm'/'-hh:mm' offset",
            ),
            ("2024-01-02T03:04:05.Z", 20, "expected digits after '.'"),
            ("2024-01-02T03:04:05+0200", 22, "expected ':' in the offset"),
            ("2024-01-02T03:04:05+24:00", 19, "offset out of range"),
            (
                "2024-01-02T03:04:05Zjunk",
                20,
                "unexpected text after the timestamp",
            ),
            ("２０２４-01-02T03:04:05Z", 0, "expected a 4-digit year"),
        ];
        for (input, position, reason) in cases {
            assert_eq!(
                Time::parse(input),
                Err(TimeError::Parse {
                    input: input.to_owned(),
                    position,
                    reason
                }),
                "{input}"
            );
        }
    }
}
