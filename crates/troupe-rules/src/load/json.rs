//! JSON text → [`Document`] (Format 2.1, 2.2, 16).
//!
//! `serde_json` (with `arbitrary_precision`, so numbers keep their exact
//! source text) decides what is JSON and builds the value; NaN and Infinity
//! are not JSON and fail there. `serde_json` keeps no positions and silently
//! keeps the last of two equal keys, so a second pass over the text, which is
//! known to be valid JSON by then, records the position of every value and
//! key and rejects duplicate keys. Nesting depth is bounded by a pre-scan
//! before `serde_json` runs. (Parsing JSON with the YAML parser was rejected:
//! YAML limits implicit keys to 1024 characters and differs on tabs, so some
//! JSON would not load.)

use std::collections::HashSet;
use std::sync::Arc;

use indexmap::IndexMap;

use crate::diag::{escape_token, Code, Diagnostic};

use super::document::{Document, LineCol, SpanIndex, ValueSpan, Wanted};
use super::limits::{max_values, MAX_DEPTH, VALUES_FLOOR};
use super::loaded::Loaded;
use super::text::{check_size, decode, position_in};

/// Parses one JSON document that must be an object (Format 2.2): ENCODING
/// for a BOM or invalid UTF-8, LIMIT over 64 MiB or 128 levels of nesting,
/// PARSE for invalid JSON (NaN included), a duplicate key (at the second
/// key) or a top level that is not an object. Every diagnostic carries
/// `file` and a line and column.
pub fn parse_json(file: &str, bytes: &[u8]) -> Loaded<Document> {
    match parse_json_at(file, bytes, 1) {
        Ok(doc) => Loaded::ok(doc),
        Err(d) => Loaded::fail(d),
    }
}

/// [`parse_json`] for text that starts at line `first_line` of its file (a
/// JSONL line): positions in diagnostics and spans are lines of the file.
pub(crate) fn parse_json_at(
    file: &str,
    bytes: &[u8],
    first_line: u32,
) -> Result<Document, Diagnostic> {
    let (text, (value, sizes)) = parse_text(file, bytes, first_line, |text, de| {
        // Every array and object is allocated at its size, counted from
        // the text first (Format 16.2): grown by doubling, small maps and
        // lists hold up to twice their members.
        let sizes = container_sizes(text);
        let next = std::cell::Cell::new(0);
        let value = serde::de::DeserializeSeed::deserialize(
            Presized {
                sizes: &sizes,
                next: &next,
            },
            de,
        )?;
        Ok((value, sizes))
    })?;
    let value =
        reject_duplicate_keys(file, text, first_line, Some((value, &sizes)))?.unwrap_or_default();
    drop(sizes);
    let text: Arc<str> = Arc::from(text);
    Ok(Document {
        file: file.to_string(),
        spans: SpanIndex::lazy_json(text.clone(), first_line),
        text,
        value,
        first_line,
    })
}

/// Every check of [`parse_json_at`] without building the value: `Ok` exactly
/// when [`parse_json_at`] would give a document. A session's lines are
/// checked this way as the file is read and parsed again one at a time when
/// they are used, so a session is never held as JSON values (Format 16.2).
pub(crate) fn check_json_at(file: &str, bytes: &[u8], first_line: u32) -> Result<(), Diagnostic> {
    let (text, _) = parse_text(file, bytes, first_line, |_, de| {
        serde::Deserialize::deserialize(de).map(|serde::de::IgnoredAny| ())
    })?;
    reject_duplicate_keys(file, text, first_line, None).map(|_| ())
}

