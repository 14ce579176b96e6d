//! Re-playing a recorded session's player inputs under the current rules
//! (Format 21.5 step 3): which sessions can be re-played, the turns of a
//! session as a reviewer reads them (input, reply, changes, firings,
//! state), and the comparison of the recording with the re-play.

use serde_json::Value;

use crate::engine::Engine;
use crate::model::{FiringRecord, Message, Part};

/// The fields a runtime writes on a message line (Format 18.8).
const RUNTIME_FIELDS: &[&str] = &[
    "id", "parent", "opening", "author", "chosen", "parts", "changes", "firings",
];

/// What a recorded step did: the player typed a line, or the host changed
/// the settings (Format 8.9).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Act {
    /// The input as typed (the part's text with 18.5's escape undone).
    Say(String),
    /// The settings message's `settings`, as written.
    Settings(Value),
}

/// One recorded step: an input (or a host's settings change) and the ID
/// of the message it follows (its parent), if any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Input {
    /// What the step did.
    pub act: Act,
    /// The recorded parent's ID.
    pub parent: Option<String>,
    /// The recorded input (or settings) message's ID.
    pub id: String,
    /// The ID of the turn's last recorded reply (Format 18.9: a turn may
    /// have several), when the next line answers the input.
    pub answer: Option<String>,
}

/// The fields a runtime writes on a settings message (Format 8.9).
const SETTINGS_FIELDS: &[&str] = &["id", "parent", "author", "settings", "firings"];

/// The inputs of a session written the way a runtime writes one (Format
/// 18.4, 18.5, 18.8, and the host's settings messages of 8.9), in file
/// order, or why it was not (a hand-written session: fields a runtime
/// never writes, a player message with changes, a second root, …).
/// Players are the header's `players`.
pub fn inputs(messages: &[Value], players: &[String]) -> Result<Vec<Input>, String> {
    let mut out = Vec::new();
    let is_player = |m: &Message<'_>| m.author.is_some_and(|a| players.iter().any(|p| p == a));
    let lines: Vec<Message<'_>> = messages.iter().map(Message::read).collect();
    for (i, m) in lines.iter().enumerate() {
        let id = m.id.unwrap_or("");
        let parent = m.parent;
        if let Some(settings) = m.settings {
            if let Some(k) = m.fields().find(|k| !SETTINGS_FIELDS.contains(k)) {
                return Err(format!(
                    "settings message {id} has `{k}`, which a runtime never writes there"
                ));
            }
            if m.author != Some("narrator") {
                return Err(format!(
                    "settings message {id} is not by the narrator, as a runtime writes it"
                ));
            }
            if parent.is_none() && i > 0 {
                return Err(format!("message {id} is a second root"));
            }
            out.push(Input {
                act: Act::Settings(settings.clone()),
                parent: parent.map(str::to_string),
                id: id.to_string(),
                answer: None,
            });
            continue;
        }
        if let Some(k) = m.fields().find(|k| !RUNTIME_FIELDS.contains(k)) {
            return Err(format!(
                "message {id} has `{k}`, which a runtime never writes"
            ));
        }
        if parent.is_none() && i > 0 {
            return Err(format!("message {id} is a second root"));
        }
        if i == 0 && m.opening.is_some() {
            if m.parts.is_some() || m.changes.is_some() {
                return Err(format!(
                    "the root {id} has its own parts or changes, which a runtime never writes"
                ));
            }
            continue;
        }
        if is_player(m) {
            if m.changes.is_some() {
                return Err(format!(
                    "player message {id} has changes, which a runtime's inputs never have"
                ));
            }
            let text = match m.parts.unwrap_or_default() {
                [p] => Some(Part::read(p))
                    .filter(|p| p.audience.is_none())
                    .and_then(|p| p.text),
                _ => None,
            };
            let Some(text) = text else {
                return Err(format!(
                    "player message {id} is not one text part, as a runtime writes an input"
                ));
            };
            out.push(Input {
                act: Act::Say(unescape(text)),
                parent: parent.map(str::to_string),
                id: id.to_string(),
                answer: None,
            });
        } else {
            // The reply to the input on the line before it, or a further
            // reply (Format 18.9) to the reply on the line before it.
            let prev = i.checked_sub(1).and_then(|p| lines[p].id);
            let turn_end = out
                .last()
                .filter(|l| matches!(l.act, Act::Say(_)))
                .map(|l| l.answer.as_deref().unwrap_or(&l.id));
            if prev.is_none() || prev != parent || prev != turn_end {
                return Err(format!(
                    "message {id} is not a reply to the line before it (its turn's input or reply)"
                ));
            }
            if let Some(last) = out.last_mut() {
                last.answer = Some(id.to_string());
            }
        }
    }
    if !out.iter().any(|i| matches!(i.act, Act::Say(_))) {
        return Err("the session has no player input".into());
    }
    Ok(out)
}

