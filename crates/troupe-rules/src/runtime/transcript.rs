//! The transcript `troupe run` and `troupe play` print (Format 18.6,
//! 20): the session start, each turn, the score and what the model
//! runtime did, as text for people. Text from the pack is not escaped here
//! (the caller escapes controls before printing, Format 17.5).

use serde_json::{json, Map, Value};

use super::chat::TurnRecord;
use super::safety::Status;
use super::{FiringRecord, Score, Session, TurnResult};

fn display_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(display_value).collect::<Vec<_>>().join(", ")
        ),
        Value::Null => "(absent)".into(),
        other => other.to_string(),
    }
}

/// The lines of the firings of one message (`  event: id (at m3) · signal s`).
fn firing_lines(firings: &[FiringRecord]) -> String {
    let mut out = String::new();
    for f in firings {
        match (&f.event, &f.outcome) {
            (Some(e), _) => {
                out.push_str(&format!("  event: {e} (at {})", f.message));
                if let Some(s) = &f.signal {
                    out.push_str(&format!(" · signal {s}"));
                }
                out.push('\n');
            }
            (_, Some(o)) => out.push_str(&format!("  outcome: {o} (at {})\n", f.message)),
            _ => {}
        }
    }
    out
}

/// The transcript lines of the session start: settings, the root and what
/// fired at it (Format 18.4), and the state. `all` shows hidden variables
/// too (the author's `run`; `play` shows the player only visible ones).
pub fn start(session: &Session, all: bool) -> String {
    let h = crate::model::Header::read(session.header());
    let mut out = format!(
        "Scenario {} · seed {}",
        h.scenario.unwrap_or(""),
        h.seed.unwrap_or(0)
    );
    if let Some(d) = h.difficulty {
        out.push_str(&format!(" · difficulty {d}"));
    }
    out.push('\n');
    if let Some((id, who, text)) = session.root_text() {
        out.push_str(&format!("[{id}] {who}: {}\n", continued(&text)));
    }
    if let Some(o) = session.opening_result() {
        out.push_str(&firing_lines(&o.firings));
        if o.ended {
            match &o.outcome {
                Some(x) => out.push_str(&format!(
                    "  The story has ended at the opening: outcome {x}.\n"
                )),
                None => out.push_str("  The story has ended at the opening.\n"),
            }
        }
    }
    out.push_str(&state_at(session, all));
    out
}

