//! RFC 3339 instants in UTC: `metav1.Time` and `metav1.MicroTime`.
//!
//! Mirrors `k8s.io/apimachinery/pkg/apis/meta/v1/time.go` and `micro_time.go`:
//!
//! * [`Time`] is written with seconds precision (`"2024-01-02T03:04:05Z"`, Go's
//!   `time.RFC3339` on the UTC instant, sub-second digits truncated), as Kubernetes writes
//!   `creationTimestamp` and `deletionTimestamp`.
//! * [`MicroTime`] is written with exactly six fractional digits
//!   (`"2024-01-02T03:04:05.123456Z"`), as Kubernetes writes `Lease.spec.renewTime` and
//!   `Event.eventTime`.
//!
//! Both parse any RFC 3339 timestamp: an optional fraction of any length (kept to the
//! nanosecond), `Z` or a numeric `±hh:mm` offset (converted to UTC), `T`/`Z` in either case.
//!
//! Differences from Go, and why:
//! * Go's zero `Time` is written as JSON `null`; here absence is `Option<Time>` = `None`
//!   (skipped when serializing, and `null` decodes to `None`), so no "zero time" exists.
//! * Years are limited to 0000..=9999, the range RFC 3339 can spell; Go fails to *marshal*
//!   outside that range, we refuse to construct such a value at all.
//! * Go's `MicroTime` parser demands exactly six fractional digits; ours accepts any RFC 3339
//!   input (being liberal on input costs nothing and never loses data).
//! * Leap seconds (`:60`) are rejected, as Go's parser rejects them.
//!
//! Why a type of our own instead of `jiff` or `chrono`: the object model needs only UTC
//! instants, RFC 3339 parse/format, ordering and conversion to [`SystemTime`]: a few hundred
//! lines, no time-zone database, no dependency. The type is `Copy`, 16 bytes, and
//! `Option<Time>` is also 16 bytes (the nanosecond field has a niche), which matters for
//! caches of 100,000 objects carrying two optional timestamps each. k8s-openapi's
//! `jiff::Timestamp` values convert without loss inside our range (see the `k8s_openapi`
//! module). Parsing (in `rfc3339.rs`) never panics: every malformed input is a
//! [`TimeError`] naming the byte where it went wrong.

use std::fmt;
use std::num::NonZeroU32;
use std::str::FromStr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

mod rfc3339;

const NANOS_PER_SEC: u32 = 1_000_000_000;
pub(crate) const SECS_PER_DAY: i64 = 86_400;
/// `0000-01-01T00:00:00Z` as Unix seconds.
pub(crate) const MIN_SECS: i64 = -62_167_219_200;
/// `9999-12-31T23:59:59Z` as Unix seconds.
pub(crate) const MAX_SECS: i64 = 253_402_300_799;

/// An instant in UTC, with nanosecond resolution, between the years 0000 and 9999.
///
/// Serializes as an RFC 3339 string with seconds precision, the wire form of Kubernetes'
/// `metav1.Time`. Ordering is chronological.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Time {
    secs: i64,
    /// Nanoseconds within the second, plus one (so that `Option<Time>` needs no extra space).
    nanos_plus_one: NonZeroU32,
}

/// A [`Time`] that serializes with microsecond precision: Kubernetes' `metav1.MicroTime`.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct MicroTime(pub Time);

/// Why a timestamp could not be parsed or built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TimeError {
    /// The text is not an RFC 3339 timestamp.
    #[error("invalid RFC 3339 time {input:?}: {reason} (at byte {position})")]
    Parse {
        /// The rejected input.
        input: String,
        /// Byte offset of the problem in `input`.
        position: usize,
        /// What was wrong there.
        reason: &'static str,
    },
    /// The instant lies outside the years 0000..=9999, or `nanos` is not below one second.
    #[error(
        "time out of range: {secs}s + {nanos}ns from the Unix epoch (supported: years 0000 to 9999)"
    )]
    OutOfRange {
        /// Seconds from the Unix epoch.
        secs: i64,
        /// Nanoseconds within the second.
        nanos: u32,
    },
}

