//! Conditions evaluated at a message on demand (Format 11): compiled
//! against the story's declarations for an owner, evaluated at a state.

use super::{Engine, State};
use crate::cel::{self, Activation, CelError, EvalError, Program, Value};
use std::borrow::Cow;

use crate::cel::Env;
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

    /// The CEL declarations of owner `r` (Format 11.3), as the story's own
    /// conditions were compiled against; `hit` declares `hit()` (11.4).
    pub fn owner_env(&self, r: OwnerRef, hit: bool) -> Cow<'_, Env> {
        let env = self.ir.envs.get(self.ir.env_of(r) as usize).map(|e| &e.env);
        match env {
            Some(e) if e.allow_hit == hit => Cow::Borrowed(e),
            Some(e) => Cow::Owned(e.clone().with_hit(hit)),
            None => Cow::Owned(Env::default().with_hit(hit)),
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
        let program = cel::compile(src, &self.owner_env(r, hit))?;
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
