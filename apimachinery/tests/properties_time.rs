//! Property tests of the RFC 3339 parser and formatters (`Time`, `MicroTime`, `time/rfc3339.rs`).
//!
//! Checks that arbitrary text never panics and fails with a `TimeError::Parse` pointing inside
//! the input; that generated timestamps (years 0000..=9999, with and without fractions of any
//! length, `Z`/`z`, `T`/`t` and numeric offsets) parse to the instant an independent civil-date
//! computation in this file gives, or fail exactly when that instant leaves the supported range;
//! that every formatter's output parses back (`Display` to the second, `MicroTime` to the
//! microsecond, `to_rfc3339_nanos` exactly, JSON through serde); and that out-of-range fields
//! (month 13, day 31 in April, hour 24, second 60, offset +24:00, ...) are errors naming them.
//!
//! Seeded: every run generates the same cases. More cases, or another seed:
//! `PROPTEST_CASES=20000 PROPTEST_RNG_SEED=7 cargo test -p clientgo-apimachinery --test properties_time`
//! (the seed in use is printed with `-- --nocapture`).

mod support;

use clientgo_apimachinery::{MicroTime, Time, TimeError};
use proptest::prelude::*;
use support::config;

/// Unix seconds of 0000-01-01T00:00:00Z and 9999-12-31T23:59:59Z.
const MIN_SECS: i64 = -62_167_219_200;
const MAX_SECS: i64 = 253_402_300_799;

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    const DAYS: [i64; 12] = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    if m == 2 && is_leap(y) {
        29
    } else {
        DAYS[(m - 1) as usize]
    }
}

/// Days from 0000-01-01 to `y`-`m`-`d`, counted the plain way: whole years (365 each, plus
/// the leap days of years 0..y: year 0 is a leap year), then whole months, then days. A
/// reference independent of the crate's Hinnant-style arithmetic.
fn days_since_year_zero(y: i64, m: i64, d: i64) -> i64 {
    let leap_years_before = (y + 3) / 4 - (y + 99) / 100 + (y + 399) / 400;
    let months: i64 = (1..m).map(|month| days_in_month(y, month)).sum();
    365 * y + leap_years_before + months + d - 1
}

/// Unix seconds of a civil UTC time, by the reference above.
fn reference_unix(y: i64, mo: i64, d: i64, h: i64, mi: i64, s: i64) -> i64 {
    let epoch = days_since_year_zero(1970, 1, 1);
    (days_since_year_zero(y, mo, d) - epoch) * 86_400 + h * 3600 + mi * 60 + s
}

/// A generated timestamp, valid field by field.
#[derive(Debug, Clone)]
struct Stamp {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    /// Fraction digits as written (possibly empty: no fraction).
    fraction: String,
    /// `None` for `Z`, else (sign, hours, minutes).
    offset: Option<(bool, i64, i64)>,
    lower_case: bool,
}

impl Stamp {
    fn text(&self) -> String {
        let (t, z) = if self.lower_case {
            ('t', 'z')
        } else {
            ('T', 'Z')
        };
        let mut s = format!(
            "{:04}-{:02}-{:02}{t}{:02}:{:02}:{:02}",
            self.year, self.month, self.day, self.hour, self.minute, self.second
        );
        if !self.fraction.is_empty() {
            s.push('.');
            s.push_str(&self.fraction);
        }
        match self.offset {
            None => s.push(z),
            Some((negative, h, m)) => {
                s.push_str(&format!(
                    "{}{h:02}:{m:02}",
                    if negative { '-' } else { '+' }
                ));
            }
        }
        s
    }

    fn offset_secs(&self) -> i64 {
        self.offset.map_or(
            0,
            |(neg, h, m)| if neg { -1 } else { 1 } * (h * 3600 + m * 60),
        )
    }

    /// The instant by the reference computation (not range-checked).
    fn unix_seconds(&self) -> i64 {
        reference_unix(
            self.year,
            self.month,
            self.day,
            self.hour,
            self.minute,
            self.second,
        ) - self.offset_secs()
    }

    /// Nanoseconds: the first nine fraction digits, as Go keeps them.
    fn nanos(&self) -> u32 {
        let digits: String = self.fraction.chars().take(9).collect();
        format!("{digits:0<9}").parse().unwrap()
    }
}

fn year() -> impl Strategy<Value = i64> {
    // The range edges (where offsets push the instant out of range) and the epoch often.
    prop_oneof![
        4 => 0i64..=9999,
        1 => Just(0i64),
        1 => Just(9999i64),
        1 => 1969i64..=1971,
        1 => prop::sample::select(vec![100i64, 1900, 2000, 2100, 2400]),
    ]
}

