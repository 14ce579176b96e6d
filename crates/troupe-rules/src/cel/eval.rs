//! The evaluator: walks a [`Program`](super::Program)'s nodes with CEL's
//! semantics (Format 11): int64 overflow and division by zero are errors,
//! `&&`/`||` absorb errors commutatively, a cost budget bounds comprehension
//! work. Slots and comprehension variables are read by index, never by name;
//! operands that are constants or variables are borrowed, not cloned.

use std::borrow::Cow;
use std::cmp::Ordering;
use std::sync::Arc;

use crate::bounded_regex::{self, Bounded};

use super::checker::{ArithOp, CmpOp, Func};
use super::env::Activation;
use super::error::{EvalError, EvalErrorKind as K};
use super::functions;
use super::parse::MacroKind;
use super::program::Node;
use super::value::{KeyRef, MapValue, Value};

/// What the engine provides to expressions: `hit()` for entry conditions
/// (Format 11.4) and `roll()` (11.5).
pub trait Host {
    /// True when any of `keys` matches the entry's scanned text (Format 5).
    fn hit(&mut self, keys: &[&str]) -> bool;
    /// Rolls dice in `NdM[+-K]` notation (Format 11.5).
    fn roll(&mut self, notation: &str) -> Result<i64, EvalError>;
}

/// A host for tests and tools: `hit()` is false, `roll()` fails.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoHost;

impl Host for NoHost {
    fn hit(&mut self, _keys: &[&str]) -> bool {
        false
    }
    fn roll(&mut self, _notation: &str) -> Result<i64, EvalError> {
        Err(EvalError::fixed(K::Roll, "roll() is not available here"))
    }
}

/// Receives the branches taken during an evaluation (coverage): `id` indexes
/// [`Program::branches`](super::Program::branches). For `&&`/`||` operands
/// `value` is the operand's bool (`None` when it errored or was not a bool);
/// for a `?:` arm it is `Some(true)` when the arm is taken.
pub trait Observer {
    /// One branch evaluated.
    fn branch(&mut self, id: u32, value: Option<bool>);
}

/// The observer that observes nothing (compiled away).
#[derive(Debug, Clone, Copy, Default)]
pub struct NoObserver;

impl Observer for NoObserver {
    #[inline(always)]
    fn branch(&mut self, _id: u32, _value: Option<bool>) {}
}

impl<F: FnMut(u32, Option<bool>)> Observer for F {
    fn branch(&mut self, id: u32, value: Option<bool>) {
        self(id, value)
    }
}

struct Frame<'a> {
    /// A list's element is borrowed from the list; a map's key is built.
    value: Cow<'a, Value>,
    parent: Option<&'a Frame<'a>>,
}

#[derive(Clone, Copy)]
struct Scope<'a> {
    act: &'a Activation,
    locals: Option<&'a Frame<'a>>,
}

struct State<'h, O: ?Sized> {
    host: &'h mut dyn Host,
    budget: u64,
    obs: &'h mut O,
}

const NO_OVERLOAD: EvalError = EvalError::fixed(K::NoSuchOverload, "no such overload");
const BUDGET: EvalError = EvalError::fixed(
    K::Budget,
    "the expression's cost budget is spent (too much comprehension work)",
);

thread_local! {
    /// What is left of the shared budget of the evaluations under way on
    /// this thread (Format 11.6 "shared budget"), `None` outside one.
    static SHARED: std::cell::Cell<Option<u64>> = const { std::cell::Cell::new(None) };
}

/// Until the returned scope is dropped, the evaluations made on this
/// thread share a budget of `units` (Format 11.6; `None`: none shared):
/// each evaluation's budget is the lesser of its own and what is left,
/// and what it spends is taken from what is left. Scopes nest: dropping
/// one restores the enclosing one.
#[must_use = "the budget is shared only while the scope lives"]
pub fn shared_budget(units: Option<u64>) -> SharedBudget {
    SharedBudget(SHARED.replace(units))
}

/// A scope of [`shared_budget`]; dropping it restores the enclosing one.
pub struct SharedBudget(Option<u64>);

impl Drop for SharedBudget {
    fn drop(&mut self) {
        SHARED.set(self.0);
    }
}