impl Time {
    /// The Unix epoch, `1970-01-01T00:00:00Z`.
    pub const UNIX_EPOCH: Time = Time {
        secs: 0,
        nanos_plus_one: NonZeroU32::MIN,
    };

    /// Builds a time from seconds and nanoseconds since the Unix epoch.
    pub fn from_unix(secs: i64, nanos: u32) -> Result<Time, TimeError> {
        if !(MIN_SECS..=MAX_SECS).contains(&secs) || nanos >= NANOS_PER_SEC {
            return Err(TimeError::OutOfRange { secs, nanos });
        }
        // `nanos + 1` is in 1..=1e9, so `new` always succeeds; the fallback is unreachable.
        let nanos_plus_one = NonZeroU32::new(nanos + 1).unwrap_or(NonZeroU32::MIN);
        Ok(Time {
            secs,
            nanos_plus_one,
        })
    }

    /// Builds a time from whole seconds since the Unix epoch.
    pub fn from_unix_seconds(secs: i64) -> Result<Time, TimeError> {
        Time::from_unix(secs, 0)
    }

    /// Converts a [`SystemTime`].
    pub fn from_system_time(t: SystemTime) -> Result<Time, TimeError> {
        let (secs, nanos) = match t.duration_since(UNIX_EPOCH) {
            Ok(d) => (
                i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                d.subsec_nanos(),
            ),
            Err(e) => {
                let d = e.duration();
                let secs = i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                if d.subsec_nanos() == 0 {
                    (-secs, 0)
                } else {
                    (-secs - 1, NANOS_PER_SEC - d.subsec_nanos())
                }
            }
        };
        Time::from_unix(secs, nanos)
    }

    /// The current time (clamped to the supported range should the clock be absurd).
    pub fn now() -> Time {
        match Time::from_system_time(SystemTime::now()) {
            Ok(t) => t,
            Err(_) => Time::UNIX_EPOCH,
        }
    }

    /// Whole seconds since the Unix epoch (negative before 1970).
    pub fn unix_seconds(self) -> i64 {
        self.secs
    }

    /// Nanoseconds within the second, `0..1_000_000_000`.
    pub fn subsec_nanos(self) -> u32 {
        self.nanos_plus_one.get() - 1
    }

    /// The same instant as a [`SystemTime`], if the platform can represent it.
    pub fn to_system_time(self) -> Option<SystemTime> {
        let nanos = self.subsec_nanos();
        if self.secs >= 0 {
            UNIX_EPOCH.checked_add(Duration::new(self.secs.unsigned_abs(), nanos))
        } else {
            UNIX_EPOCH
                .checked_sub(Duration::from_secs(self.secs.unsigned_abs()))?
                .checked_add(Duration::from_nanos(u64::from(nanos)))
        }
    }

    /// Drops the sub-second part, as serializing a [`Time`] does.
    pub fn truncate_to_seconds(self) -> Time {
        Time {
            secs: self.secs,
            nanos_plus_one: NonZeroU32::MIN,
        }
    }

    /// Drops digits below the microsecond, as serializing a [`MicroTime`] does.
    pub fn truncate_to_micros(self) -> Time {
        let nanos = self.subsec_nanos() / 1_000 * 1_000;
        Time {
            secs: self.secs,
            nanos_plus_one: NonZeroU32::new(nanos + 1).unwrap_or(NonZeroU32::MIN),
        }
    }

    /// `self + d`, or `None` when the result leaves the supported range.
    pub fn checked_add(self, d: Duration) -> Option<Time> {
        let mut secs = self.secs.checked_add(i64::try_from(d.as_secs()).ok()?)?;
        let mut nanos = self.subsec_nanos() + d.subsec_nanos();
        if nanos >= NANOS_PER_SEC {
            nanos -= NANOS_PER_SEC;
            secs = secs.checked_add(1)?;
        }
        Time::from_unix(secs, nanos).ok()
    }

    /// `self - d`, or `None` when the result leaves the supported range.
    pub fn checked_sub(self, d: Duration) -> Option<Time> {
        let mut secs = self.secs.checked_sub(i64::try_from(d.as_secs()).ok()?)?;
        let (mut nanos, sub) = (self.subsec_nanos(), d.subsec_nanos());
        if nanos < sub {
            nanos += NANOS_PER_SEC;
            secs = secs.checked_sub(1)?;
        }
        Time::from_unix(secs, nanos - sub).ok()
    }