/// The checks of one JSON document (size, encoding, value budget, depth,
/// syntax, an object at the top level), deserializing it with `build` on
/// the way (given the text, once the budgets have passed).
fn parse_text<'a, T>(
    file: &str,
    bytes: &'a [u8],
    first_line: u32,
    build: impl FnOnce(
        &'a str,
        &mut serde_json::Deserializer<serde_json::de::StrRead<'a>>,
    ) -> Result<T, serde_json::Error>,
) -> Result<(&'a str, T), Diagnostic> {
    if let Some(d) = check_size(file, bytes.len() as u64) {
        return Err(d);
    }
    let text = decode(file, bytes, first_line)?;
    if let Some(at) = too_many_values(text) {
        let at = position_in(text, at, first_line);
        return Err(Diagnostic::error(
            Code::Limit,
            format!(
                "more than {} values in a document of {} bytes (at most one value per 8 bytes, \
                 plus {VALUES_FLOOR})",
                max_values(text.len()),
                text.len()
            ),
        )
        .in_file(file)
        .at_line_col(at.line, at.column));
    }
    if let Some(at) = too_deep(text) {
        let at = position_in(text, at, first_line);
        return Err(Diagnostic::error(
            Code::Limit,
            format!("nesting deeper than {MAX_DEPTH} levels"),
        )
        .in_file(file)
        .at_line_col(at.line, at.column));
    }
    // Depth is bounded by `too_deep` above; serde_json's own limit (127)
    // would reject the 128 levels Format 16 allows.
    let mut de = serde_json::Deserializer::from_str(text);
    de.disable_recursion_limit();
    let value = build(text, &mut de)
        .and_then(|v| de.end().map(|()| v))
        .map_err(|e| {
            let at = serde_position(text, e.line(), e.column(), first_line);
            let msg = e.to_string();
            let msg = msg.rfind(" at line ").map_or(msg.as_str(), |i| &msg[..i]);
            Diagnostic::error(Code::Parse, format!("invalid JSON: {msg}"))
                .in_file(file)
                .at_line_col(at.line, at.column)
        })?;
    // Valid JSON whose first character is `{` is an object.
    if !text.trim_start().starts_with('{') {
        let at = position_in(text, text.len() - text.trim_start().len(), first_line);
        return Err(Diagnostic::error(
            Code::Parse,
            "the top level must be a JSON object (`{...}`)",
        )
        .in_file(file)
        .at("")
        .at_line_col(at.line, at.column));
    }
    Ok((text, value))
}

/// Rejects a duplicate key in one object of valid JSON `text` (PARSE at
/// the second key, with its pointer). `parsed` is the value serde_json
/// built from `text`, when there is one: serde_json keeps one member per
/// key, so an object has a duplicate when it has fewer members than the
/// text has keys, which costs 4 bytes an object to see (a set of every
/// object's keys costs several times their text); only then does a pass
/// with such sets confirm it, and another, after `parsed` is dropped, find
/// its pointer.
fn reject_duplicate_keys(
    file: &str,
    text: &str,
    first_line: u32,
    parsed: Option<(serde_json::Value, &[u32])>,
) -> Result<Option<serde_json::Value>, Diagnostic> {
    let clean = match &parsed {
        Some((v, sizes)) => {
            let mut next = sizes.iter();
            same_sizes(v, &mut next) && next.next().is_none()
        }
        None => scan(file, text, first_line, Record::Nothing).is_ok(),
    };
    let parsed = parsed.map(|(v, _)| v);
    // Counts that differ without a duplicate: an object whose first key is
    // serde_json's number token, which serde_json reads as a number.
    if !clean && scan(file, text, first_line, Record::Nothing).is_err() {
        drop(parsed);
        return scan(file, text, first_line, Record::Pointers).map(|_| None);
    }
    Ok(parsed)
}

/// The number of items of every array and of keys of every object of valid
/// JSON `text`, in the order they open (pre-order): the commas directly
/// inside, plus one when it is not empty. 4 bytes a container.
fn container_sizes(text: &str) -> Vec<u32> {
    let bytes = text.as_bytes();
    let mut sizes: Vec<u32> = Vec::new();
    // Per open container: its index in `sizes` and whether it has an item.
    let mut open: Vec<(usize, bool)> = Vec::new();
    let mut i = 0usize;
    while let Some(&b) = bytes.get(i) {
        match b {
            b' ' | b'\t' | b'\r' | b'\n' => {}
            b']' | b'}' => {
                if let Some((at, true)) = open.pop()
                    && let Some(n) = sizes.get_mut(at)
                {
                    *n = n.saturating_add(1);
                }
            }
            b',' => {
                if let Some(&(at, _)) = open.last()
                    && let Some(n) = sizes.get_mut(at)
                {
                    *n = n.saturating_add(1);
                }
            }
            _ => {
                if let Some(top) = open.last_mut() {
                    top.1 = true;
                }
                match b {
                    b'"' => {
                        i = string_end(bytes, i);
                        continue;
                    }
                    b'[' | b'{' => {
                        open.push((sizes.len(), false));
                        sizes.push(0);
                    }
                    _ => {}
                }
            }
        }
        i += 1;
    }
    sizes
}

