//! Writing a run's session file (Format 18.8): Troupe JSON lines, each
//! written whole with its `\n` and flushed to the operating system before
//! the turn result is returned.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde_json::{Map, Value};

/// One message line's fields, in the order Format 18.8 writes them.
#[derive(Debug, Clone, Default)]
pub struct MessageLine<'a> {
    /// `id`.
    pub id: &'a str,
    /// `parent`.
    pub parent: Option<&'a str>,
    /// `opening`.
    pub opening: Option<&'a str>,
    /// `author`.
    pub author: &'a str,
    /// The text of each part (`{"type": "text", "text"}`).
    pub parts: Vec<&'a str>,
    /// The changes as written.
    pub changes: &'a [Value],
    /// The settings a host changed (Format 8.9), as given.
    pub settings: Option<&'a Value>,
    /// The firings: `("event" | "outcome", id)`.
    pub firings: Vec<(&'static str, &'a str)>,
}

/// Troupe JSON (Format 18.8) of a value whose maps are already in the
/// order to write: see [`crate::model::json::troupe_json`].
pub fn troupe_json(v: &Value) -> String {
    crate::model::json::troupe_json(v)
}

impl MessageLine<'_> {
    /// The line, without its `\n`.
    pub fn to_json(&self) -> String {
        let mut m = Map::new();
        m.insert("id".into(), self.id.into());
        if let Some(p) = self.parent {
            m.insert("parent".into(), p.into());
        }
        if let Some(o) = self.opening {
            m.insert("opening".into(), o.into());
        }
        m.insert("author".into(), self.author.into());
        if !self.parts.is_empty() {
            let parts = self
                .parts
                .iter()
                .map(|t| {
                    let mut p = Map::new();
                    p.insert("type".into(), "text".into());
                    p.insert("text".into(), (*t).into());
                    Value::Object(p)
                })
                .collect();
            m.insert("parts".into(), Value::Array(parts));
        }
        if !self.changes.is_empty() {
            m.insert("changes".into(), Value::Array(self.changes.to_vec()));
        }
        if let Some(s) = self.settings {
            m.insert("settings".into(), s.clone());
        }
        if !self.firings.is_empty() {
            let f = self
                .firings
                .iter()
                .map(|(k, id)| {
                    let mut o = Map::new();
                    o.insert((*k).into(), (*id).into());
                    Value::Object(o)
                })
                .collect();
            m.insert("firings".into(), Value::Array(f));
        }
        troupe_json(&Value::Object(m))
    }
}

/// The lines of a session so far, and the file they go to.
#[derive(Debug, Default)]
pub struct SessionWriter {
    file: Option<File>,
    text: String,
    /// Keeps nothing (a branch of a search, Format 20.5): lines are not
    /// even built.
    discard: bool,
}

impl SessionWriter {
    /// A writer keeping the lines in memory only.
    pub fn memory() -> SessionWriter {
        SessionWriter::default()
    }

    /// A writer that keeps nothing: the session of a search branch
    /// (Format 20.5), whose text nobody reads.
    pub fn discard() -> SessionWriter {
        SessionWriter {
            discard: true,
            ..SessionWriter::default()
        }
    }

    /// Whether lines are kept or written at all.
    pub fn keeps(&self) -> bool {
        !self.discard
    }

    /// A writer that also writes to `path` (created or truncated).
    pub fn create(path: &Path) -> std::io::Result<SessionWriter> {
        Ok(SessionWriter {
            file: Some(File::create(path)?),
            text: String::new(),
            discard: false,
        })
    }

    /// Writes one line whole, with its `\n`, and flushes it.
    pub fn line(&mut self, line: &str) -> std::io::Result<()> {
        if self.discard {
            return Ok(());
        }
        let mut bytes = String::with_capacity(line.len() + 1);
        bytes.push_str(line);
        bytes.push('\n');
        if let Some(f) = &mut self.file {
            f.write_all(bytes.as_bytes())?;
            f.flush()?;
        }
        self.text.push_str(&bytes);
        Ok(())
    }

    /// The session text written so far.
    pub fn text(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_as_format_18_8_says() {
        // Derived from 18.8: `"` and `\` escaped, U+0001 as \u0001, tab as
        // \t, `/` and non-ASCII as they are.
        let v = Value::String("a\"b\\c\u{1}\t/é".into());
        assert_eq!(troupe_json(&v), r#""a\"b\\c\u0001\t/é""#);
        let line = MessageLine {
            id: "m2",
            parent: Some("m1"),
            author: "player",
            parts: vec!["Is this cheap?"],
            ..Default::default()
        };
        assert_eq!(
            line.to_json(),
            r#"{"id":"m2","parent":"m1","author":"player","parts":[{"type":"text","text":"Is this cheap?"}]}"#
        );
    }
}
