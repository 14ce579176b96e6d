//! Session files (`.jsonl`) → a header and messages (Format 2.1, 12.1).

use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

use crate::diag::{Code, Diagnostic};

use super::document::Document;
use super::json::{check_json_at, parse_json_at};
use super::limits::MAX_JSONL_LINE_BYTES;
use super::loaded::Loaded;
use super::text::{check_size, read_bounded};

/// A session file read line by line (Format 12.1).
///
/// The header is held parsed; the message lines are not. A session read
/// from text keeps the file's text once and, for each message line that
/// parsed, its line number and byte range (12 bytes a line): each message is
/// parsed again when [`SessionDoc::messages`] reaches it and dropped after
/// use, so checking or replaying a session never holds all its lines as
/// JSON values (Format 16.2: a JSON value costs about 25 times the text of
/// a small message).
#[derive(Debug, Clone)]
pub struct SessionDoc {
    /// The file name as shown in diagnostics.
    pub file: String,
    /// Line 1, when it parsed.
    pub header: Option<Document>,
    messages: Messages,
}

#[derive(Debug, Clone)]
enum Messages {
    /// Message lines of `text` (the whole file) that parsed.
    Lines { text: Arc<str>, lines: Vec<Line> },
    /// Documents built in memory.
    Documents(Vec<Document>),
}

/// A message line that parsed: its 1-based number and its bytes in the
/// file (a session file is at most 64 MiB, so offsets fit in `u32`).
#[derive(Debug, Clone, Copy)]
struct Line {
    number: u32,
    start: u32,
    end: u32,
}

impl SessionDoc {
    /// A session of documents built in memory (values with no source text).
    pub fn from_documents(
        file: impl Into<String>,
        header: Option<Document>,
        messages: Vec<Document>,
    ) -> SessionDoc {
        SessionDoc {
            file: file.into(),
            header,
            messages: Messages::Documents(messages),
        }
    }

    /// The number of message lines that parsed.
    pub fn len(&self) -> usize {
        match &self.messages {
            Messages::Lines { lines, .. } => lines.len(),
            Messages::Documents(d) => d.len(),
        }
    }

    /// True when no message line parsed.
    #[cfg(any(test, feature = "internals"))]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The messages that parsed, in file order. Each document's `text` is
    /// its own line, `first_line` is that line's 1-based number, and its
    /// spans use lines of the file. A session read from text parses each
    /// line again here (it parsed when the file was read, so it parses
    /// now): iterate once and drop each document after use.
    pub fn messages(&self) -> impl Iterator<Item = Cow<'_, Document>> + '_ {
        let (text, lines, docs) = match &self.messages {
            Messages::Lines { text, lines } => (Some(text), &lines[..], &[][..]),
            Messages::Documents(d) => (None, &[][..], &d[..]),
        };
        let parsed = lines.iter().filter_map(move |l| {
            let bytes = text?.as_bytes().get(l.start as usize..l.end as usize)?;
            parse_json_at(&self.file, bytes, l.number)
                .ok()
                .map(Cow::Owned)
        });
        parsed.chain(docs.iter().map(Cow::Borrowed))
    }

    /// The whole file's text, for a session read from text (for quoting
    /// lines in human output).
    pub fn text(&self) -> Option<&Arc<str>> {
        match &self.messages {
            Messages::Lines { text, .. } => Some(text),
            Messages::Documents(_) => None,
        }
    }
}

