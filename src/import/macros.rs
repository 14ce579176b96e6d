//! Card macros to Troupe macros and back (`docs/import.md` §5, Format 10).
//!
//! Card text uses the V3 "curly braced syntax" (`{{char}}`, `{{user}}`,
//! `{{random:a,b}}`, `{{pick:..}}`, `{{roll:..}}`, `{{// ..}}`,
//! `{{hidden_key:..}}`, `{{comment:..}}`, `{{reverse:..}}`, names in any
//! case, `\,` inside arguments) and the legacy tags `<USER>`, `<BOT>` and
//! `<CHAR>`. Troupe's template language (Format 10) parses the same macros,
//! so most text passes unchanged. What changes:
//!
//! - `<USER>` → `{{user}}`; `<BOT>`, `<CHAR>` → `{{char}}` (any case);
//! - SillyTavern's `{{random::a::b}}` / `{{pick::a::b}}` → `{{random: a, b}}`
//!   (commas inside an argument escaped `\,`);
//! - a `{{` that does not open a macro Troupe can parse (unterminated, or a
//!   body that is no macro form) becomes the escape `\{{`, so it renders as
//!   written; a `\` before `\` or `{{` is doubled, so it stays a backslash.

use crate::template::{self, Node};

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

/// Card text → Troupe template text (see the module doc).
pub fn to_troupe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let rest = &text[i..];
        if let Some(after) = rest.strip_prefix("{{") {
            if let Some(end) = after.find("}}") {
                let body = &after[..end];
                if let Some(m) = macro_to_troupe(body) {
                    out.push_str(&m);
                    i += 2 + end + 2;
                    continue;
                }
            }
            out.push_str("\\{{");
            i += 2;
        } else if let Some(next) = rest.strip_prefix('\\') {
            push_backslash(next, &mut out);
            i += 1;
        } else if let Some((len, name)) = legacy_tag(rest) {
            out.push_str(name);
            i += len;
        } else {
            i += push_char(rest, &mut out);
        }
    }
    out
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

/// The Troupe form of one card macro body, or `None` when Troupe cannot
/// parse it as a macro (the caller escapes its `{{`).
fn macro_to_troupe(body: &str) -> Option<String> {
    let trimmed = body.trim_start();
    let lower = trimmed.to_ascii_lowercase();
    for name in ["random::", "pick::"] {
        if lower.starts_with(name) {
            let args: Vec<String> = trimmed[name.len()..]
                .split("::")
                .map(|a| a.replace('\\', "\\\\").replace(',', "\\,"))
                .collect();
            let call = format!("{{{{{}: {}}}}}", &name[..name.len() - 2], args.join(", "));
            return parses_as_macro(&call).then_some(call);
        }
    }
    let source = format!("{{{{{body}}}}}");
    parses_as_macro(&source).then_some(source)
}

/// True when `source` is exactly one Troupe macro of a known form.
fn parses_as_macro(source: &str) -> bool {
    match template::parse(source) {
        Ok(t) => matches!(t.nodes.as_slice(), [Node::Macro(..)]),
        Err(_) => false,
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
        for s in [
            "a {{ b",
            "{{what is this}}",
            "x\\\\y",
            "\\{{",
            "plain \\n text",
        ] {
            assert_eq!(from_troupe(&to_troupe(s)), s, "{s}");
            assert_eq!(from_troupe(&literal(s)), s, "{s}");
        }
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
}
