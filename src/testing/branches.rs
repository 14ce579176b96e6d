//! Condition branches for coverage (Format 21.6): the operands of a CEL
//! condition (each member of a maximal `&&` or `||` chain, parentheses
//! ignored, and the condition of each `?:`), and evaluating a condition
//! operand by operand, recording which operands were seen true or false.

use std::ops::Range;

/// The shape of a condition, over byte ranges of its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Node {
    /// A piece that is not split further, evaluated as a whole.
    Leaf(Range<usize>),
    /// A maximal `&&` (`and` true) or `||` chain; each member is an operand.
    Chain {
        /// `&&` when true, `||` when false.
        and: bool,
        /// The members, each with its operand number (from 0, source order).
        members: Vec<(usize, Node)>,
    },
    /// `c ? a : b`; the condition is operand `cond.0`.
    Cond {
        /// The condition, with its operand number.
        cond: (usize, Box<Node>),
        /// The value when true.
        then: Box<Node>,
        /// The value when false.
        other: Box<Node>,
    },
}

/// A split condition: its tree and its operands' source ranges, numbered in
/// source order.
#[derive(Debug, Clone)]
pub struct Split {
    /// The tree.
    pub node: Node,
    /// Operand n's byte range in the source (trimmed as written).
    pub operands: Vec<Range<usize>>,
}

/// Splits `src` into its operands. Never fails: text the splitter does not
/// understand (an unbalanced bracket) stays one leaf.
pub fn split(src: &str) -> Split {
    let mut raw = Vec::new();
    let node = analyze(src, trim(src, 0..src.len()), &mut raw);
    // Number operands in source order.
    let mut order: Vec<usize> = (0..raw.len()).collect();
    order.sort_by_key(|&i| (raw[i].start, raw[i].end));
    let mut renum = vec![0; raw.len()];
    for (new, &old) in order.iter().enumerate() {
        renum[old] = new;
    }
    let node = renumber(node, &renum);
    let operands = order.iter().map(|&i| raw[i].clone()).collect();
    Split { node, operands }
}

fn renumber(n: Node, map: &[usize]) -> Node {
    match n {
        Node::Leaf(r) => Node::Leaf(r),
        Node::Chain { and, members } => Node::Chain {
            and,
            members: members
                .into_iter()
                .map(|(i, m)| (map.get(i).copied().unwrap_or(i), renumber(m, map)))
                .collect(),
        },
        Node::Cond { cond, then, other } => Node::Cond {
            cond: (
                map.get(cond.0).copied().unwrap_or(cond.0),
                Box::new(renumber(*cond.1, map)),
            ),
            then: Box::new(renumber(*then, map)),
            other: Box::new(renumber(*other, map)),
        },
    }
}

fn trim(src: &str, r: Range<usize>) -> Range<usize> {
    let s = src.get(r.clone()).unwrap_or("");
    let start = r.start + (s.len() - s.trim_start().len());
    let end = r.end - (s.len() - s.trim_end().len());
    start..end.max(start)
}