    /// How long after `earlier` this instant is, or `None` if it is before `earlier`.
    pub fn duration_since(self, earlier: Time) -> Option<Duration> {
        if self < earlier {
            return None;
        }
        let (mut secs, mut nanos) = (self.secs - earlier.secs, self.subsec_nanos());
        let sub = earlier.subsec_nanos();
        if nanos < sub {
            nanos += NANOS_PER_SEC;
            secs -= 1;
        }
        Some(Duration::new(secs.unsigned_abs(), nanos - sub))
    }

    /// Parses an RFC 3339 timestamp, e.g. `2024-01-02T03:04:05Z` or
    /// `2024-01-02T05:04:05.5+02:00`.
    pub fn parse(input: &str) -> Result<Time, TimeError> {
        rfc3339::parse(input)
    }

    /// RFC 3339 with seconds precision: `2024-01-02T03:04:05Z` (what [`fmt::Display`] writes).
    pub fn to_rfc3339(self) -> String {
        self.to_string()
    }

    /// RFC 3339 with exactly six fractional digits: `2024-01-02T03:04:05.000000Z`.
    pub fn to_rfc3339_micros(self) -> String {
        MicroTime(self).to_string()
    }

    /// RFC 3339 with nanoseconds, trailing zeros trimmed (Go's `time.RFC3339Nano`).
    pub fn to_rfc3339_nanos(self) -> String {
        let mut out = String::with_capacity(30);
        self.write_date_time(&mut out);
        let nanos = self.subsec_nanos();
        if nanos != 0 {
            let digits = format!("{nanos:09}");
            out.push('.');
            out.push_str(digits.trim_end_matches('0'));
        }
        out.push('Z');
        out
    }

    /// Appends RFC 3339 with seconds precision (`2024-01-02T03:04:05Z`, what
    /// [`fmt::Display`] writes) to `out`, without allocating: for encoders that write many.
    #[inline]
    pub fn write_rfc3339(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.date_time());
        out.push(b'Z');
    }

    /// Appends RFC 3339 with exactly six fractional digits
    /// (`2024-01-02T03:04:05.000000Z`, as a [`MicroTime`] is written) to `out`.
    #[inline]
    pub fn write_rfc3339_micros(self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.date_time());
        out.push(b'.');
        let mut micros = [0u8; 6];
        put_digits(&mut micros, i64::from(self.subsec_nanos() / 1_000));
        out.extend_from_slice(&micros);
        out.push(b'Z');
    }

    fn write_date_time(self, out: &mut String) {
        out.extend(self.date_time().map(char::from));
    }

    /// `YYYY-MM-DDTHH:MM:SS` in ASCII (the year is within 0000..=9999 by construction).
    #[inline]
    fn date_time(self) -> [u8; 19] {
        let days = self.secs.div_euclid(SECS_PER_DAY);
        let rem = self.secs.rem_euclid(SECS_PER_DAY);
        let (y, m, d) = rfc3339::civil_from_days(days);
        let mut out = *b"0000-00-00T00:00:00";
        put_digits(&mut out[0..4], y);
        put_digits(&mut out[5..7], m);
        put_digits(&mut out[8..10], d);
        put_digits(&mut out[11..13], rem / 3600);
        put_digits(&mut out[14..16], rem / 60 % 60);
        put_digits(&mut out[17..19], rem % 60);
        out
    }
}

/// Writes the last `out.len()` decimal digits of `value` (not negative) into `out`.
#[inline]
fn put_digits(out: &mut [u8], mut value: i64) {
    for digit in out.iter_mut().rev() {
        *digit = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

impl fmt::Display for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(20);
        self.write_date_time(&mut s);
        s.push('Z');
        f.write_str(&s)
    }
}

impl fmt::Debug for Time {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Time({})", self.to_rfc3339_nanos())
    }
}

impl FromStr for Time {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<Time, TimeError> {
        Time::parse(s)
    }
}

impl TryFrom<SystemTime> for Time {
    type Error = TimeError;
    fn try_from(t: SystemTime) -> Result<Time, TimeError> {
        Time::from_system_time(t)
    }
}

