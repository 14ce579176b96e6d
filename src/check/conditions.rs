//! Conditions and derived variables (Format 8.1, 11): every CEL expression of
//! a story parses and type-checks against the story's declarations, and
//! derived variables have no cycle.

use super::story::Story;
use crate::diag::Diagnostic;

/// Checks every CEL expression of a story.
pub fn check_conditions(_story: &Story, _out: &mut Vec<Diagnostic>) {}
