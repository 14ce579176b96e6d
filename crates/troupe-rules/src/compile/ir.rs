//! The compiled form of a story (DESIGN §1: the only thing the engine
//! reads). Every ID is resolved to an index, every CEL expression is a
//! checked [`Program`], derived variables are in dependency order, and
//! every variable has its slots. Texts are kept as written: a session
//! parses a template the first time it renders it (`TemplateCache`).

use std::collections::HashMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::cel::{Env, Program};
use crate::model::VarType;

use super::value::{Norm, Val};

/// Index of a cast member (Format 6.1), in cast order.
pub type CastIx = u16;

/// Who wrote a message or is in an audience (Format 6.2, 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Who {
    /// The narrator.
    Narrator,
    /// A cast member.
    Cast(CastIx),
}

/// The owner of a variable or expression (Format 8.7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OwnerRef {
    /// The scenario.
    Scenario,
    /// A cast member.
    Cast(CastIx),
    /// A world of the scenario, by its index in the scenario's `worlds`.
    World(u16),
}

/// A cast member (Format 6.1).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CastIr {
    /// The character's ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// Display name (Format 4: nickname, else name).
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub display: Arc<str>,
    /// Whether a player plays it.
    pub player: bool,
    /// The seat it fills (Format 6.1), which a cast reference may name
    /// instead of its ID (6.4).
    #[serde(
        default,
        skip_serializing_if = "crate::wire::skip_none",
        deserialize_with = "crate::wire::shared_str_opt"
    )]
    pub seat: Option<Arc<str>>,
}

/// The cast index of character `id`, if it is a member (Format 6.1).
pub fn cast_index(cast: &[CastIr], id: &str) -> Option<CastIx> {
    cast.iter().position(|c| &*c.id == id).map(|i| i as CastIx)
}

/// Where a variable's values live in the state's slots (Format 8.4).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Layout {
    /// One value in one slot.
    Single(u32),
    /// A fixed key set: key `i` in slot `first + i`.
    Fixed {
        /// The first slot.
        first: u32,
        /// The keys, in declaration order.
        #[serde(deserialize_with = "crate::wire::shared_strs")]
        keys: Vec<Arc<str>>,
    },
    /// A `"*"` map: one slot holding a `Val::Map` of the present keys.
    Open(u32),
}

/// A variable in use by the story (Format 8.1, 8.7).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct VarIr {
    /// The state name (`gold`, `kai.mood`).
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub name: Arc<str>,
    /// The variable's own ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// Its owner.
    pub owner: OwnerRef,
    /// The type of each value (keyed: of each key's value).
    pub ty: VarType,
    /// Rounding and bounds.
    pub norm: Norm,
    /// Its slots.
    pub layout: Layout,
    /// The normalized default (keyed: of each key).
    pub default: Val,
    /// For a variable that names a difficulty knob (Format 8.1 `knob`): its
    /// normalized initial value under each preset, in
    /// [`DifficultyIr::presets`] order; empty otherwise.
    pub start: Vec<Val>,
    /// Index into [`StoryIr::derived`] for a derived variable.
    pub derived: Option<u32>,
    /// `visibility: hidden` (Format 8.1): left out of what a player is shown.
    #[serde(default)]
    pub hidden: bool,
}

/// A state change, resolved (Format 8.5). `Set` values are normalized here,
/// once. In `ir.json` a change is written with its fields as a list
/// (`{"Add":[var,slot,amount]}`, see the `Serialize` impl).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub enum ChangeIr {
    /// Sets a slot of variable `var`.
    Set {
        /// The variable.
        var: u32,
        /// The slot.
        slot: u32,
        /// The normalized value.
        value: Val,
    },
    /// Sets key `key` of the `"*"` map of `var` in `slot`.
    SetOpen {
        /// The variable.
        var: u32,
        /// The map's slot.
        slot: u32,
        /// The key.
        #[serde(deserialize_with = "crate::wire::shared_str")]
        key: Arc<str>,
        /// The normalized value.
        value: Val,
    },
    /// Adds to a slot of variable `var`.
    Add {
        /// The variable.
        var: u32,
        /// The slot.
        slot: u32,
        /// An `Int` or `Num` amount.
        amount: Val,
    },
    /// Adds to key `key` of a `"*"` map (an absent key starts at the default).
    AddOpen {
        /// The variable.
        var: u32,
        /// The map's slot.
        slot: u32,
        /// The key.
        #[serde(deserialize_with = "crate::wire::shared_str")]
        key: Arc<str>,
        /// The amount.
        amount: Val,
    },
    /// `scene.location`.
    Location(#[serde(deserialize_with = "crate::wire::shared_str")] Arc<str>),
    /// `scene.present` set whole.
    Present(Vec<CastIx>),
    /// `enter`.
    Enter(Vec<CastIx>),
    /// `leave`.
    Leave(Vec<CastIx>),
}

