//! Parsing (Format 11.1): Troupe's own recursive-descent parser of CEL's
//! grammar (cel-spec's `CEL.g4`) over the tokens of [`super::lex`], giving
//! Troupe's [`Expr`] with byte spans. The macros (`all`, `exists`,
//! `exists_one`, `map`, `filter`) are kept as [`ExprKind::Comprehension`]
//! nodes; `has()` becomes a presence test (docs/DECISIONS.md, "Our own CEL
//! parser").

use std::cell::RefCell;
// foldhash, not SipHash: every expression of a bundle is looked up here (Run AE).
use foldhash::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use super::error::{CelError, CelErrorKind};
use super::lex::{self, Tok, Token};

/// Longest expression accepted, in bytes (Format 16 bounds untrusted input;
/// this keeps the parser's own recursion well inside a 2 MiB stack).
pub const MAX_SOURCE_LEN: usize = 8 * 1024;
/// Deepest expression tree accepted.
pub const MAX_DEPTH: usize = 200;
/// Parser recursion limit (nesting of parentheses, calls, lists, maps).
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
///
/// It also keeps the verdicts of the bundle's regular expressions' checks
/// ([`pattern_verdict`]), another pure function of a text that a pack
/// repeats in every scenario (docs/performance.md, Run AE), and its
/// templates' parses ([`crate::template::parse_shared`], Format 10): the
/// check parses a reply's macros, the sessions of the checked pack render
/// them without parsing again.
#[derive(Default)]
pub struct ParseCache {
    /// Each text's parse, filled once: a thread that meets a text another
    /// is parsing waits for that parse (the checks of a pack's scenarios
    /// run on several threads, [`crate::par`]), so a text is parsed once.
    parsed: Mutex<HashMap<Box<str>, Arc<OnceLock<Parsed>>>>,
    patterns: Mutex<HashMap<Box<str>, Result<(), String>>>,
    /// Each template's parse (Format 10), filled once like `parsed`
    /// ([`crate::template::parse_shared`]): the templates of the bundle's
    /// texts that hold a macro or an escape.
    templates: Mutex<HashMap<Box<str>, Arc<OnceLock<ParsedTemplate>>>>,
}

/// One cached template parse: the template, or its syntax error.
type ParsedTemplate = Result<Arc<crate::template::Template>, crate::template::TemplateError>;

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
    #[cfg(any(test, feature = "internals"))]
    pub fn len(&self) -> usize {
        self.parsed.lock().map_or(0, |m| m.len())
    }

    /// Whether nothing was parsed through this cache.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `text` as [`crate::template::parse`] parses it, parsed once per
    /// text whichever thread asks first.
    pub(crate) fn template(&self, text: &str) -> ParsedTemplate {
        once_per_text(&self.templates, text, |t| {
            crate::template::parse(t).map(Arc::new)
        })
    }

    /// `text`'s template when a pass over the pack parsed it already (its
    /// check, [`crate::template::parse_shared`]); `None` otherwise. Only
    /// looks: a session's texts that are not the pack's (a model's
    /// replies) never grow the pack's cache.
    pub(crate) fn parsed_template(&self, text: &str) -> Option<ParsedTemplate> {
        let slot = self.templates.lock().ok()?.get(text)?.clone();
        slot.get().cloned()
    }

    fn get_or_parse(&self, source: &str) -> Parsed {
        once_per_text(&self.parsed, source, |s| parse(s).map(Arc::new))
    }
}

/// `make(text)` through `slots`: made once per text, outside the map's lock
/// (only a thread wanting this very text waits for it); made afresh, and not
/// kept, if the map's lock was poisoned.
fn once_per_text<T: Clone>(
    slots: &Mutex<HashMap<Box<str>, Arc<OnceLock<T>>>>,
    text: &str,
    make: impl Fn(&str) -> T,
) -> T {
    let slot = match slots.lock() {
        Ok(mut m) => match m.get(text) {
            Some(slot) => slot.clone(),
            None => {
                let slot = Arc::new(OnceLock::new());
                m.insert(text.into(), slot.clone());
                slot
            }
        },
        Err(_) => return make(text),
    };
    slot.get_or_init(|| make(text)).clone()
}

/// The cache of the innermost [`ParseCache::scope`] on this thread, for
/// opening the same scope on worker threads ([`crate::par::map`]).
pub(crate) fn active_scope() -> Option<Arc<ParseCache>> {
    ACTIVE.with(|a| a.borrow().clone())
}

