//! The test pyramid (Format 21.1): the five stages in order, the check as a
//! gate, `--test` selection, snapshot acceptance, and coverage over every
//! run.

use std::path::Path;

use indexmap::IndexMap;
use serde_json::Value;

use super::assertions::{self, parse_check, parse_path};
use super::coverage::{self, Hits, Model};
use super::fixtures::{run_fixture, Fixture};
use super::model::{exit_code, Failure, StageName, StageResult, Status, TestResult};
use super::runner::Runtimes;
use super::snapshots::{self, Compared};
use crate::check::run::Checked;
use crate::diag::Code;
use crate::load::{scan_pack, Document, PackFileKind, PackFiles};
use crate::open::check_scanned_pack;

/// The reason later stages give when the check failed.
pub const GATE_REASON: &str = "check failed: tests were not run";

/// What a reviewer decides for one snapshot change (Format 21.5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Decision {
    /// Write (or delete, when stale) it.
    Accept,
    /// Leave the accepted file as it is.
    Reject,
    /// Decide later; nothing is written.
    Skip,
}

/// What changed about one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ChangeKind {
    /// No accepted snapshot yet.
    New,
    /// The accepted snapshot differs.
    Changed,
    /// An accepted snapshot with no session.
    Stale,
}

/// One snapshot change offered for review.
#[derive(Debug, Clone)]
pub struct SnapshotChange {
    /// The accepted snapshot's pack-relative path.
    pub path: String,
    /// What changed.
    pub kind: ChangeKind,
    /// The unified diff of accepted against current (empty for a stale one).
    pub diff: String,
}

/// How snapshot changes are decided.
#[non_exhaustive]
pub enum Snapshots<'a> {
    /// `troupe test`: nothing is written.
    Check,
    /// `--accept`: every change is accepted.
    AcceptAll,
    /// `--review`: each change is asked about.
    Review(&'a mut dyn FnMut(&SnapshotChange) -> Decision),
}

/// Shows progress while a run goes on (a terminal display); the default
/// shows nothing.
pub trait Progress {
    /// A stage starts.
    fn stage(&mut self, _stage: StageName) {}
    /// A test finished.
    fn test(&mut self, _stage: StageName, _test: &TestResult) {}
}

/// No progress display.
#[derive(Debug, Default)]
pub struct Quiet;
impl Progress for Quiet {}

/// The options of a run.
pub struct Options<'a> {
    /// `--test NAME`.
    pub test: Option<String>,
    /// `--accept` / `--review`.
    pub snapshots: Snapshots<'a>,
    /// The backend of `--runtime model` for stage 5's model-driven
    /// personas (Format 21.1 "Model flags", 22.3).
    pub model: Option<crate::playtest::persona::ModelSource>,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            test: None,
            snapshots: Snapshots::Check,
            model: None,
        }
    }
}

/// A whole run's result (Format 21.2).
#[derive(Debug, Clone)]
pub struct Run {
    /// The pack as given.
    pub pack: String,
    /// The five stages in order.
    pub stages: Vec<StageResult>,
    /// Coverage over stages 3–5 (or the one selected fixture).
    pub coverage: coverage::Report,
    /// 0, 1 or 3 (Format 21.1).
    pub exit_code: i32,
}

/// Why a run did not start (exit 2).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UsageError {
    /// `troupe test` needs a pack directory.
    #[error("{0} is not a pack directory: `troupe test` needs a pack directory")]
    NotAPack(String),
    /// `--test NAME` matches no fixture.
    #[error("no fixture is named `{name}`; the fixtures are: {}", if .names.is_empty() { "none".to_string() } else { .names.join(", ") })]
    UnknownTest {
        /// The name given.
        name: String,
        /// Every fixture's `fixture_id (file name)`.
        names: Vec<String>,
    },
}

/// One fixture file as found.
struct FixtureFile<'p> {
    rel: String,
    doc: &'p Document,
    fixture: Result<Fixture, String>,
}

fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

fn stem(name: &str) -> &str {
    name.strip_suffix(".yaml")
        .or_else(|| name.strip_suffix(".yml"))
        .unwrap_or(name)
}

fn fixture_files(pack: &PackFiles) -> Vec<FixtureFile<'_>> {
    pack.files
        .iter()
        .filter(|(_, (k, _))| *k == PackFileKind::Test)
        .map(|(rel, (_, doc))| FixtureFile {
            rel: rel.clone(),
            doc,
            fixture: Fixture::from_value(&doc.value),
        })
        .collect()
}

