//! The transcript of a session as `troupe run` and `troupe play` print it
//! (Format 18.6, 20), and [`document`], the `troupe run --json` document of
//! player lines given in memory (an MCP client, a binding). The text: the start (settings, the root and what fired at it,
//! the state), each turn (input, reply, rule, state changes, firings,
//! safety, the ending), the score and what the model runtime did. Text
//! from the pack is not escaped here: pass it through
//! [`crate::escape_controls`] before printing it to a terminal.
//!
//! ```
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
