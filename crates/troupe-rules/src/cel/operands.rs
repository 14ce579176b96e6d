//! The operands of a condition (Format 21.6 "Conditions and operands"),
//! read off the lowered tree: each member of a maximal `&&` or `||` chain
//! (parentheses ignored) and the condition of each `?:`, found by walking
//! the `And`/`Or`/`Cond` nodes from the root, with the branch points the
//! evaluator reports (`Program::branches`). An operand's text is the source
//! between the operator spans of its chain (trimmed, parentheses as
//! written), so a label names the operand as the author wrote it.

use std::ops::Range;

use super::program::{Branch, Node};

/// How a reported branch maps to an operand: its number (source order, from
/// 0) and which value it shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub(crate) enum Seen {
    /// A chain member: the branch's value is the operand's value.
    Value(u32),
    /// The `then` arm of `?:` taken: its condition was true.
    True(u32),
    /// The `else` arm taken: its condition was false.
    False(u32),
}

enum Found {
    Member(u32),
    Cond(u32),
}

struct Walk<'a> {
    src: &'a str,
    branches: &'a [Branch],
    found: Vec<(Range<usize>, Found)>,
}

/// The operands of a program (byte ranges of `src`, in source order) and,
/// by branch id, what a report of that branch says about them.
pub(crate) fn operands(
    root: &Node,
    branches: &[Branch],
    src: &str,
) -> (Vec<Range<usize>>, Vec<Option<Seen>>) {
    let mut w = Walk {
        src,
        branches,
        found: Vec::new(),
    };
    w.analyze(root, 0..src.len());
    let mut found = w.found;
    found.sort_by_key(|(r, _)| (r.start, r.end));
    let mut table = vec![None; branches.len()];
    let mut ranges = Vec::with_capacity(found.len());
    for (n, (r, f)) in found.into_iter().enumerate() {
        let n = n as u32;
        match f {
            Found::Member(b) => {
                if let Some(x) = table.get_mut(b as usize) {
                    *x = Some(Seen::Value(n));
                }
            }
            Found::Cond(b) => {
                if let Some(x) = table.get_mut(b as usize) {
                    *x = Some(Seen::True(n));
                }
                if let Some(x) = table.get_mut(b as usize + 1) {
                    *x = Some(Seen::False(n));
                }
            }
        }
        ranges.push(r);
    }
    (ranges, table)
}

fn chain_op(n: &Node) -> Option<(bool, &Node, &Node, u32)> {
    match n {
        Node::And(a, b, id) => Some((true, a, b, *id)),
        Node::Or(a, b, id) => Some((false, a, b, *id)),
        _ => None,
    }
}

impl Walk<'_> {
    fn trim(&self, r: Range<usize>) -> Range<usize> {
        let s = self.src.get(r.clone()).unwrap_or("");
        let start = r.start + (s.len() - s.trim_start().len());
        let end = r.end - (s.len() - s.trim_end().len());
        start..end.max(start)
    }

    /// `r` trimmed, without the parentheses that enclose all of it.
    fn unwrap(&self, r: Range<usize>) -> Range<usize> {
        let mut r = self.trim(r);
        let b = self.src.as_bytes();
        while r.end >= r.start + 2 && b[r.start] == b'(' && b[r.end - 1] == b')' {
            // The first `(` must close at the very end.
            match scan(self.src, r.start..r.end, true, |_, _| false) {
                Some(close) if close == r.end - 1 => r = self.trim(r.start + 1..r.end - 1),
                _ => break,
            }
        }
        r
    }

    /// The operator position of branch `id` when it lies inside `r` and the
    /// source there is `op`.
    fn op_at(&self, id: u32, r: &Range<usize>, op: &str) -> Option<usize> {
        let p = self.branches.get(id as usize)?.span.start;
        // Spans come from the IR, which may be untrusted (Format 14.4).
        let end = p.checked_add(op.len())?;
        (p >= r.start && end <= r.end && self.src.get(p..end) == Some(op)).then_some(p)
    }

    fn analyze(&mut self, n: &Node, r: Range<usize>) {
        let r = self.unwrap(r);
        if let Some((and, ..)) = chain_op(n) {
            self.chain(n, and, r);
        } else if let Node::Cond(c, a, b, id) = n {
            let Some(q) = self.op_at(*id, &r, "?") else {
                return;
            };
            let cond = self.trim(r.start..q);
            self.found.push((cond.clone(), Found::Cond(*id)));
            self.analyze(c, cond);
            let mut nest = 0usize;
            let colon = scan(self.src, q + 1..r.end, false, |c, depth| {
                if depth > 0 {
                    return false;
                }
                match c {
                    b'?' => nest += 1,
                    b':' if nest == 0 => return true,
                    b':' => nest -= 1,
                    _ => {}
                }
                false
            });
            if let Some(colon) = colon {
                self.analyze(a, q + 1..colon);
                self.analyze(b, colon + 1..r.end);
            }
        }
    }

    /// A maximal chain: `n` is `&&` (`and`) or `||` over `r` (unwrapped).
    fn chain(&mut self, n: &Node, and: bool, r: Range<usize>) {
        let Some((_, a, b, id)) = chain_op(n) else {
            return;
        };
        let op = if and { "&&" } else { "||" };
        let Some(p) = self.op_at(id, &r, op) else {
            return;
        };
        let pieces = [
            (a, self.trim(r.start..p), id),
            (b, self.trim(p + 2..r.end), id + 1),
        ];
        for (child, piece, branch) in pieces {
            match chain_op(child) {
                Some((same, ..)) if same == and => {
                    let core = self.unwrap(piece);
                    self.chain(child, and, core);
                }
                _ => {
                    self.found.push((piece.clone(), Found::Member(branch)));
                    self.analyze(child, piece);
                }
            }
        }
    }
}

