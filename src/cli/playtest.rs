//! `troupe playtest PACK [NAME] [--json] [--difficulty PRESET]` (Format
//! 22.6): runs a pack's playtests and reports each goal met or not met with
//! its evidence.
//!
//! Exit codes: 0 every playtest PASS; 1 one FAILs (or the pack does not
//! conform); 2 an unknown NAME; 3 a system error.

use std::path::PathBuf;

use crate::load::scan_pack;
use crate::playtest::{run_pack, PackPlaytests, RunSettings, Verdict};

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
    let opened = match super::run::open_pack(&args.pack) {
        Ok(o) => o,
        Err(code) => return code,
    };
    let Some(files) = scan_pack(&args.pack).value else {
        eprintln!("troupe: cannot read the pack {}", args.pack.display());
        return 3;
    };
    let pack = PackPlaytests::read(&files);
    let settings = RunSettings {
        difficulty: args.difficulty.clone(),
    };
    let reports = match run_pack(&opened, &pack, args.name.as_deref(), &settings) {
        Ok(r) => r,
        Err(names) => {
            eprintln!(
                "troupe: the pack has no playtest `{}`; its playtests: {}",
                args.name.unwrap_or_default(),
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            );
            return 2;
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
            print!("{}", crate::diag::render::escape_controls(&r.to_text()));
        }
    }
    if reports.iter().any(|r| r.status == Verdict::Fail) {
        1
    } else {
        0
    }
}
