//! YAML text → [`Document`] (Format 2, YAML; 16).
//!
//! Built from `saphyr-parser`'s event stream rather than `saphyr`'s loader:
//! the parser is an explicit state machine (no recursion, so deep nesting
//! cannot overflow the stack), and building the value here bounds nesting
//! depth and alias expansion *while* parsing, before any expansion happens,
//! and records the position of every value and key. Scalars follow the YAML
//! 1.2 core schema; numbers become JSON numbers built from their source text
//! (never through `f64`). Tags are ignored.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use indexmap::IndexMap;
use saphyr_parser::{Event, Parser, ScalarStyle, ScanError, Span};
use serde_json::{Map, Number, Value};

use crate::diag::{escape_token, Code, Diagnostic};

use super::document::{Document, LineCol, SpanIndex, ValueSpan, Wanted};
use super::limits::{
    max_values, yaml_alias_bytes, MAX_DEPTH, MAX_YAML_ALIASES, MAX_YAML_EXPANDED_NODES,
    VALUES_FLOOR,
};
use super::loaded::Loaded;
use super::text::{check_size, decode, position_in};

/// Parses one YAML document whose top level must be a mapping (Format 2,
/// YAML): ENCODING for a BOM or invalid UTF-8; PARSE at a NUL character
/// (never allowed in YAML text, even quoted); LIMIT over 64 MiB, 128 levels
/// of nesting, 100 alias expansions or 1,000,000 nodes added by aliases;
/// PARSE for invalid YAML, more than one document, a duplicate key (at the
/// second key), a key that is not a string, `.inf`/`.nan`, or a top level
/// that is not a mapping. Every diagnostic carries `file` and a line and
/// column.
pub fn parse_yaml(file: &str, bytes: &[u8]) -> Loaded<Document> {
    match parse_yaml_inner(file, bytes) {
        Ok(doc) => Loaded::ok(doc),
        Err(d) => Loaded::fail(d),
    }
}

fn parse_yaml_inner(file: &str, bytes: &[u8]) -> Result<Document, Diagnostic> {
    if let Some(d) = check_size(file, bytes.len() as u64) {
        return Err(d);
    }
    let text = decode(file, bytes, 1)?;
    // YAML text is printable characters only (YAML 1.2, c-printable): the
    // scanner stops at a NUL as if the stream ended, which it reports at the
    // start of the enclosing token. Report the NUL itself.
    if let Some(i) = text.find('\0') {
        return Err(parse_error(
            file,
            position_in(text, i, 1),
            "a NUL character is not allowed in YAML text",
        ));
    }
    let mut b = Builder::new(file, text, false);
    let mut parser = Parser::new_from_str(text);
    while let Some(next) = parser.next_event() {
        match next {
            Ok((event, span)) => b.event(event, span)?,
            Err(e) => return Err(scan_error(file, text, &e)),
        }
    }
    let text_arc: Arc<str> = Arc::from(text);
    match b.root {
        Some((Value::Object(map), _)) => Ok(Document {
            file: file.to_string(),
            text: text_arc.clone(),
            value: Value::Object(map),
            spans: SpanIndex::lazy_yaml(text_arc),
            first_line: 1,
        }),
        Some((_, at)) => Err(parse_error(
            file,
            at,
            "the top level must be a mapping (`key: value` lines)",
        )
        .at("")),
        None => Err(parse_error(
            file,
            LineCol { line: 1, column: 1 },
            "the file holds no YAML document; expected a mapping",
        )),
    }
}

/// The span table of YAML `text` that [`parse_yaml`] accepted: every
/// value's pointer and position, aliases copying the positions of what they
/// expand. Built only when a diagnostic needs a position (Format 16.2: a
/// valid document holds no table), by parsing the text again without
/// building its values.
pub(crate) fn span_table(text: &str) -> IndexMap<String, ValueSpan> {
    spans_of(text, None).unwrap_or_default()
}

/// The spans of `pointer` and of its ancestors only, from one parse of YAML
/// `text` that [`parse_yaml`] accepted (what a lazy [`SpanIndex`] answers
/// its first lookups with); `None` when the text has an alias, whose
/// positions only the whole table has.
#[cfg(test)]
pub(crate) fn spans_on_path(text: &str, pointer: &str) -> Option<IndexMap<String, ValueSpan>> {
    spans_on_paths(text, &Wanted::of([pointer]))
}

/// The spans of the `wanted` pointers and of their ancestors, from one parse
/// of YAML `text` that [`parse_yaml`] accepted; `None` when the text has an
/// alias.
pub(crate) fn spans_on_paths(text: &str, wanted: &Wanted) -> Option<IndexMap<String, ValueSpan>> {
    spans_of(text, Some(wanted))
}

fn spans_of(text: &str, want: Option<&Wanted>) -> Option<IndexMap<String, ValueSpan>> {
    // The text was accepted, so its budgets hold on this second parse.
    let mut b = Builder::new("", text, true);
    b.build = false;
    b.want = want;
    let mut parser = Parser::new_from_str(text);
    while let Some(Ok((event, span))) = parser.next_event() {
        if b.event(event, span).is_err() {
            break;
        }
    }
    (!b.met_alias).then_some(b.spans)
}

