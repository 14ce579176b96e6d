//! Card macros to Troupe macros and back (`docs/import.md` §5, Format 10).
//!
//! Card text uses the V3 "curly braced syntax" (`{{char}}`, `{{user}}`,
//! `{{random:a,b}}`, `{{pick:..}}`, `{{roll:..}}`, `{{// ..}}`,
//! `{{hidden_key:..}}`, `{{comment:..}}`, `{{reverse:..}}`, names in any
//! case, `\,` inside arguments), SillyTavern's `::` forms, which nest
//! (`{{random::a::{{random::b::c}}}}`), its variables (`{{setvar::x::v}}`,
//! `{{getvar::x}}`, `{{.x}}`), its `{{if}}…{{else}}…{{/if}}` blocks and its
//! brace escapes `\{\{` `\}\}`, and the legacy tags `<USER>`, `<BOT>` and
//! `<CHAR>`. Troupe's template language (Format 10) has no nesting, no
//! variables in text and no conditionals, so the importer evaluates what it
//! can at import time, innermost first, and keeps the rest as written with a
//! positioned warning (see [`convert`]).

use std::collections::BTreeSet;

use troupe::internals::template::{self, Macro, Node};

use super::ids::slug;
use super::summary::Summary;

/// Writes a literal `\` as template text (Format 10.1): doubled when it
/// comes before `\` or `{{`, where the template would read an escape.
fn push_backslash(next: &str, out: &mut String) {
    if next.starts_with('\\') || next.starts_with("{{") {
        out.push_str("\\\\");
    } else {
        out.push('\\');
    }
}

/// Copies the first character of `rest` and returns its length in bytes.
fn push_char(rest: &str, out: &mut String) -> usize {
    let c = rest.chars().next().unwrap_or('\0');
    out.push(c);
    c.len_utf8()
}

/// Troupe template text → card text: the escapes `\{{` and `\\` are
/// resolved; macros are written as they are (Troupe's macros are V3's).
pub fn from_troupe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if rest.starts_with("\\{{") {
            out.push_str("{{");
            i += 3;
        } else if rest.starts_with("\\\\") {
            out.push('\\');
            i += 2;
        } else {
            i += push_char(rest, &mut out);
        }
    }
    out
}

/// Plain text (a chat message, already rendered) → a Troupe template that
/// renders exactly that text: `{{` → `\{{`, a `\` before `\` or `{{`
/// doubled.
pub fn literal(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if rest.starts_with("{{") {
            out.push_str("\\{{");
            i += 2;
        } else if let Some(next) = rest.strip_prefix('\\') {
            push_backslash(next, &mut out);
            i += 1;
        } else {
            i += push_char(rest, &mut out);
        }
    }
    out
}

/// Card text with only the names filled in (`{{char}}`, `<BOT>`, `<CHAR>`
/// → `char`; `{{user}}`, `<USER>` → `user`, any case): how a chat
/// application shows a greeting, used to find which greeting a chat's first
/// message is.
pub fn fill_names(text: &str, char: &str, user: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        let lower_head = rest
            .get(..8)
            .map(str::to_ascii_lowercase)
            .unwrap_or_default();
        if lower_head.starts_with("{{char}}") {
            out.push_str(char);
            i += 8;
        } else if lower_head.starts_with("{{user}}") {
            out.push_str(user);
            i += 8;
        } else if let Some((len, name)) = legacy_tag(rest) {
            out.push_str(if name == "{{user}}" { user } else { char });
            i += len;
        } else {
            i += push_char(rest, &mut out);
        }
    }
    out
}

/// `<USER>`, `<BOT>`, `<CHAR>` (any case) at the start of `s`: its byte
/// length and the Troupe macro it becomes.
fn legacy_tag(s: &str) -> Option<(usize, &'static str)> {
    let head = s.get(..6).map(str::to_ascii_lowercase);
    let short = s.get(..5).map(str::to_ascii_lowercase);
    match (head.as_deref(), short.as_deref()) {
        (Some("<user>"), _) => Some((6, "{{user}}")),
        (Some("<char>"), _) => Some((6, "{{char}}")),
        (_, Some("<bot>")) => Some((5, "{{char}}")),
        _ => None,
    }
}

/// True when `source` is exactly one Troupe macro of a known form.
fn parses_as_macro(source: &str) -> bool {
    match template::parse(source) {
        Ok(t) => matches!(t.nodes.as_slice(), [Node::Macro(..)]),
        Err(_) => false,
    }
}

/// The most options a `random`/`pick` may have after nested choices are
/// flattened into it (`docs/import.md` §5); past it the macro is kept as
/// written, with a warning.
pub const MAX_OPTIONS: usize = 256;

/// The deepest nesting of card macros converted; deeper ones are kept as
/// written, with a warning.
pub const MAX_NESTING: usize = 16;

/// What an `{{if}}` block on chat-time state becomes (`docs/import.md`
/// §5): a comment, which renders nothing.
pub const IF_LEFT_OUT: &str = "{{// if-block left out at import}}";

/// The most warnings one text gives; the rest are counted in one more.
const MAX_WARNINGS: usize = 20;

/// Where and how one card text is converted by [`convert`].
#[derive(Debug, Clone, Copy)]
pub struct Field<'a> {
    /// The text's JSON Pointer in the card (warnings and notes are located
    /// there, with the macro's offset in the message).
    pub at: &'a str,
    /// The character's display name, which `{{char}}` gives when a macro
    /// needs its value at import (`{{reverse::{{char}}}}`); `None` when the
    /// text belongs to no character (a lorebook on its own).
    pub char_name: Option<&'a str>,
    /// True for a greeting: its variables are known at import (a chat
    /// starts with none), so `setvar` becomes the opening's changes and
    /// `getvar` the value set so far.
    pub greeting: bool,
}

/// A converted card text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Converted {
    /// The Troupe template (Format 10.1).
    pub text: String,
    /// In a greeting: the final value of each variable its macros set, in
    /// the order first set (variable ID, value): the opening's `set`
    /// changes (Format 6.3, 8.5).
    pub sets: Vec<(String, String)>,
    /// The IDs of every card variable the text names (set or read), for the
    /// scenario to declare (`string`, Format 8.1).
    pub variables: BTreeSet<String>,
    /// Variables read with a Macros 2.0 default (`{{.x ?? 0}}`): (variable
    /// ID, default text), in text order, for the scenario to declare with
    /// that default (`docs/import.md` §5).
    pub defaults: Vec<(String, String)>,
    /// Variables read without a default outside a greeting (`{{.x}}`,
    /// `{{getvar::x}}`), to warn when the same variable has a default
    /// elsewhere.
    pub plain_reads: BTreeSet<String>,
}

