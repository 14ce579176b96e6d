//! The embedding API (docs/embedding.md): a few types in the style of
//! MiniJinja's `Environment`/`Template`, re-exported at the crate root.
//!
//! - [`Pack`] — an opened, checked story (`Send + Sync`, cheap to clone);
//! - [`Session`] — a story played turn by turn (`Send`), started with
//!   [`SessionOptions`];
//! - [`History`] — a recorded session, asked about at any message;
//! - [`Error`] — the one error type, with its [`ErrorKind`] and diagnostics;
//! - [`Runtime`] — what adapters implement to propose replies;
//! - [`check_report`], [`test_report`], [`cel_eval`] — the CLI's tools
//!   as functions returning their `--json` documents.

mod error;
mod history;
mod pack;
mod session;
mod tools;

pub use error::{Error, ErrorKind, Result};
pub use history::{EndedView, Ending, Explanation, History, Knowable, RenderOptions, StateView};
pub use pack::{Pack, ScenarioInfo};
pub use session::{RuntimeChoice, Session, SessionOptions};
pub use tools::{cel_eval, check_report, test_report};
