//! The core's internals that Troupe's own crates beside it, and the
//! repository's tests, benchmarks, examples and fuzz targets, need and the
//! embedding API does not offer (issue 38 items 4 and 6: a curated list of
//! named items, never a switch that makes every module public). Enabled by
//! the feature `internals`, which `troupe-import` turns on and the
//! repository's own dev-dependency on the core too. **Not a stable
//! interface**: it changes with the core, whatever its version says.
//!
//! One module per stage of the pipeline (DESIGN §1); what the crate root
//! already exports (`Code`, `Diagnostic`, `Severity`, `Runtime`,
//! `TurnResult`, the lore explanation's parts, …) is not repeated here.

/// Diagnostics (Format 17.2): the importers' escaping and suggestions, the
/// rendered report the tests compare the examples' output with, and the
/// human rendering the fuzz targets run on what they found.
pub mod diag {
    pub use crate::diag::escape_token;
    pub use crate::diag::render::{render_human, Report, Sources};
    pub use crate::diag::suggest::one_of;
}

/// Reading input within the budgets (Format 16) and the compiled entries of
/// a package (Format 14.4): the importers read documents; the load tests
/// (hardening, hostile input, spans) parse, scan and screen below the
/// checker; the benchmarks and the package tests build compiled entries.
pub mod load {
    pub use crate::load::compiled::{bundle_json, compact_entry, content_hash, COMPACT_RECORD_LEN};
    pub use crate::load::limits::{MAX_JSONL_LINE_BYTES, MAX_ZIP_ENTRIES};
    pub use crate::load::pack::partial_path;
    pub use crate::load::package::bad_name;
    pub use crate::load::text::read_bounded;
    pub use crate::load::{
        parse_json, parse_package, parse_session, parse_yaml, read_bundle, read_package,
        read_session, resolve_ref, scan_pack, screen_package, screen_package_view, Document,
        LineCol, SessionDoc, SpanIndex, PATH_LOOKUPS,
    };
    pub use crate::pipeline::compiled::bare_document;
}

/// The checks (Format 17) of documents already read, of paths, of a pack's
/// files, of a package and of a session, and the format's schemas (Format
/// 2.2, 15): the importers check what they produce; the tests check fixtures
/// and bound the session checker's work; the fuzz targets check whatever
/// they read.
pub mod check {
    pub use crate::check::bundle::check_bundle;
    pub use crate::check::run::{
        check_bundle_document, check_pack, check_package, check_session_document,
    };
    pub use crate::check::schema::{ID_BASE, SOURCES};
    pub use crate::check::session::check_session;
    pub use crate::check::{SchemaKind, Schemas};
    pub use crate::open::check_paths;
}

/// The format's values (Format 3.2, 8.2).
pub mod model {
    pub use crate::model::{integer, RESERVED_IDS};
}

/// The resolved story (Format 4–7) the compiler lowers: the engine
/// benchmarks hold it beside the engine they build.
pub mod resolve {
    pub use crate::resolve::story::Story;
}

/// The IR (Format 14): a package's compiled story read, written and
/// verified (the IR tests, the package-integrity tests, the benchmarks and
/// `examples/perf_probe.rs`), a session compiled on its own (the engine
/// benchmarks) and the variables' layout and derived inputs (Format 8.1).
pub mod compile {
    pub use crate::compile::derived::DerivedInputs;
    pub use crate::compile::package::{
        read_ir, read_ir_bin, to_ir_bin, to_ir_json_bytes, PackageIr, IR_MAX_NESTING,
    };
    pub use crate::compile::{Layout, SessionCompiler};
    pub use crate::pipeline::package::{compiled_forms_match, ir_bytes, write_package};
}

/// Load, check and compile in one call (Format 14): the engine tests and
/// the fuzz targets build an engine from a bundle and a session, the
/// benchmarks a story and its IR.
pub mod pipeline {
    pub use crate::pipeline::compiled::compile_story_for;
    pub use crate::pipeline::{compile_checked, compile_checked_session, load};
}

/// Opening a pack, a bundle or a package (Format 14.4) as the runtime's
/// `Opened`, for what the embedding API's `Pack` hides: the runtime tests
/// drive the runtime's own session, the IR tests read the IR a package
/// opened with, the benchmarks and
/// `examples/perf_probe.rs` time the open itself; and an engine over a
/// recorded session (the example snapshots read its rendered parts).
/// Everything else opens through [`crate::Pack`].
pub mod open {
    pub use crate::open::{open, open_engine};
}

