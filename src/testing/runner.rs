//! What fixtures run against (Format 18.4–18.7): a [`TurnRunner`] steps a
//! session one turn at a time and returns the turn result of 18.6. The
//! fake runtime (18.7) lives here; the rules runtime is plugged in through
//! [`Runtimes`].

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::engine::Engine;

/// A firing of a turn (Format 18.6): `{"event": id}` or `{"outcome": id}`
/// with the message that records it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TurnFiring {
    /// The event's ID, for an event.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub event: Option<String>,
    /// The outcome's ID, for an outcome.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub outcome: Option<String>,
    /// The message it was recorded on.
    pub message: String,
}

impl TurnFiring {
    /// The event or outcome ID.
    pub fn id(&self) -> &str {
        self.event
            .as_deref()
            .or(self.outcome.as_deref())
            .unwrap_or("")
    }
}

/// The result of one turn (Format 18.6); every field always present.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TurnResult {
    /// `turn` (8.8) at the input message.
    pub turn: i64,
    /// The IDs the turn wrote, in order.
    pub messages: Vec<String>,
    /// The turn's rule, if any.
    pub rule: Option<String>,
    /// The rendered reply, if any.
    pub reply: Option<String>,
    /// The state entries that changed (state order; absent ones `null`).
    pub state_delta: Map<String, Value>,
    /// The turn's firings in order.
    pub firings: Vec<TurnFiring>,
    /// `continue_session` or `end_session`.
    pub session_control: String,
    /// `ok`, `redirect` or `stop`.
    pub safety_status: String,
    /// The scenario's emotion, if any.
    pub npc_emotion: Option<String>,
    /// Whether the story is ended at the turn's last message.
    pub ended: bool,
    /// The story's outcome there.
    pub outcome: Option<String>,
    /// The rubric score when the session ends.
    pub score: Option<Value>,
}

/// Why a turn could not be taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TurnError {
    /// The session has ended (Format 18.5): the turn is refused.
    #[error("the session ended at turn {0}")]
    Ended(i64),
    /// Anything else that stops the run (an internal error).
    #[error("{0}")]
    Other(String),
}

/// What a turn reached, for coverage (Format 21.6), beyond its result.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reached {
    /// The opening of a root the run wrote.
    pub openings: Vec<String>,
    /// Entries (`<owner>/<entry>`) active at a message the run wrote.
    pub entries: Vec<String>,
}

/// A session being stepped one turn at a time (Format 18.5).
pub trait TurnRunner {
    /// Takes one turn with `input` as the first player's text.
    fn turn(&mut self, input: &str) -> Result<TurnResult, TurnError>;
    /// The flattened state (8.6) at the last message (the initial state
    /// before the first turn), in state order.
    fn state(&self) -> Map<String, Value>;
    /// Openings and entries reached so far (coverage).
    fn reached(&self) -> Reached {
        Reached::default()
    }
}

/// The settings a fixture starts its session with (Format 18.4, 21.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// The scenario's ID.
    pub scenario: String,
    /// The seed (0 by default).
    pub seed: u64,
    /// The difficulty preset, when the fixture gives one.
    pub difficulty: Option<String>,
}

/// Starts sessions for fixtures, one per runtime name.
pub trait Runtimes {
    /// Starts a session of `bundle` under `runtime` (`rules`, `fake`).
    /// `Err` is why it cannot run (the fixture is ERR with it).
    fn start(
        &self,
        runtime: &str,
        bundle: &Value,
        settings: &Settings,
    ) -> Result<Box<dyn TurnRunner>, String>;

    /// Replays a recorded session (Format 18.7 `replay`) and returns its
    /// FIRING_MISMATCH diagnostics; `None` when no replay runtime exists
    /// (the sessions stage then says the firings were not replayed).
    fn replay(
        &self,
        _bundle: &Value,
        _header: &Value,
        _messages: &[Value],
    ) -> Option<Vec<crate::diag::Diagnostic>> {
        None
    }
}

