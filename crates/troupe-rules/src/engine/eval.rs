//! Evaluating CEL programs against a state (Format 11.3, 11.5, 11.6):
//! filling an activation's slots from the state and the evaluation point,
//! converting values both ways, and recomputing derived variables (8.1).

use std::str::FromStr;
use std::sync::Arc;

use rust_decimal::prelude::ToPrimitive;
use rust_decimal::Decimal;

use super::state::State;
use crate::cel::value::MapValue;
use crate::cel::{Activation, EvalError, Host, Key, Program, Value};
use crate::compile::{CastIx, ChangeIr, Layout, SessionIr, Source, StoryIr, Val, Who};
use crate::model::{ScalarType, VarType};

/// Reusable activations of the environments derived variables run in,
/// each made on its first use: a scratch costs what the story's derived
/// variables read, never one activation per rule, event or entry (a
/// session kept by the search of Format 20.5 holds none, see
/// [`Scratch::release`]).
#[derive(Debug, Default)]
pub struct Scratch {
    /// By environment index; empty until a derived variable is computed.
    acts: Vec<Option<Activation>>,
}

impl Scratch {
    /// An empty scratch for `ir` (activations are made when first used).
    pub fn new(_ir: &StoryIr) -> Scratch {
        Scratch::default()
    }

    /// Frees every activation (the next use makes them again).
    pub fn release(&mut self) {
        self.acts = Vec::new();
    }

    /// The activation of environment `env` of `ir`, made on first use;
    /// `None` for an environment `ir` does not have.
    fn act(&mut self, ir: &StoryIr, env: u16) -> Option<&mut Activation> {
        let e = ir.envs.get(env as usize)?;
        if self.acts.len() != ir.envs.len() {
            self.acts.clear();
            self.acts.resize_with(ir.envs.len(), || None);
        }
        Some(self.acts[env as usize].get_or_insert_with(|| Activation::new(&e.env)))
    }
}

/// The host of `hit()` and `roll()` at one evaluation point: `hit()` is
/// false (no entry is being evaluated), `roll()` is seeded per message and
/// call (Format 11.5).
#[derive(Debug)]
pub struct RollHost<'a> {
    /// The session seed.
    pub seed: u64,
    /// The message ID (`""` with no evaluation point).
    pub message: &'a str,
    /// The index of the next `roll()` call at this message.
    pub calls: u64,
}

impl Host for RollHost<'_> {
    fn hit(&mut self, _keys: &[&str]) -> bool {
        false
    }
    fn roll(&mut self, notation: &str) -> Result<i64, EvalError> {
        let k = self.calls;
        self.calls += 1;
        crate::cel::dice::roll(notation, self.seed, self.message, k)
    }
}

/// Converts a state value to CEL (`number` → double, Format 11.3). `None`
/// for an absent value.
pub fn to_cel(v: &Val) -> Option<Value> {
    Some(match v {
        Val::Absent => return None,
        Val::Int(i) => Value::Int(*i),
        Val::Num(d) => Value::Double(d.to_f64().unwrap_or(f64::NAN)),
        Val::Bool(b) => Value::Bool(*b),
        Val::Str(s) => Value::String(s.clone()),
        Val::List(l) => Value::List(Arc::new(l.iter().filter_map(to_cel).collect())),
        Val::Map(m) => {
            let mut out = MapValue::with_capacity_and_hasher(m.size(), Default::default());
            for (k, v) in m.iter() {
                if let Some(v) = to_cel(v) {
                    out.insert(Key::String(k.clone()), v);
                }
            }
            Value::Map(Arc::new(out))
        }
    })
}

fn scalar_to_val(t: ScalarType, v: &Value) -> Option<Val> {
    Some(match (t, v) {
        (ScalarType::Int, Value::Int(i)) => Val::Int(*i),
        (ScalarType::Number, Value::Int(i)) => Val::Num(Decimal::from(*i)),
        (ScalarType::Number, Value::Double(d)) if d.is_finite() => Val::Num(double_decimal(*d)?),
        (ScalarType::Bool, Value::Bool(b)) => Val::Bool(*b),
        (ScalarType::String, Value::String(s)) => Val::Str(s.clone()),
        _ => return None,
    })
}

