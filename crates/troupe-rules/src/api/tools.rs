//! Tool entry points behind the `testing` feature: what `troupe
//! conformance` and `troupe graph` compute, for programs (an editor, an
//! MCP server) and for the CLI, which only wires them; also `troupe test`,
//! `playtest`, `docs` and `init`.

use std::path::Path;

use serde_json::Value;

use super::error::{Error, ErrorKind, Result};
use super::pack::Pack;
use crate::diag::render::Sources;

pub use super::testrun::{
    run_playtests, run_playtests_with, run_tests, run_tests_with, ChangeKind, Decision, Failure,
    GoalResult, PlaytestOptions, PlaytestReport, Progress, Quiet, SignalRecord, SnapshotChange,
    Snapshots, StageName, StepNotTaken, TestResult, TestRun, TestStatus, Verdict,
};

/// The results of a conformance run (Format 20): how many tests passed
/// and failed, and the report text `troupe conformance` prints.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let report = troupe::tools::conformance("conformance/cases/macros");
/// assert!(report.passed() > 0);
/// assert_eq!(report.failed(), 0, "{}", report.to_text());
/// ```
#[derive(Debug, Clone)]
pub struct ConformanceReport {
    inner: crate::conformance::Report,
}

impl ConformanceReport {
    /// Tests that passed.
    pub fn passed(&self) -> usize {
        self.inner.passed()
    }

    /// Tests that failed, suite errors included.
    pub fn failed(&self) -> usize {
        self.inner.failed()
    }

    /// One line per failure, then `N passed, M failed`.
    pub fn to_text(&self) -> String {
        self.inner.to_text()
    }
}

/// Runs the conformance suite in `dir` (its `cases/` when it has one):
/// every `*.json` case file with a `tests` member, in path order.
pub fn conformance(dir: impl AsRef<Path>) -> ConformanceReport {
    ConformanceReport {
        inner: crate::conformance::run_dir(dir.as_ref()),
    }
}

/// The text formats of [`graph`] (Format 20.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum GraphFormat {
    /// Graphviz DOT.
    #[default]
    Dot,
    /// A Mermaid flowchart.
    Mermaid,
    /// An SVG picture, laid out and drawn by Troupe (Format 20.2 "SVG";
    /// feature `pictures`).
    #[cfg(feature = "pictures")]
    Svg,
}

/// A scenario's wiring drawn as text: DOT, Mermaid or SVG (Format 20.2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    /// The scenario drawn.
    pub scenario: String,
    /// The DOT, Mermaid or SVG text.
    pub text: String,
}

/// The graph of scenario `scenario` (`None`: the first) of `pack`, as
/// `troupe graph` prints it.
///
/// Errors: [`ErrorKind::NotFound`] for an unknown scenario or a pack
/// without any; [`ErrorKind::Invalid`] when the story does not compile.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::tools::{graph, GraphFormat};
/// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
/// let g = graph(&pack, None, GraphFormat::Dot)?;
/// assert_eq!(g.scenario, "used_car_negotiation");
/// assert!(g.text.starts_with("digraph"));
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn graph(pack: &Pack, scenario: Option<&str>, format: GraphFormat) -> Result<Graph> {
    let g = graph_model(pack, scenario)?;
    let text = match format {
        GraphFormat::Dot => g.to_dot(),
        GraphFormat::Mermaid => g.to_mermaid(),
        #[cfg(feature = "pictures")]
        GraphFormat::Svg => crate::testing::graph_svg::to_svg(&g),
    };
    Ok(Graph {
        scenario: g.scenario,
        text,
    })
}

/// The nodes and edges of Format 20.2 of scenario `scenario` (`None`: the
/// first) of `pack`; errors as [`graph`].
pub(crate) fn graph_model(
    pack: &Pack,
    scenario: Option<&str>,
) -> Result<crate::testing::graph::Graph> {
    let ids: Vec<String> = pack.scenarios().into_iter().map(|s| s.id).collect();
    match scenario {
        Some(id) if !ids.iter().any(|x| x == id) => {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the pack has no scenario `{id}`{}",
                    crate::diag::suggest::one_of(id, ids.iter().map(String::as_str))
                ),
            ))
        }
        None if ids.is_empty() => {
            return Err(Error::new(ErrorKind::NotFound, "the pack has no scenario"))
        }
        _ => {}
    }
    let bundle: &Value = pack.bundle();
    let (story, ir) = crate::pipeline::compiled::compile_story_for(bundle, None, scenario)
        .map_err(|d| Error::invalid(d, Sources::new()))?;
    let rt = crate::runtime::compiled::RuntimeIr::compile(&story, &ir, None).map_err(|e| {
        Error::new(
            ErrorKind::Invalid,
            format!("cannot compile the rules: {}", e.0),
        )
    })?;
    Ok(crate::testing::graph::build(&ir, &rt))
}

