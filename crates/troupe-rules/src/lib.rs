//! Troupe: an embedded, scripting-free rules engine for multi-character
//! interactive scenarios.
//!
//! The pipeline, one module per stage (`docs/format.md`, DESIGN §1):
//!
//! ```text
//! load (bytes → documents) → resolve (declarations, names) → check (diagnostics)
//!   → compile (IR) → engine (state, knows, macros) → runtime (sessions)
//! ```
//!
//! `diag` is the base every stage reports with; `cel` (conditions) and
//! `template` (macros) are languages the checker and the compiler use.
//! Lower stages never import higher ones: nothing after `compile` imports
//! `check`, and a session needs only the IR. `open` is the one way a pack,
//! a bundle or a package is opened (load, check, compile) for every client;
//! `api` is the embedding API (docs/embedding.md), re-exported here.
//!
//! The command line is not part of this crate: the `troupe` binary (the
//! package `troupe-cli` at the repository's root), `troupe serve`
//! (`troupe-server`) and `troupe mcp` (`troupe-mcp`) are crates of their own
//! that reach the library only through the public API below.

#![deny(missing_docs)]

// `troupe::…` paths inside the crate too: the command line's clients (the
// MCP server) name only the public API, as an outside program would.
extern crate self as troupe;

mod api;
pub use api::*;

/// Declares internal modules: `pub` with the `unstable-internals` feature
/// (tests, benchmarks, fuzz targets), `pub(crate)` otherwise. Nothing in
/// them is a stable interface; the API is what the crate root re-exports.
macro_rules! internal_modules {
    ($($name:ident),* $(,)?) => {$(
        #[cfg(feature = "unstable-internals")]
        pub mod $name;
        // Without the feature, items only tests, benchmarks and the fuzz
        // targets use are unused here (they were never linted while every
        // module was public), and so are some convenience re-exports. With
        // the CLI in the binary, lifting this shows 75 such warnings; the
        // two items nothing used (a conformance and a CEL helper) were
        // deleted; most of the rest are used by tests, benches or fuzz
        // targets, or are fields kept for their documents' shape (not every
        // one was reviewed yet).
        #[cfg(not(feature = "unstable-internals"))]
        #[allow(dead_code, unused_imports)]
        pub(crate) mod $name;
    )*};
}

internal_modules!(
    cel, check, compile, diag, engine, keys, load, model, open, resolve, runtime, template, wire
);

// Behind cargo features (docs/embedding.md, "Features").
#[cfg(feature = "import")]
internal_modules!(import);
#[cfg(feature = "testing")]
internal_modules!(conformance, playtest, testing);
#[cfg(feature = "testing")]
internal_modules!(output);

pub use diag::{Code, Diagnostic, Location, Severity};
pub use runtime::safety::Status as SafetyStatus;
pub use runtime::{
    Changes, ChatMessage, FiringRecord, OpenOptions, OpeningResult, Proposal, Reply, Runtime,
    Score, SessionControl, SettingsResult, Structured, TurnContext, TurnResult,
};

/// The lore explanation's parts (Format 5.3), as [`Explanation`] holds them.
pub mod lore {
    pub use crate::compile::lore::{Logic, Position};
    pub use crate::engine::{EntryActivation, KeyHit, Secondary, When, Why};
}