/// Top-level tokens of interest in `src[r]`: byte offsets of `?`, `:`, `||`,
/// `&&` at bracket depth 0, outside strings. `None` when brackets do not
/// balance.
fn top_level(src: &str, r: &Range<usize>) -> Option<Vec<(usize, &'static str)>> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut depth: i64 = 0;
    let mut i = r.start;
    while i < r.end {
        let c = b[i];
        match c {
            b'"' | b'\'' => {
                // Skip a string (triple-quoted or not), honouring escapes.
                let triple = i + 2 < r.end && b[i + 1] == c && b[i + 2] == c;
                let q = if triple { 3 } else { 1 };
                i += q;
                loop {
                    if i >= r.end {
                        return None;
                    }
                    if b[i] == b'\\' {
                        i += 2;
                        continue;
                    }
                    if b[i] == c && (!triple || (i + 2 < r.end && b[i + 1] == c && b[i + 2] == c)) {
                        i += q;
                        break;
                    }
                    i += 1;
                }
                continue;
            }
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            b'?' if depth == 0 => out.push((i, "?")),
            b':' if depth == 0 => out.push((i, ":")),
            b'|' if depth == 0 && i + 1 < r.end && b[i + 1] == b'|' => {
                out.push((i, "||"));
                i += 2;
                continue;
            }
            b'&' if depth == 0 && i + 1 < r.end && b[i + 1] == b'&' => {
                out.push((i, "&&"));
                i += 2;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    (depth == 0).then_some(out)
}

/// `r` without one pair of parentheses enclosing all of it, if it has one.
fn unwrap_parens(src: &str, r: &Range<usize>) -> Option<Range<usize>> {
    let b = src.as_bytes();
    if r.end < r.start + 2 || b[r.start] != b'(' || b[r.end - 1] != b')' {
        return None;
    }
    let inner = r.start + 1..r.end - 1;
    // The first `(` must close at the very end: the inside balances.
    top_level(src, &inner).map(|_| trim(src, inner))
}

fn analyze(src: &str, r: Range<usize>, ops: &mut Vec<Range<usize>>) -> Node {
    let mut core = r.clone();
    while let Some(inner) = unwrap_parens(src, &core) {
        core = inner;
    }
    let Some(tokens) = top_level(src, &core) else {
        return Node::Leaf(r);
    };
    // `?:` binds loosest; the first `?` and its matching `:`.
    if let Some(q) = tokens.iter().position(|t| t.1 == "?") {
        let mut nest = 0;
        for t in &tokens[q + 1..] {
            match t.1 {
                "?" => nest += 1,
                ":" if nest == 0 => {
                    let c = trim(src, core.start..tokens[q].0);
                    let id = ops.len();
                    ops.push(c.clone());
                    let cond = analyze(src, c, ops);
                    let then = analyze(src, trim(src, tokens[q].0 + 1..t.0), ops);
                    let other = analyze(src, trim(src, t.0 + 1..core.end), ops);
                    return Node::Cond {
                        cond: (id, Box::new(cond)),
                        then: Box::new(then),
                        other: Box::new(other),
                    };
                }
                ":" => nest -= 1,
                _ => {}
            }
        }
        return Node::Leaf(r);
    }
    for (op, and) in [("||", false), ("&&", true)] {
        let cuts: Vec<usize> = tokens.iter().filter(|t| t.1 == op).map(|t| t.0).collect();
        if cuts.is_empty() {
            continue;
        }
        let mut pieces = Vec::new();
        let mut start = core.start;
        for c in cuts {
            pieces.push(trim(src, start..c));
            start = c + 2;
        }
        pieces.push(trim(src, start..core.end));
        let mut members = Vec::new();
        for p in pieces {
            flatten(src, p, op, and, ops, &mut members);
        }
        return Node::Chain { and, members };
    }
    Node::Leaf(r)
}

/// Adds `p` as a member of a chain of `op`, or, when `p` is itself a
/// parenthesised chain of the same `op`, its members (parentheses ignored).
fn flatten(
    src: &str,
    p: Range<usize>,
    op: &str,
    and: bool,
    ops: &mut Vec<Range<usize>>,
    members: &mut Vec<(usize, Node)>,
) {
    let mut core = p.clone();
    while let Some(inner) = unwrap_parens(src, &core) {
        core = inner;
    }
    if core != p {
        if let Some(tokens) = top_level(src, &core) {
            let same = tokens.iter().any(|t| t.1 == op);
            let looser = tokens.iter().any(|t| t.1 == "?" || (and && t.1 == "||"));
            if same && !looser {
                let mut start = core.start;
                for c in tokens.iter().filter(|t| t.1 == op).map(|t| t.0) {
                    flatten(src, trim(src, start..c), op, and, ops, members);
                    start = c + 2;
                }
                flatten(src, trim(src, start..core.end), op, and, ops, members);
                return;
            }
        }
    }
    let id = ops.len();
    ops.push(p.clone());
    let node = analyze(src, p, ops);
    members.push((id, node));
}

/// A condition prepared for instrumented evaluation against one engine:
/// each leaf compiled on its own (Format 21.6 "seen").
pub struct Instrumented {
    src: String,
    /// The split condition.
    pub split: Split,
    leaves: Vec<(Range<usize>, Option<crate::engine::cel::Condition>)>,
}

impl std::fmt::Debug for Instrumented {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Instrumented")
            .field("src", &self.src)
            .finish()
    }
}

impl Instrumented {
    /// Splits `src` and compiles its leaves for owner `self_id` (the
    /// scenario for `None`); `hit` declares `hit()` (entries).
    pub fn new(
        engine: &crate::engine::Engine,
        src: &str,
        self_id: Option<&str>,
        hit: bool,
    ) -> Instrumented {
        let split = split(src);
        let mut leaves = Vec::new();
        collect_leaves(&split.node, &mut leaves);
        let leaves = leaves
            .into_iter()
            .map(|r| {
                let c = src
                    .get(r.clone())
                    .and_then(|t| engine.compile_condition(t, self_id, hit).ok());
                (r, c)
            })
            .collect();
        Instrumented {
            src: src.to_string(),
            split,
            leaves,
        }
    }

    /// Evaluates at `state` with `char`, calling `seen(operand, value)` for
    /// every operand evaluated to a bool, left to right with short-circuits.
    /// `hit()` scans `scan` (a lower-cased text; false without one). Returns
    /// the value, `None` on an error.
    pub fn eval(
        &self,
        engine: &crate::engine::Engine,
        at: Eval<'_>,
        seen: &mut dyn FnMut(usize, bool),
    ) -> Option<crate::cel::Value> {
        self.eval_node(&self.split.node, engine, &at, seen)
    }

    fn eval_node(
        &self,
        n: &Node,
        engine: &crate::engine::Engine,
        at: &Eval<'_>,
        seen: &mut dyn FnMut(usize, bool),
    ) -> Option<crate::cel::Value> {
        use crate::cel::Value;
        match n {
            Node::Leaf(r) => {
                let c = self.leaves.iter().find(|(x, _)| x == r)?.1.as_ref()?;
                eval_leaf(engine, c, at)
            }
            Node::Chain { and, members } => {
                for (op, m) in members {
                    match self.eval_node(m, engine, at, seen) {
                        Some(Value::Bool(b)) => {
                            seen(*op, b);
                            if b != *and {
                                return Some(Value::Bool(b));
                            }
                        }
                        _ => return None,
                    }
                }
                Some(Value::Bool(*and))
            }
            Node::Cond { cond, then, other } => match self.eval_node(&cond.1, engine, at, seen) {
                Some(Value::Bool(b)) => {
                    seen(cond.0, b);
                    self.eval_node(if b { then } else { other }, engine, at, seen)
                }
                _ => None,
            },
        }
    }
}

/// Where a condition is evaluated: the state, `char`, and the text `hit()`
/// scans (lower-cased; `hit()` is false without one).
#[derive(Debug, Clone, Copy)]
pub struct Eval<'a> {
    /// The state at the evaluation point.
    pub state: &'a crate::engine::State,
    /// `char` (Format 11.3).
    pub char: &'a str,
    /// The lower-cased text `hit()` scans.
    pub scan: Option<&'a str>,
}

/// `hit()` over a scanned text, `roll()` seeded as at a message (11.4, 11.5).
struct ScanHost<'a> {
    scan: Option<&'a str>,
    seed: u64,
    message: &'a str,
    calls: u64,
}

