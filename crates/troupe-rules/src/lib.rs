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
// With every feature on, nothing is dead: items only the core's own unit
// tests use are `cfg(test)`, those the repository's tests also use are
// `cfg(any(test, feature = "internals"))` and re-exported by `internals`,
// and the few fields kept
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

// The internal modules, one per stage (module docs above). None is public:
// what an embedder uses is re-exported from `api` below, and what Troupe's
// own crates, tests, benchmarks and fuzz targets need beyond it is the
// curated `internals` (issue 38 items 4 and 6).
pub(crate) mod bounded_regex;
pub(crate) mod cel;
pub(crate) mod changes;
pub(crate) mod check;
pub(crate) mod compile;
pub(crate) mod diag;
pub(crate) mod engine;
pub(crate) mod keys;
pub(crate) mod load;
pub(crate) mod model;
pub(crate) mod open;
pub(crate) mod par;
pub(crate) mod pipeline;
pub(crate) mod resolve;
pub(crate) mod runtime;
pub(crate) mod template;
pub(crate) mod wire;

// Behind cargo features (docs/embedding.md, "Features").
#[cfg(feature = "testing")]
pub(crate) mod conformance;
#[cfg(feature = "internals")]
pub mod internals;
#[cfg(feature = "testing")]
pub(crate) mod output;
#[cfg(feature = "testing")]
pub(crate) mod playtest;
#[cfg(feature = "testing")]
pub(crate) mod testing;

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
