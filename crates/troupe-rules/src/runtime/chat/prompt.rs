//! The prompt (Format 24.3): what the responder is told, built from the
//! bundle, the engine's messages and the state at the input message.

use serde::Serialize;

use super::proposal::ModelDecl;
use crate::compile::Who;
use crate::engine::macros::RenderFor;
use crate::engine::Engine;

/// One chat message of a request (`{"role", "content"}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChatMessage {
    /// `system`, `user` or `assistant`.
    pub role: &'static str,
    /// The text.
    pub content: String,
}

/// How the answer's shape is asked for (Format 24.4, `--structured`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Structured {
    /// `response_format: {"type": "json_schema", …}` (the default).
    #[default]
    JsonSchema,
    /// `response_format: {"type": "json_object"}`; the schema in the prompt.
    JsonObject,
    /// No `response_format`; the schema in the prompt.
    None,
}

/// The default instructions (Format 24.3), a template rendered with the
/// responder as char.
pub const DEFAULT_INSTRUCTIONS: &str = "You are {{char}}. Stay in character and answer as {{char}} would, in a few sentences. Never speak for {{user}}.";

/// A text that is not blank.
fn text_of(t: &str) -> Option<&str> {
    Some(t).filter(|s| !s.trim().is_empty())
}

/// The system message and the transcript for the responder answering
/// message `m` (the input message), in the order of Format 24.3.
pub fn messages(
    engine: &Engine,
    m: u32,
    responder: &str,
    decl: &ModelDecl,
    structured: Structured,
) -> Vec<ChatMessage> {
    let state = engine.state_at(m);
    let narrator = responder == "narrator";
    let who = RenderFor {
        char: (!narrator).then_some(responder),
        owner: Some(if narrator {
            &engine.ir.scenario
        } else {
            responder
        }),
        narrator,
    };
    // Card, lore and instruction texts: `pick` stable per session (10.6).
    let render = |t: &str| engine.render_stable(t, &state, who);
    let model = &engine.ir.model;
    let mut sys = String::new();
    // 1. Instructions.
    sys.push_str(&render(
        decl.prompt.as_deref().unwrap_or(DEFAULT_INSTRUCTIONS),
    ));
    sys.push('\n');
    // 2. The character.
    let display = match engine.ir.who(responder) {
        Some(Who::Cast(c)) => engine.ir.cast[c as usize].display.to_string(),
        _ => engine.ir.narrator.to_string(),
    };
    sys.push_str(&format!("\n## Character: {display}\n"));
    if let Some(card) = model.cards.iter().find(|c| c.id == responder) {
        for (field, t) in &card.fields {
            if let Some(t) = text_of(t) {
                sys.push_str(&format!("{field}: {}\n", render(t)));
            }
        }
    }
    // 2b. Who else is present (Format 24.3, 18.9): the other characters
    // who are not players, by display name, in cast order.
    let others: Vec<&str> = engine
        .ir
        .cast
        .iter()
        .enumerate()
        .filter(|(i, c)| {
            !c.player && &*c.id != responder && state.present.get(*i).copied().unwrap_or(false)
        })
        .map(|(_, c)| &*c.display)
        .collect();
    if !others.is_empty() {
        sys.push_str("\n## Also present\n");
        for o in others {
            sys.push_str(&format!("- {o}\n"));
        }
    }
    // 3. The scenario.
    sys.push_str(&format!("\n## Scenario: {}\n", model.name));
    if let Some(t) = model.description.as_deref().and_then(text_of) {
        sys.push_str(&render(t));
        sys.push('\n');
    }
    // 4. Lore, in 5.5 order, within the budget.
    let mut used = 0usize;
    let mut lore = String::new();
    for e in engine.entries_at(m).iter().filter(|e| e.active) {
        let Some(entry) = engine.ir.entries.get(e.index) else {
            continue;
        };
        let text = render(&entry.content);
        let n = text.chars().count();
        if used + n > decl.lore_budget {
            break;
        }
        used += n;
        lore.push_str(&format!("- {text}\n"));
    }
    if !lore.is_empty() {
        sys.push_str("\n## Lore\n");
        sys.push_str(&lore);
    }
    // 5. The state it may read.
    let hidden: Vec<&str> = engine
        .ir
        .vars
        .iter()
        .filter(|v| v.hidden && !decl.changes.contains_key(&*v.name))
        .map(|v| &*v.name)
        .collect();
    let flat = engine.flatten(&state);
    let shown: Vec<String> = flat
        .iter()
        .filter(|(k, _)| {
            !hidden
                .iter()
                .any(|h| k.as_str() == *h || k.strip_prefix(h).is_some_and(|r| r.starts_with('.')))
        })
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    sys.push_str("\n## State\n");
    sys.push_str(&shown.join("\n"));
    sys.push('\n');
    // 6. What it may change.
    sys.push_str("\n## You may change\n");
    if decl.changes.is_empty() {
        sys.push_str("nothing: leave `changes` out\n");
    } else {
        for (name, step) in &decl.changes {
            match step {
                Some(s) => sys.push_str(&format!("{name} (by at most {s} per turn)\n")),
                None => sys.push_str(&format!("{name}\n")),
            }
        }
    }
    // 7. The answer format.
    sys.push_str("\n## Answer\nAnswer with one JSON object and nothing else: {\"reply\": what you say, \"changes\": {state name: new value}, \"emotion\": your emotion}. `changes` and `emotion` are optional.");
    if !decl.emotions.is_empty() {
        sys.push_str(&format!(" Emotions: {}.", decl.emotions.join(", ")));
    }
    if structured != Structured::JsonSchema {
        sys.push_str(&format!(
            " The object follows this JSON Schema: {}",
            engine.ir.model.schema.value()
        ));
    }
    sys.push('\n');
    let mut out = vec![ChatMessage {
        role: "system",
        content: sys,
    }];
    out.extend(transcript(engine, m, responder, decl.history));
    out
}

