//! Conditions that can never hold (Format 17.6): every variable gets a
//! range of the values a runtime can give it — its initial values, widened
//! by every change the story can make — and each event's and outcome's
//! `when` is judged over those ranges on its compiled tree. A `when` judged
//! never true is DEAD_LOGIC; where the judgement cannot decide, it is
//! silent.
//!
//! One pass over the story's changes builds the ranges; derived variables
//! follow in dependency order; each condition is then judged once, in time
//! linear in its tree (a warning's explanation walks it again).

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use rust_decimal::{Decimal, RoundingStrategy};
use serde_json::Value;

use crate::cel::checker::{ArithOp, CmpOp};
use crate::cel::program::Node;
use crate::cel::{Env, Value as CelValue};
use crate::changes::values::exact_decimal;
use crate::changes::{resolve_target, Target};
use crate::diag::{Code, Diagnostic, Severity};
use crate::model::items::Opening;
use crate::model::List;
use crate::model::{ScalarType, VarType};
use crate::resolve::env::{compile_once, condition_text, derived_order, owner_env};
use crate::resolve::story::{Owner, Story, VarDecl};

/// An interval of numbers; `None` ends are unbounded. `int` says the
/// values are CEL ints (else doubles).
#[derive(Debug, Clone, PartialEq)]
struct Interval {
    lo: Option<Decimal>,
    hi: Option<Decimal>,
    int: bool,
}

impl Interval {
    fn point(d: Decimal, int: bool) -> Self {
        Interval {
            lo: Some(d),
            hi: Some(d),
            int,
        }
    }

    fn clamp(&self, min: Option<Decimal>, max: Option<Decimal>) -> Self {
        let c = |v: Option<Decimal>, end_default: Option<Decimal>| -> Option<Decimal> {
            let v = v.or(end_default)?;
            let v = min.map_or(v, |m| v.max(m));
            Some(max.map_or(v, |m| v.min(m)))
        };
        Interval {
            lo: c(self.lo, min),
            hi: c(self.hi, max),
            int: self.int,
        }
    }

    fn is_empty(&self) -> bool {
        matches!((self.lo, self.hi), (Some(l), Some(h)) if l > h)
    }
}

/// What a subexpression is judged to be (Format 17.6): the values it may
/// have where it does not fail.
#[derive(Debug, Clone, PartialEq)]
enum Abs {
    /// Anything of its type.
    Any,
    /// Always fails (no value).
    Never,
    /// A number in an interval.
    Num(Interval),
    /// A bool: may it be true, may it be false.
    Bool { t: bool, f: bool },
    /// One of these strings.
    Str(BTreeSet<Arc<str>>),
}

impl Abs {
    /// (may be true, may be false) of a bool judgement.
    fn tf(&self) -> (bool, bool) {
        match self {
            Abs::Bool { t, f } => (*t, *f),
            Abs::Never => (false, false),
            _ => (true, true),
        }
    }

    fn join(self, other: Abs) -> Abs {
        match (self, other) {
            (Abs::Never, x) | (x, Abs::Never) => x,
            (Abs::Bool { t: a, f: b }, Abs::Bool { t: c, f: d }) => Abs::Bool {
                t: a || c,
                f: b || d,
            },
            (Abs::Num(a), Abs::Num(b)) if a.int == b.int => Abs::Num(Interval {
                lo: a.lo.zip(b.lo).map(|(x, y)| x.min(y)),
                hi: a.hi.zip(b.hi).map(|(x, y)| x.max(y)),
                int: a.int,
            }),
            (Abs::Str(mut a), Abs::Str(b)) => {
                a.extend(b);
                Abs::Str(a)
            }
            _ => Abs::Any,
        }
    }
}

/// Where an end of a variable's interval comes from, for the message.
#[derive(Debug, Clone, PartialEq)]
enum EndWhy {
    /// Its `min` or `max` (nothing narrower is known).
    Bound,
    /// Its initial and set values, nothing moving it further that way.
    Values(Decimal),
    /// Its initial and set values plus once-only adds.
    Once(Decimal, Decimal),
    /// A derived variable: its expression.
    Derived,
    /// An environment name (`turn`, `hour`, ...).
    Env,
}

/// The range of one variable (Format 17.6).
#[derive(Debug, Clone)]
struct Range {
    abs: Abs,
    lo_why: EndWhy,
    hi_why: EndWhy,
    /// The name shown in messages.
    name: String,
}

/// The counted changes of one variable (Format 17.6).
#[derive(Debug, Default)]
struct Acc {
    changed: bool,
    model: bool,
    /// A change that is not understood: the domain.
    opaque: bool,
    sets: Vec<Value>,
    rep_up: bool,
    rep_down: bool,
    once_up: Option<Decimal>,
    once_down: Option<Decimal>,
}

/// The events and outcomes of scenario `index` of a conforming `bundle`
/// that the check proves can never happen: a Threshold past its
/// variable's bounds (17.4) or a condition 17.6 judges false in every
/// reachable state. Each is `("event" | "outcome", id, the DEAD_LOGIC
/// message)`, in declaration order, events first. `troupe explore` reports
/// them unreachable with this proof, whatever its bounds (20.5).
pub fn proved_impossible(bundle: &Value, index: usize) -> Vec<(&'static str, String, String)> {
    let mut diags = Vec::new();
    let Some(story) = crate::resolve::story::resolve(bundle, index, None, &mut diags) else {
        return Vec::new();
    };
    super::lints::unreachable_thresholds(&story, &mut diags);
    unreachable_conditions(&story, &[], &mut diags);
    let mut found = Vec::new();
    for (field, kind) in [(List::Events, "event"), (List::Outcomes, "outcome")] {
        for (i, ev) in story.scenario.list(field).iter().enumerate() {
            let at = format!("{}/{field}/{i}/when", story.pointer);
            let proof = diags.iter().find(|d| {
                d.code == Code::DeadLogic
                    && d.location
                        .pointer
                        .as_deref()
                        .is_some_and(|p| p == at || p == format!("{at}/threshold"))
            });
            if let (Some(d), Some(id)) = (proof, crate::model::id_of(ev)) {
                found.push((kind, id.to_string(), d.message.to_string()));
            }
        }
    }
    found
}