/// Runs `root`.
pub(crate) fn run<O: Observer + ?Sized>(
    root: &Node,
    act: &Activation,
    host: &mut dyn Host,
    budget: u64,
    obs: &mut O,
) -> Result<Value, EvalError> {
    let scope = Scope { act, locals: None };
    let shared = SHARED.get();
    let budget = shared.map_or(budget, |left| budget.min(left));
    let mut st = State { host, budget, obs };
    let out = eval(root, scope, &mut st);
    if let Some(left) = shared {
        SHARED.set(Some(left - (budget - st.budget)));
    }
    out
}

/// Checks an RE2-syntax pattern as the `regex` crate compiles it, with
/// CEL's size bounds: what decides CEL_TYPE for a literal pattern (Format
/// 11.1), and the message of a pattern that does not compile.
pub(crate) fn check_regex(pattern: &str) -> Result<(), EvalError> {
    regex::RegexBuilder::new(pattern)
        .size_limit(1 << 20)
        .dfa_size_limit(1 << 20)
        .nest_limit(64)
        .build()
        .map(|_| ())
        .map_err(|e| EvalError::new(K::Regex, format!("invalid regular expression: {e}")))
}

/// Compiles an RE2-syntax pattern for matching (Format 11.1, 16.2): the
/// bounded matcher, with [`check_regex`]'s bounds and message; `kept` for
/// a literal pattern, compiled once and searched at every evaluation.
pub(crate) fn compile_regex(pattern: &str, kept: bool) -> Result<Bounded, EvalError> {
    let options = bounded_regex::Options {
        nest_limit: 64,
        ..bounded_regex::Options::default()
    };
    let built = if kept {
        Bounded::new_kept(pattern, options)
    } else {
        Bounded::new(pattern, options)
    };
    match built {
        Ok(b) => Ok(b),
        Err(e) => Err(check_regex(pattern).err().unwrap_or_else(|| {
            EvalError::new(K::Regex, format!("invalid regular expression: {e}"))
        })),
    }
}

/// `s.matches(re)` with `re` compiled (Format 11.6, 16.2): the search's
/// bytes are charged as an operand's; a search that would cost more than
/// the bounded matcher allows is a budget error.
fn search<O: ?Sized>(st: &mut State<'_, O>, re: &Bounded, s: &str) -> Result<Value, EvalError> {
    charge(st, (s.len() / 16) as u64)?;
    re.is_match(s).map(Value::Bool).map_err(|_| TOO_COSTLY)
}

const TOO_COSTLY: EvalError = EvalError::fixed(
    K::Budget,
    "the regular expression costs too much to match against this text",
);

impl<'a> Scope<'a> {
    #[inline]
    fn local(&self, mut i: u32) -> Result<&'a Value, EvalError> {
        let mut f = self.locals;
        while let Some(fr) = f {
            if i == 0 {
                return Ok(fr.value.as_ref());
            }
            i -= 1;
            f = fr.parent;
        }
        Err(EvalError::fixed(
            K::Unbound,
            "unknown comprehension variable",
        ))
    }
}

/// The work an operation does on `v`, in budget units (Format 11.6): a
/// list's or map's length, a string's bytes / 16, else 0.
#[inline]
fn work(v: &Value) -> u64 {
    match v {
        Value::List(l) => l.len() as u64,
        Value::Map(m) => m.len() as u64,
        Value::String(s) => (s.len() / 16) as u64,
        _ => 0,
    }
}

#[inline]
fn charge<O: ?Sized>(st: &mut State<'_, O>, cost: u64) -> Result<(), EvalError> {
    if st.budget < cost {
        st.budget = 0;
        return Err(BUDGET);
    }
    st.budget -= cost;
    Ok(())
}

