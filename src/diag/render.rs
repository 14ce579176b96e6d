//! Rendering diagnostics: for people (`file:line:col`, the code, the message
//! and a source snippet, via `codespan-reporting`) and as the stable JSON
//! report of `troupe check --json` (`docs/validation.md`).

use std::sync::Arc;

use codespan_reporting::diagnostic as cs;
use codespan_reporting::files::SimpleFiles;
use codespan_reporting::term;
use indexmap::IndexMap;
use serde::Serialize;

use super::{Diagnostic, Severity};

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

/// Byte offset of a 1-based line and column (columns in characters).
fn offset_of(text: &str, line: u32, column: u32) -> Option<usize> {
    let mut start = 0usize;
    for _ in 1..line {
        start += text[start..].find('\n')? + 1;
    }
    let line_text = &text[start..text[start..].find('\n').map_or(text.len(), |e| start + e)];
    let col = column.saturating_sub(1) as usize;
    let in_line = line_text
        .char_indices()
        .nth(col)
        .map_or(line_text.len(), |(i, _)| i);
    Some(start + in_line)
}

/// Renders diagnostics for a terminal, without colour: each one as
/// `error[CODE]: message`, then `┌─ file:line:col`, the quoted source line
/// when the text is known, the JSON Pointer and the help.
pub fn render_human(diagnostics: &[Diagnostic], sources: &Sources) -> String {
    let mut files = SimpleFiles::new();
    let mut ids = IndexMap::new();
    for (name, text) in &sources.files {
        ids.insert(name.clone(), files.add(name.clone(), text.clone()));
    }
    let config = term::Config::default();
    let mut out = String::new();
    for d in diagnostics {
        let head = match d.severity {
            Severity::Error => cs::Diagnostic::error(),
            Severity::Warning => cs::Diagnostic::warning(),
        }
        .with_code(d.code.as_str())
        .with_message(&d.message);
        let mut notes = Vec::new();
        if let Some(p) = d.location.pointer.as_deref().filter(|p| !p.is_empty()) {
            notes.push(format!("at {p}"));
        }
        if let Some(h) = &d.help {
            notes.push(format!("help: {h}"));
        }
        let file = d.location.file.as_deref().unwrap_or("<input>");
        let labelled = match (ids.get(file), d.location.line, d.location.column) {
            (Some(&id), Some(line), Some(col)) => {
                let text = files.get(id).map(|f| f.source().clone()).ok();
                text.and_then(|t| offset_of(&t, line, col))
                    .map(|at| (id, at))
            }
            _ => None,
        };
        let rendered = match labelled {
            Some((id, at)) => {
                let diag = head
                    .with_labels(vec![cs::Label::primary(id, at..at)])
                    .with_notes(notes.clone());
                term::emit_into_string(&config, &files, &diag).ok()
            }
            None => None,
        };
        match rendered {
            Some(text) => out.push_str(&text),
            None => {
                let place = match (d.location.line, d.location.column) {
                    (Some(l), Some(c)) => format!("{file}:{l}:{c}"),
                    _ => file.to_string(),
                };
                let sev = match d.severity {
                    Severity::Error => "error",
                    Severity::Warning => "warning",
                };
                out.push_str(&format!("{sev}[{}]: {}\n  ┌─ {place}\n", d.code, d.message));
                for n in notes {
                    out.push_str(&format!("  = {n}\n"));
                }
            }
        }
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
    fn offsets_count_characters() {
        assert_eq!(offset_of("ab\néx y", 2, 3), Some(6));
        assert_eq!(offset_of("a", 3, 1), None);
    }
}
