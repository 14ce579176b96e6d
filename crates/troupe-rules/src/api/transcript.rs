//! The transcript of a session as `troupe run` and `troupe play` print it
//! (Format 18.6, 20), and [`document`], the `troupe run --json` document of
//! player lines given in memory (an MCP client, a binding). The text: the start (settings, the root and what fired at it,
//! the state), each turn (input, reply, rule, state changes, firings,
//! safety, the ending), the score and what the model runtime did. Text
//! from the pack is not escaped here: pass it through
//! [`crate::escape_controls`] before printing it to a terminal.
//!
//! ```
//! # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
//! use troupe::{transcript, Pack, SessionOptions};
//! let pack = Pack::open("examples/packs/everyday-negotiation")?;
//! let mut session = pack.start(SessionOptions::default())?;
//! let mut text = transcript::start(&session, true);
//! let before = session.state();
//! let input = "I can offer 7,000 cash today.";
//! let r = session.turn(input)?;
//! text.push_str(&transcript::turn(&session, input, &before, &r, true));
//! text.push_str(&transcript::score(&session.score()));
//! assert!(text.starts_with("Scenario used_car_negotiation · seed 0"));
//! assert!(text.contains("\nTurn 1\n"));
//! # Ok::<(), troupe::Error>(())
//! ```

use serde_json::{json, Map, Value};

use super::pack::Pack;
use super::session::{Session, SessionOptions};
use crate::runtime::chat::TurnRecord;
use crate::runtime::transcript as text;
use crate::runtime::{Score, TurnResult};

/// The lines of the session start: `Scenario S · seed N[ · difficulty D]`,
/// the root message and what fired at it, then `State: …`. `all` shows
/// hidden variables too (the author's view); otherwise only visible ones.
pub fn start(session: &Session, all: bool) -> String {
    text::start(&session.inner, all)
}

/// The lines that begin a resumed session (Format 18.10): the settings,
/// `Resumed at [ID] Author: text` and the state there (`all`: hidden
/// variables too).
pub fn resumed(session: &Session, all: bool) -> String {
    text::resumed(&session.inner, all)
}

/// `name = value, …` of a flattened state (scene variables left out;
/// strings unquoted, an absent value as `(absent)`).
pub fn state_line(state: &Map<String, Value>) -> String {
    text::state_line(state)
}

/// The lines of one turn: `result` of `input`, with `before` the
/// flattened state before it (for `old → new`). `debug` shows the turn's
/// rule.
pub fn turn(
    session: &Session,
    input: &str,
    before: &Map<String, Value>,
    result: &TurnResult,
    debug: bool,
) -> String {
    text::turn(&session.inner, input, before, result, debug)
}

/// The score lines that end a run: `Score: TOTAL (criterion value, …)`, or
/// `Score: no rubric`.
pub fn score(score: &Option<Score>) -> String {
    text::score(score)
}

/// The lines of what the model runtime did at a turn (Format 24.7):
/// refused changes, clamped values, a repair, the emotion, requests and
/// tokens.
pub fn model(result: &TurnResult, record: Option<&TurnRecord>) -> String {
    text::model(result, record)
}

/// The totals of a model-backed run (Format 24.7) as JSON:
/// `{"requests": N, "usage": {"prompt_tokens", "completion_tokens",
/// "total_tokens"}}`.
pub fn model_totals(log: &[TurnRecord]) -> Value {
    text::model_totals(log)
}

/// Plays `lines` as the first player, one turn each (Format 18.5), in a
/// session started with `options` (Format 18.4), until the lines run out
/// or a turn ends the session; the result is the `troupe run --json`
/// document of Format 20.1 (`schemas/output/run.schema.json`):
/// `{"opening": Opening | null, "turns": [TurnResult…], "unplayed": int,
/// "score": Score | null}`. Lines left when the session ends are not
/// played and counted in `unplayed`. Nothing is written unless
/// `options.out` names a session file.
///
/// Errors: [`crate::ErrorKind::Refused`] when the settings do not fit the
/// pack (an unknown scenario, preset or opening); a turn's error
/// ([`crate::ErrorKind::Limit`], [`crate::ErrorKind::Runtime`],
/// [`crate::ErrorKind::Io`]) stops the run and is returned.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::{Pack, SessionOptions};
/// let pack = Pack::open("examples/packs/everyday-negotiation")?;
/// let doc = troupe::transcript::document(&pack, &["Hello Marco!", "I can offer 7,000."],
///                              SessionOptions::default().seed(7))?;
/// assert_eq!(doc["turns"].as_array().unwrap().len(), 2);
/// assert_eq!(doc["unplayed"], 0);
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn document<S: AsRef<str>>(
    pack: &Pack,
    lines: &[S],
    options: SessionOptions,
) -> crate::Result<Value> {
    let mut session = pack.start(options)?;
    let mut turns = Vec::with_capacity(lines.len());
    for line in lines {
        if session.ended() {
            break;
        }
        let result = session.turn(line.as_ref())?;
        turns.push(serde_json::to_value(&result).unwrap_or(Value::Null));
    }
    let unplayed = lines.len() - turns.len();
    Ok(json!({
        "opening": session.opening(),
        "turns": turns,
        "unplayed": unplayed,
        "score": session.score(),
    }))
}

/// A part of a [`Transcript`] message: its text rendered at the message's
/// own state (Format 10.5) and who it is for (7.2 `audience`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TranscriptPart {
    /// The rendered text.
    pub text: String,
    /// The part's `audience` as written (character IDs or `narrator`);
    /// `None` (left out of the JSON): everyone present (7.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub audience: Option<Vec<String>>,
}

