//! Running a pack's tests (Format 21) and playtests (Format 22) from a
//! program, as `troupe test` and `troupe playtest` do; re-exported from
//! [`crate::tools`] (feature `testing`).

use std::path::Path;

use super::error::{Error, ErrorKind, Result};
use super::pack::Pack;

pub use crate::playtest::report::{
    GoalResult, PlaytestReport, SignalRecord, StepNotTaken, Verdict,
};
pub use crate::testing::model::{Failure, StageName, Status as TestStatus, TestResult};
pub use crate::testing::stages::{
    ChangeKind, Decision, Progress, Quiet, SnapshotChange, Snapshots,
};

/// The result of [`run_tests`]: the five stages, coverage and the exit
/// code (Format 21.1, 21.2), in the report formats of `troupe test`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct TestRun {
    run: crate::testing::stages::Run,
}

impl TestRun {
    /// 0 (every stage PASS or SKIP), 1 (a failure) or 3 (a stage ERR), as
    /// `troupe test` exits (Format 21.1).
    pub fn exit_code(&self) -> i32 {
        self.run.exit_code
    }

    /// The text report `troupe test` prints (Format 21.2); text from the
    /// pack is not escaped here ([`crate::escape_controls`] before printing
    /// it to a terminal).
    pub fn to_text(&self) -> String {
        crate::testing::report::to_text(&self.run)
    }

    /// The JSON document `troupe test --json` prints (Format 21.2,
    /// `schemas/output/test.schema.json`), as text ending with a newline.
    pub fn to_json(&self) -> String {
        crate::testing::report::to_json(&self.run)
    }

    /// The transcript of each test that ran a session — a fixture's run
    /// turn by turn as `troupe run` prints it (Format 18.6), what the HTML
    /// report shows under the fixture (21.2); a recorded session (21.5:
    /// the re-play when it differs from the recording, else the recording)
    /// and a playtest's sessions (22.5) as `troupe transcript` prints them
    /// (Format 20) — as `(stage, test name, transcript)` in report order
    /// (a name is unique within its stage); tests without one (assertions,
    /// runtimes without a session, a playtest that did not run) are left
    /// out.
    pub fn transcripts(&self) -> Vec<(StageName, String, String)> {
        self.run
            .stages
            .iter()
            .flat_map(|s| s.tests.iter().map(move |t| (s.stage, t)))
            .filter(|(_, t)| !t.transcript.is_empty())
            .map(|(s, t)| (s, t.name.clone(), t.transcript.clone()))
            .collect()
    }

    /// The JUnit XML report `troupe test --junit FILE` writes.
    pub fn to_junit(&self) -> String {
        crate::testing::report::to_junit(&self.run)
    }

    /// The run as one self-contained HTML page (`troupe test --html`,
    /// Format 21.2; feature `pictures`): stages, coverage, each fixture's
    /// transcript and the graph of each of the pack's scenarios as SVG.
    #[cfg(feature = "pictures")]
    pub fn to_html(&self) -> String {
        use crate::testing::model::Status;
        let checked = self
            .run
            .stages
            .first()
            .is_some_and(|s| !matches!(s.status, Status::Fail | Status::Err));
        let graphs = if checked {
            Pack::open(&self.run.pack)
                .map_err(|e| format!("the pack could not be opened: {e}"))
                .and_then(|pack| {
                    pack.scenarios()
                        .into_iter()
                        .enumerate()
                        .map(|(n, sc)| {
                            // IDs prefixed per graph: one page, no ID twice.
                            super::tools::graph_model(&pack, Some(&sc.id))
                                .map(|g| {
                                    let svg = crate::testing::graph_svg::to_svg_with_ids(
                                        &g,
                                        &format!("g{n}-"),
                                    );
                                    (sc.id.clone(), svg)
                                })
                                .map_err(|e| format!("no graph of scenario {}: {e}", sc.id))
                        })
                        .collect()
                })
        } else {
            Err("the pack did not pass its check, so it has no graph".to_string())
        };
        crate::testing::report::html::to_html(&self.run, &graphs)
    }
}

/// Runs the tests of pack directory `pack` (Format 21): check, static
/// assertions, fixtures, sessions and playtests; `test` selects one
/// fixture by `fixture_id`, file name or file stem. `snapshots` says how
/// snapshot changes are decided (only [`Snapshots::AcceptAll`] and an
/// accepting [`Snapshots::Review`] write into the pack); `progress` is told
/// of each stage and test as the run goes ([`Quiet`]: nothing).
///
/// Errors: [`ErrorKind::NotFound`] when `pack` is not a pack directory or
/// `test` names no fixture (the message lists the fixtures); what fails
/// inside the run is in the report, not an error.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::tools::{run_tests, Quiet, Snapshots};
/// let run = run_tests("examples/packs/everyday-negotiation", None, Snapshots::Check, &mut Quiet)?;
/// assert_eq!(run.exit_code(), 0);
/// assert!(run.to_text().contains("PASS"));
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn run_tests(
    pack: impl AsRef<Path>,
    test: Option<&str>,
    snapshots: Snapshots<'_>,
    progress: &mut dyn Progress,
) -> Result<TestRun> {
    run_tests_with(pack, test, snapshots, progress, None)
}

