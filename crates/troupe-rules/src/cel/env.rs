//! Declarations an expression is checked against (Format 11.2, 11.3), and the
//! activation that binds their values by slot index.

use std::sync::Arc;

use indexmap::IndexMap;

/// An environment's maps by name, hashed with foldhash rather than SipHash:
/// every story's check and compile declares its environments afresh, a
/// hash or two per slot (docs/performance.md, Run AE). Order is insertion
/// order whatever the hasher.
type ByName<V> = IndexMap<String, V, foldhash::fast::RandomState>;

use super::error::{EvalError, EvalErrorKind};
use super::types::{ObjectType, Type};
use super::value::Value;

/// One value an activation holds: a declared variable that is not an object,
/// or a leaf field of an object-typed variable, by flattened name
/// (`turn`, `state.trust`, `state.kai.mood`).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Slot {
    /// The flattened name.
    pub name: String,
    /// The slot's type (never an object).
    pub ty: Type,
}

/// The declarations of one evaluation context: variables and their types,
/// and whether `hit()` (entry conditions, Format 11.4) and `roll()` (11.5)
/// may be called.
///
/// An environment may extend a shared base ([`Env::extending`]): the base's
/// variables and slots come first (slot indices `0..base.slot_count()`), its
/// own after them. Per-owner environments of one story share one base, so
/// building them costs the owner's declarations, not the story's (Format
/// 16.2: time linear in the input).
///
/// Serialized as its own level only — `base_slots`, `vars`, `slots`,
/// `allow_hit`, `allow_roll` — without the base (a compiled story writes
/// the shared base once, Format 14.4) and without the slot index, which is
/// rebuilt from `slots` when read. A level read with `base_slots > 0` has
/// no base until [`Env::link_base`] gives it one. A level read from a
/// format that is not human-readable (`ir.compact`, Format 14.4) is held
/// in flat tables until its declarations are first asked for (`flat`).
#[derive(Debug, Clone, Default)]
pub struct Env {
    base: Option<Arc<Env>>,
    /// Slots of `base` (and its bases), the offset of this level's slots.
    base_slots: usize,
    /// This level's declarations, built from `flat` the first time they
    /// are read ([`Env::decls`]).
    decls: std::sync::OnceLock<Decls>,
    /// A level read from a compact IR, until its declarations are built.
    flat: Option<Box<flat::Level>>,
    /// This level's slots by name, built the first time a name is looked
    /// up or declared ([`Env::slot_index`]): a level read from an IR is
    /// looked up by name only when a program is compiled against it, which
    /// a session of a compiled package never does (Format 14.4).
    slot_index: std::sync::OnceLock<ByName<usize>>,
    /// `hit()` is declared (entry conditions only).
    pub allow_hit: bool,
    /// `roll()` is declared.
    pub allow_roll: bool,
}

mod flat;

/// One level's declarations: its variables and the slots they take.
#[derive(Debug, Clone, Default)]
struct Decls {
    vars: ByName<Type>,
    slots: Vec<Slot>,
}

impl Env {
    /// This level's declarations (built from its flat form the first time,
    /// for a level read from a compact IR).
    fn decls(&self) -> &Decls {
        self.decls
            .get_or_init(|| self.flat.as_ref().map(|f| f.build()).unwrap_or_default())
    }

    /// This level's declarations, to change (built first, and no longer
    /// held flat).
    fn decls_mut(&mut self) -> &mut Decls {
        if self.decls.get().is_none() {
            let d = self.flat.as_ref().map(|f| f.build()).unwrap_or_default();
            self.decls = std::sync::OnceLock::from(d);
        }
        self.flat = None;
        self.decls.get_mut().expect("built above")
    }

    /// An empty environment: no variables, no `hit()`, no `roll()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// An environment with every declaration of `base` (and its `hit()` and
    /// `roll()` settings), to which more can be declared without copying
    /// the base.
    pub fn extending(base: Arc<Env>) -> Self {
        Self {
            base_slots: base.slot_count(),
            allow_hit: base.allow_hit,
            allow_roll: base.allow_roll,
            base: Some(base),
            ..Self::default()
        }
    }

