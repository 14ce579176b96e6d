//! `troupe playtest PACK [NAME] [--json] [--difficulty PRESET]` (Format
//! 22.6): runs a pack's playtests and reports each goal met or not met with
//! its evidence.
//!
//! Exit codes: 0 every playtest PASS; 1 one FAILs (or the pack does not
//! conform); 2 an unknown NAME; 3 a system error.

use std::path::PathBuf;

use troupe::tools::{run_playtests, Verdict};
use troupe::ErrorKind;

/// Arguments of `troupe playtest`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The pack directory.
    pub pack: PathBuf,
    /// Run one playtest, by name, file name or file stem.
    pub name: Option<String>,
    /// Print one JSON document instead of text.
    #[arg(long)]
    pub json: bool,
    /// The difficulty preset (default: the scenario's default).
    #[arg(long, value_name = "PRESET")]
    pub difficulty: Option<String>,
}

/// Runs `troupe playtest`; returns the exit code.
pub fn run(args: Args) -> i32 {
    if !args.pack.is_dir() {
        eprintln!("troupe: {} is not a pack directory", args.pack.display());
        return 2;
    }
    let pack = match super::open_pack_api(&args.pack, troupe::OpenOptions::default()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let reports = match run_playtests(
        &pack,
        &args.pack,
        args.name.as_deref(),
        args.difficulty.as_deref(),
    ) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("troupe: {e}");
            return if e.kind() == ErrorKind::NotFound {
                2
            } else {
                3
            };
        }
    };
    if args.json {
        let doc = serde_json::json!({ "playtests": reports });
        match serde_json::to_string_pretty(&doc) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("troupe: {e}");
                return 3;
            }
        }
    } else {
        if reports.is_empty() {
            println!("the pack has no playtest");
        }
        for r in &reports {
            print!("{}", troupe::escape_controls(&r.to_text()));
        }
    }
    if reports.iter().any(|r| r.status == Verdict::Fail) {
        1
    } else {
        0
    }
}
