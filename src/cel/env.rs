//! Declarations an expression is checked against (Format 11.2, 11.3), and the
//! activation that binds their values by slot index.

use std::sync::Arc;

use indexmap::IndexMap;

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
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Env {
    vars: IndexMap<String, Type>,
    slots: Vec<Slot>,
    slot_index: IndexMap<String, usize>,
    /// `hit()` is declared (entry conditions only).
    pub allow_hit: bool,
    /// `roll()` is declared.
    pub allow_roll: bool,
}

impl Env {
    /// An empty environment: no variables, no `hit()`, no `roll()`.
    pub fn new() -> Self {
        Self::default()
    }

    /// Declares a variable (a later declaration of the same name replaces
    /// its type but keeps the slots already made). Object-typed variables
    /// get one slot per leaf field, named `name.field[.field...]`.
    pub fn declare(&mut self, name: impl Into<String>, ty: Type) -> &mut Self {
        let name = name.into();
        self.add_slots(&name, &ty);
        self.vars.insert(name, ty);
        self
    }

    fn add_slots(&mut self, name: &str, ty: &Type) {
        match ty {
            Type::Object(o) => {
                for (f, t) in &o.fields {
                    self.add_slots(&format!("{name}.{f}"), t);
                }
            }
            _ => {
                if let Some(&i) = self.slot_index.get(name) {
                    if let Some(s) = self.slots.get_mut(i) {
                        s.ty = ty.clone();
                    }
                } else {
                    self.slot_index.insert(name.to_string(), self.slots.len());
                    self.slots.push(Slot {
                        name: name.to_string(),
                        ty: ty.clone(),
                    });
                }
            }
        }
    }

    /// The declared type of a top-level variable.
    pub fn lookup(&self, name: &str) -> Option<&Type> {
        self.vars.get(name)
    }

    /// The declared variables in declaration order.
    pub fn vars(&self) -> impl Iterator<Item = (&str, &Type)> {
        self.vars.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// The slots in index order: build an [`Activation`] once and refill it
    /// by index.
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The index of the slot with this flattened name.
    pub fn slot(&self, name: &str) -> Option<usize> {
        self.slot_index.get(name).copied()
    }

    /// Sets `allow_hit`; returns `self`.
    pub fn with_hit(mut self, allow: bool) -> Self {
        self.allow_hit = allow;
        self
    }

    /// Sets `allow_roll`; returns `self`.
    pub fn with_roll(mut self, allow: bool) -> Self {
        self.allow_roll = allow;
        self
    }
}

/// What a story declares for CEL (Format 11.3), to build a Troupe
/// environment with [`troupe_env`].
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
pub fn troupe_env(decls: &StoryDecls) -> Env {
    let mut env = Env::new();
    let mut state = decls.state.clone();
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
    let mut own = decls.own.clone();
    own.name = "own".into();
    env.declare("own", Type::Object(Arc::new(own)));
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
    if let Some(knobs) = &decls.difficulty_knobs {
        let mut d = ObjectType::new("difficulty").field("preset", Type::String);
        for k in knobs {
            d = d.field(k.clone(), Type::Double);
        }
        env.declare("difficulty", d.into_type());
    }
    env.allow_roll = true;
    env
}

/// Values for an environment's slots, by index (see [`Env::slots`]). A slot
/// with no value reads as an evaluation error (an absent key or derived
/// variable, Format 8.1/8.4).
#[derive(Debug, Clone, Default)]
pub struct Activation {
    values: Vec<Option<Value>>,
}

impl Activation {
    /// An activation with every slot of `env` unbound.
    pub fn new(env: &Env) -> Self {
        Self {
            values: vec![None; env.slots().len()],
        }
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
