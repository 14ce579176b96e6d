//! A compiled program (Format 11): the checked tree lowered to evaluation
//! nodes, with constants folded, constant regular expressions compiled once,
//! and comparisons of a slot with a constant specialized.

use std::ops::Range;
use std::sync::{Arc, OnceLock};

use crate::bounded_regex::Bounded;

use super::checker::{ArithOp, CmpOp, Func, TExpr, TKind};
use super::env::{Activation, Env};
use super::error::{CelError, EvalError};
use super::eval::{self, Host, NoObserver, Observer};
use super::parse::{self, MacroKind};
use super::types::Type;
use super::value::Value;

/// The default cost budget of one evaluation (Format 11.6): comprehension
/// iterations, plus the work of every operation whose work grows with its
/// operands — the length of each list or map compared, searched by `in`,
/// built by `+` or passed to a function, and a string's bytes / 16 (see
/// [`Program::eval_with_budget`]).
pub const DEFAULT_BUDGET: u64 = 100_000;

/// The budget the `when`s of the events and outcomes evaluated at one
/// message share, and the one the `when`s of the rules tried for one
/// reply share (Format 11.6): ten evaluations' worth.
pub const SHARED_BUDGET: u64 = 1_000_000;

/// An evaluation node.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(crate) enum Node {
    Const(Value),
    Slot(u32),
    SlotBound(u32),
    Local(u32),
    Not(Box<Node>),
    Neg(Box<Node>),
    Arith(ArithOp, Box<Node>, Box<Node>),
    Cmp(CmpOp, Box<Node>, Box<Node>),
    /// `slot <op> int constant`: the common condition shape.
    CmpSlotInt(CmpOp, u32, i64),
    And(Box<Node>, Box<Node>, u32),
    Or(Box<Node>, Box<Node>, u32),
    Cond(Box<Node>, Box<Node>, Box<Node>, u32),
    Index(Box<Node>, Box<Node>),
    In(Box<Node>, Box<Node>),
    Select(
        Box<Node>,
        #[serde(deserialize_with = "crate::wire::shared_str")] Arc<str>,
        bool,
    ),
    Call(Func, Box<[Node]>),
    MatchesConst(Box<Node>, #[serde(with = "regex_serde")] Box<Bounded>),
    List(Box<[Node]>),
    Map(Box<[(Node, Node)]>),
    Comp {
        kind: MacroKind,
        range: Box<Node>,
        pred: Option<Box<Node>>,
        transform: Option<Box<Node>>,
    },
}

impl Node {
    /// Calls `f` on each direct operand of this node, left to right (a
    /// map's key before its value; a comprehension's range, predicate,
    /// transform): the one walk the tree analyses share.
    fn for_each_child(&self, mut f: impl FnMut(&Node)) {
        match self {
            Node::Const(_)
            | Node::Slot(_)
            | Node::SlotBound(_)
            | Node::Local(_)
            | Node::CmpSlotInt(..) => {}
            Node::Not(a) | Node::Neg(a) | Node::Select(a, _, _) | Node::MatchesConst(a, _) => f(a),
            Node::Arith(_, a, b)
            | Node::Cmp(_, a, b)
            | Node::Index(a, b)
            | Node::In(a, b)
            | Node::And(a, b, _)
            | Node::Or(a, b, _) => {
                f(a);
                f(b);
            }
            Node::Cond(c, a, b, _) => {
                f(c);
                f(a);
                f(b);
            }
            Node::Call(_, args) | Node::List(args) => args.iter().for_each(f),
            Node::Map(pairs) => pairs.iter().for_each(|(k, x)| {
                f(k);
                f(x);
            }),
            Node::Comp {
                range,
                pred,
                transform,
                ..
            } => {
                f(range);
                [pred, transform].into_iter().flatten().for_each(|x| f(x));
            }
        }
    }
}

/// What a branch is (for coverage): an operand of `&&` or `||`, or an arm
/// of `?:`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BranchKind {
    /// The left operand of `&&`.
    AndLeft,
    /// The right operand of `&&`.
    AndRight,
    /// The left operand of `||`.
    OrLeft,
    /// The right operand of `||`.
    OrRight,
    /// The `then` arm of `?:`.
    Then,
    /// The `else` arm of `?:`.
    Else,
}