/// The Troupe variable ID of a SillyTavern variable name: its slug
/// (`docs/import.md` §1) with the fallback `var`. Names with the same slug
/// share one variable.
pub fn var_id(name: &str) -> String {
    slug(name.trim(), "var")
}

/// Card text → Troupe template text, without a summary (see [`convert`]).
pub fn to_troupe(text: &str) -> String {
    let mut s = Summary::default();
    to_troupe_noted(text, "", &mut s)
}

/// Card text that belongs to no greeting and no known character (a
/// lorebook's) → Troupe template text, its notes and warnings in `summary`
/// at `at`.
pub fn to_troupe_noted(text: &str, at: &str, summary: &mut Summary) -> String {
    let field = Field {
        at,
        char_name: None,
        greeting: false,
    };
    convert(text, field, summary).text
}

/// Converts one card text (`docs/import.md` §5), innermost macro first:
///
/// - text: `\{\{` and `\}\}` are literal double braces; `<USER>`, `<BOT>`, `<CHAR>`
///   are `{{user}}`, `{{char}}`; a `{{` or `}}` that pairs with nothing is
///   literal; literal text is written so that it renders as itself;
/// - a macro Troupe parses as it is (`{{char}}`, `{{random: a, b}}`,
///   `{{roll:d6}}`, a path) is kept; `::` splits arguments at the top
///   level only; `random`/`pick` take their options (nested choices
///   flattened with weights, so each outer option keeps its share), `roll`,
///   `reverse` (computed when its argument is known), `setvar`, `addvar`,
///   `incvar`, `decvar`, `getvar`, `.name` (variables), `//`, `comment`,
///   `hidden_key`, `newline`, `noop`;
/// - `{{if C}}…{{else}}…{{/if}}` keeps the branch its condition chooses when
///   the condition is known at import, else the block is kept as written;
/// - any macro that cannot be converted is kept as written (it renders its
///   source) with an ADVISORY warning at `field.at` naming its offset in
///   characters; unknown macros are kept as written silently (as
///   SillyTavern leaves them).
pub fn convert(text: &str, field: Field<'_>, summary: &mut Summary) -> Converted {
    let nodes = parse_card(text);
    let mut cx = Cx {
        text,
        field,
        summary,
        sets: Vec::new(),
        variables: BTreeSet::new(),
        defaults: Vec::new(),
        plain_reads: BTreeSet::new(),
        warnings: 0,
        notes: 0,
        last: (0, 0),
    };
    let pieces = cx.seq(&nodes, 0);
    if cx.warnings > MAX_WARNINGS {
        cx.summary.warn(
            field.at,
            format!("{} more macros kept as written", cx.warnings - MAX_WARNINGS),
        );
    }
    Converted {
        text: join(&pieces),
        sets: cx.sets,
        variables: cx.variables,
        defaults: cx.defaults,
        plain_reads: cx.plain_reads,
    }
}

/// A node of card text: literal text (escapes resolved), a legacy tag, or
/// a macro `{{…}}` (its byte range in the field's text, and its body).
#[derive(Debug, Clone)]
enum CNode {
    Text(String),
    Tag(&'static str),
    Mac {
        start: usize,
        end: usize,
        body: Vec<CNode>,
    },
}

/// A piece of Troupe output: literal text (escaped when joined) or Troupe
/// template source.
#[derive(Debug, Clone)]
enum Piece {
    Lit(String),
    Tr(String),
}

/// What a macro (or an argument) converts to: a fixed output, with its
/// text when it is known at import; or a choice among known texts, with
/// the Troupe source to keep when the card already wrote it Troupe's way.
#[derive(Debug, Clone)]
enum Val {
    Fixed {
        out: Vec<Piece>,
        text: Option<String>,
    },
    Choice {
        kind: &'static str,
        opts: Vec<String>,
        src: Option<String>,
    },
}

impl Val {
    fn lit(s: impl Into<String>) -> Val {
        let s = s.into();
        Val::Fixed {
            out: vec![Piece::Lit(s.clone())],
            text: Some(s),
        }
    }
    fn empty() -> Val {
        Val::Fixed {
            out: Vec::new(),
            text: Some(String::new()),
        }
    }
    /// The texts it may give (one when fixed and known), or why unknown.
    fn options(&self) -> Result<Vec<String>, String> {
        match self {
            Val::Fixed { text: Some(t), .. } => Ok(vec![t.clone()]),
            Val::Fixed { .. } => Err("it holds a macro whose value is only known in a chat".into()),
            Val::Choice { opts, .. } => Ok(opts.clone()),
        }
    }
}

/// Parses card text into nodes: one pass finds `{{` and `}}` (outside the
/// escapes `\{\{`, `\}\}`) and pairs each `}}` with the last open `{{`; unpaired
/// ones are text.
fn parse_card(text: &str) -> Vec<CNode> {
    let b = text.as_bytes();
    let mut toks: Vec<(usize, bool)> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match (b[i], b.get(i + 1)) {
            (b'\\', _) if brace_escape(&text[i..]).is_some() => i += 4,
            (b'{', Some(b'{')) => {
                toks.push((i, true));
                i += 2;
            }
            (b'}', Some(b'}')) => {
                toks.push((i, false));
                i += 2;
            }
            _ => i += 1,
        }
    }
    let mut pair = vec![usize::MAX; toks.len()];
    let mut stack = Vec::new();
    for (k, (_, open)) in toks.iter().enumerate() {
        if *open {
            stack.push(k);
        } else if let Some(o) = stack.pop() {
            pair[o] = k;
        }
    }
    let mut nodes = Vec::new();
    build(
        text,
        &toks,
        &pair,
        0,
        toks.len(),
        0,
        text.len(),
        0,
        &mut nodes,
    );
    nodes
}

/// Builds the nodes of `text[from..to]`, whose tokens are `toks[t0..t1]`.
#[allow(clippy::too_many_arguments)]
fn build(
    text: &str,
    toks: &[(usize, bool)],
    pair: &[usize],
    t0: usize,
    t1: usize,
    from: usize,
    to: usize,
    depth: usize,
    out: &mut Vec<CNode>,
) {
    let mut pos = from;
    let mut k = t0;
    while k < t1 {
        let (at, open) = toks[k];
        if open && pair[k] != usize::MAX && pair[k] < t1 {
            push_card_text(&text[pos..at], out);
            let close = pair[k];
            let end = toks[close].0 + 2;
            let mut body = Vec::new();
            if depth < MAX_NESTING {
                build(
                    text,
                    toks,
                    pair,
                    k + 1,
                    close,
                    at + 2,
                    toks[close].0,
                    depth + 1,
                    &mut body,
                );
            } else {
                body.push(CNode::Tag("too-deep"));
            }
            out.push(CNode::Mac {
                start: at,
                end,
                body,
            });
            pos = end;
            k = close + 1;
        } else {
            k += 1;
        }
    }
    push_card_text(&text[pos..to], out);
}

