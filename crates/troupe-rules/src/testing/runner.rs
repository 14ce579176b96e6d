//! What fixtures run against (Format 18.4–18.7): a [`TurnRunner`] steps a
//! session one turn at a time and returns the turn result of 18.6.
//! [`Installed`] starts sessions of the rules and fake runtimes of
//! [`crate::runtime`] and replays recorded sessions with its replay runtime.

use serde_json::{Map, Value};

use crate::engine::{Engine, Recorder};
use crate::runtime::{Opened, Options, RuntimeKind, Session};

pub use crate::runtime::TurnResult;

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

/// A session being stepped one turn at a time (Format 18.5).
pub trait TurnRunner {
    /// Takes one turn with `input` as the first player's text.
    fn turn(&mut self, input: &str) -> Result<TurnResult, TurnError>;
    /// The flattened state (8.6) at the last message (the initial state
    /// before the first turn), in state order.
    fn state(&self) -> Map<String, Value>;
    /// The host changes the settings between turns (Format 8.9, a
    /// fixture's settings step). The default: this runtime cannot.
    fn change_settings(&mut self, _settings: &Value) -> Result<(), TurnError> {
        Err(TurnError::Other(
            "this runtime cannot change settings mid-session".into(),
        ))
    }
    /// The engine holding the messages written so far, for coverage
    /// (Format 21.6); `None` when the runtime writes nothing (fake).
    fn engine(&self) -> Option<&Engine> {
        None
    }
    /// What the session evaluated so far (the observer's reports, Format
    /// 21.6); `None` when the runtime records nothing (fake).
    fn recorder(&self) -> Option<Recorder> {
        None
    }
    /// The session, for its transcript (Format 18.6); `None` when there is
    /// none to show.
    fn session(&self) -> Option<&Session> {
        None
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
    /// The model runtime's answers in call order (a fixture's
    /// `mocks.model`, Format 21.3, 24.8); used under `runtime: model`.
    pub model_answers: Vec<Value>,
    /// A cassette to replay instead (a fixture's `cassette`, Format 21.3,
    /// 24.5); it takes precedence over `model_answers`.
    pub model_cassette: Option<crate::runtime::chat::Cassette>,
}

/// Starts sessions for fixtures, one per runtime name.
pub trait Runtimes {
    /// Starts a session of `bundle` under `runtime` (`rules`, `fake`,
    /// `model` with the settings' answers).
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
    fn replay(&self, _engine: &Engine) -> Option<Vec<crate::diag::Diagnostic>> {
        None
    }

    /// Re-plays a recorded session's player inputs under the rules runtime
    /// (Format 21.5 step 3) with the recorded header's settings and root
    /// (`(root ID, opening ID)`), each input (or host's settings change,
    /// Format 8.9) a child of the re-played counterpart of its recorded
    /// parent; returns the new session file's text, `Err` why it
    /// could not start, or `None` when no rules runtime exists.
    fn replay_inputs(
        &self,
        _bundle: &Value,
        _header: &Value,
        _root: Option<(&str, &str)>,
        _inputs: &[super::replays::Input],
    ) -> Option<Result<String, String>> {
        None
    }
}

/// The runtimes of `crate::runtime`: `rules` and `fake`, and replay.
#[derive(Debug, Clone, Copy, Default)]
pub struct Installed;

impl Runtimes for Installed {
    fn start(
        &self,
        runtime: &str,
        bundle: &Value,
        settings: &Settings,
    ) -> Result<Box<dyn TurnRunner>, String> {
        let kind = match runtime {
            "rules" | "model" => RuntimeKind::Rules,
            "fake" => RuntimeKind::Fake,
            other => return Err(format!("no runtime `{other}`")),
        };
        let opened = Opened::from_checked(String::new(), bundle.clone());
        let options = Options {
            scenario: Some(settings.scenario.clone()),
            difficulty: settings.difficulty.clone(),
            seed: settings.seed,
            opening: None,
            runtime: kind,
            header_players: None,
            leave_unfilled: false,
            player_name: None,
        };
        let session = if runtime == "model" {
            use crate::runtime::chat::{Backend, ModelRuntime, Settings as ModelSettings};
            let rt = ModelRuntime::new(
                ModelSettings::default(),
                match &settings.model_cassette {
                    Some(c) => Backend::Replay(c.clone()),
                    None => Backend::Mocks(settings.model_answers.iter().cloned().collect()),
                },
            );
            Session::start_recorded_with(&opened, &options, Box::new(rt))
        } else {
            Session::start_recorded(&opened, &options)
        }
        .map_err(|e| e.to_string())?;
        Ok(Box::new(Running {
            session,
            turns: 0,
            fake: kind == RuntimeKind::Fake,
        }))
    }

