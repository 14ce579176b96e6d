//! The string table of the IR's binary form (Format 14.4, `ir.compact`):
//! every string of the IR stored once, in one UTF-8 text, and written
//! where it occurs as its index in the table.
//!
//! Writing, [`Tabled`] ([`tabled`]) wraps any serializer: a string it is given is
//! looked up in (or added to) a [`TableWriter`] and written as its index
//! (`serialize_u32`); everything else goes through unchanged. Reading,
//! [`Strings`] is the table read back (its text checked as UTF-8 once),
//! and [`super::Nesting::with_strings`] makes the bounded deserializer
//! read every string as an index into it. A string read so is handed to
//! the visitor as a `&str` of the table's text; [`super::shared_str`]
//! (an `Arc<str>` of the IR) then takes the one `Arc<str>` made for that
//! table entry ([`interned`]), so a name the IR holds in many places is
//! one allocation, made once.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::Arc;

use serde::ser::{
    self, Serialize, SerializeMap, SerializeSeq, SerializeStruct, SerializeStructVariant,
    SerializeTuple, SerializeTupleStruct, SerializeTupleVariant, Serializer,
};

/// The table as it is written: each distinct string once, in the order
/// first met (so the same IR always gives the same bytes).
#[derive(Default)]
pub struct TableWriter {
    index: RefCell<HashMap<String, u32>>,
    text: RefCell<String>,
    lens: RefCell<Vec<u32>>,
}

impl TableWriter {
    /// An empty table.
    pub fn new() -> TableWriter {
        TableWriter::default()
    }

    /// The index of `s`, added when new; `None` past `u32::MAX` strings or
    /// a string longer than `u32::MAX` bytes.
    fn index_of(&self, s: &str) -> Option<u32> {
        if let Some(&i) = self.index.borrow().get(s) {
            return Some(i);
        }
        let mut lens = self.lens.borrow_mut();
        let i = u32::try_from(lens.len()).ok()?;
        lens.push(u32::try_from(s.len()).ok()?);
        self.text.borrow_mut().push_str(s);
        self.index.borrow_mut().insert(s.to_owned(), i);
        Some(i)
    }

    /// The byte length of each string, in index order, and their text
    /// joined.
    pub fn into_parts(self) -> (Vec<u32>, String) {
        (self.lens.into_inner(), self.text.into_inner())
    }
}

/// The table as it is read: the strings' text, checked as UTF-8 once, and
/// where each one ends.
#[derive(Debug)]
pub struct Strings {
    text: Arc<str>,
    ends: Vec<u32>,
}

impl Strings {
    /// The table of `text` cut at `lens` (each string's byte length, in
    /// index order); `None` when the lengths do not add up to the text's
    /// or a cut falls inside a character.
    pub fn new(text: &str, mut lens: Vec<u32>) -> Option<Strings> {
        let mut end = 0usize;
        for l in &mut lens {
            end = end.checked_add(*l as usize)?;
            if !text.is_char_boundary(end) {
                return None;
            }
            *l = u32::try_from(end).ok()?;
        }
        (end == text.len()).then(|| Strings {
            text: text.into(),
            ends: lens,
        })
    }

    /// String `i`.
    pub fn get(&self, i: u32) -> Option<&str> {
        let i = i as usize;
        let end = *self.ends.get(i)? as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.text.get(start..end)
    }

    /// The table's text, shared: what [`interning_in`] hands out ranges of.
    pub fn text(&self) -> Arc<str> {
        self.text.clone()
    }

    /// How many strings the table holds.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }
}

thread_local! {
    /// The `Arc<str>` made for each table entry so far, while a table is
    /// read on this thread ([`interning_in`]).
    static INTERNED: RefCell<Vec<Option<Arc<str>>>> = const { RefCell::new(Vec::new()) };
    /// The table entry being handed to a visitor: its index, and the
    /// address and length of its text.
    static CURRENT: Cell<(usize, usize, usize)> = const { Cell::new((usize::MAX, 0, 0)) };
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    /// The table's text while it is read, when shared ([`interning_in`]).
    static TEXT: RefCell<Option<Arc<str>>> = const { RefCell::new(None) };
}