/// The exact decimal of a finite double's shortest round-trip text (Format
/// 8.2); `None` when its absolute value is 10^28 or more. Digits beyond 28
/// decimal places are truncated: normalization then rounds to at most 12
/// places (8.3), and truncation keeps every comparison with a midpoint of
/// at most 28 places, so the rounded value is that of the exact text.
fn double_decimal(d: f64) -> Option<Decimal> {
    use std::fmt::Write;
    // `Display` writes the shortest round-trip digits, without an exponent.
    let mut text = String::with_capacity(32);
    let _ = write!(text, "{d}");
    let unsigned = text.trim_start_matches('-');
    let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    if int.trim_start_matches('0').len() > 28 {
        return None;
    }
    let frac = &frac[..frac.len().min(28)];
    let negative = text.starts_with('-');
    // At most 28 digits in all: the digits are the decimal's mantissa and
    // the fraction's length its scale, exactly what parsing the text gives
    // (without building and parsing a second string).
    let v = if int.len() + frac.len() <= 28 {
        let mut m: i128 = 0;
        for b in int.bytes().chain(frac.bytes()) {
            m = m * 10 + i128::from(b.wrapping_sub(b'0'));
        }
        Decimal::from_i128_with_scale(if negative { -m } else { m }, frac.len() as u32)
    } else {
        double_decimal_parsed(negative, int, frac)?
    };
    Some(if v.is_zero() { Decimal::ZERO } else { v })
}

/// [`double_decimal`] by parsing the text `[-]int[.frac]`.
fn double_decimal_parsed(negative: bool, int: &str, frac: &str) -> Option<Decimal> {
    let sign = if negative { "-" } else { "" };
    let exact = if frac.is_empty() {
        format!("{sign}{int}")
    } else {
        format!("{sign}{int}.{frac}")
    };
    Decimal::from_str(&exact).ok()
}

/// Converts a CEL value to a value of `ty` (Format 8.2); `None` when it
/// cannot be converted.
pub fn to_val(ty: VarType, v: &Value) -> Option<Val> {
    match ty {
        VarType::Scalar(s) => scalar_to_val(s, v),
        VarType::List(s) => match v {
            Value::List(items) => Some(Val::List(
                items
                    .iter()
                    .map(|i| scalar_to_val(s, i))
                    .collect::<Option<Vec<_>>>()?
                    .into(),
            )),
            _ => None,
        },
        VarType::Map(s) => match v {
            Value::Map(m) => {
                let mut out = crate::compile::value::ValMap::new_sync();
                for (k, i) in m.iter() {
                    let Key::String(k) = k else { return None };
                    out.insert_mut(k.clone(), scalar_to_val(s, i)?);
                }
                Some(Val::Map(out))
            }
            _ => None,
        },
    }
}

/// The evaluation point: the state, the message it is at (if any), and the
/// session, for `last`, `elapsed`, `hour`, `weekday` and `roll()`.
#[derive(Clone, Copy)]
pub struct Point<'a> {
    /// The story.
    pub ir: &'a StoryIr,
    /// The session, when there is one.
    pub session: Option<&'a SessionIr>,
    /// The char (Format 11.3): the author of the message at a message.
    pub char: Option<CastIx>,
}

