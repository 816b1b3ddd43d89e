//! A wrapper that keeps credentials out of `Debug` output, logs and error messages.
//!
//! client-go marks such fields with `datapolicy:"token"` / `datapolicy:"password"` tags and
//! redacts them by hand in `rest.Config.String()` and `ExecConfig.String()`. Here the type does
//! it: a [`Secret`] prints as `<redacted>` whatever it holds, so a `#[derive(Debug)]` on a
//! struct that contains one cannot leak it. The value is reached only through
//! [`Secret::expose`], which makes every use of a credential easy to find.
//!
//! Deserializing a `Secret<String>` accepts what sigs.k8s.io/yaml accepts for a string field
//! (a YAML string, or a number or boolean written without quotes, turned into its text), and
//! its errors never repeat the value: serde's usual "invalid type: integer `123`" would print a
//! numeric token.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};

/// A credential (token, password, private key, exec environment value) that never shows itself
/// in `Debug` output.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret<T>(T);

impl<T> Secret<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Self {
        Secret(value)
    }

    /// The wrapped value. Call this only where the credential is put on the wire.
    pub fn expose(&self) -> &T {
        &self.0
    }

    /// Unwraps the value.
    pub fn into_inner(self) -> T {
        self.0
    }
}

impl<T> fmt::Debug for Secret<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

impl From<String> for Secret<String> {
    fn from(value: String) -> Self {
        Secret(value)
    }
}

impl From<&str> for Secret<String> {
    fn from(value: &str) -> Self {
        Secret(value.to_owned())
    }
}

impl From<Vec<u8>> for Secret<Vec<u8>> {
    fn from(value: Vec<u8>) -> Self {
        Secret(value)
    }
}

impl<'de> Deserialize<'de> for Secret<String> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(LenientString { redact: true })
            .map(Secret)
    }
}

/// Deserializes a string field the way sigs.k8s.io/yaml does for a Go `string`: scalars written
/// without quotes (numbers, booleans) become their text. With `redact`, error messages name the
/// type found but never the value.
pub(crate) struct LenientString {
    pub(crate) redact: bool,
}

impl LenientString {
    fn wrong<E: de::Error>(&self, what: &str, shown: &dyn fmt::Display) -> E {
        if self.redact {
            E::custom(format_args!("invalid type: {what}, expected a string"))
        } else {
            E::custom(format_args!(
                "invalid type: {what} `{shown}`, expected a string"
            ))
        }
    }
}

impl<'de> Visitor<'de> for LenientString {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<String, E> {
        Ok(v.to_owned())
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<String, E> {
        Ok(v)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(v.to_string())
    }

    fn visit_unit<E: de::Error>(self) -> Result<String, E> {
        Ok(String::new())
    }

    fn visit_none<E: de::Error>(self) -> Result<String, E> {
        Ok(String::new())
    }

    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<String, E> {
        Err(self.wrong("bytes", &"…"))
    }

    fn visit_seq<A: de::SeqAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.wrong("sequence", &"[…]"))
    }

    fn visit_map<A: de::MapAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.wrong("map", &"{…}"))
    }

    fn visit_enum<A: de::EnumAccess<'de>>(self, _: A) -> Result<String, A::Error> {
        Err(self.wrong("tagged value", &"!…"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_the_value() {
        let token = Secret::from("s3cr3t-token");
        assert_eq!(format!("{token:?}"), "<redacted>");
        assert_eq!(format!("{:?}", Some(&token)), "Some(<redacted>)");
        assert_eq!(token.expose(), "s3cr3t-token");
    }

    #[test]
    fn numbers_and_booleans_become_text() {
        let s: Secret<String> = serde_json::from_str("12345").unwrap();
        assert_eq!(s.expose(), "12345");
        let s: Secret<String> = serde_norway::from_str("true").unwrap();
        assert_eq!(s.expose(), "true");
    }

    #[test]
    fn errors_do_not_repeat_the_value() {
        let err = serde_json::from_str::<Secret<String>>(r#"["hunter2"]"#).unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        let err = serde_norway::from_str::<Secret<String>>("{pass: hunter2}").unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
    }
}