/// One branch of a program, for coverage: its kind and the byte span of the
/// operator it belongs to. Serialized as `[kind, start, end]`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(into = "BranchWire", from = "BranchWire")]
pub struct Branch {
    /// What the branch is.
    pub kind: BranchKind,
    /// Byte span of the operator (`&&`, `||`, `?`) in the source.
    pub span: Range<usize>,
}

/// The serialized form of a [`Branch`]: kind, span start, span end.
#[derive(serde::Serialize, serde::Deserialize)]
struct BranchWire(BranchKind, usize, usize);

impl From<Branch> for BranchWire {
    fn from(b: Branch) -> BranchWire {
        BranchWire(b.kind, b.span.start, b.span.end)
    }
}

impl From<BranchWire> for Branch {
    fn from(BranchWire(kind, start, end): BranchWire) -> Branch {
        Branch {
            kind,
            span: start..end,
        }
    }
}

/// The operands of a program as byte ranges of its source, and, by branch
/// id, what a report of that branch says about them.
type OperandTable = (Vec<Range<usize>>, Vec<Option<super::operands::Seen>>);

/// A compiled expression: checked once, evaluated many times.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub struct Program {
    pub(crate) root: Node,
    result_type: Type,
    #[serde(default, skip_serializing_if = "crate::wire::skip_empty")]
    branches: Vec<Branch>,
    /// The source (read from `ir.compact`, a range of its string table).
    source: crate::wire::TableStr,
    /// The operands and what each branch report says of them, derived
    /// from the tree, the branches and the source when first asked for
    /// (coverage and explanations ask; running does not), so they are not
    /// written in the IR.
    #[serde(skip)]
    operand_table: OnceLock<OperandTable>,
    /// The slots read only through constant fields, with those fields
    /// ([`Program::field_reads`]), derived from the tree when first asked
    /// for, so not written in the IR.
    #[serde(skip)]
    field_reads: OnceLock<FieldReads>,
    /// The environment slots the expression reads, ascending, each once.
    /// (A `Vec`, not a list held in place: `slots()` is read at every
    /// evaluation, and a slice of a list held in place costs a branch
    /// there; docs/performance.md, Run AY.)
    #[serde(default, skip_serializing_if = "crate::wire::skip_empty")]
    slots: Vec<u32>,
}

/// Parses, type-checks and lowers `source` against `env` (the parse is
/// shared through an active `parse::ParseCache`, if any).
pub fn compile(source: &str, env: &Env) -> Result<Program, Vec<CelError>> {
    let ast = parse::parse_shared(source)?;
    let (texpr, ty) = super::checker::check(&ast, source, env)?;
    let mut slots = Vec::new();
    super::checker::slot_reads(&texpr, &mut slots);
    let mut slot_list: Vec<u32> = slots.iter().map(|s| *s as u32).collect();
    slot_list.sort_unstable();
    slot_list.dedup();
    let mut l = Lowerer {
        branches: Vec::new(),
    };
    let root = l.lower(texpr);
    Ok(Program {
        root,
        result_type: ty,
        branches: l.branches,
        source: crate::wire::TableStr::new(source),
        slots: slot_list,
        operand_table: OnceLock::new(),
        field_reads: OnceLock::new(),
    })
}

impl Program {
    /// The type of the expression's value.
    pub fn result_type(&self) -> &Type {
        &self.result_type
    }

    /// The source text.
    #[cfg(any(test, feature = "internals"))]
    pub fn source(&self) -> &str {
        &self.source
    }

    /// The flattened names of the environment slots the expression reads
    /// (`state.gold`, `own.mood`, `turn`), sorted, each once; `env` is the
    /// environment it was compiled against (or one with the same slots,
    /// such as the same owner's with `hit()` declared). Derived from
    /// [`Program::slots`], so `ir.json` does not carry the names.
    pub fn reads(&self, env: &Env) -> Vec<String> {
        let mut names: Vec<String> = self
            .slots
            .iter()
            .filter_map(|&s| env.slot_at(s as usize).map(|x| x.name.clone()))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// The environment slots the expression reads, ascending, each once
    /// (only these need a value to evaluate it).
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }

    /// The slots the program reads only as `slot.field` with a constant
    /// field name (`state.trust.tobias`, `has(state.trust.ines)`), each with
    /// those fields, by ascending slot. An evaluation may bind such a slot
    /// field by field ([`Activation::set_field`]) instead of building the
    /// whole map: the program reads nothing else of it.
    pub fn field_reads(&self) -> &[(u32, Vec<Arc<str>>)] {
        self.field_reads.get_or_init(|| {
            let mut f = FieldWalk::default();
            f.walk(&self.root);
            let mut out: FieldReads = Vec::new();
            for (s, field) in f.fields {
                if f.whole.contains(&s) {
                    continue;
                }
                match out.iter_mut().find(|(x, _)| *x == s) {
                    Some((_, fs)) => {
                        if !fs.contains(&field) {
                            fs.push(field);
                        }
                    }
                    None => out.push((s, vec![field])),
                }
            }
            out.sort_by_key(|(s, _)| *s);
            out
        })
    }

    /// What evaluating the program can read, found by walking its tree
    /// (never taken from the slot list an IR states): the environment
    /// slots it reads, ascending, each once, and whether it calls `roll()`,
    /// whose value depends on the evaluation point and on the calls made
    /// before it (Format 11.5). Apart from these and `hit()` (false outside
    /// an entry's condition), a program's value is a function of its slots.
    pub fn tree_inputs(&self) -> (Vec<u32>, bool) {
        let mut t = TreeInputs::default();
        t.walk(&self.root);
        t.slots.sort_unstable();
        t.slots.dedup();
        (t.slots, t.rolls)
    }

    /// The branches (operands of `&&`/`||`, arms of `?:`), indexed by the
    /// ids an [`Observer`] receives.
    #[cfg(any(test, feature = "internals"))]
    pub fn branches(&self) -> &[Branch] {
        &self.branches
    }

    /// The operands of the expression as a condition (Format 21.6): each
    /// member of a maximal `&&`/`||` chain and each `?:` condition reached
    /// from the root through `&&`, `||` and `?:` only, as byte ranges of the
    /// source (trimmed, parentheses as written), in source order.
    pub fn operands(&self) -> &[Range<usize>] {
        &self.operand_table().0
    }

    fn operand_table(&self) -> &OperandTable {
        self.operand_table
            .get_or_init(|| super::operands::operands(&self.root, &self.branches, &self.source))
    }

    /// The text of operand `n` (see [`Program::operands`]).
    pub fn operand_text(&self, n: usize) -> &str {
        self.operands()
            .get(n)
            .and_then(|r| self.source.get(r.clone()))
            .unwrap_or("")
    }

    /// What the report of branch `id` with `value` (as an [`Observer`]
    /// receives it) says about an operand: `(operand number, value seen)`,
    /// or `None` when the branch is no operand or its value was no bool
    /// (Format 21.6: an operand that errors is seen neither true nor false).
    pub fn operand_seen(&self, id: u32, value: Option<bool>) -> Option<(usize, bool)> {
        use super::operands::Seen;
        match (*self.operand_table().1.get(id as usize)?)? {
            Seen::Value(n) => value.map(|b| (n as usize, b)),
            Seen::True(n) => (value == Some(true)).then_some((n as usize, true)),
            Seen::False(n) => (value == Some(true)).then_some((n as usize, false)),
        }
    }

    /// Checks a program read from an untrusted IR (Format 14.4) against
    /// an environment of `slots` slots: every slot index in range, every
    /// comprehension variable bound by an enclosing comprehension, every
    /// branch id one of [`Program::branches`]. `Err` names the first fault.
    pub fn validate(&self, slots: usize) -> Result<(), String> {
        if let Some(s) = self.slots.iter().find(|s| **s as usize >= slots) {
            return Err(format!(
                "read slot {s} is out of range (the environment has {slots})"
            ));
        }
        validate_node(&self.root, slots, 0, self.branches.len())
    }

    /// Evaluates with the default budget.
    pub fn eval(&self, act: &Activation, host: &mut dyn Host) -> Result<Value, EvalError> {
        self.eval_with_budget(act, host, DEFAULT_BUDGET)
    }

    /// Evaluates with a cost budget: each comprehension iteration costs 1;
    /// each comparison, `in`, `+` and function call costs the work of its
    /// operands (a list's or map's length, a string's bytes / 16); going
    /// over is an [`EvalError`] of kind `Budget`.
    pub fn eval_with_budget(
        &self,
        act: &Activation,
        host: &mut dyn Host,
        budget: u64,
    ) -> Result<Value, EvalError> {
        eval::run(&self.root, act, host, budget, &mut NoObserver)
    }

