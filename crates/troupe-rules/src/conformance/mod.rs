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

pub use case::run_case_in;

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

/// Largest case file (or input file a case names) the runner reads: 16 MiB.
pub const MAX_CASE_BYTES: u64 = 16 * 1024 * 1024;

/// Every case file under `dir` (`cases/` inside it when there is one:
/// `*.json` files with a top-level `tests` member, in path order; other
/// JSON files are inputs cases refer to; `dir` may also be one case file,
/// which is then the only case) and the files that could not be used, each
/// with why: a
/// `.json` file that cannot be read, is over [`MAX_CASE_BYTES`] or is not
/// JSON, and a symbolic link (never followed, so the run stays inside
/// `dir`; a symlinked `cases/` is one too). Each problem is a failure of
/// the run, never a silent skip. A `dir` that is a file is read as one case
/// file: one without `tests` is a problem too.
pub fn scan_cases(dir: &Path) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    if std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_file()) {
        if !read_case(dir, &mut out, &mut problems) {
            problems.push((
                dir.to_path_buf(),
                "not a case: it has no `tests`".to_string(),
            ));
        }
        return (out, problems);
    }
    let cases = dir.join("cases");
    let root = match std::fs::symlink_metadata(&cases) {
        Ok(m) if m.file_type().is_symlink() => {
            problems.push((
                cases,
                "a symbolic link; the runner does not follow links out of its folder".to_string(),
            ));
            return (Vec::new(), problems);
        }
        Ok(m) if m.is_dir() => cases,
        _ => dir.to_path_buf(),
    };
    let mut stack = vec![root];
    while let Some(d) = stack.pop() {
        let rd = match std::fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) => {
                problems.push((d, format!("cannot be listed: {e}")));
                continue;
            }
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            let json = p.extension().is_some_and(|x| x == "json");
            if ft.is_symlink() {
                if json || p.is_dir() {
                    problems.push((
                        p,
                        "a symbolic link; the runner does not follow links out of its folder"
                            .to_string(),
                    ));
                }
            } else if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && json {
                read_case(&p, &mut out, &mut problems);
            }
        }
    }
    out.sort();
    problems.sort_by(|a, b| a.0.cmp(&b.0));
    (out, problems)
}

/// Reads the JSON file `p`: pushed to `out` when it has a top-level `tests`
/// (true is returned), to `problems` when it cannot be read or parsed.
fn read_case(p: &Path, out: &mut Vec<PathBuf>, problems: &mut Vec<(PathBuf, String)>) -> bool {
    let name = p.display().to_string();
    let bytes = match crate::load::text::read_at_most(&name, p, MAX_CASE_BYTES) {
        Ok(b) => b,
        Err(d) => {
            problems.push((p.to_path_buf(), d.message.to_string()));
            return true;
        }
    };
    match serde_json::from_slice::<serde_json::Value>(&bytes) {
        Ok(v) if v.get("tests").is_some() => {
            out.push(p.to_path_buf());
            true
        }
        Ok(_) => false,
        Err(e) => {
            problems.push((p.to_path_buf(), format!("not JSON: {e}")));
            true
        }
    }
}

/// Runs every case file under `dir` (or the one case file `dir`).
pub fn run_dir(dir: &Path) -> Report {
    let mut report = Report::default();
    // Paths are shown relative to the folder run; a single file by its name.
    let base = if dir.is_file() {
        dir.parent().unwrap_or(dir)
    } else {
        dir
    };
    let (cases, problems) = scan_cases(dir);
    for (f, why) in problems {
        report.results.push(TestResult {
            file: f.strip_prefix(base).unwrap_or(&f).display().to_string(),
            test: "(case)".into(),
            outcome: Outcome::SuiteError(why),
        });
    }
    for f in cases {
        let shown = f.strip_prefix(base).unwrap_or(&f).display().to_string();
        report.results.extend(run_case_in(&f, &shown, base));
    }
    report
}