/// Runs `f` (a read through a table of `n` strings) with one `Arc<str>`
/// per table entry shared by every [`super::shared_str`] that reads it;
/// the table's own references are dropped when `f` returns. A read
/// within `f` on the same thread gets a table of its own, and the outer
/// one is back when it returns. With `text` (the table's text, shared), a
/// string of the table may be held as a range of it ([`slice_of`]): no
/// allocation of its own.
pub fn interning_in<T>(n: usize, text: Option<Arc<str>>, f: impl FnOnce() -> T) -> T {
    struct Restore(
        bool,
        Vec<Option<Arc<str>>>,
        (usize, usize, usize),
        Option<Arc<str>>,
    );
    impl Drop for Restore {
        fn drop(&mut self) {
            ACTIVE.with(|a| a.set(self.0));
            CURRENT.with(|c| c.set(self.2));
            INTERNED.with(|v| *v.borrow_mut() = std::mem::take(&mut self.1));
            TEXT.with(|t| *t.borrow_mut() = self.3.take());
        }
    }
    let fresh = vec![None; n];
    let outer = INTERNED.with(|v| std::mem::replace(&mut *v.borrow_mut(), fresh));
    let _restore = Restore(
        ACTIVE.with(|a| a.replace(true)),
        outer,
        CURRENT.with(|c| c.replace((usize::MAX, 0, 0))),
        TEXT.with(|t| std::mem::replace(&mut *t.borrow_mut(), text)),
    );
    f()
}

/// When `s` lies in the text of the table being read ([`interning_in`]):
/// that text, shared, and where `s` is in it.
pub(crate) fn slice_of(s: &str) -> Option<(Arc<str>, std::ops::Range<u32>)> {
    if !ACTIVE.with(Cell::get) {
        return None;
    }
    TEXT.with(|t| {
        let t = t.borrow();
        let t = t.as_ref()?;
        let start = (s.as_ptr() as usize).checked_sub(t.as_ptr() as usize)?;
        let end = start.checked_add(s.len())?;
        (end <= t.len()).then_some(())?;
        Some((
            t.clone(),
            u32::try_from(start).ok()?..u32::try_from(end).ok()?,
        ))
    })
}

/// Runs `f` handing table entry `i`, text `s`, to a visitor.
pub(super) fn visiting<T>(i: u32, s: &str, f: impl FnOnce() -> T) -> T {
    let prev = CURRENT.with(|c| c.replace((i as usize, s.as_ptr() as usize, s.len())));
    let r = f();
    CURRENT.with(|c| c.set(prev));
    r
}

/// The shared `Arc<str>` of `s` when `s` is the table entry being read
/// ([`interning_in`]), made the first time; `None` otherwise.
pub(crate) fn interned(s: &str) -> Option<Arc<str>> {
    if !ACTIVE.with(Cell::get) {
        return None;
    }
    let (i, ptr, len) = CURRENT.with(Cell::get);
    if ptr != s.as_ptr() as usize || len != s.len() {
        return None;
    }
    INTERNED.with(|v| {
        let mut v = v.borrow_mut();
        let slot = v.get_mut(i)?;
        Some(slot.get_or_insert_with(|| Arc::from(s)).clone())
    })
}

/// A serializer that writes every string as its index in a
/// [`TableWriter`].
pub struct Tabled<'a, S> {
    inner: S,
    t: &'a TableWriter,
}

/// A value serialized through [`Tabled`].
struct Wrap<'a, T: ?Sized>(&'a T, &'a TableWriter);

/// `v`, serialized with its strings written into `t` ([`Tabled`]).
pub fn tabled<'a, T: Serialize + ?Sized>(v: &'a T, t: &'a TableWriter) -> impl Serialize + 'a {
    Wrap(v, t)
}

impl<T: Serialize + ?Sized> Serialize for Wrap<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(Tabled {
            inner: s,
            t: self.1,
        })
    }
}

/// A compound serializer of [`Tabled`].
pub struct Compound<'a, C> {
    inner: C,
    t: &'a TableWriter,
}

