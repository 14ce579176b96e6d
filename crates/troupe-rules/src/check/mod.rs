//! Stage 2: checks (Format 17). Schema validation, references, types and the
//! semantic checks of a bundle, pack, package or session. Every problem is a
//! [`crate::diag::Diagnostic`].

pub mod assertion_syntax;
pub mod bundle;
pub mod conditions;
pub mod ensemble;
pub mod ids;
pub mod lints;
pub mod locate;
pub mod pack;
pub mod playtest;
pub mod reach;
pub mod run;
pub mod runtime;
pub mod schema;
mod schema_errors;
pub mod session;
mod summaries;
pub mod templates;

pub use schema::{SchemaKind, Schemas};