/// Undoes the escape of Format 18.5 step 1: `\\` is `\` and `\{{` is `{{`.
pub fn unescape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('\\') {
            out.push('\\');
            rest = r;
        } else if let Some(r) = after.strip_prefix("{{") {
            out.push_str("{{");
            rest = r;
        } else {
            out.push('\\');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

fn firing_ids(m: &Message<'_>) -> String {
    let ids: Vec<&str> = m
        .firings()
        .flatten()
        .map(|f| match f {
            FiringRecord::Event(id) | FiringRecord::Outcome(id) => id,
        })
        .collect();
    format!("[{}]", ids.join(", "))
}

fn state_text(engine: &Engine, m: u32) -> String {
    engine
        .flatten(&engine.state_at(m))
        .iter()
        .map(|(k, v)| format!("{k} = {v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A session's turns as a reviewer reads them, one block per turn in file
/// order (message IDs left out, so that a turn that now writes one
/// message less does not make every later line differ): the opening's
/// firings, then for each input its text, each reply (rendered) with its
/// changes as written — and who said it (author and `chosen`, Format 18.9)
/// when it records `chosen` or is not the turn's first —, the turn's
/// firings and the flattened state at the turn's last message; a host's
/// settings change (Format 8.9) is a block of its settings as written, its
/// firings and the state there.
pub fn turns_text(engine: &Engine, messages: &[Value], players: &[String]) -> String {
    let mut out = String::new();
    let is_player = |m: &Message<'_>| m.author.is_some_and(|a| players.iter().any(|p| p == a));
    let messages: Vec<Message<'_>> = messages.iter().map(Message::read).collect();
    let mut n = 0;
    for (i, m) in messages.iter().enumerate() {
        if let (0, Some(opening)) = (i, m.opening) {
            out.push_str(&format!(
                "opening {opening}\n  firings: {}\n  state: {}\n",
                firing_ids(m),
                state_text(engine, 0)
            ));
            continue;
        }
        if let Some(settings) = m.settings {
            out.push_str(&format!(
                "settings {}\n  firings: {}\n  state: {}\n",
                crate::runtime::session_writer::troupe_json(settings),
                firing_ids(m),
                state_text(engine, i as u32)
            ));
            continue;
        }
        if !is_player(m) {
            continue;
        }
        n += 1;
        // The turn's replies: the lines that answer the line before them.
        let mut last = i;
        while messages.get(last + 1).is_some_and(|a| {
            // A settings message (Format 8.9) is no reply.
            !is_player(a) && a.settings.is_none() && a.parent == messages[last].id
        }) {
            last += 1;
        }
        out.push_str(&format!(
            "turn {n}: {}\n",
            engine.render_part(i as u32, 0).unwrap_or_default()
        ));
        if last == i {
            out.push_str("  (no reply)\n");
        }
        for (r, a) in messages.iter().enumerate().take(last + 1).skip(i + 1) {
            if r > i + 1 || a.chosen.is_some() {
                let chosen = a
                    .chosen
                    .map(|c| crate::runtime::session_writer::troupe_json(c.raw))
                    .unwrap_or_default();
                out.push_str(&format!("  by: {} {chosen}\n", a.author.unwrap_or("")));
            }
            let reply = if a.parts.is_some() {
                engine.render_part(r as u32, 0).unwrap_or_default()
            } else {
                "(no words)".into()
            };
            out.push_str(&format!("  reply: {reply}\n"));
            let changes = a.changes.map_or_else(
                || "[]".into(),
                |c| {
                    let items: Vec<String> = c
                        .iter()
                        .map(crate::runtime::session_writer::troupe_json)
                        .collect();
                    format!("[{}]", items.join(","))
                },
            );
            out.push_str(&format!("  changes: {changes}\n"));
        }
        let last_line = messages.get(last).unwrap_or(m);
        out.push_str(&format!("  firings: {}\n", firing_ids(last_line)));
        out.push_str(&format!("  state: {}\n", state_text(engine, last as u32)));
    }
    out
}

/// A session's transcript as `troupe transcript` prints it (Format 20:
/// the path of the last message in file order, `[ID] Name: text`), what
/// the Tests view links a failing recorded session or playtest to.
pub fn transcript(engine: Engine) -> String {
    crate::api::History::from_engine(engine)
        .transcript(None)
        .map(|t| t.to_text())
        .unwrap_or_default()
}

/// [`transcript`] of session file `text` (header line, then messages,
/// Format 18.8) under `bundle`; `None` when it does not read back or load.
pub fn transcript_of(bundle: &Value, text: &str) -> Option<String> {
    let mut lines = text.lines().map(serde_json::from_str::<Value>);
    let header = lines.next()?.ok()?;
    let messages: Vec<Value> = lines.collect::<Result<_, _>>().ok()?;
    let engine = crate::pipeline::load(bundle, Some((&header, &messages)), None).ok()?;
    Some(transcript(engine))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unescape_undoes_the_input_escape() {
        for s in [r"a\b {{user}}", "{{{{", r"\\{{", "plain", r"end\"] {
            assert_eq!(unescape(&crate::runtime::turn::escape(s)), s);
        }
    }

    #[test]
    fn what_a_runtime_writes_is_replayable() {
        let players = vec!["player".to_string()];
        let ok = [
            json!({"id": "m1", "opening": "o", "author": "kai"}),
            json!({"id": "m2", "parent": "m1", "author": "player", "parts": [{"type": "text", "text": "hi"}]}),
            json!({"id": "m3", "parent": "m2", "author": "kai", "parts": [{"type": "text", "text": "yo"}], "changes": [{"add": {"x": 1}}]}),
            json!({"id": "m4", "parent": "m1", "author": "player", "parts": [{"type": "text", "text": "again"}]}),
        ];
        let got = inputs(&ok, &players).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].act, Act::Say("hi".into()));
        assert_eq!(got[1].parent.as_deref(), Some("m1"));
        let mut hand = ok.to_vec();
        hand[1]["changes"] = json!([{"add": {"x": 1}}]);
        assert!(inputs(&hand, &players).unwrap_err().contains("has changes"));
        // Several replies to a turn (Format 18.9): each answers the line
        // before it; `chosen` is written by a runtime.
        let ensemble = [
            json!({"id": "m1", "opening": "o", "author": "kai"}),
            json!({"id": "m2", "parent": "m1", "author": "player", "parts": [{"type": "text", "text": "hi"}]}),
            json!({"id": "m3", "parent": "m2", "author": "kai", "chosen": {"why": "drawn", "draw": 3}}),
            json!({"id": "m4", "parent": "m3", "author": "ana", "chosen": {"why": "reaction"}}),
            json!({"id": "m5", "parent": "m4", "author": "player", "parts": [{"type": "text", "text": "so"}]}),
        ];
        let got = inputs(&ensemble, &players).unwrap();
        assert_eq!(got[0].answer.as_deref(), Some("m4"));
        assert_eq!(got[1].parent.as_deref(), Some("m4"));
        let mut sibling = ensemble.to_vec();
        sibling[3]["parent"] = json!("m2");
        assert!(inputs(&sibling, &players)
            .unwrap_err()
            .contains("not a reply"));
        let mut timed = ok.to_vec();
        timed[2]["time"] = json!("2026-01-01T00:00:00Z");
        assert!(inputs(&timed, &players).unwrap_err().contains("`time`"));
    }

    #[test]
    fn a_session_that_does_not_read_back_has_no_transcript() {
        let bundle = json!({});
        for text in ["", "not json", "{\"kind\": \"session\"}\n{oops", "{}\n{}"] {
            assert_eq!(transcript_of(&bundle, text), None, "{text:?}");
        }
    }

    #[test]
    fn a_hosts_settings_message_is_a_step() {
        let players = vec!["player".to_string()];
        let mut with = vec![
            json!({"id": "m1", "opening": "o", "author": "kai"}),
            json!({"id": "m2", "parent": "m1", "author": "narrator", "settings": {"difficulty": "hard"}}),
            json!({"id": "m3", "parent": "m2", "author": "player", "parts": [{"type": "text", "text": "hi"}]}),
        ];
        let got = inputs(&with, &players).unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].act, Act::Settings(json!({"difficulty": "hard"})));
        assert_eq!(
            (got[0].parent.as_deref(), got[1].parent.as_deref()),
            (Some("m1"), Some("m2"))
        );
        with[1]["author"] = json!("kai");
        assert!(inputs(&with, &players).unwrap_err().contains("narrator"));
        with[1]["author"] = json!("narrator");
        with[1]["parts"] = json!([]);
        assert!(inputs(&with, &players).unwrap_err().contains("`parts`"));
        // Settings alone are no input to re-play.
        assert!(inputs(&with[..1], &players).is_err());
    }
}