/// Whether a pack's `README.md` holds the current generated reference
/// section (Format 20.3), as [`docs_check`] finds it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DocsStatus {
    /// The README holds the current section.
    Current,
    /// The README lacks the section or holds a stale one: the unified diff
    /// from the README as it is to the README [`docs_write`] would write.
    Stale(String),
}

/// The README a pack directory's generated docs go to (`PACK/README.md`).
pub fn docs_readme(pack: impl AsRef<Path>) -> std::path::PathBuf {
    crate::testing::docs::readme_path(pack.as_ref())
}

fn docs_error(e: crate::testing::docs::DocsError) -> Error {
    use crate::testing::docs::DocsError;
    match e {
        DocsError::Invalid(diagnostics, sources) => Error::invalid(diagnostics, sources),
        e @ DocsError::Markers(..) => Error::new(ErrorKind::Invalid, e.to_string()),
        e => Error::new(ErrorKind::Io, e.to_string()),
    }
}

/// Compares the generated reference section of pack directory `pack`'s
/// README with what [`docs_write`] would write (`troupe docs --check`);
/// never writes.
///
/// Errors: [`ErrorKind::Invalid`] with the diagnostics when the pack does
/// not check, or without any when the README's markers are malformed (the
/// message says how); [`ErrorKind::Io`] when reading fails.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::tools::{docs_check, DocsStatus};
/// assert_eq!(docs_check("examples/packs/everyday-negotiation")?, DocsStatus::Current);
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn docs_check(pack: impl AsRef<Path>) -> Result<DocsStatus> {
    use crate::testing::docs::Status;
    match crate::testing::docs::check(pack.as_ref()).map_err(docs_error)? {
        Status::Current => Ok(DocsStatus::Current),
        Status::Stale(diff) => Ok(DocsStatus::Stale(diff)),
    }
}

/// Writes the generated reference section into pack directory `pack`'s
/// README (`troupe docs`), through a temporary file and a rename; `false`
/// when it was current (nothing written). Errors as [`docs_check`], and
/// [`ErrorKind::Io`] when writing fails.
pub fn docs_write(pack: impl AsRef<Path>) -> Result<bool> {
    crate::testing::docs::write(pack.as_ref()).map_err(docs_error)
}

/// Scaffolds a new pack in `dir` (`troupe init`, Format 21): a pack that
/// passes `troupe check` and `troupe test`, with tests and a CI workflow.
/// `dir` is created and must be new or empty; every file is written
/// through a temporary file and never over an existing one. Returns the
/// files written, as paths relative to `dir`, in writing order.
///
/// Errors: [`ErrorKind::Refused`] when `dir` is not empty or a file of the
/// scaffold appeared meanwhile (nothing is overwritten);
/// [`ErrorKind::Io`] when writing fails.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let files = troupe::tools::init(dir.path().join("pack"))?;
/// assert!(!files.is_empty());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn init(dir: impl AsRef<Path>) -> Result<Vec<String>> {
    use crate::testing::init::InitError;
    crate::testing::init::init(dir.as_ref()).map_err(|e| match e {
        e @ (InitError::NotEmpty(_) | InitError::Exists(_)) => {
            Error::new(ErrorKind::Refused, e.to_string())
        }
        e => Error::new(ErrorKind::Io, e.to_string()),
    })
}

/// Whether this build knows its own source (a git URL and a full commit,
/// from `TROUPE_GIT_URL` and `TROUPE_GIT_REV` at build time): when not,
/// the CI workflow [`init`] writes holds placeholders to replace.
pub fn init_pins_source() -> bool {
    crate::testing::init::pinned_source().2
}

pub use crate::testing::explore::{
    default_jobs as explore_default_jobs, Alphabet as ExploreAlphabet, Bound as ExploreBound,
    Counts as ExploreCounts, Exploration, ItemResult as ExploreItem, ItemStatus as ExploreStatus,
    Line as ExploreLine, Mode as ExploreMode, Root as ExploreRoot, SearchReport as ExploreSearch,
    Settings as ExploreSettings, StoppedBy as ExploreStoppedBy, Witness as ExploreWitness,
    DEFAULT_DEPTH as EXPLORE_DEFAULT_DEPTH, DEFAULT_STATES as EXPLORE_DEFAULT_STATES,
    MAX_DEPTH as EXPLORE_MAX_DEPTH, MAX_RUNS as EXPLORE_MAX_RUNS, MAX_STATES as EXPLORE_MAX_STATES,
};