    /// Copies the base's declarations into this level (before a declaration
    /// that changes one of them: the base is shared and never changes).
    fn flatten_base(&mut self) {
        let Some(base) = self.base.take() else {
            return;
        };
        let mut vars: ByName<Type> = base
            .vars()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        let mut slots: Vec<Slot> = (0..base.slot_count())
            .filter_map(|i| base.slot_at(i).cloned())
            .collect();
        let mut slot_index: ByName<usize> = slots
            .iter()
            .enumerate()
            .map(|(i, s)| (s.name.clone(), i))
            .collect();
        let own = self.decls_mut();
        for (k, v) in own.vars.drain(..) {
            vars.insert(k, v);
        }
        for s in own.slots.drain(..) {
            slot_index.insert(s.name.clone(), slots.len());
            slots.push(s);
        }
        *own = Decls { vars, slots };
        self.slot_index = std::sync::OnceLock::from(slot_index);
        self.base_slots = 0;
    }

    /// Declares a variable (a later declaration of the same name replaces
    /// its type but keeps the slots already made). Object-typed variables
    /// get one slot per leaf field, named `name.field[.field...]`.
    pub fn declare(&mut self, name: impl Into<String>, ty: Type) -> &mut Self {
        let name = name.into();
        if self
            .base
            .as_ref()
            .is_some_and(|b| b.lookup(&name).is_some())
        {
            self.flatten_base();
        }
        self.add_slots(&name, &ty);
        self.decls_mut().vars.insert(name, ty);
        self
    }

    fn add_slots(&mut self, name: &str, ty: &Type) {
        match ty {
            Type::Object(_) => self.add_field_slots(&mut name.to_string(), ty),
            _ => self.add_leaf_slot(name, ty),
        }
    }

    /// [`Env::add_slots`] of an object's fields, each named in one buffer
    /// (`name.field`, then truncated back) rather than formatted afresh
    /// (docs/performance.md, Run AJ).
    fn add_field_slots(&mut self, name: &mut String, ty: &Type) {
        match ty {
            Type::Object(o) => {
                for (f, t) in &o.fields {
                    let len = name.len();
                    name.push('.');
                    name.push_str(f);
                    self.add_field_slots(name, t);
                    name.truncate(len);
                }
            }
            _ => self.add_leaf_slot(name, ty),
        }
    }

    /// A slot for the leaf `name` of type `ty` (a later one of the same
    /// name replaces its type).
    fn add_leaf_slot(&mut self, name: &str, ty: &Type) {
        if let Some(&i) = self.slot_index().get(name) {
            let first = self.base_slots;
            if let Some(s) = self.decls_mut().slots.get_mut(i - first) {
                s.ty = ty.clone();
            }
        } else {
            let at = self.base_slots + self.decls_mut().slots.len();
            self.slot_index();
            if let Some(index) = self.slot_index.get_mut() {
                index.insert(name.to_string(), at);
            }
            self.decls_mut().slots.push(Slot {
                name: name.to_string(),
                ty: ty.clone(),
            });
        }
    }

    /// The declared type of a top-level variable.
    pub fn lookup(&self, name: &str) -> Option<&Type> {
        self.decls()
            .vars
            .get(name)
            .or_else(|| self.base.as_ref().and_then(|b| b.lookup(name)))
    }