/// SillyTavern's escaped braces at the start of `s`: `\{\{` → `{{`,
/// `\}\}` → `}}` (4 bytes). A lone `\{` is text, so LaTeX and the like stay
/// as written.
fn brace_escape(s: &str) -> Option<&'static str> {
    if s.starts_with("\\{\\{") {
        Some("{{")
    } else if s.starts_with("\\}\\}") {
        Some("}}")
    } else {
        None
    }
}

/// Pushes plain card text: `\{\{` → `{{`, `\}\}` → `}}`, legacy tags as
/// tags.
fn push_card_text(s: &str, out: &mut Vec<CNode>) {
    let mut cur = String::new();
    let mut i = 0;
    while i < s.len() {
        let rest = &s[i..];
        if let Some(braces) = brace_escape(rest) {
            cur.push_str(braces);
            i += 4;
        } else if let Some((len, name)) = legacy_tag(rest) {
            push_text_node(std::mem::take(&mut cur), out);
            out.push(CNode::Tag(if name == "{{user}}" { "user" } else { "char" }));
            i += len;
        } else {
            i += push_char(rest, &mut cur);
        }
    }
    push_text_node(cur, out);
}

fn push_text_node(s: String, out: &mut Vec<CNode>) {
    if s.is_empty() {
        return;
    }
    if let Some(CNode::Text(t)) = out.last_mut() {
        t.push_str(&s);
    } else {
        out.push(CNode::Text(s));
    }
}

/// Joins pieces into a template: literal text escaped so that it renders
/// as itself (`{{` → `\{{`; a `\` before `\`, `{{` or a following macro
/// doubled).
fn join(pieces: &[Piece]) -> String {
    let mut out = String::new();
    let mut k = 0;
    while k < pieces.len() {
        match &pieces[k] {
            Piece::Tr(s) => {
                out.push_str(s);
                k += 1;
            }
            Piece::Lit(_) => {
                let mut lit = String::new();
                while let Some(Piece::Lit(s)) = pieces.get(k) {
                    lit.push_str(s);
                    k += 1;
                }
                if lit.ends_with('\\') && k < pieces.len() {
                    // A macro follows: the last `\` must not read as `\{{`.
                    let esc = literal(&format!("{lit}{{{{"));
                    out.push_str(&esc[..esc.len() - 3]);
                } else {
                    out.push_str(&literal(&lit));
                }
            }
        }
    }
    out
}

/// How a macro body begins, for `{{if}}` blocks.
enum Head {
    If(Vec<CNode>),
    Else,
    EndIf,
    Other,
}

fn head(body: &[CNode]) -> Head {
    let Some(CNode::Text(t)) = body.first() else {
        return Head::Other;
    };
    let t0 = t.trim_start();
    let lower = t0.to_ascii_lowercase();
    if body.len() == 1 {
        match lower.trim_end() {
            "else" => return Head::Else,
            "/if" | "/" => return Head::EndIf,
            _ => {}
        }
    }
    for p in ["#if::", "if::", "#if ", "if ", "#if\n", "if\n"] {
        if lower.starts_with(p) {
            let mut cond = vec![CNode::Text(t0[p.len()..].to_string())];
            cond.extend(body[1..].iter().cloned());
            return Head::If(cond);
        }
    }
    Head::Other
}

/// For each `{{if}}` of `nodes`, its `{{else}}` (the first at its level)
/// and its `{{/if}}`, matched in one pass with a stack.
fn blocks(nodes: &[CNode]) -> Vec<Option<(Option<usize>, usize)>> {
    let mut m = vec![None; nodes.len()];
    let mut stack: Vec<(usize, Option<usize>)> = Vec::new();
    for (j, n) in nodes.iter().enumerate() {
        if let CNode::Mac { body, .. } = n {
            match head(body) {
                Head::If(_) => stack.push((j, None)),
                Head::Else => {
                    if let Some(top) = stack.last_mut() {
                        top.1.get_or_insert(j);
                    }
                }
                Head::EndIf => {
                    if let Some((i, e)) = stack.pop() {
                        m[i] = Some((e, j));
                    }
                }
                Head::Other => {}
            }
        }
    }
    m
}

struct Cx<'a, 's> {
    text: &'a str,
    field: Field<'a>,
    summary: &'s mut Summary,
    sets: Vec<(String, String)>,
    variables: BTreeSet<String>,
    defaults: Vec<(String, String)>,
    plain_reads: BTreeSet<String>,
    warnings: usize,
    notes: usize,
    /// The last offset computed (byte, characters), so that offsets asked
    /// for in text order cost one pass in all.
    last: (usize, usize),
}

impl Cx<'_, '_> {
    fn offset(&mut self, byte: usize) -> usize {
        let (b0, c0) = if byte >= self.last.0 {
            self.last
        } else {
            (0, 0)
        };
        let n = c0 + self.text[b0..byte].chars().count();
        self.last = (byte, n);
        n
    }

    fn warn(&mut self, start: usize, end: usize, why: &str) {
        self.warnings += 1;
        if self.warnings > MAX_WARNINGS {
            return;
        }
        let src: String = self.text[start..end].chars().take(40).collect();
        let n = self.offset(start);
        self.summary.warn(
            self.field.at,
            format!("macro `{src}` at offset {n}: {why}; kept as written"),
        );
    }

    fn note(&mut self, start: usize, what: &str) {
        self.notes += 1;
        if self.notes > MAX_WARNINGS {
            return;
        }
        let n = self.offset(start);
        self.summary
            .converted(self.field.at, format!("macro at offset {n}: {what}"));
    }

