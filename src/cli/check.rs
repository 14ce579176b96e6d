//! `troupe check PATH...` (alias `validate-pack`): checks packs, bundles,
//! packages and sessions (Format 17, `docs/validation.md`).
//!
//! Exit codes: 0 valid, 1 invalid (or warnings with `--strict`), 3 an
//! unexpected system error (any IO diagnostic).

use std::io::Write;

use crate::check::run::check_paths;
use crate::diag::render::{render_human, Report};
use crate::diag::Code;

/// Arguments of `troupe check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Pack directories, bundles (.json/.yaml), packages (.troupe) or
    /// sessions (.jsonl, checked against a bundle or pack given with them).
    #[arg(required = true)]
    pub paths: Vec<std::path::PathBuf>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// Make warnings fail.
    #[arg(long)]
    pub strict: bool,
}

/// Runs the check; returns the exit code.
pub fn run(args: Args) -> i32 {
    let checked = check_paths(&args.paths);
    let valid = checked.is_valid(args.strict);
    let mut stdout = std::io::stdout().lock();
    let written = if args.json {
        let report = Report::new(&checked.diagnostics, args.strict);
        serde_json::to_string_pretty(&report)
            .map_err(std::io::Error::other)
            .and_then(|text| writeln!(stdout, "{text}"))
    } else {
        let mut text = render_human(&checked.diagnostics, &checked.sources);
        let errors = checked.diagnostics.iter().filter(|d| d.is_error()).count();
        let warnings = checked.diagnostics.len() - errors;
        let counts = format!(
            "{}, {}",
            plural(errors, "error"),
            plural(warnings, "warning")
        );
        text.push_str(&if valid {
            format!("✓ valid ({counts})\n")
        } else {
            format!("✗ invalid ({counts})\n")
        });
        write!(stdout, "{text}")
    };
    match written {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            eprintln!("troupe check: cannot write the report: {e}");
            3
        }
        _ if checked.diagnostics.iter().any(|d| d.code == Code::Io) => 3,
        _ if valid => 0,
        _ => 1,
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