/// Evaluates `n`, borrowing when it is a constant or a variable. Inlined
/// for those cases (a returned `Cow` goes through memory, and reading it
/// back right after the callee wrote it stalls); the rest is out of line.
#[inline(always)]
fn operand<'a, O: Observer + ?Sized>(
    n: &'a Node,
    sc: Scope<'a>,
    st: &mut State<'_, O>,
) -> Result<Cow<'a, Value>, EvalError> {
    match n {
        Node::Const(v) => Ok(Cow::Borrowed(v)),
        Node::Slot(s) => sc.act.read(*s as usize).map(Cow::Borrowed),
        Node::Local(i) => sc.local(*i).map(Cow::Borrowed),
        _ => operand_nested(n, sc, st),
    }
}

/// [`operand`] for nodes other than constants and slots.
fn operand_nested<'a, O: Observer + ?Sized>(
    n: &'a Node,
    sc: Scope<'a>,
    st: &mut State<'_, O>,
) -> Result<Cow<'a, Value>, EvalError> {
    match n {
        // `state.trust[char]`: an element of a borrowed list or map is
        // borrowed too (no clone of the element, no owned result moved).
        Node::Index(a, b) => {
            let x = operand(a, sc, st)?;
            let y = operand(b, sc, st)?;
            match x {
                Cow::Borrowed(x) => index_ref(x, &y).map(Cow::Borrowed),
                Cow::Owned(x) => index_ref(&x, &y).cloned().map(Cow::Owned),
            }
        }
        _ => eval(n, sc, st).map(Cow::Owned),
    }
}