    /// Converts a sequence of nodes at the top level (or in a branch).
    fn seq(&mut self, nodes: &[CNode], depth: usize) -> Vec<Piece> {
        let blocks = blocks(nodes);
        let mut out = Vec::new();
        let mut k = 0;
        while k < nodes.len() {
            match &nodes[k] {
                CNode::Text(t) => out.push(Piece::Lit(t.clone())),
                CNode::Tag(name) => out.push(Piece::Tr(format!("{{{{{name}}}}}"))),
                CNode::Mac { start, end, body } => match head(body) {
                    Head::If(cond) => {
                        k = self.if_block(nodes, &blocks, k, &cond, depth, &mut out);
                        continue;
                    }
                    Head::Else | Head::EndIf => {
                        self.warn(*start, *end, "no `{{if}}` opens it");
                        out.push(Piece::Lit(self.text[*start..*end].to_string()));
                    }
                    Head::Other => match self.mac(*start, *end, body) {
                        Ok(v) => out.extend(self.emit(v, *start, *end)),
                        Err(why) => {
                            self.warn(*start, *end, &why);
                            out.push(Piece::Lit(self.text[*start..*end].to_string()));
                        }
                    },
                },
            }
            k += 1;
        }
        out
    }

    /// The output of a value at the top level.
    fn emit(&mut self, v: Val, start: usize, end: usize) -> Vec<Piece> {
        match v {
            Val::Fixed { out, .. } => out,
            Val::Choice { src: Some(s), .. } => vec![Piece::Tr(s)],
            Val::Choice { kind, opts, .. } => match choice_source(kind, &opts) {
                Some(s) => vec![Piece::Tr(s)],
                None => {
                    self.warn(
                        start,
                        end,
                        "an option cannot be written as a Troupe argument (it holds `}}` or ends with `}`)",
                    );
                    vec![Piece::Lit(self.text[start..end].to_string())]
                }
            },
        }
    }

    /// An `{{if}}` block starting at `nodes[k]`: returns the index after it.
    #[allow(clippy::too_many_arguments)]
    fn if_block(
        &mut self,
        nodes: &[CNode],
        blocks: &[Option<(Option<usize>, usize)>],
        k: usize,
        cond: &[CNode],
        depth: usize,
        out: &mut Vec<Piece>,
    ) -> usize {
        let CNode::Mac { start, end, .. } = &nodes[k] else {
            return k + 1;
        };
        let (start, end) = (*start, *end);
        let (else_at, end_at) = match blocks[k] {
            Some((x, e)) => (x, Some(e)),
            None => (None, None),
        };
        let Some(e) = end_at else {
            self.warn(start, end, "no `{{/if}}` closes it");
            out.push(Piece::Lit(self.text[start..end].to_string()));
            return k + 1;
        };
        let block_end = match &nodes[e] {
            CNode::Mac { end, .. } => *end,
            _ => end,
        };
        let (then_nodes, else_nodes) = match else_at {
            Some(x) => (&nodes[k + 1..x], &nodes[x + 1..e]),
            None => (&nodes[k + 1..e], &nodes[e..e]),
        };
        match self.condition(cond) {
            Ok(truth) if depth < MAX_NESTING => {
                self.note(
                    start,
                    &format!(
                        "`{{{{if}}}}` whose condition is known at import ({truth}): only its {} branch is kept",
                        if truth { "first" } else { "`{{else}}`" }
                    ),
                );
                out.extend(self.seq(if truth { then_nodes } else { else_nodes }, depth + 1));
            }
            Ok(_) => {
                self.warn(start, block_end, "nested too deep");
                out.push(Piece::Lit(self.text[start..block_end].to_string()));
            }
            Err(why) => {
                // Neither branch may reach the prompt: the block is left
                // out, loudly (`docs/import.md` §5).
                self.warnings += 1;
                if self.warnings <= MAX_WARNINGS {
                    let src: String = self.text[start..end].chars().take(40).collect();
                    let n = self.offset(start);
                    let len = self.text[start..block_end].chars().count();
                    self.summary.warn(
                        self.field.at,
                        format!(
                            "`{src}` block at offset {n} ({len} characters): Troupe templates have no conditionals and {why}, so the whole block is left out and neither branch reaches the prompt; the card's text stays in the record for export, and a lore entry with a `when` condition (Format 5.3) can bring each branch back"
                        ),
                    );
                }
                // A comment marks the place (it renders nothing) and keeps
                // a text that was only the block from becoming empty.
                out.push(Piece::Tr(IF_LEFT_OUT.to_string()));
            }
        }
        e + 1
    }

    /// The truth of an `{{if}}` condition when it is known at import.
    fn condition(&mut self, cond: &[CNode]) -> Result<bool, String> {
        let mut nodes = cond.to_vec();
        let mut negate = false;
        if let Some(CNode::Text(t)) = nodes.first_mut() {
            let s = t.trim_start().to_string();
            if let Some(r) = s.strip_prefix('!') {
                negate = true;
                *t = r.to_string();
            } else {
                *t = s;
            }
        }
        let plain: Option<String> = match nodes.as_slice() {
            [CNode::Text(t)] => Some(t.trim().to_string()),
            _ => None,
        };
        let value = match plain.as_deref() {
            // `.x ?? d` (Macros 2.0): the variable, or `d` while it has none.
            Some(p) if p.starts_with('.') => match p[1..].split_once("??") {
                Some((name, d)) if !d.starts_with('=') => {
                    let got = self.getvar(name.trim())?;
                    if got.is_empty() {
                        d.trim().to_string()
                    } else {
                        got
                    }
                }
                _ => self.getvar(&p[1..])?,
            },
            Some(p) if p.eq_ignore_ascii_case("char") => self
                .field
                .char_name
                .map(str::to_string)
                .ok_or("the character's name is not known here")?,
            Some(p) => {
                return Err(format!(
                    "the condition `{p}` is not a variable (`.name`), `char` or a macro Troupe can evaluate at import"
                ))
            }
            None => match self.arg(&nodes)? {
                Val::Fixed { text: Some(t), .. } => t,
                Val::Fixed { .. } => {
                    return Err("its condition is only known in a chat".into());
                }
                Val::Choice { .. } => return Err("its condition is random".into()),
            },
        };
        let v = value.trim().to_ascii_lowercase();
        let truth = !(v.is_empty() || v == "false" || v == "0");
        Ok(truth != negate)
    }

    /// The value of an argument (a node sequence inside a macro).
    fn arg(&mut self, nodes: &[CNode]) -> Result<Val, String> {
        let mut vals = Vec::new();
        for n in nodes {
            vals.push(match n {
                CNode::Text(t) => Val::lit(t.clone()),
                CNode::Tag(name) => self.name(name),
                CNode::Mac { start, end, body } => {
                    if !matches!(head(body), Head::Other) {
                        return Err("`{{if}}` blocks cannot be inside a macro".into());
                    }
                    self.mac(*start, *end, body)?
                }
            });
        }
        concat(vals)
    }

