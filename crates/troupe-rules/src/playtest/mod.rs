//! Playtests (Format 22): several scripted players (agents) run a scenario
//! deterministically under the rules runtime, their words chosen by
//! personas (22.3) and the choreography, and every goal is verified by a
//! CEL condition over the state, with evidence (22.6).
//!
//! [`model::PackPlaytests::read`] reads a pack's files;
//! [`run::run_pack`] runs them and gives one [`report::PlaytestReport`]
//! each. The checks of 22.7 are in `check::playtest`.

pub mod model;
pub mod persona;
pub mod report;
pub mod run;
pub mod verify;

pub use model::{PackPlaytests, Playtest};
pub use report::{PlaytestReport, Verdict};
pub use run::{run_pack, run_playtest, RunSettings};
