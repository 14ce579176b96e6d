//! The conformance runner (`conformance-cases.txt`, Format 20): runs every
//! case file under a folder, each test on the case's inputs, and reports
//! `N passed, M failed`. A case that breaks the runner contract (an unknown
//! test type, an unknown `expect` field, a case that fails
//! `case.schema.json`, engine tests without a check test expecting no codes)
//! is a suite error, counted as failed.

pub mod case;
pub mod compare;
pub mod runtime;

use std::path::{Path, PathBuf};

pub use case::run_case;

/// How one test went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// As expected.
    Pass,
    /// Not as expected: what differed.
    Fail(String),
    /// The case breaks the runner contract: why.
    SuiteError(String),
}

/// One test's result.
#[derive(Debug, Clone)]
pub struct TestResult {
    /// The case file, relative to the suite folder.
    pub file: String,
    /// `#<index> <type>: <name>`.
    pub test: String,
    /// How it went.
    pub outcome: Outcome,
}

/// The results of a run.
#[derive(Debug, Clone, Default)]
pub struct Report {
    /// Every test's result, case files in path order.
    pub results: Vec<TestResult>,
}

impl Report {
    /// Tests that passed.
    pub fn passed(&self) -> usize {
        self.results
            .iter()
            .filter(|r| r.outcome == Outcome::Pass)
            .count()
    }

    /// Tests that failed, suite errors included.
    pub fn failed(&self) -> usize {
        self.results.len() - self.passed()
    }

    /// The report as text: one line per failure, then `N passed, M failed`.
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for r in &self.results {
            match &r.outcome {
                Outcome::Pass => {}
                Outcome::Fail(m) => out.push_str(&format!("FAIL {} {}: {m}\n", r.file, r.test)),
                Outcome::SuiteError(m) => {
                    out.push_str(&format!("SUITE ERROR {} {}: {m}\n", r.file, r.test))
                }
            }
        }
        out.push_str(&format!(
            "{} passed, {} failed\n",
            self.passed(),
            self.failed()
        ));
        out
    }
}

/// Every case file under `dir` (`cases/` inside it when there is one):
/// `*.json` files with a top-level `tests` member, in path order. Other
/// JSON files are inputs cases refer to.
pub fn case_files(dir: &Path) -> Vec<PathBuf> {
    let root = if dir.join("cases").is_dir() {
        dir.join("cases")
    } else {
        dir.to_path_buf()
    };
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && p.extension().is_some_and(|x| x == "json") {
                let is_case = std::fs::read(&p)
                    .ok()
                    .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                    .is_some_and(|v| v.get("tests").is_some());
                if is_case {
                    out.push(p);
                }
            }
        }
    }
    out.sort();
    out
}

/// Runs every case file under `dir`.
pub fn run_dir(dir: &Path) -> Report {
    let mut report = Report::default();
    for f in case_files(dir) {
        let shown = f.strip_prefix(dir).unwrap_or(&f).display().to_string();
        report.results.extend(run_case(&f, &shown));
    }
    report
}