/// `check(pattern)`, answered by the active [`ParseCache`] when a scope is
/// open on this thread (then each text is checked once), else run afresh.
/// `check` is the one check of a pattern's text (`keys::check_pattern`,
/// Format 18.1, 19.2): its verdict depends on the text alone.
pub fn pattern_verdict(pattern: &str, check: fn(&str) -> Result<(), String>) -> Result<(), String> {
    let Some(cache) = ACTIVE.with(|a| a.borrow().clone()) else {
        return check(pattern);
    };
    if let Some(hit) = cache
        .patterns
        .lock()
        .ok()
        .and_then(|m| m.get(pattern).cloned())
    {
        return hit;
    }
    let verdict = check(pattern);
    if let Ok(mut m) = cache.patterns.lock() {
        m.insert(pattern.into(), verdict.clone());
    }
    verdict
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

thread_local! {
    static PARSE_COUNT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many expressions [`parse`] has parsed on each thread, in debug
/// builds: the tests that check and compile parse each expression once
/// (issue 41 item 2).
pub(crate) static PARSES: crate::par::Counter = crate::par::Counter(&PARSE_COUNT);

/// Parses `source` into an [`Expr`] (Format 11.1): Troupe's own lexer
/// (`super::lex`) and recursive-descent parser of CEL's grammar, with the
/// standard macros recognized. A syntax error is one `CelError` with a
/// plain message at its byte offset.
pub fn parse(source: &str) -> Result<Expr, Vec<CelError>> {
    PARSES.bump();
    if source.len() > MAX_SOURCE_LEN {
        return Err(vec![CelError::new(
            CelErrorKind::Syntax,
            format!("expression is longer than {MAX_SOURCE_LEN} bytes"),
            source,
            MAX_SOURCE_LEN..MAX_SOURCE_LEN,
        )]);
    }
    let syntax = |message: String, span: Range<usize>| {
        vec![CelError::new(CelErrorKind::Syntax, message, source, span)]
    };
    let tokens = lex::tokenize(source).map_err(|e| syntax(e.message, e.at..e.at))?;
    let mut p = Parser {
        src: source,
        toks: &tokens,
        pos: 0,
        nesting: 0,
        in_message: 0,
    };
    let node = p.expr().map_err(|e| syntax(e.0, e.1))?;
    let next = p.peek();
    if next.kind != Tok::Eof {
        return Err(syntax(
            format!(
                "unexpected {} after a complete expression",
                p.describe(next)
            ),
            next.span(),
        ));
    }
    Ok(node.expr)
}

/// Deepest nesting of sub-expressions (parentheses, arguments, list and
/// map items, indexes, the else branch of `?:`), counting the whole
/// expression as one: beyond it, the text is refused before the parser's
/// recursion could grow further (a 2 MiB stack holds it with room).
const NESTING: u32 = PARSER_RECURSION as u32 + 1;

/// A parsed node and the height of its tree (a leaf is 1).
struct Node {
    expr: Expr,
    height: u32,
}

/// A syntax error: the message and the byte range it is about.
type PResult<T> = Result<T, (String, Range<usize>)>;

struct Parser<'a> {
    src: &'a str,
    toks: &'a [Token],
    pos: usize,
    /// How many `expr` rules are open.
    nesting: u32,
    /// Inside a message literal (whose parts are parsed, then dropped):
    /// heights are not bounded there.
    in_message: u32,
}

fn leaf(kind: ExprKind, span: Range<usize>) -> Node {
    Node {
        expr: Expr { kind, span },
        height: 1,
    }
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Token {
        self.toks[self.pos]
    }

    fn peek_at(&self, n: usize) -> Tok {
        self.toks.get(self.pos + n).map_or(Tok::Eof, |t| t.kind)
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos];
        if t.kind != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn text(&self, t: Token) -> &'a str {
        &self.src[t.span()]
    }

    /// How a token is named in messages.
    fn describe(&self, t: Token) -> String {
        match t.kind {
            Tok::Eof => "the end of the expression".into(),
            _ => format!("`{}`", shown(self.text(t))),
        }
    }

    /// The error for `t` where a value was expected.
    fn want_value(&self, t: Token) -> (String, Range<usize>) {
        let message = match t.kind {
            Tok::Eof => "the expression ends too early: a value is missing".to_string(),
            _ => format!("unexpected {}: a value is expected here", self.describe(t)),
        };
        (message, t.span())
    }

    /// Consumes a `kind` token (a closing bracket, `:`) or fails.
    fn expect(&mut self, kind: Tok, what: &str) -> PResult<Token> {
        let t = self.peek();
        if t.kind == kind {
            return Ok(self.bump());
        }
        Err((
            format!("missing `{what}` before {}", self.describe(t)),
            t.span(),
        ))
    }

    /// A node made of `children` (its height one more than theirs).
    /// A node over children whose tallest is `height` high: refused when
    /// the tree grows deeper than [`MAX_DEPTH`]. Inside a message literal
    /// (parsed for its syntax, then dropped) the node is kept and its
    /// children dropped instead, so no tree held here is ever deeper and
    /// dropping one, also on an error's way out, never recurses further.
    fn node(&self, kind: ExprKind, span: Range<usize>, height: u32) -> PResult<Node> {
        let mut height = height + 1;
        let mut kind = kind;
        if height > MAX_DEPTH as u32 + 1 {
            if self.in_message == 0 {
                return Err((
                    format!("expression nests deeper than {MAX_DEPTH} levels"),
                    span,
                ));
            }
            flatten(&mut kind);
            height = 2;
        }
        Ok(Node {
            expr: Expr { kind, span },
            height,
        })
    }

    fn call(&self, func: &str, span: Range<usize>, args: Vec<Node>) -> PResult<Node> {
        let height = args.iter().map(|a| a.height).max().unwrap_or(0);
        let args = args.into_iter().map(|a| a.expr).collect();
        self.node(
            ExprKind::Call {
                func: func.to_string(),
                target: None,
                args,
            },
            span,
            height,
        )
    }

    /// `expr: or ('?' or ':' expr)?`
    fn expr(&mut self) -> PResult<Node> {
        self.nesting += 1;
        if self.nesting > NESTING {
            return Err((
                format!(
                    "the expression nests too deeply (at most {PARSER_RECURSION} levels of \
                     parentheses, lists, maps and operators)"
                ),
                self.peek().span(),
            ));
        }
        let cond = self.or()?;
        let node = if self.peek().kind == Tok::Question {
            let op = self.bump().span();
            let then = self.or()?;
            self.expect(Tok::Colon, ":")?;
            let otherwise = self.expr()?;
            self.call("_?_:_", op, vec![cond, then, otherwise])?
        } else {
            cond
        };
        self.nesting -= 1;
        Ok(node)
    }

    /// `a || b || c`, and `&&` likewise: a balanced tree over the operators
    /// (as CEL's parsers build it).
    fn or(&mut self) -> PResult<Node> {
        self.logic(Tok::Or, "_||_")
    }

    fn logic(&mut self, op: Tok, func: &str) -> PResult<Node> {
        let sub = |p: &mut Self| {
            if op == Tok::Or {
                p.logic(Tok::And, "_&&_")
            } else {
                p.relation()
            }
        };
        let first = sub(self)?;
        if self.peek().kind != op {
            return Ok(first);
        }
        let mut terms = vec![Some(first)];
        let mut ops = Vec::new();
        while self.peek().kind == op {
            ops.push(self.bump().span());
            terms.push(Some(sub(self)?));
        }
        self.balanced(func, &mut terms, &ops, 0, ops.len() - 1)
    }

    fn balanced(
        &self,
        func: &str,
        terms: &mut [Option<Node>],
        ops: &[Range<usize>],
        lo: usize,
        hi: usize,
    ) -> PResult<Node> {
        let mid = (lo + hi).div_ceil(2);
        let left = if mid == lo {
            terms[mid].take()
        } else {
            Some(self.balanced(func, terms, ops, lo, mid - 1)?)
        };
        let right = if mid == hi {
            terms[mid + 1].take()
        } else {
            Some(self.balanced(func, terms, ops, mid + 1, hi)?)
        };
        let args = left.into_iter().chain(right).collect();
        self.call(func, ops[mid].clone(), args)
    }

    /// `calc (op calc)*` with the relations `< <= >= > == != in`.
    fn relation(&mut self) -> PResult<Node> {
        let mut left = self.sum()?;
        loop {
            let func = match self.peek().kind {
                Tok::Lt => "_<_",
                Tok::Le => "_<=_",
                Tok::Ge => "_>=_",
                Tok::Gt => "_>_",
                Tok::EqEq => "_==_",
                Tok::NotEq => "_!=_",
                Tok::In => "@in",
                _ => return Ok(left),
            };
            let op = self.bump().span();
            let right = self.sum()?;
            left = self.call(func, op, vec![left, right])?;
        }
    }

    fn sum(&mut self) -> PResult<Node> {
        let mut left = self.product()?;
        loop {
            let func = match self.peek().kind {
                Tok::Plus => "_+_",
                Tok::Minus => "_-_",
                _ => return Ok(left),
            };
            let op = self.bump().span();
            let right = self.product()?;
            left = self.call(func, op, vec![left, right])?;
        }
    }

    fn product(&mut self) -> PResult<Node> {
        let mut left = self.unary()?;
        loop {
            let func = match self.peek().kind {
                Tok::Star => "_*_",
                Tok::Slash => "_/_",
                Tok::Percent => "_%_",
                _ => return Ok(left),
            };
            let op = self.bump().span();
            let right = self.unary()?;
            left = self.call(func, op, vec![left, right])?;
        }
    }

    /// `member`, `!…! member`, `-…- member`: an even run of one operator
    /// cancels out; `-` before a number literal is the literal's sign.
    fn unary(&mut self) -> PResult<Node> {
        let t = self.peek();
        let (func, op) = match t.kind {
            Tok::Not => ("!_", Tok::Not),
            Tok::Minus if !matches!(self.peek_at(1), Tok::Int | Tok::Float) => ("-_", Tok::Minus),
            _ => return self.member(),
        };
        let mut n = 0;
        while self.peek().kind == op {
            self.bump();
            n += 1;
        }
        let operand = self.member()?;
        if n % 2 == 0 {
            Ok(operand)
        } else {
            self.call(func, t.span(), vec![operand])
        }
    }

    /// A primary followed by selections, receiver calls and indexes.
    fn member(&mut self) -> PResult<Node> {
        let mut e = self.primary()?;
        loop {
            match self.peek().kind {
                Tok::Dot => {
                    let dot = self.bump();
                    let name = self.peek();
                    match name.kind {
                        Tok::Ident if self.peek_at(1) == Tok::LParen => {
                            self.bump();
                            let open = self.bump().span();
                            let args = self.args()?;
                            e = self.call_or_macro(self.text(name), Some(e), args, open)?;
                        }
                        Tok::Ident | Tok::EscIdent => {
                            self.bump();
                            let mut field = self.text(name);
                            if name.kind == Tok::EscIdent {
                                field = &field[1..field.len() - 1];
                            }
                            let height = e.height;
                            e = self.node(
                                ExprKind::Select {
                                    operand: Box::new(e.expr),
                                    field: field.to_string(),
                                    test: false,
                                },
                                dot.span(),
                                height,
                            )?;
                        }
                        Tok::Question => {
                            return Err((
                                "optional selection `.?` is not in Troupe's CEL".into(),
                                name.span(),
                            ))
                        }
                        _ => {
                            return Err((
                                format!(
                                    "a field name is expected after `.`, not {}",
                                    self.describe(name)
                                ),
                                name.span(),
                            ))
                        }
                    }
                }
                Tok::LBracket => {
                    let op = self.bump().span();
                    if self.peek().kind == Tok::Question {
                        return Err((
                            "optional indexing `[?` is not in Troupe's CEL".into(),
                            self.peek().span(),
                        ));
                    }
                    let index = self.expr()?;
                    self.expect(Tok::RBracket, "]")?;
                    e = self.call("_[_]", op, vec![e, index])?;
                }
                _ => return Ok(e),
            }
        }
    }

    /// `( exprList? )` after the opening parenthesis.
    fn args(&mut self) -> PResult<Vec<Node>> {
        let mut args = Vec::new();
        if self.peek().kind == Tok::RParen {
            self.bump();
            return Ok(args);
        }
        loop {
            args.push(self.expr()?);
            let t = self.peek();
            match t.kind {
                Tok::Comma => {
                    self.bump();
                }
                Tok::RParen => {
                    self.bump();
                    return Ok(args);
                }
                _ => {
                    return Err((
                        format!("missing `,` or `)` before {}", self.describe(t)),
                        t.span(),
                    ))
                }
            }
        }
    }

    fn primary(&mut self) -> PResult<Node> {
        let t = self.peek();
        match t.kind {
            Tok::Dot | Tok::Ident => {
                let dotted = t.kind == Tok::Dot;
                let at = usize::from(dotted);
                if self.peek_at(at) != Tok::Ident {
                    return Err(self.want_value(self.toks[self.pos + at]));
                }
                if self.is_message(at) {
                    return self.message(dotted);
                }
                if dotted {
                    self.bump();
                }
                let id = self.bump();
                let raw = self.text(id);
                if let Some(reserved) = reserved(raw) {
                    return Err(reserved_error(reserved, id.span()));
                }
                let name = if dotted {
                    format!(".{raw}")
                } else {
                    raw.to_string()
                };
                if self.peek().kind == Tok::LParen {
                    let open = self.bump().span();
                    let args = self.args()?;
                    return self.call_or_macro(&name, None, args, open);
                }
                Ok(leaf(ExprKind::Ident(name), id.span()))
            }
            Tok::LParen => {
                self.bump();
                let e = self.expr()?;
                self.expect(Tok::RParen, ")")?;
                Ok(e)
            }
            Tok::LBracket => self.list(),
            Tok::LBrace => self.map(),
            // A sign belongs to a number literal only.
            Tok::Minus if matches!(self.peek_at(1), Tok::Int | Tok::Float) => {
                self.bump();
                self.literal(true)
            }
            Tok::Int
            | Tok::Uint
            | Tok::Float
            | Tok::Str
            | Tok::Bytes
            | Tok::True
            | Tok::False
            | Tok::Null => self.literal(false),
            _ => Err(self.want_value(t)),
        }
    }

    fn literal(&mut self, negative: bool) -> PResult<Node> {
        let t = self.bump();
        let text = self.text(t);
        let span = t.span();
        let kind = match t.kind {
            Tok::Int => {
                let (radix, digits) = match text.strip_prefix("0x") {
                    Some(hex) => (16, hex),
                    None => (10, text),
                };
                let parsed = if negative {
                    i64::from_str_radix(&format!("-{digits}"), radix)
                } else {
                    i64::from_str_radix(digits, radix)
                };
                match parsed {
                    Ok(v) => ExprKind::Int(v),
                    Err(_) => {
                        return Err((
                            format!(
                                "the int literal {} is out of range (64-bit signed)",
                                shown(text)
                            ),
                            span,
                        ))
                    }
                }
            }
            Tok::Float => {
                let parsed = if negative {
                    format!("-{text}").parse::<f64>()
                } else {
                    text.parse::<f64>()
                };
                match parsed {
                    Ok(v) if v.is_finite() => ExprKind::Double(v),
                    _ => {
                        return Err((
                            format!("the double literal {} is out of range", shown(text)),
                            span,
                        ))
                    }
                }
            }
            Tok::Uint => {
                let digits = &text[..text.len() - 1];
                let parsed = match digits.strip_prefix("0x") {
                    Some(hex) => u64::from_str_radix(hex, 16),
                    None => digits.parse::<u64>(),
                };
                if parsed.is_err() {
                    return Err((
                        format!("the unsigned int literal {} is out of range", shown(text)),
                        span,
                    ));
                }
                ExprKind::Unsupported("unsigned int literals are not in Troupe's CEL")
            }
            Tok::Str => {
                let value = lex::decode(text, false)
                    .ok()
                    .and_then(|v| String::from_utf8(v).ok());
                match value {
                    Some(v) => ExprKind::String(Arc::from(v)),
                    None => {
                        return Err((
                            "this string has an escape that names no character (a surrogate \
                             or a code point above U+10FFFF)"
                                .into(),
                            span,
                        ))
                    }
                }
            }
            Tok::Bytes => match lex::decode(text, true) {
                Ok(_) => ExprKind::Unsupported("bytes literals are not in Troupe's CEL"),
                Err(why) => return Err((format!("invalid bytes literal: {why}"), span)),
            },
            Tok::True => ExprKind::Bool(true),
            Tok::False => ExprKind::Bool(false),
            Tok::Null => ExprKind::Unsupported("`null` is not in Troupe's CEL"),
            // Only a number follows a sign (see `unary`).
            _ => return Err(self.want_value(t)),
        };
        Ok(leaf(kind, span))
    }

    /// `[a, b]`, with an optional trailing comma (`[,]` is empty).
    fn list(&mut self) -> PResult<Node> {
        let open = self.bump().span();
        let (mut items, mut height) = (Vec::new(), 0);
        self.literal_items(Tok::RBracket, "]", "list elements", |p| {
            let item = p.expr()?;
            height = height.max(item.height);
            items.push(item.expr);
            Ok(())
        })?;
        self.node(ExprKind::List(items), open, height)
    }

    /// `{k: v, …}`, with an optional trailing comma (`{,}` is empty).
    fn map(&mut self) -> PResult<Node> {
        let open = self.bump().span();
        let (mut entries, mut height) = (Vec::new(), 0);
        self.literal_items(Tok::RBrace, "}", "map entries", |p| {
            let key = p.expr()?;
            p.expect(Tok::Colon, ":")?;
            let value = p.expr()?;
            height = height.max(key.height).max(value.height);
            entries.push((key.expr, value.expr));
            Ok(())
        })?;
        self.node(ExprKind::Map(entries), open, height)
    }

    /// The items of a list or map literal after its opening token, through
    /// `close` (written `close_text`): each parsed by `item`, separated by
    /// commas, with an optional trailing comma (a lone comma is an empty
    /// literal). An optional item `?` (`optional` names them) is refused.
    fn literal_items(
        &mut self,
        close: Tok,
        close_text: &str,
        optional: &str,
        mut item: impl FnMut(&mut Self) -> PResult<()>,
    ) -> PResult<()> {
        let mut first = true;
        loop {
            let t = self.peek();
            if t.kind == close {
                self.bump();
                return Ok(());
            }
            if t.kind == Tok::Comma && (first || self.peek_at(1) == close) {
                self.bump();
                self.expect(close, close_text)?;
                return Ok(());
            }
            if !first {
                if t.kind != Tok::Comma {
                    return Err((
                        format!("missing `,` or `{close_text}` before {}", self.describe(t)),
                        t.span(),
                    ));
                }
                self.bump();
            }
            first = false;
            if self.peek().kind == Tok::Question {
                return Err((
                    format!("optional {optional} `?` are not in Troupe's CEL"),
                    self.peek().span(),
                ));
            }
            item(self)?;
        }
    }

    /// Whether `IDENT (. IDENT)* {` starts at token `at` from here: a
    /// message literal.
    fn is_message(&self, mut at: usize) -> bool {
        loop {
            if self.peek_at(at) != Tok::Ident {
                return false;
            }
            match self.peek_at(at + 1) {
                Tok::LBrace => return true,
                Tok::Dot => at += 2,
                _ => return false,
            }
        }
    }

    /// `.? a.b.C{field: value, …}`: parsed, and kept as unsupported.
    fn message(&mut self, dotted: bool) -> PResult<Node> {
        if dotted {
            self.bump();
        }
        while self.peek().kind != Tok::LBrace {
            self.bump();
        }
        let open = self.bump().span();
        self.in_message += 1;
        let mut first = true;
        loop {
            let t = self.peek();
            if t.kind == Tok::RBrace {
                self.bump();
                break;
            }
            if t.kind == Tok::Comma && (first || self.peek_at(1) == Tok::RBrace) {
                self.bump();
                self.expect(Tok::RBrace, "}")?;
                break;
            }
            if !first {
                if t.kind != Tok::Comma {
                    return Err((
                        format!("missing `,` or `}}` before {}", self.describe(t)),
                        t.span(),
                    ));
                }
                self.bump();
            }
            first = false;
            let field = self.peek();
            match field.kind {
                Tok::Ident | Tok::EscIdent => {
                    self.bump();
                }
                Tok::Question => {
                    return Err((
                        "optional fields `?` are not in Troupe's CEL".into(),
                        field.span(),
                    ))
                }
                _ => {
                    return Err((
                        format!("a field name is expected, not {}", self.describe(field)),
                        field.span(),
                    ))
                }
            }
            self.expect(Tok::Colon, ":")?;
            dismantle(self.expr()?.expr);
        }
        self.in_message -= 1;
        Ok(leaf(
            ExprKind::Unsupported("message literals are not in Troupe's CEL"),
            open,
        ))
    }

    /// The call `name(args)` (on `target` if any), or the macro it is:
    /// `has(a.b)`, `r.all(x, p)`, `r.exists(x, p)`, `r.exists_one(x, p)`
    /// (also `existsOne`), `r.map(x, f)`, `r.map(x, p, f)`, `r.filter(x, p)`.
    /// The node is placed at the call's `(`.
    fn call_or_macro(
        &self,
        name: &str,
        target: Option<Node>,
        mut args: Vec<Node>,
        span: Range<usize>,
    ) -> PResult<Node> {
        let Some(target) = target else {
            if name == "has" && args.len() == 1 {
                let arg = args.pop().map(|a| (a.expr, a.height));
                return match arg {
                    Some((
                        Expr {
                            kind: ExprKind::Select { operand, field, .. },
                            ..
                        },
                        height,
                    )) => Ok(Node {
                        expr: Expr {
                            kind: ExprKind::Select {
                                operand,
                                field,
                                test: true,
                            },
                            span,
                        },
                        height,
                    }),
                    Some((e, _)) => Err((
                        "has() takes a field selection, as in has(a.b)".into(),
                        e.span,
                    )),
                    None => Err(("has() takes a field selection".into(), span)),
                };
            }
            return self.call(name, span, args);
        };
        let kind = match (name, args.len()) {
            ("all", 2) => Some(MacroKind::All),
            ("exists", 2) => Some(MacroKind::Exists),
            ("exists_one" | "existsOne", 2) => Some(MacroKind::ExistsOne),
            ("map", 2 | 3) => Some(MacroKind::Map),
            ("filter", 2) => Some(MacroKind::Filter),
            _ => None,
        };
        let Some(mut kind) = kind else {
            let height = args
                .iter()
                .map(|a| a.height)
                .max()
                .unwrap_or(0)
                .max(target.height);
            return self.node(
                ExprKind::Call {
                    func: name.to_string(),
                    target: Some(Box::new(target.expr)),
                    args: args.into_iter().map(|a| a.expr).collect(),
                },
                span,
                height,
            );
        };
        let mut args = args.into_iter();
        let var = match args.next() {
            Some(Node {
                expr:
                    Expr {
                        kind: ExprKind::Ident(var),
                        ..
                    },
                ..
            }) => var,
            Some(other) => {
                return Err((
                    format!("the first argument of {name}() is a variable name"),
                    other.expr.span,
                ))
            }
            None => return Err((format!("{name}() takes arguments"), span)),
        };
        let rest: Vec<Node> = args.collect();
        let height = rest
            .iter()
            .map(|a| a.height)
            .max()
            .unwrap_or(0)
            .max(target.height);
        let mut rest = rest.into_iter().map(|n| Box::new(n.expr));
        let (pred, transform) = match kind {
            MacroKind::Map => {
                let (pred, transform) = match (rest.next(), rest.next()) {
                    (Some(f), None) => (None, Some(f)),
                    (p, f) => (p, f),
                };
                // `r.map(x, p, x)` keeps the elements that pass `p`: a filter
                // (as the macro's expansion reads).
                if pred.is_some()
                    && matches!(transform.as_deref(), Some(Expr { kind: ExprKind::Ident(n), .. }) if *n == var)
                {
                    kind = MacroKind::Filter;
                    (pred, None)
                } else {
                    (pred, transform)
                }
            }
            _ => (rest.next(), None),
        };
        self.node(
            ExprKind::Comprehension {
                kind,
                var,
                range: Box::new(target.expr),
                pred,
                transform,
            },
            span,
            height,
        )
    }
}