fn lc(span: &Span) -> LineCol {
    LineCol {
        line: u32::try_from(span.start.line()).unwrap_or(u32::MAX),
        column: u32::try_from(span.start.col().saturating_add(1)).unwrap_or(u32::MAX),
    }
}

fn parse_error(file: &str, at: LineCol, message: impl Into<String>) -> Diagnostic {
    Diagnostic::error(Code::Parse, message)
        .in_file(file)
        .at_line_col(at.line, at.column)
}

fn scan_error(file: &str, text: &str, e: &ScanError) -> Diagnostic {
    let m = e.marker();
    let mut line = u32::try_from(m.line()).unwrap_or(u32::MAX);
    let mut column = u32::try_from(m.col().saturating_add(1)).unwrap_or(u32::MAX);
    // A tab in an indentation is reported at the tab (Format 2.4): the
    // scanner names the start of the token it was reading (a plain scalar
    // the next line would continue), lines above it.
    if (e.info().contains("found a tab") || e.info().contains("tabs disallowed"))
        && let Some(at) = indentation_tab(text, m.line())
    {
        (line, column) = (at.line, at.column);
    }
    // The scanner reads flow collections ahead of the events (to find
    // implicit keys) and stops at 255 levels of flow nesting with this
    // message, before the depth check on events can see level 129: that is
    // LIMIT too, at the level where the scanner stopped.
    if e.info().contains("recursion limit") {
        return Diagnostic::error(
            Code::Limit,
            format!("nesting deeper than {MAX_DEPTH} levels"),
        )
        .in_file(file)
        .at_line_col(line, column);
    }
    let info = e.info();
    let message = match plain_yaml_error(info) {
        Some(plain) => format!("invalid YAML: {plain} (the parser says: {info})"),
        None => format!("invalid YAML: {info}"),
    };
    Diagnostic::error(Code::Parse, message)
        .in_file(file)
        .at_line_col(line, column)
}

/// The first tab in a line's indentation (its leading spaces and tabs) at
/// or after line `from` (1-based), where a scanner's tab error is.
fn indentation_tab(text: &str, from: usize) -> Option<LineCol> {
    text.split('\n')
        .enumerate()
        .skip(from.saturating_sub(1))
        .find_map(|(i, l)| {
            let lead = l.len() - l.trim_start_matches([' ', '\t']).len();
            let col = l[..lead].find('\t')?;
            Some(LineCol {
                line: u32::try_from(i + 1).unwrap_or(u32::MAX),
                column: u32::try_from(l[..col].chars().count() + 1).unwrap_or(u32::MAX),
            })
        })
}

/// A plain sentence for the YAML parser's messages that most often mean a
/// line indented wrong, so an author sees what to fix (Format 2.4, 17.5).
fn plain_yaml_error(info: &str) -> Option<&'static str> {
    if info.contains("did not find expected '-' indicator")
        || info.contains("did not find expected key")
    {
        Some("this line is not indented like the lines of the list or mapping it belongs to")
    } else if info.contains("mapping values are not allowed in this context") {
        Some(
            "a `key: value` where none can start: this line is indented deeper than the \
             key before it, or a value holds `: ` and needs quotes",
        )
    } else if info.contains("tabs disallowed") || info.contains("found a tab") {
        Some("YAML is indented with spaces, not tabs")
    } else {
        None
    }
}

/// A sequence or mapping being built.
struct Frame {
    pointer: String,
    at: LineCol,
    anchor: usize,
    /// `span_count`, `aliases` and `expanded` when the node began
    /// (what an anchor on it must remember).
    mark: (usize, usize, usize),
    /// The greatest height among the children so far (see [`Anchored`]).
    child_height: usize,
    node: Node,
}

enum Node {
    /// A sequence's items (when values are built) and how many there are.
    Seq(Vec<Value>, usize),
    Map(Members, Option<(String, LineCol)>),
}

/// A mapping's members while it is built. A small mapping's stay in a list
/// until it is complete, so each key is hashed once, into the map built at
/// the mapping's size; a duplicate among them is found by comparing keys.
enum Members {
    /// At most [`FEW_MEMBERS`] members, in source order.
    Few(Vec<(String, Value)>),
    Many(Map<String, Value>),
}

/// How many members a mapping keeps in a list before they move to a map.
const FEW_MEMBERS: usize = 16;

impl Members {
    fn contains(&self, key: &str) -> bool {
        match self {
            Members::Few(v) => v.iter().any(|(k, _)| k == key),
            Members::Many(m) => m.contains_key(key),
        }
    }

    fn insert(&mut self, key: String, value: Value) {
        match self {
            Members::Few(v) if v.len() < FEW_MEMBERS => v.push((key, value)),
            Members::Few(v) => {
                let mut m: Map<String, Value> = std::mem::take(v).into_iter().collect();
                m.insert(key, value);
                *self = Members::Many(m);
            }
            Members::Many(m) => {
                m.insert(key, value);
            }
        }
    }
}