/// Runs the judgement of Format 17.6 over every event and outcome `when`
/// of `story`, adding a DEAD_LOGIC warning to `out` for each that can
/// never hold. Not run when `checked` (the diagnostics found so far, when
/// they are not in `out`) or `out` holds an error of the scenario, a
/// character or a world; a condition already linted at its
/// `/when/threshold` (17.4) is skipped. Only warnings under the story's
/// own scenario are added, so the stories of a bundle can be judged side
/// by side against the same `checked`.
pub fn unreachable_conditions(story: &Story, checked: &[Diagnostic], out: &mut Vec<Diagnostic>) {
    let base = &story.pointer;
    let scenario_prefix = format!("{base}/");
    let broken = checked.iter().chain(out.iter()).any(|d| {
        d.is_error()
            && d.location.pointer.as_deref().is_some_and(|p| {
                p == base
                    || p.starts_with(&scenario_prefix)
                    || p.starts_with("/characters")
                    || p.starts_with("/worlds")
                    || p.starts_with("header/")
            })
    });
    if broken {
        return;
    }
    let scenario = Owner::Scenario(story.scenario.id.clone());
    let env = owner_env(story, &scenario, false);
    let ranges = Ranges::build(story, &env);
    // Thresholds the bounds lint (17.4) already reported.
    let linted: std::collections::HashSet<&str> = checked
        .iter()
        .chain(out.iter())
        .filter(|d| d.code == Code::DeadLogic)
        .filter_map(|d| d.location.pointer.as_deref())
        .collect();
    let mut found = Vec::new();
    for (field, what) in [(List::Events, "event"), (List::Outcomes, "outcome")] {
        for (i, ev) in story.scenario.event_items(field).enumerate() {
            let Some(when) = ev.when else { continue };
            let Some((src, written)) = condition_text(story, when) else {
                continue;
            };
            let at = if written {
                format!("{base}/{field}/{i}/when")
            } else {
                format!("{base}/{field}/{i}/when/threshold")
            };
            if linted.contains(at.as_str()) {
                continue;
            }
            let compiled = compile_once(story, &scenario, false, &src, &env);
            let Ok(program) = &*compiled else {
                continue;
            };
            // A condition that reads nothing (`"false"`) says what it means.
            if program.slots().is_empty() {
                continue;
            }
            let mut j = Judge::new(&ranges, &env);
            let (t, _) = j.eval(&program.root).tf();
            if t {
                continue;
            }
            let id = ev.id.unwrap_or("");
            let why = Judge::new(&ranges, &env).explain(&program.root);
            found.push(
                Diagnostic::error(
                    Code::DeadLogic,
                    format!("{what} `{id}` can never happen: {why}"),
                )
                .with_severity(Severity::Warning)
                .at(at),
            );
        }
    }
    out.extend(found);
}

/// The ranges of a story's variables and environment names, by CEL slot.
struct Ranges {
    /// By slot index: a scalar variable, or a keyed variable (whose slot is
    /// the map), with whether it is keyed.
    by_slot: HashMap<usize, (Range, bool)>,
}

fn places_of(decl: &VarDecl) -> u32 {
    decl.decl.places.unwrap_or(2)
}

fn numeric(decl: &VarDecl) -> Option<bool> {
    match decl.ty? {
        VarType::Scalar(ScalarType::Int) => Some(true),
        VarType::Scalar(ScalarType::Number) => Some(false),
        _ => None,
    }
}

/// Normalizes a number for its variable (Format 8.3): round a `number` to
/// `places`, half away from zero; clamp to the bounds.
fn normalize(decl: &VarDecl, d: Decimal, int: bool) -> Decimal {
    let d = if int {
        d
    } else {
        d.round_dp_with_strategy(places_of(decl), RoundingStrategy::MidpointAwayFromZero)
    };
    let (min, max) = bounds(decl);
    let d = min.map_or(d, |m| d.max(m));
    max.map_or(d, |m| d.min(m))
}

fn bounds(decl: &VarDecl) -> (Option<Decimal>, Option<Decimal>) {
    let b = |v: &Option<Value>| v.as_ref().and_then(exact_decimal);
    (b(&decl.decl.min), b(&decl.decl.max))
}

impl Ranges {
    fn build(story: &Story, env: &Env) -> Ranges {
        let mut acc: HashMap<String, Acc> = HashMap::new();
        // Counted changes (Format 17.6): openings once, rules again and
        // again, events once or again; endings' changes never count.
        let mut lists: Vec<(&[Value], bool)> = Vec::new();
        for o in story.scenario.openings.iter().map(Opening::read) {
            lists.push((o.changes, false));
        }
        for r in story.scenario.rule_items() {
            lists.push((r.changes, true));
        }
        for e in story.scenario.event_items(List::Events) {
            if !e.end {
                lists.push((e.changes, e.repeat));
            }
        }
        for (changes, repeat) in lists {
            for change in changes {
                let Some(obj) = change.as_object() else {
                    continue;
                };
                for (op, body) in obj {
                    let Some(map) = body.as_object() else {
                        continue;
                    };
                    if op != "set" && op != "add" {
                        continue;
                    }
                    for (name, value) in map {
                        let var = match resolve_target(story, name) {
                            Ok(Target::Variable(v)) | Ok(Target::Key(v, _)) => v,
                            _ => continue,
                        };
                        let a = acc.entry(var.to_string()).or_default();
                        a.changed = true;
                        if op == "set" {
                            a.sets.push(value.clone());
                            continue;
                        }
                        let Some(d) = exact_decimal(value) else {
                            a.opaque = true;
                            continue;
                        };
                        let decl = story.variables.get(var);
                        let places = decl.map_or(0, places_of);
                        let is_int = decl.and_then(numeric).unwrap_or(true);
                        if d > Decimal::ZERO {
                            if repeat {
                                a.rep_up = true;
                            } else {
                                let up = if is_int {
                                    d
                                } else {
                                    d.round_dp_with_strategy(places, RoundingStrategy::AwayFromZero)
                                };
                                a.once_up = a.once_up.map_or(Some(up), |s| s.checked_add(up));
                                if a.once_up.is_none() {
                                    a.rep_up = true;
                                }
                            }
                        } else if d < Decimal::ZERO {
                            if repeat {
                                a.rep_down = true;
                            } else {
                                let down = if is_int {
                                    d
                                } else {
                                    d.round_dp_with_strategy(places, RoundingStrategy::AwayFromZero)
                                };
                                a.once_down =
                                    a.once_down.map_or(Some(down), |s| s.checked_add(down));
                                if a.once_down.is_none() {
                                    a.rep_down = true;
                                }
                            }
                        }
                    }
                }
            }
        }
        if let Some(m) = story.scenario.model_changes() {
            for name in m.keys() {
                if let Ok(Target::Variable(v)) | Ok(Target::Key(v, _)) = resolve_target(story, name)
                {
                    acc.entry(v.to_string()).or_default().model = true;
                }
            }
        }
        let scenario = Owner::Scenario(story.scenario.id.clone());
        let mut by_name: HashMap<String, Range> = HashMap::new();
        for (name, decl) in &story.variables {
            if decl.is_derived() {
                continue;
            }
            let empty = Acc::default();
            let a = acc.get(name).unwrap_or(&empty);
            by_name.insert(name.clone(), base_range(story, decl, a));
        }
        let mut ranges = Ranges {
            by_slot: HashMap::new(),
        };
        // Derived variables in dependency order (Format 8.1), each judged
        // with the ranges known so far.
        for name in derived_order(story).order {
            let Some(decl) = story.variables.get(&name) else {
                continue;
            };
            let range = derived_range(story, decl, &by_name);
            by_name.insert(name.clone(), range);
        }
        for (name, decl) in &story.variables {
            if decl.is_derived() && !by_name.contains_key(name) {
                by_name.insert(name.clone(), domain(decl, name.clone()));
            }
        }
        ranges.index(story, env, &scenario, &by_name);
        ranges
    }

