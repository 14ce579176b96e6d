//! A playtest's result (Format 22.6) and its `--json` shape.

use serde::Serialize;
use serde_json::Value;

use crate::runtime::chat::Usage;

/// PASS, FAIL or NOT RUN (Format 22.6 "Result").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum Verdict {
    /// Every required goal met and the requirements hold.
    #[serde(rename = "PASS")]
    Pass,
    /// Otherwise.
    #[serde(rename = "FAIL")]
    Fail,
    /// A model-driven persona has no model backend (Format 22.3): nothing
    /// ran; neither passed nor failed.
    #[serde(rename = "NOT RUN")]
    NotRun,
}

impl Verdict {
    /// `PASS`, `FAIL` or `NOT RUN`.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "PASS",
            Verdict::Fail => "FAIL",
            Verdict::NotRun => "NOT RUN",
        }
    }
}

/// One goal's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GoalResult {
    /// The roster ID; `None` for a group goal.
    pub agent: Option<String>,
    /// The goal ID.
    pub goal: String,
    /// The goal's `do`.
    #[serde(skip)]
    pub does: String,
    /// Whether it was met.
    pub met: bool,
    /// Whether the mode requires it (Format 22.2).
    pub required: bool,
    /// Where it first held, or the final state (Format 22.6).
    pub evidence: Value,
}

/// A signal on the blackboard (Format 22.4).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SignalRecord {
    /// The signal.
    pub signal: String,
    /// The message where it was first raised.
    pub message: String,
    /// The agent whose session raised it (`parallel` mode), else `None`.
    pub session: Option<String>,
    /// The run round.
    pub round: u64,
}

/// A choreography step the run did not take, and why.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepNotTaken {
    /// The step's index in `choreography` (from 0).
    pub step: usize,
    /// Why.
    pub reason: String,
}

/// A model-driven agent's calls (Format 22.3 "Model-driven personas").
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PersonaUsage {
    /// The roster ID.
    pub agent: String,
    /// Model calls made.
    pub requests: u32,
    /// Token usage summed over them (24.7).
    pub usage: Usage,
    /// `round <r>: <why>` per invalid answer or failed call.
    pub refused: Vec<String>,
}

/// The report of one playtest (Format 22.6).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlaytestReport {
    /// The playtest's name.
    pub name: String,
    /// The file it came from.
    #[serde(skip)]
    pub file: String,
    /// PASS / FAIL / NOT RUN.
    pub status: Verdict,
    /// Why it is NOT RUN; left out of `--json` otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Requirements that did not hold (Format 22.5).
    pub requirements: Vec<String>,
    /// Each goal: agent goals in roster and goal order, then group goals.
    pub goals: Vec<GoalResult>,
    /// The blackboard's signals.
    pub signals: Vec<SignalRecord>,
    /// Steps not taken.
    pub steps_not_taken: Vec<StepNotTaken>,
    /// What each model-driven persona's calls cost (Format 22.3), in roster
    /// order; left out of `--json` when empty.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub model: Vec<PersonaUsage>,
    /// The session files written (file name, bytes; Format 22.5).
    #[serde(skip)]
    pub sessions: Vec<(String, String)>,
}

impl PlaytestReport {
    /// The text report: one line for the playtest, one per goal, the
    /// signals and the steps not taken.
    pub fn to_text(&self) -> String {
        let mut out = format!("{} {}\n", self.status.as_str(), self.name);
        if let Some(r) = &self.reason {
            out.push_str(&format!("  reason: {r}\n"));
        }
        for r in &self.requirements {
            out.push_str(&format!("  requirement: {r}\n"));
        }
        let goals = if self.status == Verdict::NotRun {
            &[][..]
        } else {
            &self.goals[..]
        };
        for g in goals {
            let who = g.agent.as_deref().unwrap_or("group");
            let met = if g.met { "met" } else { "NOT MET" };
            let req = if g.required { "" } else { " (not required)" };
            out.push_str(&format!(
                "  {who}/{}: {met}{req} — {}\n    evidence: {}\n",
                g.goal, g.does, g.evidence
            ));
        }
        if !self.signals.is_empty() {
            let s: Vec<String> = self
                .signals
                .iter()
                .map(|s| format!("{} at {} (round {})", s.signal, s.message, s.round))
                .collect();
            out.push_str(&format!("  signals: {}\n", s.join(", ")));
        }
        for s in &self.steps_not_taken {
            out.push_str(&format!("  step {} not taken: {}\n", s.step, s.reason));
        }
        for m in &self.model {
            let u = &m.usage;
            out.push_str(&format!(
                "  model {}: {} request{} · {} tokens ({} prompt, {} completion)\n",
                m.agent,
                m.requests,
                if m.requests == 1 { "" } else { "s" },
                u.total_tokens,
                u.prompt_tokens,
                u.completion_tokens
            ));
            for r in &m.refused {
                out.push_str(&format!("    refused: {r}\n"));
            }
        }
        out
    }
}
