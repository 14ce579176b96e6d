//! A parsed document together with where each of its values came from.

use std::sync::Arc;

use indexmap::IndexMap;

/// A 1-based line and column (columns count Unicode scalar values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineCol {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// Maps a JSON Pointer (`/scenarios/0/id`, `""` for the root) to the position
/// of the value it names in the source text. For an object member the
/// position is that of the member's key when `key` is asked for.
#[derive(Debug, Clone, Default)]
pub struct SpanIndex {
    /// Pointer → (position of the value, position of the key when the value
    /// is an object member).
    pub entries: IndexMap<String, (LineCol, Option<LineCol>)>,
}

impl SpanIndex {
    /// The position of the value at `pointer`, or of the nearest ancestor that
    /// has one (a pointer to a missing member falls back to its object).
    pub fn locate(&self, pointer: &str) -> Option<LineCol> {
        let mut p = pointer;
        loop {
            if let Some((at, _)) = self.entries.get(p) {
                return Some(*at);
            }
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => return None,
            }
        }
    }

    /// The position of the key of the member at `pointer` (for diagnostics
    /// that point at a property itself, like UNKNOWN_FIELD), else of its value.
    pub fn locate_key(&self, pointer: &str) -> Option<LineCol> {
        match self.entries.get(pointer) {
            Some((_, Some(key))) => Some(*key),
            _ => self.locate(pointer),
        }
    }
}

/// One parsed JSON or YAML document.
#[derive(Debug, Clone)]
pub struct Document {
    /// The file name as shown in diagnostics (relative to the pack root, or as
    /// given on the command line; `bundle.json` inside a package is
    /// `pkg.troupe!bundle.json`).
    pub file: String,
    /// The source text, kept for snippets in human output.
    pub text: Arc<str>,
    /// The value, as JSON. Numbers keep their exact source text
    /// (`serde_json` `arbitrary_precision`), Format 2.2.
    pub value: serde_json::Value,
    /// Where each value came from.
    pub spans: SpanIndex,
    /// 1-based line of the document inside `text` (JSONL lines), else 1.
    pub first_line: u32,
}