    /// Evaluates and reports each branch taken to `observer`.
    pub fn eval_observed(
        &self,
        act: &Activation,
        host: &mut dyn Host,
        observer: &mut dyn Observer,
    ) -> Result<Value, EvalError> {
        eval::run(&self.root, act, host, DEFAULT_BUDGET, observer)
    }

    /// Evaluates a condition (Format 11.6): true only when the value is
    /// `true`; a runtime error counts as false.
    #[cfg(any(test, feature = "internals"))]
    pub fn eval_bool(&self, act: &Activation, host: &mut dyn Host) -> bool {
        matches!(self.eval(act, host), Ok(Value::Bool(true)))
    }
}

struct Lowerer {
    branches: Vec<Branch>,
}

fn is_pure_const(n: &Node) -> Option<&Value> {
    match n {
        Node::Const(v) => Some(v),
        _ => None,
    }
}

impl Lowerer {
    fn branch(&mut self, kind: BranchKind, span: &Range<usize>) -> u32 {
        self.branches.push(Branch {
            kind,
            span: span.clone(),
        });
        (self.branches.len() - 1) as u32
    }

    fn lower(&mut self, t: TExpr) -> Node {
        let span = t.span;
        let node = match t.kind {
            TKind::Const(v) => return Node::Const(v),
            TKind::Slot(s) => return Node::Slot(s as u32),
            TKind::SlotBound(s) => return Node::SlotBound(s as u32),
            TKind::Local(i) => return Node::Local(i as u32),
            TKind::Object(_) => return Node::Const(Value::Bool(false)),
            TKind::Not(a) => Node::Not(Box::new(self.lower(*a))),
            TKind::Neg(a) => Node::Neg(Box::new(self.lower(*a))),
            TKind::Arith(op, a, b) => {
                Node::Arith(op, Box::new(self.lower(*a)), Box::new(self.lower(*b)))
            }
            TKind::Cmp(op, a, b) => {
                let (a, b) = (self.lower(*a), self.lower(*b));
                match (&a, &b) {
                    (Node::Slot(s), Node::Const(Value::Int(i))) => Node::CmpSlotInt(op, *s, *i),
                    (Node::Const(Value::Int(i)), Node::Slot(s)) => {
                        Node::CmpSlotInt(op.flipped(), *s, *i)
                    }
                    _ => Node::Cmp(op, Box::new(a), Box::new(b)),
                }
            }
            TKind::And(a, b) => {
                let id = self.branch(BranchKind::AndLeft, &span);
                self.branch(BranchKind::AndRight, &span);
                Node::And(Box::new(self.lower(*a)), Box::new(self.lower(*b)), id)
            }
            TKind::Or(a, b) => {
                let id = self.branch(BranchKind::OrLeft, &span);
                self.branch(BranchKind::OrRight, &span);
                Node::Or(Box::new(self.lower(*a)), Box::new(self.lower(*b)), id)
            }
            TKind::Cond(c, a, b) => {
                let id = self.branch(BranchKind::Then, &span);
                self.branch(BranchKind::Else, &span);
                Node::Cond(
                    Box::new(self.lower(*c)),
                    Box::new(self.lower(*a)),
                    Box::new(self.lower(*b)),
                    id,
                )
            }
            TKind::Index(a, b) => Node::Index(Box::new(self.lower(*a)), Box::new(self.lower(*b))),
            TKind::In(a, b) => Node::In(Box::new(self.lower(*a)), Box::new(self.lower(*b))),
            TKind::Select(a, f, test) => Node::Select(Box::new(self.lower(*a)), f, test),
            TKind::Call(Func::Matches, args) => {
                let mut args: Vec<Node> = args.into_iter().map(|a| self.lower(a)).collect();
                let pattern = match args.get(1) {
                    Some(Node::Const(Value::String(p))) => eval::compile_regex(p, true).ok(),
                    _ => None,
                };
                match (pattern, args.len()) {
                    (Some(re), 2) => {
                        args.truncate(1);
                        match args.pop() {
                            Some(s) => Node::MatchesConst(Box::new(s), Box::new(re)),
                            None => Node::Const(Value::Bool(false)),
                        }
                    }
                    _ => Node::Call(Func::Matches, args.into_boxed_slice()),
                }
            }
            TKind::Call(f, args) => {
                Node::Call(f, args.into_iter().map(|a| self.lower(a)).collect())
            }
            TKind::List(items) => Node::List(items.into_iter().map(|a| self.lower(a)).collect()),
            TKind::Map(entries) => Node::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| (self.lower(k), self.lower(v)))
                    .collect(),
            ),
            TKind::Comprehension {
                kind,
                range,
                pred,
                transform,
            } => Node::Comp {
                kind,
                range: Box::new(self.lower(*range)),
                pred: pred.map(|p| Box::new(self.lower(*p))),
                transform: transform.map(|p| Box::new(self.lower(*p))),
            },
        };
        fold(node)
    }
}

