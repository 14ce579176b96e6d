//! `troupe check PATH...` (alias `validate-pack`): checks packs, bundles,
//! packages and sessions (Format 17, `docs/validation.md`).
//!
//! Exit codes: 0 valid, 1 invalid (or warnings with `--strict`), 3 an
//! unexpected system error (any IO diagnostic).

use std::io::Write;

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
    /// Threads that read and check a pack's files and scenarios (default:
    /// the core count; 1: one thread). The report is the same whatever N.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub jobs: Option<u16>,
}

/// Runs the check; returns the exit code.
pub fn run(args: Args) -> i32 {
    let report = troupe::check_with_jobs(&args.paths, args.jobs.map_or(0, usize::from));
    let valid = report.is_valid(args.strict);
    let mut stdout = std::io::stdout().lock();
    let written = if args.json {
        serde_json::to_string_pretty(&report.to_json(args.strict))
            .map_err(std::io::Error::other)
            .and_then(|text| writeln!(stdout, "{text}"))
    } else {
        let mut text = report.render();
        let counts = format!(
            "{}, {}",
            plural(report.errors(), "error"),
            plural(report.warnings(), "warning")
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
        _ if report.has_io_error() => 3,
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