    fn name(&self, name: &str) -> Val {
        let text = if name == "char" {
            self.field.char_name.map(str::to_string)
        } else {
            None
        };
        Val::Fixed {
            out: vec![Piece::Tr(format!("{{{{{name}}}}}"))],
            text,
        }
    }

    fn getvar(&mut self, name: &str) -> Result<String, String> {
        let id = self.var(name)?;
        if !self.field.greeting {
            return Err(
                "outside a greeting a variable's value is only known in a chat".to_string(),
            );
        }
        Ok(self
            .sets
            .iter()
            .find(|(k, _)| *k == id)
            .map(|(_, v)| v.clone())
            .unwrap_or_default())
    }

    fn var(&mut self, name: &str) -> Result<String, String> {
        if name.trim().is_empty() {
            return Err("a variable needs a name".into());
        }
        let id = var_id(name);
        self.variables.insert(id.clone());
        Ok(id)
    }

    fn set(&mut self, id: String, value: String) {
        match self.sets.iter_mut().find(|(k, _)| *k == id) {
            Some(slot) => slot.1 = value,
            None => self.sets.push((id, value)),
        }
    }

    /// Converts one macro `text[start..end]` with body `body`.
    fn mac(&mut self, start: usize, end: usize, body: &[CNode]) -> Result<Val, String> {
        let src = &self.text[start..end];
        if matches!(body, [CNode::Tag("too-deep")]) {
            return Err(format!("nested more than {MAX_NESTING} deep"));
        }
        let nested = body.iter().any(|n| !matches!(n, CNode::Text(_)));
        let first = match body.first() {
            Some(CNode::Text(t)) => t.as_str(),
            _ => "",
        };
        let trimmed = first.trim_start();
        if trimmed.starts_with("//") {
            return Ok(if !nested && parses_as_macro(src) {
                Val::Fixed {
                    out: vec![Piece::Tr(src.to_string())],
                    text: Some(String::new()),
                }
            } else {
                Val::empty()
            });
        }
        // `name::a::b`: split at the top level only.
        if let Some(p) = first.find("::") {
            let name = first[..p].trim().to_ascii_lowercase();
            let mut args: Vec<Vec<CNode>> = vec![Vec::new()];
            let mut rest = vec![CNode::Text(first[p + 2..].to_string())];
            rest.extend(body[1..].iter().cloned());
            for n in rest {
                match n {
                    CNode::Text(t) => {
                        let mut parts = t.split("::");
                        if let Some(h) = parts.next() {
                            push_arg_text(args.last_mut(), h);
                        }
                        for part in parts {
                            args.push(Vec::new());
                            push_arg_text(args.last_mut(), part);
                        }
                    }
                    other => args
                        .last_mut()
                        .into_iter()
                        .for_each(|a| a.push(other.clone())),
                }
            }
            return self.call(&name, &args, start, src);
        }
        if !nested {
            let t = first.trim();
            if let Some(v) = t.strip_prefix('.') {
                return self.shorthand(v, start);
            }
            if t.starts_with('$') {
                return Err(
                    "SillyTavern's global variables live outside the chat; Troupe has no place for them"
                        .into(),
                );
            }
            match t.to_ascii_lowercase().as_str() {
                "newline" => return Ok(Val::lit("\n")),
                "noop" => return Ok(Val::empty()),
                _ => {}
            }
        }
        // `name arg` (one argument after a space).
        let ident_len = trimmed
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(trimmed.len());
        let (name, after) = trimmed.split_at(ident_len);
        let lname = name.to_ascii_lowercase();
        let one_arg = ["getvar", "incvar", "decvar", "roll", "reverse"];
        if one_arg.contains(&lname.as_str()) && after.starts_with(char::is_whitespace) {
            let mut arg = vec![CNode::Text(after.to_string())];
            arg.extend(body[1..].iter().cloned());
            return self.call(&lname, &[arg], start, src);
        }
        if !nested {
            let source = format!("{{{{{first}}}}}");
            return Ok(match template::parse(&source) {
                Ok(t) => match t.nodes.as_slice() {
                    [Node::Macro(Macro::Char, _)] => Val::Fixed {
                        out: vec![Piece::Tr(source)],
                        text: self.field.char_name.map(str::to_string),
                    },
                    [Node::Macro(Macro::Call { name, args }, _)]
                        if name == "random" || name == "pick" =>
                    {
                        Val::Choice {
                            kind: if name == "random" { "random" } else { "pick" },
                            opts: args.clone(),
                            src: Some(source),
                        }
                    }
                    [Node::Macro(..)] => Val::Fixed {
                        out: vec![Piece::Tr(source)],
                        text: None,
                    },
                    _ => Val::lit(src),
                },
                Err(_) => Val::lit(src),
            });
        }
        if lname == "random" || lname == "pick" || after.trim_start().starts_with(':') {
            return Err(
                "a nested macro in a `name:` call; SillyTavern's form is `name::a::b`".into(),
            );
        }
        Err("a macro Troupe does not know holds a nested macro".into())
    }

    /// SillyTavern's variable shorthand `{{.name}}` with an optional
    /// Macros 2.0 operator (`v` is what follows the `.`): `{{.x}}` reads
    /// `x`; `{{.x ?? d}}` reads `x` with the default `d` (declared as the
    /// variable's default outside a greeting; in a greeting, `d` when
    /// nothing set `x` before). Any other operator changes or tests the
    /// variable each time the text is used: an error (kept as written).
    fn shorthand(&mut self, v: &str, start: usize) -> Result<Val, String> {
        let v = v.trim_start();
        let bytes = v.as_bytes();
        let mut end = 0;
        while end < bytes.len() {
            let c = bytes[end];
            let ok = c.is_ascii_alphanumeric()
                || c == b'_'
                || (c == b'-' && !matches!(bytes.get(end + 1), Some(b'-' | b'=')))
                || !c.is_ascii();
            if !ok {
                break;
            }
            end += 1;
        }
        while !v.is_char_boundary(end) {
            end -= 1;
        }
        let (name, rest) = v.split_at(end);
        let rest = rest.trim();
        if rest.is_empty() {
            return self.getvar_val(name);
        }
        if name.is_empty() {
            return Err("a variable needs a name".into());
        }
        let Some(default) = rest.strip_prefix("??").filter(|d| !d.starts_with('=')) else {
            let op: String = rest
                .chars()
                .take_while(|c| !c.is_alphanumeric() && !c.is_whitespace())
                .collect();
            return Err(format!(
                "SillyTavern's variable operator `{op}` (Macros 2.0) changes or tests `{name}` each time the text is used; Troupe templates only read variables"
            ));
        };
        let default = default.trim().to_string();
        let id = self.var(name)?;
        if self.field.greeting {
            let set = self
                .sets
                .iter()
                .find(|(k, _)| *k == id)
                .map(|(_, x)| x.clone());
            return Ok(Val::lit(set.unwrap_or(default)));
        }
        // Every distinct default is kept: the caller declares the first and
        // warns about the others.
        let pair = (id.clone(), default.clone());
        if !self.defaults.contains(&pair) {
            self.defaults.push(pair);
        }
        let n = self.offset(start);
        self.notes += 1;
        if self.notes <= MAX_WARNINGS {
            self.summary.converted(
                self.field.at,
                format!("macro at offset {n}: `{{{{.{name} ?? {default}}}}}` reads variable `{id}`, declared with default `{default}`"),
            );
        }
        Ok(Val::Fixed {
            out: vec![Piece::Tr(format!("{{{{{id}}}}}"))],
            text: None,
        })
    }