impl Serialize for Time {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Time, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Time;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an RFC 3339 timestamp string")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Time, E> {
                Time::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_str(V)
    }
}

impl MicroTime {
    /// The current time.
    pub fn now() -> MicroTime {
        MicroTime(Time::now())
    }

    /// Parses any RFC 3339 timestamp.
    pub fn parse(input: &str) -> Result<MicroTime, TimeError> {
        Time::parse(input).map(MicroTime)
    }
}

impl From<Time> for MicroTime {
    fn from(t: Time) -> MicroTime {
        MicroTime(t)
    }
}

impl From<MicroTime> for Time {
    fn from(t: MicroTime) -> Time {
        t.0
    }
}

impl fmt::Display for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(27);
        self.0.write_date_time(&mut s);
        f.write_str(&s)?;
        write!(f, ".{:06}Z", self.0.subsec_nanos() / 1_000)
    }
}

impl fmt::Debug for MicroTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MicroTime({self})")
    }
}

impl FromStr for MicroTime {
    type Err = TimeError;
    fn from_str(s: &str) -> Result<MicroTime, TimeError> {
        MicroTime::parse(s)
    }
}

impl Serialize for MicroTime {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for MicroTime {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<MicroTime, D::Error> {
        Time::deserialize(deserializer).map(MicroTime)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Time {
        Time::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn option_time_is_as_small_as_time() {
        assert_eq!(std::mem::size_of::<Time>(), 16);
        assert_eq!(std::mem::size_of::<Option<Time>>(), 16);
    }

    #[test]
    fn parse_and_format_seconds() {
        let x = t("2024-01-02T03:04:05Z");
        assert_eq!(x.unix_seconds(), 1_704_164_645);
        assert_eq!(x.subsec_nanos(), 0);
        assert_eq!(x.to_string(), "2024-01-02T03:04:05Z");
        assert_eq!(t("1970-01-01T00:00:00Z"), Time::UNIX_EPOCH);
    }

    #[test]
    fn the_byte_writers_write_what_format_writes() {
        let seed = 0x2545_f491_4f6c_dd1du64;
        println!("seed {seed:#x}");
        let mut rng = seed;
        let mut samples = vec![
            (0, 0),
            (1, 999_999_999),
            (-1, 1),
            (86_399, 123_456_789),
            (951_782_400, 1_000),
            (MIN_SECS, 0),
            (MAX_SECS, 999_999_999),
        ];
        for _ in 0..10_000 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let secs = MIN_SECS + (rng % (MAX_SECS - MIN_SECS + 1) as u64) as i64;
            samples.push((secs, (rng >> 32) as u32 % NANOS_PER_SEC));
        }
        for (secs, nanos) in samples {
            let time = Time::from_unix(secs, nanos).unwrap();
            // What `Display` wrote with `write!` before the byte writers.
            let (y, m, d) = rfc3339::civil_from_days(secs.div_euclid(SECS_PER_DAY));
            let rem = secs.rem_euclid(SECS_PER_DAY);
            let (hh, mm, ss) = (rem / 3600, rem / 60 % 60, rem % 60);
            let date_time = format!("{y:04}-{m:02}-{d:02}T{hh:02}:{mm:02}:{ss:02}");
            let mut out = Vec::new();
            time.write_rfc3339(&mut out);
            assert_eq!(out, format!("{date_time}Z").as_bytes(), "{secs}.{nanos}");
            assert_eq!(time.to_rfc3339(), format!("{date_time}Z"));
            out.clear();
            time.write_rfc3339_micros(&mut out);
            let micros = format!("{date_time}.{:06}Z", nanos / 1_000);
            assert_eq!(out, micros.as_bytes(), "{secs}.{nanos}");
        }
    }

