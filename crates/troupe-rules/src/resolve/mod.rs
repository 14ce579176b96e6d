//! Between load and check: a story's declarations and what names in it
//! resolve to (Format 6.4, 8.4, 8.5). [`story::Story`] is a scenario
//! resolved once from its bundle and session header (cast, seats, owners,
//! variables); the checks add diagnostics to it and the compiler lowers it.
//! The checks read it through [`crate::changes::Decls`], as the runtime reads
//! a compiled story ([`crate::compile::StoryIr`]), so a change is judged by the
//! same code whether an author wrote it in a rule or a model adapter proposed
//! it during a session.

pub mod env;
pub mod story;
