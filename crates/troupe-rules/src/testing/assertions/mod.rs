//! Static assertions (Format 21.4): a path into the pack files as written
//! and a check that must hold for the value found. [`syntax`] parses both
//! (pest grammar `grammar/assertion.pest`, in `check` so that `troupe
//! check` reports ASSERTION_SYNTAX); [`eval`] resolves and checks.

pub mod eval;
/// The syntax lives with the checks (`troupe check` reports it).
pub use crate::check::assertion_syntax as syntax;

pub use eval::{holds, resolve};
pub use syntax::{parse_check, parse_path};