/// The engine (Format 8–12): the compiled story and session queried at a
/// message; the tests compare its answers with the checker's and with
/// every derived variable recomputed, the bounds tests count its replay
/// steps, the benchmarks time it.
pub mod engine {
    pub use crate::engine::macros::RenderFor;
    pub use crate::engine::replay::{replay_all, Tree};
    /// The tests' hooks (feature `test-hooks`: not in the `troupe` binary).
    #[cfg(feature = "test-hooks")]
    pub use crate::engine::{eval::with_every_recompute, replay::steps_taken};
    pub use crate::engine::{Engine, Report, DEFAULT_STRIDE};
}

/// The lore keys (Format 5.4): the bounds tests time their matching; the
/// module's own examples build sets and an index.
pub mod keys {
    pub use crate::keys::{KeyIndex, KeyOptions, KeySet};
}

/// The runtime (Format 18, 24) below the embedding API's `Session`: the
/// runtime tests drive a session turn by turn and replay what it wrote.
pub mod runtime {
    pub use crate::runtime::replay::replay;
    pub use crate::runtime::{Opened, Options, RuntimeKind, Session, StartError, TurnError};

    /// The model runtime's answers and cassettes (Format 24.4, 24.5), which
    /// the fuzz targets feed arbitrary text.
    pub mod chat {
        pub use crate::runtime::chat::{read_answer, repair_text, validate, Cassette};
    }

    /// The transcript lines `troupe run` and `troupe play` print (Format
    /// 18.6, 20), which the runtime tests compare with a session's record.
    pub mod transcript {
        pub use crate::runtime::transcript::{score, start, turn};
    }

    /// The runtime session under an embedding [`crate::Session`]: the
    /// engine tests read its compiled story and state.
    pub trait Inner {
        /// The runtime session this embedding session drives.
        fn inner(&self) -> &Session;
    }

    impl Inner for crate::Session {
        fn inner(&self) -> &Session {
            self.runtime_session()
        }
    }
}

/// JSON as the IR reader takes it (Format 14.4): text kept raw, nesting
/// bounded, strings shared (the IR tests and the module's own examples).
pub mod wire {
    pub use crate::wire::{shared_str, shared_strs, JsonText, Nesting};
}

/// The condition language (Format 11): Troupe's CEL compiled and evaluated
/// on its own, for the CEL conformance suite, the CEL tests, the CEL
/// benchmark, `examples/perf_probe.rs` and the fuzz targets (which also
/// walk the parsed tree and roll dice, Format 11.5).
pub mod cel {
    pub use crate::cel::dice::{parse_notation, roll};
    pub use crate::cel::parse::{parse, Expr, ExprKind};
    pub use crate::cel::suite::run_text;
    pub use crate::cel::{
        compile, troupe_env, Activation, CelErrorKind, Env, EvalError, EvalErrorKind, Host, Key,
        MapValue, NoHost, ObjectType, StoryDecls, Type, Value,
    };
}

/// The macro language (Format 10): a template's parts (the importers), and
/// a template rendered in a scope (the fuzz targets).
pub mod template {
    pub use crate::template::{parse, render, Macro, Node, Scope};
}

/// The test runner (Format 21): its stages, results, reports and coverage,
/// and `troupe init`'s pinned source, which the testing tests drive below
/// the API's `test_report`.
#[cfg(feature = "testing")]
pub mod testing {
    pub use crate::testing::init::{init, pinned_source};
    pub use crate::testing::model::{StageName, StageResult, Status, TestResult};
    pub use crate::testing::report::{to_json, to_junit, to_text};
    pub use crate::testing::runner::Installed;
    pub use crate::testing::stages::{
        run, Decision, Options, Quiet, Run, SnapshotChange, Snapshots, UsageError, GATE_REASON,
    };

    /// Condition coverage (Format 21.6): the model of a bundle's conditions
    /// and the report of what a run hit.
    pub mod coverage {
        pub use crate::testing::coverage::{report, Hits, Model};
    }
}

/// The conformance suite (Format 23, `tests/conformance`): its runner
/// and outcome.
#[cfg(feature = "testing")]
pub mod conformance {
    pub use crate::conformance::{run_dir, Outcome};
}
