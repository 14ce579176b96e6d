//! One level of a CEL environment as read from a compact IR (Format 14.4,
//! `ir.compact`): its declarations in flat tables — every name in one
//! text, the types in one list that refers to itself by index, the
//! objects' fields in one list — built into [`Type`]s, maps and [`Slot`]s
//! the first time the level is asked for them ([`Level::build`]). A
//! session of a compiled package reads only its environments' slot counts,
//! so an open builds none of the maps, object types and names a level
//! declares.
//!
//! What is read is what [`super::EnvLevel`]'s derived reader reads, through
//! the same calls of serde's data model (so the IR's nesting bound counts
//! the same levels) and with the same outcome: a variant index out of
//! range, a missing element or a string that is not UTF-8 is an error; a
//! repeated name in a map keeps its first place and its last type, as an
//! [`IndexMap`](indexmap::IndexMap) read keeps it.

use std::fmt;
use std::sync::Arc;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

use super::{ByName, Decls, Slot};
use crate::cel::types::{ObjectType, Type};

/// A name: a range of [`Level::text`].
type Span = (u32, u32);

/// No field (the end of an object's field list).
const NONE: u32 = u32::MAX;

/// A type, its parts by index into [`Level::types`] (always earlier
/// entries: a type's parts are read before it).
#[derive(Debug, Clone)]
enum Ty {
    Bool,
    Int,
    Double,
    String,
    Dyn,
    List(u32),
    Map(u32, u32),
    /// An object: its name and its first field in [`Level::fields`].
    Object(Span, u32),
}

/// A field of an object: its name, its type and the object's next field
/// (always a later entry, or [`NONE`]).
#[derive(Debug, Clone)]
struct Field {
    name: Span,
    ty: u32,
    next: u32,
}

/// A level's declarations, flat.
#[derive(Debug, Default, Clone)]
pub(super) struct Level {
    text: String,
    types: Vec<Ty>,
    fields: Vec<Field>,
    vars: Vec<(Span, u32)>,
    slots: Vec<(Span, u32)>,
}

fn index<E: de::Error>(n: usize) -> Result<u32, E> {
    u32::try_from(n)
        .ok()
        .filter(|&i| i != NONE)
        .ok_or_else(|| E::custom("an environment too large"))
}

impl Level {
    /// The number of slots the level declares.
    pub(super) fn slot_count(&self) -> usize {
        self.slots.len()
    }

    fn name(&self, (a, b): Span) -> &str {
        self.text.get(a as usize..b as usize).unwrap_or_default()
    }

    fn ty(&self, i: u32) -> Type {
        match self.types.get(i as usize) {
            Some(Ty::Bool) => Type::Bool,
            Some(Ty::Int) => Type::Int,
            Some(Ty::Double) => Type::Double,
            Some(Ty::String) | None => Type::String,
            Some(Ty::Dyn) => Type::Dyn,
            Some(Ty::List(e)) => Type::list(self.ty(*e)),
            Some(Ty::Map(k, v)) => Type::map(self.ty(*k), self.ty(*v)),
            Some(Ty::Object(name, first)) => {
                let mut o = ObjectType::new(self.name(*name));
                let mut f = *first;
                while let Some(x) = self.fields.get(f as usize) {
                    // A repeated field: its first place, its last type.
                    o.fields
                        .insert(self.name(x.name).to_string(), self.ty(x.ty));
                    f = x.next;
                }
                Type::Object(Arc::new(o))
            }
        }
    }

    /// The declarations as an [`super::EnvLevel`] read would hold them.
    pub(super) fn build(&self) -> Decls {
        let mut vars = ByName::with_capacity_and_hasher(self.vars.len(), Default::default());
        for (n, t) in &self.vars {
            vars.insert(self.name(*n).to_string(), self.ty(*t));
        }
        let slots = self
            .slots
            .iter()
            .map(|(n, t)| Slot {
                name: self.name(*n).to_string(),
                ty: self.ty(*t),
            })
            .collect();
        Decls { vars, slots }
    }

