//! Stage 3: compile (DESIGN §1). A checked bundle (or a pack lowered to one)
//! and optionally a session become the IR the engine runs: IDs resolved to
//! indices, CEL programs compiled, templates parsed, derived variables
//! ordered, keyed variables laid out as slots (Format 6–12).
//!
//! Compilation assumes conforming input (Format 17.1): the checks run first
//! (see [`crate::pipeline::load`]); anything that does not resolve is a
//! [`CompileError`].

pub mod canonical;
pub mod changes;
pub mod derived;
pub mod ir;
pub mod lore;
pub mod model;
pub mod package;
pub mod path;
pub mod runtime;
pub mod safety;
pub mod session;
pub mod story;
pub mod time;
pub mod value;
pub mod written;

pub use ir::*;
pub use lore::{EntryIr, Logic, Position};
pub use session::{compile_session, MessageIr, SessionCompiler, SessionIr};
pub use story::compile_story;
#[cfg(test)]
pub(crate) use story::COMPILES as STORY_COMPILES;
pub use value::{format_decimal, Val};

/// A story compiled with its session (empty without one): all an
/// [`crate::engine::Engine`] needs.
#[derive(Debug)]
pub struct Compiled {
    /// The compiled story.
    pub story: StoryIr,
    /// The compiled session (no messages when there is none).
    pub session: SessionIr,
    /// Whether a session was given.
    pub has_session: bool,
}

/// A story or session that does not lower: it was not conforming.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot compile: {0}")]
pub struct CompileError(pub String);
