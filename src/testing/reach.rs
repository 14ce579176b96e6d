//! What a run reached, for coverage (Format 21.6): read from an engine
//! holding the run's messages (a replayed session, or the messages a
//! fixture's turns wrote) — recorded firings, the openings of roots,
//! active constant entries, and the operands seen by the conditions the
//! run evaluates: events' and outcomes' `when` at each evaluated message
//! before its firings, derived variables and entry conditions after its
//! changes, the `emotion` at each turn's last message.

use super::branches::Instrumented;
use super::coverage::{branch_key, Hits, ScenarioModel, Site};
use crate::compile::session::Fired;
use crate::compile::Who;
use crate::engine::replay::step;
use crate::engine::{Engine, Scratch};

fn is_player(engine: &Engine, w: Who) -> bool {
    matches!(w, Who::Cast(c) if engine.ir.cast.get(c as usize).is_some_and(|x| x.player))
}

/// Records in `hits` what the engine's session reached in `scenario`.
pub fn reached(engine: &Engine, scenario: &str, model: Option<&ScenarioModel>, hits: &mut Hits) {
    hits.use_scenario(scenario);
    let session = &engine.session;
    for msg in &session.messages {
        for f in &msg.firings {
            let id = match f {
                Fired::Event(i) => engine
                    .ir
                    .events
                    .get(*i as usize)
                    .map(|e| format!("event {}", e.id)),
                Fired::Outcome(i) => engine
                    .ir
                    .outcomes
                    .get(*i as usize)
                    .map(|o| format!("outcome {}", o.id)),
            };
            if let Some(id) = id {
                hits.hit(scenario, id);
            }
        }
        if let (None, Some(o)) = (msg.parent, msg.opening) {
            if let Some(op) = engine.ir.openings.get(o as usize) {
                hits.hit(scenario, format!("opening {}", op.id));
            }
        }
    }
    let Some(model) = model else { return };
    let conds: Vec<(&super::coverage::Condition, Instrumented)> = model
        .conditions
        .iter()
        .filter(|c| !matches!(c.site, Site::Rule(_) | Site::Score))
        .map(|c| {
            let hit = c.site == Site::Entry;
            (
                c,
                Instrumented::new(engine, &c.src, c.owner.as_deref(), hit),
            )
        })
        .collect();
    // The session without recorded firings: each message's state before
    // its firings.
    let mut bare = session.clone();
    bare.messages.iter_mut().for_each(|m| m.firings.clear());
    let mut scratch = Scratch::new(&engine.ir);
    for (mi, msg) in session.messages.iter().enumerate() {
        let m = mi as u32;
        // A player's message without changes answered by the next line is
        // not evaluated (Format 18.5).
        let answered = is_player(engine, msg.author)
            && msg.changes.is_empty()
            && session
                .messages
                .get(mi + 1)
                .is_some_and(|n| n.parent == Some(m) && !is_player(engine, n.author));
        let after = engine.state_at(m);
        let mut before = match msg.parent {
            Some(p) => engine.state_at(p),
            None => engine.initial().clone(),
        };
        step(&engine.ir, &bare, &mut before, m, &mut scratch);
        let author = match msg.author {
            Who::Cast(c) if !is_player(engine, msg.author) => engine
                .ir
                .cast
                .get(c as usize)
                .map_or(String::new(), |x| x.id.to_string()),
            _ => String::new(),
        };
        for (c, inst) in &conds {
            let (at, ch) = match c.site {
                Site::Event(_) | Site::Outcome(_) if answered => continue,
                Site::Event(_) | Site::Outcome(_) => (&before, ""),
                Site::Emotion if answered || msg.parent.is_none() => continue,
                Site::Emotion => (&after, author.as_str()),
                _ => (&after, ""),
            };
            let index = c.index;
            let value = inst.eval(engine, at, ch, &mut |n, b| {
                hits.hit(scenario, branch_key(index, n, b))
            });
            if let (Site::Entry, Some(key)) = (c.site, &c.entry) {
                if value == Some(crate::cel::Value::Bool(true))
                    && model.constant_entries.contains(key)
                {
                    hits.hit(scenario, format!("entry {key}"));
                }
            }
        }
        // Constant entries without a `when` are active at every message.
        for key in &model.constant_entries {
            if !conds.iter().any(|(c, _)| c.entry.as_ref() == Some(key)) {
                hits.hit(scenario, format!("entry {key}"));
            }
        }
    }
}