    /// The declared variables in declaration order (the base's first).
    pub fn vars(&self) -> Box<dyn Iterator<Item = (&str, &Type)> + '_> {
        let own = self.decls().vars.iter().map(|(k, v)| (k.as_str(), v));
        match &self.base {
            Some(b) => Box::new(b.vars().chain(own)),
            None => Box::new(own),
        }
    }

    /// The number of slots: an [`Activation`] for this environment has
    /// this many.
    pub fn slot_count(&self) -> usize {
        // A flat level's count without building it (a session of a
        // compiled package asks for nothing else).
        let own = match (self.decls.get(), &self.flat) {
            (None, Some(f)) => f.slot_count(),
            _ => self.decls().slots.len(),
        };
        self.base_slots.saturating_add(own)
    }

    /// The slot at `index` (indices `0..slot_count()`, the base's first).
    pub fn slot_at(&self, index: usize) -> Option<&Slot> {
        match index.checked_sub(self.base_slots) {
            Some(i) => self.decls().slots.get(i),
            None => self.base.as_ref().and_then(|b| b.slot_at(index)),
        }
    }

    /// The slots in index order: build an [`Activation`] once and refill it
    /// by index.
    pub fn slots(&self) -> impl Iterator<Item = &Slot> + '_ {
        (0..self.slot_count()).filter_map(|i| self.slot_at(i))
    }

    /// The index of the slot with this flattened name.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.slot_index()
            .get(name)
            .copied()
            .or_else(|| self.base.as_ref().and_then(|b| b.slot(name)))
    }

    /// This level's slots by name, built from `slots` when first needed.
    fn slot_index(&self) -> &ByName<usize> {
        self.slot_index.get_or_init(|| {
            self.decls()
                .slots
                .iter()
                .enumerate()
                // `base_slots` may come from an untrusted IR: linking
                // refuses a level whose count does not fit its base.
                .map(|(i, s)| (s.name.clone(), self.base_slots.saturating_add(i)))
                .collect()
        })
    }

    /// The shared environment this one extends, if any.
    pub fn base(&self) -> Option<&Arc<Env>> {
        self.base.as_ref()
    }

    /// Gives a level read without its base ([`Env`]'s serialized form) the
    /// base it was compiled against. Errors: the level already has a base,
    /// extends nothing (`base_slots` 0), or `base` has another number of
    /// slots than the level was compiled against.
    pub fn link_base(&mut self, base: Arc<Env>) -> Result<(), String> {
        if self.base.is_some() || self.base_slots == 0 {
            return Err("the environment extends no base".into());
        }
        if base.slot_count() != self.base_slots {
            return Err(format!(
                "the environment extends a base of {} slots, not {}",
                self.base_slots,
                base.slot_count()
            ));
        }
        self.base = Some(base);
        Ok(())
    }

    /// True when the environment has every slot it counts: it extends
    /// nothing, or its base is linked ([`Env::link_base`]).
    pub fn is_linked(&self) -> bool {
        self.base_slots == 0 || self.base.is_some()
    }

    /// Sets `allow_hit`; returns `self`.
    pub fn with_hit(mut self, allow: bool) -> Self {
        self.allow_hit = allow;
        self
    }
}

/// The serialized form of one [`Env`] level (its base and slot index are
/// not written).
#[derive(serde::Deserialize)]
struct EnvLevel {
    base_slots: usize,
    vars: ByName<Type>,
    slots: Vec<Slot>,
    allow_hit: bool,
    allow_roll: bool,
}

/// [`EnvLevel`] borrowed from an [`Env`]: what an `Env` is written as, the
/// same fields in the same order (so the same bytes in `ir.json` and
/// `ir.compact`), without the copy of the environment that serde's `into`
/// makes first (docs/performance.md, Run AJ). A level held flat builds its
/// declarations to be written.
#[derive(serde::Serialize)]
#[serde(rename = "EnvLevel")]
struct EnvLevelRef<'a> {
    base_slots: usize,
    vars: &'a ByName<Type>,
    slots: &'a [Slot],
    allow_hit: bool,
    allow_roll: bool,
}

impl serde::Serialize for Env {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = self.decls();
        EnvLevelRef {
            base_slots: self.base_slots,
            vars: &d.vars,
            slots: &d.slots,
            allow_hit: self.allow_hit,
            allow_roll: self.allow_roll,
        }
        .serialize(s)
    }
}