    fn getvar_val(&mut self, name: &str) -> Result<Val, String> {
        let id = self.var(name)?;
        if self.field.greeting {
            let v = self.getvar(name)?;
            return Ok(Val::lit(v));
        }
        self.plain_reads.insert(id.clone());
        Ok(Val::Fixed {
            out: vec![Piece::Tr(format!("{{{{{id}}}}}"))],
            text: None,
        })
    }

    /// A call `name::args` (args not yet evaluated).
    fn call(
        &mut self,
        name: &str,
        args: &[Vec<CNode>],
        start: usize,
        src: &str,
    ) -> Result<Val, String> {
        let mut vals = Vec::new();
        for a in args {
            vals.push(self.arg(a)?);
        }
        let known = |v: &Val| match v {
            Val::Fixed { text: Some(t), .. } => Ok(t.trim().to_string()),
            _ => Err(format!("`{name}` needs an argument known at import")),
        };
        match name {
            "random" | "pick" => {
                let kind = if name == "random" { "random" } else { "pick" };
                let lists: Vec<Vec<String>> =
                    vals.iter().map(Val::options).collect::<Result<_, _>>()?;
                let l = lists.iter().map(Vec::len).fold(1usize, lcm);
                if l.saturating_mul(lists.len()) > MAX_OPTIONS {
                    return Err(format!("more than {MAX_OPTIONS} options after flattening"));
                }
                let flattened = lists.iter().any(|x| x.len() > 1);
                let opts: Vec<String> = lists
                    .iter()
                    .flat_map(|x| {
                        let rep = l / x.len();
                        x.iter()
                            .flat_map(move |o| std::iter::repeat_n(o.clone(), rep))
                    })
                    .collect();
                if flattened {
                    self.note(
                        start,
                        &format!("nested choices flattened into one `{kind}` of {} options, each outer option keeping its share", opts.len()),
                    );
                }
                Ok(Val::Choice {
                    kind,
                    opts,
                    src: None,
                })
            }
            "roll" => {
                let [a] = vals.as_slice() else {
                    return Err("`roll` takes one argument".into());
                };
                let notation = known(a)?;
                let source = format!("{{{{roll: {notation}}}}}");
                if !parses_as_macro(&source) {
                    return Ok(Val::lit(src));
                }
                Ok(Val::Fixed {
                    out: vec![Piece::Tr(source)],
                    text: None,
                })
            }
            "reverse" => {
                let [a] = vals.as_slice() else {
                    return Err("`reverse` takes one argument".into());
                };
                match a {
                    Val::Choice { kind, opts, .. } => Ok(Val::Choice {
                        kind,
                        opts: opts.iter().map(|o| o.chars().rev().collect()).collect(),
                        src: None,
                    }),
                    _ => {
                        let t: String = known(a)?.chars().rev().collect();
                        if vals_nested(args) {
                            self.note(start, &format!("`reverse` computed at import: `{t}`"));
                        }
                        Ok(Val::lit(t))
                    }
                }
            }
            "getvar" => {
                let [a] = vals.as_slice() else {
                    return Err("`getvar` takes one argument".into());
                };
                let n = known(a)?;
                self.getvar_val(&n)
            }
            "setvar" | "addvar" => {
                let [a, b] = vals.as_slice() else {
                    return Err(format!("`{name}` takes two arguments"));
                };
                let n = known(a)?;
                let id = self.var(&n)?;
                if !self.field.greeting {
                    return Err("a variable change outside a greeting would run each time the text is used; Troupe's changes belong to messages and openings".into());
                }
                let value = match b {
                    Val::Fixed { text: Some(t), .. } => t.clone(),
                    _ => return Err("the value is not known at import".into()),
                };
                let value = if name == "addvar" {
                    add(&self.getvar(&n)?, &value)
                } else {
                    value
                };
                self.note(
                    start,
                    &format!("`{name}` became the opening's change of variable `{id}`"),
                );
                self.set(id, value);
                Ok(Val::empty())
            }
            "incvar" | "decvar" => {
                let [a] = vals.as_slice() else {
                    return Err(format!("`{name}` takes one argument"));
                };
                let n = known(a)?;
                let id = self.var(&n)?;
                if !self.field.greeting {
                    return Err("a variable change outside a greeting would run each time the text is used; Troupe's changes belong to messages and openings".into());
                }
                let value = add(&self.getvar(&n)?, if name == "incvar" { "1" } else { "-1" });
                self.note(
                    start,
                    &format!("`{name}` became the opening's change of variable `{id}`"),
                );
                self.set(id, value.clone());
                Ok(Val::lit(value))
            }
            "comment" | "//" => Ok(Val::empty()),
            "hidden_key" => {
                let t = vals
                    .iter()
                    .map(known)
                    .collect::<Result<Vec<_>, _>>()?
                    .join(", ");
                let source = format!("{{{{hidden_key: {}}}}}", t.replace('\\', "\\\\"));
                if parses_as_macro(&source) {
                    Ok(Val::Fixed {
                        out: vec![Piece::Tr(source)],
                        text: Some(String::new()),
                    })
                } else {
                    Ok(Val::empty())
                }
            }
            "char" | "user" | "narrator" => Err(format!("`{name}` takes no arguments")),
            _ => Ok(Val::lit(src)),
        }
    }
}

fn vals_nested(args: &[Vec<CNode>]) -> bool {
    args.iter().flatten().any(|n| !matches!(n, CNode::Text(_)))
}

fn push_arg_text(arg: Option<&mut Vec<CNode>>, t: &str) {
    if let Some(a) = arg {
        if !t.is_empty() {
            a.push(CNode::Text(t.to_string()));
        }
    }
}