/// The runtimes built so far: `fake` only. `rules` is ERR with a reason
/// until the rules runtime exists.
#[derive(Debug, Clone, Copy, Default)]
pub struct BuiltIn;

impl Runtimes for BuiltIn {
    fn start(
        &self,
        runtime: &str,
        bundle: &Value,
        settings: &Settings,
    ) -> Result<Box<dyn TurnRunner>, String> {
        match runtime {
            "fake" => Ok(Box::new(Fake::start(bundle, settings)?)),
            "rules" => Err("the rules runtime is not built yet (Format 18.2): this fixture needs `runtime: rules`".into()),
            other => Err(format!("no runtime `{other}`")),
        }
    }
}

/// The session header 18.4 gives a run: each seat filled with a header
/// character and its player; the difficulty when given; the seed.
pub fn default_header(bundle: &Value, settings: &Settings) -> Value {
    let scenario = bundle
        .get("scenarios")
        .and_then(Value::as_array)
        .and_then(|s| {
            s.iter()
                .find(|x| x.get("id").and_then(Value::as_str) == Some(&settings.scenario))
        });
    let seats: Vec<String> = scenario
        .and_then(|s| s.get("cast"))
        .and_then(Value::as_array)
        .map(|cast| {
            cast.iter()
                .filter_map(|c| c.get("seat").and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut h = Map::new();
    h.insert("troupe".into(), json!("0.1"));
    h.insert("kind".into(), json!("session"));
    h.insert("scenario".into(), json!(settings.scenario));
    if !seats.is_empty() {
        h.insert(
            "players".into(),
            Value::Array(
                seats
                    .iter()
                    .map(|s| json!({"seat": s, "character": s}))
                    .collect(),
            ),
        );
        h.insert(
            "characters".into(),
            Value::Array(
                seats
                    .iter()
                    .map(|s| json!({"id": s, "name": "Player", "fictional": true, "age_band": "adult"}))
                    .collect(),
            ),
        );
    }
    let default = scenario
        .and_then(|s| s.pointer("/difficulty/default"))
        .and_then(Value::as_str);
    if let Some(d) = settings.difficulty.as_deref().or(default) {
        h.insert("difficulty".into(), json!(d));
    }
    h.insert("seed".into(), json!(settings.seed));
    Value::Object(h)
}

/// The fake runtime (Format 18.7): writes nothing, evaluates nothing; every
/// turn reports every initial state entry but the scene as its delta.
#[derive(Debug)]
pub struct Fake {
    initial: Map<String, Value>,
    turns: i64,
}

impl Fake {
    /// Starts a fake session: the initial state of the scenario with the
    /// default players and the settings' difficulty.
    pub fn start(bundle: &Value, settings: &Settings) -> Result<Fake, String> {
        let header = default_header(bundle, settings);
        let engine =
            Engine::load(bundle, Some((&header, &[])), Some(&settings.scenario)).map_err(|d| {
                let first = d.first().map_or(String::new(), |d| {
                    format!(": {} {}", d.code.as_str(), d.message)
                });
                format!(
                    "the session does not start ({} diagnostics{first})",
                    d.len()
                )
            })?;
        Ok(Fake {
            initial: engine.flatten(engine.initial()),
            turns: 0,
        })
    }
}

impl TurnRunner for Fake {
    fn turn(&mut self, _input: &str) -> Result<TurnResult, TurnError> {
        self.turns += 1;
        let state_delta = self
            .initial
            .iter()
            .filter(|(k, _)| *k != "scene.location" && *k != "scene.present")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        Ok(TurnResult {
            turn: self.turns,
            messages: Vec::new(),
            rule: None,
            reply: None,
            state_delta,
            firings: Vec::new(),
            session_control: "continue_session".into(),
            safety_status: "ok".into(),
            npc_emotion: None,
            ended: false,
            outcome: None,
            score: None,
        })
    }

    fn state(&self) -> Map<String, Value> {
        self.initial.clone()
    }
}