/// An anchored node, kept for the aliases to it: its value, its spans
/// relative to itself, and the alias expansions and nodes it holds.
struct Anchored {
    value: Value,
    /// Its spans relative to itself (only while recording spans).
    spans: Vec<(String, (LineCol, Option<LineCol>))>,
    /// How many spans it has (itself and every value inside it).
    span_count: usize,
    aliases: usize,
    nodes: usize,
    /// Levels of nesting the node adds where an alias expands it: 0 for a
    /// scalar, 1 + its deepest child for a sequence or mapping (aliases
    /// inside counted as expanded).
    height: usize,
    /// Its size for the byte budget: scalar and key bytes plus 8 a node.
    bytes: usize,
}

struct Builder<'f> {
    file: &'f str,
    /// Whether positions are kept ([`span_table`]); the first parse keeps
    /// none, only their count.
    record: bool,
    /// Whether values are built: not when only positions are wanted (the
    /// text was accepted, so nothing is checked that needs them), so the
    /// second parse costs its positions only.
    build: bool,
    /// Keep only the positions of these pointers and of their ancestors
    /// ([`spans_on_paths`]); such a parse stops at the first alias.
    want: Option<&'f Wanted>,
    /// The parse stopped at an alias while `want` was set.
    met_alias: bool,
    spans: IndexMap<String, ValueSpan>,
    /// The values given a position so far (recorded or not): what the
    /// alias node counts are made of.
    span_count: usize,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    root: Option<(Value, LineCol)>,
    documents: usize,
    aliases: usize,
    expanded: usize,
    /// Bytes added by alias expansion so far, and the file's budget.
    expanded_bytes: usize,
    alias_budget: usize,
    /// Values built so far (aliases count the nodes they add), and the
    /// file's value budget (Format 16).
    values: usize,
    values_budget: usize,
}

/// The size of `v` for the alias byte budget: the bytes of its scalars and
/// keys plus 8 per node.
fn value_bytes(v: &Value) -> usize {
    8 + match v {
        Value::String(s) => s.len(),
        Value::Number(n) => n.as_str().len(),
        Value::Array(a) => a.iter().map(value_bytes).sum(),
        Value::Object(m) => m.iter().map(|(k, x)| k.len() + value_bytes(x)).sum(),
        Value::Null | Value::Bool(_) => 0,
    }
}

impl<'f> Builder<'f> {
    /// A builder for `text` of `file` with the budgets of Format 16.1
    /// (alias bytes, values), keeping positions when `record`.
    fn new(file: &'f str, text: &str, record: bool) -> Self {
        Builder {
            file,
            record,
            build: true,
            want: None,
            met_alias: false,
            spans: IndexMap::new(),
            span_count: 0,
            stack: Vec::new(),
            anchors: HashMap::new(),
            root: None,
            documents: 0,
            aliases: 0,
            expanded: 0,
            expanded_bytes: 0,
            alias_budget: yaml_alias_bytes(text.len()),
            values: 0,
            values_budget: max_values(text.len()),
        }
    }
}

