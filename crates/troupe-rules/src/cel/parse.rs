//! Parsing (Format 11.1): the `cel` crate's parser (STACK.md), its AST mapped
//! to Troupe's own [`Expr`] with byte spans. Macro expansions (`all`,
//! `exists`, `exists_one`, `map`, `filter`) are recognized and kept as
//! [`ExprKind::Comprehension`] nodes; `has()` becomes a presence test.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex};

use cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, EntryExpr, Expr as CExpr, IdedExpr, LiteralValue,
    SourceInfo,
};
use cel::parser::Parser;

use super::error::{offset_of, CelError, CelErrorKind};

/// Longest expression accepted, in bytes (Format 16 bounds untrusted input;
/// this keeps the parser's own recursion well inside a 2 MiB stack).
pub const MAX_SOURCE_LEN: usize = 8 * 1024;
/// Deepest expression tree accepted.
pub const MAX_DEPTH: usize = 200;
/// Parser recursion limit (nesting of parentheses, calls, lists, unary ops).
const PARSER_RECURSION: u16 = 96;

/// A parsed expression node.
#[derive(Debug, Clone, PartialEq)]
pub struct Expr {
    /// What the node is.
    pub kind: ExprKind,
    /// Byte offsets of the node's main token in the source.
    pub span: Range<usize>,
}

/// The comprehension macros (Format 11.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum MacroKind {
    /// `r.all(x, p)`.
    All,
    /// `r.exists(x, p)`.
    Exists,
    /// `r.exists_one(x, p)`.
    ExistsOne,
    /// `r.map(x, f)` or `r.map(x, p, f)`.
    Map,
    /// `r.filter(x, p)`.
    Filter,
}

/// Node kinds.
#[derive(Debug, Clone, PartialEq)]
pub enum ExprKind {
    /// `true`, `false`.
    Bool(bool),
    /// An int literal.
    Int(i64),
    /// A double literal.
    Double(f64),
    /// A string literal.
    String(Arc<str>),
    /// An identifier.
    Ident(String),
    /// `operand.field`; with `test`, `has(operand.field)`.
    Select {
        /// The operand.
        operand: Box<Expr>,
        /// The field name.
        field: String,
        /// True for a presence test (`has`).
        test: bool,
    },
    /// A call: operators use their CEL names (`_+_`, `_[_]`, `@in`, `!_`).
    Call {
        /// The function name.
        func: String,
        /// The receiver of `x.f(...)`.
        target: Option<Box<Expr>>,
        /// The arguments.
        args: Vec<Expr>,
    },
    /// `[a, b]`.
    List(Vec<Expr>),
    /// `{k: v}`.
    Map(Vec<(Expr, Expr)>),
    /// A macro over a list or map.
    Comprehension {
        /// Which macro.
        kind: MacroKind,
        /// The iteration variable.
        var: String,
        /// The list or map iterated.
        range: Box<Expr>,
        /// The predicate (all/exists/exists_one/filter, and map's filter).
        pred: Option<Box<Expr>>,
        /// The transform of `map`.
        transform: Option<Box<Expr>>,
    },
    /// A construct outside Troupe's subset (null, bytes, uint, messages);
    /// the type checker rejects it with this message.
    Unsupported(&'static str),
}

/// Parsed expressions by source text, shared by the passes over one bundle
/// (its check, its compile and the sessions started from it): inside
/// [`ParseCache::scope`], [`parse_shared`] parses each text once. Parsing is
/// a pure function of the text, so a hit is exactly what parsing again would
/// give. Holds only the texts parsed in its scopes: the bundle's own
/// expressions, each at most [`MAX_SOURCE_LEN`] bytes (Format 16.2).
#[derive(Default)]
pub struct ParseCache {
    parsed: Mutex<HashMap<Box<str>, Parsed>>,
}

/// One cached parse: the tree, or the parser's errors.
type Parsed = Result<Arc<Expr>, Vec<CelError>>;

impl std::fmt::Debug for ParseCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.parsed.lock().map_or(0, |m| m.len());
        write!(f, "ParseCache({n} expressions)")
    }
}

thread_local! {
    /// The cache of the innermost [`ParseCache::scope`] on this thread.
    static ACTIVE: RefCell<Option<Arc<ParseCache>>> = const { RefCell::new(None) };
}

