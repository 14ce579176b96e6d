//! Writing a run's session file (Format 18.8): Troupe JSON lines, each
//! written whole with its `\n` and flushed to the operating system before
//! the turn result is returned.

use std::fs::File;
use std::io::Write;
use std::path::Path;

use serde_json::Value;

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
    /// `chosen` (Format 18.9): `why`, `name`, `draw`.
    pub chosen: Option<(&'a str, Option<&'a str>, Option<u64>)>,
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
    /// The line, without its `\n`: the members in the order above, each
    /// written only when present (the bytes of
    /// [`troupe_json`] of the same object).
    pub fn to_json(&self) -> String {
        use crate::model::json::{write_string, write_value};
        let mut out =
            Vec::with_capacity(64 + self.parts.iter().map(|p| p.len() + 32).sum::<usize>());
        let member = |out: &mut Vec<u8>, key: &str| {
            out.push(if out.is_empty() { b'{' } else { b',' });
            write_string(key, out);
            out.push(b':');
        };
        member(&mut out, "id");
        write_string(self.id, &mut out);
        if let Some(p) = self.parent {
            member(&mut out, "parent");
            write_string(p, &mut out);
        }
        if let Some(o) = self.opening {
            member(&mut out, "opening");
            write_string(o, &mut out);
        }
        member(&mut out, "author");
        write_string(self.author, &mut out);
        if let Some((why, name, draw)) = self.chosen {
            member(&mut out, "chosen");
            out.extend_from_slice(br#"{"why":"#);
            write_string(why, &mut out);
            if let Some(n) = name {
                out.extend_from_slice(br#","name":"#);
                write_string(n, &mut out);
            }
            if let Some(d) = draw {
                out.extend_from_slice(format!(r#","draw":{d}"#).as_bytes());
            }
            out.push(b'}');
        }
        if !self.parts.is_empty() {
            member(&mut out, "parts");
            for (i, t) in self.parts.iter().enumerate() {
                out.extend_from_slice(if i == 0 { b"[" } else { b"," });
                out.extend_from_slice(br#"{"type":"text","text":"#);
                write_string(t, &mut out);
                out.push(b'}');
            }
            out.push(b']');
        }
        if !self.changes.is_empty() {
            member(&mut out, "changes");
            for (i, c) in self.changes.iter().enumerate() {
                out.push(if i == 0 { b'[' } else { b',' });
                write_value(c, &mut out);
            }
            out.push(b']');
        }
        if let Some(s) = self.settings {
            member(&mut out, "settings");
            write_value(s, &mut out);
        }
        if !self.firings.is_empty() {
            member(&mut out, "firings");
            for (i, (k, id)) in self.firings.iter().enumerate() {
                out.extend_from_slice(if i == 0 { b"[{" } else { b",{" });
                write_string(k, &mut out);
                out.push(b':');
                write_string(id, &mut out);
                out.push(b'}');
            }
            out.push(b']');
        }
        out.push(b'}');
        crate::model::json::into_string(out)
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

    /// A writer that goes on after `text`, the lines of a session being
    /// resumed (Format 18.10), kept byte for byte (a last line without its
    /// `\n` gets one). With `path`, the file there is created or truncated
    /// and `text` written to it first.
    pub fn resumed(mut text: String, path: Option<&Path>) -> std::io::Result<SessionWriter> {
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let file = match path {
            Some(p) => {
                let mut f = File::create(p)?;
                f.write_all(text.as_bytes()).and_then(|()| f.flush())?;
                Some(f)
            }
            None => None,
        };
        Ok(SessionWriter {
            file,
            text,
            discard: false,
        })
    }

    /// Writes one line whole, with its `\n`, and flushes it.
    pub fn line(&mut self, line: &str) -> std::io::Result<()> {
        if self.discard {
            return Ok(());
        }
        if self.text.capacity() == 0 {
            // Room for a short session's lines in one allocation.
            self.text.reserve(4096.max(line.len() + 1));
        }
        let start = self.text.len();
        self.text.push_str(line);
        self.text.push('\n');
        if let Some(f) = &mut self.file {
            // One write per line: a killed process leaves complete lines.
            if let Err(e) = f
                .write_all(&self.text.as_bytes()[start..])
                .and_then(|()| f.flush())
            {
                // A line that did not reach the file is not kept either.
                self.text.truncate(start);
                return Err(e);
            }
        }
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

    #[test]
    fn every_member_in_order_with_numbers_normalized() {
        // Format 18.8: members in the order id, parent, opening, author,
        // chosen, parts, changes, settings, firings; decimals plain (10.4).
        let changes = [serde_json::json!({"op": "add", "path": "state.trust", "value": 5.50})];
        let settings = serde_json::json!({"difficulty": "hard", "n": 1e2});
        let line = MessageLine {
            id: "m\u{1}",
            parent: Some("m0"),
            opening: Some("o"),
            author: "npc.bob",
            parts: vec!["a", "b\n\""],
            changes: &changes,
            settings: Some(&settings),
            firings: vec![("event", "e1"), ("outcome", "deal")],
            chosen: Some(("drawn", Some("@Bo"), Some(7))),
        };
        assert_eq!(
            line.to_json(),
            concat!(
                r#"{"id":"m\u0001","parent":"m0","opening":"o","author":"npc.bob","#,
                r#""chosen":{"why":"drawn","name":"@Bo","draw":7},"#,
                r#""parts":[{"type":"text","text":"a"},{"type":"text","text":"b\n\""}],"#,
                r#""changes":[{"op":"add","path":"state.trust","value":5.5}],"#,
                r#""settings":{"difficulty":"hard","n":100},"#,
                r#""firings":[{"event":"e1"},{"outcome":"deal"}]}"#
            )
        );
    }
}