/// Written as tuple variants, fields in declaration order
/// (`{"Add":[1,1,{"Int":2}]}`): field names would be most of a change's
/// bytes in `ir.json`, and an IR holds one change per event and rule. The
/// derived `Deserialize` reads a struct variant from the list of its fields
/// in order (serde_json reads a struct from a list), so only this side is
/// written by hand.
impl Serialize for ChangeIr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeTupleVariant;
        fn fields<S: serde::Serializer>(
            s: S,
            index: u32,
            name: &'static str,
            var: u32,
            slot: u32,
            key: Option<&str>,
            value: &Val,
        ) -> Result<S::Ok, S::Error> {
            let mut t =
                s.serialize_tuple_variant("ChangeIr", index, name, 3 + usize::from(key.is_some()))?;
            t.serialize_field(&var)?;
            t.serialize_field(&slot)?;
            if let Some(k) = key {
                t.serialize_field(k)?;
            }
            t.serialize_field(value)?;
            t.end()
        }
        match self {
            ChangeIr::Set { var, slot, value } => fields(s, 0, "Set", *var, *slot, None, value),
            ChangeIr::SetOpen {
                var,
                slot,
                key,
                value,
            } => fields(s, 1, "SetOpen", *var, *slot, Some(key), value),
            ChangeIr::Add { var, slot, amount } => fields(s, 2, "Add", *var, *slot, None, amount),
            ChangeIr::AddOpen {
                var,
                slot,
                key,
                amount,
            } => fields(s, 3, "AddOpen", *var, *slot, Some(key), amount),
            ChangeIr::Location(l) => s.serialize_newtype_variant("ChangeIr", 4, "Location", l),
            ChangeIr::Present(c) => s.serialize_newtype_variant("ChangeIr", 5, "Present", c),
            ChangeIr::Enter(c) => s.serialize_newtype_variant("ChangeIr", 6, "Enter", c),
            ChangeIr::Leave(c) => s.serialize_newtype_variant("ChangeIr", 7, "Leave", c),
        }
    }
}

/// A derived variable's program (Format 8.1).
#[derive(Debug, Serialize, Deserialize)]
pub struct DerivedIr {
    /// The variable.
    pub var: u32,
    /// Its checked program.
    pub program: Program,
    /// The environment it runs in (an index into [`StoryIr::envs`]).
    pub env: u16,
    /// The environment slots it reads (only these are filled).
    pub reads: Vec<u32>,
}

/// Where an environment slot's value comes from (Format 11.3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Source {
    /// A variable's whole value (keyed: the map of its present keys).
    Var(u32),
    /// `scene.location`.
    Location,
    /// `scene.present`.
    Present,
    /// `char`.
    Char,
    /// `user`.
    User,
    /// `self`: a constant.
    Const(crate::cel::Value),
    /// `turn`.
    Turn,
    /// `round`.
    Round,
    /// `elapsed`.
    Elapsed,
    /// `hour`.
    Hour,
    /// `weekday`.
    Weekday,
    /// `opening`.
    Opening,
    /// `last.id`.
    LastId,
    /// `last.author`.
    LastAuthor,
    /// `last.text`.
    LastText,
    /// `difficulty.preset`.
    Preset,
    /// `difficulty.<knob>`, by knob index.
    Knob(u16),
    /// Nothing known: left unbound.
    None,
}

/// One CEL environment of the story: one per owner, and one with `hit()`.
#[derive(Debug, Serialize, Deserialize)]
pub struct EnvIr {
    /// The owner (`self`, `own`).
    pub owner: OwnerRef,
    /// The declarations.
    pub env: Env,
    /// Where each slot's value comes from.
    pub sources: Vec<Source>,
}