/// Whether the containers of `v`, in pre-order, have the sizes `sizes`
/// gives (it advances past those it compared): an object with fewer
/// members than its text has keys had a duplicate key.
fn same_sizes(v: &serde_json::Value, sizes: &mut std::slice::Iter<'_, u32>) -> bool {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            sizes.next().is_some_and(|&n| n as usize == m.len())
                && m.values().all(|x| same_sizes(x, sizes))
        }
        Value::Array(a) => {
            sizes.next().is_some_and(|&n| n as usize == a.len())
                && a.iter().all(|x| same_sizes(x, sizes))
        }
        _ => true,
    }
}

/// Builds a `serde_json::Value` as `serde_json` does, allocating each array
/// and object at the size [`container_sizes`] counted (the `next` one, in
/// the order the deserializer opens them, which is the text's).
struct Presized<'s> {
    sizes: &'s [u32],
    next: &'s std::cell::Cell<usize>,
}

impl Presized<'_> {
    /// The counted size of the container being opened.
    fn take(&self) -> usize {
        let i = self.next.get();
        self.next.set(i + 1);
        self.sizes.get(i).map_or(0, |&n| n as usize)
    }

    fn again(&self) -> Self {
        Presized {
            sizes: self.sizes,
            next: self.next,
        }
    }
}

/// The key `serde_json` (`arbitrary_precision`) gives a number as: a map of
/// this one key whose value is the number's text, as its own `Value` reads
/// it. `tests::sized_values_are_serde_json_s` compares the two builders.
const NUMBER_TOKEN: &str = "$serde_json::private::Number";

impl<'de> serde::de::DeserializeSeed<'de> for Presized<'_> {
    type Value = serde_json::Value;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> serde::de::Visitor<'de> for Presized<'_> {
    type Value = serde_json::Value;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Self::Value, E> {
        Ok(n.into())
    }

    fn visit_u64<E>(self, n: u64) -> Result<Self::Value, E> {
        Ok(n.into())
    }

    fn visit_f64<E>(self, n: f64) -> Result<Self::Value, E> {
        Ok(serde_json::Number::from_f64(n).map_or(serde_json::Value::Null, Into::into))
    }

    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(serde_json::Value::String(s.to_string()))
    }

    fn visit_string<E>(self, s: String) -> Result<Self::Value, E> {
        Ok(serde_json::Value::String(s))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_none<E>(self) -> Result<Self::Value, E> {
        Ok(serde_json::Value::Null)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(self.take());
        while let Some(x) = seq.next_element_seed(self.again())? {
            items.push(x);
        }
        Ok(serde_json::Value::Array(items))
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let Some(first) = map.next_key::<String>()? else {
            self.take();
            return Ok(serde_json::Value::Object(serde_json::Map::new()));
        };
        if first == NUMBER_TOKEN {
            let text: String = map.next_value()?;
            return text
                .parse::<serde_json::Number>()
                .map(serde_json::Value::Number)
                .map_err(serde::de::Error::custom);
        }
        let mut members = serde_json::Map::with_capacity(self.take());
        members.insert(first, map.next_value_seed(self.again())?);
        while let Some(k) = map.next_key::<String>()? {
            let v = map.next_value_seed(self.again())?;
            members.insert(k, v);
        }
        Ok(serde_json::Value::Object(members))
    }
}

/// Format 16's bounds on a JSON text that is not a document of a pack (a
/// model's body, 24.6): the value budget and the nesting depth, checked in
/// one pass each before any value is built. `Err` says which bound, and
/// where, in plain words.
pub fn check_bounds(text: &str) -> Result<(), String> {
    if let Some(at) = too_many_values(text) {
        let at = position_in(text, at, 1);
        return Err(format!(
            "more than {} values in {} bytes (at most one value per 8 bytes, plus {VALUES_FLOOR}; \
             line {}, column {})",
            max_values(text.len()),
            text.len(),
            at.line,
            at.column
        ));
    }
    if let Some(at) = too_deep(text) {
        let at = position_in(text, at, 1);
        return Err(format!(
            "nesting deeper than {MAX_DEPTH} levels (line {}, column {})",
            at.line, at.column
        ));
    }
    Ok(())
}

