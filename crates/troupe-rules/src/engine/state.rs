//! The state of a story at a message (Format 8.6): variable slots, the
//! scene, turns and rounds, and what the path has seen; and applying a
//! change to it (Format 8.3, 8.5).

use std::sync::Arc;

use crate::compile::session::{Fired, SettingsIr};
use crate::compile::value::add;
use crate::compile::{CastIx, ChangeIr, FiringIr, StoryIr, Val};
use crate::model::firing::{Firing, PathFirings};
use crate::model::VarType;

/// The state after a message (or the initial state).
#[derive(Debug, Clone, PartialEq)]
pub struct State {
    /// One value per slot (see [`crate::compile::Layout`]).
    pub slots: Vec<Val>,
    /// `scene.location`.
    pub location: Arc<str>,
    /// `scene.present`, by cast index.
    pub present: Vec<bool>,
    /// `turn` (Format 8.8).
    pub turn: i64,
    /// `round`.
    pub round: i64,
    /// Who took a turn in the current round, by cast index.
    pub in_round: Vec<bool>,
    /// The author of the latest turn.
    pub user: Option<CastIx>,
    /// The latest non-hidden message on the path.
    pub last: Option<u32>,
    /// The opening the path's root names.
    pub opening: Option<u16>,
    /// The path's root.
    pub root: Option<u32>,
    /// The message this is the state at; `None` for the initial state.
    pub at: Option<u32>,
    /// The first ending firing on the path (Format 9.3).
    pub ending: Option<Fired>,
    /// Whether each event (by index) fired on the path so far (Format 9.2:
    /// a non-repeating event fires once per path): this state's store of
    /// "fired on this path", kept through [`crate::model::firing::record`]
    /// by [`crate::engine::replay::step`] and the runtime's firing
    /// evaluation alike (the session checker keeps its own store by the same
    /// rule).
    pub fired: Vec<bool>,
    /// The settings a message on the path changed (Format 8.9); `None`:
    /// the session's preset, as at the start.
    pub settings: Option<Arc<Settings>>,
}

/// The engine's store of what fired on a path (Format 9.2–9.4).
impl PathFirings for State {
    fn has_fired(&self, index: u32) -> bool {
        self.fired.get(index as usize).copied().unwrap_or(false)
    }
    fn mark_fired(&mut self, index: u32) {
        if let Some(x) = self.fired.get_mut(index as usize) {
            *x = true;
        }
    }
    fn ended(&self) -> bool {
        self.ending.is_some()
    }
}

/// The path rule's view of recorded firing `f`, defined by `def`.
pub fn firing_of(f: Fired, def: &FiringIr) -> Firing {
    match f {
        Fired::Event(i) => Firing::Event {
            index: u32::from(i),
            repeat: def.repeat,
            end: def.end,
        },
        Fired::Outcome(_) => Firing::Outcome,
    }
}

/// The difficulty settings at a message after a change on its path
/// (Format 8.9): what `difficulty.preset` and `difficulty.<knob>` read.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The preset, by index in `DifficultyIr::presets`.
    pub preset: u16,
    /// Every knob's value, in knob order.
    pub knobs: Vec<f64>,
}

impl Settings {
    /// `{"difficulty": preset id, "knobs": {knob: value}}`, knobs in
    /// declaration order (the `settings` of `troupe state --json`, 20.1).
    pub fn to_json(&self, ir: &StoryIr) -> Option<serde_json::Value> {
        let d = ir.difficulty.as_ref()?;
        let knobs: serde_json::Map<String, serde_json::Value> = d
            .knobs
            .iter()
            .zip(&self.knobs)
            .map(|(k, v)| {
                let text = crate::model::json::plain_number(&v.to_string());
                let n = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
                (k.to_string(), n)
            })
            .collect();
        Some(serde_json::json!({
            "difficulty": &*d.presets.get(self.preset as usize)?.0,
            "knobs": knobs,
        }))
    }
}

impl State {
    /// Feeds every part of the state to `h` in a canonical form: two states
    /// feed the same bytes exactly when they are equal (the search's key,
    /// Format 20.5).
    pub fn hash_canonical<H: std::hash::Hasher>(&self, h: &mut H) {
        use std::hash::Hash;
        h.write_usize(self.slots.len());
        for v in &self.slots {
            v.hash_canonical(h);
        }
        self.location.hash(h);
        self.present.hash(h);
        self.turn.hash(h);
        self.round.hash(h);
        self.in_round.hash(h);
        self.user.hash(h);
        self.last.hash(h);
        self.opening.hash(h);
        self.root.hash(h);
        self.at.hash(h);
        match self.ending {
            None => h.write_u8(0),
            Some(Fired::Event(i)) => {
                h.write_u8(1);
                h.write_u16(i);
            }
            Some(Fired::Outcome(i)) => {
                h.write_u8(2);
                h.write_u16(i);
            }
        }
        self.fired.hash(h);
        match &self.settings {
            None => h.write_u8(0),
            Some(s) => {
                h.write_u8(1);
                h.write_u16(s.preset);
                h.write_usize(s.knobs.len());
                for k in &s.knobs {
                    // -0.0 and 0.0 are one knob value.
                    h.write_u64(if *k == 0.0 { 0 } else { k.to_bits() });
                }
            }
        }
    }