/// An event or outcome (Format 9).
#[derive(Debug, Serialize, Deserialize)]
pub struct FiringIr {
    /// Its ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// The condition (CEL written or lowered from a Threshold), for runtimes.
    pub when: Option<Program>,
    /// `repeat` (events only; written only when true).
    #[serde(default, skip_serializing_if = "crate::wire::skip_false")]
    pub repeat: bool,
    /// Whether a firing ends the story (every outcome; events with `end`;
    /// written only when true).
    #[serde(default, skip_serializing_if = "crate::wire::skip_false")]
    pub end: bool,
    /// Its changes.
    pub changes: Vec<ChangeIr>,
    /// The signal (events only; written only when there is one).
    #[serde(
        default,
        skip_serializing_if = "crate::wire::skip_none",
        deserialize_with = "crate::wire::shared_str_opt"
    )]
    pub signal: Option<Arc<str>>,
}

/// A text part (Format 7.2).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PartIr {
    /// The text as written.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub text: Arc<str>,
    /// The audience, when given.
    pub audience: Option<Vec<Who>>,
}

/// An opening (Format 6.3).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct OpeningIr {
    /// Its ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub id: Arc<str>,
    /// Its author.
    pub author: Who,
    /// Its parts.
    pub parts: Vec<PartIr>,
    /// Its scene: location then present (each replaces that field).
    #[serde(deserialize_with = "crate::wire::shared_str_opt")]
    pub scene_location: Option<Arc<str>>,
    /// `scene.present`, when given.
    pub scene_present: Option<Vec<CastIx>>,
    /// Its changes.
    pub changes: Vec<ChangeIr>,
    /// `group_only` (Format 6.3): offered only when two or more players
    /// are seated.
    #[serde(default)]
    pub group_only: bool,
}

/// What a flattened state name refers to (Format 8.6), for macros and
/// queries (never the replay's hot path).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum NameRef {
    /// `scene.location`.
    Location,
    /// `scene.present`.
    Present,
    /// A variable's single slot.
    Slot(u32),
    /// A key of a `"*"` map.
    OpenKey(
        u32,
        #[serde(deserialize_with = "crate::wire::shared_str")] Arc<str>,
    ),
}

/// A compiled story: one scenario with its cast, worlds and (optional)
/// session header applied.
#[derive(Debug, Serialize, Deserialize)]
pub struct StoryIr {
    /// The scenario's ID.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub scenario: Arc<str>,
    /// The narrator's name (Format 6.2).
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub narrator: Arc<str>,
    /// `voice: "single"` (Format 7.4).
    pub single_voice: bool,
    /// The cast, in order.
    pub cast: Vec<CastIr>,
    /// The players, as cast indices in cast order.
    pub players: Vec<CastIx>,
    /// The worlds' IDs, in `worlds` order.
    #[serde(deserialize_with = "crate::wire::shared_strs")]
    pub worlds: Vec<Arc<str>>,
    /// Variables in use, in declaration order.
    pub vars: Vec<VarIr>,
    /// Number of state slots.
    pub slot_count: usize,
    /// The initial scene location.
    #[serde(deserialize_with = "crate::wire::shared_str")]
    pub location: Arc<str>,
    /// The initial `scene.present`, by cast index.
    pub present: Vec<bool>,
    /// Derived variables in dependency order.
    pub derived: Vec<DerivedIr>,
    /// The declarations every owner's environment extends (Format 11.3),
    /// written once: each of `envs` is written without it
    /// ([`crate::cel::Env`]'s serialized form) and linked to it when read
    /// ([`StoryIr::link_envs`]).
    pub base_env: Option<Arc<Env>>,
    /// CEL environments: `[0]` the scenario's, then one per other owner.
    pub envs: Vec<EnvIr>,
    /// Events, in declaration order.
    pub events: Vec<FiringIr>,
    /// Outcomes, in declaration order.
    pub outcomes: Vec<FiringIr>,
    /// Openings.
    pub openings: Vec<OpeningIr>,
    /// Difficulty: the default preset and every preset's knob values
    /// (knobs in the first preset's order).
    pub difficulty: Option<DifficultyIr>,
    /// Flattened state names → what they name (serialized in code point
    /// order of names, so the same story gives the same bytes).
    #[serde(
        serialize_with = "sorted",
        deserialize_with = "crate::wire::shared_str_map"
    )]
    pub names: foldhash::HashMap<Arc<str>, NameRef>,
    /// Variable state names → index in `vars` (what change lists resolve
    /// against, built once here).
    #[serde(
        serialize_with = "sorted",
        deserialize_with = "crate::wire::shared_str_map"
    )]
    pub var_index: foldhash::HashMap<Arc<str>, u32>,
    /// Lore entries in declaration order (Format 5.5).
    pub entries: Vec<super::lore::EntryIr>,
    /// The recursion step limit (Format 5.7): 0 off, `u64::MAX` unlimited.
    pub recursion: u64,
    /// The scenario's seats no member fills (Format 6.1), in cast order: a
    /// cast reference may name one (6.4), naming no one.
    #[serde(
        default,
        skip_serializing_if = "crate::wire::skip_empty",
        deserialize_with = "crate::wire::shared_strs"
    )]
    pub open_seats: Vec<Arc<str>>,
    /// The turn order (Format 18.9).
    #[serde(default)]
    pub turn_order: super::runtime::TurnOrderIr,
    /// The `emotion` expression (Format 18.6), in the scenario's
    /// environment.
    pub emotion: Option<crate::cel::Program>,
    /// The model runtime's part (Format 24.2–24.4): the `model` block and
    /// the answer schema.
    pub model: super::model::ModelIr,
    /// What each derived variable reads (Format 8.1), worked out from the
    /// programs when first needed ([`StoryIr::derived_inputs`]); never
    /// written in `ir.json`, never read from it.
    #[serde(skip)]
    pub(crate) derived_inputs: std::sync::OnceLock<Vec<super::derived::DerivedInputs>>,
}