fn eval<O: Observer + ?Sized>(
    n: &Node,
    sc: Scope<'_>,
    st: &mut State<'_, O>,
) -> Result<Value, EvalError> {
    match n {
        Node::Const(v) => Ok(v.clone()),
        Node::Slot(s) => sc.act.read(*s as usize).cloned(),
        Node::SlotBound(s) => Ok(Value::Bool(sc.act.get(*s as usize).is_some())),
        Node::Local(i) => sc.local(*i).cloned(),
        // Conditions: one implementation, in `truth`.
        Node::CmpSlotInt(..) | Node::Cmp(..) | Node::Not(_) => truth(n, sc, st).map(Value::Bool),
        Node::Neg(a) => match operand(a, sc, st)?.as_ref() {
            Value::Int(i) => i
                .checked_neg()
                .map(Value::Int)
                .ok_or(EvalError::fixed(K::Overflow, "int overflow in negation")),
            Value::Double(d) => Ok(Value::Double(-d)),
            _ => Err(NO_OVERLOAD),
        },
        Node::Arith(op, a, b) => {
            let x = operand(a, sc, st)?;
            let y = operand(b, sc, st)?;
            arith(*op, &x, &y, st)
        }
        Node::And(a, b, id) => {
            let x = truth(a, sc, st);
            st.obs.branch(*id, x.as_ref().ok().copied());
            if let Ok(false) = x {
                return Ok(Value::Bool(false));
            }
            let y = truth(b, sc, st);
            st.obs.branch(*id + 1, y.as_ref().ok().copied());
            match (x, y) {
                (_, Ok(false)) => Ok(Value::Bool(false)),
                (Err(e), _) | (_, Err(e)) => Err(e),
                _ => Ok(Value::Bool(true)),
            }
        }
        Node::Or(a, b, id) => {
            let x = truth(a, sc, st);
            st.obs.branch(*id, x.as_ref().ok().copied());
            if let Ok(true) = x {
                return Ok(Value::Bool(true));
            }
            let y = truth(b, sc, st);
            st.obs.branch(*id + 1, y.as_ref().ok().copied());
            match (x, y) {
                (_, Ok(true)) => Ok(Value::Bool(true)),
                (Err(e), _) | (_, Err(e)) => Err(e),
                _ => Ok(Value::Bool(false)),
            }
        }
        Node::Cond(c, a, b, id) => {
            if truth(c, sc, st)? {
                st.obs.branch(*id, Some(true));
                eval(a, sc, st)
            } else {
                st.obs.branch(*id + 1, Some(true));
                eval(b, sc, st)
            }
        }
        Node::Index(a, b) => {
            let x = operand(a, sc, st)?;
            let y = operand(b, sc, st)?;
            index(&x, &y)
        }
        Node::In(a, b) => {
            let x = operand(a, sc, st)?;
            let y = operand(b, sc, st)?;
            // A list is searched element by element; a map is one lookup.
            let searched = if matches!(y.as_ref(), Value::List(_)) {
                work(&y)
            } else {
                0
            };
            charge(st, searched + work(&x))?;
            Ok(Value::Bool(match y.as_ref() {
                Value::List(l) => l.iter().any(|e| e.cel_eq(&x)),
                Value::Map(m) => match KeyRef::from_value(&x) {
                    Some(k) => map_get(m, k).is_some(),
                    None => false,
                },
                _ => return Err(NO_OVERLOAD),
            }))
        }
        Node::Select(a, field, test) => {
            // A map slot bound field by field (`Activation::set_field`):
            // the field read without the map.
            if let Node::Slot(s) = **a
                && sc.act.get(s as usize).is_none()
                && let Some(v) = sc.act.field(s as usize, field)
            {
                return match (test, v) {
                    (true, v) => Ok(Value::Bool(v.is_some())),
                    (false, Some(v)) => Ok(v.clone()),
                    (false, None) => Err(EvalError::new(
                        K::NoSuchKey,
                        format!("no such key: {field}"),
                    )),
                };
            }
            let x = operand(a, sc, st)?;
            match x.as_ref() {
                Value::Map(m) => {
                    let k = KeyRef::Str(field);
                    if *test {
                        Ok(Value::Bool(map_get(m, k).is_some()))
                    } else {
                        map_get(m, k).cloned().ok_or_else(|| {
                            EvalError::new(K::NoSuchKey, format!("no such key: {field}"))
                        })
                    }
                }
                _ => Err(EvalError::new(
                    K::NoSuchOverload,
                    format!("a {} has no field `{field}`", x.kind()),
                )),
            }
        }
        Node::MatchesConst(a, re) => match operand(a, sc, st)?.as_ref() {
            Value::String(s) => search(st, re, s),
            _ => Err(NO_OVERLOAD),
        },
        Node::Call(f, args) => call(*f, args, sc, st),
        Node::List(items) => {
            let mut out = Vec::with_capacity(items.len());
            for it in items.iter() {
                out.push(eval(it, sc, st)?);
            }
            Ok(Value::List(Arc::new(out)))
        }
        Node::Map(entries) => {
            let mut m = MapValue::with_capacity_and_hasher(entries.len(), Default::default());
            for (k, v) in entries.iter() {
                let kv = eval(k, sc, st)?;
                let key = kv.to_key().ok_or_else(|| {
                    EvalError::new(
                        K::InvalidKey,
                        format!("a {} cannot be a map key", kv.kind()),
                    )
                })?;
                let vv = eval(v, sc, st)?;
                if m.insert(key, vv).is_some() {
                    return Err(EvalError::new(
                        K::InvalidKey,
                        format!("repeated map key {kv}"),
                    ));
                }
            }
            Ok(Value::Map(Arc::new(m)))
        }
        Node::Comp {
            kind,
            range,
            pred,
            transform,
        } => {
            let r = operand(range, sc, st)?;
            match r.as_ref() {
                Value::List(l) => {
                    comprehension(*kind, l.iter().map(Cow::Borrowed), pred, transform, sc, st)
                }
                Value::Map(m) => comprehension(
                    *kind,
                    m.keys().map(|k| Cow::Owned(k.to_value())),
                    pred,
                    transform,
                    sc,
                    st,
                ),
                _ => Err(NO_OVERLOAD),
            }
        }
    }
}

