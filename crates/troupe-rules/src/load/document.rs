//! A parsed document together with where each of its values came from.

use std::collections::HashSet;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use indexmap::IndexMap;

/// A 1-based line and column (columns count Unicode scalar values).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LineCol {
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

/// Position of a value, and of its key when the value is an object member.
pub type ValueSpan = (LineCol, Option<LineCol>);

/// Maps a JSON Pointer (`/scenarios/0/id`, `""` for the root) to the position
/// of the value it names in the source text. For an object member the
/// position is that of the member's key when `key` is asked for.
///
/// Built lazily (Format 16.2): the index keeps only the source text and
/// builds its table on the first lookup, by parsing the text again, so a
/// document no diagnostic points into costs no table (a session of 1.4M
/// lines would otherwise hold 1.4M tables, and a YAML file of tiny values
/// a pointer string per value). The first [`PATH_LOOKUPS`] lookups do not
/// build the table either: each is one pass over the text that keeps only
/// the positions on the pointer's path (for YAML, unless the file has an
/// alias), so a
/// large document with a few diagnostics never holds a table of all its
/// values (about 100 bytes a value, ten times the text of small values);
/// time stays linear, since at most that many passes are made before the
/// table is built. A caller that has many diagnostics to locate in one
/// document asks for all their pointers at once ([`SpanIndex::prefetch`]):
/// one pass keeps the spans of all their paths, so however many diagnostics
/// a document has, no table of all its values is built for them.
#[derive(Debug, Default)]
pub struct SpanIndex {
    /// The source text, when the table is built lazily.
    source: Option<Source>,
    /// The table: pointer → span (boxed: a lazy index that is never used
    /// costs one pointer, not an empty table).
    table: OnceLock<Box<IndexMap<String, ValueSpan>>>,
    /// Lookups answered by one pass each, without the table.
    passes: AtomicU32,
    /// The spans of the paths [`SpanIndex::prefetch`] was asked for.
    prefetched: Mutex<Option<Box<Prefetched>>>,
}

/// The pointers a pass over a document's text keeps the spans of: each
/// target and every ancestor of it (`/a/0/b` keeps `""`, `/a`, `/a/0` and
/// `/a/0/b`).
#[derive(Debug, Default)]
pub(crate) struct Wanted(HashSet<String>);

impl Wanted {
    /// The targets `pointers` with their ancestors.
    pub(crate) fn of<'a>(pointers: impl IntoIterator<Item = &'a str>) -> Wanted {
        let mut set = HashSet::new();
        for p in pointers {
            let mut p = p;
            while set.insert(p.to_string()) {
                match p.rfind('/') {
                    Some(i) => p = &p[..i],
                    None => break,
                }
            }
        }
        Wanted(set)
    }

    /// Whether the span of `pointer` is kept.
    pub(crate) fn keeps(&self, pointer: &str) -> bool {
        self.0.contains(pointer)
    }
}

/// What [`SpanIndex::prefetch`] kept: the targets asked for, and the spans
/// of their paths.
#[derive(Debug, Default, Clone)]
struct Prefetched {
    targets: HashSet<String>,
    spans: IndexMap<String, ValueSpan>,
}

/// How many lookups of a lazy index are answered by a pass over the text
/// each before its table is built.
pub const PATH_LOOKUPS: u32 = 16;

impl Clone for SpanIndex {
    fn clone(&self) -> Self {
        SpanIndex {
            source: self.source.clone(),
            table: self.table.clone(),
            passes: AtomicU32::new(self.passes.load(Ordering::Relaxed)),
            prefetched: Mutex::new(self.prefetched.lock().ok().and_then(|p| p.clone())),
        }
    }
}

/// The text a lazy [`SpanIndex`] builds its table from.
#[derive(Debug, Clone)]
enum Source {
    /// JSON text and its first line in its file.
    Json(Arc<str>, u32),
    /// A YAML file's text.
    Yaml(Arc<str>),
}

