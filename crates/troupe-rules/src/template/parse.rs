//! Parsing templates with the pest grammar `grammar/template.pest` (Format 10).

use std::ops::Range;

use pest::Parser;
use pest_derive::Parser;

#[derive(Parser)]
#[grammar = "../../../grammar/template.pest"]
struct TemplateParser;

/// One macro, classified (Format 10).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Macro {
    /// `{{user}}`: the user's display name.
    User,
    /// `{{char}}`: the current character's display name.
    Char,
    /// `{{narrator}}`: the narrator's name.
    Narrator,
    /// A state path such as `trust.char` or `own.mood`, split at dots.
    Path(Vec<String>),
    /// A call `name: arg, arg` (`random`, `pick`, `roll`, `reverse`,
    /// `comment`, `hidden_key`); `name` is lower-cased, `\,` unescaped.
    Call {
        /// The lower-cased function name.
        name: String,
        /// The arguments, trimmed, with `\,` and `\\` unescaped.
        args: Vec<String>,
    },
    /// `{{// ...}}`: renders as nothing.
    Comment,
}

/// A piece of a parsed template.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Node {
    /// Literal text (escapes already resolved).
    Text(String),
    /// A macro and the byte range of its source `{{...}}`, kept so that a
    /// macro that cannot render is left exactly as written.
    Macro(Macro, Range<usize>),
}

/// A parsed template: a sequence of nodes.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct Template {
    /// The nodes in order.
    pub nodes: Vec<Node>,
}

impl Template {
    /// True when the template is plain text (no macro at all).
    #[cfg(any(test, feature = "internals"))]
    pub fn is_plain(&self) -> bool {
        self.nodes.iter().all(|n| matches!(n, Node::Text(_)))
    }
}

/// A template syntax error (TEMPLATE_SYNTAX): a message and the 1-based line
/// and column inside the template text, plus the byte offset.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message} at {line}:{column}")]
pub struct TemplateError {
    /// Plain message, such as "unterminated macro: expected `}}`".
    pub message: String,
    /// Byte offset in the template.
    pub offset: usize,
    /// 1-based line within the template.
    pub line: u32,
    /// 1-based column (in characters) within the template.
    pub column: u32,
}

