//! The replay runtime (Format 18.7): re-steps a recorded, conforming
//! session and compares each message's recorded firings with what 9.2
//! produces there, reporting FIRING_MISMATCH.

use serde_json::{Map, Value};

use super::firing::evaluate;
use crate::compile::session::Fired;
use crate::compile::{SessionIr, Who};
use crate::diag::{Code, Diagnostic};
use crate::engine::replay::step;
use crate::engine::{Engine, Scratch};

/// What replay yields for one message.
#[derive(Debug, Clone)]
pub struct ReplayedMessage {
    /// The message ID.
    pub id: String,
    /// The flattened state at the message (recorded firings applied).
    pub state: Map<String, Value>,
    /// The recorded firings (`event:<id>` / `outcome:<id>`).
    pub recorded: Vec<String>,
    /// The firings 9.2 produces there.
    pub produced: Vec<String>,
    /// Each part's rendered text (Format 10.5), in part order.
    pub texts: Vec<String>,
}

/// The replay of a session.
#[derive(Debug, Clone, Default)]
pub struct Replay {
    /// FIRING_MISMATCH diagnostics, in file order.
    pub diagnostics: Vec<Diagnostic>,
    /// Every message in file order.
    pub messages: Vec<ReplayedMessage>,
}

fn name(engine: &Engine, f: &Fired) -> (String, &'static str) {
    match f {
        Fired::Event(i) => (
            engine
                .ir
                .events
                .get(*i as usize)
                .map_or(String::new(), |e| e.id.to_string()),
            "event",
        ),
        Fired::Outcome(i) => (
            engine
                .ir
                .outcomes
                .get(*i as usize)
                .map_or(String::new(), |e| e.id.to_string()),
            "outcome",
        ),
    }
}

fn is_player(engine: &Engine, w: Who) -> bool {
    matches!(w, Who::Cast(c) if engine.ir.cast.get(c as usize).is_some_and(|x| x.player))
}

/// Replays `engine`'s session (Format 18.7).
pub fn replay(engine: &Engine) -> Replay {
    let session = &engine.session;
    // The session with no recorded firings: a message's own step.
    let bare = SessionIr {
        messages: session
            .messages
            .iter()
            .map(|m| {
                let mut m = m.clone();
                m.firings.clear();
                m
            })
            .collect(),
        index: session.index.clone(),
        seed: session.seed,
        preset: session.preset,
    };
    let mut scratch = Scratch::new(&engine.ir);
    let mut out = Replay::default();
    for (mi, msg) in session.messages.iter().enumerate() {
        let m = mi as u32;
        let answered = is_player(engine, msg.author)
            && msg.changes.is_empty()
            && session
                .messages
                .get(mi + 1)
                .is_some_and(|next| next.parent == Some(m) && !is_player(engine, next.author));
        let mut st = match msg.parent {
            Some(p) => engine.state_at(p),
            None => engine.initial().clone(),
        };
        let rolls = step(&engine.ir, &bare, &mut st, m, &mut scratch);
        let mut fired_before = vec![false; engine.ir.events.len()];
        let mut cur = msg.parent;
        while let Some(c) = cur {
            let cm = &session.messages[c as usize];
            for f in &cm.firings {
                if let Fired::Event(i) = f {
                    if let Some(x) = fired_before.get_mut(*i as usize) {
                        *x = true;
                    }
                }
            }
            cur = cm.parent;
        }
        let produced = if answered {
            Vec::new()
        } else {
            evaluate(
                &engine.ir,
                &bare,
                &mut st,
                m,
                &fired_before,
                rolls,
                &mut scratch,
            )
        };
        let recorded = &msg.firings;
        let at = |p: &str| format!("message:{}{p}", msg.id);
        let mut mismatch = false;
        for (i, f) in recorded.iter().enumerate() {
            if !produced.contains(f) {
                mismatch = true;
                let (id, kind) = name(engine, f);
                out.diagnostics.push(
                    Diagnostic::error(
                        Code::FiringMismatch,
                        format!("the {kind} `{id}` is recorded but not produced: its condition does not fire here"),
                    )
                    .at(at(&format!("/firings/{i}"))),
                );
            }
        }
        for f in &produced {
            if !recorded.contains(f) {
                mismatch = true;
                let (id, kind) = name(engine, f);
                let pointer = if recorded.is_empty() {
                    at("")
                } else {
                    at("/firings")
                };
                out.diagnostics.push(
                    Diagnostic::error(
                        Code::FiringMismatch,
                        format!("the {kind} `{id}` is produced but not recorded"),
                    )
                    .at(pointer),
                );
            }
        }
        if !mismatch && produced != *recorded {
            out.diagnostics.push(
                Diagnostic::error(
                    Code::FiringMismatch,
                    "the recorded firings are produced in another order",
                )
                .at(at("/firings")),
            );
        }
        let names = |l: &[Fired]| {
            l.iter()
                .map(|f| {
                    let (id, kind) = name(engine, f);
                    format!("{kind}:{id}")
                })
                .collect()
        };
        out.messages.push(ReplayedMessage {
            id: msg.id.to_string(),
            state: engine.flatten(&engine.state_at(m)),
            recorded: names(recorded),
            produced: names(&produced),
            texts: (0..msg.parts.len())
                .filter_map(|i| engine.render_part(m, i))
                .collect(),
        });
    }
    out
}