/// Folds a node whose operands are all constants into its value. Nodes that
/// fail are kept (the error happens at run time, as CEL requires), and so are
/// calls to the host (`hit`, `roll`) and comprehensions.
fn fold(node: Node) -> Node {
    let foldable = match &node {
        Node::Not(a) | Node::Neg(a) => is_pure_const(a).is_some(),
        Node::Arith(_, a, b) | Node::Cmp(_, a, b) | Node::Index(a, b) | Node::In(a, b) => {
            is_pure_const(a).is_some() && is_pure_const(b).is_some()
        }
        // `&&` and `||` are branch points (coverage reports their operands,
        // Format 21.6): never folded, like `?:` below.
        Node::And(..) | Node::Or(..) => false,
        Node::Cond(c, _, _, _) => is_pure_const(c).is_some(),
        Node::Select(a, _, _) => is_pure_const(a).is_some(),
        Node::MatchesConst(a, _) => is_pure_const(a).is_some(),
        Node::Call(f, args) => {
            !matches!(f, Func::Hit | Func::Roll) && args.iter().all(|a| is_pure_const(a).is_some())
        }
        Node::List(items) => items.iter().all(|a| is_pure_const(a).is_some()),
        Node::Map(entries) => entries
            .iter()
            .all(|(k, v)| is_pure_const(k).is_some() && is_pure_const(v).is_some()),
        _ => false,
    };
    if !foldable {
        return node;
    }
    // Branch coverage still needs the taken arm of a constant condition to
    // be reported; keep `?:` with a constant condition when it has branches.
    if let Node::Cond(..) = node {
        return node;
    }
    let act = Activation::default();
    match eval::run(
        &node,
        &act,
        &mut eval::NoHost,
        DEFAULT_BUDGET,
        &mut NoObserver,
    ) {
        Ok(v) => Node::Const(v),
        Err(_) => node,
    }
}