/// The transcript as the responder knows it (Format 7.4, 24.3): the last
/// `history` messages of the path to `m` that have a part it knows, each
/// with only the parts it knows.
///
/// One walk along the path computes every message's state once, so the
/// work is linear in the path's length (not history × depth); only the
/// messages kept are rendered.
pub fn transcript(engine: &Engine, m: u32, responder: &str, history: usize) -> Vec<ChatMessage> {
    use crate::engine::State;
    use std::collections::VecDeque;
    // The last `history` messages with a known part: (message, parts, state).
    let mut kept: VecDeque<(u32, Vec<usize>, State)> = VecDeque::new();
    if history == 0 {
        return Vec::new();
    }
    engine.walk_path(m, |x, state| {
        let msg = &engine.session.messages[x as usize];
        if msg.hidden {
            return;
        }
        let parts: Vec<usize> = (0..msg.parts.len())
            .filter(|&i| {
                engine.ir.single_voice
                    || responder == "narrator"
                    || engine.knows_part_at(x, i, state, responder)
            })
            .collect();
        if parts.is_empty() {
            return;
        }
        if kept.len() == history {
            kept.pop_front();
        }
        kept.push_back((x, parts, state.clone()));
    });
    let mut out = Vec::with_capacity(kept.len());
    for (x, parts, state) in kept {
        let msg = &engine.session.messages[x as usize];
        let texts: Vec<String> = parts
            .iter()
            .filter_map(|&i| engine.render_part_at(x, i, &state))
            .collect();
        if texts.is_empty() {
            continue;
        }
        let author = engine.ir.who_id(msg.author);
        let text = texts.join("\n");
        out.push(if author == responder {
            ChatMessage {
                role: "assistant",
                content: text,
            }
        } else {
            let name = match msg.author {
                Who::Cast(c) => engine.ir.cast[c as usize].display.to_string(),
                Who::Narrator => engine.ir.narrator.to_string(),
            };
            ChatMessage {
                role: "user",
                content: format!("{name}: {text}"),
            }
        });
    }
    out
}