impl Builder<'_> {
    /// Counts `n` values built at `at`: LIMIT past the file's value budget.
    fn count(&mut self, n: usize, at: LineCol) -> Result<(), Diagnostic> {
        self.values = self.values.saturating_add(n);
        if self.values > self.values_budget {
            return Err(Diagnostic::error(
                Code::Limit,
                format!(
                    "more than {} values in a file of this size (at most one value per 8 \
                     bytes, plus {VALUES_FLOOR}; aliases count the values they add)",
                    self.values_budget
                ),
            )
            .in_file(self.file)
            .at_line_col(at.line, at.column));
        }
        Ok(())
    }

    fn event(&mut self, event: Event<'_>, span: Span) -> Result<(), Diagnostic> {
        let at = lc(&span);
        match event {
            Event::DocumentStart(_) => {
                self.documents += 1;
                if self.documents > 1 {
                    return Err(parse_error(
                        self.file,
                        at,
                        "more than one YAML document in the file",
                    ));
                }
            }
            Event::SequenceStart(anchor, _) | Event::MappingStart(anchor, _) => {
                let is_map = matches!(event, Event::MappingStart(..));
                if self.expects_key() {
                    return Err(parse_error(
                        self.file,
                        at,
                        "a mapping key must be a string, not a sequence or mapping",
                    ));
                }
                if self.stack.len() >= MAX_DEPTH {
                    return Err(Diagnostic::error(
                        Code::Limit,
                        format!("nesting deeper than {MAX_DEPTH} levels"),
                    )
                    .in_file(self.file)
                    .at_line_col(at.line, at.column));
                }
                self.count(1, at)?;
                let mark = (self.span_count, self.aliases, self.expanded);
                // A collection's pointer is only needed for the spans kept
                // (a duplicate key's pointer is rebuilt from the stack).
                let (pointer, key) = if self.record {
                    self.slot()
                } else {
                    (String::new(), None)
                };
                self.span(|| pointer.clone(), (at, key));
                let node = if is_map {
                    Node::Map(Members::Few(Vec::new()), None)
                } else {
                    Node::Seq(Vec::new(), 0)
                };
                self.stack.push(Frame {
                    pointer,
                    at,
                    anchor,
                    mark,
                    child_height: 0,
                    node,
                });
            }
            Event::SequenceEnd | Event::MappingEnd => {
                if let Some(f) = self.stack.pop() {
                    // A collection is kept at its size once it is complete
                    // (Format 16.2): YAML gives no count before its items,
                    // and grown by doubling, small lists and maps would hold
                    // up to twice their members for the document's life. A
                    // map is rebuilt at its size only when small: a large
                    // one's spare room is mostly never touched (not
                    // resident), and a copy would double it for a moment.
                    let value = match f.node {
                        Node::Seq(mut v, _) => {
                            v.shrink_to_fit();
                            Value::Array(v)
                        }
                        Node::Map(Members::Few(v), _) => Value::Object(v.into_iter().collect()),
                        Node::Map(Members::Many(m), _) if m.len() < 64 => {
                            let mut exact = Map::with_capacity(m.len());
                            exact.extend(m);
                            Value::Object(exact)
                        }
                        Node::Map(Members::Many(m), _) => Value::Object(m),
                    };
                    let height = f.child_height + 1;
                    self.grow(height);
                    if f.anchor != 0 {
                        self.remember(f.anchor, &value, &f.pointer, f.mark, height);
                    }
                    self.attach(value, f.at);
                }
            }
            Event::Scalar(text, style, anchor, _) => {
                if self.expects_key() {
                    let key = match style {
                        ScalarStyle::Plain => match plain_non_string(&text) {
                            Ok(None) => owned(text),
                            Ok(Some(_)) | Err(_) => {
                                return Err(parse_error(
                                    self.file,
                                    at,
                                    format!(
                                        "the key `{text}` is not a string; quote it (\"{text}\")"
                                    ),
                                ))
                            }
                        },
                        _ => owned(text),
                    };
                    if anchor != 0 {
                        self.anchors.insert(
                            anchor,
                            Anchored {
                                value: Value::String(key.clone()),
                                spans: Vec::new(),
                                span_count: 0,
                                aliases: 0,
                                nodes: 1,
                                height: 0,
                                bytes: 8 + key.len(),
                            },
                        );
                    }
                    return self.key(key, at);
                }
                self.count(1, at)?;
                let value = match style {
                    ScalarStyle::Plain => {
                        resolve_plain_cow(text).map_err(|msg| parse_error(self.file, at, msg))?
                    }
                    _ => Value::String(owned(text)),
                };
                let mark = (self.span_count, self.aliases, self.expanded);
                // A scalar's pointer is only needed for its span or anchor.
                let (pointer, key) = if self.record || anchor != 0 {
                    self.slot()
                } else {
                    (String::new(), None)
                };
                self.span(|| pointer.clone(), (at, key));
                if anchor != 0 {
                    self.remember(anchor, &value, &pointer, mark, 0);
                }
                self.attach(value, at);
            }
            Event::Alias(id) => self.alias(id, at)?,
            Event::Nothing | Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => {}
        }
        Ok(())
    }

    /// True when the next node is a key of the innermost mapping.
    fn expects_key(&self) -> bool {
        matches!(
            self.stack.last(),
            Some(Frame {
                node: Node::Map(_, None),
                ..
            })
        )
    }

    /// Sets the pending key of the innermost mapping, rejecting duplicates.
    fn key(&mut self, key: String, at: LineCol) -> Result<(), Diagnostic> {
        if let Some(Frame {
            node: Node::Map(map, pending),
            ..
        }) = self.stack.last_mut()
        {
            if map.contains(&key) {
                return Err(parse_error(
                    self.file,
                    at,
                    format!("duplicate key `{key}` in one mapping"),
                )
                .at(format!("{}/{}", self.open_pointer(), escape_token(&key))));
            }
            *pending = Some((key, at));
        }
        Ok(())
    }

    /// The pointer of the innermost open node, rebuilt from the stack: each
    /// open node's parent is at the item it is building (a sequence's
    /// count, a mapping's pending key), so no pointer needs keeping while
    /// values are only built.
    fn open_pointer(&self) -> String {
        let mut pointer = String::new();
        for f in self.stack.iter().rev().skip(1).rev() {
            match &f.node {
                Node::Seq(_, n) => {
                    pointer.push('/');
                    pointer.push_str(&n.to_string());
                }
                Node::Map(_, Some((k, _))) => {
                    pointer.push('/');
                    pointer.push_str(&escape_token(k));
                }
                Node::Map(_, None) => {}
            }
        }
        pointer
    }

    /// Counts the span of one value, and keeps it when recording.
    fn span(&mut self, pointer: impl FnOnce() -> String, span: ValueSpan) {
        self.span_count += 1;
        if self.record {
            let pointer = pointer();
            let keep = self.want.is_none_or(|wanted| wanted.keeps(&pointer));
            if keep {
                self.spans.insert(pointer, span);
            }
        }
    }

    /// The pointer (and key position) of the next value.
    fn slot(&self) -> (String, Option<LineCol>) {
        match self.stack.last() {
            None => (String::new(), None),
            Some(f) => match &f.node {
                Node::Seq(_, n) => (format!("{}/{}", f.pointer, n), None),
                Node::Map(_, Some((k, at))) => {
                    (format!("{}/{}", f.pointer, escape_token(k)), Some(*at))
                }
                Node::Map(_, None) => (f.pointer.clone(), None),
            },
        }
    }

    /// Adds a finished value to the innermost open node, or makes it the root.
    fn attach(&mut self, value: Value, at: LineCol) {
        match self.stack.last_mut() {
            None => self.root = Some((value, at)),
            Some(f) => match &mut f.node {
                Node::Seq(v, n) => {
                    *n += 1;
                    if self.build {
                        v.push(value);
                    }
                }
                Node::Map(m, pending) => {
                    if let Some((k, _)) = pending.take()
                        && self.build
                    {
                        m.insert(k, value);
                    }
                }
            },
        }
    }

    fn remember(
        &mut self,
        anchor: usize,
        value: &Value,
        pointer: &str,
        mark: (usize, usize, usize),
        height: usize,
    ) {
        let spans = if self.record {
            self.spans
                .iter()
                .skip(mark.0)
                .filter_map(|(p, s)| p.strip_prefix(pointer).map(|rel| (rel.to_string(), *s)))
                .collect::<Vec<_>>()
        } else {
            Vec::new()
        };
        let span_count = self.span_count - mark.0;
        let nodes = span_count.max(1) + (self.expanded - mark.2);
        self.anchors.insert(
            anchor,
            Anchored {
                value: value.clone(),
                spans,
                span_count,
                aliases: self.aliases - mark.1,
                nodes,
                height,
                bytes: value_bytes(value),
            },
        );
    }

    /// Records that the innermost open node has a child `height` levels
    /// high.
    fn grow(&mut self, height: usize) {
        if let Some(parent) = self.stack.last_mut() {
            parent.child_height = parent.child_height.max(height);
        }
    }

    /// Expands alias `id` at `at`, counting it and the aliases inside it,
    /// and the depth it expands to: the open levels here plus the aliased
    /// node's height must stay within [`MAX_DEPTH`] (LIMIT at the alias).
    fn alias(&mut self, id: usize, at: LineCol) -> Result<(), Diagnostic> {
        if self.want.is_some() {
            // An alias copies the positions inside its anchor, which a
            // parse that keeps one path has not kept: the caller builds
            // the whole table instead.
            self.met_alias = true;
            return Err(parse_error(self.file, at, "an alias"));
        }
        let Some(a) = self.anchors.get(&id) else {
            return Err(parse_error(self.file, at, "an alias to an unknown anchor"));
        };
        self.aliases = self.aliases.saturating_add(1).saturating_add(a.aliases);
        self.expanded = self.expanded.saturating_add(a.nodes);
        self.expanded_bytes = self.expanded_bytes.saturating_add(a.bytes);
        let nodes = a.nodes;
        if self.expanded_bytes > self.alias_budget {
            return Err(Diagnostic::error(
                Code::Limit,
                format!(
                    "alias expansion would add {} bytes; aliases may add at most {} bytes \
                     to this file (its size plus 1 MiB)",
                    self.expanded_bytes, self.alias_budget
                ),
            )
            .in_file(self.file)
            .at_line_col(at.line, at.column));
        }
        if self.aliases > MAX_YAML_ALIASES || self.expanded > MAX_YAML_EXPANDED_NODES {
            return Err(Diagnostic::error(
                Code::Limit,
                format!(
                    "too many alias expansions (at most {MAX_YAML_ALIASES} per file, \
                     counting aliases inside aliased nodes, and {MAX_YAML_EXPANDED_NODES} nodes)"
                ),
            )
            .in_file(self.file)
            .at_line_col(at.line, at.column));
        }
        if self.stack.len().saturating_add(a.height) > MAX_DEPTH {
            return Err(Diagnostic::error(
                Code::Limit,
                format!(
                    "nesting deeper than {MAX_DEPTH} levels once the alias is expanded \
                     ({} levels here, {} in the aliased node)",
                    self.stack.len(),
                    a.height
                ),
            )
            .in_file(self.file)
            .at_line_col(at.line, at.column));
        }
        if self.expects_key() {
            return match &a.value {
                Value::String(s) => {
                    let s = s.clone();
                    self.key(s, at)
                }
                _ => Err(parse_error(self.file, at, "a mapping key must be a string")),
            };
        }
        let value = a.value.clone();
        let height = a.height;
        let inner_count = a.span_count.saturating_sub(1);
        let inner: Vec<_> = if self.record {
            a.spans
                .iter()
                .filter(|(rel, _)| !rel.is_empty())
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        self.count(nodes, at)?;
        if self.record {
            let (pointer, key) = self.slot();
            self.spans.insert(pointer.clone(), (at, key));
            for (rel, s) in inner {
                self.spans.insert(format!("{pointer}{rel}"), s);
            }
        }
        self.span_count += 1 + inner_count;
        self.attach(value, at);
        self.grow(height);
        Ok(())
    }
}

