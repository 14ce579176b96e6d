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