fn stamp() -> impl Strategy<Value = Stamp> {
    (
        year(),
        1i64..=12,
        1i64..=31,
        (0i64..24, 0i64..60, 0i64..60),
        prop_oneof![2 => Just(String::new()), 3 => "[0-9]{1,12}"],
        prop_oneof![
            1 => Just(None),
            2 => (any::<bool>(), 0i64..24, 0i64..60).prop_map(Some),
        ],
        any::<bool>(),
    )
        .prop_map(
            |(year, month, day, (hour, minute, second), fraction, offset, lower_case)| Stamp {
                year,
                month,
                day: day.min(days_in_month(year, month)),
                hour,
                minute,
                second,
                fraction,
                offset,
                lower_case,
            },
        )
}

/// Text built from the characters timestamps are made of, and a few others.
fn timestamp_like_text() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop::sample::select(vec![
            "0", "1", "2", "3", "5", "9", "-", ":", "T", "t", "Z", "z", ".", "+", " ", "é", "２",
            "2024-", "01-", "02T", "03:04:05", "+05:30", "\u{0}",
        ]),
        0..16,
    )
    .prop_map(|parts| parts.concat())
}

/// Checks the invariants of any parse result.
fn check_parse_result(input: &str, result: &Result<Time, TimeError>) -> Result<(), TestCaseError> {
    match result {
        Ok(t) => {
            prop_assert_eq!(Time::parse(&t.to_rfc3339_nanos()), Ok(*t));
            prop_assert!(
                input.len() >= 20,
                "{input:?} is too short to be a timestamp"
            );
        }
        Err(TimeError::Parse {
            input: echoed,
            position,
            reason,
        }) => {
            prop_assert_eq!(echoed, input);
            prop_assert!(*position <= input.len(), "{input:?}: position {position}");
            prop_assert!(input.is_char_boundary(*position), "{input:?}: {position}");
            prop_assert!(!reason.is_empty());
        }
        Err(e @ TimeError::OutOfRange { .. }) => {
            prop_assert!(false, "{input:?}: parsing reported {e}");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(1024))]

    #[test]
    fn arbitrary_text_never_panics(input in any::<String>()) {
        check_parse_result(&input, &Time::parse(&input))?;
        let json = serde_json::to_string(&input).unwrap();
        prop_assert_eq!(
            serde_json::from_str::<Time>(&json).is_ok(),
            Time::parse(&input).is_ok()
        );
    }

    #[test]
    fn timestamp_like_text_never_panics(input in timestamp_like_text()) {
        check_parse_result(&input, &Time::parse(&input))?;
    }

    #[test]
    fn one_byte_changed_never_panics(
        stamp in stamp(),
        at in any::<prop::sample::Index>(),
        with in prop::sample::select(vec!["", "0", "9", "-", ":", "T", "Z", ".", "+", " ", "é", "00"]),
    ) {
        let text = stamp.text();
        let at = at.index(text.len());
        let input = format!("{}{with}{}", &text[..at], &text[at + 1..]);
        check_parse_result(&input, &Time::parse(&input))?;
    }

    #[test]
    fn generated_timestamps_parse_to_the_reference_instant(stamp in stamp()) {
        let text = stamp.text();
        let secs = stamp.unix_seconds();
        match Time::parse(&text) {
            Ok(t) => {
                prop_assert!((MIN_SECS..=MAX_SECS).contains(&secs));
                prop_assert_eq!(t.unix_seconds(), secs, "{}", text);
                prop_assert_eq!(t.subsec_nanos(), stamp.nanos(), "{}", text);
            }
            Err(e) => {
                // Only an offset can push a valid civil time out of the years 0000..=9999.
                prop_assert!(!(MIN_SECS..=MAX_SECS).contains(&secs), "{text}: {e}");
                let TimeError::Parse { reason, .. } = e else {
                    return Err(TestCaseError::fail(format!("{text}: {e}")));
                };
                prop_assert_eq!(reason, "instant outside years 0000..=9999");
            }
        }
    }

    #[test]
    fn utc_timestamps_format_back_to_their_text(stamp in stamp()) {
        let utc = Stamp { offset: None, lower_case: false, ..stamp };
        let t = Time::parse(&utc.text()).unwrap();
        let seconds = Stamp { fraction: String::new(), ..utc.clone() };
        prop_assert_eq!(t.to_string(), seconds.text());
        prop_assert_eq!(t.to_rfc3339(), seconds.text());
        let nanos = format!("{:09}", utc.nanos());
        let trimmed = nanos.trim_end_matches('0');
        let expected = Stamp { fraction: trimmed.to_owned(), ..utc.clone() };
        prop_assert_eq!(t.to_rfc3339_nanos(), expected.text());
        let micros = Stamp { fraction: nanos[..6].to_owned(), ..utc };
        prop_assert_eq!(t.to_rfc3339_micros(), micros.text());
    }

    #[test]
    fn every_instant_round_trips_through_each_format(
        secs in prop_oneof![
            4 => MIN_SECS..=MAX_SECS,
            1 => MIN_SECS..MIN_SECS + 86_400,
            1 => MAX_SECS - 86_400..=MAX_SECS,
            1 => -86_400i64..86_400,
        ],
        nanos in prop_oneof![Just(0u32), 0u32..1_000_000_000],
    ) {
        let t = Time::from_unix(secs, nanos).unwrap();
        prop_assert_eq!(t.unix_seconds(), secs);
        prop_assert_eq!(t.subsec_nanos(), nanos);
        prop_assert_eq!(Time::parse(&t.to_rfc3339_nanos()), Ok(t));
        prop_assert_eq!(Time::parse(&t.to_string()), Ok(t.truncate_to_seconds()));
        prop_assert_eq!(
            MicroTime::parse(&MicroTime(t).to_string()),
            Ok(MicroTime(t.truncate_to_micros()))
        );
        let json = serde_json::to_string(&t).unwrap();
        prop_assert_eq!(serde_json::from_str::<Time>(&json).unwrap(), t.truncate_to_seconds());
        let json = serde_json::to_string(&MicroTime(t)).unwrap();
        prop_assert_eq!(
            serde_json::from_str::<MicroTime>(&json).unwrap(),
            MicroTime(t.truncate_to_micros())
        );
        // The civil fields written agree with the reference calendar.
        let text = t.to_string();
        let field = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
        prop_assert_eq!(
            reference_unix(field(0..4), field(5..7), field(8..10), field(11..13), field(14..16), field(17..19)),
            secs,
            "{}", text
        );
        // Order is chronological.
        let later = Time::from_unix(secs.saturating_add(1).min(MAX_SECS), nanos).unwrap();
        prop_assert!(later >= t);
        prop_assert_eq!(later > t, secs < MAX_SECS);
    }

    #[test]
    fn out_of_range_instants_are_rejected(
        secs in prop_oneof![i64::MIN..MIN_SECS, MAX_SECS + 1..=i64::MAX],
        nanos in any::<u32>(),
    ) {
        prop_assert_eq!(
            Time::from_unix(secs, nanos),
            Err(TimeError::OutOfRange { secs, nanos })
        );
    }

    #[test]
    fn out_of_range_fields_are_errors_naming_them(
        stamp in stamp(),
        which in 0usize..7,
        bad in 0i64..100,
    ) {
        // Replace one field with a two-digit value outside its range.
        let mut s = Stamp { offset: Some((false, 1, 0)), ..stamp };
        let (position, reason) = match which {
            0 => {
                s.month = if bad % 2 == 0 { 0 } else { 13 + bad % 87 };
                (5, "month out of range")
            }
            1 => {
                s.day = if bad % 2 == 0 { 0 } else { days_in_month(s.year, s.month) + 1 + bad % 10 };
                s.day = s.day.min(99);
                (8, "day out of range")
            }
            2 => { s.hour = 24 + bad % 76; (11, "hour out of range") }
            3 => { s.minute = 60 + bad % 40; (14, "minute out of range") }
            // Leap seconds included: Go rejects them too.
            4 => { s.second = 60 + bad % 40; (17, "second out of range") }
            5 => { s.offset = Some((bad % 2 == 0, 24 + bad % 76, 0)); (19, "offset out of range") }
            _ => { s.offset = Some((bad % 2 == 0, 1, 60 + bad % 40)); (19, "offset out of range") }
        };
        let text = s.text();
        let position = if position == 19 && !s.fraction.is_empty() {
            position + 1 + s.fraction.len()
        } else {
            position
        };
        prop_assert_eq!(
            Time::parse(&text),
            Err(TimeError::Parse { input: text.clone(), position, reason })
        );
    }

    #[test]
    fn leap_days_exist_only_in_leap_years(y in 0i64..=9999) {
        let text = format!("{y:04}-02-29T12:00:00Z");
        prop_assert_eq!(Time::parse(&text).is_ok(), is_leap(y), "{}", text);
    }
}