/// Concatenates argument pieces: fixed when all are; a choice (the product
/// of the options) when some are choices and the rest known.
fn concat(vals: Vec<Val>) -> Result<Val, String> {
    if vals.len() == 1 {
        return Ok(vals.into_iter().next().unwrap_or_else(Val::empty));
    }
    if vals.iter().all(|v| matches!(v, Val::Fixed { .. })) {
        let mut out = Vec::new();
        let mut text = Some(String::new());
        for v in vals {
            if let Val::Fixed { out: o, text: t } = v {
                out.extend(o);
                text = match (text, t) {
                    (Some(a), Some(b)) => Some(a + &b),
                    _ => None,
                };
            }
        }
        return Ok(Val::Fixed { out, text });
    }
    let kind = vals
        .iter()
        .find_map(|v| match v {
            Val::Choice { kind, .. } => Some(*kind),
            _ => None,
        })
        .unwrap_or("random");
    let mut opts = vec![String::new()];
    for v in &vals {
        let o = v.options()?;
        if opts.len().saturating_mul(o.len()) > MAX_OPTIONS {
            return Err(format!("more than {MAX_OPTIONS} options after flattening"));
        }
        opts = opts
            .iter()
            .flat_map(|a| o.iter().map(move |b| format!("{a}{b}")))
            .collect();
    }
    Ok(Val::Choice {
        kind,
        opts,
        src: None,
    })
}

