//! The fake runtime (Format 18.7): the seed's structural test double. A
//! turn writes and evaluates nothing; `state_delta` is every entry of the
//! flattened initial state except the scene, at its initial value.

use serde_json::Map;

use super::safety::Status;
use super::session::Session;
use super::turn::{SessionControl, TurnResult};

/// The fake result of fake turn number `n` (1, 2, …).
pub fn result(session: &Session, n: i64) -> TurnResult {
    let engine = session.engine();
    let state_delta: Map<_, _> = engine
        .flatten(engine.initial())
        .into_iter()
        .filter(|(k, _)| k != "scene.location" && k != "scene.present")
        .collect();
    TurnResult {
        turn: n,
        messages: Vec::new(),
        rule: None,
        reply: None,
        state_delta,
        firings: Vec::new(),
        session_control: SessionControl::ContinueSession,
        safety_status: Status::Ok,
        npc_emotion: None,
        ended: false,
        outcome: None,
        score: None,
        replies: Vec::new(),
        signals: Vec::new(),
        diagnostics: Vec::new(),
    }
}