/// Resolves a plain scalar by the YAML 1.2 core schema: null, booleans,
/// decimal/octal (`0o`)/hex (`0x`) integers and floats; anything else is a
/// string. Numbers become JSON numbers from their text (`+1` → `1`, `.5` →
/// `0.5`, `0x1f` → `31`). `.inf` and `.nan` are errors: not JSON values.
#[cfg(test)]
pub fn resolve_plain(s: &str) -> Result<Value, String> {
    Ok(plain_non_string(s)?.unwrap_or_else(|| Value::String(s.to_string())))
}

/// [`resolve_plain`] for a scalar the parser handed over: a string takes
/// its text as [`owned`] gives it.
fn resolve_plain_cow(s: Cow<'_, str>) -> Result<Value, String> {
    Ok(plain_non_string(&s)?.unwrap_or_else(|| Value::String(owned(s))))
}

/// The text of a scalar the parser handed over, to keep in a value or key:
/// its own buffer when that is at most twice its length (or within a
/// small allocation's 24 bytes), else an exact copy. The parser reserves
/// 129 bytes for every plain scalar, and a document keeps what it holds
/// (Format 16.2: memory stays proportional to the text).
fn owned(s: Cow<'_, str>) -> String {
    match s {
        Cow::Owned(s) if s.capacity() <= s.len().saturating_mul(2).max(24) => s,
        s => String::from(&*s),
    }
}

