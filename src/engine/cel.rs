//! Conditions evaluated at a message on demand (Format 11): compiled
//! against the story's declarations for an owner, evaluated at a state.

use super::{Engine, State};
use crate::cel::{self, Activation, CelError, EvalError, Program, Value};
use crate::check::conditions::owner_env;
use crate::check::story::Owner;
use crate::compile::OwnerRef;

/// A condition compiled for one owner of the story.
#[derive(Debug)]
pub struct Condition {
    /// The program.
    pub program: Program,
    /// The environment index it evaluates in.
    pub env: u16,
}

impl Engine {
    /// The owner whose ID is `id` (the scenario for `None`, its own ID, or an
    /// ID that is no cast member or world).
    pub fn owner_ref(&self, id: Option<&str>) -> OwnerRef {
        let Some(id) = id else {
            return OwnerRef::Scenario;
        };
        if let Some(c) = self.ir.cast_index(id) {
            return OwnerRef::Cast(c);
        }
        match self.ir.worlds.iter().position(|w| &**w == id) {
            Some(w) => OwnerRef::World(w as u16),
            None => OwnerRef::Scenario,
        }
    }

    /// Compiles `src` for the owner `self_id` (the scenario for `None`);
    /// `hit` declares `hit()` (entry conditions, Format 11.4).
    pub fn compile_condition(
        &self,
        src: &str,
        self_id: Option<&str>,
        hit: bool,
    ) -> Result<Condition, Vec<CelError>> {
        let r = self.owner_ref(self_id);
        let owner = match r {
            OwnerRef::Scenario => Owner::Scenario(self.ir.scenario.to_string()),
            OwnerRef::Cast(_) => Owner::Character(self.ir.owner_id(r).to_string()),
            OwnerRef::World(_) => Owner::World(self.ir.owner_id(r).to_string()),
        };
        let env = owner_env(&self.story, &owner, hit);
        let program = cel::compile(src, &env)?;
        Ok(Condition {
            program,
            env: self.ir.env_of(r),
        })
    }

    /// Evaluates a condition at `state` with `char` (Format 11.3: `""` for
    /// none); `hit()` is false and `roll()` seeded by the state's message.
    pub fn eval_condition(
        &self,
        cond: &Condition,
        state: &State,
        char: &str,
    ) -> Result<Value, EvalError> {
        let point = super::Point {
            ir: &self.ir,
            session: Some(&self.session),
            char: None,
        };
        let Some(e) = self.ir.envs.get(cond.env as usize) else {
            return Ok(Value::Bool(false));
        };
        let mut act = Activation::new(&e.env);
        point.fill(state, cond.env, None, &mut act);
        act.set_by_name(&e.env, "char", Value::string(char));
        let message = state
            .at
            .and_then(|m| self.session.messages.get(m as usize))
            .map_or("", |m| &*m.id);
        let mut host = super::RollHost {
            seed: self.session.seed,
            message,
            calls: 0,
        };
        cond.program.eval(&act, &mut host)
    }
}
