//! Snapshots of recorded sessions (Format 21.5): building a session's
//! snapshot with the engine, writing it as bytes, comparing it with the
//! accepted one by JSON value, and a unified diff for the report. Also
//! what a replayed session reached, for coverage (21.6).

use std::path::Path;

use serde_json::{json, Map, Value};
use similar::TextDiff;

use super::fixtures::values_equal;
use crate::compile::session::Fired;
use crate::engine::Engine;

/// The accepted snapshot path of a session `sessions/<stem>.jsonl`:
/// `snapshots/<stem>.snap.json` (pack-relative).
pub fn snapshot_path(session: &str) -> String {
    let name = session.rsplit('/').next().unwrap_or(session);
    let stem = name.strip_suffix(".jsonl").unwrap_or(name);
    format!("snapshots/{stem}.snap.json")
}

fn firing_json(e: &Engine, f: &Fired) -> Value {
    match f {
        Fired::Event(i) => json!({"event": e.ir.events.get(*i as usize).map_or("", |x| &*x.id)}),
        Fired::Outcome(i) => {
            json!({"outcome": e.ir.outcomes.get(*i as usize).map_or("", |x| &*x.id)})
        }
    }
}

/// Builds the snapshot of a replayed session (Format 21.5): for every
/// message in file order its ID, whether the story is ended there, its
/// recorded firings, its rendered texts, its rendered summary, and the
/// flattened state in state order.
pub fn build(engine: &Engine, session: &str) -> Value {
    let mut messages = Vec::new();
    for (m, msg) in engine.session.messages.iter().enumerate() {
        let m = m as u32;
        let st = engine.state_at(m);
        let mut o = Map::new();
        o.insert("id".into(), json!(&*msg.id));
        o.insert("ended".into(), json!(engine.ending(&st).is_some()));
        o.insert(
            "firings".into(),
            Value::Array(msg.firings.iter().map(|f| firing_json(engine, f)).collect()),
        );
        o.insert(
            "texts".into(),
            Value::Array(
                (0..msg.parts.len())
                    .map(|i| Value::String(engine.render_part(m, i).unwrap_or_default()))
                    .collect(),
            ),
        );
        if let Some(s) = engine.render_summary(m) {
            o.insert("summary".into(), Value::String(s));
        }
        o.insert("state".into(), Value::Object(engine.flatten(&st)));
        messages.push(Value::Object(o));
    }
    json!({"troupe": "0.1", "kind": "snapshot", "session": session, "messages": messages})
}

/// The bytes of a snapshot: JSON indented by two spaces, strings escaped as
/// Format 18.8 says, ending with `\n`.
pub fn to_bytes(snapshot: &Value) -> String {
    let mut s = serde_json::to_string_pretty(snapshot).unwrap_or_default();
    s.push('\n');
    s
}

/// How an accepted snapshot compares with the current one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compared {
    /// Equal by JSON value.
    Same,
    /// No accepted snapshot.
    New,
    /// Different (or the accepted file is not JSON): the unified diff.
    Changed(String),
}

/// Compares the accepted text (if any) with the current snapshot.
pub fn compare(accepted: Option<&str>, current: &Value, path: &str) -> Compared {
    let Some(text) = accepted else {
        return Compared::New;
    };
    let same = serde_json::from_str::<Value>(text).is_ok_and(|v| values_equal(&v, current));
    if same {
        Compared::Same
    } else {
        Compared::Changed(diff(text, &to_bytes(current), path))
    }
}

/// A unified diff (three lines of context) of the accepted text against
/// the current one.
pub fn diff(accepted: &str, current: &str, path: &str) -> String {
    diff_labeled(
        accepted,
        current,
        &format!("{path} (accepted)"),
        &format!("{path} (current)"),
    )
}

/// A unified diff (three lines of context) of `old` against `new`, headed
/// by the two labels.
pub fn diff_labeled(old: &str, new: &str, old_label: &str, new_label: &str) -> String {
    TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(old_label, new_label)
        .to_string()
}

/// Reads an accepted snapshot; `Ok(None)` when there is none.
pub fn read_accepted(root: &Path, rel: &str) -> std::io::Result<Option<String>> {
    match std::fs::read_to_string(root.join(rel)) {
        Ok(t) => Ok(Some(t)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The stale snapshots: `snapshots/*.snap.json` with no session in `sessions`.
pub fn stale(root: &Path, sessions: &[String]) -> Vec<String> {
    let wanted: Vec<String> = sessions.iter().map(|s| snapshot_path(s)).collect();
    let mut out = Vec::new();
    if let Ok(dir) = std::fs::read_dir(root.join("snapshots")) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let rel = format!("snapshots/{name}");
            if name.ends_with(".snap.json") && !wanted.contains(&rel) {
                out.push(rel);
            }
        }
    }
    out.sort();
    out
}