/// [`run_tests`] with the settings and backend of `--runtime model` for
/// stage 5's model-driven personas (Format 21.1 "Model flags", 22.3),
/// shared by every playtest; `None` is [`run_tests`].
pub fn run_tests_with(
    pack: impl AsRef<Path>,
    test: Option<&str>,
    snapshots: Snapshots<'_>,
    progress: &mut dyn Progress,
    model: Option<(
        crate::model_runtime::Settings,
        crate::model_runtime::Backend,
    )>,
) -> Result<TestRun> {
    let mut opts = crate::testing::stages::Options {
        test: test.map(str::to_string),
        snapshots,
        model: model.map(|(s, b)| crate::playtest::persona::ModelSource::new(s, b.into_inner())),
    };
    crate::testing::stages::run(
        pack.as_ref(),
        &mut opts,
        &crate::testing::runner::Installed,
        progress,
    )
    .map(|run| TestRun { run })
    .map_err(|e| Error::new(ErrorKind::NotFound, e.to_string()))
}

/// Runs the playtests of `pack`, opened from the pack directory `dir`
/// (Format 22): all of them in file order, or the one `name` names (by
/// name, file name or file stem), at difficulty preset `difficulty`
/// (`None`: the scenario's default). Each report serializes to its part
/// of `troupe playtest --json` and has [`PlaytestReport::to_text`].
///
/// Errors: [`ErrorKind::NotFound`] when `name` names no playtest (the
/// message lists the pack's); [`ErrorKind::Io`] when `dir` cannot be read.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let dir = "examples/packs/everyday-negotiation";
/// let pack = troupe::Pack::open(dir)?;
/// let reports = troupe::tools::run_playtests(&pack, dir, None, None)?;
/// assert!(reports.iter().all(|r| r.status == troupe::tools::Verdict::Pass));
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn run_playtests(
    pack: &Pack,
    dir: impl AsRef<Path>,
    name: Option<&str>,
    difficulty: Option<&str>,
) -> Result<Vec<PlaytestReport>> {
    run_playtests_with(
        pack,
        dir,
        name,
        PlaytestOptions {
            difficulty: difficulty.map(str::to_string),
            model: None,
        },
    )
}

/// How [`run_playtests_with`] runs (Format 22.5).
#[derive(Default)]
#[non_exhaustive]
pub struct PlaytestOptions {
    /// The difficulty preset (`None`: the scenario's default).
    pub difficulty: Option<String>,
    /// The settings and backend of `--runtime model` (Format 22.3 "The
    /// backend" 2), called by every model-driven persona without `answers`
    /// of every playtest run, in call order; `None`: each playtest's
    /// `cassette`, else it is NOT RUN.
    pub model: Option<(
        crate::model_runtime::Settings,
        crate::model_runtime::Backend,
    )>,
}

/// [`run_playtests`] with a model backend for model-driven personas
/// (Format 22.3): `options.model`'s backend is shared by the whole run, so
/// one cassette recorded with [`crate::model_runtime::Backend::record`]
/// replays the same run. Errors as [`run_playtests`].
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// use troupe::model_runtime::{Backend, Settings};
/// use troupe::tools::{run_playtests_with, PlaytestOptions, Verdict};
/// let dir = "examples/packs/everyday-negotiation";
/// let pack = troupe::Pack::open(dir)?;
/// let backend = Backend::replay(format!("{dir}/cassettes/model_buyer.json"))?;
/// let mut options = PlaytestOptions::default();
/// options.model = Some((Settings::default(), backend));
/// let reports = run_playtests_with(&pack, dir, Some("model_charm"), options)?;
/// assert_eq!(reports[0].status, Verdict::Pass);
/// # Ok::<(), troupe::Error>(())
/// ```
pub fn run_playtests_with(
    pack: &Pack,
    dir: impl AsRef<Path>,
    name: Option<&str>,
    options: PlaytestOptions,
) -> Result<Vec<PlaytestReport>> {
    let dir = dir.as_ref();
    let Some(files) = crate::load::scan_pack(dir).value else {
        return Err(Error::new(
            ErrorKind::Io,
            format!("cannot read the pack {}", dir.display()),
        ));
    };
    let playtests = crate::playtest::PackPlaytests::read(&files);
    let settings = crate::playtest::RunSettings {
        difficulty: options.difficulty,
        model: options
            .model
            .map(|(s, b)| crate::playtest::persona::ModelSource::new(s, b.into_inner())),
    };
    crate::playtest::run_pack(pack.opened(), &playtests, name, &settings).map_err(|names| {
        Error::new(
            ErrorKind::NotFound,
            format!(
                "the pack has no playtest `{}`; its playtests: {}",
                name.unwrap_or_default(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ),
        )
    })
}
