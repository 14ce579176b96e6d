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
//! `diag` is the base every stage reports with, `model` the format's data
//! types, `changes` the rules of a change against declarations (checked
//! alike in an author's rule and in a model adapter's proposal); `cel`
//! (conditions) and `template` (macros) are languages the checker and the
//! compiler use. Lower stages never import higher ones: nothing after
//! `compile` imports `resolve` or `check`, and a session needs only the IR. `open` is the one way a pack,
//! a bundle or a package is opened (load, check, compile) for every client;
//! `api` is the embedding API (docs/embedding.md), re-exported here.
//!
//! The command line is not part of this crate: the `troupe` binary (the
//! package `troupe-cli` at the repository's root), `troupe serve`
//! (`troupe-server`) and `troupe mcp` (`troupe-mcp`) are crates of their own
//! that reach the library only through the public API below.

#![deny(missing_docs)]
// Edition 2024 (for its merged doc tests) makes `let` chains available, and
// clippy then asks for ~100 nested `if let`s written under 2021 to become
// chains: a mechanical rewrite left for a moment when no branch is open on
// these files (DECISIONS.md, "Core crate on edition 2024").
#![allow(clippy::collapsible_if)]
// With every feature on, nothing is dead: items only the tests use are
// `cfg(any(test, feature = "unstable-internals"))` and the few fields kept
// for their documents' shape say so where they are. A build without some
// optional features (the embedder's default has none) leaves the code only
// those features call unused, as in tokio's and hyper's feature-reduced
// builds; that is all this allows.
#![cfg_attr(
    not(all(
        feature = "testing",
        feature = "internals",
        feature = "pictures",
        feature = "model"
    )),
    allow(dead_code, unused_imports)
)]

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
        #[cfg(not(feature = "unstable-internals"))]
        pub(crate) mod $name;
    )*};
}

internal_modules!(
    cel, changes, check, compile, diag, engine, keys, load, model, open, pipeline, resolve,
    runtime, template, wire
);

// Behind cargo features (docs/embedding.md, "Features").
#[cfg(feature = "internals")]
pub mod internals;
#[cfg(feature = "testing")]
internal_modules!(conformance, playtest, testing);
#[cfg(feature = "testing")]
internal_modules!(output);

pub use diag::{Code, Diagnostic, Location, Severity};
pub use runtime::safety::Status as SafetyStatus;
pub use runtime::{
    Changes, ChatMessage, CompiledChanges, FiringRecord, OpenOptions, OpeningResult, Proposal,
    Reply, Runtime, Score, SessionControl, SettingsResult, Structured, TurnContext, TurnResult,
};

/// The lore explanation's parts (Format 5.3), as [`Explanation`] holds them.
pub mod lore {
    pub use crate::compile::lore::{Logic, Position};
    pub use crate::engine::{EntryActivation, KeyHit, Secondary, When, Why};
}