    /// The state before any message under difficulty preset `preset`
    /// (the default preset when `None`), derived variables not yet
    /// computed (Format 8.6).
    pub fn blank(ir: &StoryIr, preset: Option<u16>) -> State {
        let mut slots = vec![Val::Absent; ir.slot_count];
        for v in &ir.vars {
            match &v.layout {
                crate::compile::Layout::Single(s) => {
                    if v.derived.is_none() {
                        slots[*s as usize] = ir.start_value(v, preset).clone();
                    }
                }
                crate::compile::Layout::Fixed { first, keys } => {
                    for i in 0..keys.len() {
                        slots[*first as usize + i] = v.default.clone();
                    }
                }
                crate::compile::Layout::Open(s) => {
                    slots[*s as usize] = Val::Map(Default::default());
                }
            }
        }
        State {
            slots,
            location: ir.location.clone(),
            present: ir.present.clone(),
            turn: 0,
            round: 0,
            in_round: vec![false; ir.cast.len()],
            user: None,
            last: None,
            opening: None,
            root: None,
            at: None,
            ending: None,
            fired: vec![false; ir.events.len()],
            settings: None,
        }
    }

    /// Applies a message's settings change (Format 8.9) over the settings
    /// so far (`start`: the session's preset when the path changed none):
    /// the preset with all its knob values, then each knob value given.
    /// Variables are left as they are.
    pub fn change_settings(&mut self, ir: &StoryIr, start: Option<u16>, change: &SettingsIr) {
        let Some(d) = &ir.difficulty else {
            return;
        };
        let mut next = match (&self.settings, change.preset) {
            (Some(s), None) => (**s).clone(),
            (_, p) => {
                let p = p.or(start).unwrap_or(d.default);
                Settings {
                    preset: p,
                    knobs: d
                        .presets
                        .get(p as usize)
                        .map_or_else(Vec::new, |x| x.1.clone()),
                }
            }
        };
        for (k, v) in &change.knobs {
            if let Some(x) = next.knobs.get_mut(*k as usize) {
                *x = *v;
            }
        }
        self.settings = Some(Arc::new(next));
    }

    /// Applies one change (Format 8.5), normalizing as 8.3 says.
    pub fn apply(&mut self, ir: &StoryIr, change: &ChangeIr) {
        match change {
            ChangeIr::Set { slot, value, .. } => {
                if let Some(s) = self.slots.get_mut(*slot as usize) {
                    *s = value.clone();
                }
            }
            ChangeIr::Add { var, slot, amount } => {
                let Some(v) = ir.vars.get(*var as usize) else {
                    return;
                };
                if let Some(s) = self.slots.get_mut(*slot as usize)
                    && let (Some(sum), VarType::Scalar(t)) = (add(s, amount), v.ty)
                {
                    *s = v.norm.scalar(t, sum);
                }
            }
            ChangeIr::SetOpen {
                slot, key, value, ..
            } => {
                if let Some(Val::Map(m)) = self.slots.get_mut(*slot as usize) {
                    m.insert_mut(key.clone(), value.clone());
                }
            }
            ChangeIr::AddOpen {
                var,
                slot,
                key,
                amount,
            } => {
                let Some(v) = ir.vars.get(*var as usize) else {
                    return;
                };
                if let (Some(Val::Map(m)), VarType::Scalar(t)) =
                    (self.slots.get_mut(*slot as usize), v.ty)
                {
                    let cur = m.get(key).unwrap_or(&v.default);
                    if let Some(sum) = add(cur, amount) {
                        let sum = v.norm.scalar(t, sum);
                        m.insert_mut(key.clone(), sum);
                    }
                }
            }
            ChangeIr::Location(l) => self.location = l.clone(),
            ChangeIr::Present(list) => {
                self.present.iter_mut().for_each(|p| *p = false);
                self.enter(list);
            }
            ChangeIr::Enter(list) => self.enter(list),
            ChangeIr::Leave(list) => {
                for c in list {
                    if let Some(p) = self.present.get_mut(*c as usize) {
                        *p = false;
                    }
                }
            }
        }
    }

    fn enter(&mut self, list: &[CastIx]) {
        for c in list {
            if let Some(p) = self.present.get_mut(*c as usize) {
                *p = true;
            }
        }
    }

    /// The cast indices in `scene.present`, in cast order.
    pub fn present_members(&self) -> impl Iterator<Item = CastIx> + '_ {
        self.present
            .iter()
            .enumerate()
            .filter(|(_, p)| **p)
            .map(|(i, _)| i as CastIx)
    }
}