/// The byte offset of the first value past the document's value budget
/// ([`max_values`]), if any. Counts every value start (a `[`, `{`, a string
/// that is not a key, a bare number or literal) in one pass over any text,
/// before anything is built.
fn too_many_values(text: &str) -> Option<usize> {
    let budget = max_values(text.len());
    let bytes = text.as_bytes();
    // For each open container: is it an object, and is a key expected next.
    let mut stack: Vec<(bool, bool)> = Vec::new();
    let (mut count, mut i) = (0usize, 0usize);
    let value_at = |count: &mut usize, at: usize| {
        *count += 1;
        (*count > budget).then_some(at)
    };
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                let key = matches!(stack.last(), Some((true, true)));
                if key {
                    if let Some(top) = stack.last_mut() {
                        top.1 = false;
                    }
                } else if let Some(at) = value_at(&mut count, i) {
                    return Some(at);
                }
                i = string_end(bytes, i);
                continue;
            }
            b'[' | b'{' => {
                if let Some(at) = value_at(&mut count, i) {
                    return Some(at);
                }
                stack.push((b == b'{', b == b'{'));
            }
            b']' | b'}' => {
                stack.pop();
            }
            b',' => {
                if let Some(top) = stack.last_mut() {
                    top.1 = top.0;
                }
            }
            b':' | b' ' | b'\t' | b'\r' | b'\n' => {}
            _ => {
                if let Some(at) = value_at(&mut count, i) {
                    return Some(at);
                }
                while let Some(x) = bytes.get(i + 1) {
                    if matches!(
                        x,
                        b',' | b']'
                            | b'}'
                            | b':'
                            | b' '
                            | b'\t'
                            | b'\r'
                            | b'\n'
                            | b'"'
                            | b'['
                            | b'{'
                    ) {
                        break;
                    }
                    i += 1;
                }
            }
        }
        i += 1;
    }
    None
}

/// The byte offset of the first `[` or `{` nested deeper than [`MAX_DEPTH`],
/// if any. Works on any text (strings are skipped, escapes honoured).
fn too_deep(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while let Some(&b) = bytes.get(i) {
        match b {
            b'"' => {
                i = string_end(bytes, i);
                continue;
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > MAX_DEPTH {
                    return Some(i);
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// The offset just past the string that opens at `bytes[open]` (a `"`):
/// past its closing quote, or the end of `bytes` when it is not closed.
/// Jumps between quotes and backslashes (`memchr`), so a 15 MB string costs
/// a few memory scans, not a loop per byte.
fn string_end(bytes: &[u8], open: usize) -> usize {
    let mut i = open + 1;
    loop {
        let rest = bytes.get(i..).unwrap_or_default();
        match memchr::memchr2(b'"', b'\\', rest) {
            Some(k) if rest.get(k) == Some(&b'\\') => i += k + 2,
            Some(k) => return i + k + 1,
            None => return bytes.len(),
        }
    }
}

/// Converts `serde_json`'s error position (1-based line, 1-based byte column,
/// 0 at a line start) to a line and column in characters.
fn serde_position(text: &str, line: usize, column: usize, first_line: u32) -> LineCol {
    let mut start = 0usize;
    for _ in 1..line {
        match text.get(start..).and_then(|t| t.find('\n')) {
            Some(i) => start += i + 1,
            None => break,
        }
    }
    position_in(text, start + column.saturating_sub(1), first_line)
}

/// An open array or object during [`scan_spans`].
struct Frame {
    pointer: String,
    is_object: bool,
    next_index: usize,
    key: Option<(String, LineCol)>,
    keys: HashSet<String>,
}

/// A byte cursor that keeps the line and column (in characters).
struct Cursor<'a> {
    bytes: &'a [u8],
    i: usize,
    at: LineCol,
}

impl Cursor<'_> {
    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.i).copied()
    }

    /// Moves past the string that opens here. Valid JSON strings hold no
    /// raw line break, so only the column moves, by the characters skipped.
    fn skip_string(&mut self) {
        let end = string_end(self.bytes, self.i).min(self.bytes.len());
        let skipped = self.bytes.get(self.i..end).unwrap_or_default();
        // Whole characters: the string starts and ends at quotes.
        let chars = std::str::from_utf8(skipped).map_or_else(
            |_| skipped.iter().filter(|b| **b & 0xC0 != 0x80).count(),
            |t| t.chars().count(),
        );
        self.at.column = self
            .at
            .column
            .saturating_add(u32::try_from(chars).unwrap_or(u32::MAX));
        self.i = end;
    }

    fn bump(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.i += 1;
        if b == b'\n' {
            self.at.line += 1;
            self.at.column = 1;
        } else if b & 0xC0 != 0x80 {
            self.at.column += 1;
        }
        Some(b)
    }
}

/// Which positions [`scan`] records.
#[derive(Clone, Copy)]
enum Record<'p> {
    /// None (duplicate keys are still found).
    Nothing,
    /// None, but pointers are built (for a duplicate key's diagnostic).
    Pointers,
    /// Every value's and key's.
    All,
    /// Those of some pointers and of their ancestors.
    Paths(&'p Wanted),
}

impl Record<'_> {
    fn any(self) -> bool {
        !matches!(self, Record::Nothing)
    }

    /// Whether the scan looks for duplicate keys: a pass that records
    /// spans reads text already accepted (no duplicates), so it keeps no
    /// set of an object's keys (500,000 members would cost 40 MB).
    fn finds_duplicates(self) -> bool {
        matches!(self, Record::Nothing | Record::Pointers)
    }

    fn keeps(self, pointer: &str) -> bool {
        match self {
            Record::Nothing | Record::Pointers => false,
            Record::All => true,
            Record::Paths(wanted) => wanted.keeps(pointer),
        }
    }
}

