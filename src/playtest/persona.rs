//! Personas as deterministic player policies (Format 22.3): the first rule
//! whose `when` holds at the tip gives the lines (else `fallback`), one is
//! chosen with the seeded generator (18.3) and rendered at the tip.

use super::model::Persona;
use super::verify::{compile, BoardView, PlayCondition};
use crate::engine::macros::RenderFor;
use crate::engine::Engine;
use crate::runtime::generator::choose;
use crate::runtime::Session;

/// A persona compiled for one agent (its character as `self` and `char`).
#[derive(Debug)]
pub struct AgentPolicy {
    rules: Vec<(Option<PlayCondition>, bool, Vec<String>)>,
    fallback: Vec<String>,
}

impl AgentPolicy {
    /// Compiles `persona`'s conditions for the agent playing `character`.
    /// A condition that does not compile never holds (an error is false).
    pub fn new(engine: &Engine, persona: &Persona, character: &str) -> AgentPolicy {
        let rules = persona
            .rules
            .iter()
            .map(|r| match &r.when {
                None => (None, true, r.say.clone()),
                Some(w) => match compile(engine, w, Some(character), true) {
                    Ok(c) => (Some(c), true, r.say.clone()),
                    Err(_) => (None, false, r.say.clone()),
                },
            })
            .collect();
        AgentPolicy {
            rules,
            fallback: persona.fallback.clone(),
        }
    }

    /// The lines the policy offers at the tip of `session`.
    fn lines(&self, session: &Session, character: &str, board: &BoardView) -> &[String] {
        let engine = session.engine();
        let state = session.state();
        for (cond, ok, say) in &self.rules {
            let holds = match cond {
                Some(c) => c.holds(engine, state, character, board),
                None => *ok,
            };
            if holds {
                return say;
            }
        }
        &self.fallback
    }

    /// The agent's utterance at the tip of `session` (Format 22.3), or
    /// `None` when it passes.
    pub fn utterance(
        &self,
        session: &Session,
        seed: u64,
        agent: &str,
        character: &str,
        board: &BoardView,
    ) -> Option<String> {
        let lines = self.lines(session, character, board);
        if lines.is_empty() {
            return None;
        }
        let label = format!("say:{seed}:{agent}:{}", session.next_message_id());
        let line = lines.get(choose(lines.len(), &label))?;
        Some(render_at_tip(session, line, character))
    }
}

/// Renders `text` at the tip of `session` with char and owner `character`
/// (Format 22.3 step 3; choreography steps too).
pub fn render_at_tip(session: &Session, text: &str, character: &str) -> String {
    session.engine().render(
        text,
        session.state(),
        RenderFor {
            char: Some(character),
            owner: Some(character),
            narrator: false,
        },
    )
}