/// Scans `src[r]` outside string literals, calling `at(byte, depth)` for
/// each byte with the bracket depth before it; returns the position where
/// `at` said true, or, with `close`, where the bracket open at `r.start`
/// closes. `None` at the end or on unbalanced text.
fn scan(
    src: &str,
    r: Range<usize>,
    close: bool,
    mut at: impl FnMut(u8, usize) -> bool,
) -> Option<usize> {
    let b = src.as_bytes();
    let end = r.end.min(b.len());
    let mut depth = 0usize;
    let mut i = r.start;
    while i < end {
        let c = b[i];
        if c == b'"' || c == b'\'' {
            let triple = i + 2 < end && b[i + 1] == c && b[i + 2] == c;
            let q = if triple { 3 } else { 1 };
            i += q;
            loop {
                if i >= end {
                    return None;
                }
                if b[i] == b'\\' {
                    i += 2;
                    continue;
                }
                if b[i] == c && (!triple || (i + 2 < end && b[i + 1] == c && b[i + 2] == c)) {
                    i += q;
                    break;
                }
                i += 1;
            }
            continue;
        }
        if at(c, depth) {
            return Some(i);
        }
        match c {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth = depth.checked_sub(1)?;
                if close && depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::cel::{compile, Env, Type};

    fn texts(src: &str) -> Vec<String> {
        let mut env = Env::new();
        for n in ["a", "b", "c", "d"] {
            env.declare(n, Type::Bool);
        }
        env.declare("x", Type::String);
        env.declare("y", Type::Bool);
        env.declare("p", Type::Int);
        env.declare("f", Type::List(Box::new(Type::Bool)));
        let p = compile(src, &env).unwrap_or_else(|e| panic!("{src}: {e:?}"));
        (0..p.operands().len())
            .map(|n| p.operand_text(n).to_string())
            .collect()
    }

    #[test]
    fn the_spec_example_has_four_operands() {
        assert_eq!(texts("p > 1 && (b || c)"), ["p > 1", "(b || c)", "b", "c"]);
    }

    #[test]
    fn chains_are_maximal_and_strings_are_skipped() {
        assert_eq!(texts("a && (b && c)"), ["a", "b", "c"]);
        assert_eq!(texts("(a && b) && c"), ["a", "b", "c"]);
        assert_eq!(texts("a && b && c && d"), ["a", "b", "c", "d"]);
        assert_eq!(texts("x == 'a && b' || y"), ["x == 'a && b'", "y"]);
        assert_eq!(texts("p > 1"), Vec::<String>::new());
        assert_eq!(texts("f.all(v, v && a)"), Vec::<String>::new());
        assert_eq!(texts("!(a && b)"), Vec::<String>::new());
        assert_eq!(texts("p < 30 ? 'annoyed' : 'friendly'"), ["p < 30"]);
        assert_eq!(texts("a ? b && c : d"), ["a", "b", "c"]);
        assert_eq!(texts("a ? (x == 'q:r' ? b : c) : d"), ["a", "x == 'q:r'"]);
        assert_eq!(texts("a || b && c"), ["a", "b", "b && c", "c"]);
        assert_eq!(texts("((a)) && (b || c)"), ["((a))", "(b || c)", "b", "c"]);
        assert_eq!(texts("(a ? b : c) && d"), ["(a ? b : c)", "a", "d"]);
    }

    #[test]
    fn reports_map_to_operands() {
        let mut env = Env::new();
        env.declare("a", Type::Int);
        let p = compile("a > 1 && (a > 5 ? true : a == 3)", &env).unwrap();
        // Operands: `a > 1`, `(a > 5 ? true : a == 3)`, `a > 5`.
        assert_eq!(p.operand_text(2), "a > 5");
        // && left true: operand 0 seen true; the else arm: `a > 5` false.
        assert_eq!(p.operand_seen(0, Some(true)), Some((0, true)));
        assert_eq!(p.operand_seen(3, Some(true)), Some((2, false)));
        assert_eq!(p.operand_seen(2, Some(true)), Some((2, true)));
        assert_eq!(p.operand_seen(1, None), None);
    }

    #[test]
    fn operands_of_an_untrusted_program_never_panic() {
        // Operands are derived when first asked for, from what the IR
        // holds: spans at the end of the address space, or past the source,
        // give no operand instead of an overflow.
        let mut env = Env::new();
        env.declare("a", Type::Bool);
        env.declare("b", Type::Bool);
        let p = compile("a && b", &env).unwrap();
        for start in [u64::MAX, u64::MAX - 1, 1000, 2] {
            let mut v = serde_json::to_value(&p).unwrap();
            v["branches"][0][1] = start.into();
            v["branches"][1][1] = start.into();
            let q: crate::cel::Program = serde_json::from_value(v).unwrap();
            let n = q.operands().len();
            assert!(n <= 2, "{start}: {n}");
            assert_eq!(q.operand_seen(0, Some(true)).is_some(), start == 2);
        }
    }
}