/// What a plain scalar is by the core schema when it is not a string
/// ([`resolve_plain`]); `None` for a string.
fn plain_non_string(s: &str) -> Result<Option<Value>, String> {
    // Every null, boolean and number starts with one of these bytes: any
    // other first byte is a string's (most keys and words).
    if !matches!(
        s.as_bytes().first(),
        None | Some(
            b'0'..=b'9' | b'-' | b'+' | b'.' | b'~' | b'n' | b'N' | b't' | b'T' | b'f' | b'F'
        )
    ) {
        return Ok(None);
    }
    match s {
        "" | "~" | "null" | "Null" | "NULL" => return Ok(Some(Value::Null)),
        "true" | "True" | "TRUE" => return Ok(Some(Value::Bool(true))),
        "false" | "False" | "FALSE" => return Ok(Some(Value::Bool(false))),
        _ => {}
    }
    let unsigned = s.strip_prefix(['-', '+']).unwrap_or(s);
    if matches!(unsigned, ".inf" | ".Inf" | ".INF") || matches!(s, ".nan" | ".NaN" | ".NAN") {
        return Err(format!(
            "`{s}` (infinity or not-a-number) is not allowed: values must be JSON numbers"
        ));
    }
    let radix = |digits: &str, radix: u32| -> Result<Option<Value>, String> {
        u128::from_str_radix(digits, radix)
            .ok()
            .and_then(|n| n.to_string().parse::<Number>().ok())
            .map(|n| Some(Value::Number(n)))
            .ok_or_else(|| format!("the integer `{s}` is too large"))
    };
    if let Some(d) = s.strip_prefix("0o").filter(|d| is_digits(d, 8)) {
        return radix(d, 8);
    }
    if let Some(d) = s.strip_prefix("0x").filter(|d| is_digits(d, 16)) {
        return radix(d, 16);
    }
    if let Some(n) = plain_int(s) {
        return Ok(Some(Value::Number(n)));
    }
    match json_number_text(s) {
        Some(text) => text
            .parse::<Number>()
            .map(|n| Some(Value::Number(n)))
            .map_err(|e| format!("the number `{s}` cannot be read: {e}")),
        None => Ok(None),
    }
}

/// The number of a decimal integer already written as JSON writes it (`0`,
/// `-12`: no sign `+`, no leading zero, not `-0`) that fits an `i64`: the
/// same number [`json_number_text`] and a parse would give, without them.
fn plain_int(s: &str) -> Option<Number> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let canonical = match digits.as_bytes() {
        [b'0'] => digits.len() == s.len(),
        [b'1'..=b'9', rest @ ..] => rest.len() < 18 && rest.iter().all(u8::is_ascii_digit),
        _ => false,
    };
    canonical
        .then(|| s.parse::<i64>().ok().map(Number::from))
        .flatten()
}

fn is_digits(s: &str, radix: u32) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_digit(radix))
}

