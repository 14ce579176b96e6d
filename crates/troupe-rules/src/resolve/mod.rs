//! Between load and check: a story's declarations and what names in it
//! resolve to (Format 6.4, 8.4, 8.5). [`story::Story`] is a scenario
//! resolved once from its bundle and session header (cast, seats, owners,
//! variables); the checks add diagnostics to it and the compiler lowers it. The checks read a checked story
//! through [`Decls`], the runtime a compiled one ([`crate::compile::StoryIr`]),
//! so a change is judged by the same code whether an author wrote it in a
//! rule or a model adapter proposed it during a session.

pub mod changes;
pub mod settings;
pub mod story;
pub mod values;

pub use changes::{check_changes, resolve_target, scalar_of, Decls, Keyed, Target, VarView};
