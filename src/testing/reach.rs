//! What a run reached, for coverage (Format 21.6): read from an engine
//! holding the run's messages (a replayed session, or the messages a
//! fixture's turns wrote) — recorded firings, the openings of roots,
//! active constant entries, and the operands seen by the conditions the
//! run evaluates: events' and outcomes' `when` at each evaluated message
//! before its firings, derived variables and entry conditions after its
//! changes, the `emotion` at each turn's last message.

use super::branches::{Eval, Instrumented};
use super::coverage::{branch_key, Condition, Hits, ScenarioModel, Site};
use crate::compile::session::Fired;
use crate::compile::Who;
use crate::engine::replay::step;
use crate::engine::{Engine, Scratch};
use crate::keys::lower;
use crate::runtime::compiled::RuntimeIr;

fn is_player(engine: &Engine, w: Who) -> bool {
    matches!(w, Who::Cast(c) if engine.ir.cast.get(c as usize).is_some_and(|x| x.player))
}

/// What a fixture run adds to its messages: the input messages at which
/// rules were tried (Format 18.2; not after a `redirect` or `stop` input
/// verdict) and the messages at which the rubric was scored (19.6).
#[derive(Debug, Clone, Default)]
pub struct RunInfo {
    /// Input message IDs whose turn tried the rules.
    pub rules_tried: Vec<String>,
    /// Message IDs where the session ended and was scored.
    pub scored: Vec<String>,
}

/// Records in `hits` what the engine's session reached in `scenario`;
/// `run` says where a fixture run tried rules and scored.
pub fn reached(
    engine: &Engine,
    scenario: &str,
    model: Option<&ScenarioModel>,
    hits: &mut Hits,
    run: Option<&RunInfo>,
) {
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
    let conds: Vec<(&Condition, Instrumented)> = model
        .conditions
        .iter()
        .map(|c| {
            let hit = matches!(c.site, Site::Entry | Site::Rule(_));
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
        let path = engine.path(m);
        for (c, inst) in &conds {
            let scan;
            let at = match c.site {
                Site::Event(_) | Site::Outcome(_) if answered => continue,
                Site::Event(_) | Site::Outcome(_) => Eval {
                    state: &before,
                    char: "",
                    scan: None,
                },
                Site::Emotion if answered || msg.parent.is_none() => continue,
                Site::Emotion => Eval {
                    state: &after,
                    char: &author,
                    scan: None,
                },
                Site::Derived => Eval {
                    state: &after,
                    char: "",
                    scan: None,
                },
                Site::Entry => {
                    let depth = model
                        .entries
                        .iter()
                        .find(|e| Some(&e.key) == c.entry.as_ref())
                        .map_or(1, |e| e.scan_depth);
                    scan = lower(&scanned(engine, &path, depth));
                    Eval {
                        state: &after,
                        char: "",
                        scan: Some(&scan),
                    }
                }
                // Rules and scores only where a run tried or scored them.
                Site::Rule(_) | Site::Score => continue,
            };
            let index = c.index;
            inst.eval(engine, at, &mut |n, b| {
                hits.hit(scenario, branch_key(index, n, b))
            });
        }
        // Entries active here, as the engine decides them (Format 5.3).
        for a in engine.entries_at(m) {
            if a.active {
                hits.hit(scenario, format!("entry {}/{}", a.owner, a.id));
            }
        }
    }
    if let Some(run) = run {
        rules_tried(engine, scenario, &conds, run, hits);
        for id in &run.scored {
            let Some(m) = session.find(id) else { continue };
            let st = engine.state_at(m);
            for (c, inst) in conds.iter().filter(|(c, _)| c.site == Site::Score) {
                let index = c.index;
                inst.eval(
                    engine,
                    Eval {
                        state: &st,
                        char: "",
                        scan: None,
                    },
                    &mut |n, b| hits.hit(scenario, branch_key(index, n, b)),
                );
            }
        }
    }
}

/// Tries the rules at each input where a run tried them (Format 18.2): in
/// trial order, keywords then pattern then `when` (instrumented, `hit()`
/// scanning the input), stopping at the first rule that matches.
fn rules_tried(
    engine: &Engine,
    scenario: &str,
    conds: &[(&Condition, Instrumented)],
    run: &RunInfo,
    hits: &mut Hits,
) {
    // A rule with a `when` has a condition; one without matches once its
    // keywords and pattern do.
    let Ok(rt) = RuntimeIr::compile(&engine.story, &engine.ir, None) else {
        return;
    };
    for id in &run.rules_tried {
        let Some(m) = engine.session.find(id) else {
            continue;
        };
        let input = unescape(&engine.session.text(m));
        let lowered = lower(&input);
        let st = engine.state_at(m);
        let responder = st
            .present_members()
            .find(|c| engine.ir.cast.get(*c as usize).is_some_and(|x| !x.player))
            .and_then(|c| engine.ir.cast.get(c as usize))
            .map_or(String::new(), |x| x.id.to_string());
        for rule in &rt.rules {
            if let Some(keys) = &rule.keywords {
                if !keys.hits(&lowered) {
                    continue;
                }
            }
            if let Some(p) = &rule.pattern {
                if !p.is_match(&input) {
                    continue;
                }
            }
            let cond = conds.iter().find(|(c, _)| {
                matches!(c.site, Site::Rule(_)) && c.entry.as_deref() == Some(&*rule.id)
            });
            let Some((c, inst)) = cond else { break };
            let index = c.index;
            let at = Eval {
                state: &st,
                char: &responder,
                scan: Some(&lowered),
            };
            let v = inst.eval(engine, at, &mut |n, b| {
                hits.hit(scenario, branch_key(index, n, b))
            });
            if v == Some(crate::cel::Value::Bool(true)) {
                break;
            }
        }
    }
}

/// The input a runtime escaped into its input message (Format 18.5 step 1),
/// as given.
fn unescape(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The scanned text at the last message of `path` (Format 5.3): the texts
/// of its last `depth` non-hidden messages, oldest first, joined by `\n`.
fn scanned(engine: &Engine, path: &[u32], depth: usize) -> String {
    let visible: Vec<u32> = path
        .iter()
        .copied()
        .filter(|m| {
            engine
                .session
                .messages
                .get(*m as usize)
                .is_some_and(|x| !x.hidden)
        })
        .collect();
    let from = visible.len().saturating_sub(depth);
    visible[from..]
        .iter()
        .map(|m| engine.session.text(*m))
        .collect::<Vec<_>>()
        .join("\n")
}