/// A constant regular expression in the IR (Format 14.4): stored as its
/// source, compiled again when the IR is read (a pattern that does not
/// compile makes the IR unreadable, so the loader falls back).
mod regex_serde {
    use crate::bounded_regex::Bounded;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(r: &Bounded, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(r.as_str())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Box<Bounded>, D::Error> {
        let src = String::deserialize(d)?;
        super::eval::compile_regex(&src, true)
            .map(Box::new)
            .map_err(serde::de::Error::custom)
    }
}

/// See [`Program::field_reads`].
type FieldReads = Vec<(u32, Vec<Arc<str>>)>;

/// The slots a tree reads through constant fields and those it reads
/// otherwise (see [`Program::field_reads`]).
#[derive(Default)]
struct FieldWalk {
    fields: Vec<(u32, Arc<str>)>,
    whole: Vec<u32>,
}

impl FieldWalk {
    fn walk(&mut self, n: &Node) {
        match n {
            Node::Select(a, field, _) => match **a {
                Node::Slot(s) => self.fields.push((s, field.clone())),
                _ => self.walk(a),
            },
            Node::Slot(s) | Node::SlotBound(s) | Node::CmpSlotInt(_, s, _) => self.whole.push(*s),
            _ => n.for_each_child(|c| self.walk(c)),
        }
    }
}

/// What a program's tree reads (see [`Program::tree_inputs`]).
#[derive(Default)]
struct TreeInputs {
    slots: Vec<u32>,
    rolls: bool,
}

impl TreeInputs {
    fn walk(&mut self, n: &Node) {
        match n {
            Node::Slot(s) | Node::SlotBound(s) | Node::CmpSlotInt(_, s, _) => self.slots.push(*s),
            Node::Call(f, _) => self.rolls |= *f == Func::Roll,
            _ => {}
        }
        n.for_each_child(|c| self.walk(c));
    }
}

fn validate_node(n: &Node, slots: usize, locals: u32, branches: usize) -> Result<(), String> {
    let v = |m: &Node| validate_node(m, slots, locals, branches);
    let branch = |id: u32| {
        if (id as usize) + 1 < branches {
            Ok(())
        } else {
            Err(format!(
                "branch {id} is not one of the program's {branches}"
            ))
        }
    };
    let slot = |s: u32| {
        if (s as usize) < slots {
            Ok(())
        } else {
            Err(format!(
                "slot {s} is out of range (the environment has {slots})"
            ))
        }
    };
    match n {
        Node::Const(_) => Ok(()),
        Node::Slot(s) | Node::SlotBound(s) | Node::CmpSlotInt(_, s, _) => slot(*s),
        Node::Local(i) if *i < locals => Ok(()),
        Node::Local(i) => Err(format!("comprehension variable {i} is not bound")),
        Node::Not(a) | Node::Neg(a) | Node::Select(a, _, _) | Node::MatchesConst(a, _) => v(a),
        Node::Arith(_, a, b) | Node::Cmp(_, a, b) | Node::Index(a, b) | Node::In(a, b) => {
            v(a)?;
            v(b)
        }
        Node::And(a, b, id) | Node::Or(a, b, id) => {
            branch(*id)?;
            v(a)?;
            v(b)
        }
        Node::Cond(c, a, b, id) => {
            branch(*id)?;
            v(c)?;
            v(a)?;
            v(b)
        }
        Node::Call(_, args) | Node::List(args) => args.iter().try_for_each(v),
        Node::Map(pairs) => pairs.iter().try_for_each(|(k, x)| {
            v(k)?;
            v(x)
        }),
        Node::Comp {
            range,
            pred,
            transform,
            ..
        } => {
            v(range)?;
            for inner in [pred, transform].into_iter().flatten() {
                validate_node(inner, slots, locals + 1, branches)?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cel::value::{Key, MapValue};
    use crate::cel::NoHost;

    /// A map slot read only as `slot.field` with constant fields may be
    /// bound field by field (`Activation::set_field`): every program reads
    /// the same value, or fails with the same error, as with the whole map
    /// bound; a program that reads the map otherwise is not offered the
    /// choice.
    #[test]
    fn fields_bound_one_by_one_read_as_the_whole_map() {
        let mut env = Env::new();
        env.declare("m", Type::map(Type::String, Type::Int));
        env.declare("n", Type::Int);
        let mut map = MapValue::default();
        map.insert(Key::String("a".into()), Value::Int(3));
        map.insert(Key::String("b".into()), Value::Int(-1));
        let whole = Value::Map(Arc::new(map.clone()));
        let cases = [
            ("m.a > 1", Some(vec!["a"])),
            ("has(m.c) || m.b < 0", Some(vec!["c", "b"])),
            ("m.c == 1", Some(vec!["c"])),
            ("m.a + m.b + m.a", Some(vec!["a", "b"])),
            ("has(m.a) && m.a == n ? m.b : n", Some(vec!["a", "b"])),
            ("size(m) == 2 && m.a == 3", None),
            ("m['a'] == 3 && m.a == 3", None),
            ("n > 2", None),
        ];
        for (src, fields) in cases {
            let p = compile(src, &env).unwrap_or_else(|e| panic!("{src}: {e:?}"));
            let got: Option<Vec<&str>> = p
                .field_reads()
                .iter()
                .find(|(s, _)| *s == 0)
                .map(|(_, fs)| fs.iter().map(|f| &**f).collect());
            assert_eq!(got, fields, "{src}");
            let mut a = Activation::new(&env);
            a.set(0, whole.clone());
            a.set(1, Value::Int(3));
            let expected = format!("{:?}", p.eval(&a, &mut NoHost));
            let Some(fields) = fields else {
                continue;
            };
            let mut b = Activation::new(&env);
            b.set(0, Value::Int(99));
            b.set(1, Value::Int(3));
            for f in &fields {
                let v = map.get(&Key::String((*f).into())).cloned();
                b.set_field(0, &Arc::from(*f), v);
            }
            assert!(b.get(0).is_none(), "binding a field unbinds the slot");
            assert_eq!(format!("{:?}", p.eval(&b, &mut NoHost)), expected, "{src}");
            // Unbound again after the evaluation, as spare activations are.
            b.unbind(p.slots());
            assert!(fields.iter().all(|f| b.field(0, f).is_none()));
        }
    }
}