/// Reads a session from bytes (Format 2.1, 12.1). The whole file is bounded
/// at 64 MiB (LIMIT, nothing read). Then each line is read on its own, so a
/// bad line costs only itself: a line that is not one JSON object (a
/// truncated last line, a BOM, invalid UTF-8, a duplicate key) or is longer
/// than 16 MiB gives its diagnostic with pointer `line:N` (N 1-based; a
/// pointer inside the line is appended, as in `line:3/parts/0`) and its line
/// and column, and is skipped; earlier and later lines are still returned. A
/// `\r\n` ending is accepted; an empty line is PARSE, except that the file
/// may end with one newline.
pub fn parse_session(file: &str, bytes: &[u8]) -> Loaded<SessionDoc> {
    if let Some(d) = check_size(file, bytes.len() as u64) {
        return Loaded::fail(d);
    }
    // One entry per line: counting lines first avoids growing (and
    // copying, and over-allocating) the list of a session of a million lines.
    let count = memchr::memchr_iter(b'\n', bytes).count();
    let mut header = None;
    let mut lines = Vec::with_capacity(count);
    let mut diagnostics = Vec::new();
    if bytes.is_empty() {
        diagnostics.push(
            Diagnostic::error(
                Code::Parse,
                "the session file is empty; line 1 must be its header",
            )
            .in_file(file)
            .at("line:1")
            .at_line_col(1, 1),
        );
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let mut start = 0usize;
    for (i, raw) in split_lines(body).enumerate() {
        let from = start;
        start += raw.len() + 1;
        if bytes.is_empty() {
            break;
        }
        let n = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let result = if let Some(d) = line_bounds(file, line, n) {
            Err(d)
        } else if n == 1 {
            parse_json_at(file, line, n).map(|doc| header = Some(doc))
        } else {
            // Checked now, parsed again when used (see `SessionDoc`).
            check_json_at(file, line, n).map(|()| {
                lines.push(Line {
                    number: n,
                    start: u32::try_from(from).unwrap_or(u32::MAX),
                    end: u32::try_from(from + line.len()).unwrap_or(u32::MAX),
                });
            })
        };
        if let Err(mut d) = result {
            at_line(&mut d, n);
            if n == 1 {
                d.message = format!("header line: {}", d.message).into();
            }
            diagnostics.push(d);
        }
    }
    // Every line decoded (else ENCODING stops the file below), so the file
    // is UTF-8; the lossy conversion only ever copies.
    let text: Arc<str> = if diagnostics.iter().any(|d| d.code == Code::Encoding) {
        Arc::from("")
    } else {
        Arc::from(String::from_utf8_lossy(bytes))
    };
    stop_rules(Loaded {
        value: Some(SessionDoc {
            file: file.to_string(),
            header,
            messages: Messages::Lines { text, lines },
        }),
        diagnostics,
    })
}

/// An empty line (PARSE) or one longer than 16 MiB (LIMIT), as line `n`
/// (Format 2.1, 16); `line` is without its line ending.
fn line_bounds(file: &str, line: &[u8], n: u32) -> Option<Diagnostic> {
    if line.is_empty() {
        Some(
            Diagnostic::error(
                Code::Parse,
                "an empty line; every line must be one JSON object",
            )
            .in_file(file)
            .at_line_col(n, 1),
        )
    } else if line.len() > MAX_JSONL_LINE_BYTES {
        Some(
            Diagnostic::error(
                Code::Limit,
                format!(
                    "the line is {} bytes; the limit is {MAX_JSONL_LINE_BYTES} bytes (16 MiB)",
                    line.len()
                ),
            )
            .in_file(file)
            .at_line_col(n, 1),
        )
    } else {
        None
    }
}

/// Locates a diagnostic of line `n` at `line:<n>` (a pointer inside the
/// line appended, as in `line:3/parts/0`).
fn at_line(d: &mut Diagnostic, n: u32) {
    let inner = d.location.pointer.take().unwrap_or_default();
    d.location.pointer = Some(format!("line:{n}{inner}"));
}

/// Reads message lines appended to a session file whose first `before`
/// lines (the header included) are `before_bytes` bytes long, as
/// [`parse_session`] reads the lines of the whole file (Format 2.1, 12.1,
/// 16.2): the whole file is bounded at 64 MiB and each line read on its own,
/// numbered as a line of the whole file. `bytes` holds whole lines (the
/// last one may lack its `\n`). ENCODING and LIMIT stop every other check
/// (Format 17.1): only that diagnostic is returned, with no message.
pub fn parse_appended(
    file: &str,
    before: u32,
    before_bytes: usize,
    bytes: &[u8],
) -> (Vec<Document>, Vec<Diagnostic>) {
    if let Some(d) = check_size(file, (before_bytes + bytes.len()) as u64) {
        return (Vec::new(), vec![d]);
    }
    let mut docs = Vec::new();
    let mut diagnostics = Vec::new();
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if !bytes.is_empty() {
        for (i, raw) in split_lines(body).enumerate() {
            let n = before.saturating_add(u32::try_from(i + 1).unwrap_or(u32::MAX));
            let line = raw.strip_suffix(b"\r").unwrap_or(raw);
            let result = match line_bounds(file, line, n) {
                Some(d) => Err(d),
                None => parse_json_at(file, line, n),
            };
            match result {
                Ok(doc) => docs.push(doc),
                Err(mut d) => {
                    at_line(&mut d, n);
                    diagnostics.push(d);
                }
            }
        }
    }
    let first = |code: Code| diagnostics.iter().find(|d| d.code == code).cloned();
    if let Some(d) = first(Code::Encoding).or_else(|| first(Code::Limit)) {
        return (Vec::new(), vec![d]);
    }
    (docs, diagnostics)
}

/// Format 17.1: ENCODING and LIMIT anywhere in the file, a header line that
/// does not parse, and an unsupported header version each stop every other
/// check of the file — only that diagnostic is kept and no session is read.
fn stop_rules(loaded: Loaded<SessionDoc>) -> Loaded<SessionDoc> {
    let first = |code: Code| loaded.diagnostics.iter().find(|d| d.code == code).cloned();
    if let Some(d) = first(Code::Encoding).or_else(|| first(Code::Limit)) {
        return Loaded::fail(d);
    }
    if let Some(d) = loaded.diagnostics.iter().find(|d| {
        d.code == Code::Parse
            && d.location
                .pointer
                .as_deref()
                .is_some_and(|p| p == "line:1" || p.starts_with("line:1/"))
    }) {
        return Loaded::fail(d.clone());
    }
    let header = loaded.value.as_ref().and_then(|s| s.header.as_ref());
    if let Some(d) = header.and_then(|h| super::version::check_version(h, "troupe", "header")) {
        return Loaded::fail(d);
    }
    loaded
}

/// `bytes` split at every `\n` (as `split`, without a per-byte loop).
fn split_lines(bytes: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut start = 0usize;
    let mut ends = memchr::memchr_iter(b'\n', bytes);
    let mut done = false;
    std::iter::from_fn(move || {
        if done {
            return None;
        }
        let from = start;
        match ends.next() {
            Some(end) => {
                start = end + 1;
                bytes.get(from..end)
            }
            None => {
                done = true;
                bytes.get(from..)
            }
        }
    })
}

/// Reads a session file: its size is checked from metadata before reading
/// (LIMIT), then [`parse_session`]. The file is named as `path` displays.
pub fn read_session(path: &Path) -> Loaded<SessionDoc> {
    let file = path.display().to_string();
    match read_bounded(&file, path) {
        Ok(bytes) => parse_session(&file, &bytes),
        Err(d) => Loaded::fail(d),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_messages_and_crlf() {
        let l = parse_session(
            "s.jsonl",
            b"{\"troupe\":\"0.1\"}\r\n{\"id\":\"m1\"}\r\n{\"id\":\"m2\"}",
        );
        assert!(l.diagnostics.is_empty(), "{:?}", l.diagnostics);
        let s = l.value.unwrap();
        let messages: Vec<_> = s.messages().collect();
        assert_eq!(s.header.as_ref().unwrap().value["troupe"], "0.1");
        assert_eq!(messages.len(), 2);
        assert_eq!(messages[1].first_line, 3);
        assert_eq!(messages[1].spans.entries()["/id"].0.line, 3);
        assert_eq!(&*messages[0].text, "{\"id\":\"m1\"}");
        assert_eq!(messages[1].value["id"], "m2");
    }

    #[test]
    fn bad_lines_are_skipped_with_their_line() {
        let src = b"{\"troupe\":\"0.1\"}\n{\"id\":1}\n\n{\"id\":2,\"id\":3}\n{\"id\":4}\n{\"id\":";
        let l = parse_session("s.jsonl", src);
        let s = l.value.unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s.messages().nth(1).unwrap().first_line, 5);
        let got: Vec<_> = l
            .diagnostics
            .iter()
            .map(|d| {
                (
                    d.code,
                    d.location.pointer.clone().unwrap(),
                    d.location.line.unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                (Code::Parse, "line:3".to_string(), 3),
                (Code::Parse, "line:4/id".to_string(), 4),
                (Code::Parse, "line:6".to_string(), 6),
            ]
        );
    }

    #[test]
    fn one_final_newline_only() {
        assert!(parse_session("s", b"{}\n").diagnostics.is_empty());
        let l = parse_session("s", b"{}\n\n");
        assert_eq!(l.diagnostics.len(), 1);
        assert_eq!(l.diagnostics[0].location.line, Some(2));
        assert_eq!(parse_session("s", b"").diagnostics[0].code, Code::Parse);
    }

    #[test]
    fn an_encoding_error_stops_the_file() {
        // Format 2.1, 17.1: nothing else in the file is checked.
        let l = parse_session("s", b"\xEF\xBB\xBF{}\n{\"a\":1\n");
        assert_eq!(l.diagnostics.len(), 1);
        assert_eq!(l.diagnostics[0].code, Code::Encoding);
        assert!(l.value.is_none());
    }

    #[test]
    fn a_bad_message_line_does_not_stop_the_file() {
        let l = parse_session("s", b"{}\n{\"a\":1\n{\"b\":2}\n");
        assert_eq!(l.diagnostics.len(), 1);
        assert_eq!(l.value.unwrap().len(), 1);
    }
}