impl SpanIndex {
    /// An index over ready entries (YAML, tests).
    #[cfg(any(test, feature = "internals"))]
    pub fn from_entries(entries: IndexMap<String, ValueSpan>) -> Self {
        Self {
            source: None,
            table: OnceLock::from(Box::new(entries)),
            passes: AtomicU32::new(0),
            prefetched: Mutex::new(None),
        }
    }

    /// A lazy index over valid JSON `text` whose first line is `first_line`
    /// (the caller has checked it parses and has no duplicate keys).
    pub fn lazy_json(text: Arc<str>, first_line: u32) -> Self {
        Self {
            source: Some(Source::Json(text, first_line)),
            table: OnceLock::new(),
            passes: AtomicU32::new(0),
            prefetched: Mutex::new(None),
        }
    }

    /// A lazy index over YAML `text` that [`super::yaml::parse_yaml`]
    /// accepted.
    pub fn lazy_yaml(text: Arc<str>) -> Self {
        Self {
            source: Some(Source::Yaml(text)),
            table: OnceLock::new(),
            passes: AtomicU32::new(0),
            prefetched: Mutex::new(None),
        }
    }

    /// Every pointer and its span, in source order (built on first use).
    pub fn entries(&self) -> &IndexMap<String, ValueSpan> {
        self.table.get_or_init(|| {
            Box::new(match &self.source {
                Some(Source::Json(text, first_line)) => super::json::span_table(text, *first_line),
                Some(Source::Yaml(text)) => super::yaml::span_table(text),
                None => IndexMap::new(),
            })
        })
    }

    /// True once the table exists (after the first lookup). Lets tests and benchmarks see that loading alone
    /// builds nothing.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_built(&self) -> bool {
        self.table.get().is_some()
    }

    /// Adds or replaces the span of `pointer` (tests and builders).
    #[cfg(any(test, feature = "internals"))]
    pub fn insert(&mut self, pointer: String, span: ValueSpan) {
        self.entries();
        if let Some(t) = self.table.get_mut() {
            t.insert(pointer, span);
        }
    }

    /// Makes the lookups of `pointers` that follow answerable without the
    /// table, from one pass over the text that keeps the spans of their
    /// paths (Format 16.2: a document with many diagnostics costs no table
    /// of all its values). Does nothing once the table is built; a YAML
    /// text with an alias, whose positions only the table has, is left to
    /// the table.
    pub fn prefetch<'a>(&self, pointers: impl IntoIterator<Item = &'a str>) {
        if self.table.get().is_some() {
            return;
        }
        let Some(source) = &self.source else { return };
        let Ok(mut guard) = self.prefetched.lock() else {
            return;
        };
        let done = guard.get_or_insert_with(Default::default);
        let mut new: Vec<&str> = pointers
            .into_iter()
            .filter(|p| !done.targets.contains(*p))
            .collect();
        if new.is_empty() {
            return;
        }
        new.sort_unstable();
        new.dedup();
        let wanted = Wanted::of(new.iter().copied());
        let spans = match source {
            Source::Json(text, first_line) => {
                super::json::spans_on_paths(text, *first_line, &wanted)
            }
            Source::Yaml(text) => match super::yaml::spans_on_paths(text, &wanted) {
                Some(spans) => spans,
                None => {
                    self.passes.store(PATH_LOOKUPS, Ordering::Relaxed);
                    return;
                }
            },
        };
        done.spans.extend(spans);
        done.targets.extend(new.into_iter().map(str::to_string));
    }

    /// Answers a lookup of `pointer` from the table, from the spans
    /// [`SpanIndex::prefetch`] kept for it, or (the first [`PATH_LOOKUPS`]
    /// other lookups of a lazy index) from the spans of `pointer`'s path
    /// alone.
    fn with_spans<R>(
        &self,
        pointer: &str,
        answer: impl FnOnce(&IndexMap<String, ValueSpan>) -> R,
    ) -> R {
        if self.table.get().is_none() && self.source.is_some() {
            if let Ok(guard) = self.prefetched.lock()
                && let Some(done) = guard.as_deref()
                && done.targets.contains(pointer)
            {
                return answer(&done.spans);
            }
            if self.passes.fetch_add(1, Ordering::Relaxed) < PATH_LOOKUPS {
                let wanted = Wanted::of([pointer]);
                match &self.source {
                    Some(Source::Json(text, first_line)) => {
                        return answer(&super::json::spans_on_paths(text, *first_line, &wanted));
                    }
                    Some(Source::Yaml(text)) => match super::yaml::spans_on_paths(text, &wanted) {
                        Some(path) => return answer(&path),
                        // Aliases: only the whole table has their positions.
                        None => self.passes.store(PATH_LOOKUPS, Ordering::Relaxed),
                    },
                    None => {}
                }
            }
        }
        answer(self.entries())
    }

    /// The position of the value at `pointer`, or of the nearest ancestor that
    /// has one (a pointer to a missing member falls back to its object).
    pub fn locate(&self, pointer: &str) -> Option<LineCol> {
        self.with_spans(pointer, |entries| nearest(entries, pointer))
    }

    /// The position of the key of the member at `pointer` (for diagnostics
    /// that point at a property itself, like UNKNOWN_FIELD), else of its value.
    pub fn locate_key(&self, pointer: &str) -> Option<LineCol> {
        self.with_spans(pointer, |entries| match entries.get(pointer) {
            Some((_, Some(key))) => Some(*key),
            _ => nearest(entries, pointer),
        })
    }
}

