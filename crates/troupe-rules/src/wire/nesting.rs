//! A nesting bound for any serde format (Format 14.4: the compiled IR is
//! untrusted input). [`Nesting::wrap`] wraps a deserializer so that every
//! level of serde's data model it opens — a sequence, a map, a struct, an
//! enum's variant, an `Option`'s `Some`, a newtype — counts one, and a
//! document nested deeper than the bound is refused with an error instead
//! of recursing on. Every recursive type reads its children through one of
//! those, so this bounds the recursion of every recursive type read (CEL
//! nodes, types and values, compiled values, JSON values) in
//! one place, whatever the format: serde_json's own limit (128) is too low
//! for the IR of a CEL expression at the parser's height bound, and a
//! non-self-describing format such as postcard has none.
//!
//! ```
//! use serde::Deserialize;
//! use troupe::internals::wire::Nesting;
//! let text = format!("{}{}", "[".repeat(40), "]".repeat(40));
//! let mut de = serde_json::Deserializer::from_str(&text);
//! let v = serde_json::Value::deserialize(Nesting::new(40).wrap(&mut de));
//! assert!(v.is_ok());
//! let mut de = serde_json::Deserializer::from_str(&text);
//! let e = serde_json::Value::deserialize(Nesting::new(39).wrap(&mut de)).unwrap_err();
//! assert!(e.to_string().contains("nested more than 39 levels deep"), "{e}");
//! ```

use std::cell::Cell;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// How deep a document may nest, and how deep the reader is now.
#[derive(Debug)]
pub struct Nesting {
    depth: Cell<usize>,
    peak: Cell<usize>,
    max: usize,
    strings: Option<super::strings::Strings>,
}

impl Nesting {
    /// A bound of `max` levels.
    pub fn new(max: usize) -> Nesting {
        Nesting {
            depth: Cell::new(0),
            peak: Cell::new(0),
            max,
            strings: None,
        }
    }

    /// A bound of `max` levels, reading every string as its index in
    /// `strings` (the IR's binary form, Format 14.4: `super::strings`).
    pub fn with_strings(max: usize, strings: super::strings::Strings) -> Nesting {
        Nesting {
            strings: Some(strings),
            ..Nesting::new(max)
        }
    }

    /// Whether the bound was passed: the error then says so, but a format
    /// may drop a custom error's message (postcard does), so the reader
    /// can say it again ([`Nesting::message`]).
    pub fn exceeded(&self) -> bool {
        self.peak.get() > self.max
    }

    /// What a document nested past the bound is refused with.
    pub fn message(&self) -> String {
        format!("nested more than {} levels deep", self.max)
    }

    /// The deepest level reached so far.
    pub fn peak(&self) -> usize {
        self.peak.get()
    }

    /// `d`, bounded by `self`.
    pub fn wrap<'b, D>(&'b self, d: D) -> Bounded<'b, D> {
        Bounded { inner: d, n: self }
    }

    /// Runs `f` one level deeper, or fails when that passes the bound.
    fn deeper<T, E: de::Error>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, E> {
        let d = self.depth.get();
        if d >= self.max {
            self.peak.set(d + 1);
            return Err(E::custom(self.message()));
        }
        self.depth.set(d + 1);
        self.peak.set(self.peak.get().max(d + 1));
        let r = f();
        self.depth.set(d);
        r
    }
}

/// A deserializer bounded by a [`Nesting`].
pub struct Bounded<'b, D> {
    inner: D,
    n: &'b Nesting,
}

struct V<'b, X> {
    inner: X,
    n: &'b Nesting,
}

struct Seed<'b, S> {
    inner: S,
    n: &'b Nesting,
}

struct Access<'b, A> {
    inner: A,
    n: &'b Nesting,
}

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for Seed<'_, S> {
    type Value = S::Value;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<S::Value, D::Error> {
        self.inner.deserialize(Bounded {
            inner: d,
            n: self.n,
        })
    }
}