/// The pointer (and key position) of the next value inside the innermost
/// open container, or of the root. Without `record` no pointer is built
/// (the key is only consumed).
fn slot(stack: &mut [Frame], record: bool) -> (String, Option<LineCol>) {
    match stack.last_mut() {
        None => (String::new(), None),
        Some(f) if f.is_object => match f.key.take() {
            Some((k, at)) if record => (format!("{}/{}", f.pointer, escape_token(&k)), Some(at)),
            Some((_, at)) => (String::new(), Some(at)),
            None => (f.pointer.clone(), None),
        },
        Some(f) => {
            let p = if record {
                format!("{}/{}", f.pointer, f.next_index)
            } else {
                String::new()
            };
            f.next_index += 1;
            (p, None)
        }
    }
}

/// The span table of valid JSON `text` with no duplicate keys (what a lazy
/// [`SpanIndex`] builds on first use).
pub(crate) fn span_table(text: &str, first_line: u32) -> IndexMap<String, ValueSpan> {
    scan("", text, first_line, Record::All).unwrap_or_default()
}

/// The spans of `pointer` and of its ancestors only, from one pass over
/// valid JSON `text` with no duplicate keys: what a lazy [`SpanIndex`]
/// answers its first lookups with, so a large document that only a few
/// diagnostics point into never holds a table of all its values.
#[cfg(test)]
pub(crate) fn spans_on_path(
    text: &str,
    first_line: u32,
    pointer: &str,
) -> IndexMap<String, ValueSpan> {
    spans_on_paths(text, first_line, &Wanted::of([pointer]))
}

/// The spans of the `wanted` pointers and of their ancestors, from one pass
/// over valid JSON `text` with no duplicate keys: how a lazy [`SpanIndex`]
/// locates the diagnostics of a document all at once
/// ([`SpanIndex::prefetch`]) or one of its first few lookups.
pub(crate) fn spans_on_paths(
    text: &str,
    first_line: u32,
    wanted: &Wanted,
) -> IndexMap<String, ValueSpan> {
    scan("", text, first_line, Record::Paths(wanted)).unwrap_or_default()
}

