//! Troupe: an embedded, scripting-free rules engine for multi-character
//! interactive scenarios.
//!
//! The pipeline, one module per stage (`docs/format.md`, DESIGN §1):
//!
//! ```text
//! load (bytes → documents) → check (diagnostics) → compile (IR) → engine
//! ```
//!
//! `diag` is the base every stage reports with; `cel` (conditions) and
//! `template` (macros) are languages the checker and the compiler use.
//! Lower stages never import higher ones.

mod api;
pub use api::*;

pub mod cel;
pub mod check;
pub mod cli;
pub mod compile;
pub mod conformance;
pub mod diag;
pub mod engine;
pub mod import;
pub mod keys;
pub mod load;
pub mod model;
pub mod output;
pub mod playtest;
pub mod runtime;
pub mod template;
pub mod testing;

pub use diag::{Code, Diagnostic, Location, Severity};
pub use runtime::safety::Status as SafetyStatus;
pub use runtime::{
    Changes, FiringRecord, OpenOptions, OpeningResult, Proposal, Reply, Runtime, Score,
    SessionControl, TurnContext, TurnResult,
};

/// The lore explanation's parts (Format 5.3), as [`Explanation`] holds them.
pub mod lore {
    pub use crate::compile::lore::{Logic, Position};
    pub use crate::engine::{EntryActivation, KeyHit, Secondary, When, Why};
}
