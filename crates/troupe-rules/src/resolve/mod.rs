//! Between load and check: a story's declarations and what names in it
//! resolve to (Format 6.4, 8.4, 8.5). The checks read a checked story
//! through [`Decls`], the runtime a compiled one ([`crate::compile::StoryIr`]),
//! so a change is judged by the same code whether an author wrote it in a
//! rule or a model adapter proposed it during a session.

pub mod changes;
pub mod settings;
pub mod values;

pub use changes::{check_changes, resolve_target, scalar_of, Decls, Keyed, Target, VarView};