fn gcd(a: usize, b: usize) -> usize {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

fn lcm(a: usize, b: usize) -> usize {
    (a / gcd(a, b)).saturating_mul(b)
}

/// SillyTavern's `addvar`: a numeric sum when both values are numbers
/// (an unset variable, `""`, counts as 0), else the text appended.
fn add(old: &str, delta: &str) -> String {
    let o = if old.trim().is_empty() {
        "0"
    } else {
        old.trim()
    };
    if let (Ok(a), Ok(b)) = (o.parse::<i64>(), delta.trim().parse::<i64>()) {
        if let Some(s) = a.checked_add(b) {
            return s.to_string();
        }
    }
    match (o.parse::<f64>(), delta.trim().parse::<f64>()) {
        (Ok(a), Ok(b)) if (a + b).is_finite() => format!("{}", a + b),
        _ => format!("{old}{delta}"),
    }
}

/// `{{random: a, b}}` from options, or `None` when an option cannot be a
/// Troupe argument (Format 10.1: an argument holds no `}}`).
fn choice_source(kind: &str, opts: &[String]) -> Option<String> {
    let args: Vec<String> = opts
        .iter()
        .map(|a| a.trim().replace('\\', "\\\\").replace(',', "\\,"))
        .collect();
    let source = format!("{{{{{kind}: {}}}}}", args.join(", "));
    let t = template::parse(&source).ok()?;
    match t.nodes.as_slice() {
        [Node::Macro(Macro::Call { args: got, .. }, _)]
            if got.len() == opts.len() && got.iter().zip(opts).all(|(g, o)| g == o.trim()) =>
        {
            Some(source)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_tags() {
        assert_eq!(to_troupe("<USER> meets <bot>"), "{{user}} meets {{char}}");
        assert_eq!(to_troupe("{{Char}} and {{USER}}"), "{{Char}} and {{USER}}");
        assert_eq!(to_troupe("<Char>!"), "{{char}}!");
    }

    #[test]
    fn calls_pass_and_double_colon_forms_are_rewritten() {
        assert_eq!(to_troupe("{{random: a\\, b, c}}"), "{{random: a\\, b, c}}");
        assert_eq!(to_troupe("{{// note}}"), "{{// note}}");
        assert_eq!(to_troupe("{{roll:d6}}"), "{{roll:d6}}");
        assert_eq!(to_troupe("{{random::x, y::z}}"), "{{random: x\\, y, z}}");
    }

    #[test]
    fn what_troupe_cannot_parse_is_escaped() {
        assert_eq!(to_troupe("a {{ b"), "a \\{{ b");
        assert_eq!(to_troupe("{{what is this}}"), "\\{{what is this}}");
        assert_eq!(to_troupe("x\\\\y"), "x\\\\\\y");
        let t = to_troupe("a \\{{user}} {{ b");
        assert!(template::parse(&t).is_ok());
    }

    #[test]
    fn from_troupe_undoes_escapes() {
        for s in ["a {{ b", "{{what is this}}", "x\\\\y", "plain \\n text"] {
            assert_eq!(from_troupe(&to_troupe(s)), s, "{s}");
            assert_eq!(from_troupe(&literal(s)), s, "{s}");
        }
        assert_eq!(from_troupe(&to_troupe("\\{{")), "\\{{");
        // `\{\{` is SillyTavern's escape: the way back is the record's
        // `was` (docs/import.md §6), not `from_troupe`.
        assert_eq!(from_troupe(&to_troupe("\\{\\{")), "{{");
    }

    #[test]
    fn literal_renders_as_written() {
        let t = template::parse(&literal("{{user}} \\ {{")).unwrap();
        assert_eq!(t.nodes, vec![Node::Text("{{user}} \\ {{".into())]);
    }

    #[test]
    fn names_fill_in_any_case() {
        assert_eq!(
            fill_names("Hi {{User}}, I am <BOT>.", "Sera", "Ann"),
            "Hi Ann, I am Sera."
        );
    }

    fn conv(text: &str, greeting: bool) -> (Converted, Summary) {
        let mut s = Summary::default();
        let f = Field {
            at: "/data/first_mes",
            char_name: Some("Seraphina"),
            greeting,
        };
        (convert(text, f, &mut s), s)
    }

    #[test]
    fn setvar_in_a_greeting_is_an_opening_change() {
        let (c, s) = conv(
            "{{setvar::mood::happy}}Hi {{user}}, I am {{getvar::mood}}.",
            true,
        );
        assert_eq!(c.text, "Hi {{user}}, I am happy.");
        assert_eq!(c.sets, vec![("mood".to_string(), "happy".to_string())]);
        assert!(c.variables.contains("mood"));
        assert!(s.warnings.is_empty());
        // addvar adds numbers; an unset variable is 0; incvar renders.
        let (c, _) = conv(
            "{{addvar::n::2}}{{addvar::n::3}}{{incvar::n}} {{getvar::Other Var}}!",
            true,
        );
        assert_eq!(c.text, "6 !");
        assert_eq!(c.sets, vec![("n".to_string(), "6".to_string())]);
        assert!(c.variables.contains("other-var"));
    }

    #[test]
    fn variables_outside_greetings() {
        let (c, s) = conv("She is {{getvar::mood}} and {{.mood}}.", false);
        assert_eq!(c.text, "She is {{mood}} and {{mood}}.");
        assert!(s.warnings.is_empty());
        let (c, s) = conv("x{{setvar::mood::sad}}", false);
        assert_eq!(c.text, "x\\{{setvar::mood::sad}}");
        assert_eq!(s.warnings.len(), 1);
        assert!(
            s.warnings[0].message.contains("offset 1"),
            "{:?}",
            s.warnings
        );
    }

    #[test]
    fn nested_choices_flatten_with_weights() {
        let (c, s) = conv("{{random::a::{{random::b::c}}}}", false);
        assert_eq!(c.text, "{{random: a, a, b, c}}");
        assert!(s.warnings.is_empty());
        // `::` splits at the top level only; text around a choice is
        // distributed over its options.
        let (c, _) = conv("{{pick::{{random::a::b}}::c}}", false);
        assert_eq!(c.text, "{{pick: a, b, c, c}}");
        let (c, _) = conv("{{random::x{{random::1::2}}::y}}", false);
        assert_eq!(c.text, "{{random: x1, x2, y, y}}");
        let (c, _) = conv("{{random\n::a\n::b\n}}", false);
        assert_eq!(c.text, "{{random: a, b}}");
        let (c, _) = conv("{{random::{{char}}::b, c}}", false);
        assert_eq!(c.text, "{{random: Seraphina, b\\, c}}");
    }

    #[test]
    fn reverse_of_a_known_value() {
        let (c, _) = conv("{{reverse::{{char}}}}", false);
        assert_eq!(c.text, "anihpareS");
        let (c, _) = conv("{{reverse abc}}", false);
        assert_eq!(c.text, "cba");
        let (c, s) = conv("{{reverse::{{user}}}}", false);
        assert_eq!(c.text, "\\{{reverse::\\{{user}}}}");
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn unknown_at_import_is_kept_with_a_positioned_warning() {
        let (c, s) = conv("ab {{random::{{user}}::b}}", false);
        assert_eq!(c.text, "ab \\{{random::\\{{user}}::b}}");
        assert!(s.warnings[0].message.contains("offset 3"));
        let (c, s) = conv("{{time}} {{foo::bar}}", false);
        assert_eq!(c.text, "{{time}} \\{{foo::bar}}");
        assert!(s.warnings.is_empty());
    }

    #[test]
    fn brace_escapes_and_tags() {
        let (c, _) = conv("\\{\\{user\\}\\} and {{user}}", false);
        assert_eq!(c.text, "\\{{user}} and {{user}}");
        // A lone `\{` is text (LaTeX stays as written); `\{{` keeps its
        // backslash before the macro.
        let (c, _) = conv("\\{x\\} \\{{user}}", false);
        assert_eq!(c.text, "\\{x\\} \\\\{{user}}");
        // A backslash before a macro stays a backslash.
        let (c, _) = conv("a\\<USER>", false);
        assert_eq!(c.text, "a\\\\{{user}}");
        let t = template::parse(&c.text).unwrap();
        assert_eq!(t.nodes[0], Node::Text("a\\".into()));
    }

    #[test]
    fn conditionals_choose_a_branch_or_warn() {
        let (c, s) = conv("{{setvar::m::1}}{{if .m}}yes{{else}}no{{/if}}!", true);
        assert_eq!(c.text, "yes!");
        assert!(s.warnings.is_empty());
        let (c, _) = conv("{{if .m}}yes{{else}}no{{/if}}", true);
        assert_eq!(c.text, "no");
        let (c, _) = conv("{{#if char}}A{{/if}}{{if !char}}B{{/if}}", false);
        assert_eq!(c.text, "A");
        // On chat-time state neither branch reaches the prompt, loudly.
        let (c, s) = conv("a {{if .m}}yes{{else}}no{{/if}} b", false);
        assert_eq!(c.text, format!("a {IF_LEFT_OUT} b"));
        assert_eq!(s.warnings.len(), 1);
        assert!(
            s.warnings[0]
                .message
                .contains("neither branch reaches the prompt"),
            "{:?}",
            s.warnings[0]
        );
        let (c, s) = conv("a{{else}}b", false);
        assert_eq!(c.text, "a\\{{else}}b");
        assert_eq!(s.warnings.len(), 1);
    }

    #[test]
    fn macros_2_defaults_read_the_variable() {
        let (c, s) = conv("Rage: {{.gokuRage ?? 0}} / {{ .gokuRage??5 }}", false);
        assert_eq!(c.text, "Rage: {{gokurage}} / {{gokurage}}");
        // Both defaults are reported; the card declares the first and warns.
        let pair = |d: &str| ("gokurage".to_string(), d.to_string());
        assert_eq!(c.defaults, vec![pair("0"), pair("5")]);
        assert!(c.variables.contains("gokurage"));
        assert!(c.plain_reads.is_empty());
        assert!(s.warnings.is_empty());
        assert!(
            s.converted[0].what.contains("default `0`"),
            "{:?}",
            s.converted
        );
        // In a greeting the default is the value when nothing set it.
        let (c, _) = conv("{{.n ?? 3}}{{setvar::n::7}}{{.n ?? 3}}", true);
        assert_eq!(c.text, "37");
        // In a greeting's condition too.
        let (c, _) = conv("{{if .n ?? 1}}yes{{else}}no{{/if}}", true);
        assert_eq!(c.text, "yes");
        let (c, _) = conv("{{setvar::n::0}}{{if .n ?? 1}}yes{{else}}no{{/if}}", true);
        assert_eq!(c.text, "no");
        // Other operators change the variable each use: kept, with a warning.
        let (c, s) = conv("{{.n += 1}}", false);
        assert_eq!(c.text, "\\{{.n += 1}}");
        assert!(s.warnings[0].message.contains("`+=`"), "{:?}", s.warnings);
    }

    #[test]
    fn deep_nesting_is_bounded() {
        let t = format!("{}x{}", "{{reverse::".repeat(40), "}}".repeat(40));
        let (c, s) = conv(&t, false);
        assert!(template::parse(&c.text).is_ok());
        assert!(!s.warnings.is_empty());
        // Unclosed `{{if}}`s are matched in one pass (no rescan per `if`);
        // the warnings stop at 20 and one more counts the rest.
        let t = "{{if .x}}".repeat(100_000);
        // (unclosed: kept as written, each with a warning)
        let (c, s) = conv(&t, true);
        assert_eq!(c.text, "\\{{if .x}}".repeat(100_000));
        assert_eq!(s.warnings.len(), MAX_WARNINGS + 1);
    }
}