    /// Maps the environment's slots to the ranges of `by_name`.
    fn index(&mut self, story: &Story, env: &Env, owner: &Owner, by_name: &HashMap<String, Range>) {
        self.by_slot.clear();
        let env_int = |name: &str, lo: Option<i64>, hi: Option<i64>| Range {
            abs: Abs::Num(Interval {
                lo: lo.map(Decimal::from),
                hi: hi.map(Decimal::from),
                int: true,
            }),
            lo_why: EndWhy::Env,
            hi_why: EndWhy::Env,
            name: name.to_string(),
        };
        for (i, slot) in env.slots().enumerate() {
            let var = if let Some(rest) = slot.name.strip_prefix("state.") {
                Some(rest.to_string())
            } else {
                slot.name.strip_prefix("own.").map(|rest| match owner {
                    Owner::Scenario(_) => rest.to_string(),
                    o => format!("{}.{rest}", o.id()),
                })
            };
            if let Some(var) = var {
                if let (Some(r), Some(decl)) = (by_name.get(&var), story.variables.get(&var)) {
                    self.by_slot.insert(i, (r.clone(), decl.is_keyed()));
                }
                continue;
            }
            let r = match slot.name.as_str() {
                "turn" | "round" => env_int(&slot.name, Some(0), None),
                "hour" => env_int("hour", Some(-1), Some(23)),
                "weekday" => env_int("weekday", Some(-1), Some(6)),
                _ => continue,
            };
            self.by_slot.insert(i, (r, false));
        }
    }
}

/// A variable's domain (Format 17.6): its bounds, both bools, any string.
fn domain(decl: &VarDecl, name: String) -> Range {
    let abs = match (decl.ty, numeric(decl)) {
        (_, Some(int)) => {
            let (min, max) = bounds(decl);
            Abs::Num(Interval {
                lo: min,
                hi: max,
                int,
            })
        }
        (Some(VarType::Scalar(ScalarType::Bool)), _) => Abs::Bool { t: true, f: true },
        _ => Abs::Any,
    };
    Range {
        abs,
        lo_why: EndWhy::Bound,
        hi_why: EndWhy::Bound,
        name,
    }
}

/// Rules 1 and 2 of Format 17.6.
fn base_range(story: &Story, decl: &VarDecl, a: &Acc) -> Range {
    let name = decl.name.clone();
    if !a.changed || a.model || a.opaque {
        return domain(decl, name);
    }
    let whole = domain(decl, name.clone());
    match (decl.ty, numeric(decl)) {
        (_, Some(int)) => {
            let mut values: Vec<Decimal> = Vec::new();
            if let Some(knob) = &decl.decl.knob {
                let Some(presets) = story.scenario.difficulty().and_then(|d| d.options) else {
                    return whole;
                };
                for p in presets.values() {
                    match p.get(knob).and_then(exact_decimal) {
                        Some(d) => values.push(d),
                        None => return whole,
                    }
                }
            } else {
                match &decl.decl.default {
                    Some(v) => match exact_decimal(v) {
                        Some(d) => values.push(d),
                        None => return whole,
                    },
                    None => values.push(Decimal::ZERO),
                }
            }
            for s in &a.sets {
                match exact_decimal(s) {
                    Some(d) => values.push(d),
                    None => return whole,
                }
            }
            let values: Vec<Decimal> = values.iter().map(|d| normalize(decl, *d, int)).collect();
            let (Some(h), Some(l)) = (values.iter().max().copied(), values.iter().min().copied())
            else {
                return whole;
            };
            let (min, max) = bounds(decl);
            let (hi, hi_why) = if a.rep_up {
                (max, EndWhy::Bound)
            } else {
                match a.once_up {
                    None => (Some(h), EndWhy::Values(h)),
                    Some(s) => match h.checked_add(s) {
                        Some(v) if max.is_some_and(|m| v >= m) => (max, EndWhy::Bound),
                        Some(v) => (Some(v), EndWhy::Once(h, s)),
                        None => (max, EndWhy::Bound),
                    },
                }
            };
            let (lo, lo_why) = if a.rep_down {
                (min, EndWhy::Bound)
            } else {
                match a.once_down {
                    None => (Some(l), EndWhy::Values(l)),
                    Some(s) => match l.checked_add(s) {
                        Some(v) if min.is_some_and(|m| v <= m) => (min, EndWhy::Bound),
                        Some(v) => (Some(v), EndWhy::Once(l, s)),
                        None => (min, EndWhy::Bound),
                    },
                }
            };
            Range {
                abs: Abs::Num(Interval { lo, hi, int }),
                lo_why,
                hi_why,
                name,
            }
        }
        (Some(VarType::Scalar(ScalarType::Bool)), _) => {
            let mut t = false;
            let mut f = false;
            let start = decl
                .decl
                .default
                .as_ref()
                .map_or(Some(false), Value::as_bool);
            for v in std::iter::once(start).chain(a.sets.iter().map(Value::as_bool)) {
                match v {
                    Some(true) => t = true,
                    Some(false) => f = true,
                    None => return whole,
                }
            }
            Range {
                abs: Abs::Bool { t, f },
                ..whole
            }
        }
        (Some(VarType::Scalar(ScalarType::String)), _) => {
            let mut set = BTreeSet::new();
            let start = match &decl.decl.default {
                Some(v) => v.as_str(),
                None => Some(""),
            };
            for v in std::iter::once(start).chain(a.sets.iter().map(Value::as_str)) {
                match v {
                    Some(s) => {
                        set.insert(Arc::<str>::from(s));
                    }
                    None => return whole,
                }
            }
            Range {
                abs: Abs::Str(set),
                ..whole
            }
        }
        _ => whole,
    }
}

