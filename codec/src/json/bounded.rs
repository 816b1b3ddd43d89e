//! A deserializer that refuses to build anything nested deeper than a bound, while letting
//! what is skipped nest as deep as the input goes.
//!
//! serde_json's `Value` (and any recursive type) is dropped, cloned, compared, printed and
//! serialized by recursion: a value kept at 10,000 levels overflows a 2 MiB stack the first
//! time it is dropped, long after it decoded safely. [`Bounded`] wraps a deserializer and
//! counts the levels of sequences and maps *handed to a visitor*, that is, built; past its
//! budget it fails with `nested deeper than N levels where a value is kept`. What a type skips
//! (`deserialize_ignored_any`: unknown fields of a typed object, `IgnoredAny`) is passed to
//! the wrapped deserializer unwrapped and not counted, so a typed object, or object metadata,
//! still decodes out of an object as deep as the server accepts.
//!
//! No client-go counterpart: Go's goroutine stacks grow, so a deep `map[string]interface{}`
//! costs Go memory, not a crash.

use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// `de`, building values at most `levels` deep.
pub(crate) struct Bounded<D> {
    pub(crate) de: D,
    /// Levels of sequences and maps still allowed below this point.
    pub(crate) levels: usize,
    /// The bound as given, for the message.
    pub(crate) bound: usize,
}

struct Wrap<X> {
    inner: X,
    levels: usize,
    bound: usize,
}

impl<X> Wrap<X> {
    fn new(inner: X, levels: usize, bound: usize) -> Self {
        Wrap {
            inner,
            levels,
            bound,
        }
    }
}

fn too_deep<E: de::Error>(bound: usize) -> E {
    E::custom(format_args!(
        "nested deeper than {bound} levels where a value is kept"
    ))
}

macro_rules! forward_wrapped {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
            self.de.$method(Wrap::new(visitor, self.levels, self.bound))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Bounded<D> {
    type Error = D::Error;

    forward_wrapped! {
        deserialize_any deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32
        deserialize_i64 deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32
        deserialize_u64 deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char
        deserialize_str deserialize_string deserialize_bytes deserialize_byte_buf
        deserialize_option deserialize_unit deserialize_seq deserialize_map
        deserialize_identifier
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, D::Error> {
        // Skipped, not built: nothing to bound (the scanner bounds the input's depth).
        self.de.deserialize_ignored_any(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let visitor = Wrap::new(visitor, self.levels, self.bound);
        self.de.deserialize_unit_struct(name, visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let visitor = Wrap::new(visitor, self.levels, self.bound);
        self.de.deserialize_newtype_struct(name, visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let visitor = Wrap::new(visitor, self.levels, self.bound);
        self.de.deserialize_tuple(len, visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let visitor = Wrap::new(visitor, self.levels, self.bound);
        self.de.deserialize_tuple_struct(name, len, visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let visitor = Wrap::new(visitor, self.levels, self.bound);
        self.de.deserialize_struct(name, fields, visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, D::Error> {
        let visitor = Wrap::new(visitor, self.levels, self.bound);
        self.de.deserialize_enum(name, variants, visitor)
    }

    fn is_human_readable(&self) -> bool {
        self.de.is_human_readable()
    }
}

macro_rules! forward_scalar {
    ($($method:ident($ty:ty))*) => {$(
        fn $method<E: de::Error>(self, value: $ty) -> Result<V::Value, E> {
            self.inner.$method(value)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for Wrap<V> {
    type Value = V::Value;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.inner.expecting(formatter)
    }

    forward_scalar! {
        visit_bool(bool) visit_i8(i8) visit_i16(i16) visit_i32(i32) visit_i64(i64)
        visit_i128(i128) visit_u8(u8) visit_u16(u16) visit_u32(u32) visit_u64(u64)
        visit_u128(u128) visit_f32(f32) visit_f64(f64) visit_char(char) visit_str(&str)
        visit_borrowed_str(&'de str) visit_string(String) visit_bytes(&[u8])
        visit_borrowed_bytes(&'de [u8]) visit_byte_buf(Vec<u8>)
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D2: Deserializer<'de>>(self, de: D2) -> Result<V::Value, D2::Error> {
        self.inner.visit_some(Bounded {
            de,
            levels: self.levels,
            bound: self.bound,
        })
    }

    fn visit_newtype_struct<D2: Deserializer<'de>>(self, de: D2) -> Result<V::Value, D2::Error> {
        self.inner.visit_newtype_struct(Bounded {
            de,
            levels: self.levels,
            bound: self.bound,
        })
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        let Some(levels) = self.levels.checked_sub(1) else {
            return Err(too_deep(self.bound));
        };
        self.inner.visit_seq(Wrap::new(seq, levels, self.bound))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        let Some(levels) = self.levels.checked_sub(1) else {
            return Err(too_deep(self.bound));
        };
        self.inner.visit_map(Wrap::new(map, levels, self.bound))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner
            .visit_enum(Wrap::new(data, self.levels, self.bound))
    }
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Wrap<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Bounded {
            de,
            levels: self.levels,
            bound: self.bound,
        })
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, A::Error> {
        self.inner
            .next_element_seed(Wrap::new(seed, self.levels, self.bound))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.inner
            .next_key_seed(Wrap::new(seed, self.levels, self.bound))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.inner
            .next_value_seed(Wrap::new(seed, self.levels, self.bound))
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Wrap<A> {
    type Error = A::Error;
    type Variant = Wrap<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<(T::Value, Self::Variant), A::Error> {
        let (levels, bound) = (self.levels, self.bound);
        let (value, variant) = self.inner.variant_seed(Wrap::new(seed, levels, bound))?;
        Ok((value, Wrap::new(variant, levels, bound)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Wrap<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.inner
            .newtype_variant_seed(Wrap::new(seed, self.levels, self.bound))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.inner
            .tuple_variant(len, Wrap::new(visitor, self.levels, self.bound))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.inner
            .struct_variant(fields, Wrap::new(visitor, self.levels, self.bound))
    }
}
