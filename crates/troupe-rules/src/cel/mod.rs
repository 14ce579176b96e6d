//! CEL conditions (Format 11): a parser, a type checker and an evaluator
//! over compiled programs, all Troupe's own.
//!
//! ```
//! use troupe::internals::cel::{compile, Activation, Env, NoHost, Type, Value};
//! let mut env = Env::new();
//! env.declare("trust", Type::Int).declare("turn", Type::Int);
//! let program = compile("trust > 60 && turn >= 3", &env).unwrap();
//! let mut act = Activation::new(&env);
//! act.set(env.slot("trust").unwrap(), Value::Int(70));
//! act.set(env.slot("turn").unwrap(), Value::Int(3));
//! assert!(program.eval_bool(&act, &mut NoHost));
//! ```

pub mod checker;
pub mod dice;
pub mod env;
pub mod error;
pub mod eval;
pub mod functions;
mod lex;
mod operands;
pub mod parse;
#[cfg(test)]
mod parse_legacy;
pub mod program;
pub mod suite;
pub mod types;
pub mod value;

pub use env::{troupe_base_env, troupe_owner_env, Activation, Env};
pub use error::{CelError, EvalError};
pub use eval::{Host, NoHost};
pub use program::{compile, Program, SHARED_BUDGET};
pub use types::{ObjectType, Type};
pub use value::{Key, Value};
// What only the tests, benchmarks and fuzz targets name.
#[cfg(any(test, feature = "internals"))]
pub use env::{troupe_env, StoryDecls};
#[cfg(any(test, feature = "internals"))]
pub use error::{CelErrorKind, EvalErrorKind};
#[cfg(any(test, feature = "internals"))]
pub use value::MapValue;