/// Rule 3 of Format 17.6: a derived `int` variable's expression judged.
fn derived_range(story: &Story, decl: &VarDecl, by_name: &HashMap<String, Range>) -> Range {
    let whole = domain(decl, decl.name.clone());
    if numeric(decl) != Some(true) || decl.is_keyed() {
        return whole;
    }
    let Some(src) = &decl.decl.derived else {
        return whole;
    };
    let env = owner_env(story, &decl.owner, false);
    let compiled = compile_once(story, &decl.owner, false, src, &env);
    let Ok(program) = &*compiled else {
        return whole;
    };
    let mut own = Ranges {
        by_slot: HashMap::new(),
    };
    own.index(story, &env, &decl.owner, by_name);
    let abs = Judge::new(&own, &env).eval(&program.root);
    match abs {
        Abs::Num(iv) if iv.int => {
            let (min, max) = bounds(decl);
            Range {
                abs: Abs::Num(iv.clamp(min, max)),
                lo_why: EndWhy::Derived,
                hi_why: EndWhy::Derived,
                name: decl.name.clone(),
            }
        }
        _ => whole,
    }
}

/// A read the judgement can narrow: a slot, or one key of a keyed one.
type ReadKey = (usize, Option<Arc<str>>);

struct Judge<'a> {
    ranges: &'a Ranges,
    env: &'a Env,
    narrowed: HashMap<ReadKey, Interval>,
    undo: Vec<(ReadKey, Option<Interval>)>,
}

fn dec_of_f64(f: f64) -> Option<Decimal> {
    if !f.is_finite() {
        return None;
    }
    // The shortest text that reads back as `f`, read exactly: a double
    // a Decimal cannot hold (1e-30) is none (*any*), never rounded.
    crate::changes::values::decimal_from_text(&format!("{f}"))
}

fn to_f64(d: Decimal) -> f64 {
    d.to_string().parse::<f64>().unwrap_or(f64::NAN)
}

/// Is every value of an `int` interval exactly a double?
fn f64_exact(iv: &Interval) -> bool {
    let lim = Decimal::from(1i64 << 53);
    !iv.int || [iv.lo, iv.hi].iter().flatten().all(|d| d.abs() <= lim)
}

/// (may be true, may be false) of `a op b` over two intervals; `None`
/// when it cannot be judged.
fn compare(op: CmpOp, a: &Interval, b: &Interval) -> Option<(bool, bool)> {
    if a.is_empty() || b.is_empty() {
        return Some((false, false));
    }
    let exact = (a.int && b.int) || (f64_exact(a) && f64_exact(b));
    if !exact {
        return None;
    }
    let doubles = !(a.int && b.int);
    // x < y possible for some x in [xlo..], y in [..yhi]?
    let lt = |x: Option<Decimal>, y: Option<Decimal>, strict: bool| -> bool {
        match (x, y) {
            (Some(x), Some(y)) => {
                if doubles {
                    let (x, y) = (to_f64(x), to_f64(y));
                    if strict {
                        x < y
                    } else {
                        x <= y
                    }
                } else if strict {
                    x < y
                } else {
                    x <= y
                }
            }
            _ => true,
        }
    };
    let point_eq = match (a.lo, a.hi, b.lo, b.hi) {
        (Some(al), Some(ah), Some(bl), Some(bh)) if al == ah && bl == bh => {
            if doubles {
                to_f64(al) == to_f64(bl)
            } else {
                al == bl
            }
        }
        _ => false,
    };
    let overlap = lt(a.lo, b.hi, false) && lt(b.lo, a.hi, false);
    Some(match op {
        CmpOp::Lt => (lt(a.lo, b.hi, true), lt(b.lo, a.hi, false)),
        CmpOp::Le => (lt(a.lo, b.hi, false), lt(b.lo, a.hi, true)),
        CmpOp::Gt => (lt(b.lo, a.hi, true), lt(a.lo, b.hi, false)),
        CmpOp::Ge => (lt(b.lo, a.hi, false), lt(a.lo, b.hi, true)),
        CmpOp::Eq => (overlap, !point_eq),
        CmpOp::Ne => (!point_eq, overlap),
    })
}

/// `x op b` narrowed: the values of `x` that can make it true.
fn narrow(x: &Interval, op: CmpOp, b: &Interval) -> Interval {
    let mut out = x.clone();
    let one = Decimal::ONE;
    // Each bound computed with checked arithmetic: one that overflows
    // narrows nothing.
    let margin = |d: Decimal| d.abs().max(one).checked_mul(Decimal::new(1, 12));
    let down = |v: Decimal| margin(v).and_then(|m| v.checked_sub(m));
    let up = |v: Decimal| margin(v).and_then(|m| v.checked_add(m));
    let raise = |lo: &mut Option<Decimal>, v: Option<Decimal>| {
        if let Some(v) = v {
            *lo = Some(lo.map_or(v, |l| l.max(v)));
        }
    };
    let lower = |hi: &mut Option<Decimal>, v: Option<Decimal>| {
        if let Some(v) = v {
            *hi = Some(hi.map_or(v, |h| h.min(v)));
        }
    };
    match op {
        CmpOp::Gt | CmpOp::Ge => {
            if let Some(v) = b.lo {
                let v = match (x.int, op) {
                    (true, CmpOp::Gt) => v.floor().checked_add(one),
                    (true, _) => Some(v.ceil()),
                    (false, _) => down(v),
                };
                raise(&mut out.lo, v);
            }
        }
        CmpOp::Lt | CmpOp::Le => {
            if let Some(v) = b.hi {
                let v = match (x.int, op) {
                    (true, CmpOp::Lt) => v.ceil().checked_sub(one),
                    (true, _) => Some(v.floor()),
                    (false, _) => up(v),
                };
                lower(&mut out.hi, v);
            }
        }
        CmpOp::Eq => {
            if x.int == b.int {
                if let Some(v) = b.lo {
                    raise(&mut out.lo, if x.int { Some(v) } else { down(v) });
                }
                if let Some(v) = b.hi {
                    lower(&mut out.hi, if x.int { Some(v) } else { up(v) });
                }
            }
        }
        CmpOp::Ne => {}
    }
    out
}

fn show(d: Option<Decimal>) -> String {
    d.map_or_else(String::new, |d| d.normalize().to_string())
}

fn describe_interval(iv: &Interval) -> String {
    match (iv.lo, iv.hi) {
        (Some(l), Some(h)) if l == h => format!("is always {}", show(Some(l))),
        (Some(_), Some(_)) => format!("stays within {}…{}", show(iv.lo), show(iv.hi)),
        (None, Some(_)) => format!("never goes above {}", show(iv.hi)),
        (Some(_), None) => format!("never goes below {}", show(iv.lo)),
        (None, None) => "can be any number".to_string(),
    }
}

