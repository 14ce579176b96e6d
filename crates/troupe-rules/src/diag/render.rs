//! Rendering diagnostics: for people (`file:line:col`, the code, the message
//! and a source snippet) and as the stable JSON report of `troupe check
//! --json` (`docs/validation.md`).
//!
//! Human output is safe for a terminal (Format 17.5): every control
//! character that came from an input (ESC, BEL, CR, …) is shown escaped
//! ([`escape_controls`]), and a snippet quotes at most
//! [`SNIPPET_WINDOW`] characters of its line around the column, so a
//! diagnostic on a 10 MB line prints one short line, not 10 MB.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

use super::{Diagnostic, Severity};

/// The most characters of a source line a snippet quotes (Format 17.5):
/// half before the column, half after; clipped ends show `…`.
pub const SNIPPET_WINDOW: usize = 80;

/// The source texts diagnostics may quote, by file name as it appears in
/// [`super::Location::file`].
#[derive(Debug, Default, Clone)]
pub struct Sources {
    files: IndexMap<String, Arc<str>>,
}

impl Sources {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) a file's text.
    pub fn add(&mut self, file: impl Into<String>, text: Arc<str>) {
        self.files.insert(file.into(), text);
    }

    /// True when the text of `file` is known.
    pub fn contains(&self, file: &str) -> bool {
        self.files.contains_key(file)
    }
}

/// `s` with every control character except line feed and tab shown
/// escaped (`\u{1b}` for ESC, `\r` for CR, …), and the Unicode
/// bidirectional overrides too, so text from an input cannot move the
/// cursor, clear the screen or ring the bell (Format 17.5).
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    let bad = |c: char| {
        (c.is_control() && c != '\n' && c != '\t')
            || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(bad) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\r' => out.push_str("\\r"),
            c if bad(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// [`escape_controls`] for text that is one line of a report (a
/// diagnostic's message, place and notes): line feed and tab are escaped
/// too (`\n`, `\t`), so an input value quoted in a message cannot start a
/// line of its own (Format 17.5).
pub fn escape_inline(s: &str) -> Cow<'_, str> {
    if !s.contains(['\n', '\t']) {
        return escape_controls(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    Cow::Owned(escape_controls(&out).into_owned())
}

/// Byte offsets of the line starts of one text, built once per file.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn new(text: &str) -> Self {
        let mut v = vec![0];
        v.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        LineStarts(v)
    }

    /// The text of 1-based line `line`, without its line ending.
    fn line<'t>(&self, text: &'t str, line: u32) -> Option<&'t str> {
        let i = usize::try_from(line).ok()?.checked_sub(1)?;
        let start = *self.0.get(i)?;
        let end = self.0.get(i + 1).map_or(text.len(), |e| e - 1);
        let l = text.get(start..end)?;
        Some(l.strip_suffix('\r').unwrap_or(l))
    }
}

/// Every [`CharMarks::STRIDE`]-th character's byte offset in one line, so
/// a column (in characters) is found without walking the line from its
/// start: built once per quoted long line, it keeps quoting many
/// diagnostics on one long line linear (issue 12).
struct CharMarks(Vec<usize>);

impl CharMarks {
    const STRIDE: usize = 256;
    /// Lines up to this many bytes are walked directly.
    const LONG: usize = 4 * Self::STRIDE;

    fn new(line: &str) -> Self {
        CharMarks(
            line.char_indices()
                .step_by(Self::STRIDE)
                .map(|(i, _)| i)
                .collect(),
        )
    }

    /// The byte offset of 0-based character `k` (the line's length past its end).
    fn byte_of(&self, line: &str, k: usize) -> usize {
        let Some(&start) = self.0.get(k / Self::STRIDE) else {
            return line.len();
        };
        let rest = line.get(start..).unwrap_or("");
        rest.char_indices()
            .nth(k % Self::STRIDE)
            .map_or(line.len(), |(i, _)| start + i)
    }
}

