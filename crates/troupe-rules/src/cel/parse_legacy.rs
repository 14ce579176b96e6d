//! The parser Troupe used before its own (`cel` crate's ANTLR parser, its
//! AST mapped to [`Expr`]), kept for the tests only: the equivalence test
//! (`parse::equivalence`) runs both on every expression it knows and asserts
//! identical trees and spans, and both rejecting the same inputs.

use std::ops::Range;
use std::sync::Arc;

use cel::common::ast::{
    operators, CallExpr, ComprehensionExpr, EntryExpr, Expr as CExpr, IdedExpr, LiteralValue,
    SourceInfo,
};
use cel::parser::Parser;

use super::error::{offset_of, CelError, CelErrorKind};
use super::parse::{Expr, ExprKind, MacroKind, MAX_DEPTH, MAX_SOURCE_LEN};

/// Parser recursion limit (nesting of parentheses, calls, lists, unary ops).
const PARSER_RECURSION: u16 = 96;

/// Parses `source` with the `cel` crate's parser.
pub fn parse(source: &str) -> Result<Expr, Vec<CelError>> {
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
    if let Some(rest) = msg.strip_prefix("missing ")
        && let (Some(want), Some(at)) = (quoted(rest), rest.split(" at ").nth(1).and_then(quoted))
    {
        return format!("missing `{want}` before {}", token(at));
    }
    if let Some(rest) = msg.strip_prefix("no viable alternative at input ")
        && let Some(t) = quoted(rest)
    {
        return format!("cannot read `{t}` here");
    }
    if let Some(rest) = msg.strip_prefix("token recognition error at: ")
        && let Some(t) = quoted(rest)
    {
        return format!("unrecognized text `{t}` (an unterminated string?)");
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

/// Both parsers agree: identical trees and spans for accepted input, and
/// both reject what one rejects (issue 41 item 2).
#[cfg(test)]
mod equivalence {
    use std::path::{Path, PathBuf};

    use super::super::parse::{parse as ours, MAX_SOURCE_LEN};
    use super::parse as theirs;

    /// Why the two parsers disagree on `src`, if they do.
    fn disagreement(src: &str) -> Option<String> {
        match (theirs(src), ours(src)) {
            (Ok(a), Ok(b)) if a == b => None,
            (Ok(a), Ok(b)) => Some(format!("trees differ\n  cel:  {a:?}\n  ours: {b:?}")),
            (Err(_), Err(_)) => None,
            (Ok(a), Err(e)) => Some(format!("only ours rejects: {e:?}\n  cel: {a:?}")),
            (Err(e), Ok(b)) => Some(format!("only cel rejects: {e:?}\n  ours: {b:?}")),
        }
    }

    /// Checks every source; returns how many there were and how many both
    /// accepted.
    fn check_all<'a>(what: &str, sources: impl IntoIterator<Item = &'a str>) -> (usize, usize) {
        let mut n = 0;
        let mut accepted = 0;
        let mut failures = Vec::new();
        for src in sources {
            n += 1;
            accepted += usize::from(ours(src).is_ok());
            if let Some(why) = disagreement(src) {
                failures.push(format!("{src:?}: {why}"));
            }
        }
        assert!(
            failures.is_empty(),
            "{what}: {} of {n} disagree:\n{}",
            failures.len(),
            failures
                .iter()
                .take(20)
                .cloned()
                .collect::<Vec<_>>()
                .join("\n")
        );
        (n, accepted)
    }

    const TRICKY: &[&str] = &[
        // Operators, precedence, associativity, spans.
        "a || b || c || d || e",
        "a && b && c",
        "a || b && c || d",
        "a ? b : c ? d : e",
        "a < b < c",
        "a == b != c",
        "1 + 2 * 3 - 4 / 5 % 6",
        "a in b",
        "a in b in c",
        "(a ? b : c) ? d : e",
        "a ? (b ? c : d) : e",
        "!a",
        "!!a",
        "!!!a",
        "-a",
        "--a",
        "---a",
        "-1",
        "--1",
        "---1",
        "- 1",
        "-(1)",
        "1 - -1",
        "1--1",
        "1---1",
        "!-1",
        "!-x",
        "-!x",
        "-1.5",
        "--1.5",
        "-1.size()",
        "--1.size()",
        "-x.y",
        "!x.y()",
        "-9223372036854775808",
        "9223372036854775807",
        "9223372036854775808",
        "--9223372036854775808",
        "-0x8000000000000000",
        "0x7fffffffffffffff",
        "0x8000000000000000",
        "0xFFu",
        "1u",
        "18446744073709551615u",
        "18446744073709551616u",
        "1U",
        "0x",
        "1.5",
        "1e3",
        "1E-3",
        "1e+3",
        ".5",
        ".5e1",
        "1.e3",
        "1e",
        "1e999",
        "-1e999",
        "1e-999",
        "1.5.size()",
        "1 .size()",
        "0.0",
        "-0.0",
        "00",
        "007",
        "1_000",
        // Members, calls, indexes.
        "a.b.c",
        "a.b()",
        "a.b(c, d)",
        "f()",
        "f(1, 2)",
        "f(1,)",
        "a[0]",
        "a[0][1].c",
        "a['k'].b",
        ".a",
        ".a.b",
        ".f(x)",
        "a.`b-c`",
        "a.`b.c d/e`",
        "a.``",
        "a.`b",
        "`a`",
        "a.`b`()",
        "a.if",
        "a.if()",
        "if",
        "if(x)",
        "x.in",
        "a.true",
        "a.?b",
        "a[?b]",
        "a.b.c.d.e.f()",
        "a.5",
        "a..b",
        "f(a)(b)",
        "a.b(c)(d)",
        "a[b](c)",
        // Literals: lists, maps, messages.
        "[]",
        "[1]",
        "[1,]",
        "[,]",
        "[1,,]",
        "[,1]",
        "[1 2]",
        "[?a]",
        "{}",
        "{,}",
        "{1: 2}",
        "{1: 2,}",
        "{'a': 1, 'b': [2]}",
        "{a: b}",
        "{?a: b}",
        "{1}",
        "{1:}",
        "A{}",
        "A{a: 1}",
        "A{a: 1,}",
        "a.B{c: 2}",
        ".a.B{}",
        "A{?a: 1}",
        "A{`a-b`: 1}",
        "A{,}",
        "if{}",
        "A{a: 1 + 'x'}",
        "A{a: has(x)}",
        "A{a: if}",
        "a.b{}",
        "A{a: [1,2,3][0]}",
        // Strings and bytes.
        "'a'",
        "\"a\"",
        "'''a'''",
        "\"\"\"a\nb\"\"\"",
        "'a\nb'",
        "r'\\n'",
        "R\"\\q\"",
        "r'''a\\'''",
        "'\\n\\t\\\\\\'\\\"\\?\\`\\a\\b\\f\\v\\r'",
        "'\\x41\\X42'",
        "'\\101'",
        "'\\400'",
        "'\\u00e9'",
        "'\\U0001F600'",
        "'\\ud800'",
        "'\\U00110000'",
        "'\\q'",
        "'\\x4'",
        "'é' + x",
        "'''a''' + '''b'''",
        "'''''' + ''",
        "\"\"\"\"\"\"",
        "\"\"\"\"",
        "'''a''''",
        "'abc",
        "'''abc",
        "b'x'",
        "B\"x\"",
        "b'\\xff'",
        "b'\\u0041'",
        "br'\\u0041'",
        "bR'x'",
        "rb'x'",
        "b'\\377'",
        "'a\\\nb'",
        "'a\rb'",
        "'''a\r\nb'''",
        "r'''a\rb'''",
        "'\\0'",
        "'\\000'",
        "'\\1234'",
        // Keywords and reserved words.
        "null",
        "true",
        "false",
        "true.x",
        "in",
        "x in",
        "var",
        "f.var",
        "namespace",
        ".if",
        ".if()",
        "as",
        "void(1)",
        // Macros.
        "has(a.b)",
        "has(a.b.c)",
        "has(a)",
        "has(a[0])",
        "has((a.b))",
        "has(has(a.b))",
        "has(a.b, c)",
        ".has(a.b)",
        "x.has(a.b)",
        "xs.all(x, x > 0)",
        "xs.exists(x, x)",
        "xs.exists_one(x, x)",
        "xs.existsOne(x, x)",
        "xs.map(x, x + 1)",
        "xs.map(x, x > 0, x + 1)",
        "xs.map(x, x)",
        "xs.map(x, x > 0, x)",
        "xs.map(x, p, y)",
        "xs.filter(x, x > 0)",
        "xs.all(1, x)",
        "xs.all(x)",
        "xs.all(x, y, z)",
        "all(x, y)",
        "xs.map(x.y, z)",
        "xs.all(.x, x)",
        "xs.map(.x, p, .x)",
        "[1,2].all(x, [3].exists(y, x < y))",
        "xs.all(x, has(x.y))",
        "has(xs.all(x, x).y)",
        "xs.filter(x, x).map(y, y * 2)",
        // Errors of all kinds.
        "",
        " ",
        "// c",
        "a // c\n+ b",
        "a /* b */",
        "a ||",
        "a +",
        "f(1,",
        "[",
        "{'a':",
        "(a",
        "a)",
        "a b",
        "1 2",
        "a = b",
        "a & b",
        "a | b",
        "a ! b",
        "@",
        "#",
        "$x",
        "a\u{0}",
        "é",
        "a.é",
        "a ? b",
        "a ? b :",
        "? a : b",
        ":",
        "a : b",
        "a,b",
        "()",
        "1 + ()",
        "a\u{0B}b",
        "a\u{0C}b",
        "a\r\nb",
        "\ta",
        "x(1,)",
        "\n",
        "!-\u{1}",
    ];

    #[test]
    fn hand_written_inputs() {
        let (n, accepted) = check_all("tricky", TRICKY.iter().copied());
        assert!(
            accepted > n / 3 && accepted < n * 3 / 4,
            "{accepted} of {n}"
        );
    }

    #[test]
    fn nesting_limits_agree() {
        let mut all = Vec::new();
        for n in [1, 50, 94, 95, 96, 97, 98, 99, 150] {
            all.push(format!("{}1{}", "(".repeat(n), ")".repeat(n)));
            all.push(format!("{}1{}", "[".repeat(n), "]".repeat(n)));
            all.push(format!("{}1{}", "f(".repeat(n), ")".repeat(n)));
            all.push(format!("{}1{}", "{1:".repeat(n), "}".repeat(n)));
            all.push(format!("{}0{}", "a[".repeat(n), "]".repeat(n)));
            all.push(format!("{}1", "a ? b : ".repeat(n)));
            all.push(format!("{}1", "!".repeat(n)));
            all.push(format!("{}1", "-".repeat(n)));
            all.push(format!("{}x", "-".repeat(n)));
            all.push(format!("{}1{}", "x.all(y, ".repeat(n), ")".repeat(n)));
            all.push(format!("{}1{}", "(-".repeat(n), ")".repeat(n)));
            all.push(format!("A{{a: {}1{}}}", "(".repeat(n), ")".repeat(n)));
        }
        for n in [100, 150, 198, 199, 200, 201, 202, 250, 1000] {
            all.push(vec!["1"; n].join(" + "));
            all.push(vec!["1"; n].join(" || "));
            all.push(vec!["a"; n].join("."));
            all.push(format!("x{}", "[0]".repeat(n)));
            all.push(format!("x{}", ".f()".repeat(n)));
            all.push(format!("A{{a: {}}}", vec!["1"; n].join(" + ")));
            all.push(format!("[{}]", vec!["1"; n].join(" + ")));
        }
        all.retain(|s| s.len() <= MAX_SOURCE_LEN);
        let (n, accepted) = check_all("nesting", all.iter().map(String::as_str));
        assert!(
            accepted > n / 3 && accepted < n * 3 / 4,
            "{accepted} of {n}"
        );
    }

    /// The repository's root.
    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
    }

    fn files(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                files(&p, out);
            } else {
                out.push(p);
            }
        }
    }

    fn strings_of_json(v: &serde_json::Value, out: &mut Vec<String>) {
        match v {
            serde_json::Value::String(s) => out.push(s.clone()),
            serde_json::Value::Array(a) => a.iter().for_each(|v| strings_of_json(v, out)),
            serde_json::Value::Object(o) => o.values().for_each(|v| strings_of_json(v, out)),
            _ => {}
        }
    }

    fn strings_of_yaml(text: &str, out: &mut Vec<String>) {
        let mut parser = saphyr_parser::Parser::new_from_str(text);
        while let Some(Ok((event, _))) = parser.next_event() {
            if let saphyr_parser::Event::Scalar(v, ..) = event {
                out.push(v.to_string());
            }
        }
    }

    /// Every string value of the conformance cases and the examples
    /// (conditions, derived values, scores, templates' `{{ }}` parts, and
    /// much text that is no CEL at all, which must be rejected alike).
    #[test]
    fn every_string_of_the_cases_and_examples() {
        let mut paths = Vec::new();
        for dir in ["conformance/cases", "examples", "docs"] {
            files(&repo().join(dir), &mut paths);
        }
        let mut strings = Vec::new();
        for p in &paths {
            let Ok(text) = std::fs::read_to_string(p) else {
                continue;
            };
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            match ext {
                "json" => {
                    if let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) {
                        strings_of_json(&v, &mut strings);
                    }
                }
                "jsonl" => {
                    for line in text.lines() {
                        if let Ok(v) = serde_json::from_str::<serde_json::Value>(line) {
                            strings_of_json(&v, &mut strings);
                        }
                    }
                }
                "yaml" | "yml" => strings_of_yaml(&text, &mut strings),
                // Inline code of the documentation: `…` spans.
                "md" => strings.extend(text.split('`').skip(1).step_by(2).map(str::to_string)),
                _ => {}
            }
        }
        let mut parts = Vec::new();
        for s in &strings {
            let mut rest = s.as_str();
            while let Some(i) = rest.find("{{") {
                rest = &rest[i + 2..];
                let Some(j) = rest.find("}}") else { break };
                parts.push(rest[..j].trim().to_string());
                rest = &rest[j + 2..];
            }
        }
        strings.extend(parts);
        strings.sort();
        strings.dedup();
        strings.retain(|s| s.len() <= MAX_SOURCE_LEN);
        let (n, accepted) = check_all("cases and examples", strings.iter().map(String::as_str));
        assert!(
            n > 2000 && accepted > 1000,
            "{accepted} of {n} strings parse"
        );
    }

    /// The shared CEL test data (`data/cel/*.jsonl`, STACK.md), when present.
    #[test]
    fn the_shared_cel_suite() {
        let dir = std::env::var("TROUPE_SHARED_DIR")
            .map(PathBuf::from)
            .unwrap_or_else(|_| repo().join("../shared"));
        let mut exprs = Vec::new();
        for name in ["cel-subset.jsonl", "cel-rejected.jsonl"] {
            let Ok(text) = std::fs::read_to_string(dir.join("data/cel").join(name)) else {
                continue;
            };
            for line in text.lines() {
                if let Ok(v) = serde_json::from_str::<serde_json::Value>(line)
                    && let Some(e) = v.get("expr").and_then(|e| e.as_str())
                {
                    exprs.push(e.to_string());
                }
            }
        }
        let (n, accepted) = check_all("shared suite", exprs.iter().map(String::as_str));
        assert!(accepted * 2 >= n, "{accepted} of {n}");
    }

    /// A small deterministic generator (xorshift).
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
        fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
            xs[self.below(xs.len())]
        }
    }

    const ATOMS: &[&str] = &[
        "a",
        "b",
        "xs",
        "state.gold",
        "1",
        "0",
        "2.5",
        "1e3",
        "'s'",
        "\"t\"",
        "true",
        "false",
        "null",
        "1u",
        "b'x'",
        "[]",
        "{}",
        "0x1F",
        "-1",
        "-2.5",
        "r'\\d'",
        "'\\u00e9'",
        ".a",
        "A{}",
        "if",
        "9223372036854775807",
    ];
    const BINARY: &[&str] = &[
        "+", "-", "*", "/", "%", "==", "!=", "<", "<=", ">", ">=", "in", "&&", "||",
    ];
    const MACROS: &[&str] = &["all", "exists", "exists_one", "existsOne", "map", "filter"];

    /// A random expression, mostly valid.
    fn random_expr(r: &mut Rng, depth: usize, out: &mut String) {
        if depth == 0 {
            out.push_str(r.pick(ATOMS));
            return;
        }
        match r.below(16) {
            0..=3 => {
                random_expr(r, depth - 1, out);
                out.push(' ');
                out.push_str(r.pick(BINARY));
                out.push(' ');
                random_expr(r, depth - 1, out);
            }
            4 => {
                out.push_str(r.pick(&["!", "-", "!!", "--", "- ", "!-", "---"]));
                random_expr(r, depth - 1, out);
            }
            5 => {
                out.push('(');
                random_expr(r, depth - 1, out);
                out.push(')');
            }
            6 => {
                random_expr(r, depth - 1, out);
                out.push_str(" ? ");
                random_expr(r, depth - 1, out);
                out.push_str(" : ");
                random_expr(r, depth - 1, out);
            }
            7 => {
                random_expr(r, depth - 1, out);
                out.push_str(r.pick(&[
                    ".f",
                    ".size()",
                    ".contains('a')",
                    "[0]",
                    "['k']",
                    ".`a-b`",
                ]));
            }
            8 => {
                out.push('[');
                for i in 0..r.below(3) {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    random_expr(r, depth - 1, out);
                }
                out.push_str(r.pick(&["]", ",]"]));
            }
            9 => {
                out.push('{');
                for i in 0..r.below(3) {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    random_expr(r, depth - 1, out);
                    out.push_str(": ");
                    random_expr(r, depth - 1, out);
                }
                out.push('}');
            }
            10 | 11 => {
                random_expr(r, depth - 1, out);
                out.push('.');
                let m = r.pick(MACROS);
                out.push_str(m);
                out.push_str(r.pick(&["(x, ", "(y, ", "(1, ", "("]));
                random_expr(r, depth - 1, out);
                if m == "map" && r.below(2) == 0 {
                    out.push_str(", ");
                    out.push_str(r.pick(&["x", "y", "x + 1"]));
                }
                out.push(')');
            }
            12 => {
                out.push_str("has(");
                random_expr(r, depth - 1, out);
                out.push_str(r.pick(&[".f)", ")"]));
            }
            13 => {
                out.push_str(r.pick(&["size(", "f(", ".g(", "int("]));
                random_expr(r, depth - 1, out);
                out.push(')');
            }
            _ => out.push_str(r.pick(ATOMS)),
        }
    }

    const SOUP: &[&str] = &[
        "a", "x", "1", "-", "!", "+", "*", "(", ")", "[", "]", "{", "}", ".", ",", ":", "?", "==",
        "<", "&&", "||", "in", "'s'", "has", "all", "map", "1.5", "1u", "null", " ", "`f`", "if",
        "'''", "\"", "\\", "0x", "e", "r'", "b'", "A{", "//", "\n", "é",
    ];

    /// Random expressions from a grammar (most of them valid), the same
    /// with one token dropped or repeated, and random token soup.
    #[test]
    fn random_expressions() {
        let n: usize = std::env::var("TROUPE_CEL_EQUIVALENCE_N")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(3000);
        let mut r = Rng(0x9E37_79B9_7F4A_7C15);
        let mut all = Vec::with_capacity(3 * n);
        for _ in 0..n {
            let mut s = String::new();
            let depth = 1 + r.below(4);
            random_expr(&mut r, depth, &mut s);
            // One mutation: a byte range dropped or doubled.
            let cut = r.below(s.len() + 1);
            let len = r.below(3);
            let end = (cut + len).min(s.len());
            if s.is_char_boundary(cut) && s.is_char_boundary(end) {
                let mutated = if r.below(2) == 0 {
                    format!("{}{}", &s[..cut], &s[end..])
                } else {
                    format!("{}{}", &s[..end], &s[cut..])
                };
                all.push(mutated);
            }
            all.push(s);
            let soup: String = (0..1 + r.below(8)).map(|_| r.pick(SOUP)).collect();
            all.push(soup);
        }
        all.retain(|s| s.len() <= MAX_SOURCE_LEN);
        let (n, accepted) = check_all("random", all.iter().map(String::as_str));
        assert!(accepted > n / 4, "{accepted} of {n}");
    }
}