fn end_why(why: &EndWhy, high: bool) -> String {
    match why {
        EndWhy::Bound => if high { "its max" } else { "its min" }.to_string(),
        EndWhy::Values(v) => format!(
            "it starts at or is set to {} {}, and nothing {}",
            if high { "at most" } else { "at least" },
            show(Some(*v)),
            if high { "adds to it" } else { "takes from it" }
        ),
        EndWhy::Once(v, s) => format!(
            "it starts at or is set to {} {}, and changes that apply once {} at most {}",
            if high { "at most" } else { "at least" },
            show(Some(*v)),
            if high { "add" } else { "take away" },
            show(Some(s.abs()))
        ),
        EndWhy::Derived => "its derived expression".to_string(),
        EndWhy::Env => "as the environment defines it".to_string(),
    }
}

impl<'a> Judge<'a> {
    fn new(ranges: &'a Ranges, env: &'a Env) -> Self {
        Judge {
            ranges,
            env,
            narrowed: HashMap::new(),
            undo: Vec::new(),
        }
    }

    fn rollback(&mut self, mark: usize) {
        while self.undo.len() > mark {
            if let Some((k, old)) = self.undo.pop() {
                match old {
                    Some(v) => self.narrowed.insert(k, v),
                    None => self.narrowed.remove(&k),
                };
            }
        }
    }

    fn push(&mut self, key: ReadKey, iv: Interval) {
        let old = self.narrowed.insert(key.clone(), iv);
        self.undo.push((key, old));
    }

    /// The narrowable read a node is, if any.
    fn read_key(&self, n: &Node) -> Option<ReadKey> {
        match n {
            Node::Slot(s) => {
                let (_, keyed) = self.ranges.by_slot.get(&(*s as usize))?;
                (!keyed).then_some((*s as usize, None))
            }
            Node::Select(a, f, false) => match &**a {
                Node::Slot(s) if self.is_keyed(*s) => Some((*s as usize, Some(f.clone()))),
                _ => None,
            },
            Node::Index(a, k) => match (&**a, &**k) {
                (Node::Slot(s), Node::Const(CelValue::String(k))) if self.is_keyed(*s) => {
                    Some((*s as usize, Some(k.clone())))
                }
                _ => None,
            },
            _ => None,
        }
    }

    fn is_keyed(&self, s: u32) -> bool {
        self.ranges
            .by_slot
            .get(&(s as usize))
            .is_some_and(|(_, k)| *k)
    }

    fn slot_range(&self, s: u32) -> Option<&Range> {
        self.ranges.by_slot.get(&(s as usize)).map(|(r, _)| r)
    }

    /// The judgement of a read of a key of keyed slot `s` (`key` when it
    /// is known).
    fn keyed_read(&self, s: u32, key: Option<Arc<str>>) -> Abs {
        if let Some(k) = &key
            && let Some(iv) = self.narrowed.get(&(s as usize, Some(k.clone())))
        {
            return Abs::Num(iv.clone());
        }
        self.slot_range(s).map_or(Abs::Any, |r| r.abs.clone())
    }

    /// Judges `n` (Format 17.6). When `n` is a comparison (or a `&&`, or
    /// `!` of one) the narrowing that it being true implies stays pushed;
    /// every other node leaves the narrowings as it found them.
    fn eval(&mut self, n: &Node) -> Abs {
        match n {
            Node::Const(v) => match v {
                CelValue::Int(i) => Abs::Num(Interval::point(Decimal::from(*i), true)),
                CelValue::Double(f) => match dec_of_f64(*f) {
                    Some(d) => Abs::Num(Interval::point(d, false)),
                    None => Abs::Any,
                },
                CelValue::Bool(b) => Abs::Bool { t: *b, f: !*b },
                CelValue::String(s) => Abs::Str(BTreeSet::from([s.clone()])),
                _ => Abs::Any,
            },
            Node::Slot(s) => {
                if let Some(iv) = self.narrowed.get(&(*s as usize, None)) {
                    return Abs::Num(iv.clone());
                }
                match self.ranges.by_slot.get(&(*s as usize)) {
                    Some((r, false)) => r.abs.clone(),
                    _ => Abs::Any,
                }
            }
            Node::Select(a, f, false) => match &**a {
                Node::Slot(s) if self.is_keyed(*s) => self.keyed_read(*s, Some(f.clone())),
                _ => Abs::Any,
            },
            Node::Index(a, k) => match &**a {
                Node::Slot(s) if self.is_keyed(*s) => {
                    let key = match &**k {
                        Node::Const(CelValue::String(k)) => Some(k.clone()),
                        _ => None,
                    };
                    let mark = self.undo.len();
                    let kv = self.eval(k);
                    self.rollback(mark);
                    if kv == Abs::Never {
                        return Abs::Never;
                    }
                    self.keyed_read(*s, key)
                }
                _ => Abs::Any,
            },
            Node::CmpSlotInt(op, s, i) => {
                let slot = Node::Slot(*s);
                let c = Node::Const(CelValue::Int(*i));
                self.cmp(*op, &slot, &c)
            }
            Node::Cmp(op, a, b) => self.cmp(*op, a, b),
            Node::Not(a) => {
                let mark = self.undo.len();
                let (t, f) = self.eval(a).tf();
                self.rollback(mark);
                // `!(x op c)` true means `x op c` was false.
                if let Node::Cmp(op, x, y) = &**a {
                    self.narrow_cmp(op.negated(), x, y);
                } else if let Node::CmpSlotInt(op, s, i) = &**a {
                    self.narrow_cmp(
                        op.negated(),
                        &Node::Slot(*s),
                        &Node::Const(CelValue::Int(*i)),
                    );
                }
                Abs::Bool { t: f, f: t }
            }
            Node::And(a, b, _) => {
                // `b` is judged given `a` (its narrowing stays pushed): `a && b`
                // is false when `a` is, or when `a` holds and `b` does not.
                let (at, af) = self.eval(a).tf();
                let (bt, bf) = self.eval(b).tf();
                Abs::Bool {
                    t: at && bt,
                    f: af || bf,
                }
            }
            Node::Or(a, b, _) => {
                let mark = self.undo.len();
                let (at, af) = self.eval(a).tf();
                self.rollback(mark);
                let (bt, bf) = self.eval(b).tf();
                self.rollback(mark);
                Abs::Bool {
                    t: at || bt,
                    f: af && bf,
                }
            }
            Node::Cond(c, x, y, _) => {
                let mark = self.undo.len();
                let (ct, cf) = self.eval(c).tf();
                let xv = if ct { self.eval(x) } else { Abs::Never };
                self.rollback(mark);
                let yv = if cf { self.eval(y) } else { Abs::Never };
                self.rollback(mark);
                xv.join(yv)
            }
            Node::Neg(a) => {
                let mark = self.undo.len();
                let v = self.eval(a);
                self.rollback(mark);
                match v {
                    Abs::Num(iv) => Abs::Num(Interval {
                        lo: iv.hi.map(|d| -d),
                        hi: iv.lo.map(|d| -d),
                        int: iv.int,
                    }),
                    Abs::Never => Abs::Never,
                    _ => Abs::Any,
                }
            }
            Node::Arith(op, a, b) => {
                let mark = self.undo.len();
                let av = self.eval(a);
                self.rollback(mark);
                let bv = self.eval(b);
                self.rollback(mark);
                arith(*op, av, bv)
            }
            _ => Abs::Any,
        }
    }

