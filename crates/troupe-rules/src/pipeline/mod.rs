//! The stages in sequence (Format 17.1): documents are checked, then
//! compiled, and an [`Engine`] is built from the compiled story and
//! session alone. Non-conforming input is refused with its diagnostics:
//! nothing is compiled from it. This is the one module that runs `check`
//! before `compile`; the stages themselves import no stage above them
//! (`compile` lowers, the engine steps the IR).
//!
//! ```no_run
//! # let (bundle, header, messages) = (serde_json::json!({}), serde_json::json!({}), vec![]);
//! let engine = troupe::internals::pipeline::load(&bundle, Some((&header, &messages[..])), None).unwrap();
//! let at = engine.session.find("m3").unwrap();
//! println!("{}", serde_json::Value::Object(engine.flatten(&engine.state_at(at))));
//! ```

pub mod compiled;
pub mod package;

use serde_json::Value;

use crate::diag::Diagnostic;
use crate::engine::{Engine, DEFAULT_STRIDE};
use crate::load::{Document, SessionDoc};
use compiled::Compiled;

pub use compiled::{bare_document, check_all};

/// What every opened pack compiles with when its IR does not cover a
/// session (Format 17.1, 18.4): each checks before it compiles.
pub const SEATING: crate::runtime::Seating = crate::runtime::Seating {
    default_scenario: package::compile_scenario,
    start: compiled::compile_start,
};

fn engine(c: Result<Compiled, Vec<Diagnostic>>) -> Result<Engine, Vec<Diagnostic>> {
    c.map(|c| Engine::new(c.story, c.session, c.has_session, DEFAULT_STRIDE))
}

/// Checks and compiles a bundle, a session (header and message values,
/// file order) or none, and the scenario to use without a session (the
/// first when `None`), into an engine. Non-conforming input is refused
/// with its diagnostics (Format 17.1): the engine never guesses.
pub fn load(
    bundle: &Value,
    session: Option<(&Value, &[Value])>,
    scenario: Option<&str>,
) -> Result<Engine, Vec<Diagnostic>> {
    engine(compiled::load(bundle, session, scenario))
}

/// Checks and compiles parsed documents (see [`load`]).
pub fn load_documents(
    bundle: &Document,
    session: Option<&SessionDoc>,
    scenario: Option<&str>,
) -> Result<Engine, Vec<Diagnostic>> {
    engine(compiled::load_documents(bundle, session, scenario))
}

/// Compiles input that has passed its checks (no check runs here).
pub fn compile_checked(
    bundle: &Value,
    session: Option<(Value, Vec<Value>)>,
    scenario: Option<&str>,
) -> Result<Engine, Vec<Diagnostic>> {
    engine(compiled::compile_checked(bundle, session, scenario))
}

/// Compiles a session that has passed its checks (no check runs here),
/// one line at a time (Format 16.2).
pub fn compile_checked_session(
    bundle: &Value,
    doc: &SessionDoc,
) -> Result<Engine, Vec<Diagnostic>> {
    engine(compiled::compile_checked_session(bundle, doc))
}