impl From<EnvLevel> for Env {
    fn from(l: EnvLevel) -> Env {
        Env {
            base: None,
            base_slots: l.base_slots,
            decls: std::sync::OnceLock::from(Decls {
                vars: l.vars,
                slots: l.slots,
            }),
            flat: None,
            slot_index: std::sync::OnceLock::new(),
            allow_hit: l.allow_hit,
            allow_roll: l.allow_roll,
        }
    }
}

/// Read as [`EnvLevel`]: built at once from a human-readable format
/// (`ir.json`), held flat from another (`ir.compact`: [`flat`]), which
/// reads the same bytes with the same outcome and builds the declarations
/// when they are first asked for.
impl<'de> serde::Deserialize<'de> for Env {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Env, D::Error> {
        if d.is_human_readable() {
            return <EnvLevel as serde::Deserialize>::deserialize(d).map(Env::from);
        }
        let (base_slots, level, allow_hit, allow_roll) = flat::read(d)?;
        Ok(Env {
            base: None,
            base_slots,
            decls: std::sync::OnceLock::new(),
            flat: Some(Box::new(level)),
            slot_index: std::sync::OnceLock::new(),
            allow_hit,
            allow_roll,
        })
    }
}

/// What a story declares for CEL (Format 11.3), to build a Troupe
/// environment with [`troupe_env`].
#[cfg(any(test, feature = "internals"))]
#[derive(Debug, Clone, Default)]
pub struct StoryDecls {
    /// The `state` object: scenario variables by ID, each cast character ID
    /// and world ID → an object of its variables. Keyed variables are
    /// `map(string, T)`, `number` variables `double`.
    pub state: ObjectType,
    /// The owner's variables (the type of `own`).
    pub own: ObjectType,
    /// The difficulty knob names (each a `double`), when the scenario has a
    /// difficulty.
    pub difficulty_knobs: Option<Vec<String>>,
}

/// The environment of Format 11.3: `state`, `scene` (location, present),
/// `char`, `user`, `self`, `own`, `turn`, `round`, `elapsed`, `hour`,
/// `weekday`, `opening`, `last` (id, author, text), `players`, and
/// `difficulty` (preset + knobs) when the story has one.
#[cfg(any(test, feature = "internals"))]
pub fn troupe_env(decls: &StoryDecls) -> Env {
    let base = troupe_base_env(decls.state.clone(), decls.difficulty_knobs.as_ref());
    troupe_owner_env(Arc::new(base), decls.own.clone())
}

/// The part of [`troupe_env`] every owner of a story shares: everything but
/// `own`. `state` is the story's state object, `knobs` the difficulty knob
/// names.
pub fn troupe_base_env(mut state: ObjectType, knobs: Option<&Vec<String>>) -> Env {
    let mut env = Env::new();
    state.name = "state".into();
    env.declare("state", Type::Object(Arc::new(state)));
    env.declare(
        "scene",
        ObjectType::new("scene")
            .field("location", Type::String)
            .field("present", Type::list(Type::String))
            .into_type(),
    );
    for s in ["char", "user", "self", "opening"] {
        env.declare(s, Type::String);
    }
    for i in ["turn", "round", "elapsed", "hour", "weekday"] {
        env.declare(i, Type::Int);
    }
    env.declare(
        "last",
        ObjectType::new("last")
            .field("id", Type::String)
            .field("author", Type::String)
            .field("text", Type::String)
            .into_type(),
    );
    env.declare("players", Type::list(Type::String));
    if let Some(knobs) = knobs {
        let mut d = ObjectType::new("difficulty").field("preset", Type::String);
        for k in knobs {
            d = d.field(k.clone(), Type::Double);
        }
        env.declare("difficulty", d.into_type());
    }
    env.allow_roll = true;
    env
}

/// An owner's environment over a story's shared `base`
/// ([`troupe_base_env`]): `own` is the owner's variables. Costs the owner's
/// declarations only.
pub fn troupe_owner_env(base: Arc<Env>, mut own: ObjectType) -> Env {
    let mut env = Env::extending(base);
    own.name = "own".into();
    env.declare("own", Type::Object(Arc::new(own)));
    env
}