thread_local! {
    static PARSE_COUNT: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// How many templates holding a macro or an escape [`parse`] has parsed on
/// each thread, in debug builds (plain text is one text node, not
/// counted): the tests that check, compile and play a pack parse each
/// template once (issue 41 item 2).
pub(crate) static PARSES: crate::par::Counter = crate::par::Counter(&PARSE_COUNT);

/// Parses author text into a `Template` (Format 10).
///
/// Errors: an unterminated `{{` is a `TemplateError` pointing at the `{{`.
pub fn parse(source: &str) -> Result<Template, TemplateError> {
    // Most author text has no macro and no escape: it is one text node.
    if !source.contains("{{") && !source.contains('\\') {
        let nodes = if source.is_empty() {
            Vec::new()
        } else {
            vec![Node::Text(source.to_string())]
        };
        return Ok(Template { nodes });
    }
    PARSES.bump();
    let pairs = TemplateParser::parse(Rule::template, source).map_err(|_| {
        // Point at the `{{` that opened the bad macro, which is what the
        // author must fix (Format 10.1).
        let open = first_bad_macro(source);
        // A macro inside a call's argument: point at the inner `{{`.
        if let Some(inner) = nested_open(&source[open..]).map(|n| open + n) {
            let chars = source[..inner].chars().count();
            let message = format!(
                "nested macro at offset {chars}: macros do not nest, so a call's argument cannot hold `{{{{`; choose among plain arguments, or write `\\{{{{` for two literal braces"
            );
            return error_at(source, inner, &message);
        }
        let chars = source[..open].chars().count();
        let message = if source[open..].contains("}}") {
            format!(
                "malformed macro at offset {chars}: between `{{{{` and `}}}}` write a name such as `user`, a state path such as `trust.char`, a call `name: args` or a comment `// ...`"
            )
        } else {
            format!("unterminated macro at offset {chars}: expected `}}}}`")
        };
        error_at(source, open, &message)
    })?;
    let mut nodes = Vec::new();
    for pair in pairs.flatten() {
        match pair.as_rule() {
            Rule::text => push_text(&mut nodes, pair.as_str()),
            Rule::escape => push_text(&mut nodes, &pair.as_str()[1..]),
            Rule::macro_ => {
                let span = pair.as_span();
                let body = pair
                    .into_inner()
                    .find(|p| p.as_rule() == Rule::body)
                    .and_then(|b| b.into_inner().next());
                nodes.push(Node::Macro(classify(body), span.start()..span.end()));
            }
            _ => {}
        }
    }
    Ok(Template { nodes })
}

/// The byte offset of the first `{{` that does not start a well-formed
/// macro: the template is read as the grammar reads it (escapes, macros,
/// text), so a `{{` inside a comment or after `\` is never blamed.
fn first_bad_macro(source: &str) -> usize {
    let mut pos = 0;
    while pos < source.len() {
        let rest = &source[pos..];
        if rest.starts_with("\\{{") {
            pos += 3;
            continue;
        }
        if rest.starts_with("\\\\") {
            pos += 2;
            continue;
        }
        if rest.starts_with("{{") {
            match TemplateParser::parse(Rule::macro_, rest) {
                Ok(mut pairs) => {
                    pos += pairs.next().map_or(2, |p| p.as_str().len());
                    continue;
                }
                Err(_) => return pos,
            }
        }
        pos += rest.chars().next().map_or(1, char::len_utf8);
    }
    source.len()
}

/// When `rest` (starting at a `{{` that opens no well-formed macro) is a
/// call whose arguments run into a `{{`, the byte offset of that inner
/// `{{` in `rest` (Format 10.1: macros do not nest).
fn nested_open(rest: &str) -> Option<usize> {
    let mut pairs = TemplateParser::parse(Rule::nested_probe, rest).ok()?;
    Some(pairs.next()?.as_str().len())
}

fn push_text(nodes: &mut Vec<Node>, text: &str) {
    if let Some(Node::Text(prev)) = nodes.last_mut() {
        prev.push_str(text);
    } else {
        nodes.push(Node::Text(text.to_string()));
    }
}

fn classify(body: Option<pest::iterators::Pair<'_, Rule>>) -> Macro {
    // The grammar guarantees a body; an empty path is never produced.
    let Some(body) = body else {
        return Macro::Path(Vec::new());
    };
    match body.as_rule() {
        Rule::comment => Macro::Comment,
        Rule::call => {
            let mut inner = body.into_inner();
            let name = inner
                .next()
                .map(|p| p.as_str().to_ascii_lowercase())
                .unwrap_or_default();
            if name == "comment" {
                return Macro::Comment;
            }
            let args = inner
                .next()
                .map(|args| {
                    args.into_inner()
                        .map(|a| unescape_arg(a.as_str()))
                        .collect()
                })
                .unwrap_or_default();
            Macro::Call { name, args }
        }
        Rule::path => {
            let segs: Vec<String> = body.into_inner().map(|s| s.as_str().to_string()).collect();
            if segs.len() == 1 {
                match segs[0].to_ascii_lowercase().as_str() {
                    "user" => return Macro::User,
                    "char" => return Macro::Char,
                    "narrator" => return Macro::Narrator,
                    _ => {}
                }
            }
            Macro::Path(segs)
        }
        _ => Macro::Comment,
    }
}

fn unescape_arg(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.trim().chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
        {
            if n == ',' || n == '\\' {
                out.push(n);
                chars.next();
                continue;
            }
            // `\{{` is two literal braces (Format 10.1).
            if n == '{' && chars.clone().nth(1) == Some('{') {
                out.push_str("{{");
                chars.next();
                chars.next();
                continue;
            }
        }
        out.push(c);
    }
    out
}