fn selected(f: &FixtureFile<'_>, name: &str) -> bool {
    let n = file_name(&f.rel);
    n == name || stem(n) == name || f.fixture.as_ref().is_ok_and(|x| x.fixture_id == name)
}

fn check_stage(pack_path: &Path, diags: Vec<crate::diag::Diagnostic>) -> StageResult {
    let root = pack_path.display().to_string();
    let failures: Vec<Failure> = diags
        .iter()
        .filter(|d| d.is_error())
        .map(|d| Failure {
            message: format!("{}: {}", d.code.as_str(), d.message),
            file: d.location.file.clone(),
            pointer: d.location.pointer.clone(),
            line: d.location.line,
            column: d.location.column,
            expected: None,
            actual: None,
        })
        .collect();
    let test = TestResult::from_failures("troupe check", Some(root), failures);
    let mut stage = StageResult::from_tests(StageName::Check, vec![test]);
    stage.diagnostics = diags;
    stage
}

/// Runs `troupe test` on a pack directory (Format 21).
pub fn run(
    pack_path: &Path,
    opts: &mut Options<'_>,
    runtimes: &dyn Runtimes,
    progress: &mut dyn Progress,
) -> Result<Run, UsageError> {
    let root = pack_path.display().to_string();
    if !pack_path.is_dir() {
        return Err(UsageError::NotAPack(root));
    }
    // One scan and one lowering serve the check stage and every later one.
    let mut checked = Checked::default();
    let scanned = check_scanned_pack(pack_path, scan_pack(pack_path), &mut checked);
    checked.finish_single();
    let files: Vec<FixtureFile<'_>> = scanned
        .as_ref()
        .map(|(pack, _)| fixture_files(pack))
        .unwrap_or_default();
    if let Some(name) = &opts.test
        && !files.iter().any(|f| selected(f, name))
    {
        let names = files
            .iter()
            .map(|f| match &f.fixture {
                Ok(x) => format!("{} ({})", x.fixture_id, file_name(&f.rel)),
                Err(_) => file_name(&f.rel).to_string(),
            })
            .collect();
        return Err(UsageError::UnknownTest {
            name: name.clone(),
            names,
        });
    }
    progress.stage(StageName::Check);
    let check = check_stage(pack_path, checked.diagnostics);
    progress.test(StageName::Check, &check.tests[0]);
    let mut stages = vec![check];
    let scope = opts.test.clone().unwrap_or_else(|| "all".into());
    let (pack, lowered) = match (&scanned, stages[0].status) {
        (Some((p, l)), Status::Pass) => (p, l),
        _ => {
            for s in &StageName::ALL[1..] {
                stages.push(StageResult::whole(*s, Status::Skip, GATE_REASON));
            }
            let exit = exit_code(&stages);
            return Ok(Run {
                pack: root,
                stages,
                coverage: coverage::Report {
                    scope,
                    scenarios: Vec::new(),
                    without_tests: Vec::new(),
                },
                exit_code: exit,
            });
        }
    };

    // The lowered bundle and its origins, and the documents as written.
    let mut values: IndexMap<String, Value> = IndexMap::new();
    if let Some(m) = &pack.manifest {
        values.insert("manifest.yaml".into(), m.value.clone());
    }
    for (p, (_, d)) in &pack.files {
        values.insert(p.clone(), d.value.clone());
    }
    let bundle = lowered.bundle.clone();
    let model = Model::new(&bundle, &lowered.origins);
    let chosen: Vec<&FixtureFile<'_>> = files
        .iter()
        .filter(|f| opts.test.as_ref().is_none_or(|n| selected(f, n)))
        .collect();
    let mut hits = Hits::default();

    progress.stage(StageName::StaticAssertions);
    stages.push(static_stage(&chosen, &values, progress));

    progress.stage(StageName::Fixtures);
    stages.push(fixture_stage(
        &chosen, &bundle, &pack.root, &model, runtimes, &mut hits, progress,
    ));

    if opts.test.is_some() {
        stages.push(StageResult::whole(
            StageName::Sessions,
            Status::Skip,
            "not selected (--test)",
        ));
        stages.push(StageResult::whole(
            StageName::Playtests,
            Status::Skip,
            "not selected (--test)",
        ));
        stages.push(StageResult::whole(
            StageName::Explore,
            Status::Skip,
            "not selected (--test)",
        ));
    } else {
        progress.stage(StageName::Sessions);
        stages.push(session_stage(
            pack, &bundle, &model, runtimes, opts, &mut hits, progress,
        ));
        progress.stage(StageName::Playtests);
        let playtests = super::playtests::playtest_stage(pack, &bundle, opts.model.as_ref());
        for t in &playtests.tests {
            progress.test(StageName::Playtests, t);
        }
        stages.push(playtests);
        progress.stage(StageName::Explore);
        let explore = super::explore::stage(pack, &bundle);
        for t in &explore.tests {
            progress.test(StageName::Explore, t);
        }
        stages.push(explore);
    }
    let mut coverage = coverage::report(&model, &hits, &scope);
    if opts.test.is_some() {
        // With --test, coverage counts that fixture alone: scenarios it
        // does not use are not listed as without tests.
        coverage.without_tests.clear();
    }
    let exit = exit_code(&stages);
    Ok(Run {
        pack: root,
        stages,
        coverage,
        exit_code: exit,
    })
}