/// The position of `pointer`'s value in `entries`, or of its nearest
/// ancestor's.
fn nearest(entries: &IndexMap<String, ValueSpan>, pointer: &str) -> Option<LineCol> {
    let mut p = pointer;
    loop {
        if let Some((at, _)) = entries.get(p) {
            return Some(*at);
        }
        match p.rfind('/') {
            Some(i) => p = &p[..i],
            None => return None,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Format 16.2: a prefetch locates every pointer as the whole table
    /// does (values, keys, a missing member's nearest ancestor), without
    /// building the table, however many pointers (more than PATH_LOOKUPS).
    #[test]
    fn a_prefetch_answers_as_the_table_without_building_it() {
        for (text, lazy, table) in [
            (
                "{\"a\": [1, {\"k\": \"x\"}],\n \"b\": {\"c\": \"y\", \"d\": [2, 3]}}",
                SpanIndex::lazy_json(
                    "{\"a\": [1, {\"k\": \"x\"}],\n \"b\": {\"c\": \"y\", \"d\": [2, 3]}}".into(),
                    1,
                ),
                super::super::json::span_table(
                    "{\"a\": [1, {\"k\": \"x\"}],\n \"b\": {\"c\": \"y\", \"d\": [2, 3]}}",
                    1,
                ),
            ),
            (
                "a: [1, {k: x}]\nb:\n  c: y\n  d: [2, 3]\n",
                SpanIndex::lazy_yaml("a: [1, {k: x}]\nb:\n  c: y\n  d: [2, 3]\n".into()),
                super::super::yaml::span_table("a: [1, {k: x}]\nb:\n  c: y\n  d: [2, 3]\n"),
            ),
        ] {
            let mut pointers: Vec<String> = table.keys().cloned().collect();
            pointers.extend((0..20).map(|i| format!("/b/missing{i}")));
            lazy.prefetch(pointers.iter().map(String::as_str));
            let whole = SpanIndex::from_entries(table.clone());
            for p in &pointers {
                assert_eq!(lazy.locate(p), whole.locate(p), "{text:?} {p}");
                assert_eq!(lazy.locate_key(p), whole.locate_key(p), "{text:?} {p}");
            }
            assert!(!lazy.is_built(), "{text:?}");
        }
    }
}