/// Walks valid JSON `text`: rejects a duplicate key in one object (PARSE
/// at the second key) and, with `record`, records where every value and
/// key is. Without `record` the duplicate's diagnostic has no pointer;
/// scan again with `record` for it.
fn scan(
    file: &str,
    text: &str,
    first_line: u32,
    recording: Record<'_>,
) -> Result<IndexMap<String, ValueSpan>, Diagnostic> {
    let record = recording.any();
    let mut spans = IndexMap::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut c = Cursor {
        bytes: text.as_bytes(),
        i: 0,
        at: LineCol {
            line: first_line,
            column: 1,
        },
    };
    while let Some(b) = c.peek() {
        let at = c.at;
        match b {
            b'{' | b'[' => {
                let (pointer, key) = slot(&mut stack, record);
                if recording.keeps(&pointer) {
                    spans.insert(pointer.clone(), (at, key));
                }
                stack.push(Frame {
                    pointer,
                    is_object: b == b'{',
                    next_index: 0,
                    key: None,
                    keys: HashSet::new(),
                });
                c.bump();
            }
            b'}' | b']' => {
                stack.pop();
                c.bump();
            }
            b'"' => {
                let start = c.i + 1;
                c.skip_string();
                let raw = text.get(start..c.i.saturating_sub(1)).unwrap_or("");
                match stack.last_mut() {
                    Some(f) if f.is_object && f.key.is_none() => {
                        let key = if raw.contains('\\') {
                            serde_json::from_str::<String>(&format!("\"{raw}\""))
                                .unwrap_or_else(|_| raw.to_string())
                        } else {
                            raw.to_string()
                        };
                        if recording.finds_duplicates() && !f.keys.insert(key.clone()) {
                            return Err(Diagnostic::error(
                                Code::Parse,
                                format!("duplicate key `{key}` in one object"),
                            )
                            .in_file(file)
                            .at(format!("{}/{}", f.pointer, escape_token(&key)))
                            .at_line_col(at.line, at.column));
                        }
                        f.key = Some((key, at));
                    }
                    _ => {
                        let (pointer, key) = slot(&mut stack, record);
                        if recording.keeps(&pointer) {
                            spans.insert(pointer, (at, key));
                        }
                    }
                }
            }
            b',' | b':' | b' ' | b'\t' | b'\r' | b'\n' => {
                c.bump();
            }
            _ => {
                let (pointer, key) = slot(&mut stack, record);
                if recording.keeps(&pointer) {
                    spans.insert(pointer, (at, key));
                }
                while let Some(x) = c.peek() {
                    if matches!(x, b',' | b']' | b'}' | b' ' | b'\t' | b'\r' | b'\n') {
                        break;
                    }
                    c.bump();
                }
            }
        }
    }
    Ok(spans)
}

#[cfg(test)]
mod tests {

    /// The sized builder gives serde_json's own values (numbers' exact
    /// text included) for every JSON file of the repository's examples,
    /// schemas and conformance cases, and for edge cases.
    #[test]
    fn sized_values_are_serde_json_s() {
        let mut texts: Vec<String> = [
            r#"{"a": [], "b": {}, "c": [[], [{}], {"x": [1, 2.50, -0, 1e400, 12345678901234567890123]}]}"#,
            r#"{"s": "\u00e9\"]}[,", "n": null, "t": true, "f": false, "k": {"": [" ", ","]}}"#,
            r#"{"$serde_json::private::Number": "12"}"#,
        ]
        .map(String::from)
        .to_vec();
        let root = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
        for dir in ["examples", "schemas", "conformance"] {
            for e in walkdir::WalkDir::new(root.join(dir)).into_iter().flatten() {
                if e.path().extension().is_some_and(|x| x == "json") {
                    texts.extend(std::fs::read_to_string(e.path()).ok());
                }
            }
        }
        assert!(texts.len() > 50, "{} files", texts.len());
        let mut objects = 0;
        for text in &texts {
            let Ok(expected) = serde_json::from_str::<serde_json::Value>(text) else {
                continue;
            };
            if !expected.is_object() {
                continue;
            }
            objects += 1;
            let doc = parse_json_at("f.json", text.as_bytes(), 1);
            let got = doc.map(|d| d.value).map_err(|d| d.message.to_string());
            assert_eq!(
                got.as_ref(),
                Ok(&expected),
                "{}",
                &text[..text.len().min(200)]
            );
            assert_eq!(got.unwrap().to_string(), expected.to_string());
        }
        assert!(objects > 50);
    }

    #[test]
    fn container_sizes_count_items_and_members_in_pre_order() {
        let text = r#"{"a": [1, [], [2, 3], {"x": "]", "y": [ ]}], "b": {} , "c": ["[,"]}"#;
        assert_eq!(container_sizes(text), [3, 4, 0, 2, 2, 0, 0, 1]);
        let doc = parse_json_at("f.json", text.as_bytes(), 1).unwrap();
        let sizes = container_sizes(text);
        assert!(same_sizes(&doc.value, &mut sizes.iter()));
    }