macro_rules! forward_plain {
    ($($m:ident),*) => {$(
        fn $m<X: Visitor<'de>>(self, v: X) -> Result<X::Value, D::Error> {
            self.inner.$m(V { inner: v, n: self.n })
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Bounded<'_, D> {
    type Error = D::Error;

    forward_plain!(
        deserialize_any,
        deserialize_bool,
        deserialize_i8,
        deserialize_i16,
        deserialize_i32,
        deserialize_i64,
        deserialize_i128,
        deserialize_u8,
        deserialize_u16,
        deserialize_u32,
        deserialize_u64,
        deserialize_u128,
        deserialize_f32,
        deserialize_f64,
        deserialize_char,
        deserialize_bytes,
        deserialize_byte_buf,
        deserialize_option,
        deserialize_unit,
        deserialize_seq,
        deserialize_map,
        deserialize_identifier,
        deserialize_ignored_any
    );

    fn deserialize_str<X: Visitor<'de>>(self, v: X) -> Result<X::Value, D::Error> {
        match &self.n.strings {
            None => self.inner.deserialize_str(V {
                inner: v,
                n: self.n,
            }),
            Some(t) => tabled(self.inner, t, v),
        }
    }

    fn deserialize_string<X: Visitor<'de>>(self, v: X) -> Result<X::Value, D::Error> {
        match &self.n.strings {
            None => self.inner.deserialize_string(V {
                inner: v,
                n: self.n,
            }),
            Some(t) => tabled(self.inner, t, v),
        }
    }

    fn deserialize_unit_struct<X: Visitor<'de>>(
        self,
        name: &'static str,
        v: X,
    ) -> Result<X::Value, D::Error> {
        self.inner.deserialize_unit_struct(
            name,
            V {
                inner: v,
                n: self.n,
            },
        )
    }

    fn deserialize_newtype_struct<X: Visitor<'de>>(
        self,
        name: &'static str,
        v: X,
    ) -> Result<X::Value, D::Error> {
        self.inner.deserialize_newtype_struct(
            name,
            V {
                inner: v,
                n: self.n,
            },
        )
    }

    fn deserialize_tuple<X: Visitor<'de>>(self, len: usize, v: X) -> Result<X::Value, D::Error> {
        self.inner.deserialize_tuple(
            len,
            V {
                inner: v,
                n: self.n,
            },
        )
    }

    fn deserialize_tuple_struct<X: Visitor<'de>>(
        self,
        name: &'static str,
        len: usize,
        v: X,
    ) -> Result<X::Value, D::Error> {
        self.inner.deserialize_tuple_struct(
            name,
            len,
            V {
                inner: v,
                n: self.n,
            },
        )
    }

    fn deserialize_struct<X: Visitor<'de>>(
        self,
        name: &'static str,
        fields: &'static [&'static str],
        v: X,
    ) -> Result<X::Value, D::Error> {
        self.inner.deserialize_struct(
            name,
            fields,
            V {
                inner: v,
                n: self.n,
            },
        )
    }

    fn deserialize_enum<X: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        v: X,
    ) -> Result<X::Value, D::Error> {
        self.inner.deserialize_enum(
            name,
            variants,
            V {
                inner: v,
                n: self.n,
            },
        )
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

/// A string read as its index in table `t`, handed to `v` as the table's
/// text.
fn tabled<'de, D: Deserializer<'de>, X: Visitor<'de>>(
    d: D,
    t: &super::strings::Strings,
    v: X,
) -> Result<X::Value, D::Error> {
    use serde::Deserialize;
    let i = u32::deserialize(d)?;
    let s = t
        .get(i)
        .ok_or_else(|| <D::Error as de::Error>::custom("a string index past the table"))?;
    super::strings::visiting(i, s, || v.visit_str(s))
}

macro_rules! forward_visit {
    ($($m:ident: $t:ty),*) => {$(
        fn $m<E: de::Error>(self, x: $t) -> Result<X::Value, E> {
            self.inner.$m(x)
        }
    )*};
}

impl<'de, X: Visitor<'de>> Visitor<'de> for V<'_, X> {
    type Value = X::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit!(
        visit_bool: bool,
        visit_i8: i8,
        visit_i16: i16,
        visit_i32: i32,
        visit_i64: i64,
        visit_i128: i128,
        visit_u8: u8,
        visit_u16: u16,
        visit_u32: u32,
        visit_u64: u64,
        visit_u128: u128,
        visit_f32: f32,
        visit_f64: f64,
        visit_char: char,
        visit_str: &str,
        visit_borrowed_str: &'de str,
        visit_string: String,
        visit_bytes: &[u8],
        visit_borrowed_bytes: &'de [u8],
        visit_byte_buf: Vec<u8>
    );

    fn visit_none<E: de::Error>(self) -> Result<X::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<X::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<X::Value, D::Error> {
        let n = self.n;
        n.deeper(|| self.inner.visit_some(Bounded { inner: d, n }))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<X::Value, D::Error> {
        let n = self.n;
        n.deeper(|| self.inner.visit_newtype_struct(Bounded { inner: d, n }))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, a: A) -> Result<X::Value, A::Error> {
        let n = self.n;
        n.deeper(|| self.inner.visit_seq(Access { inner: a, n }))
    }

    fn visit_map<A: MapAccess<'de>>(self, a: A) -> Result<X::Value, A::Error> {
        let n = self.n;
        n.deeper(|| self.inner.visit_map(Access { inner: a, n }))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<X::Value, A::Error> {
        let n = self.n;
        n.deeper(|| self.inner.visit_enum(Access { inner: a, n }))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Access<'_, A> {
    type Error = A::Error;

    fn next_element_seed<S: DeserializeSeed<'de>>(
        &mut self,
        seed: S,
    ) -> Result<Option<S::Value>, A::Error> {
        self.inner.next_element_seed(Seed {
            inner: seed,
            n: self.n,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Access<'_, A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        self.inner.next_key_seed(Seed {
            inner: seed,
            n: self.n,
        })
    }

    fn next_value_seed<S: DeserializeSeed<'de>>(&mut self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.next_value_seed(Seed {
            inner: seed,
            n: self.n,
        })
    }

    fn size_hint(&self) -> Option<usize> {
        self.inner.size_hint()
    }
}

impl<'de, 'b, A: EnumAccess<'de>> EnumAccess<'de> for Access<'b, A> {
    type Error = A::Error;
    type Variant = Access<'b, A::Variant>;

    fn variant_seed<S: DeserializeSeed<'de>>(
        self,
        seed: S,
    ) -> Result<(S::Value, Self::Variant), A::Error> {
        let n = self.n;
        let (v, variant) = self.inner.variant_seed(Seed { inner: seed, n })?;
        Ok((v, Access { inner: variant, n }))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Access<'_, A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.inner.unit_variant()
    }

    fn newtype_variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<S::Value, A::Error> {
        self.inner.newtype_variant_seed(Seed {
            inner: seed,
            n: self.n,
        })
    }

    fn tuple_variant<X: Visitor<'de>>(self, len: usize, v: X) -> Result<X::Value, A::Error> {
        self.inner.tuple_variant(
            len,
            V {
                inner: v,
                n: self.n,
            },
        )
    }

    fn struct_variant<X: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        v: X,
    ) -> Result<X::Value, A::Error> {
        self.inner.struct_variant(
            fields,
            V {
                inner: v,
                n: self.n,
            },
        )
    }
}