/// A message's text as one transcript entry: each line after the first
/// (a reply or opening of several lines, or a model's reply holding a line
/// feed) is indented and marked `    | `, so no line of a message's text
/// can pass for another message's `[id] Name:` line.
pub fn continued(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\n') {
        std::borrow::Cow::Owned(text.replace('\n', "\n    | "))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The lines that begin a resumed session (Format 18.10): the settings
/// line of [`start`], the message it goes on from with its text, then the
/// state there (`all`: hidden variables too).
pub fn resumed(session: &Session, all: bool) -> String {
    let mut out = start(session, all);
    // Keep the settings line; the root belongs to the file, not to now.
    let settings_end = out.find('\n').map_or(out.len(), |i| i + 1);
    out.truncate(settings_end);
    match session.current_id() {
        Some(id) => {
            let text = session.message_text(id).unwrap_or_default();
            out.push_str(&format!(
                "Resumed at [{id}] {}: {}\n",
                session.author_name(id),
                continued(&text)
            ));
            if session.is_over() {
                out.push_str("  The session has ended there; /undo goes back a turn.\n");
            }
        }
        None => out.push_str("Resumed before the first message.\n"),
    }
    out.push_str(&state_at(session, all));
    out
}

/// The `State: …` line of a session's current message (`all`: hidden
/// variables too), as [`start`] and [`resumed`] end.
fn state_at(session: &Session, all: bool) -> String {
    let state = if all {
        session.flattened()
    } else {
        session.visible_state()
    };
    format!("State: {}\n", state_line(&state))
}

/// `name = value, …` of a state map.
pub fn state_line(state: &Map<String, Value>) -> String {
    state
        .iter()
        .filter(|(k, _)| !k.starts_with("scene."))
        .map(|(k, v)| format!("{k} = {}", display_value(v)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The transcript of one turn. `debug` shows the turn's rule (the
/// author's view; a player of `troupe play` sees it only with `--debug`).
pub fn turn(
    session: &Session,
    input: &str,
    before: &Map<String, Value>,
    r: &TurnResult,
    debug: bool,
) -> String {
    let mut out = String::new();
    let player = session.player_name();
    let m_in = r.messages.first().map_or("-", String::as_str);
    out.push_str(&format!(
        "\nTurn {}\n  [{m_in}] {player}: {}\n",
        r.turn,
        continued(input)
    ));
    match (&r.reply, r.messages.get(1)) {
        (Some(text), Some(id)) => out.push_str(&format!(
            "  [{id}] {}: {}\n",
            session.author_name(id),
            continued(text)
        )),
        (None, Some(id)) => out.push_str(&format!(
            "  [{id}] {} (no words)\n",
            session.author_name(id)
        )),
        _ => out.push_str("  (no reply)\n"),
    }
    if let Some(rule) = r.rule.as_ref().filter(|_| debug) {
        out.push_str(&format!("  rule: {rule}\n"));
    }
    // Further replies of the turn (Format 18.9: `all`, reactions).
    for x in r.replies.iter().skip(1) {
        let name = session.author_name(&x.message);
        match &x.reply {
            Some(text) => out.push_str(&format!("  [{}] {name}: {text}\n", x.message)),
            None => out.push_str(&format!("  [{}] {name} (no words)\n", x.message)),
        }
        if let Some(rule) = x.rule.as_ref().filter(|_| debug) {
            out.push_str(&format!("  rule: {rule}\n"));
        }
    }
    if !r.state_delta.is_empty() {
        let changes: Vec<String> = r
            .state_delta
            .iter()
            .map(|(k, v)| match before.get(k) {
                Some(old) => format!("{k} {} → {}", display_value(old), display_value(v)),
                None => format!("{k} → {}", display_value(v)),
            })
            .collect();
        out.push_str(&format!("  state: {}\n", changes.join(", ")));
    }
    out.push_str(&firing_lines(&r.firings));
    out.push_str(&format!("  safety: {}", r.safety_status.as_str()));
    if let Some(e) = &r.npc_emotion {
        out.push_str(&format!(" · emotion: {e}"));
    }
    out.push('\n');
    if r.ended {
        match &r.outcome {
            Some(o) => out.push_str(&format!("  The story has ended: outcome {o}.\n")),
            None => out.push_str("  The story has ended.\n"),
        }
    } else if r.safety_status == Status::Stop {
        out.push_str("  The session was stopped by the safety policy.\n");
    }
    out
}

/// The score lines at the end of a run.
pub fn score(score: &Option<Score>) -> String {
    match score {
        None => "\nScore: no rubric\n".into(),
        Some(s) => {
            let parts: Vec<String> = s
                .criteria
                .iter()
                .map(|(k, v)| match v {
                    Some(x) => format!("{k} {x}"),
                    None => format!("{k} (ungraded)"),
                })
                .collect();
            let total = s.total.map_or("none".into(), |t| t.to_string());
            format!("\nScore: {total} ({})\n", parts.join(", "))
        }
    }
}

/// The transcript lines of what the model runtime did at a turn
/// (Format 24.7): requests and tokens, clamped values, a dropped proposal.
pub fn model(r: &TurnResult, rec: Option<&TurnRecord>) -> String {
    let mut out = String::new();
    for d in &r.diagnostics {
        out.push_str(&format!(
            "  refused: {} {}\n",
            d.code,
            continued(&d.message)
        ));
    }
    if let Some(rec) = rec {
        if !rec.clamped.is_empty() {
            out.push_str(&format!(
                "  clamped to the step limit: {}\n",
                rec.clamped.join(", ")
            ));
        }
        if let Some(r) = &rec.repaired {
            out.push_str(&format!("  repaired after one repair request: {r}\n"));
        }
        if let Some(e) = &rec.emotion {
            out.push_str(&format!("  model emotion: {e}\n"));
        }
        out.push_str(&format!(
            "  model: {} request{} · {} tokens ({} prompt, {} completion)\n",
            rec.requests,
            if rec.requests == 1 { "" } else { "s" },
            rec.usage.total_tokens,
            rec.usage.prompt_tokens,
            rec.usage.completion_tokens
        ));
    }
    out
}

/// The totals of a model-backed run (Format 24.7): requests and tokens.
pub fn model_totals(log: &[TurnRecord]) -> Value {
    let mut requests = 0u64;
    let mut usage = crate::runtime::chat::Usage::default();
    for r in log {
        requests = requests.saturating_add(u64::from(r.requests));
        usage.add(r.usage);
    }
    json!({"requests": requests, "usage": {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens, "total_tokens": usage.total_tokens}})
}
