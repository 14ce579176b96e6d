//! The results `troupe test` reports (Format 21.1, 21.2): statuses, stages,
//! tests and their failures.

use serde::Serialize;

use crate::diag::Diagnostic;

/// The status of a test or a stage (Format 21.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub enum Status {
    /// It ran and every expectation held.
    #[serde(rename = "PASS")]
    Pass,
    /// It ran and an expectation does not hold.
    #[serde(rename = "FAIL")]
    Fail,
    /// Not run, with a reason.
    #[serde(rename = "SKIP")]
    Skip,
    /// It could not run, with a reason.
    #[serde(rename = "ERR")]
    Err,
}

impl Status {
    /// `PASS`, `FAIL`, `SKIP` or `ERR`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Skip => "SKIP",
            Status::Err => "ERR",
        }
    }
}

/// The five stages, in order (Format 21.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StageName {
    /// 1: `troupe check` of the pack, the gate.
    Check,
    /// 2: one test per static assertion.
    StaticAssertions,
    /// 3: one test per fixture.
    Fixtures,
    /// 4: one test per recorded session: replay and snapshot.
    Sessions,
    /// 5: one test per playtest.
    Playtests,
    /// 6: one test per entry scenario: the search of Format 20.5.
    Explore,
}

impl StageName {
    /// Every stage in order.
    pub const ALL: [StageName; 6] = [
        StageName::Check,
        StageName::StaticAssertions,
        StageName::Fixtures,
        StageName::Sessions,
        StageName::Playtests,
        StageName::Explore,
    ];

    /// The stage's name as reported (`static_assertions`).
    pub fn as_str(self) -> &'static str {
        match self {
            StageName::Check => "check",
            StageName::StaticAssertions => "static_assertions",
            StageName::Fixtures => "fixtures",
            StageName::Sessions => "sessions",
            StageName::Playtests => "playtests",
            StageName::Explore => "explore",
        }
    }
}

/// One failed expectation of a test, located where it can be
/// (Format 21.2). Line and column are 1-based.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The failure in words (`turn 2: safety_status expected "ok", got "redirect"`).
    pub message: String,
    /// The pack-relative file it is about.
    pub file: Option<String>,
    /// A JSON Pointer into that file.
    pub pointer: Option<String>,
    /// The line of the pointer's value.
    pub line: Option<u32>,
    /// The column of the pointer's value.
    pub column: Option<u32>,
    /// The expected value, as JSON, when the failure compares values.
    pub expected: Option<serde_json::Value>,
    /// The actual value, as JSON, when the failure compares values.
    pub actual: Option<serde_json::Value>,
}

impl Failure {
    /// A failure with a message only.
    pub fn new(message: impl Into<String>) -> Failure {
        Failure {
            message: message.into(),
            ..Failure::default()
        }
    }
}

/// One test's result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TestResult {
    /// The test's name (Format 21.2: a fixture's `fixture_id`, an
    /// assertion's description, a session's file name, a playtest's name).
    pub name: String,
    /// The pack-relative file the test comes from.
    pub file: Option<String>,
    /// Its status.
    pub status: Status,
    /// Why it was skipped or could not run, or a note on a pass.
    pub reason: Option<String>,
    /// The failed expectations (FAIL only).
    pub failures: Vec<Failure>,
    /// A readable diff to show under the test (snapshots), not in JSON.
    #[serde(skip)]
    pub diff: Option<String>,
    /// What a fixture's run produced, turn by turn, as `troupe run` prints
    /// it (Format 18.6; the HTML report's transcript, 21.2); a recorded
    /// session's (re-played when the re-play differs, 21.5) or a
    /// playtest's sessions (22.5) as `troupe transcript` prints them
    /// (Format 20); empty for other tests and for runtimes without a
    /// session; not in JSON.
    #[serde(skip)]
    pub transcript: String,
}

impl TestResult {
    /// A test with `status` and no failures.
    pub fn new(name: impl Into<String>, file: Option<String>, status: Status) -> TestResult {
        TestResult {
            name: name.into(),
            file,
            status,
            reason: None,
            failures: Vec::new(),
            diff: None,
            transcript: String::new(),
        }
    }

    /// PASS when `failures` is empty, else FAIL.
    pub fn from_failures(
        name: impl Into<String>,
        file: Option<String>,
        failures: Vec<Failure>,
    ) -> TestResult {
        let status = if failures.is_empty() {
            Status::Pass
        } else {
            Status::Fail
        };
        TestResult {
            failures,
            ..TestResult::new(name, file, status)
        }
    }

    /// Sets the reason.
    pub fn because(mut self, reason: impl Into<String>) -> TestResult {
        self.reason = Some(reason.into());
        self
    }
}

/// One stage's result.
#[derive(Debug, Clone, Serialize)]
pub struct StageResult {
    /// Which stage.
    pub stage: StageName,
    /// Its status, from its tests (Format 21.1).
    pub status: Status,
    /// Why the stage is SKIP or ERR as a whole.
    pub reason: Option<String>,
    /// Stage 1's diagnostics; empty for the others.
    pub diagnostics: Vec<Diagnostic>,
    /// Its tests in run order.
    pub tests: Vec<TestResult>,
}

impl StageResult {
    /// A stage from its tests: ERR when any test is ERR, else FAIL when any
    /// FAILs, else SKIP when it has none or all are SKIP, else PASS.
    pub fn from_tests(stage: StageName, tests: Vec<TestResult>) -> StageResult {
        let any = |s: Status| tests.iter().any(|t| t.status == s);
        let status = if any(Status::Err) {
            Status::Err
        } else if any(Status::Fail) {
            Status::Fail
        } else if tests.iter().all(|t| t.status == Status::Skip) {
            Status::Skip
        } else {
            Status::Pass
        };
        StageResult {
            stage,
            status,
            reason: None,
            diagnostics: Vec::new(),
            tests,
        }
    }

    /// A stage that did not run, SKIP or ERR, with the reason.
    pub fn whole(stage: StageName, status: Status, reason: impl Into<String>) -> StageResult {
        StageResult {
            stage,
            status,
            reason: Some(reason.into()),
            diagnostics: Vec::new(),
            tests: Vec::new(),
        }
    }
}

/// The exit code of a run (Format 21.1): 0 when every stage is PASS or
/// SKIP; 3 when any is ERR; else 1.
pub fn exit_code(stages: &[StageResult]) -> i32 {
    if stages.iter().any(|s| s.status == Status::Err) {
        3
    } else if stages.iter().any(|s| s.status == Status::Fail) {
        1
    } else {
        0
    }
}