fn error_at(source: &str, offset: usize, message: &str) -> TemplateError {
    let before = &source[..offset.min(source.len())];
    let line = before.matches('\n').count() as u32 + 1;
    let line_start = before.rfind('\n').map(|i| i + 1).unwrap_or(0);
    let column = before[line_start..].chars().count() as u32 + 1;
    TemplateError {
        message: message.to_string(),
        offset,
        line,
        column,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn macros(src: &str) -> Vec<Macro> {
        parse(src)
            .unwrap()
            .nodes
            .into_iter()
            .filter_map(|n| match n {
                Node::Macro(m, _) => Some(m),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn names_are_case_insensitive_and_paths_split() {
        assert_eq!(
            macros("Hi {{User}}, {{ char }} and {{trust.char}}"),
            vec![
                Macro::User,
                Macro::Char,
                Macro::Path(vec!["trust".into(), "char".into()])
            ]
        );
    }

    #[test]
    fn escapes_render_literally() {
        let t = parse(r"a \{{user}} b \\ c").unwrap();
        assert_eq!(t.nodes, vec![Node::Text(r"a {{user}} b \ c".into())]);
    }

    #[test]
    fn calls_unescape_commas() {
        assert_eq!(
            macros(r"{{random: a\, b, c}}"),
            vec![Macro::Call {
                name: "random".into(),
                args: vec!["a, b".into(), "c".into()]
            }]
        );
        assert_eq!(
            macros("{{// note}}{{comment: x}}"),
            vec![Macro::Comment, Macro::Comment]
        );
    }

    #[test]
    fn malformed_macros_are_errors_at_their_open() {
        for (src, offset) in [
            ("x {{ a b }} y", 2),
            ("{{}}", 0),
            ("ok {{user}} {{{user}}}", 12),
            ("{{user.}}", 0),
            ("a {{ }}", 2),
            (r"\{{ ok {{user}} {{ a b }}", 16),
        ] {
            let e = parse(src).unwrap_err();
            assert_eq!(e.offset, offset, "{src}: {e:?}");
            assert!(e.message.starts_with("malformed macro"), "{src}: {e:?}");
        }
    }

    #[test]
    fn nested_macros_are_errors_at_the_inner_open() {
        for (src, offset) in [
            ("{{random: red, {{random: green, blue}}, yellow}}", 15),
            ("ok {{pick:{{user}}}}", 10),
            ("é {{random: a, b}} {{roll: {{x}}", 27),
        ] {
            let e = parse(src).unwrap_err();
            let chars = src[..e.offset].chars().count();
            assert_eq!(chars, offset, "{src}: {e:?}");
            assert!(
                e.message
                    .starts_with(&format!("nested macro at offset {offset}:")),
                "{src}: {e:?}"
            );
        }
        // A comment may hold `{{`; an escaped `\{{` in an argument is two braces.
        assert!(parse("{{// a {{ b}}").is_ok());
        assert_eq!(
            macros(r"{{random: a\{{b, c}}"),
            vec![Macro::Call {
                name: "random".into(),
                args: vec!["a{{b".into(), "c".into()]
            }]
        );
    }

    #[test]
    fn an_unterminated_comment_is_blamed_at_its_own_open() {
        let e = parse("{{// a {{ b").unwrap_err();
        assert_eq!(e.offset, 0, "{e:?}");
        assert!(
            e.message.starts_with("unterminated macro at offset 0"),
            "{e:?}"
        );
    }

    #[test]
    fn unterminated_macro_points_at_its_open() {
        let e = parse("line one\nsay {{user hi").unwrap_err();
        assert_eq!((e.line, e.column, e.offset), (2, 5, 13));
    }
}