fn static_stage(
    chosen: &[&FixtureFile<'_>],
    docs: &IndexMap<String, Value>,
    progress: &mut dyn Progress,
) -> StageResult {
    let mut tests = Vec::new();
    let mut any = false;
    for f in chosen {
        let Ok(fx) = &f.fixture else { continue };
        if fx.static_assertions.is_empty() {
            continue;
        }
        any = true;
        let scenario_file = docs
            .iter()
            .find(|(p, v)| {
                p.starts_with("scenarios/")
                    && crate::model::manifest::scenario_id(v) == Some(&fx.scenario_id)
            })
            .map(|(p, _)| p.clone())
            .unwrap_or_default();
        for (i, a) in fx.static_assertions.iter().enumerate() {
            let name = a
                .description
                .clone()
                .unwrap_or_else(|| format!("{} assertion {}", fx.fixture_id, i + 1));
            let outcome = match (parse_path(&a.path), parse_check(&a.check)) {
                (Ok(p), Ok(c)) => assertions::resolve(docs, &scenario_file, &p)
                    .map_err(|m| (m, "path"))
                    .and_then(|x| assertions::holds(&c, x).map_err(|m| (m, "check"))),
                (Err(e), _) => Err((format!("the path does not parse: {e}"), "path")),
                (_, Err(e)) => Err((format!("the check does not parse: {e}"), "check")),
            };
            let failures = match outcome {
                Ok(()) => Vec::new(),
                Err((message, field)) => {
                    let pointer = format!("/static_assertions/{i}/{field}");
                    let at = f.doc.spans.locate(&pointer);
                    vec![Failure {
                        message: format!("{}: {message}", a.path),
                        file: Some(f.rel.clone()),
                        pointer: Some(pointer),
                        line: at.map(|a| a.line),
                        column: at.map(|a| a.column),
                        expected: Some(Value::String(a.check.clone())),
                        actual: None,
                    }]
                }
            };
            let t = TestResult::from_failures(name, Some(f.rel.clone()), failures);
            progress.test(StageName::StaticAssertions, &t);
            tests.push(t);
        }
    }
    if !any {
        return StageResult::whole(
            StageName::StaticAssertions,
            Status::Skip,
            "no fixture has static_assertions",
        );
    }
    StageResult::from_tests(StageName::StaticAssertions, tests)
}

fn fixture_stage(
    chosen: &[&FixtureFile<'_>],
    bundle: &Value,
    root: &std::path::Path,
    model: &Model,
    runtimes: &dyn Runtimes,
    hits: &mut Hits,
    progress: &mut dyn Progress,
) -> StageResult {
    if chosen.is_empty() {
        return StageResult::whole(StageName::Fixtures, Status::Skip, "the pack has no fixture");
    }
    let mut tests = Vec::new();
    for f in chosen {
        let t = match &f.fixture {
            Err(e) => TestResult::new(file_name(&f.rel), Some(f.rel.clone()), Status::Err)
                .because(e.clone()),
            Ok(fx) => {
                let (mut t, own) = run_fixture(
                    fx,
                    &f.rel,
                    Some(f.doc),
                    bundle,
                    Some(root),
                    model.scenarios.get(&fx.scenario_id),
                    runtimes,
                );
                if matches!(t.status, Status::Pass | Status::Fail)
                    && let Some(m) = model.scenarios.get(&fx.scenario_id)
                {
                    let r = coverage::scenario_report(
                        &fx.scenario_id,
                        m,
                        own.reached.get(&fx.scenario_id),
                    );
                    if let Some(failure) = below_minimum(f, &r) {
                        t.failures.push(failure);
                        t.status = Status::Fail;
                    }
                }
                hits.merge(&own);
                t
            }
        };
        progress.test(StageName::Fixtures, &t);
        tests.push(t);
    }
    StageResult::from_tests(StageName::Fixtures, tests)
}

/// The failure of a fixture whose own coverage is below its
/// `coverage.minimum` (Format 21.3), comparing the exact ratio with the
/// minimum as written.
fn below_minimum(f: &FixtureFile<'_>, r: &coverage::ScenarioReport) -> Option<Failure> {
    let pointer = "/coverage/minimum";
    let written = f.doc.value.pointer(pointer)?;
    let minimum = crate::changes::values::exact_decimal(written)?;
    let (got, all) = r.ratio;
    let meets = all == 0
        || rust_decimal::Decimal::from(got) * rust_decimal::Decimal::from(100)
            >= minimum * rust_decimal::Decimal::from(all);
    if meets {
        return None;
    }
    let at = f.doc.spans.locate(pointer);
    Some(Failure {
        message: format!(
            "coverage {:.1}% is below the minimum {}%",
            r.percent,
            super::assertions::eval::format_decimal(minimum)
        ),
        file: Some(f.rel.clone()),
        pointer: Some(pointer.to_string()),
        line: at.map(|a| a.line),
        column: at.map(|a| a.column),
        expected: Some(written.clone()),
        actual: serde_json::Number::from_f64(r.percent).map(Value::Number),
    })
}

#[allow(clippy::too_many_arguments)]
fn session_stage(
    pack: &PackFiles,
    bundle: &Value,
    model: &Model,
    runtimes: &dyn Runtimes,
    opts: &mut Options<'_>,
    hits: &mut Hits,
    progress: &mut dyn Progress,
) -> StageResult {
    let names: Vec<String> = pack.sessions.keys().cloned().collect();
    let stale = snapshots::stale(&pack.root, &names);
    if names.is_empty() && stale.is_empty() {
        return StageResult::whole(StageName::Sessions, Status::Skip, "the pack has no session");
    }
    let mut tests = Vec::new();
    for (rel, session) in &pack.sessions {
        let t = session_test(pack, rel, session, bundle, model, runtimes, opts, hits);
        progress.test(StageName::Sessions, &t);
        tests.push(t);
    }
    for s in stale {
        let change = SnapshotChange {
            path: s.clone(),
            kind: ChangeKind::Stale,
            diff: String::new(),
        };
        let mut t = TestResult::new(file_name(&s), Some(s.clone()), Status::Skip)
            .because("stale snapshot: no session has it (`troupe test --accept` deletes it)");
        if decide(opts, &change) == Decision::Accept {
            t.reason = Some(match std::fs::remove_file(pack.root.join(&s)) {
                Ok(()) => "stale snapshot deleted".into(),
                Err(e) => format!("stale snapshot, not deleted: {e}"),
            });
        }
        progress.test(StageName::Sessions, &t);
        tests.push(t);
    }
    StageResult::from_tests(StageName::Sessions, tests)
}

fn decide(opts: &mut Options<'_>, change: &SnapshotChange) -> Decision {
    match &mut opts.snapshots {
        Snapshots::Check => Decision::Skip,
        Snapshots::AcceptAll => Decision::Accept,
        Snapshots::Review(f) => f(change),
    }
}

#[allow(clippy::too_many_arguments)]
fn session_test(
    pack: &PackFiles,
    rel: &str,
    session: &crate::load::SessionDoc,
    bundle: &Value,
    model: &Model,
    runtimes: &dyn Runtimes,
    opts: &mut Options<'_>,
    hits: &mut Hits,
) -> TestResult {
    let name = file_name(rel).to_string();
    let file = Some(rel.to_string());
    let Some(header) = &session.header else {
        return TestResult::new(name, file, Status::Err).because("the session has no header");
    };
    // Re-played inputs are compared message by message (step 3).
    let messages: Vec<Value> = session.messages().map(|m| m.into_owned().value).collect();
    let mut engine = match crate::pipeline::load(bundle, Some((&header.value, &messages)), None) {
        Ok(e) => e,
        Err(d) => {
            let first = d.first().map_or(String::new(), |d| {
                format!(": {} {}", d.code.as_str(), d.message)
            });
            return TestResult::new(name, file, Status::Err)
                .because(format!("the session does not replay{first}"));
        }
    };
    let scenario = engine.ir.scenario.to_string();
    // What a runtime evaluates along the recorded session (Format 21.6).
    let mut rec = crate::engine::Recorder::default();
    crate::runtime::replay::replay_observed(&engine, Some(&mut rec));
    hits.record(&scenario, model.scenarios.get(&scenario), &rec);
    let mut failures = Vec::new();
    let mut notes = Vec::new();
    match runtimes.replay(&engine) {
        Some(diags) => {
            for d in diags
                .iter()
                .filter(|d| matches!(d.code, Code::FiringMismatch | Code::SpeakerMismatch))
            {
                failures.push(Failure {
                    message: format!("{}: {}", d.code.as_str(), d.message),
                    file: file.clone(),
                    pointer: d.location.pointer.clone(),
                    line: d.location.line,
                    column: d.location.column,
                    expected: None,
                    actual: None,
                });
            }
        }
        None => notes.push("firings not replayed: the replay runtime is not built yet".to_string()),
    }
    // Step 3: the recorded inputs re-played under the current rules.
    let mut replay_diff = None;
    // The re-played session's transcript, when it differs (Format 20).
    let mut replayed = None;
    match replay_inputs(
        pack,
        rel,
        &messages,
        bundle,
        &header.value,
        &engine,
        runtimes,
        opts,
    ) {
        Ok(Replayed::Same) => {}
        Ok(Replayed::Note(n)) => notes.push(n),
        Ok(Replayed::Accepted(e)) => {
            notes.push(format!("re-recorded {rel} under the current rules"));
            engine = *e;
        }
        Ok(Replayed::Differs(d, t)) => {
            replayed = Some(t);
            failures.push(Failure {
                message: format!(
                    "re-played under the current rules, {rel} differs from the recording (`troupe test --review` to review, `--accept` to re-record it)"
                ),
                file: file.clone(),
                pointer: Some(String::new()),
                ..Failure::default()
            });
            replay_diff = Some(d);
        }
        Err(reason) => return TestResult::new(name, file, Status::Err).because(reason),
    }
    let snap = snapshots::build(&engine, rel);
    let path = snapshots::snapshot_path(rel);
    let accepted = match snapshots::read_accepted(&pack.root, &path) {
        Ok(a) => a,
        Err(e) => {
            return TestResult::new(name, file, Status::Err)
                .because(format!("cannot read {path}: {e}"))
        }
    };
    let compared = snapshots::compare(accepted.as_deref(), &snap, &path);
    let mut diff = None;
    if compared != Compared::Same {
        let (kind, d) = match compared {
            Compared::New => (
                ChangeKind::New,
                snapshots::diff("", &snapshots::to_bytes(&snap), &path),
            ),
            Compared::Changed(d) => (ChangeKind::Changed, d),
            Compared::Same => (ChangeKind::Changed, String::new()),
        };
        let change = SnapshotChange {
            path: path.clone(),
            kind: kind.clone(),
            diff: d.clone(),
        };
        match decide(opts, &change) {
            Decision::Accept => {
                let target = pack.root.join(&path);
                let written = target
                    .parent()
                    .map_or(Ok(()), std::fs::create_dir_all)
                    .and_then(|()| {
                        // Replaced whole or not at all (Format 16.3).
                        crate::output::write_atomic(&target, snapshots::to_bytes(&snap).as_bytes())
                            .map_err(std::io::Error::other)
                    });
                match written {
                    Ok(()) => notes.push(format!(
                        "accepted the {} snapshot {path}",
                        if kind == ChangeKind::New {
                            "new"
                        } else {
                            "changed"
                        }
                    )),
                    Err(e) => {
                        return TestResult::new(name, file, Status::Err)
                            .because(format!("cannot write {path}: {e}"))
                    }
                }
            }
            Decision::Reject | Decision::Skip => {
                failures.push(Failure {
                    message: if kind == ChangeKind::New {
                        format!("no accepted snapshot {path} (`troupe test --accept` accepts it)")
                    } else {
                        format!(
                            "the snapshot differs from {path} (`troupe test --review` to review)"
                        )
                    },
                    file: Some(path.clone()),
                    pointer: Some(String::new()),
                    ..Failure::default()
                });
                if kind == ChangeKind::Changed {
                    diff = Some(d);
                }
            }
        }
    }
    let mut t = TestResult::from_failures(name, file, failures);
    // The session under it, as `troupe transcript` prints it: the re-play
    // when it differs from the recording, else the recording.
    t.transcript = match replayed {
        Some(r) => format!("Re-played under the current rules:\n{r}"),
        None => format!("As recorded:\n{}", super::replays::transcript(engine)),
    };
    t.diff = match (replay_diff, diff) {
        (Some(a), Some(b)) => Some(format!("{a}{b}")),
        (a, b) => a.or(b),
    };
    if !notes.is_empty() {
        t.reason = Some(notes.join("; "));
    }
    t
}

/// What re-playing a session's inputs found (Format 21.5 step 3).
enum Replayed {
    /// The re-play says and changes what the recording does.
    Same,
    /// Not re-played, and why (shown in the report).
    Note(String),
    /// The re-play differs; the readable diff of recording against re-play,
    /// and the re-played session's transcript (Format 20).
    Differs(String, String),
    /// It differed and was accepted: the session file now holds the
    /// re-play, loaded here.
    Accepted(Box<crate::engine::Engine>),
}

/// Re-plays the recorded player inputs of session `rel` under the current
/// rules and compares the turns (input, reply, changes, firings, state)
/// with the recording; `--accept` (or an accepted review) writes the
/// re-played session over the recording. `Err` is why the test is ERR.
#[allow(clippy::too_many_arguments)]
fn replay_inputs(
    pack: &PackFiles,
    rel: &str,
    messages: &[Value],
    bundle: &Value,
    header: &Value,
    engine: &crate::engine::Engine,
    runtimes: &dyn Runtimes,
    opts: &mut Options<'_>,
) -> Result<Replayed, String> {
    use super::replays;
    let players: Vec<String> = engine
        .ir
        .players
        .iter()
        .filter_map(|c| engine.ir.cast.get(*c as usize))
        .map(|c| c.id.to_string())
        .collect();
    let inputs = match replays::inputs(messages, &players) {
        Ok(i) => i,
        Err(why) => return Ok(Replayed::Note(format!("not re-played: {why}"))),
    };
    let root = messages
        .first()
        .map(crate::model::Message::read)
        .and_then(|m| Some((m.id?, m.opening?)));
    let text = match runtimes.replay_inputs(bundle, header, root, &inputs) {
        None => return Ok(Replayed::Note("not re-played: no rules runtime".into())),
        Some(Err(e)) => return Err(format!("the session's inputs cannot be re-played: {e}")),
        Some(Ok(t)) => t,
    };
    let mut lines = text.lines().map(serde_json::from_str::<Value>);
    let new_header = match lines.next() {
        Some(Ok(h)) => h,
        _ => return Err("the re-played session has no header".into()),
    };
    let new_messages: Vec<Value> = lines
        .collect::<Result<_, _>>()
        .map_err(|e| format!("the re-played session does not read back: {e}"))?;
    let new_engine = crate::pipeline::load(bundle, Some((&new_header, &new_messages)), None)
        .map_err(|_| "the re-played session does not load".to_string())?;
    let was = replays::turns_text(engine, messages, &players);
    let now = replays::turns_text(&new_engine, &new_messages, &players);
    if was == now {
        return Ok(Replayed::Same);
    }
    let d = snapshots::diff_labeled(
        &was,
        &now,
        &format!("{rel} (recorded)"),
        &format!("{rel} (re-played under the current rules)"),
    );
    let change = SnapshotChange {
        path: rel.to_string(),
        kind: ChangeKind::Changed,
        diff: d.clone(),
    };
    if decide(opts, &change) != Decision::Accept {
        return Ok(Replayed::Differs(d, replays::transcript(new_engine)));
    }
    let target = pack.root.join(rel);
    let tmp = target.with_extension("jsonl.tmp");
    std::fs::write(&tmp, &text)
        .and_then(|()| std::fs::rename(&tmp, &target))
        .map_err(|e| format!("cannot write {rel}: {e}"))?;
    Ok(Replayed::Accepted(Box::new(new_engine)))
}