/// Evaluates `n` where a bool is required (a condition, an operand of
/// `&&`/`||`, the test of `?:`, a comprehension's predicate): the same
/// semantics as [`eval`] followed by "must be a bool", without building a
/// [`Value`] for the comparisons and constants that conditions are made of.
#[inline]
fn truth<O: Observer + ?Sized>(
    n: &Node,
    sc: Scope<'_>,
    st: &mut State<'_, O>,
) -> Result<bool, EvalError> {
    match n {
        Node::Const(Value::Bool(b)) => Ok(*b),
        Node::Slot(s) => match sc.act.read(*s as usize)? {
            Value::Bool(b) => Ok(*b),
            _ => Err(NO_OVERLOAD),
        },
        Node::CmpSlotInt(op, s, k) => cmp_slot_int(*op, sc.act.read(*s as usize)?, *k),
        Node::Cmp(op, a, b) => {
            let x = operand(a, sc, st)?;
            let y = operand(b, sc, st)?;
            // Two ints or two doubles (a comprehension's `x >= 0`, a keyed
            // number against a constant): no work to charge, and the order
            // is the whole comparison (as in `compare`).
            match (x.as_ref(), y.as_ref()) {
                (Value::Int(i), Value::Int(k)) => {
                    return Ok(ord_result(*op, Some(i.cmp(k)), || i == k))
                }
                (Value::Double(i), Value::Double(k)) => {
                    return Ok(ord_result(*op, i.partial_cmp(k), || i == k))
                }
                _ => {}
            }
            charge(st, work(&x) + work(&y))?;
            compare(*op, &x, &y)
        }
        Node::Not(a) => truth(a, sc, st).map(|b| !b),
        // Never a node of the arms above (eval hands those back here).
        _ => match eval(n, sc, st)? {
            Value::Bool(b) => Ok(b),
            _ => Err(NO_OVERLOAD),
        },
    }
}

/// `slot <op> int constant` (the node [`Node::CmpSlotInt`]).
#[inline]
fn cmp_slot_int(op: CmpOp, v: &Value, k: i64) -> Result<bool, EvalError> {
    let ord = match v {
        Value::Int(i) => Some(i.cmp(&k)),
        Value::Double(d) => cmp_double_int(*d, k),
        _ => return Err(NO_OVERLOAD),
    };
    Ok(ord_result(op, ord, || v.cel_eq(&Value::Int(k))))
}

fn comprehension<'v, O: Observer + ?Sized>(
    kind: MacroKind,
    items: impl Iterator<Item = Cow<'v, Value>>,
    pred: &Option<Box<Node>>,
    transform: &Option<Box<Node>>,
    sc: Scope<'_>,
    st: &mut State<'_, O>,
) -> Result<Value, EvalError> {
    let mut error: Option<EvalError> = None;
    let mut count = 0usize;
    let mut out: Vec<Value> = Vec::new();
    for item in items {
        charge(st, 1)?;
        let frame = Frame {
            value: item,
            parent: sc.locals,
        };
        let inner = Scope {
            act: sc.act,
            locals: Some(&frame),
        };
        let p = pred.as_ref().map(|p| truth(p, inner, st));
        match kind {
            MacroKind::All => match p {
                Some(Ok(false)) => return Ok(Value::Bool(false)),
                Some(Err(e)) => {
                    error.get_or_insert(e);
                }
                _ => {}
            },
            MacroKind::Exists => match p {
                Some(Ok(true)) => return Ok(Value::Bool(true)),
                Some(Err(e)) => {
                    error.get_or_insert(e);
                }
                _ => {}
            },
            MacroKind::ExistsOne => match p {
                Some(Ok(true)) => count += 1,
                Some(Err(e)) => return Err(e),
                _ => {}
            },
            MacroKind::Filter => match p {
                Some(Ok(true)) => out.push(frame.value.into_owned()),
                Some(Err(e)) => return Err(e),
                _ => {}
            },
            MacroKind::Map => {
                let keep = match p {
                    None | Some(Ok(true)) => true,
                    Some(Ok(false)) => false,
                    Some(Err(e)) => return Err(e),
                };
                if keep && let Some(t) = transform {
                    out.push(eval(t, inner, st)?);
                }
            }
        }
    }
    match kind {
        MacroKind::All => error.map_or(Ok(Value::Bool(true)), Err),
        MacroKind::Exists => error.map_or(Ok(Value::Bool(false)), Err),
        MacroKind::ExistsOne => Ok(Value::Bool(count == 1)),
        MacroKind::Filter | MacroKind::Map => Ok(Value::List(Arc::new(out))),
    }
}