/// A token's text as messages quote it: at most 24 characters, then `…`.
fn shown(text: &str) -> String {
    match text.char_indices().nth(24) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

/// The reserved word `name` is, if any (CEL reserves them for the future;
/// they cannot name a variable or function).
fn reserved(name: &str) -> Option<&str> {
    matches!(
        name,
        "as" | "break"
            | "const"
            | "continue"
            | "else"
            | "for"
            | "function"
            | "if"
            | "import"
            | "let"
            | "loop"
            | "package"
            | "namespace"
            | "return"
            | "var"
            | "void"
            | "while"
    )
    .then_some(name)
}

fn reserved_error(name: &str, span: Range<usize>) -> (String, Range<usize>) {
    (
        format!("`{name}` is a reserved word in CEL and cannot be a name"),
        span,
    )
}

/// Drops a tree of any height without recursion.
fn dismantle(e: Expr) {
    let mut root = e.kind;
    flatten(&mut root);
}

/// Drops the children of `kind` and their trees without recursion; `kind`
/// keeps its own variant (what `has()` and the macros look at).
fn flatten(kind: &mut ExprKind) {
    let mut stack = Vec::new();
    take_children(kind, &mut stack);
    while let Some(mut e) = stack.pop() {
        take_children(&mut e.kind, &mut stack);
    }
}

/// Moves the children of `kind` onto `stack`: a selection's operand and a
/// comprehension's range become leaves, calls, lists and maps lose theirs.
fn take_children(kind: &mut ExprKind, stack: &mut Vec<Expr>) {
    match kind {
        ExprKind::Select { operand, .. } => {
            stack.push(std::mem::replace(&mut **operand, placeholder()))
        }
        ExprKind::Call { target, args, .. } => {
            stack.extend(target.take().map(|t| *t));
            stack.append(args);
        }
        ExprKind::List(items) => stack.append(items),
        ExprKind::Map(entries) => {
            for (k, v) in entries.drain(..) {
                stack.push(k);
                stack.push(v);
            }
        }
        ExprKind::Comprehension {
            range,
            pred,
            transform,
            ..
        } => {
            stack.push(std::mem::replace(&mut **range, placeholder()));
            stack.extend(pred.take().map(|p| *p));
            stack.extend(transform.take().map(|t| *t));
        }
        _ => {}
    }
}

fn placeholder() -> Expr {
    Expr {
        kind: ExprKind::Bool(false),
        span: 0..0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pattern's verdict is reached once per text inside a scope (errors
    /// too), and afresh on every call outside one (Run AE).
    #[test]
    fn a_scope_checks_each_pattern_once() {
        use std::cell::Cell;
        thread_local! {
            static RUNS: Cell<u32> = const { Cell::new(0) };
        }
        fn check(p: &str) -> Result<(), String> {
            RUNS.with(|c| c.set(c.get() + 1));
            if p == "(" {
                Err("unclosed".into())
            } else {
                Ok(())
            }
        }
        let cache = Arc::new(ParseCache::default());
        cache.scope(|| {
            for _ in 0..3 {
                assert_eq!(pattern_verdict("a+", check), Ok(()));
                assert_eq!(pattern_verdict("(", check), Err("unclosed".into()));
            }
        });
        assert_eq!(RUNS.with(Cell::get), 2);
        assert_eq!(pattern_verdict("a+", check), Ok(()));
        assert_eq!(pattern_verdict("a+", check), Ok(()));
        assert_eq!(RUNS.with(Cell::get), 4);
    }

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
    fn syntax_errors_are_one_plain_sentence_at_the_first_problem() {
        for (src, message, at) in [
            (
                "a ||",
                "the expression ends too early: a value is missing",
                4,
            ),
            ("(a", "missing `)` before the end of the expression", 2),
            ("a b", "unexpected `b` after a complete expression", 2),
            ("f(1,)", "unexpected `)`: a value is expected here", 4),
            ("[1 2]", "missing `,` or `]` before `2`", 3),
            (
                "if > 1",
                "`if` is a reserved word in CEL and cannot be a name",
                0,
            ),
            (
                "9223372036854775808",
                "the int literal 9223372036854775808 is out of range (64-bit signed)",
                0,
            ),
            ("a = 1", "unexpected `=`: compare with `==`", 2),
            ("has(a)", "has() takes a field selection, as in has(a.b)", 4),
            (
                "xs.all(1, x)",
                "the first argument of all() is a variable name",
                7,
            ),
        ] {
            let errs = parse(src).unwrap_err();
            assert_eq!(errs.len(), 1, "{src}");
            assert_eq!(errs[0].message, message, "{src}");
            assert_eq!(errs[0].span.start, at, "{src}");
        }
        let errs = parse("'abc").unwrap_err();
        assert!(errs[0]
            .message
            .starts_with("this string has no closing `'`"));
        let errs = parse("'\\q'").unwrap_err();
        assert!(
            errs[0].message.starts_with("invalid escape `\\q`"),
            "{}",
            errs[0].message
        );
    }

    #[test]
    fn signs_and_runs_of_unary_operators() {
        // `-` before a number is its sign, so the call is on `-1`.
        let e = parse("-1.size()").unwrap();
        let ExprKind::Call { func, target, .. } = e.kind else {
            panic!()
        };
        assert_eq!(func, "size");
        assert_eq!(target.unwrap().kind, ExprKind::Int(-1));
        // Two negations cancel: the literal itself, at its own span.
        assert_eq!(
            parse("--1").unwrap(),
            Expr {
                kind: ExprKind::Int(1),
                span: 2..3
            }
        );
        assert!(matches!(parse("!!!a").unwrap().kind, ExprKind::Call { func, .. } if func == "!_"));
        // A sign belongs to numbers only.
        assert!(parse("!-x").is_err());
        assert!(parse("!-1").is_ok());
    }

    #[test]
    fn deep_and_long_input_is_refused_without_overflow() {
        let long = vec!["1"; 5000].join("+");
        assert!(parse(&long).is_err());
        let chain = vec!["1"; 150].join("+");
        assert!(parse(&chain).is_ok());
        let parens = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert!(parse(&parens).is_err());
        // Within the length bound, parsing runs in a 2 MiB thread: also a
        // message literal's parts, which may be deeper than 200 levels, on
        // success and on an error after them.
        let chain = vec!["1"; 4000].join("+");
        let fields = vec!["a"; 2000].join(".");
        let h = std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                assert!(parse(&chain).is_err());
                let message = format!("A{{a: {chain}}}");
                assert!(parse(&message).is_ok());
                assert!(parse(&format!("A{{a: {chain} +}}")).is_err());
                assert!(parse(&format!("A{{a: has({fields})}}")).is_ok());
                assert!(parse(&format!("A{{a: {fields}.all(x, {fields})}}")).is_ok());
                assert!(parse(&format!("A{{a: {fields}[}}")).is_err());
            })
            .unwrap();
        h.join().unwrap();
    }
}