/// The quoted part of `line` around 1-based `column`: at most
/// [`SNIPPET_WINDOW`] characters (escaped, tabs as spaces, clipped ends
/// shown as `…`) and the caret's 0-based column in that text.
pub fn window(line: &str, column: u32) -> (String, usize) {
    let from = first_shown(column);
    let start = line.char_indices().nth(from).map_or(line.len(), |(i, _)| i);
    window_from(line, start, from, column)
}

/// The 0-based character the window around 1-based `column` starts at.
fn first_shown(column: u32) -> usize {
    (column.saturating_sub(1) as usize).saturating_sub(SNIPPET_WINDOW / 2)
}

/// [`window`] given the byte offset `start` of character `from`
/// ([`first_shown`]): walks only the quoted characters.
fn window_from(line: &str, start: usize, from: usize, column: u32) -> (String, usize) {
    let col = column.saturating_sub(1) as usize;
    let mut out = String::new();
    let mut caret = 0usize;
    if from > 0 {
        out.push('…');
        caret += 1;
    }
    for (k, c) in line.get(start..).unwrap_or("").chars().enumerate() {
        if k >= SNIPPET_WINDOW {
            out.push('…');
            break;
        }
        let shown: Cow<'_, str> = if c == '\t' {
            Cow::Borrowed(" ")
        } else {
            let mut b = [0u8; 4];
            Cow::Owned(escape_controls(c.encode_utf8(&mut b)).into_owned())
        };
        if from + k < col {
            caret += shown.chars().count();
        }
        out.push_str(&shown);
    }
    (out, caret)
}

/// Renders diagnostics for a terminal, without colour: each one as
/// `error[CODE]: message`, then `┌─ file:line:col`, the quoted part of the
/// source line with a caret when the text is known, the JSON Pointer and
/// the help. Text from inputs is escaped ([`escape_controls`]). Linear in
/// the number of diagnostics plus the size of the files quoted.
pub fn render_human(diagnostics: &[Diagnostic], sources: &Sources) -> String {
    let mut index: HashMap<&str, LineStarts> = HashMap::new();
    let mut marks: HashMap<(&str, u32), CharMarks> = HashMap::new();
    let mut out = String::new();
    for d in diagnostics {
        let sev = match d.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let file = d.location.file.as_deref().unwrap_or("<input>");
        let place = match (d.location.line, d.location.column) {
            (Some(l), Some(c)) => format!("{file}:{l}:{c}"),
            _ => file.to_string(),
        };
        let mut notes = Vec::new();
        if let Some(p) = d.location.pointer.as_deref().filter(|p| !p.is_empty()) {
            notes.push(format!("at {p}"));
        }
        if let Some(h) = &d.help {
            notes.push(format!("help: {h}"));
        }
        let snippet = match (
            sources.files.get_key_value(file),
            d.location.line,
            d.location.column,
        ) {
            (Some((name, text)), Some(line), Some(col)) => {
                let starts = index
                    .entry(name.as_str())
                    .or_insert_with(|| LineStarts::new(text));
                starts.line(text, line).map(|l| {
                    let from = first_shown(col);
                    let start = if l.len() > CharMarks::LONG {
                        marks
                            .entry((name.as_str(), line))
                            .or_insert_with(|| CharMarks::new(l))
                            .byte_of(l, from)
                    } else {
                        l.char_indices().nth(from).map_or(l.len(), |(i, _)| i)
                    };
                    (line, window_from(l, start, from, col))
                })
            }
            _ => None,
        };
        let mut one = format!("{sev}[{}]: {}\n", d.code, escape_inline(&d.message));
        match snippet {
            Some((line, (text, caret))) => {
                let num = line.to_string();
                let pad = " ".repeat(num.len());
                one.push_str(&format!("{pad} ┌─ {}\n", escape_inline(&place)));
                one.push_str(&format!("{pad} │\n"));
                one.push_str(&format!("{num} │ {text}\n"));
                one.push_str(&format!("{pad} │ {}^\n", " ".repeat(caret)));
                if !notes.is_empty() {
                    one.push_str(&format!("{pad} │\n"));
                }
                for n in notes {
                    one.push_str(&format!("{pad} = {}\n", escape_inline(&n)));
                }
                one.push('\n');
            }
            None => {
                one.push_str(&format!("  ┌─ {}\n", escape_inline(&place)));
                for n in notes {
                    one.push_str(&format!("  = {}\n", escape_inline(&n)));
                }
            }
        }
        out.push_str(&one);
        out.push('\n');
    }
    out
}