fn arith<O: ?Sized>(
    op: ArithOp,
    x: &Value,
    y: &Value,
    st: &mut State<'_, O>,
) -> Result<Value, EvalError> {
    const OVERFLOW: EvalError = EvalError::fixed(K::Overflow, "int overflow");
    const DIV0: EvalError = EvalError::fixed(K::DivideByZero, "division by zero");
    match (x, y) {
        (Value::Int(a), Value::Int(b)) => {
            let (a, b) = (*a, *b);
            let r = match op {
                ArithOp::Add => a.checked_add(b),
                ArithOp::Sub => a.checked_sub(b),
                ArithOp::Mul => a.checked_mul(b),
                ArithOp::Div => {
                    if b == 0 {
                        return Err(DIV0);
                    }
                    a.checked_div(b)
                }
                ArithOp::Rem => {
                    if b == 0 {
                        return Err(EvalError::fixed(K::DivideByZero, "modulus by zero"));
                    }
                    Some(if b == -1 { 0 } else { a % b })
                }
            };
            r.map(Value::Int).ok_or(OVERFLOW)
        }
        (Value::Double(a), Value::Double(b)) => Ok(Value::Double(match op {
            ArithOp::Add => a + b,
            ArithOp::Sub => a - b,
            ArithOp::Mul => a * b,
            ArithOp::Div => a / b,
            ArithOp::Rem => return Err(NO_OVERLOAD),
        })),
        (Value::String(a), Value::String(b)) if op == ArithOp::Add => {
            charge(st, ((a.len() + b.len()) / 16) as u64)?;
            let mut s = String::with_capacity(a.len() + b.len());
            s.push_str(a);
            s.push_str(b);
            Ok(Value::String(Arc::from(s)))
        }
        (Value::List(a), Value::List(b)) if op == ArithOp::Add => {
            if b.is_empty() {
                return Ok(x.clone());
            }
            if a.is_empty() {
                return Ok(y.clone());
            }
            charge(st, (a.len() + b.len()) as u64)?;
            let mut v = Vec::with_capacity(a.len() + b.len());
            v.extend(a.iter().cloned());
            v.extend(b.iter().cloned());
            Ok(Value::List(Arc::new(v)))
        }
        _ => Err(NO_OVERLOAD),
    }
}

/// 2^63 as a double (the first double above `i64::MAX`).
pub(crate) const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// Orders an int and a double exactly (no rounding of the int).
fn cmp_int_double(i: i64, d: f64) -> Option<Ordering> {
    if d.is_nan() {
        return None;
    }
    if d >= TWO_63 {
        return Some(Ordering::Less);
    }
    if d < -TWO_63 {
        return Some(Ordering::Greater);
    }
    let t = d.trunc();
    match i.cmp(&(t as i64)) {
        Ordering::Equal => (0.0).partial_cmp(&(d - t)),
        o => Some(o),
    }
}

fn cmp_double_int(d: f64, i: i64) -> Option<Ordering> {
    cmp_int_double(i, d).map(Ordering::reverse)
}

#[inline]
fn ord_result(op: CmpOp, ord: Option<Ordering>, eq: impl FnOnce() -> bool) -> bool {
    match op {
        CmpOp::Eq => eq(),
        CmpOp::Ne => !eq(),
        CmpOp::Lt => ord == Some(Ordering::Less),
        CmpOp::Le => matches!(ord, Some(Ordering::Less | Ordering::Equal)),
        CmpOp::Gt => ord == Some(Ordering::Greater),
        CmpOp::Ge => matches!(ord, Some(Ordering::Greater | Ordering::Equal)),
    }
}

fn compare(op: CmpOp, x: &Value, y: &Value) -> Result<bool, EvalError> {
    if matches!(op, CmpOp::Eq | CmpOp::Ne) {
        let eq = x.cel_eq(y);
        return Ok(if op == CmpOp::Eq { eq } else { !eq });
    }
    let ord = match (x, y) {
        (Value::Bool(a), Value::Bool(b)) => Some(a.cmp(b)),
        (Value::Int(a), Value::Int(b)) => Some(a.cmp(b)),
        (Value::Double(a), Value::Double(b)) => a.partial_cmp(b),
        (Value::String(a), Value::String(b)) => Some(a.as_bytes().cmp(b.as_bytes())),
        (Value::Int(a), Value::Double(b)) => cmp_int_double(*a, *b),
        (Value::Double(a), Value::Int(b)) => cmp_double_int(*a, *b),
        _ => return Err(NO_OVERLOAD),
    };
    Ok(ord_result(op, ord, || false))
}