impl crate::cel::Host for ScanHost<'_> {
    fn hit(&mut self, keys: &[&str]) -> bool {
        let Some(text) = self.scan else { return false };
        crate::keys::KeySet::new(keys.iter().copied(), crate::keys::KeyOptions::RUNTIME).hits(text)
    }
    fn roll(&mut self, notation: &str) -> Result<i64, crate::cel::EvalError> {
        let k = self.calls;
        self.calls += 1;
        crate::cel::dice::roll(notation, self.seed, self.message, k)
    }
}

fn eval_leaf(
    engine: &crate::engine::Engine,
    c: &crate::engine::cel::Condition,
    at: &Eval<'_>,
) -> Option<crate::cel::Value> {
    let point = crate::engine::Point {
        ir: &engine.ir,
        session: Some(&engine.session),
        char: None,
    };
    let e = engine.ir.envs.get(c.env as usize)?;
    let mut act = crate::cel::Activation::new(&e.env);
    point.fill(at.state, c.env, None, &mut act);
    act.set_by_name(&e.env, "char", crate::cel::Value::string(at.char));
    let message = at
        .state
        .at
        .and_then(|m| engine.session.messages.get(m as usize))
        .map_or("", |m| &*m.id);
    let mut host = ScanHost {
        scan: at.scan,
        seed: engine.session.seed,
        message,
        calls: 0,
    };
    c.program.eval(&act, &mut host).ok()
}

fn collect_leaves(n: &Node, out: &mut Vec<Range<usize>>) {
    match n {
        Node::Leaf(r) => out.push(r.clone()),
        Node::Chain { members, .. } => members.iter().for_each(|(_, m)| collect_leaves(m, out)),
        Node::Cond { cond, then, other } => {
            collect_leaves(&cond.1, out);
            collect_leaves(then, out);
            collect_leaves(other, out);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(src: &str) -> Vec<&str> {
        split(src)
            .operands
            .iter()
            .map(|r| &src[r.clone()])
            .collect()
    }

    #[test]
    fn the_spec_example_has_four_operands() {
        assert_eq!(
            texts("state.a > 1 && (state.b || state.c)"),
            vec!["state.a > 1", "(state.b || state.c)", "state.b", "state.c"]
        );
    }

    #[test]
    fn chains_are_maximal_and_strings_are_skipped() {
        assert_eq!(texts("a && (b && c)"), vec!["a", "b", "c"]);
        assert_eq!(texts("x == 'a && b' || y"), vec!["x == 'a && b'", "y"]);
        assert_eq!(texts("state.x > 1"), Vec::<&str>::new());
        assert_eq!(texts("f(a && b)"), Vec::<&str>::new());
        assert_eq!(
            texts("state.p < 30 ? 'annoyed' : 'friendly'"),
            vec!["state.p < 30"]
        );
        assert_eq!(texts("a ? b && c : d"), vec!["a", "b", "c"]);
        assert_eq!(texts("(a || b"), Vec::<&str>::new());
    }
}
