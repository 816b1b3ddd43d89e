//! Small serde helpers that give our types Go's `encoding/json` semantics.
//!
//! Go decodes a JSON `null` into a non-pointer field by leaving the field at its zero value,
//! and `omitempty` skips zero values when encoding. serde instead rejects `null` for a
//! `String`, `Vec` or map. [`null_default`] restores Go's behaviour for such fields, and the
//! `is_*` predicates are the `skip_serializing_if` tests for `omitempty`.

use serde::{Deserialize, Deserializer};

/// Deserializes `T`, mapping a JSON `null` to `T::default()` (Go's zero value).
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// `omitempty` for integers.
pub(crate) fn is_zero_i64(v: &i64) -> bool {
    *v == 0
}

/// `omitempty` for 32-bit integers.
pub(crate) fn is_zero_i32(v: &i32) -> bool {
    *v == 0
}