fn index(x: &Value, y: &Value) -> Result<Value, EvalError> {
    index_ref(x, y).cloned()
}

/// `x[y]` (Format 11): a list by an int (or an integral double), a map by
/// a key; borrowed from `x`.
fn index_ref<'v>(x: &'v Value, y: &Value) -> Result<&'v Value, EvalError> {
    match x {
        Value::List(l) => {
            let i = match y {
                Value::Int(i) => *i,
                Value::Double(d) if d.fract() == 0.0 && d.is_finite() => *d as i64,
                _ => return Err(NO_OVERLOAD),
            };
            usize::try_from(i)
                .ok()
                .and_then(|i| l.get(i))
                .ok_or_else(|| {
                    EvalError::new(
                        K::NoSuchKey,
                        format!("index {i} out of range for a list of {}", l.len()),
                    )
                })
        }
        Value::Map(m) => {
            let key = KeyRef::from_value(y).ok_or_else(|| {
                EvalError::new(K::InvalidKey, format!("a {} is not a map key", y.kind()))
            })?;
            map_get(m, key).ok_or_else(|| EvalError::new(K::NoSuchKey, format!("no such key: {y}")))
        }
        _ => Err(NO_OVERLOAD),
    }
}

/// The value of key `k` in `m`. A map of a few entries (a keyed
/// variable's characters, a small literal) is searched in order, which
/// costs less than hashing the key; a larger one is looked up by hash.
/// Keys are unique, so both find the same entry.
#[inline]
fn map_get<'m>(m: &'m MapValue, k: KeyRef<'_>) -> Option<&'m Value> {
    const SCAN: usize = 8;
    if m.len() <= SCAN {
        m.iter().find(|(key, _)| key.as_ref() == k).map(|(_, v)| v)
    } else {
        m.get(&k)
    }
}

fn call<O: Observer + ?Sized>(
    f: Func,
    args: &[Node],
    sc: Scope<'_>,
    st: &mut State<'_, O>,
) -> Result<Value, EvalError> {
    match f {
        Func::Hit => {
            let mut vals = Vec::with_capacity(args.len());
            for a in args {
                vals.push(operand(a, sc, st)?);
            }
            let mut keys: Vec<&str> = Vec::new();
            for v in &vals {
                charge(st, work(v.as_ref()))?;
                match v.as_ref() {
                    Value::String(s) => keys.push(s),
                    Value::List(l) => {
                        for e in l.iter() {
                            match e {
                                Value::String(s) => keys.push(s),
                                _ => return Err(NO_OVERLOAD),
                            }
                        }
                    }
                    _ => return Err(NO_OVERLOAD),
                }
            }
            Ok(Value::Bool(st.host.hit(&keys)))
        }
        Func::Roll => {
            let [a] = args else { return Err(NO_OVERLOAD) };
            let v = operand(a, sc, st)?;
            match v.as_ref() {
                Value::String(s) => st.host.roll(s).map(Value::Int),
                _ => Err(NO_OVERLOAD),
            }
        }
        _ => match args {
            [a] => {
                let x = operand(a, sc, st)?;
                charge(st, work(&x))?;
                functions::unary(f, &x)
            }
            [a, b] if f == Func::Matches => {
                let x = operand(a, sc, st)?;
                let y = operand(b, sc, st)?;
                let (Value::String(s), Value::String(p)) = (x.as_ref(), y.as_ref()) else {
                    return Err(NO_OVERLOAD);
                };
                // A pattern made at run time (Format 11.6): its bytes, then
                // its compiled size (one unit per NFA state), then the
                // search.
                charge(st, (p.len() / 16) as u64)?;
                let re = compile_regex(p, false)?;
                charge(st, re.states())?;
                search(st, &re, s)
            }
            [a, b] => {
                let x = operand(a, sc, st)?;
                let y = operand(b, sc, st)?;
                charge(st, work(&x) + work(&y))?;
                functions::binary(f, &x, &y)
            }
            _ => Err(NO_OVERLOAD),
        },
    }
}