/// The stable JSON report of `troupe check --json` (`docs/validation.md`):
/// `{"valid": bool, "errors": n, "warnings": n, "diagnostics": [...]}` with
/// each diagnostic as `{code, severity, file, pointer, line, column, message,
/// help?}` (absent location parts are `null`).
#[derive(Debug, Serialize)]
pub struct Report<'a> {
    /// True when no diagnostic fails the run (`--strict` counts warnings).
    pub valid: bool,
    /// Number of errors.
    pub errors: usize,
    /// Number of warnings.
    pub warnings: usize,
    /// Every diagnostic, in report order.
    pub diagnostics: &'a [Diagnostic],
}

impl<'a> Report<'a> {
    /// Builds the report; with `strict`, warnings make it invalid.
    pub fn new(diagnostics: &'a [Diagnostic], strict: bool) -> Self {
        let errors = diagnostics.iter().filter(|d| d.is_error()).count();
        let warnings = diagnostics.len() - errors;
        Report {
            valid: errors == 0 && (!strict || warnings == 0),
            errors,
            warnings,
            diagnostics,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diag::Code;

    #[test]
    fn human_output_has_place_code_message_and_snippet() {
        let mut sources = Sources::new();
        sources.add("a.json", Arc::from("{\n  \"x\": 1\n}\n"));
        let d = Diagnostic::error(Code::UnknownField, "unknown property `x`")
            .in_file("a.json")
            .at("/x")
            .at_line_col(2, 3);
        let text = render_human(&[d], &sources);
        assert!(
            text.contains("error[UNKNOWN_FIELD]: unknown property `x`"),
            "{text}"
        );
        assert!(text.contains("a.json:2:3"), "{text}");
        assert!(text.contains("\"x\": 1"), "{text}");
        assert!(text.contains("at /x"), "{text}");
    }

    #[test]
    fn long_lines_are_quoted_through_char_marks_as_when_walked() {
        // Multi-byte characters, so byte and character offsets differ.
        let line: String = (0..3_000).map(|i| ['a', 'é', '漢', '🦀'][i % 4]).collect();
        let marks = CharMarks::new(&line);
        for column in [1u32, 2, 41, 42, 257, 600, 2_999, 3_000, 3_001, 9_000] {
            let from = first_shown(column);
            let start = marks.byte_of(&line, from);
            assert_eq!(
                window_from(&line, start, from, column),
                window(&line, column)
            );
        }
        let mut sources = Sources::new();
        sources.add("l.json", Arc::from(line.as_str()));
        let d = Diagnostic::error(Code::Parse, "p")
            .in_file("l.json")
            .at_line_col(1, 2_000);
        let (quoted, _) = window(&line, 2_000);
        assert!(render_human(&[d], &sources).contains(&quoted));
    }

    #[test]
    fn snippets_are_clipped_and_escaped() {
        let long = format!("{}\u{1b}[2J{}", "a".repeat(5_000), "b".repeat(5_000));
        let mut sources = Sources::new();
        sources.add("l.json", Arc::from(long.as_str()));
        let d = Diagnostic::error(Code::Parse, "bad \u{7} bell")
            .in_file("l.json")
            .at_line_col(1, 5_001);
        let text = render_human(&[d], &sources);
        assert!(text.len() < 600, "{}", text.len());
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text}"
        );
        assert!(
            text.contains("\\u{1b}[2J") && text.contains("bad \\u{7} bell"),
            "{text}"
        );
        // The caret is under the escaped ESC.
        let lines: Vec<&str> = text.lines().collect();
        let chars = |l: &str, pat: &str| l.find(pat).map(|i| l[..i].chars().count());
        assert_eq!(chars(lines[4], "^"), chars(lines[3], "\\u{1b}"));
    }
}
