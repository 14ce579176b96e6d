//! Personas as deterministic player policies (Format 22.3): the first rule
//! whose `when` holds at the tip gives the lines (else `fallback`), one is
//! chosen with the seeded generator (18.3) and rendered at the tip.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};

use super::model::{Goal, Persona};
use super::verify::{compile, BoardView, PlayCondition};
use crate::engine::macros::RenderFor;
use crate::engine::Engine;
use crate::runtime::chat::prompt::transcript;
use crate::runtime::chat::proposal::unfence;
use crate::runtime::chat::{call_backend, request_body, Backend, ChatMessage, Settings, Usage};
use crate::runtime::generator::choose;
use crate::runtime::Session;

/// A persona compiled for one agent (its character as `self` and `char`).
#[derive(Debug)]
pub struct AgentPolicy {
    rules: Vec<(Option<PlayCondition>, bool, Vec<String>)>,
    fallback: Vec<String>,
    /// Lines from a model (Format 22.3 "Model-driven personas").
    pub voice: Option<ModelVoice>,
}

/// A backend shared by the model-driven agents that call it, in call
/// order (Format 22.3 "The backend").
pub type SharedBackend = Arc<Mutex<Backend>>;

/// Where model-driven personas' answers come from (Format 22.3 "The
/// backend" 2 and 3): the request settings (24.1) and a shared backend.
#[derive(Clone)]
pub struct ModelSource {
    /// `model`, `temperature`, `max_tokens`, `--structured`.
    pub settings: Settings,
    /// The backend, shared.
    pub backend: SharedBackend,
}

impl ModelSource {
    /// A source with `settings` calling `backend`.
    pub fn new(settings: Settings, backend: Backend) -> ModelSource {
        ModelSource {
            settings,
            backend: Arc::new(Mutex::new(backend)),
        }
    }
}

impl std::fmt::Debug for ModelSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelSource")
            .field("model", &self.settings.model)
            .finish_non_exhaustive()
    }
}

/// The JSON Schema of a persona's answer (Format 22.3).
pub fn say_schema() -> Value {
    json!({"type": "object", "properties": {"say": {"type": "string"}}, "required": ["say"], "additionalProperties": false})
}

/// A model-driven persona's backend and what its calls cost.
pub struct ModelVoice {
    instructions: String,
    goals: Vec<String>,
    source: ModelSource,
    failed: bool,
    /// Calls made.
    pub requests: u32,
    /// Usage summed over the calls (24.7).
    pub usage: Usage,
    /// `round <r>: <why>` per invalid answer or failed call.
    pub refused: Vec<String>,
}

impl std::fmt::Debug for ModelVoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelVoice")
            .field("requests", &self.requests)
            .field("usage", &self.usage)
            .field("refused", &self.refused)
            .finish()
    }
}

impl ModelVoice {
    /// The agent's line at the tip of `session`, or `None` when it passes
    /// (Format 22.3): one call, the answer read as `{"say": string}`.
    fn line(
        &mut self,
        session: &Session,
        seed: u64,
        agent: &str,
        character: &str,
        round: u64,
    ) -> Option<String> {
        if self.failed {
            return None;
        }
        let mut system = render_at_tip(session, &self.instructions, character);
        system.push_str("\n## Your goals\n");
        for g in &self.goals {
            system.push_str(&format!("- {g}\n"));
        }
        system.push_str(
            "## Answer\nAnswer with one JSON object {\"say\": string}: what you say next (an empty string to say nothing).\n",
        );
        let mut messages = vec![ChatMessage {
            role: "system",
            content: system,
        }];
        if let Some(m) = session.current_index() {
            messages.extend(transcript(session.engine(), m, character, usize::MAX));
        }
        let body = request_body(&self.source.settings, &messages, &say_schema(), seed);
        let turn = format!(
            "round {round}, agent {agent} (input {})",
            session.next_message_id()
        );
        self.requests += 1;
        let answer = {
            let mut backend = self
                .source
                .backend
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            call_backend(&mut backend, &body, &turn)
        };
        let content = match answer {
            Ok((content, usage)) => {
                self.usage.add(usage);
                content
            }
            Err(f) => {
                self.failed = true;
                self.refused
                    .push(format!("round {round}: {}: {}", f.code, f.message));
                return None;
            }
        };
        match read_say(&content) {
            Ok(say) => say,
            Err(why) => {
                self.refused.push(format!("round {round}: {why}"));
                None
            }
        }
    }
}

/// Reads a persona model's answer (Format 22.3): `Ok(None)` for a blank
/// `say`, `Err` saying why it is invalid.
fn read_say(content: &str) -> Result<Option<String>, String> {
    let value: Value = serde_json::from_str(unfence(content))
        .map_err(|e| format!("the answer is not JSON ({e})"))?;
    let obj = value
        .as_object()
        .filter(|o| o.len() == 1)
        .ok_or("the answer is not a JSON object whose only member is `say`")?;
    match obj.get("say") {
        Some(Value::String(s)) => Ok((!s.trim().is_empty()).then(|| s.clone())),
        _ => Err("the answer's only member must be `say`, a string".into()),
    }
}

impl AgentPolicy {
    /// Compiles `persona`'s conditions for the agent playing `character`.
    /// A condition that does not compile never holds (an error is false).
    /// A model-driven persona without `answers` calls `source` (Format
    /// 22.3 "The backend"); with neither it says nothing.
    pub fn new(
        engine: &Engine,
        persona: &Persona,
        character: &str,
        goals: &[Goal],
        source: Option<&ModelSource>,
    ) -> AgentPolicy {
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
        let voice = persona.model.as_ref().map(|m| ModelVoice {
            instructions: m.instructions.clone(),
            goals: goals.iter().map(|g| g.does.clone()).collect(),
            source: match (&m.answers, source) {
                (None, Some(s)) => s.clone(),
                (answers, _) => ModelSource::new(
                    Settings::default(),
                    Backend::Mocks(
                        answers
                            .clone()
                            .unwrap_or_default()
                            .into_iter()
                            .collect::<VecDeque<_>>(),
                    ),
                ),
            },
            failed: false,
            requests: 0,
            usage: Usage::default(),
            refused: Vec::new(),
        });
        AgentPolicy {
            rules,
            fallback: persona.fallback.clone(),
            voice,
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
        &mut self,
        session: &Session,
        seed: u64,
        agent: &str,
        character: &str,
        board: &BoardView,
        round: u64,
    ) -> Option<String> {
        if let Some(v) = &mut self.voice {
            return v.line(session, seed, agent, character, round);
        }
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