    fn text<E: de::Error>(&mut self, s: &str) -> Result<Span, E> {
        let a = index(self.text.len())?;
        self.text.push_str(s);
        Ok((a, index(self.text.len())?))
    }

    fn push<E: de::Error>(&mut self, t: Ty) -> Result<u32, E> {
        let i = index(self.types.len())?;
        self.types.push(t);
        Ok(i)
    }
}

/// What a level read gives: `base_slots`, the flat declarations,
/// `allow_hit`, `allow_roll`.
pub(super) type Read = (usize, Level, bool, bool);

/// Reads one serialized [`super::EnvLevel`] (a struct of `base_slots`,
/// `vars`, `slots`, `allow_hit`, `allow_roll`) into a flat [`Level`].
pub(super) fn read<'de, D: Deserializer<'de>>(d: D) -> Result<Read, D::Error> {
    struct V;
    impl<'de> Visitor<'de> for V {
        type Value = Read;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("struct EnvLevel")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Read, A::Error> {
            let missing = |i| de::Error::invalid_length(i, &"struct EnvLevel with 5 elements");
            let base_slots: usize = s.next_element()?.ok_or_else(|| missing(0))?;
            // Room for a story's base level (the state object's names and
            // the slots' flattened names): most levels then grow no table.
            let mut l = Level {
                text: String::with_capacity(512),
                types: Vec::with_capacity(32),
                fields: Vec::with_capacity(16),
                ..Level::default()
            };
            s.next_element_seed(Vars(&mut l))?
                .ok_or_else(|| missing(1))?;
            s.next_element_seed(Slots(&mut l))?
                .ok_or_else(|| missing(2))?;
            let hit: bool = s.next_element()?.ok_or_else(|| missing(3))?;
            let roll: bool = s.next_element()?.ok_or_else(|| missing(4))?;
            Ok((base_slots, l, hit, roll))
        }
    }
    d.deserialize_struct(
        "EnvLevel",
        &["base_slots", "vars", "slots", "allow_hit", "allow_roll"],
        V,
    )
}

/// A string, appended to the level's text.
struct Text<'a>(&'a mut Level);

impl<'de> DeserializeSeed<'de> for Text<'_> {
    type Value = Span;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Span, D::Error> {
        d.deserialize_string(self)
    }
}

impl Visitor<'_> for Text<'_> {
    type Value = Span;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Span, E> {
        self.0.text(v)
    }
}

/// A [`Type`], pushed to the level's types: its index.
struct TypeSeed<'a>(&'a mut Level);

const TYPE_VARIANTS: &[&str] = &[
    "Bool", "Int", "Double", "String", "List", "Map", "Dyn", "Object",
];

impl<'de> DeserializeSeed<'de> for TypeSeed<'_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_enum("Type", TYPE_VARIANTS, self)
    }
}

impl<'de> Visitor<'de> for TypeSeed<'_> {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("enum Type")
    }
    fn visit_enum<A: EnumAccess<'de>>(self, a: A) -> Result<u32, A::Error> {
        let (i, v): (u32, _) = a.variant()?;
        let l = self.0;
        let t = match i {
            0 | 1 | 2 | 3 | 6 => {
                v.unit_variant()?;
                match i {
                    0 => Ty::Bool,
                    1 => Ty::Int,
                    2 => Ty::Double,
                    3 => Ty::String,
                    _ => Ty::Dyn,
                }
            }
            4 => Ty::List(v.newtype_variant_seed(TypeSeed(&mut *l))?),
            5 => {
                let (k, x) = v.tuple_variant(2, Pair(&mut *l))?;
                Ty::Map(k, x)
            }
            7 => v.newtype_variant_seed(Object(&mut *l))?,
            _ => {
                return Err(de::Error::invalid_value(
                    de::Unexpected::Unsigned(u64::from(i)),
                    &"variant index 0 <= i < 8",
                ))
            }
        };
        l.push(t)
    }
}

/// `Map`'s two types.
struct Pair<'a>(&'a mut Level);