/// Values for an environment's slots, by index (see [`Env::slots`]). A slot
/// with no value reads as an evaluation error (an absent key or derived
/// variable, Format 8.1/8.4).
#[derive(Debug, Clone, Default)]
pub struct Activation {
    values: Vec<Option<Value>>,
    /// Fields of unbound map slots bound one by one
    /// ([`Activation::set_field`]): slot, field, value (`None`: the map
    /// has no such key).
    fields: Vec<(u32, Arc<str>, Option<Value>)>,
}

impl Activation {
    /// An activation with every slot of `env` unbound.
    pub fn new(env: &Env) -> Self {
        Self {
            values: vec![None; env.slot_count()],
            fields: Vec::new(),
        }
    }

    /// Sizes an activation whose slots are all unbound for `env` (every
    /// slot unbound, as [`Activation::new`] gives), keeping its allocation;
    /// an activation of the same size is left as it is. Use with
    /// [`Activation::unbind`]: a reused activation then costs what the
    /// program reads, not the environment's size.
    pub fn fit(&mut self, env: &Env) {
        self.fields.clear();
        let n = env.slot_count();
        if self.values.len() != n {
            self.values.clear();
            self.values.resize(n, None);
        }
    }

    /// Unbinds `slots` (those out of range are ignored): after an
    /// evaluation that bound only them, the activation is all unbound
    /// again.
    pub fn unbind(&mut self, slots: &[u32]) {
        for &s in slots {
            self.clear(s as usize);
        }
        self.fields.clear();
    }

    /// Binds field `field` of map slot `index` alone, for a program that
    /// reads the slot only as `slot.field` with constant fields
    /// (`crate::cel::Program::field_reads`): `slot.field` then reads
    /// `value`, `None` standing for a map without that key (`has()` false,
    /// a read an error), exactly as a bound map holding these fields would
    /// read. The slot itself is left unbound.
    pub fn set_field(&mut self, index: usize, field: &Arc<str>, value: Option<Value>) {
        if let Some(s) = self.values.get_mut(index) {
            *s = None;
        } else {
            return;
        }
        match self
            .fields
            .iter_mut()
            .find(|(s, f, _)| *s as usize == index && **f == **field)
        {
            Some(x) => x.2 = value,
            None => self.fields.push((index as u32, field.clone(), value)),
        }
    }

    /// The field `field` of slot `index` as [`Activation::set_field`]
    /// bound it: `None` when it was not bound that way, `Some(None)` when
    /// the map has no such key.
    #[inline]
    pub(crate) fn field(&self, index: usize, field: &str) -> Option<Option<&Value>> {
        self.fields
            .iter()
            .find(|(s, f, _)| *s as usize == index && **f == *field)
            .map(|(_, _, v)| v.as_ref())
    }

    /// Binds slot `index` (ignored when out of range).
    pub fn set(&mut self, index: usize, value: Value) {
        if let Some(s) = self.values.get_mut(index) {
            *s = Some(value);
        }
    }

    /// Unbinds slot `index`.
    pub fn clear(&mut self, index: usize) {
        if let Some(s) = self.values.get_mut(index) {
            *s = None;
        }
    }

    /// Binds the slot named `name` in `env`; false when there is no such slot.
    pub fn set_by_name(&mut self, env: &Env, name: &str, value: Value) -> bool {
        match env.slot(name) {
            Some(i) => {
                self.set(i, value);
                true
            }
            None => false,
        }
    }

    /// The value of slot `index`, if bound.
    #[inline]
    pub fn get(&self, index: usize) -> Option<&Value> {
        self.values.get(index).and_then(Option::as_ref)
    }