/// Difficulty presets (Format 6.5).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DifficultyIr {
    /// The default preset's index.
    pub default: u16,
    /// Preset IDs and their knob values (as doubles, knob order of the first).
    #[serde(deserialize_with = "shared_presets")]
    pub presets: Vec<Preset>,
    /// Knob names.
    #[serde(deserialize_with = "crate::wire::shared_strs")]
    pub knobs: Vec<Arc<str>>,
}

/// A difficulty preset: its ID and its knob values.
pub type Preset = (Arc<str>, Vec<f64>);

/// [`DifficultyIr::presets`], each ID read as [`crate::wire::shared_str`]
/// (in `ir.compact`, the table's one `Arc<str>` of it) rather than as a
/// string copied into an `Arc` of its own.
fn shared_presets<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Preset>, D::Error> {
    /// One preset as written: a pair, as the tuple is.
    #[derive(Deserialize)]
    struct Written(
        #[serde(deserialize_with = "crate::wire::shared_str")] Arc<str>,
        Vec<f64>,
    );
    let read = Vec::<Written>::deserialize(d)?;
    Ok(read
        .into_iter()
        .map(|Written(id, knobs)| (id, knobs))
        .collect())
}

impl StoryIr {
    /// What each derived variable's value depends on, in [`StoryIr::derived`]
    /// order (Format 8.1; see [`super::derived`]).
    pub fn derived_inputs(&self) -> &[super::derived::DerivedInputs] {
        self.derived_inputs
            .get_or_init(|| super::derived::derived_inputs(self))
    }

    /// Links every environment read from `ir.json` to `base_env` (Format
    /// 14.4: the base is written once). Errors, for the loader's
    /// IR_MISMATCH: the JSON pointer (below the scenario) and the reason,
    /// when an environment extends a base the story lacks or does not fit.
    pub fn link_envs(&mut self) -> Result<(), (String, String)> {
        if let Some(b) = &self.base_env
            && (!b.is_linked() || b.base().is_some())
        {
            return Err((
                "story/base_env".into(),
                "the base environment extends another".into(),
            ));
        }
        for (i, e) in self.envs.iter_mut().enumerate() {
            if e.env.is_linked() {
                continue;
            }
            let at = || format!("story/envs/{i}/env");
            let Some(base) = &self.base_env else {
                return Err((
                    at(),
                    "the environment extends a base the story does not have".into(),
                ));
            };
            e.env.link_base(base.clone()).map_err(|m| (at(), m))?;
        }
        Ok(())
    }

    /// The initial value of variable `v` (Format 8.6): the value of its
    /// knob under `preset` (the default preset when `None`) for a variable
    /// that names a knob (8.1), else its normalized default.
    pub fn start_value<'a>(&'a self, v: &'a VarIr, preset: Option<u16>) -> &'a Val {
        let p = preset.or_else(|| self.difficulty.as_ref().map(|d| d.default));
        p.and_then(|p| v.start.get(p as usize))
            .unwrap_or(&v.default)
    }

