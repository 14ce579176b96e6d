//! From documents and files to an [`Engine`]: the input is checked and
//! compiled first ([`crate::compile::load`]; non-conforming input is
//! refused with its diagnostics, Format 17.1), and the engine is built
//! from the compiled story and session alone.

use serde_json::Value;

use super::{Engine, DEFAULT_STRIDE};
use crate::compile::load::{self as compiled, Compiled};
use crate::diag::Diagnostic;
use crate::load::{Document, SessionDoc};

pub use crate::compile::load::{bare_document, check_all};

fn engine(c: Result<Compiled, Vec<Diagnostic>>) -> Result<Engine, Vec<Diagnostic>> {
    c.map(|c| Engine::new(c.story, c.session, c.has_session, DEFAULT_STRIDE))
}

/// Checks and compiles (see [`Engine::load`]).
pub fn load(
    bundle: &Value,
    session: Option<(&Value, &[Value])>,
    scenario: Option<&str>,
) -> Result<Engine, Vec<Diagnostic>> {
    engine(compiled::load(bundle, session, scenario))
}

/// Checks and compiles parsed documents (see [`Engine::load`]).
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
pub fn compile_checked_session(bundle: &Value, doc: &SessionDoc) -> Result<Engine, Vec<Diagnostic>> {
    engine(compiled::compile_checked_session(bundle, doc))
}