    fn replay(&self, engine: &Engine) -> Option<Vec<crate::diag::Diagnostic>> {
        Some(crate::runtime::replay::replay(engine).diagnostics)
    }

    fn replay_inputs(
        &self,
        bundle: &Value,
        header: &Value,
        root: Option<(&str, &str)>,
        inputs: &[super::replays::Input],
    ) -> Option<Result<String, String>> {
        let opening = root.map(|r| r.1);
        let opened = Opened::from_checked(String::new(), bundle.clone());
        let h = crate::model::Header::read(header);
        let options = Options {
            scenario: h.scenario.map(str::to_string),
            difficulty: h.difficulty.map(str::to_string),
            seed: h.seed.unwrap_or(0),
            opening: opening.map(str::to_string),
            runtime: RuntimeKind::Rules,
            header_players: h.players.map(|p| {
                (
                    Value::Array(p.to_vec()),
                    h.characters.map(|c| Value::Array(c.to_vec())),
                )
            }),
            // The recording's own seating, filled or not.
            leave_unfilled: true,
            player_name: None,
        };
        let mut session = match Session::start(&opened, &options) {
            Ok(s) => s,
            Err(e) => return Some(Err(e.to_string())),
        };
        // Recorded ID of a turn's last message (or the root) → re-played ID.
        let mut now: std::collections::HashMap<String, String> = Default::default();
        if let (Some((recorded, _)), Some(current)) = (root, session.current_id()) {
            now.insert(recorded.to_string(), current.to_string());
        }
        for input in inputs {
            if let Some(p) = &input.parent {
                match now.get(p) {
                    Some(target) => {
                        let target = target.clone();
                        session.go_to(&target);
                    }
                    None => break, // its parent's turn was not re-played
                }
            }
            let text = match &input.act {
                super::replays::Act::Say(text) => text,
                super::replays::Act::Settings(settings) => {
                    match session.change_settings(settings) {
                        Ok(r) => {
                            if let Some(m) = r.message {
                                now.insert(input.id.clone(), m);
                            }
                        }
                        Err(crate::runtime::TurnError::Ended) => {}
                        Err(e) => return Some(Err(e.to_string())),
                    }
                    continue;
                }
            };
            match session.turn(text) {
                Ok(r) => {
                    if let Some(last) = r.messages.last() {
                        now.insert(input.id.clone(), last.clone());
                        if let Some(a) = &input.answer {
                            now.insert(a.clone(), last.clone());
                        }
                    }
                }
                Err(crate::runtime::TurnError::Ended) => continue,
                Err(e) => return Some(Err(e.to_string())),
            }
        }
        Some(Ok(session.session_text().to_string()))
    }
}

/// A session of [`crate::runtime`] as a [`TurnRunner`].
struct Running {
    session: Session,
    turns: i64,
    fake: bool,
}

impl TurnRunner for Running {
    fn turn(&mut self, input: &str) -> Result<TurnResult, TurnError> {
        let r = match self.session.turn(input) {
            Ok(r) => r,
            Err(crate::runtime::TurnError::Ended) => return Err(TurnError::Ended(self.turns)),
            Err(e) => return Err(TurnError::Other(e.to_string())),
        };
        self.turns += 1;
        Ok(r)
    }

    fn state(&self) -> Map<String, Value> {
        self.session.flattened()
    }

    fn change_settings(&mut self, settings: &Value) -> Result<(), TurnError> {
        match self.session.change_settings(settings) {
            Ok(_) => Ok(()),
            Err(crate::runtime::TurnError::Ended) => Err(TurnError::Ended(self.turns)),
            Err(e) => Err(TurnError::Other(e.to_string())),
        }
    }

    fn engine(&self) -> Option<&Engine> {
        (!self.fake).then(|| self.session.engine())
    }

    fn recorder(&self) -> Option<Recorder> {
        if self.fake {
            return None;
        }
        self.session.recorder()
    }

    fn session(&self) -> Option<&Session> {
        Some(&self.session)
    }
}