    /// The cast index of a character ID.
    pub fn cast_index(&self, id: &str) -> Option<CastIx> {
        cast_index(&self.cast, id)
    }

    /// Resolves an author or audience ID.
    pub fn who(&self, id: &str) -> Option<Who> {
        if id == "narrator" {
            Some(Who::Narrator)
        } else {
            self.cast_index(id).map(Who::Cast)
        }
    }

    /// The ID of a `Who`.
    pub fn who_id(&self, w: Who) -> &str {
        match w {
            Who::Narrator => "narrator",
            Who::Cast(c) => self.cast.get(c as usize).map_or("", |m| &m.id),
        }
    }

    /// The ID of an owner.
    pub fn owner_id(&self, o: OwnerRef) -> &str {
        match o {
            OwnerRef::Scenario => &self.scenario,
            OwnerRef::Cast(c) => self.cast.get(c as usize).map_or("", |m| &m.id),
            OwnerRef::World(w) => self.worlds.get(w as usize).map_or("", |w| w),
        }
    }

    /// The environment index of an owner (the scenario's when unknown).
    pub fn env_of(&self, o: OwnerRef) -> u16 {
        self.envs.iter().position(|e| e.owner == o).unwrap_or(0) as u16
    }
}

/// Serializes a hash map in code point order of its keys.
fn sorted<V: Serialize, H, S: serde::Serializer>(
    m: &HashMap<Arc<str>, V, H>,
    s: S,
) -> Result<S::Ok, S::Error> {
    let ordered: std::collections::BTreeMap<&str, &V> = m.iter().map(|(k, v)| (&**k, v)).collect();
    ordered.serialize(s)
}

/// The compiled story's declarations answer as the checked story's do
/// (Format 8.5, 6.4): the runtime checks a model adapter's changes with the
/// checks' own code ([`crate::changes::check_changes`]).
impl crate::changes::Decls for StoryIr {
    fn var(&self, name: &str) -> Option<crate::changes::VarView<'_>> {
        use crate::changes::Keyed;
        let v = self.vars.get(*self.var_index.get(name)? as usize)?;
        Some(crate::changes::VarView {
            name: &v.name,
            ty: Some(v.ty),
            keys: match &v.layout {
                Layout::Single(_) => Keyed::No,
                Layout::Fixed { keys, .. } => Keyed::Fixed(keys.iter().map(|k| &**k).collect()),
                Layout::Open(_) => Keyed::Open,
            },
            derived: v.derived.is_some(),
        })
    }

    fn var_names(&self) -> Box<dyn Iterator<Item = &str> + '_> {
        Box::new(self.vars.iter().map(|v| &*v.name))
    }

    fn cast_ref_ok(&self, id: &str) -> bool {
        self.cast_index(id).is_some()
            || self.cast.iter().any(|m| m.seat.as_deref() == Some(id))
            || self.open_seats.iter().any(|s| &**s == id)
    }

    fn cast_refs(&self) -> Vec<&str> {
        let members = self.cast.iter().map(|m| &*m.id);
        let seats = self.cast.iter().filter_map(|m| m.seat.as_deref());
        let open = self.open_seats.iter().map(|s| &**s);
        members.chain(seats).chain(open).collect()
    }
}

#[cfg(test)]
mod change_wire_tests {
    use super::*;

    #[test]
    fn a_change_is_written_as_a_list_and_read_back() {
        let changes = vec![
            ChangeIr::Add {
                var: 1,
                slot: 2,
                amount: Val::Int(3),
            },
            ChangeIr::SetOpen {
                var: 4,
                slot: 5,
                key: "kai".into(),
                value: Val::Bool(true),
            },
            ChangeIr::Enter(vec![0, 2]),
        ];
        let text = serde_json::to_string(&changes).unwrap();
        assert_eq!(
            text,
            r#"[{"Add":[1,2,{"Int":3}]},{"SetOpen":[4,5,"kai",{"Bool":true}]},{"Enter":[0,2]}]"#
        );
        let back: Vec<ChangeIr> = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        // A list of the wrong length is refused, not padded.
        assert!(serde_json::from_str::<ChangeIr>(r#"{"Add":[1,2]}"#).is_err());
    }
}