impl ParseCache {
    /// Runs `f` with this cache answering [`parse_shared`] on this thread;
    /// the previous cache (if any) is restored afterwards, also on unwind.
    pub fn scope<R>(self: &Arc<Self>, f: impl FnOnce() -> R) -> R {
        struct Restore(Option<Arc<ParseCache>>);
        impl Drop for Restore {
            fn drop(&mut self) {
                let previous = self.0.take();
                ACTIVE.with(|a| *a.borrow_mut() = previous);
            }
        }
        let _restore = Restore(ACTIVE.with(|a| a.replace(Some(self.clone()))));
        f()
    }

    /// How many distinct texts were parsed through this cache.
    #[cfg(any(test, feature = "unstable-internals"))]
    pub fn len(&self) -> usize {
        self.parsed.lock().map_or(0, |m| m.len())
    }

    /// Whether nothing was parsed through this cache.
    #[cfg(any(test, feature = "unstable-internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn get_or_parse(&self, source: &str) -> Parsed {
        if let Some(hit) = self.parsed.lock().ok().and_then(|m| m.get(source).cloned()) {
            return hit;
        }
        let parsed = parse(source).map(Arc::new);
        if let Ok(mut m) = self.parsed.lock() {
            m.insert(source.into(), parsed.clone());
        }
        parsed
    }
}

/// [`parse`], answered by the active [`ParseCache`] when a scope is open
/// on this thread (then each text is parsed once), else parsed afresh.
pub fn parse_shared(source: &str) -> Result<Arc<Expr>, Vec<CelError>> {
    let active = ACTIVE.with(|a| a.borrow().clone());
    match active {
        Some(cache) => cache.get_or_parse(source),
        None => parse(source).map(Arc::new),
    }
}

#[cfg(debug_assertions)]
thread_local! {
    /// How many times [`parse`] ran on this thread (debug builds only).
    static PARSES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many expressions [`parse`] has parsed on this thread, in debug
/// builds (release builds count nothing): the tests that check and
/// compile parse each expression once (issue 41 item 2).
#[cfg(all(debug_assertions, any(test, feature = "unstable-internals")))]
pub fn parse_count() -> u64 {
    PARSES.with(std::cell::Cell::get)
}

/// Parses `source` into an [`Expr`].
pub fn parse(source: &str) -> Result<Expr, Vec<CelError>> {
    #[cfg(debug_assertions)]
    PARSES.with(|c| c.set(c.get() + 1));
    if source.len() > MAX_SOURCE_LEN {
        return Err(vec![CelError::new(
            CelErrorKind::Syntax,
            format!("expression is longer than {MAX_SOURCE_LEN} bytes"),
            source,
            MAX_SOURCE_LEN..MAX_SOURCE_LEN,
        )]);
    }
    let parsed = Parser::new()
        .enable_ident_escape_syntax(true)
        .max_recursion_depth(PARSER_RECURSION)
        .parse_with_source_info(source);
    match parsed {
        Ok((expr, info)) => {
            let conv = Converter {
                source,
                info: &info,
            };
            conv.expr(expr, 0)
                .map_err(|(msg, span)| vec![CelError::new(CelErrorKind::Syntax, msg, source, span)])
        }
        Err(errs) => {
            let mut out: Vec<CelError> = errs
                .errors
                .iter()
                .map(|e| {
                    let line = usize::try_from(e.pos.0).unwrap_or(1).max(1);
                    let col = usize::try_from(e.pos.1).unwrap_or(1).max(1);
                    let at = offset_of(source, line, col);
                    let msg = e.msg.strip_prefix("Syntax error: ").unwrap_or(&e.msg);
                    CelError::new(CelErrorKind::Syntax, plain_message(msg), source, at..at)
                })
                .collect();
            if out.is_empty() {
                out.push(CelError::new(
                    CelErrorKind::Syntax,
                    "expression does not parse",
                    source,
                    0..0,
                ));
            }
            Err(out)
        }
    }
}

struct Converter<'a> {
    source: &'a str,
    info: &'a SourceInfo,
}

type ConvResult = Result<Expr, (String, Range<usize>)>;

