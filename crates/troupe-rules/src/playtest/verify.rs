//! Goal `verify` and persona `when` conditions (Format 22.3, 22.6):
//! compiled with the engine's condition compiler in the environment of
//! 11.3 extended with `signals` and `progress`, evaluated at a message of a
//! running session with `hit()` scanning `last`.

use std::sync::Arc;

use indexmap::IndexMap;

use crate::cel::{self, Activation, Env, EvalError, Host, Key, Value};
use crate::check::playtest::playtest_env;
use crate::compile::OwnerRef;
use crate::engine::eval::RollHost;
use crate::engine::{Engine, Point, State};
use crate::keys::{lower, KeyOptions, KeySet};

/// The blackboard as CEL sees it (Format 22.3): signals in the order first
/// raised, and each roster ID's goals met so far in goal order.
#[derive(Debug, Clone, Default)]
pub struct BoardView {
    /// Signals raised so far.
    pub signals: Vec<String>,
    /// Roster ID → IDs of its goals met so far.
    pub progress: IndexMap<String, Vec<String>>,
}

/// A condition compiled for one owner (the scenario, or an agent's
/// character) in the playtest environment.
#[derive(Debug)]
pub struct PlayCondition {
    program: cel::Program,
    env: u16,
    ext: Env,
    /// For each slot of `ext`, the slot of the story environment it reads.
    map: Vec<Option<usize>>,
    self_id: String,
}

/// Compiles `src` with `self_id` as `self` (the scenario for `None`);
/// `hit` declares `hit()` (persona conditions). Errors are the CEL
/// messages joined.
pub fn compile(
    engine: &Engine,
    src: &str,
    self_id: Option<&str>,
    hit: bool,
) -> Result<PlayCondition, String> {
    let r = engine.owner_ref(self_id);
    let ext = playtest_env(engine.owner_env(r, hit).into_owned());
    let program = cel::compile(src, &ext).map_err(|errs| {
        errs.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let env = engine
        .ir
        .envs
        .iter()
        .position(|e| e.owner == r)
        .unwrap_or_else(|| engine.ir.env_of(OwnerRef::Scenario) as usize) as u16;
    let base = engine.ir.envs.get(env as usize).map(|e| &e.env);
    let map = ext
        .slots()
        .map(|s| base.and_then(|b| b.slot(&s.name)))
        .collect();
    Ok(PlayCondition {
        program,
        env,
        ext,
        map,
        self_id: self_id.map_or_else(|| engine.ir.scenario.to_string(), str::to_string),
    })
}

struct PlayHost<'a> {
    last: String,
    roll: RollHost<'a>,
}

impl Host for PlayHost<'_> {
    fn hit(&mut self, keys: &[&str]) -> bool {
        KeySet::new(keys.iter().copied(), KeyOptions::RUNTIME).hits(&self.last)
    }
    fn roll(&mut self, notation: &str) -> Result<i64, EvalError> {
        self.roll.roll(notation)
    }
}

impl PlayCondition {
    /// Evaluates at `state` of `engine`'s session with `char` (Format
    /// 22.3, 22.6); an error is false (11.6).
    pub fn holds(&self, engine: &Engine, state: &State, char: &str, board: &BoardView) -> bool {
        matches!(self.eval(engine, state, char, board), Ok(Value::Bool(true)))
    }

    fn eval(
        &self,
        engine: &Engine,
        state: &State,
        char: &str,
        board: &BoardView,
    ) -> Result<Value, EvalError> {
        let Some(e) = engine.ir.envs.get(self.env as usize) else {
            return Ok(Value::Bool(false));
        };
        let point = Point {
            ir: &engine.ir,
            session: Some(&engine.session),
            char: None,
        };
        let mut base = Activation::new(&e.env);
        point.fill(state, self.env, None, &mut base);
        let mut act = Activation::new(&self.ext);
        for (i, m) in self.map.iter().enumerate() {
            if let Some(v) = m.and_then(|j| base.get(j)) {
                act.set(i, v.clone());
            }
        }
        act.set_by_name(&self.ext, "char", Value::string(char));
        act.set_by_name(&self.ext, "self", Value::string(&self.self_id));
        let signals = board.signals.iter().map(|s| Value::string(s)).collect();
        act.set_by_name(&self.ext, "signals", Value::List(Arc::new(signals)));
        let mut progress = crate::cel::value::MapValue::default();
        for (agent, met) in &board.progress {
            let list = met.iter().map(|g| Value::string(g)).collect();
            progress.insert(
                Key::String(Arc::from(agent.as_str())),
                Value::List(Arc::new(list)),
            );
        }
        act.set_by_name(&self.ext, "progress", Value::Map(Arc::new(progress)));
        let last = match self.ext.slot("last.text").and_then(|i| act.get(i)) {
            Some(Value::String(s)) => lower(s),
            _ => String::new(),
        };
        let message = state
            .at
            .and_then(|m| engine.session.messages.get(m as usize))
            .map_or("", |m| &*m.id);
        let mut host = PlayHost {
            last,
            roll: RollHost {
                seed: engine.session.seed,
                message,
                calls: 0,
            },
        };
        self.program.eval(&act, &mut host)
    }
}