impl<'de> Visitor<'de> for Pair<'_> {
    type Value = (u32, u32);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("tuple variant Type::Map")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(u32, u32), A::Error> {
        let missing = |i| de::Error::invalid_length(i, &"tuple variant Type::Map with 2 elements");
        let k = s
            .next_element_seed(TypeSeed(&mut *self.0))?
            .ok_or_else(|| missing(0))?;
        let v = s
            .next_element_seed(TypeSeed(&mut *self.0))?
            .ok_or_else(|| missing(1))?;
        Ok((k, v))
    }
}

/// An [`ObjectType`] (`name`, `fields`).
struct Object<'a>(&'a mut Level);

impl<'de> DeserializeSeed<'de> for Object<'_> {
    type Value = Ty;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Ty, D::Error> {
        d.deserialize_struct("ObjectType", &["name", "fields"], self)
    }
}

impl<'de> Visitor<'de> for Object<'_> {
    type Value = Ty;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct ObjectType")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<Ty, A::Error> {
        let missing = |i| de::Error::invalid_length(i, &"struct ObjectType with 2 elements");
        let name = s
            .next_element_seed(Text(&mut *self.0))?
            .ok_or_else(|| missing(0))?;
        let first = s
            .next_element_seed(Fields(&mut *self.0))?
            .ok_or_else(|| missing(1))?;
        Ok(Ty::Object(name, first))
    }
}

/// An object's fields (a map of names to types): the first's index.
struct Fields<'a>(&'a mut Level);

impl<'de> DeserializeSeed<'de> for Fields<'_> {
    type Value = u32;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Fields<'_> {
    type Value = u32;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<u32, A::Error> {
        let l = self.0;
        let (mut first, mut last) = (NONE, NONE);
        while let Some(name) = m.next_key_seed(Text(&mut *l))? {
            let ty = m.next_value_seed(TypeSeed(&mut *l))?;
            let i = index(l.fields.len())?;
            l.fields.push(Field {
                name,
                ty,
                next: NONE,
            });
            match l.fields.get_mut(last as usize) {
                Some(prev) => prev.next = i,
                None => first = i,
            }
            last = i;
        }
        Ok(first)
    }
}

/// The level's `vars` (a map of names to types).
struct Vars<'a>(&'a mut Level);

impl<'de> DeserializeSeed<'de> for Vars<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Vars<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<(), A::Error> {
        let l = self.0;
        l.vars.reserve(m.size_hint().unwrap_or(0).min(4096));
        while let Some(name) = m.next_key_seed(Text(&mut *l))? {
            let ty = m.next_value_seed(TypeSeed(&mut *l))?;
            l.vars.push((name, ty));
        }
        Ok(())
    }
}

/// The level's `slots` (a list of `Slot` structs: `name`, `ty`).
struct Slots<'a>(&'a mut Level);

impl<'de> DeserializeSeed<'de> for Slots<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Slots<'_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a sequence")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(), A::Error> {
        let l = self.0;
        l.slots.reserve(s.size_hint().unwrap_or(0).min(4096));
        while let Some(slot) = s.next_element_seed(SlotSeed(&mut *l))? {
            l.slots.push(slot);
        }
        Ok(())
    }
}

/// One `Slot` struct.
struct SlotSeed<'a>(&'a mut Level);

impl<'de> DeserializeSeed<'de> for SlotSeed<'_> {
    type Value = (Span, u32);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(Span, u32), D::Error> {
        d.deserialize_struct("Slot", &["name", "ty"], self)
    }
}

impl<'de> Visitor<'de> for SlotSeed<'_> {
    type Value = (Span, u32);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("struct Slot")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> Result<(Span, u32), A::Error> {
        let missing = |i| de::Error::invalid_length(i, &"struct Slot with 2 elements");
        let name = s
            .next_element_seed(Text(&mut *self.0))?
            .ok_or_else(|| missing(0))?;
        let ty = s
            .next_element_seed(TypeSeed(&mut *self.0))?
            .ok_or_else(|| missing(1))?;
        Ok((name, ty))
    }
}