impl Converter<'_> {
    fn span(&self, id: u64) -> Range<usize> {
        match self.info.offset_for(id) {
            Some((start, stop)) => {
                let s = (start as usize).min(self.source.len());
                let e = (stop as usize + 1).clamp(s, self.source.len());
                s..e
            }
            None => 0..0,
        }
    }

    fn expr(&self, e: IdedExpr, depth: usize) -> ConvResult {
        let span = self.span(e.id);
        if depth > MAX_DEPTH {
            return Err((
                format!("expression nests deeper than {MAX_DEPTH} levels"),
                span,
            ));
        }
        let d = depth + 1;
        let kind = match e.expr {
            CExpr::Unspecified => ExprKind::Unsupported("an incomplete expression"),
            CExpr::Literal(lit) => match lit {
                LiteralValue::Boolean(b) => ExprKind::Bool(*b),
                LiteralValue::Int(i) => ExprKind::Int(*i),
                LiteralValue::Double(f) => ExprKind::Double(*f),
                LiteralValue::String(s) => ExprKind::String(Arc::from(s.as_ref())),
                LiteralValue::Null => ExprKind::Unsupported("`null` is not in Troupe's CEL"),
                LiteralValue::Bytes(_) => {
                    ExprKind::Unsupported("bytes literals are not in Troupe's CEL")
                }
                LiteralValue::UInt(_) => {
                    ExprKind::Unsupported("unsigned int literals are not in Troupe's CEL")
                }
            },
            CExpr::Ident(name) => ExprKind::Ident(name),
            CExpr::Select(sel) => ExprKind::Select {
                operand: Box::new(self.expr(*sel.operand, d)?),
                field: sel.field,
                test: sel.test,
            },
            CExpr::Call(CallExpr {
                func_name,
                target,
                args,
            }) => ExprKind::Call {
                func: func_name,
                target: match target {
                    Some(t) => Some(Box::new(self.expr(*t, d)?)),
                    None => None,
                },
                args: args
                    .into_iter()
                    .map(|a| self.expr(a, d))
                    .collect::<Result<_, _>>()?,
            },
            CExpr::List(l) => {
                if !l.optional_indices.is_empty() {
                    ExprKind::Unsupported("optional list elements are not in Troupe's CEL")
                } else {
                    ExprKind::List(
                        l.elements
                            .into_iter()
                            .map(|a| self.expr(a, d))
                            .collect::<Result<_, _>>()?,
                    )
                }
            }
            CExpr::Map(m) => {
                let mut entries = Vec::with_capacity(m.entries.len());
                for entry in m.entries {
                    match entry.expr {
                        EntryExpr::MapEntry(me) if !me.optional => {
                            entries.push((self.expr(me.key, d)?, self.expr(me.value, d)?))
                        }
                        _ => {
                            return Ok(Expr {
                                kind: ExprKind::Unsupported(
                                    "optional map entries are not in Troupe's CEL",
                                ),
                                span,
                            })
                        }
                    }
                }
                ExprKind::Map(entries)
            }
            CExpr::Struct(_) => ExprKind::Unsupported("message literals are not in Troupe's CEL"),
            CExpr::Comprehension(c) => self.comprehension(*c, d)?,
        };
        Ok(Expr { kind, span })
    }

    /// Recognizes the expansions of the standard macros (the `cel` crate's
    /// `parser/macros.rs`) and keeps their parts.
    fn comprehension(
        &self,
        c: ComprehensionExpr,
        d: usize,
    ) -> Result<ExprKind, (String, Range<usize>)> {
        let ComprehensionExpr {
            iter_range,
            iter_var,
            iter_var2,
            accu_var,
            accu_init,
            loop_step,
            ..
        } = c;
        let unsupported = Ok(ExprKind::Unsupported(
            "this comprehension is not one of Troupe's macros",
        ));
        if iter_var2.is_some() {
            return Ok(ExprKind::Unsupported(
                "two-variable comprehensions are not in Troupe's CEL",
            ));
        }
        let is_accu = |e: &IdedExpr| matches!(&e.expr, CExpr::Ident(n) if *n == accu_var);
        let call = |e: IdedExpr, name: &str| -> Option<Vec<IdedExpr>> {
            match e.expr {
                CExpr::Call(c) if c.func_name == name && c.target.is_none() => Some(c.args),
                _ => None,
            }
        };
        // `@result + [x]`: the element appended by map and filter.
        let appended = |e: IdedExpr| -> Option<IdedExpr> {
            let mut args = call(e, operators::ADD)?;
            if args.len() != 2 || !is_accu(&args[0]) {
                return None;
            }
            match args.pop()?.expr {
                CExpr::List(mut l) if l.elements.len() == 1 => l.elements.pop(),
                _ => None,
            }
        };
        let (kind, pred, transform) = match &accu_init.expr {
            CExpr::Literal(LiteralValue::Boolean(b)) => {
                let (name, kind) = if **b {
                    (operators::LOGICAL_AND, MacroKind::All)
                } else {
                    (operators::LOGICAL_OR, MacroKind::Exists)
                };
                let Some(mut args) = call(loop_step, name) else {
                    return unsupported;
                };
                if args.len() != 2 || !is_accu(&args[0]) {
                    return unsupported;
                }
                let Some(p) = args.pop() else {
                    return unsupported;
                };
                (kind, Some(p), None)
            }
            CExpr::Literal(LiteralValue::Int(_)) => {
                let Some(mut args) = call(loop_step, operators::CONDITIONAL) else {
                    return unsupported;
                };
                if args.len() != 3 {
                    return unsupported;
                }
                args.truncate(1);
                let Some(p) = args.pop() else {
                    return unsupported;
                };
                (MacroKind::ExistsOne, Some(p), None)
            }
            CExpr::List(l) if l.elements.is_empty() => {
                match &loop_step.expr {
                    CExpr::Call(c) if c.func_name == operators::CONDITIONAL => {
                        let Some(mut args) = call(loop_step, operators::CONDITIONAL) else {
                            return unsupported;
                        };
                        if args.len() != 3 {
                            return unsupported;
                        }
                        args.truncate(2);
                        let (Some(step), Some(p)) = (args.pop(), args.pop()) else {
                            return unsupported;
                        };
                        let Some(elem) = appended(step) else {
                            return unsupported;
                        };
                        // `filter` appends the iteration variable itself.
                        if matches!(&elem.expr, CExpr::Ident(n) if *n == iter_var) {
                            (MacroKind::Filter, Some(p), None)
                        } else {
                            (MacroKind::Map, Some(p), Some(elem))
                        }
                    }
                    _ => {
                        let Some(elem) = appended(loop_step) else {
                            return unsupported;
                        };
                        (MacroKind::Map, None, Some(elem))
                    }
                }
            }
            _ => return unsupported,
        };
        Ok(ExprKind::Comprehension {
            kind,
            var: iter_var,
            range: Box::new(self.expr(iter_range, d)?),
            pred: match pred {
                Some(p) => Some(Box::new(self.expr(p, d)?)),
                None => None,
            },
            transform: match transform {
                Some(t) => Some(Box::new(self.expr(t, d)?)),
                None => None,
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scope_parses_each_text_once_and_is_restored_after() {
        let outer = Arc::new(ParseCache::default());
        let inner = Arc::new(ParseCache::default());
        outer.scope(|| {
            let a = parse_shared("x + 1").unwrap();
            let b = parse_shared("x + 1").unwrap();
            assert!(Arc::ptr_eq(&a, &b), "a hit is the same tree");
            assert!(parse_shared("x +").is_err(), "errors are cached too");
            assert!(parse_shared("x +").is_err());
            inner.scope(|| parse_shared("y").unwrap());
            // The inner scope ended: `outer` answers again.
            parse_shared("z").unwrap();
            // A panic inside a scope still restores the outer one.
            let unwound = std::panic::catch_unwind(|| inner.scope(|| panic!("inside")));
            assert!(unwound.is_err());
            parse_shared("w").unwrap();
        });
        assert_eq!(outer.len(), 4, "x + 1, x +, z, w");
        assert_eq!(inner.len(), 1, "y");
        // Outside every scope nothing is cached.
        let a = parse_shared("x + 1").unwrap();
        let b = parse_shared("x + 1").unwrap();
        assert!(!Arc::ptr_eq(&a, &b));
        assert_eq!(outer.len(), 4);
    }

    #[test]
    fn spans_are_byte_offsets() {
        let e = parse("'é' + x.y").unwrap();
        assert_eq!(e.span, 5..6);
        let ExprKind::Call { args, .. } = e.kind else {
            panic!()
        };
        assert_eq!(args[0].span.start, 0);
        assert_eq!(args[1].span, 8..9);
    }

    #[test]
    fn macros_are_recognized() {
        for (src, kind) in [
            ("[1].all(x, x > 0)", MacroKind::All),
            ("[1].exists(x, x > 0)", MacroKind::Exists),
            ("[1].exists_one(x, x > 0)", MacroKind::ExistsOne),
            ("[1].map(x, x + 1)", MacroKind::Map),
            ("[1].map(x, x > 0, x + 1)", MacroKind::Map),
            ("[1].filter(x, x > 0)", MacroKind::Filter),
        ] {
            let e = parse(src).unwrap();
            assert!(
                matches!(e.kind, ExprKind::Comprehension { kind: k, .. } if k == kind),
                "{src}: {:?}",
                e.kind
            );
        }
    }

    #[test]
    fn truncated_input_is_a_syntax_error() {
        for src in ["a ||", "1 +", "f(1,", "[", "{'a':", "has(a)", ""] {
            let errs = parse(src).unwrap_err();
            assert!(errs.iter().all(|e| e.kind == CelErrorKind::Syntax), "{src}");
        }
        let errs = parse("a ||").unwrap_err();
        assert_eq!((errs[0].line, errs[0].column), (1, 5));
    }

    #[test]
    fn deep_and_long_input_is_refused_without_overflow() {
        let long = vec!["1"; 5000].join("+");
        assert!(parse(&long).is_err());
        let chain = vec!["1"; 150].join("+");
        assert!(parse(&chain).is_ok());
        let parens = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(parse(&parens).is_err());
        // Within the length bound, parsing runs in a 2 MiB thread.
        let worst = vec!["1"; 4000].join("+");
        let h = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || parse(&worst).is_err())
            .unwrap();
        assert!(h.join().unwrap());
    }
}

/// Rewrites the parser's ANTLR wording ("mismatched input '<EOF>' expecting
/// {'[', ...}") as a plain sentence for authors; unknown wordings pass
/// through unchanged.
fn plain_message(msg: &str) -> String {
    // The parser's own recursion bound, reported through a Debug-formatted
    // error; and internal parser states ("No `…Context…`!") that follow it.
    // Neither wording may reach users (Format 16).
    if msg.contains("Recursion limit") {
        return format!(
            "the expression nests too deeply (at most {PARSER_RECURSION} levels of \
             parentheses, lists, maps and operators)"
        );
    }
    if msg.starts_with("No `") || msg.contains("Error(") || msg.contains("Error {") {
        return "the expression does not parse here".into();
    }
    let quoted = |s: &str| -> Option<String> {
        let start = s.find('\'')? + 1;
        let end = start + s[start..].find('\'')?;
        Some(s[start..end].to_string())
    };
    let token = |t: String| {
        if t == "<EOF>" {
            "the end of the expression".to_string()
        } else {
            format!("`{t}`")
        }
    };
    if let Some(rest) = msg.strip_prefix("mismatched input ") {
        return match quoted(rest).as_deref() {
            Some("<EOF>") => "the expression ends too early: a value is missing".into(),
            Some(t) => format!("unexpected `{t}`"),
            None => msg.into(),
        };
    }
    if let Some(rest) = msg.strip_prefix("extraneous input ") {
        return match quoted(rest) {
            Some(t) if rest.ends_with("expecting <EOF>") => {
                format!("unexpected `{t}` after a complete expression")
            }
            Some(t) => format!("unexpected `{t}`"),
            None => msg.into(),
        };
    }
    if let Some(rest) = msg.strip_prefix("missing ") {
        if let (Some(want), Some(at)) = (quoted(rest), rest.split(" at ").nth(1).and_then(quoted)) {
            return format!("missing `{want}` before {}", token(at));
        }
    }
    if let Some(rest) = msg.strip_prefix("no viable alternative at input ") {
        if let Some(t) = quoted(rest) {
            return format!("cannot read `{t}` here");
        }
    }
    if let Some(rest) = msg.strip_prefix("token recognition error at: ") {
        if let Some(t) = quoted(rest) {
            return format!("unrecognized text `{t}` (an unterminated string?)");
        }
    }
    msg.into()
}

#[cfg(test)]
mod message_tests {
    use super::plain_message;

    #[test]
    fn internal_wording_never_shows() {
        let m = plain_message(
            "OtherError(ParseError { source: None, pos: (97, -1), msg: \"Recursion limit of 97 exceeded\", expr_id: 0, source_info: None })",
        );
        assert!(m.starts_with("the expression nests too deeply"), "{m}");
        assert_eq!(
            plain_message("No `ConditionalAndContextAll`!"),
            "the expression does not parse here"
        );
    }

    #[test]
    fn antlr_wording_becomes_plain() {
        assert_eq!(
            plain_message("mismatched input '<EOF>' expecting {'[', '{', IDENTIFIER}"),
            "the expression ends too early: a value is missing"
        );
        assert_eq!(
            plain_message("extraneous input 'b' expecting <EOF>"),
            "unexpected `b` after a complete expression"
        );
        assert_eq!(
            plain_message("missing ')' at '<EOF>'"),
            "missing `)` before the end of the expression"
        );
        assert_eq!(
            plain_message("no viable alternative at input '.'"),
            "cannot read `.` here"
        );
        assert_eq!(plain_message("something else"), "something else");
    }
}