    fn cmp(&mut self, op: CmpOp, a: &Node, b: &Node) -> Abs {
        let mark = self.undo.len();
        let av = self.eval(a);
        self.rollback(mark);
        let bv = self.eval(b);
        self.rollback(mark);
        let out = match (&av, &bv) {
            (Abs::Never, _) | (_, Abs::Never) => return Abs::Never,
            (Abs::Num(x), Abs::Num(y)) => match compare(op, x, y) {
                Some((t, f)) => Abs::Bool { t, f },
                None => Abs::Bool { t: true, f: true },
            },
            (Abs::Bool { t: at, f: af }, Abs::Bool { t: bt, f: bf })
                if matches!(op, CmpOp::Eq | CmpOp::Ne) =>
            {
                let same = (*at && *bt) || (*af && *bf);
                let differ = (*at && *bf) || (*af && *bt);
                if op == CmpOp::Eq {
                    Abs::Bool { t: same, f: differ }
                } else {
                    Abs::Bool { t: differ, f: same }
                }
            }
            (Abs::Str(x), Abs::Str(y)) if matches!(op, CmpOp::Eq | CmpOp::Ne) => {
                let same = x.iter().any(|s| y.contains(s));
                let differ = !(x.len() == 1 && y.len() == 1 && x == y);
                if op == CmpOp::Eq {
                    Abs::Bool { t: same, f: differ }
                } else {
                    Abs::Bool { t: differ, f: same }
                }
            }
            _ => Abs::Bool { t: true, f: true },
        };
        self.narrow_cmp(op, a, b);
        out
    }

    /// Pushes the narrowing `a op b` being true implies, when one side is
    /// a narrowable read and the other a number.
    fn narrow_cmp(&mut self, op: CmpOp, a: &Node, b: &Node) {
        let (key, other, op) = match (self.read_key(a), self.read_key(b)) {
            (Some(k), _) => (k, b, op),
            (None, Some(k)) => (k, a, op.flipped()),
            _ => return,
        };
        let mark = self.undo.len();
        let ov = self.eval(other);
        self.rollback(mark);
        let Abs::Num(ov) = ov else { return };
        let current = match self.narrowed.get(&key) {
            Some(iv) => iv.clone(),
            None => match key.1.clone() {
                Some(k) => match self.keyed_read(key.0 as u32, Some(k)) {
                    Abs::Num(iv) => iv,
                    _ => return,
                },
                None => match self.slot_range(key.0 as u32).map(|r| &r.abs) {
                    Some(Abs::Num(iv)) => iv.clone(),
                    _ => return,
                },
            },
        };
        let n = narrow(&current, op, &ov);
        self.push(key, n);
    }
}

/// An interval end as an extended number (for `*`, Format 17.6).
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ext {
    NegInf,
    Fin(Decimal),
    PosInf,
}

/// `end` as an extended number: an absent end is -∞ (`high` false) or +∞.
fn ext(end: Option<Decimal>, high: bool) -> Ext {
    match (end, high) {
        (Some(d), _) => Ext::Fin(d),
        (None, false) => Ext::NegInf,
        (None, true) => Ext::PosInf,
    }
}

/// The product of two extended ends: 0 × ±∞ is 0; an overflow is the
/// infinity of the product's sign.
fn ext_mul(p: Ext, q: Ext) -> Ext {
    let sign = |e: Ext| match e {
        Ext::NegInf => -1,
        Ext::PosInf => 1,
        Ext::Fin(d) if d.is_zero() => 0,
        Ext::Fin(d) if d.is_sign_negative() => -1,
        Ext::Fin(_) => 1,
    };
    let s = sign(p) * sign(q);
    if s == 0 {
        return Ext::Fin(Decimal::ZERO);
    }
    let inf = if s > 0 { Ext::PosInf } else { Ext::NegInf };
    match (p, q) {
        (Ext::Fin(a), Ext::Fin(b)) => a.checked_mul(b).map_or(inf, Ext::Fin),
        _ => inf,
    }
}

/// `a op b` of two `int` intervals (Format 17.6); everything else is *any*.
fn arith(op: ArithOp, a: Abs, b: Abs) -> Abs {
    let (x, y) = match (a, b) {
        (Abs::Never, _) | (_, Abs::Never) => return Abs::Never,
        (Abs::Num(x), Abs::Num(y)) if x.int && y.int => (x, y),
        _ => return Abs::Any,
    };
    let add = |p: Option<Decimal>, q: Option<Decimal>| p.zip(q).and_then(|(p, q)| p.checked_add(q));
    let sub = |p: Option<Decimal>, q: Option<Decimal>| p.zip(q).and_then(|(p, q)| p.checked_sub(q));
    let iv = match op {
        ArithOp::Add => Interval {
            lo: add(x.lo, y.lo),
            hi: add(x.hi, y.hi),
            int: true,
        },
        ArithOp::Sub => Interval {
            lo: sub(x.lo, y.hi),
            hi: sub(x.hi, y.lo),
            int: true,
        },
        ArithOp::Mul => {
            // Ends as extended numbers (an absent low end is -∞, an absent
            // high end +∞); the product's ends are the least and greatest of
            // the four end products, with 0 × ∞ = 0 (every value is finite,
            // so a product with 0 is 0) and an overflowing product taken as
            // the infinity of its sign (wider, so still sound).
            let ends = [
                (ext(x.lo, false), ext(y.lo, false)),
                (ext(x.lo, false), ext(y.hi, true)),
                (ext(x.hi, true), ext(y.lo, false)),
                (ext(x.hi, true), ext(y.hi, true)),
            ];
            let products = ends.map(|(p, q)| ext_mul(p, q));
            let lo = products.iter().copied().fold(Ext::PosInf, Ext::min);
            let hi = products.iter().copied().fold(Ext::NegInf, Ext::max);
            Interval {
                lo: match lo {
                    Ext::Fin(d) => Some(d),
                    _ => None,
                },
                hi: match hi {
                    Ext::Fin(d) => Some(d),
                    _ => None,
                },
                int: true,
            }
        }
        ArithOp::Div | ArithOp::Rem => return Abs::Any,
    };
    Abs::Num(iv)
}

