//! [`check`]: what `troupe check` reports (Format 17, docs/validation.md).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::diag::render::{render_human, Report, Sources};
use crate::diag::{Code, Diagnostic};

/// The report of [`check`]: every diagnostic in report order, and the
/// source texts human output quotes.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let report = troupe::check(&["examples/broken/cel-syntax.bundle.json"]);
/// assert!(!report.is_valid(false));
/// assert_eq!(report.diagnostics()[0].code, troupe::Code::CelSyntax);
/// assert_eq!(report.to_json(false)["valid"], false);
/// let ok = troupe::check(&["examples/packs/everyday-negotiation"]);
/// assert!(ok.is_valid(false));
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct CheckReport {
    diagnostics: Vec<Diagnostic>,
    sources: Sources,
}

/// Checks every path as `troupe check` does (Format 17): directories as
/// packs, `.troupe` files as packages, `.jsonl` files as sessions (against
/// a bundle or pack given with them), anything else as a bundle. Never
/// fails: a path that cannot be read is a diagnostic (MISSING_FILE, IO).
pub fn check<P: AsRef<Path>>(paths: &[P]) -> CheckReport {
    check_with_jobs(paths, 0)
}

/// [`check`] on `jobs` threads (`troupe check --jobs`; 0: the cores the
/// process may use, 1: all on the calling thread; [`crate::OpenOptions::jobs`]).
/// The report is the same whatever the number.
///
/// ```
/// # std::env::set_current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).unwrap();
/// let one = troupe::check_with_jobs(&["examples/packs/harbor-lights"], 1);
/// let two = troupe::check_with_jobs(&["examples/packs/harbor-lights"], 2);
/// assert_eq!(one.diagnostics(), two.diagnostics());
/// ```
pub fn check_with_jobs<P: AsRef<Path>>(paths: &[P], jobs: usize) -> CheckReport {
    crate::par::with_jobs(jobs, || check_here(paths))
}

fn check_here<P: AsRef<Path>>(paths: &[P]) -> CheckReport {
    let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
    let checked = crate::open::check_paths(&paths);
    CheckReport {
        diagnostics: checked.diagnostics,
        sources: checked.sources,
    }
}

impl CheckReport {
    /// Every diagnostic, in report order.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }

    /// The number of errors.
    pub fn errors(&self) -> usize {
        self.diagnostics.iter().filter(|d| d.is_error()).count()
    }

    /// The number of warnings.
    pub fn warnings(&self) -> usize {
        self.diagnostics.len() - self.errors()
    }

    /// True when no error was found (with `strict`, no warning either).
    pub fn is_valid(&self, strict: bool) -> bool {
        self.errors() == 0 && (!strict || self.warnings() == 0)
    }

    /// True when a path could not be read (an IO diagnostic): `troupe
    /// check` exits 3 then.
    pub fn has_io_error(&self) -> bool {
        self.diagnostics.iter().any(|d| d.code == Code::Io)
    }

    /// The diagnostics for people, as `troupe check` prints them (with
    /// source excerpts), without the closing summary line.
    pub fn render(&self) -> String {
        render_human(&self.diagnostics, &self.sources)
    }

    /// The `troupe check --json` document (Format 20.1,
    /// `schemas/output/check.schema.json`).
    pub fn to_json(&self, strict: bool) -> Value {
        serde_json::to_value(Report::new(&self.diagnostics, strict)).unwrap_or(Value::Null)
    }
}
