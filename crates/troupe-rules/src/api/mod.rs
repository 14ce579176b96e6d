//! The embedding API (docs/embedding.md): a few types in the style of
//! MiniJinja's `Environment`/`Template`, re-exported at the crate root.
//!
//! - [`Pack`] — an opened, checked story (`Send + Sync`, cheap to clone);
//! - [`Session`] — a story played turn by turn (`Send`), started with
//!   [`SessionOptions`];
//! - [`History`] — a recorded session, asked about at any message;
//! - [`Error`] — the one error type, with its [`ErrorKind`] and diagnostics;
//! - [`Runtime`] — what adapters implement to propose replies;
//! - [`check`] — what `troupe check` reports, as a [`CheckReport`];
//! - [`check_report`], [`test_report`], [`cel_eval`] — the CLI's tools
//!   as functions returning their `--json` documents;
//! - [`cel_check`], [`transcript::document`], [`schemas`], [`output_schemas`]
//!   — what `troupe cel check` and `troupe run --json` answer, and the
//!   embedded schemas, for clients such as `troupe mcp`;
//! - [`conditions`], [`transcript`], [`files`], [`model_runtime`] and
//!   `tools` (feature `testing`) — what the `troupe` command is built
//!   from, for programs that do the same. Importing and exporting
//!   SillyTavern content is the crate `troupe-import`.

mod cel_check;
mod check;
pub mod conditions;
mod error;
pub mod files;
mod history;
pub mod model_runtime;
mod pack;
#[cfg(feature = "pictures")]
pub mod pictures;
mod reports;
mod schemas;
mod session;
#[cfg(feature = "testing")]
mod testrun;
mod text;
#[cfg(feature = "testing")]
pub mod tools;
pub mod transcript;

pub use cel_check::{cel_check, CelCheck};
pub use check::{check, check_with_jobs, CheckReport};
pub use error::{Error, ErrorKind, Result};
pub use history::{
    check_template, EndedView, Ending, Explanation, History, Knowable, RenderOptions, StateView,
};
pub use pack::{Pack, ScenarioInfo};
#[cfg(feature = "testing")]
pub use reports::test_report;
pub use reports::{cel_eval, check_report};
pub use schemas::{output_schemas, schemas};
pub use session::{NextSpeaker, ResumeOptions, RuntimeChoice, Session, SessionOptions};
pub use text::{escape_controls, excerpt, render_diagnostics, suggest};