    #[test]
    fn offsets_are_converted_to_utc() {
        assert_eq!(
            t("2024-01-02T05:04:05+02:00").to_string(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            t("2024-01-01T23:04:05-04:00").to_string(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            t("2024-01-02t03:04:05z").to_string(),
            "2024-01-02T03:04:05Z"
        );
    }

    #[test]
    fn fractions() {
        let x = t("2024-01-02T03:04:05.123456789Z");
        assert_eq!(x.subsec_nanos(), 123_456_789);
        assert_eq!(x.to_string(), "2024-01-02T03:04:05Z", "Time truncates");
        assert_eq!(x.to_rfc3339_micros(), "2024-01-02T03:04:05.123456Z");
        assert_eq!(x.to_rfc3339_nanos(), "2024-01-02T03:04:05.123456789Z");
        assert_eq!(t("2024-01-02T03:04:05.5Z").subsec_nanos(), 500_000_000);
        assert_eq!(
            t("2024-01-02T03:04:05.5Z").to_rfc3339_nanos(),
            "2024-01-02T03:04:05.5Z"
        );
        // Digits past the nanosecond are dropped, as Go does.
        assert_eq!(
            t("2024-01-02T03:04:05.1234567891234Z").subsec_nanos(),
            123_456_789
        );
        assert_eq!(
            MicroTime(t("2024-01-02T03:04:05Z")).to_string(),
            "2024-01-02T03:04:05.000000Z"
        );
    }

    #[test]
    fn range_edges_and_leap_days() {
        assert_eq!(t("0000-01-01T00:00:00Z").unix_seconds(), MIN_SECS);
        assert_eq!(t("9999-12-31T23:59:59Z").unix_seconds(), MAX_SECS);
        assert_eq!(
            t("0001-01-01T00:00:00Z").to_string(),
            "0001-01-01T00:00:00Z"
        );
        assert_eq!(
            t("2000-02-29T12:00:00Z").to_string(),
            "2000-02-29T12:00:00Z"
        );
        assert_eq!(t("1969-12-31T23:59:59.25Z").unix_seconds(), -1);
        assert_eq!(
            t("1969-12-31T23:59:59.25Z").to_rfc3339_nanos(),
            "1969-12-31T23:59:59.25Z"
        );
        assert!(Time::parse("1900-02-29T00:00:00Z").is_err());
        assert!(Time::parse("0000-01-01T00:00:00+00:01").is_err());
        assert!(Time::from_unix(MAX_SECS + 1, 0).is_err());
        assert!(Time::from_unix(0, 1_000_000_000).is_err());
    }

    #[test]
    fn serde_round_trip() {
        let x = t("2024-01-02T03:04:05.987Z");
        assert_eq!(
            serde_json::to_string(&x).unwrap(),
            "\"2024-01-02T03:04:05Z\""
        );
        let m = MicroTime(x);
        assert_eq!(
            serde_json::to_string(&m).unwrap(),
            "\"2024-01-02T03:04:05.987000Z\""
        );
        let back: MicroTime = serde_json::from_str("\"2024-01-02T03:04:05.987000Z\"").unwrap();
        assert_eq!(back, m);
        let none: Option<Time> = serde_json::from_str("null").unwrap();
        assert_eq!(none, None);
        let err = serde_json::from_str::<Time>("\"yesterday\"").unwrap_err();
        assert!(
            err.to_string()
                .contains("invalid RFC 3339 time \"yesterday\""),
            "{err}"
        );
        assert!(serde_json::from_str::<Time>("12").is_err());
    }

    #[test]
    fn arithmetic_and_system_time() {
        let x = t("2024-01-02T03:04:05.9Z");
        let y = x.checked_add(Duration::from_millis(200)).unwrap();
        assert_eq!(y.to_rfc3339_nanos(), "2024-01-02T03:04:06.1Z");
        assert_eq!(y.duration_since(x), Some(Duration::from_millis(200)));
        assert_eq!(x.duration_since(y), None);
        assert_eq!(y.checked_sub(Duration::from_millis(200)), Some(x));
        assert!(x.checked_add(Duration::from_secs(u64::MAX)).is_none());
        let before_epoch = t("1969-12-31T23:59:58.75Z");
        assert_eq!(
            Time::from_system_time(before_epoch.to_system_time().unwrap()),
            Ok(before_epoch)
        );
        assert_eq!(Time::from_system_time(x.to_system_time().unwrap()), Ok(x));
        assert!(Time::now() > x);
        assert_eq!(
            x.truncate_to_seconds().to_rfc3339_nanos(),
            "2024-01-02T03:04:05Z"
        );
    }
}