macro_rules! forward_ser {
    ($($m:ident: $t:ty),*) => {$(
        fn $m(self, v: $t) -> Result<S::Ok, S::Error> {
            self.inner.$m(v)
        }
    )*};
}

impl<'a, S: Serializer> Serializer for Tabled<'a, S> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = Compound<'a, S::SerializeSeq>;
    type SerializeTuple = Compound<'a, S::SerializeTuple>;
    type SerializeTupleStruct = Compound<'a, S::SerializeTupleStruct>;
    type SerializeTupleVariant = Compound<'a, S::SerializeTupleVariant>;
    type SerializeMap = Compound<'a, S::SerializeMap>;
    type SerializeStruct = Compound<'a, S::SerializeStruct>;
    type SerializeStructVariant = Compound<'a, S::SerializeStructVariant>;

    forward_ser!(
        serialize_bool: bool,
        serialize_i8: i8,
        serialize_i16: i16,
        serialize_i32: i32,
        serialize_i64: i64,
        serialize_i128: i128,
        serialize_u8: u8,
        serialize_u16: u16,
        serialize_u32: u32,
        serialize_u64: u64,
        serialize_u128: u128,
        serialize_f32: f32,
        serialize_f64: f64,
        serialize_char: char,
        serialize_bytes: &[u8]
    );

    fn serialize_str(self, v: &str) -> Result<S::Ok, S::Error> {
        let i = self
            .t
            .index_of(v)
            .ok_or_else(|| <S::Error as ser::Error>::custom("too many strings"))?;
        self.inner.serialize_u32(i)
    }

    fn serialize_none(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_none()
    }

    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<S::Ok, S::Error> {
        self.inner.serialize_some(&Wrap(v, self.t))
    }

    fn serialize_unit(self) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit()
    }

    fn serialize_unit_struct(self, name: &'static str) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit_struct(name)
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_unit_variant(name, index, variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_newtype_struct(name, &Wrap(v, self.t))
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        v: &T,
    ) -> Result<S::Ok, S::Error> {
        self.inner
            .serialize_newtype_variant(name, index, variant, &Wrap(v, self.t))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, S::Error> {
        let t = self.t;
        self.inner
            .serialize_seq(len)
            .map(|inner| Compound { inner, t })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, S::Error> {
        let t = self.t;
        self.inner
            .serialize_tuple(len)
            .map(|inner| Compound { inner, t })
    }

    fn serialize_tuple_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, S::Error> {
        let t = self.t;
        self.inner
            .serialize_tuple_struct(name, len)
            .map(|inner| Compound { inner, t })
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, S::Error> {
        let t = self.t;
        self.inner
            .serialize_tuple_variant(name, index, variant, len)
            .map(|inner| Compound { inner, t })
    }

    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, S::Error> {
        let t = self.t;
        self.inner
            .serialize_map(len)
            .map(|inner| Compound { inner, t })
    }

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        let t = self.t;
        self.inner
            .serialize_struct(name, len)
            .map(|inner| Compound { inner, t })
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, S::Error> {
        let t = self.t;
        self.inner
            .serialize_struct_variant(name, index, variant, len)
            .map(|inner| Compound { inner, t })
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }
}

impl<C: SerializeSeq> SerializeSeq for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
        self.inner.serialize_element(&Wrap(v, self.t))
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: SerializeTuple> SerializeTuple for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
        self.inner.serialize_element(&Wrap(v, self.t))
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: SerializeTupleStruct> SerializeTupleStruct for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
        self.inner.serialize_field(&Wrap(v, self.t))
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: SerializeTupleVariant> SerializeTupleVariant for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
        self.inner.serialize_field(&Wrap(v, self.t))
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: SerializeMap> SerializeMap for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, k: &T) -> Result<(), C::Error> {
        self.inner.serialize_key(&Wrap(k, self.t))
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, v: &T) -> Result<(), C::Error> {
        self.inner.serialize_value(&Wrap(v, self.t))
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: SerializeStruct> SerializeStruct for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), C::Error> {
        self.inner.serialize_field(key, &Wrap(v, self.t))
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        self.inner.skip_field(key)
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

impl<C: SerializeStructVariant> SerializeStructVariant for Compound<'_, C> {
    type Ok = C::Ok;
    type Error = C::Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        v: &T,
    ) -> Result<(), C::Error> {
        self.inner.serialize_field(key, &Wrap(v, self.t))
    }
    fn skip_field(&mut self, key: &'static str) -> Result<(), C::Error> {
        self.inner.skip_field(key)
    }
    fn end(self) -> Result<C::Ok, C::Error> {
        self.inner.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[test]
    fn a_table_must_cut_its_text_at_character_boundaries_and_whole() {
        assert!(Strings::new("abé", vec![1, 3]).is_some());
        assert!(Strings::new("abé", vec![1, 2]).is_none(), "short");
        assert!(Strings::new("abé", vec![1, 3, 1]).is_none(), "long");
        assert!(Strings::new("abé", vec![3, 1]).is_none(), "inside é");
        assert!(Strings::new("", vec![0, 0]).is_some());
        let t = Strings::new("abé", vec![1, 0, 3]).unwrap();
        assert_eq!(
            (t.get(0), t.get(1), t.get(2), t.get(3)),
            (Some("a"), Some(""), Some("bé"), None)
        );
    }

    /// A read within a read (one thread) has its own entries; the outer
    /// read's are back after it, and a string that is not the entry being
    /// read is not interned.
    #[test]
    fn a_read_within_a_read_interns_apart() {
        let (x, y) = (String::from("x"), String::from("y"));
        interning_in(1, None, || {
            let a = visiting(0, &x, || interned(&x)).unwrap();
            let inner = interning_in(1, None, || visiting(0, &y, || interned(&y))).unwrap();
            assert_eq!((&*a, &*inner), ("x", "y"));
            let b = visiting(0, &x, || interned(&x)).unwrap();
            assert!(Arc::ptr_eq(&a, &b));
            assert!(visiting(0, &x, || interned(&y)).is_none());
        });
        assert!(visiting(0, &x, || interned(&x)).is_none());
    }

    /// Each distinct string is written once; read back, every `Arc<str>`
    /// of one string is the same allocation, and a `String` is its own.
    #[test]
    fn strings_are_written_once_and_read_back_shared() {
        #[derive(serde::Serialize, Deserialize, PartialEq, Debug)]
        struct T {
            #[serde(deserialize_with = "crate::wire::shared_strs")]
            names: Vec<Arc<str>>,
            #[serde(deserialize_with = "crate::wire::shared_str")]
            one: Arc<str>,
            plain: String,
            map: std::collections::BTreeMap<String, u8>,
        }
        let t = T {
            names: vec!["kai".into(), "mia".into(), "kai".into()],
            one: "mia".into(),
            plain: "kai".into(),
            map: [("mia".to_string(), 1)].into(),
        };
        let table = TableWriter::new();
        let body = postcard::to_allocvec(&tabled(&t, &table)).unwrap();
        let (lens, text) = table.into_parts();
        assert_eq!((lens, text.as_str()), (vec![3, 3], "kaimia"));
        let strings = Strings::new(&text, vec![3, 3]).unwrap();
        let n = strings.len();
        let nest = crate::wire::Nesting::with_strings(10, strings);
        let mut de = postcard::Deserializer::from_bytes(&body);
        let back = interning_in(n, None, || T::deserialize(nest.wrap(&mut de))).unwrap();
        assert_eq!(back, t);
        assert!(Arc::ptr_eq(&back.names[0], &back.names[2]));
        assert!(Arc::ptr_eq(&back.names[1], &back.one));
        // An index past the table is refused.
        let mut bad = body.clone();
        bad[1] = 7;
        let mut de = postcard::Deserializer::from_bytes(&bad);
        let nest = crate::wire::Nesting::with_strings(10, Strings::new(&text, vec![3, 3]).unwrap());
        assert!(interning_in(n, None, || T::deserialize(nest.wrap(&mut de))).is_err());
    }
}