/// Explores a scenario of `pack` as `troupe explore` does (Format 20.5):
/// a bounded breadth-first search with a checked witness per reached
/// event, outcome, rule and speaker, or (`ExploreMode::Random`) seeded random
/// playthroughs counted with the coverage items of `troupe test`.
/// `dir` is the pack directory the pack was opened from, if it was one
/// (coverage labels then name pack files, Format 21.6). `progress` is
/// told the states visited (search) or runs played (random) so far.
///
/// Errors: [`ErrorKind::NotFound`] for an unknown scenario;
/// [`ErrorKind::Refused`] for a bound out of range or a session that cannot
/// start; [`ErrorKind::Internal`] for a witness that does not replay (a
/// bug of the search).
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::tools::{explore, ExploreSettings, ExploreStatus};
/// let pack = troupe::Pack::open("examples/packs/everyday-negotiation")?;
/// let e = explore(&pack, None, &ExploreSettings::default(), &mut |_| {})?;
/// let success = e.items.iter().find(|i| i.item == "outcome success").unwrap();
/// assert_eq!(success.status, ExploreStatus::Reached);
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn explore(
    pack: &Pack,
    dir: Option<&Path>,
    settings: &ExploreSettings,
    progress: &mut dyn FnMut(u64),
) -> Result<Exploration> {
    let opened = pack.opened();
    if let Some(id) = &settings.scenario {
        let ids: Vec<String> = pack.scenarios().into_iter().map(|s| s.id).collect();
        if !ids.iter().any(|x| x == id) {
            return Err(Error::new(
                ErrorKind::NotFound,
                format!(
                    "the pack has no scenario `{id}`{}",
                    crate::diag::suggest::one_of(id, ids.iter().map(String::as_str))
                ),
            ));
        }
    }
    let mut model = None;
    if matches!(settings.mode, ExploreMode::Random { .. }) {
        let origins = dir
            .filter(|d| d.is_dir())
            .and_then(|d| {
                let mut checked = crate::check::run::Checked::default();
                crate::open::check_scanned_pack(d, crate::load::scan_pack(d), &mut checked)
            })
            .map(|(_, lowered)| lowered.origins)
            .unwrap_or_default();
        model = Some(crate::testing::coverage::Model::new(
            opened.bundle.value(),
            &origins,
        ));
    }
    let scenario_model = model.as_ref().and_then(|m| {
        let id = settings
            .scenario
            .clone()
            .or_else(|| pack.scenarios().first().map(|s| s.id.clone()))?;
        m.scenarios.get(&id)
    });
    crate::testing::explore::explore(opened, scenario_model, settings, progress).map_err(|e| {
        let kind = match e {
            crate::testing::explore::Failure::Refused(_) => ErrorKind::Refused,
            crate::testing::explore::Failure::Internal(_) => ErrorKind::Internal,
        };
        Error::new(kind, e.to_string())
    })
}

/// Writes each witness of `exploration` into `dir` as a script with its
/// root (`DIR/<kind>-<id>.yaml`, Format 20, 20.5), each through a partial
/// file and a rename (16.3), creating `dir` when missing, and records each
/// file's path in its witness. The caller refuses a `dir` that is an input first
/// ([`crate::files::refuse_inputs`]).
///
/// Errors: [`ErrorKind::Io`] when a file cannot be written.
pub fn write_witnesses(exploration: &mut Exploration, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::new(
            ErrorKind::Io,
            format!("cannot create {}: {e}", dir.display()),
        )
    })?;
    let (scenario, seed) = (exploration.scenario.clone(), exploration.seed);
    for item in &mut exploration.items {
        let Some(w) = &mut item.witness else { continue };
        let path = dir.join(crate::testing::explore::script_name(&item.item));
        let text = crate::testing::explore::script_text(&scenario, seed, &item.item, w);
        crate::output::write_atomic(&path, text.as_bytes())
            .map_err(|e| Error::new(ErrorKind::Io, e.to_string()))?;
        w.script = Some(path.display().to_string());
    }
    Ok(())
}