/// The JSON text of a core-schema decimal int or float
/// (`[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`), or `None` when
/// `s` is not one.
fn json_number_text(s: &str) -> Option<String> {
    let (neg, rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    let (int, frac) = match mantissa.split_once('.') {
        Some((i, f)) => (i, Some(f)),
        None => (mantissa, None),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let int_ok = !int.is_empty() && digits(int);
    let frac_ok = frac.is_none_or(|f| digits(f) && (int_ok || !f.is_empty()));
    if !(int_ok || (int.is_empty() && frac.is_some_and(|f| !f.is_empty()))) || !frac_ok {
        return None;
    }
    if let Some(e) = exp {
        let ed = e.strip_prefix(['-', '+']).unwrap_or(e);
        if ed.is_empty() || !digits(ed) {
            return None;
        }
    }
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let trimmed = int.trim_start_matches('0');
    out.push_str(if trimmed.is_empty() { "0" } else { trimmed });
    if let Some(f) = frac {
        out.push('.');
        out.push_str(if f.is_empty() { "0" } else { f });
    }
    if let Some(e) = exp {
        out.push('e');
        out.push_str(e);
    }
    Some(out)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_path_pass_gives_the_table_s_spans_of_the_path() {
        let text = "a: [1, {k: x}]\nb:\n  c: \"y\"\n  d: [2, 3]\n";
        let table = span_table(text);
        assert!(table.len() > 8);
        for (p, span) in &table {
            let path = spans_on_path(text, p).unwrap();
            assert_eq!(path.get(p), Some(span), "{p}");
            // Only the pointer and its ancestors.
            assert_eq!(path.len(), p.matches('/').count() + 1, "{p}: {path:?}");
        }
        // A YAML alias copies positions only the whole table keeps.
        assert!(spans_on_path("a: &x [1]\nb: *x\n", "/b/0").is_none());
    }

    use super::*;

    /// Format 2.4: a tab in an indentation is PARSE at the tab. By hand:
    /// the tab opens line 3 (column 1) in the first text, and follows two
    /// spaces (column 3) in the second; the scanner itself names `knead`
    /// (line 2) in the first.
    #[test]
    fn a_tab_in_an_indentation_is_reported_at_the_tab() {
        for (text, line, column) in [
            ("a:\n  - id: knead\n\tby: olga\n", 3, 1),
            ("a:\n  - id: knead\n  \tby: olga\n", 3, 3),
            ("a:\n\tb: 1\n", 2, 1),
        ] {
            let d = parse(text).unwrap_err();
            assert_eq!(d.code, Code::Parse, "{text:?}");
            assert_eq!(
                (d.location.line, d.location.column),
                (Some(line), Some(column)),
                "{text:?}: {d:?}"
            );
            assert!(
                d.message.contains("YAML is indented with spaces, not tabs"),
                "{text:?}: {}",
                d.message
            );
        }
    }

    fn parse(s: &str) -> Result<Document, Diagnostic> {
        parse_yaml_inner("f.yaml", s.as_bytes())
    }

    fn at(d: &Diagnostic) -> (Option<u32>, Option<u32>) {
        (d.location.line, d.location.column)
    }

    /// Issue 42: the indentation mistakes authors make get a plain
    /// sentence first, at the line that is indented wrong, and keep the
    /// parser's wording after it.
    #[test]
    fn indentation_errors_say_so_plainly_at_the_line() {
        let cases = [
            // A key indented less than its siblings in a list item.
            (
                "rules:\n  - id: a\n   keywords: [x]\n",
                3,
                "not indented like",
            ),
            // A key indented deeper than the one before it.
            (
                "a:\n  b: 1\n    c: 2\n",
                3,
                "indented deeper than the key before it",
            ),
            // A tab.
            ("a:\n\t- b\n", 2, "spaces, not tabs"),
        ];
        for (text, line, says) in cases {
            let d = parse(text).unwrap_err();
            assert_eq!(d.code, Code::Parse, "{text:?}");
            assert_eq!(d.location.line, Some(line), "{text:?}: {}", d.message);
            assert!(d.message.contains(says), "{text:?}: {}", d.message);
            assert!(d.message.contains("the parser says"), "{}", d.message);
        }
    }

    #[test]
    fn core_schema_scalars() {
        let n = |s: &str| resolve_plain(s).unwrap().to_string();
        assert_eq!(n("12345678901234567.89"), "12345678901234567.89");
        assert_eq!(n("+12"), "12");
        assert_eq!(n("007"), "7");
        assert_eq!(n("-0"), "-0");
        assert_eq!(n(".5"), "0.5");
        assert_eq!(n("5."), "5.0");
        // Exponents read exactly as the same JSON text would.
        let json = |s: &str| serde_json::from_str::<Value>(s).unwrap().to_string();
        assert_eq!(n("1e3"), json("1e3"));
        assert_eq!(n("+1.5E-2"), json("1.5E-2"));
        assert_eq!(n("0o17"), "15");
        assert_eq!(n("0x1F"), "31");
        assert_eq!(n("~"), "null");
        assert_eq!(n("True"), "true");
        for s in [
            "yes", "on", "1.2.3", "0x", "0o8", "1e", ".", "-", "1_000", "+.e1", "12a",
        ] {
            assert_eq!(resolve_plain(s).unwrap(), Value::String(s.into()), "{s}");
        }
        for s in [".inf", "-.Inf", "+.INF", ".nan", ".NaN"] {
            assert!(resolve_plain(s).is_err(), "{s}");
        }
    }

    /// The integer shortcut gives the number the general path gives, and
    /// leaves to it every text it would write differently.
    #[test]
    fn plain_ints_as_the_number_path_reads_them() {
        for s in [
            "0",
            "7",
            "-12",
            "100",
            "999999999999999999",
            "-999999999999999999",
        ] {
            let general: Number = json_number_text(s).unwrap().parse().unwrap();
            assert_eq!(plain_int(s), Some(general), "{s}");
        }
        for s in [
            "-0",
            "+1",
            "007",
            "1.0",
            "1e3",
            "",
            "-",
            "1000000000000000000",
            "12a",
        ] {
            assert_eq!(plain_int(s), None, "{s}");
        }
    }

    #[test]
    fn spans_for_values_and_keys() {
        let doc = parse("a:\n  - x\n  - {b: 2}\nc: 'q'\n").unwrap();
        let e = doc.spans.entries();
        let l = |line, column| LineCol { line, column };
        assert_eq!(e["/a"].1, Some(l(1, 1)));
        assert_eq!(e["/a/0"], (l(2, 5), None));
        assert_eq!(e["/a/1"].0, l(3, 5));
        assert_eq!(e["/a/1/b"], (l(3, 9), Some(l(3, 6))));
        assert_eq!(e["/c"], (l(4, 4), Some(l(4, 1))));
        assert_eq!(doc.value["a"][1]["b"].to_string(), "2");
        assert_eq!(doc.value["c"], "q");
    }

    #[test]
    fn duplicate_key_at_second() {
        let d = parse("a: 1\nb:\n  x: 1\n  x: 2\n").unwrap_err();
        assert_eq!(d.code, Code::Parse);
        assert_eq!(at(&d), (Some(4), Some(3)));
        assert_eq!(d.location.pointer.as_deref(), Some("/b/x"));
        // The pointer is rebuilt from the open nodes: list items, escaped
        // keys, flow collections, and a mapping past its first 16 members.
        let many: String = (0..20).map(|i| format!("  k{i}: {i}\n")).collect();
        for (src, pointer) in [
            ("a:\n  - x\n  - y: 1\n    y: 2\n", "/a/1/y"),
            ("a/b:\n  c~d: [{e: 1, e: 2}]\n", "/a~1b/c~0d/0/e"),
            (&*format!("m:\n{many}  k3: 0\n"), "/m/k3"),
        ] {
            let d = parse(src).unwrap_err();
            assert_eq!(d.location.pointer.as_deref(), Some(pointer), "{src}");
            assert!(d.message.contains("duplicate key"), "{src}");
        }
    }

    #[test]
    fn non_string_keys() {
        for (src, line_col) in [
            ("a: 1\n1: x\n", (2, 1)),
            ("true: x\n", (1, 1)),
            ("? [a]\n: x\n", (1, 3)),
            ("null: 1\n", (1, 1)),
        ] {
            let d = parse(src).unwrap_err();
            assert_eq!(d.code, Code::Parse, "{src}");
            assert_eq!(at(&d), (Some(line_col.0), Some(line_col.1)), "{src}");
        }
        assert!(parse("'1': x\n\"true\": y\n").is_ok());
    }

    #[test]
    fn aliases_expand_with_spans() {
        let doc = parse("a: &x {k: [1, 2]}\nb: *x\n").unwrap();
        assert_eq!(doc.value["b"]["k"][1].to_string(), "2");
        assert_eq!(doc.spans.entries()["/b"].0, LineCol { line: 2, column: 4 });
        assert_eq!(
            doc.spans.entries()["/b/k/1"].0,
            LineCol {
                line: 1,
                column: 15
            }
        );
    }

    #[test]
    fn value_budget() {
        // A flow list of 200,000 one-digit numbers in 600 KB is over
        // 65,536 + 600,000 / 8 values.
        let text = format!("a: [{}1]\n", "1, ".repeat(200_000));
        assert_eq!(parse(&text).unwrap_err().code, Code::Limit);
        let text = format!("a: [{}1]\n", "1, ".repeat(60_000));
        assert!(parse(&text).is_ok());
    }

    #[test]
    fn top_level_must_be_mapping() {
        for src in ["- 1\n", "3\n", "", "# only a comment\n"] {
            assert_eq!(parse(src).unwrap_err().code, Code::Parse, "{src:?}");
        }
        assert_eq!(parse("a: 1\n---\nb: 2\n").unwrap_err().code, Code::Parse);
    }

    #[test]
    fn inf_in_value_is_parse_at_value() {
        let d = parse("a:\n  x: .inf\n").unwrap_err();
        assert_eq!((d.code, at(&d)), (Code::Parse, (Some(2), Some(6))));
    }
}