    #[inline]
    pub(crate) fn read(&self, index: usize) -> Result<&Value, EvalError> {
        self.get(index).ok_or(EvalError::fixed(
            EvalErrorKind::Unbound,
            "a variable read has no value (absent key or derived variable)",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_level_is_written_without_its_base_and_linked_back() {
        let mut base = Env::new();
        base.declare("turn", Type::Int);
        let base = Arc::new(base);
        let mut own = Env::extending(base.clone());
        own.declare("mood", Type::Int);
        let text = serde_json::to_string(&own).unwrap();
        assert!(
            !text.contains("turn") && !text.contains("slot_index"),
            "{text}"
        );
        let mut read: Env = serde_json::from_str(&text).unwrap();
        assert!(!read.is_linked());
        assert_eq!(read.slot("mood"), Some(1));
        read.link_base(base.clone()).unwrap();
        assert_eq!((read.slot("turn"), read.slot_count()), (Some(0), 2));
        assert!(read.link_base(base).is_err(), "linked twice");
    }

    /// What a level holds, for comparing two reads.
    fn seen(e: &Env) -> (usize, Vec<(String, Type)>, Vec<Slot>, bool, bool) {
        let d = e.decls();
        (
            e.base_slots,
            d.vars.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            d.slots.clone(),
            e.allow_hit,
            e.allow_roll,
        )
    }

    /// A level read from a compact encoding is held flat and built on first
    /// use; what it holds is what the derived reader of the same bytes
    /// holds, and it refuses what that reader refuses — here every bytes
    /// string one byte away from a real level's (Format 14.4: `ir.compact`
    /// is untrusted).
    #[test]
    fn a_flat_level_reads_as_the_derived_reader_reads() {
        let inner = ObjectType::new("kai")
            .field("mood", Type::Int)
            .field("tags", Type::list(Type::String))
            .field("trust", Type::map(Type::String, Type::Double));
        let state = ObjectType::new("state")
            .field("gold", Type::Int)
            .field("kai", inner.clone().into_type());
        let base = Arc::new(troupe_base_env(state, Some(&vec!["speed".to_string()])));
        let own = troupe_owner_env(base.clone(), inner);
        for env in [&*base, &own] {
            let bytes = postcard::to_allocvec(env).unwrap();
            let derived = |b: &[u8]| postcard::from_bytes::<EnvLevel>(b).map(Env::from);
            let read: Env = postcard::from_bytes(&bytes).unwrap();
            assert!(read.flat.is_some() && read.decls.get().is_none());
            assert_eq!(
                read.slot_count() - read.base_slots,
                env.slots().count() - env.base_slots
            );
            assert!(read.decls.get().is_none(), "counted without building");
            assert_eq!(seen(&read), seen(&derived(&bytes).unwrap()));
            assert_eq!(postcard::to_allocvec(&read).unwrap(), bytes);
            let mut tried = 0;
            for i in 0..bytes.len() {
                for x in [0u8, 1, 2, 5, 7, 8, 0x7f, 0x80, 0xff] {
                    let mut b = bytes.clone();
                    b[i] = x;
                    let (flat, slow) = (postcard::from_bytes::<Env>(&b), derived(&b));
                    assert_eq!(flat.is_ok(), slow.is_ok(), "byte {i} = {x}");
                    if let (Ok(f), Ok(s)) = (flat, slow) {
                        assert_eq!(f.slot_count(), s.slot_count(), "byte {i} = {x}");
                        assert_eq!(seen(&f), seen(&s), "byte {i} = {x}");
                        tried += 1;
                    }
                }
            }
            assert!(tried > 0);
        }
    }

    #[test]
    fn an_untrusted_level_cannot_overflow_or_link_to_the_wrong_base() {
        let text = format!(
            r#"{{"base_slots":{},"vars":{{}},"slots":[{{"name":"a","ty":"Int"}},{{"name":"b","ty":"Int"}}],"allow_hit":false,"allow_roll":false}}"#,
            usize::MAX
        );
        let mut read: Env = serde_json::from_str(&text).unwrap();
        assert_eq!(read.slot_count(), usize::MAX);
        let mut base = Env::new();
        base.declare("turn", Type::Int);
        assert!(read.link_base(Arc::new(base)).is_err());
    }
}