    #[test]
    fn a_path_pass_gives_the_table_s_spans_of_the_path() {
        let text = "{\"a\": [1, {\"k\": \"x\"}],\n \"b\": {\"c\": \"y\", \"d\": [2, 3]}}";
        let table = span_table(text, 1);
        assert!(table.len() > 8);
        for (p, span) in &table {
            let path = spans_on_path(text, 1, p);
            assert_eq!(path.get(p), Some(span), "{p}");
            // Only the pointer and its ancestors.
            assert_eq!(path.len(), p.matches('/').count() + 1, "{p}: {path:?}");
        }
    }

    use super::*;

    fn lc(line: u32, column: u32) -> LineCol {
        LineCol { line, column }
    }

    #[test]
    fn spans_for_values_and_keys() {
        let text = "{\n  \"a\": [1, {\"b~/\": \"é\"}],\n  \"c\": null\n}";
        let doc = parse_json_at("f.json", text.as_bytes(), 1).unwrap();
        let e = doc.spans.entries();
        assert_eq!(e[""], (lc(1, 1), None));
        assert_eq!(e["/a"], (lc(2, 8), Some(lc(2, 3))));
        assert_eq!(e["/a/0"], (lc(2, 9), None));
        assert_eq!(e["/a/1"], (lc(2, 12), None));
        assert_eq!(e["/a/1/b~0~1"], (lc(2, 20), Some(lc(2, 13))));
        assert_eq!(e["/c"], (lc(3, 8), Some(lc(3, 3))));
    }

    #[test]
    fn exact_numbers() {
        let doc = parse_json_at("f", br#"{"n": 12345678901234567.89, "e": 1.38e-23}"#, 1).unwrap();
        assert_eq!(doc.value["n"].to_string(), "12345678901234567.89");
        assert_eq!(doc.value["e"].to_string(), "1.38e-23");
    }

    #[test]
    fn duplicate_key_at_second_key() {
        let d = parse_json_at("f", b"{\"a\": 1,\n \"\\u0061\": 2}", 1).unwrap_err();
        assert_eq!(d.code, Code::Parse);
        assert_eq!((d.location.line, d.location.column), (Some(2), Some(2)));
        assert_eq!(d.location.pointer.as_deref(), Some("/a"));
        // Equal keys in different objects are fine.
        assert!(parse_json_at("f", br#"{"a": {"a": 1}, "b": {"a": 2}}"#, 1).is_ok());
    }

    #[test]
    fn nan_and_non_objects_are_parse() {
        for bad in [
            "{\"x\": NaN}",
            "{\"x\": Infinity}",
            "[1]",
            "3",
            "{\"a\": 1,}",
            "",
        ] {
            let d = parse_json_at("f", bad.as_bytes(), 1).unwrap_err();
            assert_eq!(d.code, Code::Parse, "{bad}");
            assert!(d.location.line.is_some(), "{bad}");
        }
    }

    #[test]
    fn parse_error_position() {
        // The bad token `x` is on line 2, column 8.
        let d = parse_json_at("f", b"{\"a\": 1,\n  \"b\": x}", 1).unwrap_err();
        assert_eq!((d.location.line, d.location.column), (Some(2), Some(8)));
    }

    #[test]
    fn value_budget() {
        // 65,536 + len / 8 values: a long array of one-digit numbers is over.
        let n = 100_000;
        let text = format!("{{\"a\": [{}1]}}", "1,".repeat(n));
        let d = parse_json_at("f", text.as_bytes(), 1).unwrap_err();
        assert_eq!(d.code, Code::Limit);
        // Keys are not values; strings, numbers and containers are.
        assert_eq!(too_many_values("{\"a\": [1, \"x\", {\"b\": true}]}"), None);
        let ok = format!("{{\"a\": [{}1]}}", "1,".repeat(60_000));
        assert!(parse_json_at("f", ok.as_bytes(), 1).is_ok());
    }

    #[test]
    fn depth_bound() {
        let ok = format!("{}{}", "[".repeat(127), "]".repeat(127));
        let ok = format!("{{\"a\": {ok}}}");
        assert!(parse_json_at("f", ok.as_bytes(), 1).is_ok());
        let bad = format!("{{\"a\": {}{}}}", "[".repeat(128), "]".repeat(128));
        let d = parse_json_at("f", bad.as_bytes(), 1).unwrap_err();
        assert_eq!(d.code, Code::Limit);
        // The 129th opening bracket: `{` at 1, `"a": ` then 128 `[`.
        assert_eq!(d.location.column, Some(7 + 127));
    }
}