impl Point<'_> {
    /// The value of one environment slot in `state`.
    pub fn slot_value(&self, state: &State, src: &Source) -> Option<Value> {
        let ir = self.ir;
        let msg = state
            .at
            .and_then(|m| self.session.and_then(|s| s.messages.get(m as usize)));
        let id_of = |c: CastIx| {
            ir.cast
                .get(c as usize)
                .map_or(Value::string(""), |m| Value::String(m.id.clone()))
        };
        Some(match src {
            Source::Var(v) => {
                let var = ir.vars.get(*v as usize)?;
                match &var.layout {
                    Layout::Single(s) | Layout::Open(s) => to_cel(state.slots.get(*s as usize)?)?,
                    Layout::Fixed { first, keys } => {
                        let mut m =
                            MapValue::with_capacity_and_hasher(keys.len(), Default::default());
                        for (i, k) in keys.iter().enumerate() {
                            if let Some(v) = state.slots.get(*first as usize + i).and_then(to_cel) {
                                m.insert(Key::String(k.clone()), v);
                            }
                        }
                        Value::Map(Arc::new(m))
                    }
                }
            }
            Source::Location => Value::String(state.location.clone()),
            Source::Present => Value::List(Arc::new(state.present_members().map(id_of).collect())),
            Source::Char => self.char.map_or(Value::string(""), id_of),
            Source::User => match state.user.or_else(|| ir.players.first().copied()) {
                Some(c) => id_of(c),
                None => Value::string(""),
            },
            Source::Const(v) => v.clone(),
            Source::Turn => Value::Int(state.turn),
            Source::Round => Value::Int(state.round),
            Source::Elapsed => {
                let root = state
                    .root
                    .and_then(|r| self.session?.messages.get(r as usize)?.time);
                match (root, msg.and_then(|m| m.time)) {
                    (Some(a), Some(b)) => Value::Int(b.unix - a.unix),
                    _ => Value::Int(0),
                }
            }
            Source::Hour => Value::Int(msg.and_then(|m| m.time).map_or(-1, |t| i64::from(t.hour))),
            Source::Weekday => Value::Int(
                msg.and_then(|m| m.time)
                    .map_or(-1, |t| i64::from(t.weekday)),
            ),
            Source::Opening => state
                .opening
                .and_then(|o| ir.openings.get(o as usize))
                .map_or(Value::string(""), |o| Value::String(o.id.clone())),
            Source::LastId | Source::LastAuthor | Source::LastText => {
                let last = state
                    .last
                    .and_then(|l| self.session.map(|s| (s, l)))
                    .and_then(|(s, l)| s.messages.get(l as usize).map(|m| (s, l, m)));
                match (src, last) {
                    (_, None) => Value::string(""),
                    (Source::LastId, Some((_, _, m))) => Value::String(m.id.clone()),
                    (Source::LastAuthor, Some((_, _, m))) => Value::string(ir.who_id(m.author)),
                    (_, Some((s, l, _))) => Value::string(&s.text(l)),
                }
            }
            Source::Preset => {
                let d = ir.difficulty.as_ref()?;
                let p = match &state.settings {
                    Some(s) => s.preset,
                    None => self.session.and_then(|s| s.preset).unwrap_or(d.default),
                };
                Value::String(d.presets.get(p as usize)?.0.clone())
            }
            Source::Knob(k) => {
                let d = ir.difficulty.as_ref()?;
                // Settings changed on the path come first (Format 8.9).
                if let Some(s) = &state.settings {
                    return Some(Value::Double(*s.knobs.get(*k as usize)?));
                }
                let p = self.session.and_then(|s| s.preset).unwrap_or(d.default);
                Value::Double(*d.presets.get(p as usize)?.1.get(*k as usize)?)
            }
            Source::None => return None,
        })
    }

    /// Fills the slots `reads` (all slots when `None`) of environment `env`.
    #[inline]
    pub fn fill(&self, state: &State, env: u16, reads: Option<&[u32]>, act: &mut Activation) {
        let Some(e) = self.ir.envs.get(env as usize) else {
            return;
        };
        let mut set = |i: usize| match e.sources.get(i).and_then(|s| self.slot_value(state, s)) {
            Some(v) => act.set(i, v),
            None => act.clear(i),
        };
        match reads {
            Some(r) => r.iter().for_each(|i| set(*i as usize)),
            None => (0..e.sources.len()).for_each(set),
        }
    }

    /// Fills the slots `reads` of environment `env` for `program`, as
    /// [`Point::fill`] does, except that a keyed variable (Format 8.1) the
    /// program reads only as `state.var.key` with constant keys
    /// ([`Program::field_reads`]) is bound key by key, without building the
    /// map of its keys: the program reads the same values.
    pub fn fill_program(
        &self,
        state: &State,
        env: u16,
        reads: &[u32],
        program: &Program,
        act: &mut Activation,
    ) {
        let fields = program.field_reads();
        if fields.is_empty() {
            // The common case: nothing read field by field.
            return self.fill(state, env, Some(reads), act);
        }
        let Some(e) = self.ir.envs.get(env as usize) else {
            return;
        };
        for &i in reads {
            let i = i as usize;
            if let Some((_, fs)) = fields.iter().find(|(s, _)| *s as usize == i) {
                let var = match e.sources.get(i) {
                    Some(Source::Var(v)) => self.ir.vars.get(*v as usize),
                    _ => None,
                };
                if let Some(Layout::Fixed { first, keys }) = var.map(|v| &v.layout) {
                    for f in fs {
                        let value = keys
                            .iter()
                            .position(|k| **k == **f)
                            .and_then(|k| state.slots.get(*first as usize + k))
                            .and_then(to_cel);
                        act.set_field(i, f, value);
                    }
                    continue;
                }
            }
            match e.sources.get(i).and_then(|s| self.slot_value(state, s)) {
                Some(v) => act.set(i, v),
                None => act.clear(i),
            }
        }
    }

    /// Recomputes every derived variable in dependency order (Format 8.1):
    /// a runtime error or a value that does not convert makes it absent.
    pub fn recompute(&self, state: &mut State, scratch: &mut Scratch, host: &mut RollHost<'_>) {
        self.recompute_observed(state, scratch, host, None, Since::Anything);
    }

    /// [`Point::recompute`] after what `since` says changed in `state`,
    /// whose derived variables were computed before it (at the previous
    /// message, or after the previous change step): a derived variable
    /// none of whose inputs changed keeps the value it holds, which is the
    /// value computing it again would give (see
    /// [`crate::compile::derived`]); the others are computed in dependency
    /// order. With `obs`, every derived program is evaluated and its
    /// branches reported (Format 21.6: derived variables after each change
    /// step).
    pub fn recompute_observed(
        &self,
        state: &mut State,
        scratch: &mut Scratch,
        host: &mut RollHost<'_>,
        mut obs: Option<&mut (dyn super::observe::Observer + '_)>,
        since: Since<'_>,
    ) {
        if self.ir.derived.is_empty() {
            return;
        }
        let (moved, changes) = match since {
            Since::Moved(c) => (true, c),
            Since::Changes(c) => (false, c),
            Since::Anything => (true, &[][..]),
        };
        let every = obs.is_some() || matches!(since, Since::Anything) || every_forced();
        let inputs = self.ir.derived_inputs();
        // The slots of the derived variables this pass changed.
        let mut changed = ChangedSlots::default();
        for (i, d) in self.ir.derived.iter().enumerate() {
            let needed = every
                || inputs.get(i).is_none_or(|x| {
                    x.always
                        || (moved && x.point)
                        || changes.iter().any(|c| x.reads_change(c))
                        || changed.any(|s| x.reads_slot(s))
                });
            if !needed {
                continue;
            }
            let Some(act) = scratch.act(self.ir, d.env) else {
                continue;
            };
            self.fill_program(state, d.env, &d.reads, &d.program, act);
            let var = &self.ir.vars[d.var as usize];
            let site = super::observe::Site::Derived(&var.name);
            let value = match super::observe::eval(&d.program, act, host, site, obs.as_deref_mut())
            {
                Ok(v) => to_val(var.ty, &v).map(|v| var.norm.value(var.ty, v)),
                Err(_) => None,
            };
            if let Layout::Single(s) = var.layout
                && let Some(slot) = state.slots.get_mut(s as usize)
            {
                let value = value.unwrap_or(Val::Absent);
                if !super::same_value(slot, &value) {
                    changed.push(s);
                }
                *slot = value;
            }
        }
    }

    /// Evaluates a program of environment `env` at `state` (the slots it
    /// reads filled), reporting the program's branches at `site` to `obs`
    /// when there is one; a runtime error is returned as is.
    pub fn eval_observed(
        &self,
        program: &Program,
        env: u16,
        state: &State,
        host: &mut dyn Host,
        site: super::observe::Site<'_>,
        obs: Option<&mut (dyn super::observe::Observer + '_)>,
    ) -> Result<Value, EvalError> {
        let Some(e) = self.ir.envs.get(env as usize) else {
            return Ok(Value::Bool(false));
        };
        // A turn evaluates dozens of conditions: each takes a spare
        // activation of this thread instead of allocating one.
        let mut act = SPARE.with(|s| s.borrow_mut().pop()).unwrap_or_default();
        // Spare activations are all unbound: only the slots the program
        // reads are bound for it, and unbound again after it.
        act.fit(&e.env);
        // Most programs read no keyed variable field by field: they fill
        // through `fill`, inlined here, as before.
        if program.field_reads().is_empty() {
            self.fill(state, env, Some(program.slots()), &mut act);
        } else {
            self.fill_program(state, env, program.slots(), program, &mut act);
        }
        let out = super::observe::eval(program, &act, host, site, obs);
        act.unbind(program.slots());
        SPARE.with(|s| {
            let mut s = s.borrow_mut();
            if s.len() < MAX_SPARE {
                s.push(act);
            }
        });
        out
    }
}

/// What may have changed in a state since its derived variables were last
/// computed (Format 8.1, 8.6): what decides which of them
/// [`Point::recompute_observed`] evaluates again.
#[derive(Debug, Clone, Copy)]
pub enum Since<'a> {
    /// Anything (the initial state, a root's opening): every derived
    /// variable is computed.
    Anything,
    /// The evaluation point moved to a new message (its author, turn,
    /// round, time and settings), then these changes were applied.
    Moved(&'a [ChangeIr]),
    /// These changes were applied at the same evaluation point (a firing's).
    Changes(&'a [ChangeIr]),
}

#[cfg(feature = "test-hooks")]
thread_local! {
    static EVERY: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Whether this thread computes every derived variable at every recompute
/// ([`with_every_recompute`]).
#[cfg(feature = "test-hooks")]
fn every_forced() -> bool {
    EVERY.with(std::cell::Cell::get)
}

#[cfg(not(feature = "test-hooks"))]
fn every_forced() -> bool {
    false
}

/// Runs `f` with every derived variable computed at every recompute on
/// this thread, none kept because its inputs did not change (Format 8.1):
/// for tests that compare the two (only with the `test-hooks`
/// feature).
#[cfg(feature = "test-hooks")]
pub fn with_every_recompute<T>(f: impl FnOnce() -> T) -> T {
    let before = EVERY.with(|e| e.replace(true));
    let out = f();
    EVERY.with(|e| e.set(before));
    out
}

/// The slots of the derived variables one recompute changed, the first
/// [`ChangedSlots::CAP`] of them; past that, every slot counts as changed
/// (the later derived variables are all computed, which is always right).
#[derive(Default)]
struct ChangedSlots {
    slots: [u32; ChangedSlots::CAP],
    len: usize,
}

impl ChangedSlots {
    const CAP: usize = 16;

    fn push(&mut self, s: u32) {
        if let Some(x) = self.slots.get_mut(self.len) {
            *x = s;
        }
        self.len = self.len.saturating_add(1);
    }

    /// Whether `f` holds for a changed slot (always, past the capacity).
    fn any(&self, f: impl Fn(u32) -> bool) -> bool {
        self.len > Self::CAP || self.slots[..self.len].iter().any(|s| f(*s))
    }
}

/// Activations kept for reuse per thread (evaluations nest only as deep
/// as derived variables do).
const MAX_SPARE: usize = 8;

thread_local! {
    static SPARE: std::cell::RefCell<Vec<Activation>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The char of a message: its author when that is a character (11.3).
pub fn char_of(author: Who) -> Option<CastIx> {
    match author {
        Who::Cast(c) => Some(c),
        Who::Narrator => None,
    }
}

#[cfg(test)]
mod double_tests {
    use super::*;

    /// The digits read as the mantissa give the decimal that parsing the
    /// text gives, scale included (Format 8.2).
    #[test]
    fn a_double_converts_as_its_text_parses() {
        let mut xs = vec![
            0.0,
            -0.0,
            1.0,
            -1.0,
            0.5,
            0.1,
            0.05,
            12.25,
            -3.75,
            1e-7,
            1e-12,
            1e-20,
            1e-28,
            1e-30,
            123_456_789.123_456_79,
            1e15,
            1e20,
            9.99e27,
            1e27,
            0.3333333333333333,
            -2.5e-5,
            4.35,
            99.99,
        ];
        let mut x = 0.000123_f64;
        for _ in 0..200 {
            xs.push(x);
            xs.push(-x * 3.7);
            x *= 1.913;
        }
        for d in xs {
            let text = format!("{d}");
            let unsigned = text.trim_start_matches('-');
            let (int, frac) = unsigned.split_once('.').unwrap_or((unsigned, ""));
            if int.trim_start_matches('0').len() > 28 {
                assert_eq!(double_decimal(d), None, "{d}");
                continue;
            }
            let frac = &frac[..frac.len().min(28)];
            let parsed = double_decimal_parsed(text.starts_with('-'), int, frac).map(|v| {
                if v.is_zero() {
                    Decimal::ZERO
                } else {
                    v
                }
            });
            let got = double_decimal(d);
            assert_eq!(got, parsed, "{d}");
            assert_eq!(got.map(|v| v.scale()), parsed.map(|v| v.scale()), "{d}");
            assert_eq!(
                got.map(|v| v.is_sign_negative()),
                parsed.map(|v| v.is_sign_negative()),
                "{d}"
            );
        }
    }
}
