//! Playtest and persona files as data (Format 22.1, 22.3), read from a
//! pack's `playtests/*.yaml` and `personas/*.yaml` once they passed their
//! schema (`troupe check`).

use serde::Deserialize;
use serde_json::Value;

use crate::load::{PackFileKind, PackFiles};

/// How a playtest runs (Format 22.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// One shared session; every goal must be met.
    Party,
    /// One shared session; agent goals are competitive and never fail.
    Adversarial,
    /// One session per agent.
    Parallel,
    /// One shared session driven only by the choreography.
    Scenario,
}

/// Preconditions of a run (Format 22.5 "Requires").
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Requires {
    /// The difficulty preset the run must use.
    pub difficulty: Option<String>,
    /// The manifest's content rating.
    pub content_rating: Option<String>,
    /// The number of players of each session.
    #[serde(default, deserialize_with = "crate::model::de_opt_int")]
    pub players: Option<u64>,
}

/// A goal (Format 22.1): words and a CEL `verify` (22.6).
#[derive(Debug, Clone, Deserialize)]
pub struct Goal {
    /// The goal's ID.
    pub id: String,
    /// What the agent (or group) tries to do, in words.
    #[serde(rename = "do")]
    pub does: String,
    /// The CEL condition that decides.
    pub verify: String,
}

/// An agent of the roster (Format 22.1).
#[derive(Debug, Clone, Deserialize)]
pub struct Agent {
    /// The roster ID.
    pub id: String,
    /// The persona ID.
    pub role: String,
    /// A seat ID or a `player: true` cast character ID.
    pub target: String,
    /// The agent's goals.
    #[serde(default)]
    pub goals: Vec<Goal>,
}

/// A choreography step (Format 22.1, 22.4).
#[derive(Debug, Clone, Deserialize)]
pub struct Step {
    /// The roster ID that speaks.
    pub who: String,
    /// What it says (a template).
    #[serde(rename = "do")]
    pub does: String,
    /// A signal to wait for.
    pub after: Option<String>,
    /// The run round to wait for.
    #[serde(default, deserialize_with = "crate::model::de_opt_int")]
    pub round: Option<u64>,
}

fn default_rounds() -> u64 {
    20
}

/// A playtest file (Format 22.1).
#[derive(Debug, Clone, Deserialize)]
pub struct Playtest {
    /// The playtest's name.
    pub name: String,
    /// The mode.
    pub mode: Mode,
    /// The scenario played.
    pub scenario_id: String,
    /// The sessions' seed.
    #[serde(default, deserialize_with = "crate::model::de_int")]
    pub seed: u64,
    /// The last run round.
    #[serde(default = "default_rounds", deserialize_with = "crate::model::de_int")]
    pub rounds: u64,
    /// Preconditions.
    #[serde(default)]
    pub requires: Requires,
    /// A cassette its model-driven personas replay (Format 22.1, 22.3): a
    /// pack-relative path.
    pub cassette: Option<String>,
    /// The agents.
    pub roster: Vec<Agent>,
    /// Goals of the whole roster.
    #[serde(default)]
    pub group_goals: Vec<Goal>,
    /// Scripted steps.
    #[serde(default)]
    pub choreography: Vec<Step>,
}

/// A persona rule (Format 22.3).
#[derive(Debug, Clone, Deserialize)]
pub struct PersonaRule {
    /// When the rule applies (absent: always).
    pub when: Option<String>,
    /// The lines to choose from.
    pub say: Vec<String>,
}

/// A persona: a deterministic player policy (Format 22.3).
#[derive(Debug, Clone, Deserialize)]
pub struct Persona {
    /// The persona ID.
    pub persona_id: String,
    /// The display name of a seat it fills.
    pub name: Option<String>,
    /// Rules, tried in order.
    #[serde(default)]
    pub rules: Vec<PersonaRule>,
    /// Lines when no rule holds.
    #[serde(default)]
    pub fallback: Vec<String>,
    /// Lines from a model instead of the rules (Format 22.3).
    pub model: Option<PersonaModel>,
}

/// A persona's model (Format 22.3 "Model-driven personas").
#[derive(Debug, Clone, Deserialize)]
pub struct PersonaModel {
    /// The instructions template (the system message's first part).
    pub instructions: String,
    /// Inline answers in call order (24.8); `None`: no model backend.
    pub answers: Option<Vec<Value>>,
}

/// A pack's playtests and personas, each with its file path.
#[derive(Debug, Clone, Default)]
pub struct PackPlaytests {
    /// Playtests by file path order.
    pub playtests: Vec<(String, Playtest)>,
    /// Personas by file path order.
    pub personas: Vec<(String, Persona)>,
    /// Files that did not read as their shape (path, message).
    pub errors: Vec<(String, String)>,
    /// The manifest's `content_rating`.
    pub content_rating: Option<String>,
    /// The manifest's `players.max`.
    pub players_max: Option<u64>,
    /// The pack directory (a playtest's `cassette` is read from it).
    pub root: std::path::PathBuf,
}

impl PackPlaytests {
    /// Reads the playtests and personas of a scanned pack.
    pub fn read(pack: &PackFiles) -> PackPlaytests {
        let mut out = PackPlaytests {
            root: pack.root.clone(),
            ..PackPlaytests::default()
        };
        for (path, (kind, doc)) in &pack.files {
            match kind {
                PackFileKind::Playtest => match Playtest::deserialize(&doc.value) {
                    Ok(p) => out.playtests.push((path.clone(), p)),
                    Err(e) => out.errors.push((path.clone(), e.to_string())),
                },
                PackFileKind::Persona => match Persona::deserialize(&doc.value) {
                    Ok(p) => out.personas.push((path.clone(), p)),
                    Err(e) => out.errors.push((path.clone(), e.to_string())),
                },
                _ => {}
            }
        }
        if let Some(m) = &pack.manifest {
            let m = crate::model::manifest::Manifest::read(&m.value);
            out.content_rating = m.content_rating.map(str::to_string);
            out.players_max = m.players_max;
        }
        out
    }

    /// The persona `id`.
    pub fn persona(&self, id: &str) -> Option<&Persona> {
        self.personas
            .iter()
            .map(|(_, p)| p)
            .find(|p| p.persona_id == id)
    }

    /// The playtest whose `name`, file name or file stem is `name`.
    pub fn find(&self, name: &str) -> Option<&(String, Playtest)> {
        self.playtests.iter().find(|(path, p)| {
            let file = path.rsplit('/').next().unwrap_or(path);
            let stem = file.rsplit_once('.').map_or(file, |(s, _)| s);
            p.name == name || file == name || stem == name || path == name
        })
    }
}