/// A message of a [`Transcript`] (Format 20, `troupe transcript`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct TranscriptMessage {
    /// The message ID.
    pub id: String,
    /// The author's ID (a cast member or `narrator`).
    pub author: String,
    /// The author's display name.
    pub name: String,
    /// Whether the message is `hidden` (7): known to no one but recorded.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub hidden: bool,
    /// Its parts, rendered; `[]` for a message without text (a settings
    /// message, 8.9).
    pub parts: Vec<TranscriptPart>,
}

/// A session's messages as their audience reads them (Format 20, `troupe
/// transcript`): the path of one message, root first, each part's
/// template rendered at its message's state, so a program reading a
/// session need not implement macros.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Transcript {
    /// The session's scenario.
    pub scenario: String,
    /// The last message of the path; `None` for a session without messages.
    pub at: Option<String>,
    /// The messages of the path, root first.
    pub messages: Vec<TranscriptMessage>,
}

impl super::History {
    /// The transcript of the path of message `at` (`None`: the last
    /// message in file order), root first (Format 20, `troupe
    /// transcript`).
    ///
    /// ```
    /// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
    /// let pack = troupe::Pack::open("examples/packs/harbor-lights")?;
    /// let t = pack.recorded_history("inn.jsonl")?.transcript(Some("m2"))?;
    /// assert_eq!(t.messages.len(), 2);
    /// assert_eq!(t.messages[0].author, "ines");
    /// assert!(!t.messages[0].parts[0].text.contains("{{"));
    /// # Ok::<(), troupe::Error>(())
    /// ```
    ///
    /// Errors: [`super::ErrorKind::NotFound`] when there is no message
    /// `at`.
    pub fn transcript(&self, at: Option<&str>) -> super::Result<Transcript> {
        let engine = self.engine_ref();
        let end = match at {
            Some(id) => Some(self.index_of(id)?),
            None => engine.last_message(),
        };
        let ir = &engine.ir;
        let name = |w: crate::compile::Who| match w {
            crate::compile::Who::Narrator => ir.narrator.to_string(),
            crate::compile::Who::Cast(c) => ir
                .cast
                .get(c as usize)
                .map_or_else(String::new, |m| m.display.to_string()),
        };
        let mut messages = Vec::new();
        if let Some(end) = end {
            engine.walk_path(end, |m, state| {
                let msg = &engine.session.messages[m as usize];
                let parts = (0..msg.parts.len())
                    .map(|i| TranscriptPart {
                        text: engine.render_part_at(m, i, state).unwrap_or_default(),
                        audience: msg.parts[i]
                            .audience
                            .as_ref()
                            .map(|a| a.iter().map(|w| ir.who_id(*w).to_string()).collect()),
                    })
                    .collect();
                messages.push(TranscriptMessage {
                    id: msg.id.to_string(),
                    author: ir.who_id(msg.author).to_string(),
                    name: name(msg.author),
                    hidden: msg.hidden,
                    parts,
                });
            });
        }
        Ok(Transcript {
            scenario: ir.scenario.to_string(),
            at: end.map(|m| engine.session.messages[m as usize].id.to_string()),
            messages,
        })
    }
}

impl Transcript {
    /// The text form: `[ID] Name: text`, one line per part (a part after
    /// the first indented by two spaces), a part with an audience prefixed
    /// `(to a, b) `, a hidden message's name followed by ` (hidden)`;
    /// messages without parts are left out. Not escaped: pass it through
    /// [`crate::escape_controls`] before printing it to a terminal.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for m in self.messages.iter().filter(|m| !m.parts.is_empty()) {
            let hidden = if m.hidden { " (hidden)" } else { "" };
            for (i, p) in m.parts.iter().enumerate() {
                let to = p
                    .audience
                    .as_ref()
                    .map(|a| format!("(to {}) ", a.join(", ")))
                    .unwrap_or_default();
                let text = p.text.replace('\n', "\n  ");
                if i == 0 {
                    out.push_str(&format!("[{}] {}{hidden}: {to}{text}\n", m.id, m.name));
                } else {
                    out.push_str(&format!("  {to}{text}\n"));
                }
            }
        }
        out
    }

    /// The Markdown form: one paragraph per message, `**Name:** text`
    /// (Markdown's special characters in names and texts escaped with a
    /// backslash), a part with an audience as `*(to a, b)* text`, a hidden
    /// message's name followed by ` *(hidden)*`; messages without parts are
    /// left out.
    pub fn to_markdown(&self) -> String {
        fn esc(s: &str) -> String {
            let mut out = String::with_capacity(s.len());
            for c in s.chars() {
                if matches!(
                    c,
                    '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '#' | '|' | '~'
                ) {
                    out.push('\\');
                }
                out.push(c);
            }
            out.replace('\n', "  \n")
        }
        let mut paragraphs = Vec::new();
        for m in self.messages.iter().filter(|m| !m.parts.is_empty()) {
            let hidden = if m.hidden { " *(hidden)*" } else { "" };
            let texts: Vec<String> = m
                .parts
                .iter()
                .map(|p| match &p.audience {
                    Some(a) => format!("*(to {})* {}", esc(&a.join(", ")), esc(&p.text)),
                    None => esc(&p.text),
                })
                .collect();
            paragraphs.push(format!(
                "**{}:**{hidden} {}",
                esc(&m.name),
                texts.join("  \n")
            ));
        }
        let mut out = paragraphs.join("\n\n");
        if !out.is_empty() {
            out.push('\n');
        }
        out
    }
}