impl Judge<'_> {
    /// Why `n`, judged never true, cannot hold: the part that fails and the
    /// ranges of what it reads.
    fn explain(&mut self, n: &Node) -> String {
        match n {
            Node::Const(CelValue::Bool(false)) => "its condition is always false".to_string(),
            Node::CmpSlotInt(op, s, i) => {
                let slot = Node::Slot(*s);
                let c = Node::Const(CelValue::Int(*i));
                self.explain_cmp(n, *op, &slot, &c)
            }
            Node::Cmp(op, a, b) => self.explain_cmp(n, *op, a, b),
            Node::And(a, b, _) => {
                let mark = self.undo.len();
                let (at, _) = self.eval(a).tf();
                if !at {
                    self.rollback(mark);
                    return self.explain(a);
                }
                self.rollback(mark);
                let (bt, _) = self.eval(b).tf();
                self.rollback(mark);
                if !bt {
                    return self.explain(b);
                }
                let reads = self.reads_of(n);
                format!(
                    "it needs `{}` and `{}` at once, which no value can meet{}",
                    self.text(a),
                    self.text(b),
                    self.ranges_text(&reads, None, " (", ")")
                )
            }
            Node::Or(a, b, _) => {
                let mark = self.undo.len();
                let left = self.explain(a);
                self.rollback(mark);
                let right = self.explain(b);
                self.rollback(mark);
                format!("neither side of `||` can hold: {left}; and {right}")
            }
            _ => {
                let reads = self.reads_of(n);
                format!(
                    "`{}` is never true{}",
                    self.text(n),
                    self.ranges_text(&reads, None, ": ", "")
                )
            }
        }
    }

    fn explain_cmp(&mut self, n: &Node, op: CmpOp, a: &Node, b: &Node) -> String {
        let text = self.text(n);
        // The end of a read's range that blocks the comparison: a read on
        // the left of `>`/`>=` lacks high values, on the right low ones.
        let high = match (self.read_key(a), self.read_key(b)) {
            (Some(_), _) => match op {
                CmpOp::Gt | CmpOp::Ge => Some(true),
                CmpOp::Lt | CmpOp::Le => Some(false),
                CmpOp::Eq => Some(self.above(b, a)),
                CmpOp::Ne => None,
            },
            (None, Some(_)) => match op {
                CmpOp::Gt | CmpOp::Ge => Some(false),
                CmpOp::Lt | CmpOp::Le => Some(true),
                CmpOp::Eq => Some(self.above(a, b)),
                CmpOp::Ne => None,
            },
            _ => None,
        };
        let reads = self.reads_of(n);
        if reads.is_empty() {
            return format!("it needs `{text}`, which is never true");
        }
        format!(
            "it needs `{text}`, but{}",
            self.ranges_text(&reads, high.map(Some), " ", "")
        )
    }

    /// True when `x`'s values lie above `read`'s (for `==`).
    fn above(&mut self, x: &Node, read: &Node) -> bool {
        let mark = self.undo.len();
        let xv = self.eval(x);
        let rv = self.eval(read);
        self.rollback(mark);
        match (xv, rv) {
            (Abs::Num(x), Abs::Num(r)) => match (x.lo, r.hi) {
                (Some(l), Some(h)) => l > h,
                _ => false,
            },
            _ => false,
        }
    }

    /// The narrowable reads inside `n`, in order, each once.
    fn reads_of(&self, n: &Node) -> Vec<ReadKey> {
        fn walk(j: &Judge<'_>, n: &Node, out: &mut Vec<ReadKey>) {
            if let Some(k) = j.read_key(n) {
                if !out.contains(&k) {
                    out.push(k);
                }
                return;
            }
            // A key chosen at run time (`state.trust[char]`): the whole range.
            if let Node::Index(a, _) = n
                && let Node::Slot(s) = &**a
                && j.is_keyed(*s)
                && !out.contains(&(*s as usize, None))
            {
                out.push((*s as usize, None));
            }
            match n {
                Node::CmpSlotInt(_, s, _) => walk(j, &Node::Slot(*s), out),
                Node::Not(a) | Node::Neg(a) => walk(j, a, out),
                Node::Arith(_, a, b)
                | Node::Cmp(_, a, b)
                | Node::And(a, b, _)
                | Node::Or(a, b, _) => {
                    walk(j, a, out);
                    walk(j, b, out);
                }
                Node::Cond(c, a, b, _) => {
                    walk(j, c, out);
                    walk(j, a, out);
                    walk(j, b, out);
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        walk(self, n, &mut out);
        out
    }

    /// "deal_progress stays within 0…100 (its max)" for each read, joined
    /// with "and": `Some(Some(high))` gives the reason for that end only,
    /// `Some(None)` no reason, `None` both ends' reasons.
    fn ranges_text(
        &self,
        reads: &[ReadKey],
        high: Option<Option<bool>>,
        pre: &str,
        post: &str,
    ) -> String {
        let mut parts = Vec::new();
        for (slot, key) in reads {
            let Some(r) = self.slot_range(*slot as u32) else {
                continue;
            };
            let name = match key {
                Some(k) => format!("{}.{k}", r.name),
                None => r.name.clone(),
            };
            let iv = match &r.abs {
                Abs::Num(iv) => iv.clone(),
                Abs::Bool { t, f } => {
                    let v = match (t, f) {
                        (true, false) => "always true",
                        (false, true) => "always false",
                        _ => continue,
                    };
                    parts.push(format!(
                        "{name} is {v} (its start and every value it is set to)"
                    ));
                    continue;
                }
                Abs::Str(set) => {
                    let list: Vec<String> = set
                        .iter()
                        .map(|s| serde_json::Value::String(s.to_string()).to_string())
                        .collect();
                    parts.push(format!(
                        "{name} is one of {} (its start and every value it is set to)",
                        list.join(", ")
                    ));
                    continue;
                }
                _ => continue,
            };
            let mut whys = Vec::new();
            let ends = match high {
                Some(Some(true)) => vec![(true, iv.hi)],
                Some(Some(false)) => vec![(false, iv.lo)],
                Some(None) => vec![],
                None => vec![(false, iv.lo), (true, iv.hi)],
            };
            for (h, end) in ends {
                if end.is_none() {
                    continue;
                }
                let w = end_why(if h { &r.hi_why } else { &r.lo_why }, h);
                if !whys.contains(&w) {
                    whys.push(w);
                }
            }
            let whys = if whys == ["its min", "its max"] {
                vec!["its min and max".to_string()]
            } else {
                whys
            };
            let why = if whys.is_empty() {
                String::new()
            } else {
                format!(" ({})", whys.join("; "))
            };
            parts.push(format!("{name} {}{why}", describe_interval(&iv)));
        }
        if parts.is_empty() {
            return String::new();
        }
        format!("{pre}{}{post}", parts.join(" and "))
    }

    /// The expression as text, for messages.
    fn text(&self, n: &Node) -> String {
        let wrap = |j: &Self, m: &Node| {
            let t = j.text(m);
            match m {
                Node::And(..) | Node::Or(..) | Node::Cond(..) | Node::Arith(..) => {
                    format!("({t})")
                }
                _ => t,
            }
        };
        match n {
            Node::Const(v) => match v {
                CelValue::Int(i) => i.to_string(),
                CelValue::Double(f) => format!("{f:?}"),
                CelValue::Bool(b) => b.to_string(),
                CelValue::String(s) => serde_json::Value::String(s.to_string()).to_string(),
                _ => "…".to_string(),
            },
            Node::Slot(s) => self
                .env
                .slot_at(*s as usize)
                .map_or_else(|| "…".to_string(), |x| x.name.clone()),
            Node::Select(a, f, false) => format!("{}.{f}", self.text(a)),
            Node::Index(a, k) => format!("{}[{}]", self.text(a), self.text(k)),
            Node::CmpSlotInt(op, s, i) => {
                format!("{} {} {i}", self.text(&Node::Slot(*s)), op.symbol())
            }
            Node::Cmp(op, a, b) => format!("{} {} {}", wrap(self, a), op.symbol(), wrap(self, b)),
            Node::And(a, b, _) => format!("{} && {}", wrap(self, a), wrap(self, b)),
            Node::Or(a, b, _) => format!("{} || {}", wrap(self, a), wrap(self, b)),
            Node::Not(a) => match &**a {
                Node::Slot(_) | Node::Select(..) | Node::Const(_) => format!("!{}", self.text(a)),
                _ => format!("!({})", self.text(a)),
            },
            Node::Neg(a) => format!("-{}", wrap(self, a)),
            Node::Arith(op, a, b) => {
                let o = match op {
                    ArithOp::Add => "+",
                    ArithOp::Sub => "-",
                    ArithOp::Mul => "*",
                    ArithOp::Div => "/",
                    ArithOp::Rem => "%",
                };
                format!("{} {o} {}", wrap(self, a), wrap(self, b))
            }
            Node::Cond(c, a, b, _) => {
                format!("{} ? {} : {}", wrap(self, c), wrap(self, a), wrap(self, b))
            }
            _ => "…".to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The DEAD_LOGIC pointers and messages of one scenario.
    fn lint(vars: Value, rules: Value, events: Value) -> Vec<(String, String)> {
        let bundle = json!({"troupe": "0.1", "kind": "bundle",
            "characters": [{"id": "kai", "name": "Kai", "fictional": true, "age_band": "adult"}],
            "scenarios": [{"id": "s", "name": "S", "cast": [{"character": "kai"}],
                           "variables": vars, "rules": rules, "events": events}]});
        let story = crate::resolve::story::resolve(&bundle, 0, None, &mut Vec::new()).unwrap();
        let mut out = Vec::new();
        unreachable_conditions(&story, &[], &mut out);
        out.into_iter()
            .map(|d| {
                (
                    d.location.pointer.unwrap_or_default(),
                    d.message.to_string(),
                )
            })
            .collect()
    }

    #[test]
    fn numbers_compare_as_doubles_at_their_bounds() {
        let found = lint(
            json!([{"id": "imp", "type": "number", "default": 50, "min": 0, "max": 100}]),
            json!([{"id": "r", "keywords": ["x"], "changes": [{"add": {"imp": 0.5}}]}]),
            json!([{"id": "over", "when": "state.imp > 100.0"},
                   {"id": "at", "when": "state.imp >= 100.0"},
                   {"id": "mixed", "when": "state.imp > 99"},
                   {"id": "low", "when": "state.imp < 50.0"}]),
        );
        let at: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            at,
            ["/scenarios/0/events/0/when", "/scenarios/0/events/3/when"]
        );
        assert!(found[1].1.contains("nothing takes from it"), "{found:?}");
    }

    #[test]
    fn once_only_number_adds_round_up_to_places() {
        // 0 + 0.01 rounded up to 1 place is 0.1: `> 0.1` never holds, `>= 0.1` may.
        let found = lint(
            json!([{"id": "p", "type": "number", "places": 1}]),
            json!([]),
            json!([{"id": "bump", "when": "turn > 0", "changes": [{"add": {"p": 0.01}}]},
                   {"id": "over", "when": "state.p > 0.1"},
                   {"id": "at", "when": "state.p >= 0.1"}]),
        );
        let at: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(at, ["/scenarios/0/events/1/when"]);
    }

    #[test]
    fn undecidable_parts_keep_it_silent() {
        let found = lint(
            json!([{"id": "g", "type": "int", "max": 10},
                   {"id": "tags", "type": "list(string)"}]),
            json!([{"id": "r", "keywords": ["x"], "changes": [{"add": {"g": 1}},
                                                             {"set": {"tags": ["a"]}}]}]),
            json!([{"id": "a", "when": "size(state.tags) > 100"},
                   {"id": "b", "when": "state.g / 2 > 100"},
                   {"id": "c", "when": "'a' in state.tags && state.g > 5"},
                   {"id": "d", "when": "!(state.g > 100) && state.g != 3"},
                   // 4 and 5 meet both sides: `!` must not over-narrow.
                   {"id": "e", "when": "!(state.g > 5) && state.g > 3"}]),
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn a_double_no_decimal_holds_is_any_never_rounded() {
        // m ranges over 0…0, and 0.0 < 1e-30 holds at run time: a double
        // rounded to a Decimal (1e-30 → 0) would wrongly make it dead.
        let found = lint(
            json!([{"id": "m", "type": "number"}]),
            json!([{"id": "r", "keywords": ["x"], "changes": [{"set": {"m": 0}}]}]),
            json!([{"id": "tiny", "when": "state.m < 1e-30"}]),
        );
        assert!(found.is_empty(), "{found:?}");
    }

    #[test]
    fn once_only_number_takes_round_down_to_places() {
        // 0 - 0.01 rounded down to 1 place is -0.1 (rule 2): `< -0.1` never
        // holds, `<= -0.1` may.
        let found = lint(
            json!([{"id": "p", "type": "number", "places": 1, "min": -10}]),
            json!([]),
            json!([{"id": "dip", "when": "turn > 0", "changes": [{"add": {"p": -0.01}}]},
                   {"id": "under", "when": "state.p < -0.1"},
                   {"id": "at", "when": "state.p <= -0.1"}]),
        );
        let at: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(at, ["/scenarios/0/events/1/when"]);
    }
}
