//! Filling in where a diagnostic is: the file, and the line and column of the
//! value its pointer names (Format 17.2), from the document's spans.

use crate::diag::{Code, Diagnostic};
use crate::load::Document;

/// Sets the file (when unset) and the line and column (when unset) of `d`
/// from `doc`, reading `inner` — the pointer inside `doc` (without any
/// `header`/`message:<id>` prefix). UNKNOWN_FIELD points at the property's
/// key; everything else at the value. A position inside a string
/// ([`crate::diag::Location::inner`]) is added to the string's position.
pub fn locate_in(d: &mut Diagnostic, doc: &Document, inner: &str) {
    if d.location.file.is_none() {
        d.location.file = Some(doc.file.clone());
    }
    if d.location.line.is_some() {
        return;
    }
    let at = if d.code == Code::UnknownField || names_a_key(d.code, inner) {
        doc.spans
            .locate_key(inner)
            .or_else(|| doc.spans.locate(inner))
    } else {
        doc.spans.locate(inner)
    };
    let Some(at) = at else { return };
    let (mut line, mut column) = (at.line, at.column);
    if let Some((l, c)) = d.location.inner {
        if l <= 1 {
            // Inside a quoted scalar the text starts one character after the quote.
            let quoted = char_at(doc, line, column).is_some_and(|ch| ch == '"' || ch == '\'');
            column += c - 1 + u32::from(quoted);
        } else {
            line += l - 1;
            column = c;
        }
    }
    d.location.line = Some(line);
    d.location.column = Some(column);
}

/// True when the diagnostic is about a state name written as a map key (a
/// change's `set`/`add` entry, a fixture's `state` entry): the name is
/// what is wrong, so the caret goes on the key, not on its value.
fn names_a_key(code: Code, pointer: &str) -> bool {
    if !matches!(code, Code::UnknownVariable | Code::DerivedSet) {
        return false;
    }
    let mut tokens = pointer.rsplit('/');
    tokens.next();
    matches!(tokens.next(), Some("set" | "add" | "state"))
}

/// The character at a 1-based line and column of the document's text.
fn char_at(doc: &Document, line: u32, column: u32) -> Option<char> {
    let index = line.checked_sub(doc.first_line)? as usize;
    let text = doc.text.lines().nth(index)?;
    text.chars().nth(column.checked_sub(1)? as usize)
}

/// Removes repeated diagnostics: each (code, file, pointer, line, column) is
/// reported once (Format 17.1), keeping the first.
pub fn dedup(diags: &mut Vec<Diagnostic>) {
    let mut seen = std::collections::HashSet::new();
    diags.retain(|d| {
        seen.insert((
            d.code,
            d.location.file.clone(),
            d.location.pointer.clone(),
            d.location.line,
            d.location.column,
        ))
    });
}
